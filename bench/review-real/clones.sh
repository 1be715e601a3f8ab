#!/bin/sh
# Makes the local clones run.py reviews: CLONES/<name> for every [projects] entry of
# corpus.toml, cloned (no checkout, never bare: the reviewer does not open bare repositories)
# from the snapshot the library's `fetch` tool left under MIRRORS (owner+name/repo or
# owner+name/repo/.git). Fetch each source first (`fetch github:owner/name`). The mirrors are
# never written to; an existing clone is kept.
# Usage: clones.sh [CLONES=/tmp/corpus] [MIRRORS=/work/.mirror]
set -eu
CLONES=${1:-/tmp/corpus}
MIRRORS=${2:-/work/.mirror}
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$CLONES"
python3 -c '
import tomllib, sys
for name, p in tomllib.load(open(sys.argv[1], "rb"))["projects"].items():
    print(name, p["source"].removeprefix("github:").replace("/", "+"))
' "$HERE/corpus.toml" | while read -r name mirror; do
    if [ -d "$CLONES/$name" ]; then echo "kept   $CLONES/$name"; continue; fi
    src="$MIRRORS/$mirror/repo"
    [ -d "$src/.git" ] && src="$src/.git"
    if [ ! -d "$src" ]; then echo "MISSING $src: fetch it first" >&2; continue; fi
    git clone -q --no-checkout "$src" "$CLONES/$name" && echo "cloned $CLONES/$name"
done

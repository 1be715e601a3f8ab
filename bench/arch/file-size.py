#!/usr/bin/env python3
"""Fails when a source file holds more than one idea's worth of code.

The rule (ARCHITECTURE.md, "Files of one idea"): no `.rs` file under `src/` or `crates/*/src/`
has more than LIMIT lines of code before its test module. Counted are the lines before the
first `#[cfg(test)]` that is followed (after any further attributes) by an inline `mod … {`,
leaving out blank lines and lines that are only a `//` comment (`///` and `//!` included).
A test module in a file of its own (`tests.rs`, declared `#[cfg(test)] mod tests;`) is a
file like any other: counted whole, and its declaration does not end the count of the file
that declares it.

Usage: python3 bench/arch/file-size.py [--limit N] [--top K]
Prints the largest files; exits 1 naming the files over the limit.
"""

import argparse
import pathlib
import re
import sys

LIMIT = 1200
ROOT = pathlib.Path(__file__).resolve().parents[2]
CFG_TEST = re.compile(r"^\s*#\[cfg\(test\)\]\s*$")
ATTRIBUTE = re.compile(r"^\s*#\[.*\]\s*$")
# An inline module (`mod tests {`); `mod tests;` declares a file of its own, counted apart.
MOD = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def code_lines(path: pathlib.Path) -> int:
    """Lines of code before the test module of `path`."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    end = len(lines)
    for i, line in enumerate(lines):
        if not CFG_TEST.match(line):
            continue
        j = i + 1
        while j < len(lines) and (ATTRIBUTE.match(lines[j]) or not lines[j].strip()):
            j += 1
        if j < len(lines) and MOD.match(lines[j]):
            end = i
            break
    count = 0
    for line in lines[:end]:
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        count += 1
    return count


def sources() -> list[pathlib.Path]:
    files = list((ROOT / "src").rglob("*.rs"))
    for crate in sorted((ROOT / "crates").iterdir()):
        if (crate / "src").is_dir():
            files.extend((crate / "src").rglob("*.rs"))
    return sorted(files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=LIMIT)
    parser.add_argument("--top", type=int, default=5, help="how many of the largest to print")
    args = parser.parse_args()
    counted = sorted(
        ((code_lines(p), p.relative_to(ROOT).as_posix()) for p in sources()), reverse=True
    )
    over = [(n, p) for n, p in counted if n > args.limit]
    for n, p in counted[: args.top]:
        print(f"{n:6} {p}")
    if over:
        for n, p in over:
            print(
                f"{p}: {n} lines of code before its tests, over the limit of {args.limit}; "
                "split it along its ideas",
                file=sys.stderr,
            )
        return 1
    print(f"every source file is within {args.limit} lines of code")
    return 0


if __name__ == "__main__":
    sys.exit(main())

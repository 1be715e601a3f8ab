#!/bin/sh
# Regenerates the captured runner output in this directory: small sample projects (written
# below, nothing else's code) run by the real runners, the way the tester runs them (stdin
# closed, stdout and stderr together, CI=true, no colour). Console text has the project's
# root taken out, as the tester does; the XML reports are kept as the runners wrote them.
#
#   sh capture.sh            # needs node, npm, cargo and cargo-nextest
#   JS_MODULES=/path/to/node_modules sh capture.sh   # reuse a node_modules holding vitest
#                                                    # and mocha instead of `npm install`
#
# Captured with node 20.20.2, vitest 4.1.12, mocha 12.0.3, cargo 1.95.0, cargo-nextest 0.9.143.
set -u
out=$(cd "$(dirname "$0")" && pwd)
root=/tmp/tlv4-capture
rm -rf "$root"
mkdir -p "$root"
export CI=true NO_COLOR=1 FORCE_COLOR=0 CARGO_TERM_COLOR=never CARGO_TARGET_DIR="$root/target"
unset RUST_BACKTRACE NODE_OPTIONS

# Runs "$@" in directory $1 and writes its output, with "$1/" taken out, to $out/$2.
capture() {
    dir=$1 file=$2
    shift 2
    (cd "$dir" && "$@" </dev/null >"$root/raw" 2>&1)
    echo "$file: exit $?"
    sed -e "s|$dir/||g" -e "s|$out/|/tmp/results/|g" "$root/raw" >"$out/$file"
}

# Node's built-in runner: a passing, a failing, a skipped and a todo test, a describe with one
# of each, and a file that does not load.
n="$root/node"
mkdir -p "$n/test"
printf '{"name":"nt","version":"1.0.0","private":true,"scripts":{"test":"node --test"}}\n' >"$n/package.json"
cat >"$n/test/calc.test.js" <<'JS'
const test = require('node:test');
const assert = require('node:assert');
const { describe, it } = test;

test('adds', () => { assert.strictEqual(1 + 2, 3); });
test('subtracts wrongly', () => { assert.strictEqual(3 - 1, 1); });
test('later', { skip: 'not yet' }, () => {});
describe('math', () => {
  it('multiplies', () => { assert.strictEqual(2 * 3, 6); });
  it('divides wrongly', () => { assert.deepStrictEqual({ q: 6 / 2 }, { q: 4 }); });
});
JS
cat >"$n/test/other.test.js" <<'JS'
const test = require('node:test');
const assert = require('node:assert');
test('other ok', () => { assert.ok(true); });
test('other todo', { todo: true }, () => {});
JS
cat >"$n/test/broken.test.js" <<'JS'
const { nope } = require('./missing');
require('node:test')('never', () => nope());
JS
# As the tester runs it: the spec reporter on stdout and JUnit XML to a file.
NODE_OPTIONS="--test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination=$out/node-junit.xml" \
    capture "$n" node-spec.txt npm test
# As a configured `npm test` runs it: the default reporter (TAP, stdout not being a terminal).
capture "$n" node-tap.txt npm test

# Vitest and Mocha, from the npm registry.
js=${JS_MODULES:-}
if [ -z "$js" ]; then
    mkdir -p "$root/js"
    (cd "$root/js" && npm init -y >/dev/null && npm install --no-audit --no-fund vitest@4 mocha@12 >/dev/null)
    js="$root/js/node_modules"
fi
v="$root/vitest"
mkdir -p "$v/src"
ln -s "$js" "$v/node_modules"
printf '{"name":"vt","version":"1.0.0","private":true,"type":"module","scripts":{"test":"vitest run"}}\n' >"$v/package.json"
cat >"$v/src/math.test.js" <<'JS'
import { describe, it, expect } from 'vitest';
describe('math', () => {
  it('adds', () => { expect(1 + 2).toBe(3); });
  it('subtracts', () => { expect(3 - 1).toBe(1); });
  it.skip('divides later', () => {});
});
JS
cat >"$v/src/util.test.js" <<'JS'
import { it, expect } from 'vitest';
it('works', () => { expect(true).toBe(true); });
JS
cat >"$v/src/broken.test.js" <<'JS'
import { nope } from './missing.js';
import { it } from 'vitest';
it('never', () => nope());
JS
capture "$v" vitest.txt npx --no -- vitest run --reporter=default --reporter=junit "--outputFile.junit=$out/vitest-junit.xml"

m="$root/mocha"
mkdir -p "$m/test"
ln -s "$js" "$m/node_modules"
printf '{"name":"mo","version":"1.0.0","private":true,"scripts":{"test":"mocha"}}\n' >"$m/package.json"
cat >"$m/test/math.test.js" <<'JS'
const assert = require('node:assert');
describe('math', () => {
  it('adds', () => { assert.strictEqual(1 + 2, 3); });
  it('subtracts', () => { assert.strictEqual(3 - 1, 1); });
  it('divides later');
  describe('nested', () => {
    it('multiplies', () => { assert.deepStrictEqual({ p: 2 * 3 }, { p: 7 }); });
  });
});
JS
cat >"$m/test/util.test.js" <<'JS'
const assert = require('node:assert');
describe('util', () => { it('works', () => assert.ok(true)); });
JS
capture "$m" mocha.txt npx --no -- mocha --reporter xunit --reporter-option "output=$out/mocha-xunit.xml"
# A test file that does not load: Mocha stops before any test, and writes no report.
printf "const m = require('./nope');\ndescribe('m', () => { it('x', () => m()); });\n" >"$m/test/missing.test.js"
capture "$m" mocha-load-error.txt npx --no -- mocha --reporter xunit --reporter-option "output=$root/none.xml"

# Cargo: a workspace of two crates, unit tests, an integration test and doc tests, with
# failures in three test binaries.
w="$root/ws"
mkdir -p "$w/alpha/src" "$w/beta/src" "$w/beta/tests"
printf '[workspace]\nmembers = ["alpha", "beta"]\nresolver = "2"\n' >"$w/Cargo.toml"
for c in alpha beta; do
    printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n' "$c" >"$w/$c/Cargo.toml"
done
cat >"$w/alpha/src/lib.rs" <<'RS'
/// Adds two numbers.
///
/// ```
/// assert_eq!(alpha::add(1, 2), 3);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// Subtracts, wrongly documented.
///
/// ```
/// assert_eq!(alpha::sub(3, 1), 1);
/// ```
pub fn sub(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(1, 2), 3);
    }
    #[test]
    fn subtracts() {
        assert_eq!(super::sub(3, 1), 1);
    }
    #[test]
    #[ignore]
    fn later() {}
}
RS
cat >"$w/beta/src/lib.rs" <<'RS'
pub fn twice(x: i32) -> i32 {
    x * 2
}

#[cfg(test)]
mod tests {
    #[test]
    fn twice_works() {
        assert_eq!(super::twice(2), 4);
    }
}
RS
cat >"$w/beta/tests/more.rs" <<'RS'
#[test]
fn more_ok() {
    assert_eq!(beta::twice(3), 6);
}

#[test]
fn more_bad() {
    assert_eq!(beta::twice(3), 7, "twice(3) is not 7");
}
RS
capture "$w" cargo-workspace.txt cargo test --no-fail-fast
# nextest as the tester runs it (see `nextest_command` in tester.rs), then the doc tests.
printf '[profile.git-tlv4]\nfail-fast = false\n\n[profile.git-tlv4.junit]\npath = "%s"\n' "$out/nextest-junit.xml" >"$root/nextest.toml"
NEXTEST_NO_TESTS=pass capture "$w" nextest.txt sh -c \
    "cargo nextest run --no-fail-fast --profile git-tlv4 --tool-config-file git-tlv4:$root/nextest.toml; s=\$?; [ \$s -eq 101 ] || cargo test --doc --no-fail-fast || s=\$?; exit \$s"
# A compile error: no test runs.
sed -i 's/x \* 2/x * y/' "$w/beta/src/lib.rs"
capture "$w" cargo-compile-error.txt cargo test --no-fail-fast
NEXTEST_NO_TESTS=pass capture "$w" nextest-compile-error.txt cargo nextest run --no-fail-fast --profile git-tlv4 --tool-config-file "git-tlv4:$root/nextest.toml"

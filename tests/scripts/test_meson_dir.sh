#!/usr/bin/env bash
# scripts/meson_dir.sh: a build directory that an earlier, failed setup
# left half-made is set up again (before, every later run skipped the
# setup because the directory existed, and failed with "not a meson
# build directory"), and a setup that fails removes what it made.
# Prints "1 passed, 0 failed" style counts; exit 0 on success.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/meson_dir.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/meson.build" <<'M'
project('t', 'c')
executable('t', 't.c')
M
echo 'int main(void) { return 0; }' > "$tmp/t.c"
cd "$tmp"
pass=0; fail=0
ok() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*"; fi; }

# a setup that fails (an unknown option) leaves no directory behind
meson_dir b1 -Dno_such_option=1 2>/dev/null
ok test ! -e b1
# a half-made directory (what a failed setup of an older script left)
mkdir -p b2/meson-private
echo junk > b2/meson-private/cmd_line.txt
ok meson_dir b2
ok test -f b2/build.ninja
ok meson compile -C b2 >/dev/null
# a finished one is kept as it is
touch b2/keep
ok meson_dir b2
ok test -e b2/keep
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

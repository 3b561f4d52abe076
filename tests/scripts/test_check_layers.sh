#!/usr/bin/env bash
# scripts/check_layers.py fails on a lower room that calls a higher one
# and passes on the opposite call (objects made here, named as meson
# names the library's).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cc=${CC:-cc}
mkdir "$d/up" "$d/down"
echo 'int ukp_core_thing(void) { return 1; }' >"$d/core.c"
echo 'int ukp_core_thing(void); int ukp_text_thing(void) { return ukp_core_thing(); }' >"$d/text_up.c"
echo 'int ukp_text_thing2(void) { return 2; }' >"$d/text.c"
echo 'int ukp_text_thing2(void); int ukp_core_thing3(void) { return ukp_text_thing2(); }' >"$d/core_down.c"
$cc -c "$d/core.c" -o "$d/up/core_thing.c.o"
$cc -c "$d/text_up.c" -o "$d/up/text_up.c.o"
$cc -c "$d/text.c" -o "$d/down/text_thing.c.o"
$cc -c "$d/core_down.c" -o "$d/down/core_down.c.o"
if python3 "$here/scripts/check_layers.py" "$d/up" 2>"$d/err"; then
  echo "FAIL: text calling core passed the check"; exit 1
fi
grep -q 'text_up.c.o (text) uses ukp_core_thing of core_thing.c.o (core)' "$d/err" ||
  { echo "FAIL: unexpected message:"; cat "$d/err"; exit 1; }
python3 "$here/scripts/check_layers.py" "$d/down" >/dev/null ||
  { echo "FAIL: core calling text was refused"; exit 1; }
# a lower room's file that includes a higher room's header
mkdir -p "$d/src/text" "$d/src/core"
printf '#include "core/core.h"\n' >"$d/src/text/view.c"
printf '#include "text/text.h"\n' >"$d/src/core/user.c"
if python3 "$here/scripts/check_layers.py" "$d/down" "$d/src" 2>"$d/err"; then
  echo "FAIL: text including core's header passed the check"; exit 1
fi
grep -q 'text/view.c:1 (text) includes core/' "$d/err" ||
  { echo "FAIL: unexpected message:"; cat "$d/err"; exit 1; }
rm "$d/src/text/view.c"
python3 "$here/scripts/check_layers.py" "$d/down" "$d/src" >/dev/null ||
  { echo "FAIL: core including text's header was refused"; exit 1; }
echo ok

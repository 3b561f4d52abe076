#!/usr/bin/env bash
# mkstatic.sh OUT.a IN.a [OBJCOPY AR]: copies the (possibly thin) archive IN.a to OUT.a
# with every code section renamed to ukprobes_text, so that the blacklist
# covers the whole library when it is linked statically.
set -euo pipefail
out=$(realpath -m "$1")
in=$(realpath "$2")
objcopy=${3:-objcopy}
ar=${4:-ar}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$(dirname "$in")"
i=0
for o in $("$ar" t "$in"); do
  i=$((i + 1))
  "$objcopy" --rename-section .text=ukprobes_text \
          --rename-section .text.unlikely=ukprobes_text \
          --rename-section .text.hot=ukprobes_text \
          --rename-section .text.startup=ukprobes_text \
          --rename-section .text.exit=ukprobes_text \
          "$o" "$tmp/$(printf %03d $i)-$(basename "$o")"
done
rm -f "$out"
"$ar" rcs "$out" "$tmp"/*.o

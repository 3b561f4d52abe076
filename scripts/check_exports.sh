#!/usr/bin/env bash
# The library's API three ways, which must agree (doc/abi.md): the
# functions include/ukprobes.h (and its arch headers) declare
# UKPROBES_API, the names of src/libukprobes.map's UKPROBES_* nodes, and
# what the built libukprobes.so exports under those nodes. A function
# declared and not exported (or exported and not declared, or in the map
# and not built) fails.
# Usage: check_exports.sh BUILDDIR
set -euo pipefail
cd "$(dirname "$0")/.."
lib="${1:-build}/src/libukprobes.so"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the name before the first '(' of each declaration line
sed -nE 's/^UKPROBES_API[^(]*[^_[:alnum:]]([_[:alpha:]][_[:alnum:]]*)\(.*/\1/p' \
  include/ukprobes.h include/ukprobes-arch/*.h | sort -u > "$tmp/header"
# the global names of the UKPROBES_* nodes
awk '/^UKPROBES_[0-9.]+ *\{/ { node = 1; next }
     /^\}/ { node = 0; next }
     node && /^ *global:/ { global = 1; next }
     node && /^ *local:/ { global = 0; next }
     node && global && /^ *[_[:alpha:]][_[:alnum:]]*;/ { gsub(/[ ;]/, ""); print }' \
  src/libukprobes.map | sort -u > "$tmp/map"
nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /@@?UKPROBES_/ { sub(/@.*/, "", $3); print $3 }' |
  sort -u > "$tmp/exports"
ok=1
for a in header map exports; do
  for b in header map exports; do
    [ "$a" \< "$b" ] || continue
    if ! cmp -s "$tmp/$a" "$tmp/$b"; then
      echo "check_exports: $a and $b differ ('<' only in $a, '>' only in $b):" >&2
      diff "$tmp/$a" "$tmp/$b" | grep '^[<>]' >&2 || true
      ok=0
    fi
  done
done
[ "$ok" = 1 ] || exit 1
echo "check_exports: ok ($(wc -l < "$tmp/header") functions)"

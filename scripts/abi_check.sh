#!/usr/bin/env bash
# The ABI check (doc/abi.md): libukprobes.so against the recorded
# baseline abi/libukprobes.abi with abidiff (Debian's abigail-tools).
# Fails on any change to what the baseline has (a struct users allocate
# that grew or changed, a function removed or changed): added functions
# alone pass (they come in a new version node). After an intended addition, record the new
# baseline: bash scripts/abi_check.sh --update BUILDDIR
# Usage: abi_check.sh [--update] BUILDDIR
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
[ "${1:-}" = "--update" ] && { update=1; shift; }
lib="${1:-build}/src/libukprobes.so"
base=abi/libukprobes.abi
if ! command -v abidw >/dev/null; then
  echo "abi_check: abidw not found (apt-get install abigail-tools)" >&2
  exit 1
fi
now=$(mktemp)
trap 'rm -f "$now"' EXIT
abidw --headers-dir include --no-corpus-path --drop-private-types "$lib" > "$now"
if [ $update = 1 ]; then
  cp "$now" "$base"
  echo "abi_check: baseline recorded in $base"
  exit 0
fi
set +e
abidiff --no-added-syms "$base" "$now"
rc=$?
set -e
# abidiff's status: bit 1 error, bit 2 usage, bit 3 an ABI change, bit 4
# an incompatible one
if [ $((rc & 3)) -ne 0 ]; then
  echo "abi_check: abidiff failed ($rc)" >&2
  exit 1
fi
if [ $((rc & 12)) -ne 0 ]; then
  echo "abi_check: the ABI changed against $base (see above; doc/abi.md)" >&2
  exit 1
fi
echo "abi_check: ok"

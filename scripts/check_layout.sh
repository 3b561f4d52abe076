#!/usr/bin/env bash
# Layout checks anyone can run with grep (issue 17): no file under src/
# outside src/arch/ names an x86 opcode (the arch code owns the
# instruction set: src/arch.h says what each arch provides), and the
# assembly's offsets are generated (src/asm_offsets.c), not kept by hand,
# and the fast paths' .S files use only the offsets of the two blocks of
# src/fastpath.h (FS_*, FT_*): the rest (P_*) belongs to the primitives
# (src/arch/<arch>/fastpath_ops.h).
set -euo pipefail
cd "$(dirname "$0")/.."
# one-byte opcodes and the first bytes of multi-byte ones, as C constants
pat='0x(cc|cd|c3|c2|e8|e9|eb|90)\b|0xf3, *0x0f|0x0f, *0x(05|0b|1e|1f)'
bad=$(grep -nEr --include='*.c' --include='*.h' "$pat" src | grep -v '^src/arch/' || true)
if [ -n "$bad" ]; then
  echo "check_layout: x86 opcodes outside src/arch/:" >&2
  echo "$bad" >&2
  exit 1
fi
if [ -e src/asm_offsets.h ] || { [ -d .git ] && [ -n "$(git ls-files src/asm_offsets.h)" ]; }; then
  echo "check_layout: src/asm_offsets.h is kept by hand: it is generated from src/asm_offsets.c" >&2
  exit 1
fi
bad=$(grep -nE '\bP_[A-Z0-9_]+' src/arch/*/*.S || true)
if [ -n "$bad" ]; then
  echo "check_layout: the fast paths use an offset behind the primitives (src/fastpath.h):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "check_layout: ok"

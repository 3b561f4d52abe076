#!/usr/bin/env bash
# Layout checks anyone can run with grep (issue 17): no file under src/
# outside src/arch/ names an x86 opcode (the arch code owns the
# instruction set: src/arch.h says what each arch provides), and the
# assembly's offsets are generated (src/core/asm_offsets.c), not kept by hand,
# the agent includes nothing of src/ or tools/ but the public header,
# reads no ELF file itself and builds no parser (the CLI parses; the
# agent gets the parsed form), and
# the fast paths' .S files use only the offsets of the two blocks of
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
  echo "check_layout: src/asm_offsets.h is kept by hand: it is generated from src/core/asm_offsets.c" >&2
  exit 1
fi
# The agent is a user of the library like any other: it includes the
# public header, system headers, its own and common/'s, nothing of src/
# (the library's insides) or tools/ (the CLI's); what it shares with
# either lives in common/.
bad=$(grep -rn '^[[:space:]]*#[[:space:]]*include' agent | while IFS= read -r line; do
  hdr=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1/' <<<"$line")
  case "$line" in
    *'<ukprobes.h>'*) continue ;;
    # a system header, unless it is one of the library's or the CLI's
    # that an include path would find before it
    *'#'*include*'<'*)
      { [ -e "src/$hdr" ] || [ -e "tools/ukprobe/$hdr" ]; } && [ ! -e "/usr/include/$hdr" ] ||
        continue ;;
  esac
  # (agent/arch/ARCH/: the agent's own per-architecture headers)
  if [ -e "agent/$hdr" ] || [ -e "common/$hdr" ] || ls agent/arch/*/"$hdr" >/dev/null 2>&1; then
    [ -e "src/$hdr" ] || [ -e "tools/ukprobe/$hdr" ] || continue
  fi
  echo "$line"
done)
if [ -n "$bad" ]; then
  echo "check_layout: the agent includes the library's or the CLI's headers (only <ukprobes.h>, system, agent/ and common/ ones):" >&2
  echo "$bad" >&2
  exit 1
fi
# The agent reads no ELF file itself: the library's reader does, for
# loaded objects and for files not loaded yet (find_module_file and the
# module_file_* look-ups), with their debug files.
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](libelf\.h|gelf\.h|elfutils/[^>"]*|debuginfo\.h)[>"]' \
  agent/*.c agent/*.h || true)
if [ -n "$bad" ]; then
  echo "check_layout: the agent reads ELF files itself (libukprobes' find_module_file and module_file_* do):" >&2
  echo "$bad" >&2
  exit 1
fi
# SPECs, filters and triggers are parsed once, by the CLI: the agent gets
# them parsed (common/spec_wire.h) and neither builds nor calls a parser.
parsers="'(spec|spec_fetch|filter|trigger|hist|fetch_regs)\.c'"
bad=$( {
  grep -n 'ukp_common_parse_src' agent/meson.build || true
  sed -n '/^ukp_common_spec_src/,/)/p' common/meson.build | grep -E "$parsers" || true
  grep -nE '\b(ukp_spec_parse|ukp_filter_compile|ukp_trigger_parse|ukp_hist_parse|ukp_spec_reg_index)[[:space:]]*\(' \
    agent/*.c agent/*.h || true
} )
if [ -n "$bad" ]; then
  echo "check_layout: the agent builds or calls a SPEC, filter or trigger parser (it gets them parsed):" >&2
  echo "$bad" >&2
  exit 1
fi
# The fast paths' assembly writes against src/fastpath.h's two blocks;
# the P_* layouts behind the primitives stay in fastpath_ops.h.
bad=$(grep -nE '\bP_[A-Z0-9_]+' src/arch/*/*.S || true)
if [ -n "$bad" ]; then
  echo "check_layout: the fast paths use an offset behind the primitives (src/fastpath.h):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "check_layout: ok"

#!/usr/bin/env python3
"""gen_asm_offsets.py OUT.h -- CC ARGS...: compiles src/core/asm_offsets.c to
assembly with the given command (the build's compiler and flags) and
writes the "->NAME VALUE" markers it leaves as #defines into OUT.h (the
kernel's asm-offsets way). The header changes only when a value does."""
import re
import subprocess
import sys

out = sys.argv[1]
cmd = sys.argv[sys.argv.index("--") + 1:]
asm = subprocess.run(cmd + ["-S", "-o", "-"], capture_output=True, text=True)
if asm.returncode:
    sys.exit("gen_asm_offsets: %s\n%s" % (" ".join(cmd), asm.stderr))
defs = re.findall(r'->(\w+) \$?(-?\d+)', asm.stdout)
if not defs:
    sys.exit("gen_asm_offsets: no markers in the assembly of %s" % cmd[-1])
text = ["/* Generated from src/core/asm_offsets.c by scripts/gen_asm_offsets.py: do not edit. */",
        "#ifndef UKP_ASM_OFFSETS_H", "#define UKP_ASM_OFFSETS_H", ""]
text += ["#define %-16s %s" % (name, val) for name, val in defs]
text += ["", "#endif", ""]
text = "\n".join(text)
try:
    with open(out) as f:
        if f.read() == text:
            sys.exit(0)
except FileNotFoundError:
    pass
with open(out, "w") as f:
    f.write(text)

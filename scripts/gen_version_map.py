#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's version script for an architecture whose C library starts
at a later version than x86-64's (src/libukprobes.map names glibc's
x86-64 versions): every GLIBC_ node older than BASE becomes BASE (merged
into one node), so that the interposers carry the versions the
architecture's programs ask for (aarch64: sigaction@GLIBC_2.17).

  gen_version_map.py IN OUT BASE      (BASE: 2.17)
"""
import re
import sys


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def main():
    src, out, base = sys.argv[1], sys.argv[2], sys.argv[3]
    text = open(src).read()
    # nodes: NAME { BODY } [PARENT]; with the text before each (comments)
    node_re = re.compile(r"([A-Za-z_][\w.]*) \{\n(.*?)\n\}( [\w.]+)?;\n", re.S)
    nodes, pos, head = [], 0, None
    for m in node_re.finditer(text):
        pre = text[pos:m.start()]
        if head is None:
            head, pre = pre, ""
        nodes.append([m[1], pre, m[2]])
        pos = m.end()
    tail = text[pos:]
    merged = []
    for name, pre, body in nodes:
        g = re.fullmatch(r"GLIBC_([\d.]+)", name)
        if g and vkey(g[1]) < vkey(base):
            name = "GLIBC_" + base
        if merged and merged[-1][0] == name:
            merged[-1][2] += "\n" + pre + "\n".join(
                l for l in body.splitlines() if l.strip() != "global:")
            continue
        merged.append([name, pre, body])
    res = [head]
    for i, (name, pre, body) in enumerate(merged):
        parent = " " + merged[i - 1][0] if i else ""
        res.append("%s%s {\n%s\n}%s;\n" % (pre, name, body, parent))
    res.append(tail)
    with open(out, "w") as f:
        f.write("/* Generated from %s by scripts/gen_version_map.py (GLIBC_ base %s). */\n"
                % (src.split("/")[-1], base) + "".join(res))


if __name__ == "__main__":
    main()

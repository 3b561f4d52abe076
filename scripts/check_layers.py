#!/usr/bin/env python3
"""check_layers.py OBJDIR[,OBJDIR...] [SRCDIR]: the library's rooms call only their
own and lower ones (doc/layout.md, src/).

With SRCDIR (the library's src/), no file of a room includes a higher
room's header either (an inline function or a macro there is a call the
objects do not show).

OBJDIR holds the library's object files as meson names them
(src/libukprobes.so.*.p: ROOM_FILE.c.o, arch_ARCH_FILE.c.o). A room may
call a function or use a variable defined in its own room or in a lower
one; the engine's rooms (core, optimizer, process, watch) call each other
freely; the arch's code is the arch half of every room and is not ranked.
Calls to the C library's names (the library's interposers define some of
them: mprotect, read, dlclose...) are calls to libc, not to a room.
"""
import glob
import os
import re
import subprocess
import sys

RANK = {'base': 0, 'symbols': 1, 'text': 2, 'flow': 3,
        'core': 4, 'optimizer': 4, 'process': 4, 'watch': 4,
        # the freestanding build's C library: nothing calls it by a name
        # of its own (the rooms call libc's names)
        'free': 5}


def nm(path, *opts):
    out = subprocess.run(['nm', *opts, path], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def libc_names():
    names = set()
    for cand in glob.glob('/lib/*/libc.so.6') + glob.glob('/usr/lib/*/libc.so.6'):
        for p in nm(cand, '-D', '--defined-only'):
            if len(p) == 3:
                names.add(p[2].split('@')[0])
    return names


def main():
    objdir = sys.argv[1]
    libc = libc_names()
    defs, uses = {}, {}
    for o in sorted(o for d in objdir.split(',') for o in glob.glob(os.path.join(d, '*.o'))):
        name = os.path.basename(o)
        room = name.split('_', 1)[0]
        if room == 'arch' or room not in RANK:
            if room != 'arch':
                print(f'check_layers: {name}: not in a room ({", ".join(RANK)})', file=sys.stderr)
                return 1
            continue
        for p in nm(o):
            if len(p) == 3 and p[1] in 'TDBRVWC':
                defs[p[2]] = (room, name)
            elif len(p) == 2 and p[0] == 'U':
                uses.setdefault(name, (room, set()))[1].add(p[1])
    bad = []
    for name, (room, syms) in sorted(uses.items()):
        for sym in sorted(syms):
            if sym not in defs or sym in libc:
                continue
            droom, dname = defs[sym]
            if RANK[droom] > RANK[room]:
                bad.append(f'{name} ({room}) uses {sym} of {dname} ({droom}), a higher room')
    if len(sys.argv) > 2:
        srcdir = sys.argv[2]
        for room in RANK:
            for f in sorted(glob.glob(os.path.join(srcdir, room, '*.[ch]'))):
                with open(f, encoding='utf-8') as fh:
                    for n, line in enumerate(fh, 1):
                        m = re.match(r'\s*#\s*include\s*"([a-z_]+)/', line)
                        if m and m.group(1) in RANK and RANK[m.group(1)] > RANK[room]:
                            bad.append(f'{room}/{os.path.basename(f)}:{n} ({room}) includes '
                                       f'{m.group(1)}/, a higher room')
    if bad:
        print('check_layers: a lower room calls a higher one:', file=sys.stderr)
        for b in bad:
            print('  ' + b, file=sys.stderr)
        return 1
    print(f'check_layers: {len(uses)} objects, every call goes to its own room or a lower one')
    return 0


if __name__ == '__main__':
    sys.exit(main())

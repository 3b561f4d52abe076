#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Resolving many line probes in a large object (issue 29's third goal:
1,000 line probes in <= 0.5 s).

Picks N random (FILE, LINE) pairs with code from libc's debug file
(libc6-dbg: its line table, through objdump --dwarf=decodedline), FILE a
basename that names one source file only, writes them as
`p:lK libc.so.6:FILE:LINE` SPECs, and times
`ukprobe probes -E SPECS -- /nonexistent` (ukprobe resolves every SPEC,
then fails to start the command) and the same with one SPEC, in user
CPU and wall seconds (the best and the median of --reps runs).

    python3 bench/dwarf_lines.py --ukprobe build/tools/ukprobe/ukprobe [-n 1000] [--reps 5]
"""
import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def libc_debug():
    """libc.so.6's path and its debug file (by build-id), or (None, None)."""
    out = subprocess.run(["ldd", "/bin/true"], capture_output=True, text=True).stdout
    m = re.search(r"libc\.so\.6 => (\S+)", out)
    if not m:
        return None, None
    libc = os.path.realpath(m[1])
    notes = subprocess.run(["readelf", "-n", libc], capture_output=True, text=True).stdout
    b = re.search(r"Build ID: ([0-9a-f]+)", notes)
    if not b:
        return libc, None
    dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (b[1][:2], b[1][2:])
    return libc, dbg if os.path.exists(dbg) else None


def lines_with_code(dbg):
    """{basename: set(lines)} of the statement lines, for the basenames of
    one compilation unit's file only."""
    out = subprocess.run(["objdump", "--dwarf=decodedline", dbg], capture_output=True,
                         text=True).stdout
    units, lines = {}, {}
    unit = None
    for l in out.splitlines():
        if l.endswith(":") and " " not in l:
            unit = l[:-1]
            units[os.path.basename(unit)] = units.get(os.path.basename(unit), 0) + 1
            continue
        f = l.split()
        if len(f) >= 4 and f[-1] == "x" and f[1].isdigit() and f[0] == os.path.basename(unit or ""):
            lines.setdefault(f[0], set()).add(int(f[1]))
    return {k: v for k, v in lines.items() if units.get(k) == 1 and k.endswith(".c")}


def timed(argv):
    """(user CPU s, wall s) of one run of argv."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before, wall, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()
    libc, dbg = libc_debug()
    if not dbg:
        print("dwarf_lines: no debug file for libc.so.6 (libc6-dbg)", file=sys.stderr)
        return 1
    table = lines_with_code(dbg)
    pairs = sorted((f, n) for f, ls in table.items() for n in ls)
    random.Random(args.seed).shuffle(pairs)
    with tempfile.TemporaryDirectory() as d:
        res = {}
        for count in (1, args.n):
            path = os.path.join(d, "specs%d" % count)
            with open(path, "w") as fp:
                for k, (f, n) in enumerate(pairs[:count]):
                    fp.write("p:l%d libc.so.6:%s:%d\n" % (k, f, n))
            argv = [args.ukprobe, "probes", "-E", path, "--", "/nonexistent"]
            runs = []
            for _ in range(args.reps):
                user, wall, r = timed(argv)
                # every SPEC resolved: the only failure is the command's
                if "nonexistent" not in r.stderr or re.search(r"SPEC|no code|ambiguous",
                                                               r.stderr):
                    print("dwarf_lines: %d SPECs: %s" % (count, r.stderr.strip()[:400]),
                          file=sys.stderr)
                    return 1
                runs.append((user, wall))
            res[count] = runs
    print("Resolving line probes in %s's debug file (%s), `ukprobe probes -E SPECS -- "
          "/nonexistent`, %d runs, load average %s:\n" % (
              os.path.basename(libc), dbg, args.reps, open("/proc/loadavg").read().split()[0]))
    print("| SPECs | user CPU s (best, median) | wall s (best, median) |")
    print("| ---: | ---: | ---: |")
    for count, runs in res.items():
        u = [x for x, _ in runs]
        w = [y for _, y in runs]
        print("| %d | %.2f, %.2f | %.2f, %.2f |" % (count, min(u), statistics.median(u), min(w),
                                                     statistics.median(w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

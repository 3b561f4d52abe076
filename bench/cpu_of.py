#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a traced run's CPU goes (issue 31's record measurements):

  bench/cpu_of.py [--poll] CMD...

runs CMD and prints its wall time, the CPU time (user + system) of CMD
and all its descendants (os.times() of the waited children), and how much
the kernel's writeback and journal threads (kworker*, jbd2*, ext4*) grew
meanwhile, 0.5 s after a sync included: work a tool moves out of its own
process into writeback shows there. With --poll, also the CPU per thread
name of CMD's descendants, read from /proc/PID/task/*/stat every 2 ms
(10 ms ticks; a thread's last reading before it exits), CMD's own
threads marked "top:". The machine's other tenants move the kernel
threads' count too: alternate the builds compared.
"""
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def stat_fields(path):
    with open(path) as f:
        st = f.read()
    return st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()


def kernel_threads():
    tot = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            comm, f = stat_fields("/proc/%s/stat" % p)
        except (OSError, ValueError):
            continue
        if comm.startswith(("kworker", "jbd2", "ext4")):
            tot += int(f[11]) + int(f[12])
    return tot / TICK


def descendants(pid):
    out = [pid]
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                for c in f.read().split():
                    out += descendants(int(c))
    except OSError:
        pass
    return out


def main():
    args = sys.argv[1:]
    poll = bool(args) and args[0] == "--poll"
    if poll:
        args = args[1:]
    if not args:
        sys.stderr.write(__doc__)
        return 2
    k0 = kernel_threads()
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    seen = {}
    while poll and p.poll() is None:
        for pid in descendants(p.pid):
            try:
                for t in os.listdir("/proc/%d/task" % pid):
                    comm, f = stat_fields("/proc/%d/task/%s/stat" % (pid, t))
                    seen[(pid, t)] = (("top:" if pid == p.pid else "") + comm,
                                      int(f[11]) + int(f[12]))
            except (OSError, ValueError):
                pass
        time.sleep(0.002)
    p.wait()
    wall = time.monotonic() - t0
    os.sync()
    time.sleep(0.5)
    k1 = kernel_threads()
    ch = os.times()
    line = "wall %.3f  cpu %.2f  kernel-threads %.2f" % (
        wall, ch.children_user + ch.children_system, k1 - k0)
    if poll:
        by = {}
        for comm, ticks in seen.values():
            by[comm] = by.get(comm, 0) + ticks / TICK
        line += "  " + "  ".join("%s=%.2f" % kv for kv in sorted(by.items()))
    print(line)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())

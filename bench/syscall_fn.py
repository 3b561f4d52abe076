#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a call of the C library's syscall() costs under ukprobe -f
(issue 28: raw forks through syscall() followed; its other calls must
cost what they cost without ukprobe):

  bench/syscall_fn.py --ukprobe UKPROBE --targets DIR [--rounds N] [--calls N]

runs tests/cli's tgt_static_work_dyn (the dynamic agent's own syscall(),
agent/raw_fork.c) and tgt_static_work (static: the freestanding agent,
free/syscall_fn.c) with "sysloop N" (N calls of syscall(SYS_getppid),
timed with the thread's CPU clock) alone and under
`ukprobe stat -f -e 'p:w work'`, the two alternating, and prints per
program the median ns per call of each and the median of the rounds'
ratios (-f / alone), with min and max.
"""
import argparse
import os
import statistics
import subprocess


def ns_per_call(cmd, calls):
    r = subprocess.run(cmd, input="sysloop %d\nquit\n" % calls, capture_output=True, text=True,
                       timeout=300)
    for line in r.stdout.splitlines():
        f = line.split()
        if f[:2] == ["sysloop", str(calls)]:
            return float(f[2])
    raise SystemExit("no sysloop line from %s:\n%s%s" % (cmd, r.stdout, r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=1000000)
    ap.add_argument("--bp-calls", type=int, default=20000)
    a = ap.parse_args()
    print("| program | alone ns/call | -f ns/call | ratio (median, min-max) | rounds |")
    print("| --- | --- | --- | --- | --- |")
    for prog in ("tgt_static_work_dyn", "tgt_static_work"):
        path = os.path.join(a.targets, prog)
        if not os.path.exists(path):
            continue
        alone, traced, ratios = [], [], []
        for _ in range(a.rounds):
            x = ns_per_call([path], a.calls)
            y = ns_per_call([a.ukprobe, "stat", "-f", "-e", "p:w work", "--", path], a.calls)
            alone.append(x)
            traced.append(y)
            ratios.append(y / x)
        print("| %s | %.1f | %.1f | %.3f (%.3f-%.3f) | %d |" %
              (prog, statistics.median(alone), statistics.median(traced),
               statistics.median(ratios), min(ratios), max(ratios), a.rounds))
    path = os.path.join(a.targets, "tgt_static_work")
    if os.path.exists(path):
        alone, traced, ratios = [], [], []
        for _ in range(a.rounds):
            x = ns_per_call([path], a.bp_calls)
            y = ns_per_call([a.ukprobe, "stat", "-e", "p:s syscall+23", "--", path], a.bp_calls)
            alone.append(x)
            traced.append(y)
            ratios.append(y / x)
        print("| tgt_static_work, breakpoint on syscall()'s instruction | %.1f | %.1f | "
              "%.1f (%.1f-%.1f) | %d |" %
              (statistics.median(alone), statistics.median(traced),
               statistics.median(ratios), min(ratios), max(ratios), a.rounds))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A/B of the Go and C per-hit rows (issue 32) between builds, alternating
them in every round: on a shared, loaded machine only such runs compare
two builds (bench/results/session20-go.md).

  ab_go_hit.py [--rounds N] [--calls N] BUILD_A BUILD_B ...

Each BUILD is a build directory with bench/bench_tool_hit,
tools/ukprobe/ukprobe and the agents (bench_tool.py's build). Per round
and build: a hit's cost is the call's thread CPU time under `ukprobe
stat` less the call's alone (C's bench_tool_target with `p` and `r`; Go's
main.split of bench/go_hit.go with `p` and `r`, dynamic and static);
printed are the medians over the rounds of the costs and of the ratios
Go/C taken in the same round. --leaf adds Go `p` and `r` on main.target
(a leaf without a stack check: the leaf template, or breakpoints),
dynamic and static, and their ratios to C's `p` and `r`.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_tool import build_go_hit  # noqa: E402


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    m = re.search(r"ns_per_call ([\d.]+)", r.stdout)
    if r.returncode or not m:
        sys.exit("ab_go_hit: %s failed: %s" % (" ".join(argv), r.stderr.strip()[-300:]))
    return float(m[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--calls", type=int, default=2000000)
    ap.add_argument("--leaf", action="store_true", help="also Go p on the leaf main.target")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    n = str(a.calls)
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        go, why = build_go_hit(d)
        gs, _ = build_go_hit(d, static=True)
        if not go or not gs:
            sys.exit("ab_go_hit: %s" % why)
        st = os.path.join(d, "stat.txt")
        for _ in range(a.rounds):
            for b in a.builds:
                b = os.path.abspath(b)
                os.environ["UKPROBE_AGENT"] = os.path.join(b, "agent", "libukprobe-agent.so")
                uk = [os.path.join(b, "tools", "ukprobe", "ukprobe"), "stat", "-o", st]
                hit = os.path.join(b, "bench", "bench_tool_hit")
                c0 = run([hit, n])
                cp = run(uk + ["-e", "p %s:bench_tool_target" % hit, "--", hit, n]) - c0
                cr = run(uk + ["-e", "r %s:bench_tool_target" % hit, "--", hit, n]) - c0
                g0 = run([go, "split", n])
                gp = run(uk + ["-e", "p %s:main.split" % go, "--", go, "split", n]) - g0
                gr = run(uk + ["-e", "r %s:main.split" % go, "--", go, "split", n]) - g0
                s0 = run([gs, "split", n])
                sp = run(uk + ["-e", "p %s:main.split" % gs, "--", gs, "split", n]) - s0
                row = (cp, cr, gp, gr, sp, gp / cp, sp / cp, gr / cr)
                if a.leaf:
                    l0, ls0 = run([go, n]), run([gs, n])
                    lp = run(uk + ["-e", "p %s:main.target" % go, "--", go, n]) - l0
                    lsp = run(uk + ["-e", "p %s:main.target" % gs, "--", gs, n]) - ls0
                    lr = run(uk + ["-e", "r %s:main.target" % go, "--", go, n]) - l0
                    lsr = run(uk + ["-e", "r %s:main.target" % gs, "--", gs, n]) - ls0
                    row += (lp, lsp, lr, lsr, lp / cp, lsp / cp, lr / cr, lsr / cr)
                rows.setdefault(b, []).append(row)
    print("build: ns per hit C p, C r, Go p, Go r, Go static p | Go p/C p, static p/C p, "
          "Go r/C r%s (medians of %d rounds, %d calls)"
          % (" | leaf p, static leaf p, leaf r, static leaf r | leaf p/C p, static leaf "
             "p/C p, leaf r/C r, static leaf r/C r" if a.leaf else "",
             a.rounds, a.calls))
    for b, v in rows.items():
        if not v:
            continue
        med = [statistics.median(x) for x in zip(*v)]
        out = "%s: %.2f %.2f %.2f %.2f %.2f | %.2f %.2f %.2f" % ((b,) + tuple(med[:8]))
        if a.leaf:
            out += " | %.2f %.2f %.2f %.2f | %.2f %.2f %.2f %.2f" % tuple(med[8:])
        print(out)


if __name__ == "__main__":
    main()

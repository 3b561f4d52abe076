#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A/B of the two agents ukprobe -p can load (issue 28): the cost of a hit
in an attached dynamic program with the freestanding agent (what -p
loads) and with the dynamic one (UKPROBE_AGENT_DYNAMIC=1, what it loaded
before), alternating them in every round: on a shared, loaded machine
only such runs compare two paths (doc/benchmarks.md).

  ab_agent_hit.py [--rounds N] [--calls N] [--json OUT] BUILD

BUILD is a build directory with bench/bench_tool_hit, tools/ukprobe/ukprobe
and both agents (bench/run.sh's build-bench). Two `bench_tool_hit --serve`
processes wait, one per agent. Per round, agent and row, ukprobe attaches
(`stat -p` with `p` or `r` on bench_tool_target, `trace -p -o` with `p`),
the loop of --calls calls runs 5 times once every probe is in place, and
again 3 times after the detach: a hit's cost is the least probed time per
call, in the thread's CPU time, less the least unprobed one. Printed are
the medians over the rounds of each cost and of the ratio free/dynamic
taken in the same round.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

ROWS = (("stat p", "stat", "p"), ("stat r", "stat", "r"), ("trace -o p", "trace", "p"))


class Server:
    """A bench_tool_hit --serve process: the loop's time per call on demand."""

    def __init__(self, hit):
        self.p = subprocess.Popen([hit, "--serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline() != "ready\n":
            sys.exit("ab_agent_hit: %s --serve did not start" % hit)

    def run(self, calls):
        self.p.stdin.write("%d\n" % calls)
        self.p.stdin.flush()
        line = self.p.stdout.readline().split()
        if len(line) < 2 or line[0] != "ns_per_call":
            sys.exit("ab_agent_hit: the served loop said %r" % line)
        return float(line[1])

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def session(uk, srv, hit, row, dynamic, calls, out):
    """One attach of row's SPEC to srv: the hit's cost per call (ns)."""
    _, cmd, kind = row
    argv = [uk, cmd, "-p", str(srv.p.pid), "-e", "%s:w %s:bench_tool_target" % (kind, hit)]
    argv += ["-o", out]
    env = dict(os.environ, UKPROBE_TIMING="1")
    env.pop("UKPROBE_AGENT_DYNAMIC", None)
    if dynamic:
        env["UKPROBE_AGENT_DYNAMIC"] = "1"
    t = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    said = b""
    while b"every probe in place" not in said:
        chunk = os.read(t.stderr.fileno(), 4096)
        if not chunk:
            t.wait()
            sys.exit("ab_agent_hit: %s ended before its probes were in place: %s" %
                     (" ".join(argv), said.decode(errors="replace")[-300:]))
        said += chunk
    probed = min(srv.run(calls) for _ in range(5))
    t.send_signal(signal.SIGINT)
    rest = t.communicate()[1]
    if t.returncode:
        sys.exit("ab_agent_hit: %s failed: %s" % (" ".join(argv), rest.decode()[-300:]))
    alone = min(srv.run(calls) for _ in range(3))
    return probed - alone


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=2000000)
    ap.add_argument("--json")
    ap.add_argument("build")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    os.environ["UKPROBE_AGENT"] = os.path.join(b, "agent", "libukprobe-agent.so")
    uk = os.path.join(b, "tools", "ukprobe", "ukprobe")
    hit = os.path.join(b, "bench", "bench_tool_hit")
    servers = {"free": Server(hit), "dynamic": Server(hit)}
    cost = {(r[0], ag): [] for r in ROWS for ag in servers}
    ratio = {r[0]: [] for r in ROWS}
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        for rnd in range(a.rounds):
            for row in ROWS:
                order = ("free", "dynamic") if rnd % 2 == 0 else ("dynamic", "free")
                got = {ag: session(uk, servers[ag], hit, row, ag == "dynamic", a.calls, out)
                       for ag in order}
                for ag in order:
                    cost[(row[0], ag)].append(got[ag])
                ratio[row[0]].append(got["free"] / got["dynamic"])
    for s in servers.values():
        s.close()
    res = {"calls": a.calls, "rounds": a.rounds, "rows": {}}
    print("%-12s %12s %12s %14s" % ("row", "free ns", "dynamic ns", "free/dynamic"))
    for row in ROWS:
        n = row[0]
        f = statistics.median(cost[(n, "free")])
        dy = statistics.median(cost[(n, "dynamic")])
        r = statistics.median(ratio[n])
        res["rows"][n] = {"free_ns": f, "dynamic_ns": dy, "ratio_median": r,
                          "ratios": ratio[n]}
        print("%-12s %12.2f %12.2f %14.3f" % (n, f, dy, r))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

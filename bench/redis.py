#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real server under load, attached: Debian's redis-server and
redis-benchmark's GET and SET requests per second with 3 probes counting
(call, processCommand, lookupKey), as a ratio to the same server without
probes; ukprobe (`stat -p`), `ukprobe run -p` (the bpftrace script below,
compiled) and bpftrace (uprobes on the same functions, `@n = count()`)
on the same server in the same run.

  redis.py --ukprobe PATH --json OUT [--rounds N] [--requests N] [--no-peers]
           [--all-rounds N]

Each round measures no probes, ukprobe, ukprobe run and bpftrace, in an order rotated
from round to round; each ratio is a probed run's rps over the no-probes
run of its round (median, min, max), with the hits each counted. Then
GET with every function of redis-server probed (`p redis-server:*`, the
issue's second goal), ukprobe only, alternating with no probes. ukprobe's
probes are measured once it says every one is in place (UKPROBE_TIMING).
"""
import argparse
import csv
import io
import json
import re
import select
import os
import shutil
import signal
import socket
import statistics
import subprocess
import time

FUNCS = ("call", "processCommand", "lookupKey")
SPECS = ["p redis-server:" + f for f in FUNCS]


def summary(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)} if v else None


def rps(port, test, requests):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", test, "-n", str(requests),
                          "-c", "50", "--csv"], capture_output=True, text=True, timeout=600).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[1][1])


def thread_named(pid, name):
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() == name:
                    return True
    except OSError:
        pass
    return False


def until_line(proc, want, what, timeout):
    """Lines of proc's stream until one containing want; a RuntimeError
    with what it said if it ends first or takes longer than timeout."""
    seen, end = [], time.time() + timeout
    stream = proc.stderr if proc.stderr else proc.stdout
    while time.time() < end:
        r, _, _ = select.select([stream], [], [], 0.5)
        if not r:
            continue
        line = stream.readline()
        if not line:
            break
        seen.append(line.strip())
        if want in line:
            return seen
    proc.kill()
    proc.wait()
    raise RuntimeError("%s: %s" % (what, " / ".join(seen[-3:]) or "no output"))


def with_ukprobe(ukprobe, srv, fn, specs):
    """fn()'s result with ukprobe stat -p counting specs, and the hits."""
    args = [ukprobe, "stat", "-p", str(srv.pid)]
    for sp in specs:
        args += ["-e", sp]
    t = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, UKPROBE_TIMING="1"))
    # every probe registered (a glob over every function takes seconds)
    until_line(t, "every probe in place", "ukprobe", 600)
    time.sleep(0.5)  # the jump optimizer's rounds
    try:
        return fn()
    finally:
        t.send_signal(signal.SIGINT)
        out, _ = t.communicate(timeout=600)
        hits[0] = sum(int(r.split()[1]) for r in out.splitlines()[1:]
                      if len(r.split()) >= 2 and r.split()[1].isdigit())


def script_for(srv):
    exe = os.readlink("/proc/%d/exe" % srv.pid)
    return ",".join("uprobe:%s:%s" % (exe, f) for f in FUNCS) + " { @n = count(); }"


def with_run(ukprobe, srv, fn):
    """`ukprobe run -p`: bpftrace's script, compiled, in the server."""
    u = subprocess.Popen([ukprobe, "run", "-p", str(srv.pid), "-e", script_for(srv)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = u.stdout.readline()  # "Attaching 3 probes..." once they are in
    if not line.startswith("Attaching"):
        u.kill()
        u.wait()
        raise RuntimeError("ukprobe run: " + line.strip() + u.stderr.read().strip())
    time.sleep(0.5)  # optimized
    try:
        return fn()
    finally:
        u.send_signal(signal.SIGINT)
        u.communicate(timeout=60)


def with_bpftrace(srv, fn):
    """fn()'s result with bpftrace's uprobes counting FUNCS, and the hits."""
    b = subprocess.Popen(["bpftrace", "-p", str(srv.pid), "-e", script_for(srv)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    # (its RLIMIT_MEMLOCK warning may come first: it attaches all the same)
    until_line(b, "Attaching", "bpftrace", 60)
    time.sleep(0.5)
    try:
        return fn()
    finally:
        b.send_signal(signal.SIGINT)
        try:
            out, _ = b.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # (slow to detach on a loaded machine: its count is lost)
            b.kill()
            out, _ = b.communicate()
        m = re.search(r"@n: (\d+)", out)
        hits[0] = int(m.group(1)) if m else None


hits = [0]  # the last probed run's hits (with_ukprobe, with_bpftrace)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--all-rounds", type=int, default=3,
                    help="rounds with every function probed (GET; 0: none)")
    a = ap.parse_args()
    res = {"command": "redis-benchmark -t get|set -n %d -c 50" % a.requests, "rows": []}
    missing = [p for p in ("redis-server", "redis-benchmark") if not shutil.which(p)]
    bpf_skip = ("peers not requested (--no-peers)" if a.no_peers else
                "bpftrace is not installed" if not shutil.which("bpftrace") else
                "bpftrace needs root" if os.geteuid() else None)
    if missing:
        for t in ("GET", "SET"):
            res["rows"].append({"id": "redis " + t, "status": "skipped",
                                "reason": "%s not installed" % " and ".join(missing)})
    else:
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            port = so.getsockname()[1]
        srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                                  text=True).stdout == "PONG\n":
                    break
                time.sleep(0.05)
            for t in ("get", "set"):
                base, uk, run, bpf, bpf_err = [], [], [], [], None
                rps(port, t, a.requests)  # warm-up: the first run is slower
                uk_hits, bpf_hits = [], []
                for i in range(a.rounds):
                    # each round measures the three in an order of its own
                    # (rotated): a drift of the machine favours none
                    runs = ["base", "ukprobe", "run"] + (["bpftrace"] if bpf_skip is None and
                                                         bpf_err is None else [])
                    runs = runs[i % len(runs):] + runs[:i % len(runs)]
                    got = {}
                    for r in runs:
                        try:
                            if r == "base":
                                got[r] = rps(port, t, a.requests)
                            elif r == "ukprobe":
                                got[r] = with_ukprobe(a.ukprobe, srv, lambda: rps(port, t, a.requests),
                                                      SPECS)
                                uk_hits.append(hits[0])
                            elif r == "run":
                                got[r] = with_run(a.ukprobe, srv, lambda: rps(port, t, a.requests))
                            else:
                                got[r] = with_bpftrace(srv, lambda: rps(port, t, a.requests))
                                bpf_hits.append(hits[0])
                        except (RuntimeError, OSError) as e:
                            if r != "bpftrace":
                                raise
                            bpf_err = str(e)
                    base.append(got["base"])
                    uk.append(got["ukprobe"] / got["base"])
                    run.append(got["run"] / got["base"])
                    if "bpftrace" in got:
                        bpf.append(got["bpftrace"] / got["base"])
                row = {"id": "redis " + t.upper(), "status": "ok", "rounds": a.rounds,
                       "base_rps": summary(base), "ukprobe": summary(uk), "ukprobe_run": summary(run),
                       "ukprobe_hits": uk_hits}
                if bpf:
                    row["bpftrace"] = summary(bpf)
                    row["bpftrace_hits"] = bpf_hits
                else:
                    row["bpftrace_skipped"] = bpf_skip or bpf_err
                res["rows"].append(row)
            # every function of redis-server probed, GET (ukprobe only:
            # bpftrace's uprobes on thousands of functions are the kernel's)
            base, uk, uk_hits = [], [], []
            for i in range(a.all_rounds):
                if i % 2:
                    u = with_ukprobe(a.ukprobe, srv, lambda: rps(port, "get", a.requests),
                                     ["p redis-server:*"])
                    uk_hits.append(hits[0])
                    b = rps(port, "get", a.requests)
                else:
                    b = rps(port, "get", a.requests)
                    u = with_ukprobe(a.ukprobe, srv, lambda: rps(port, "get", a.requests),
                                     ["p redis-server:*"])
                    uk_hits.append(hits[0])
                base.append(b)
                uk.append(u / b)
            if a.all_rounds:
                res["rows"].append({"id": "redis GET, every function", "status": "ok",
                                    "rounds": a.all_rounds, "base_rps": summary(base),
                                    "ukprobe": summary(uk), "ukprobe_hits": uk_hits,
                                    "bpftrace_skipped": "not measured (thousands of uprobes)"})
        finally:
            srv.kill()
            srv.wait()
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    for r in res["rows"]:
        if r["status"] != "ok":
            print("%s: %s: %s" % (r["id"], r["status"], r["reason"]))
            continue
        print("%s: %.0f rps without probes; ukprobe %.2f, bpftrace %s" % (
            r["id"], r["base_rps"]["median"], r["ukprobe"]["median"],
            "%.2f" % r["bpftrace"]["median"] if "bpftrace" in r else r["bpftrace_skipped"]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real server under load, attached: Debian's redis-server and
redis-benchmark's GET and SET requests per second with 3 probes counting
(call, processCommand, lookupKey), as a ratio to the same server without
probes; ukprobe (`stat -p`), `ukprobe run -p` (the bpftrace script below,
compiled) and bpftrace (uprobes on the same functions, `@n = count()`)
on the same server in the same run.

  redis.py --ukprobe PATH --json OUT [--rounds N] [--requests N] [--no-peers]

Each round measures no probes and ukprobe (in alternating order), then
bpftrace; each ratio is a probed run's rps over the no-probes run of its
round (median, min, max).
"""
import argparse
import csv
import io
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import time

FUNCS = ("call", "processCommand", "lookupKey")


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


def with_ukprobe(ukprobe, srv, fn):
    args = [ukprobe, "stat", "-p", str(srv.pid)]
    for f in FUNCS:
        args += ["-e", "p redis-server:" + f]
    t = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.time() + 30
    while not thread_named(srv.pid, "ukprobe-agent") and time.time() < end:
        time.sleep(0.01)
    time.sleep(0.5)  # the probes registered and optimized
    try:
        return fn()
    finally:
        t.send_signal(signal.SIGINT)
        t.communicate(timeout=60)


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
    b = subprocess.Popen(["bpftrace", "-p", str(srv.pid), "-e", script_for(srv)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    line = b.stdout.readline()  # "Attaching 3 probes..."
    # (its warning that RLIMIT_MEMLOCK could not be raised: it attaches)
    while "RLIMIT_MEMLOCK" in line:
        line = b.stdout.readline()
    if not line.startswith("Attaching"):
        b.kill()
        b.wait()
        raise RuntimeError("bpftrace: " + line.strip())
    time.sleep(0.5)
    try:
        return fn()
    finally:
        b.send_signal(signal.SIGINT)
        try:
            b.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # (seen under a load of 20: it did not end on SIGINT)
            b.kill()
            b.communicate()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--no-peers", action="store_true")
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
                for i in range(a.rounds):
                    # the order alternates: a drift of the machine favours neither
                    if i % 2:
                        u = with_ukprobe(a.ukprobe, srv, lambda: rps(port, t, a.requests))
                        b = rps(port, t, a.requests)
                    else:
                        b = rps(port, t, a.requests)
                        u = with_ukprobe(a.ukprobe, srv, lambda: rps(port, t, a.requests))
                    base.append(b)
                    uk.append(u / b)
                    run.append(with_run(a.ukprobe, srv, lambda: rps(port, t, a.requests)) / b)
                    if bpf_skip is None and bpf_err is None:
                        try:
                            bpf.append(with_bpftrace(srv, lambda: rps(port, t, a.requests)) / b)
                        except (RuntimeError, OSError) as e:
                            bpf_err = str(e)
                row = {"id": "redis " + t.upper(), "status": "ok", "rounds": a.rounds,
                       "base_rps": summary(base), "ukprobe": summary(uk),
                       "ukprobe_run": summary(run)}
                if bpf:
                    row["bpftrace"] = summary(bpf)
                else:
                    row["bpftrace_skipped"] = bpf_skip or bpf_err
                res["rows"].append(row)
        finally:
            srv.kill()
            srv.wait()
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    for r in res["rows"]:
        if r["status"] != "ok":
            print("%s: %s: %s" % (r["id"], r["status"], r["reason"]))
            continue
        print("%s: %.0f rps without probes; ukprobe %.2f, ukprobe run %.2f, bpftrace %s" % (
            r["id"], r["base_rps"]["median"], r["ukprobe"]["median"], r["ukprobe_run"]["median"],
            "%.2f" % r["bpftrace"]["median"] if "bpftrace" in r else r["bpftrace_skipped"]))


if __name__ == "__main__":
    main()

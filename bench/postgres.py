#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real server that forks, attached: Debian's PostgreSQL (a private
instance run as the postgres user) and pgbench's TPC-B transactions per
second with `ukprobe stat -f -p` on the postmaster counting 3 functions
of every backend forked meanwhile (PostgresMain, pg_parse_query,
ExecutorStart), as a ratio to the same server without probes.

  postgres.py --ukprobe PATH --json OUT [--rounds N] [--seconds S]

Two loads: persistent connections (-c 4: 4 backends forked at the start,
each traced) and a connection per transaction (-C -c 4: a backend and its
agent's connection per transaction). Each round runs both without and
with probes, in an order rotated from round to round; a ratio is the
probed run's tps over the no-probes run of its round (median, min,
max). ukprobe's probes count once it says every one is in place
(UKPROBE_TIMING); pgbench connects after that.
"""
import argparse
import glob
import json
import os
import pwd
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

SPECS = ["p postgres:PostgresMain", "p postgres:pg_parse_query", "p postgres:ExecutorStart"]


def tool(name):
    got = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name))
    if not got:
        raise SystemExit("no PostgreSQL server (scripts/setup.sh installs it)")
    return got[-1]


def summary(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)} if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    a = ap.parse_args()
    user = pwd.getpwnam("postgres")
    top = tempfile.mkdtemp(prefix="ukp-pgbench-")
    os.chmod(top, 0o755)
    data, sock = os.path.join(top, "data"), os.path.join(top, "sock")
    for d in (data, sock):
        os.mkdir(d, 0o700)
        os.chown(d, user.pw_uid, user.pw_gid)

    def as_user():
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = str(so.getsockname()[1])
    conn = ["-h", sock, "-p", port, "-U", "postgres"]
    subprocess.run([tool("initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"],
                   check=True, capture_output=True, preexec_fn=as_user)
    srv = subprocess.Popen([tool("postgres"), "-D", data, "-k", sock, "-p", port,
                            "-c", "listen_addresses=", "-c", "autovacuum=off",
                            "-c", "fsync=off", "-c", "synchronous_commit=off"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           preexec_fn=as_user)
    try:
        for _ in range(600):
            if subprocess.run([tool("pg_isready")] + conn, capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        subprocess.run([tool("pgbench")] + conn + ["-i", "-s", "4", "-q", "postgres"],
                       check=True, capture_output=True)

        def pgbench(load):
            r = subprocess.run([tool("pgbench")] + conn + ["-n", "-M", "simple", "-c", "4",
                                                          "-T", str(a.seconds)] + load +
                               ["postgres"], capture_output=True, text=True, timeout=300)
            if r.returncode or "number of failed transactions: 0 " not in r.stdout:
                raise SystemExit("pgbench failed:\n" + r.stdout + r.stderr)
            return float(re.search(r"tps = ([\d.]+)", r.stdout)[1])

        def probed(load):
            args = [a.ukprobe, "stat", "-f", "-p", str(srv.pid)]
            for s in SPECS:
                args += ["-e", s]
            u = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=dict(os.environ, UKPROBE_TIMING="1"))
            end = time.time() + 60
            while time.time() < end:
                r, _, _ = select.select([u.stderr], [], [], 1)
                if r and "every probe in place" in u.stderr.readline():
                    break
            tps = pgbench(load)
            u.send_signal(signal.SIGINT)
            out, _ = u.communicate(timeout=120)
            hits = sum(int(l.split()[1]) for l in out.splitlines()[1:]
                       if len(l.split()) > 1 and l.split()[1].isdigit())
            return tps, hits

        rows = {}
        for name, load in (("persistent", []), ("connect per transaction", ["-C"])):
            base, ratios, hits = [], [], []
            for i in range(a.rounds):
                if i % 2:
                    (t, h), b = probed(load), pgbench(load)
                else:
                    b, (t, h) = pgbench(load), probed(load)
                base.append(b)
                ratios.append(t / b)
                hits.append(h)
                print("%s round %d: %.0f tps without, %.0f with (%.2f), %d hits"
                      % (name, i, b, t, t / b, h), flush=True)
            rows[name] = {"tps_none": summary(base), "ratio": summary(ratios), "hits": hits}
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with open(a.json, "w") as f:
            json.dump({"commit": commit, "seconds": a.seconds, "rounds": a.rounds,
                       "load": os.getloadavg(), "specs": SPECS, "rows": rows}, f, indent=1)
    finally:
        srv.send_signal(signal.SIGINT)
        srv.wait(timeout=60)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How long ukprobe -p takes, and how long it stops the target.

  attach.py --ukprobe PATH --json OUT [--reps N]

Targets: Debian's python3 calling zlib.crc32 every millisecond, with 1
and with 101 threads (100 of them blocked in a condition variable).
Each repetition runs `ukprobe trace -p PID -d 0.3 -e 'p libz.so.1:crc32'`
with UKPROBE_TIMING=1, which prints how long the chosen thread was
stopped, how long the injection took, when the probes were registered
and the first event arrived (from the start of the session), and how
long the detach took. The first attach (which loads the agent) is kept
apart; medians and maxima over the others.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

PY = "/usr/bin/python3"
LOOP = ("import zlib, time, threading, sys\n"
        "ev = threading.Event()\n"
        "for i in range(int(sys.argv[1])):\n"
        "    threading.Thread(target=ev.wait, daemon=True).start()\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    zlib.crc32(b'x' * 100)\n"
        "    time.sleep(0.001)\n")
T1 = re.compile(r"thread (\d+) stopped (\d+) us, injection (\d+) us")
T2 = re.compile(r"probes registered after (-?\d+) ms, first event after (-?\d+) ms, "
                r"detached in (-?\d+) ms")


def summary(v):
    return {"median": statistics.median(v), "max": max(v), "min": min(v)} if v else None


def scenario(ukprobe, extra_threads, reps):
    p = subprocess.Popen([PY, "-c", LOOP, str(extra_threads)], stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline() != "ready\n":
            return {"status": "skipped", "reason": "python3 did not start"}
        time.sleep(0.2)
        vals = {k: [] for k in ("stop_us", "inject_us", "registered_ms", "first_event_ms",
                                "detach_ms")}
        for _ in range(reps):
            r = subprocess.run([ukprobe, "trace", "-p", str(p.pid), "-d", "0.3", "-o", os.devnull,
                                "-e", "p libz.so.1:crc32"], capture_output=True, text=True,
                               env=dict(os.environ, UKPROBE_TIMING="1"), timeout=60)
            m1, m2 = T1.search(r.stderr), T2.search(r.stderr)
            if r.returncode or not m1 or not m2:
                return {"status": "failed", "reason": "ukprobe: rc %d %s" % (r.returncode,
                                                                            r.stderr.strip())}
            vals["stop_us"].append(int(m1[2]))
            vals["inject_us"].append(int(m1[3]))
            vals["registered_ms"].append(int(m2[1]))
            vals["first_event_ms"].append(int(m2[2]))
            vals["detach_ms"].append(int(m2[3]))
        # the first attach loads the agent; the others find it loaded
        return dict({"status": "ok", "reps": reps,
                     "first": {k: v[0] for k, v in vals.items()}},
                    **{k: summary(v[1:] or v) for k, v in vals.items()})
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    rows = []
    for extra in (0, 100):
        row = {"id": "python3, %d thread%s" % (extra + 1, "s" if extra else ""),
               "threads": extra + 1}
        if not os.path.exists(PY):
            row.update(status="skipped", reason="no %s" % PY)
        else:
            row.update(scenario(a.ukprobe, extra, a.reps))
        rows.append(row)
    with open(a.json, "w") as f:
        json.dump({"command": "ukprobe trace -p PID -d 0.3 -e 'p libz.so.1:crc32'",
                   "rows": rows}, f, indent=1)
    return 0 if all(r["status"] != "failed" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

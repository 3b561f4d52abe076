#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tool benchmark: ukprobe on real Debian programs, side by side with
the program alone, uftrace and bpftrace, in one run (doc/benchmarks.md).

  bench_tool.py --ukprobe PATH --bin DIR [--quick] [--reps N] [--no-peers] [--json FILE]
                [--md FILE]

Workloads (each command run --reps times per tool, tools interleaved in
every repetition; medians, and ratios to the program alone taken per
repetition):
  sqlite3   the sqlite3 shell runs a SQL script (tables, 20,000 inserts,
            an index, joins, aggregates) with every exported function of
            libsqlite3 probed (`p libsqlite3.so.0:*`; `record` also with
            `r libsqlite3.so.0:*`, entries and returns as uftrace records)
  python3   python3.11 runs a small script (json, re, arithmetic) with
            one hot function of the interpreter probed (PyTuple_New)
  python3_all  python3.11 runs a small threaded script (json, re, zlib, a
            subprocess, a signal) with every exported function of the
            interpreter probed (`p python3.11:*`; issue 14's every-function
            run; bpftrace skipped: attaching ~1,500 uprobes takes minutes)
  python3_same  python3_all's script with both tools on the same
            functions: the ones uftrace records of it (one untimed
            uftrace run finds them; uftrace cannot patch about half of
            python3.11's functions), ukprobe recording their entries, and
            their entries and returns as uftrace does
  python3_all_long  the same on 6x the data: hits outweigh start-up
  lua       a Lua 5.4 interpreter built at -O2 with its functions' symbols
            (bench_lua: Debian's liblua5.4.a) runs a script of calls,
            strings and tables with every function probed (`p bench_lua:*`)
  start     the sqlite3 shell with an empty script and every libsqlite3
            function probed: start-up and attach cost of each tool
  libc_start  `true` with every libc.so.6 function probed (ukprobe only)
Tools: the program alone; `ukprobe stat`; `ukprobe trace -o FILE` (events
written vs hits counted by stat, events lost); `uftrace record -P`
(entries only, to disk); `bpftrace` counting the same uprobes (root).
Every tool runs private copies of python3.11 and libsqlite3 (a kernel
uprobe reaches every process mapping the probed file).
A tool that is missing or cannot run is skipped with the reason.

Per hit (micro): bench_tool_hit calls a 3-instruction function N times
and reports the thread's CPU time per call: alone, the library's own
jump-optimized kprobe (`o`, bench_tool_lib), `ukprobe stat` and
`ukprobe trace -o` (two fetch args and a timestamp) on the same function,
`ukprobe record` of its return and of its entry and return (`p` + `r`,
stat's too),
`ukprobe run` scripts (`@ = count()`, `@[arg1 & 1023] = count()`) and
bpftrace's `@ = count()` (root; the kernel's uprobe: wall time per call,
most of it in the kernel, is its column to read).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SQLITE_LIB = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
PYTHON = "/usr/bin/python3.11"
PY_FUNC = "PyTuple_New"

SQL = """
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
CREATE TABLE u(x INTEGER, y TEXT);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO t SELECT i, printf('row-%d', i % 977), i * 0.5 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO u SELECT i % 1000, hex(i) FROM n;
COMMIT;
CREATE INDEX ub ON u(x);
SELECT count(*), sum(c) FROM t;
SELECT b, count(*) FROM t GROUP BY b ORDER BY 2 DESC LIMIT 3;
SELECT count(*) FROM t JOIN u ON u.x = t.a % 1000 WHERE t.a < {join};
UPDATE t SET c = c + 1 WHERE a % 3 = 0;
SELECT max(c) FROM t;
"""

PY = """
import json, re
data = [{{"id": i, "name": "n%d" % i, "tags": [i % 7, i % 11]}} for i in range({n})]
text = json.dumps(data)
back = json.loads(text)
words = re.findall(r"n(\\d+)", text)
total = 0
for i in range({n} * 5):
    total += (i * 3) % 7
print(len(back), len(words), total)
"""

# Lua: calls, strings, tables, patterns (about 30 M function entries)
LUA = """
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {{}}
for i = 1, {n} do t[#t + 1] = tostring(i) .. "x" end
local s = table.concat(t, ",")
local c = 0
for w in s:gmatch("(%d+)x") do c = c + #w end
local m = {{}}
for i = 1, 2 * {n} do m[i % 1000] = (m[i % 1000] or 0) + i end
print(fib({fib}), c, m[7])
"""

PY_ALL = """
import json, os, re, signal, subprocess, threading, zlib
def work(n):
    d = [{{"k": i, "v": str(i) * 3, "l": list(range(i % 7))}} for i in range(n)]
    s = json.dumps(d)
    back = json.loads(s)
    pat = re.compile(r"(\\d+)(\\d)")
    m = sum(len(pat.findall(x["v"])) for x in back)
    return m + len(zlib.decompress(zlib.compress(s.encode())))
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(0))
ts = [threading.Thread(target=lambda: got.append(work({n}))) for _ in range(3)]
for t in ts:
    t.start()
os.kill(os.getpid(), signal.SIGUSR1)
subprocess.run(["true"])
for t in ts:
    t.join()
print(len(got), sum(got))
"""


UPROBE_EVENTS = "/sys/kernel/tracing/uprobe_events"
UKPROBE_PATH = [None]   # (main sets it: count_events runs ukprobe report)
REPORT_SECONDS = []     # ukprobe report's times, per workload (bench_workloads)


def uprobe_events():
    try:
        with open(UPROBE_EVENTS) as f:
            return set(l.split()[0] for l in f if l.strip())
    except OSError:
        return set()


def drop_uprobe_events(names):
    """Remove uprobe events bpftrace left in tracefs (it makes some through
    tracefs, and a bpftrace that fails or is killed leaves them: their int3s
    would stay in every process that maps the file, the tests' too)."""
    for n in names:
        try:
            with open(UPROBE_EVENTS, "a") as f:
                f.write("-:%s\n" % n.split(":", 1)[1])
        except OSError:
            pass


def run(cmd, env=None, timeout=600):
    before = None
    env = dict(os.environ, **(env or {}))
    if cmd[0] == "bpftrace":
        # one uprobe per libsqlite3 function: above bpftrace's default limit
        env["BPFTRACE_MAX_PROBES"] = "100000"
        before = uprobe_events()
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    finally:
        if before is not None:
            drop_uprobe_events(uprobe_events() - before)
    return time.monotonic() - t0, r


def median(xs):
    return statistics.median(xs) if xs else None


class Tools:
    def __init__(self, ukprobe, work, peers, bpftrace=True):
        self.ukprobe = ukprobe
        self.work = work
        self.skips = {}
        if not bpftrace:
            self.skips["bpftrace"] = "not requested (--no-bpftrace)"
        if not peers:
            self.skips["uftrace"] = self.skips["bpftrace"] = "peers not requested (--no-peers)"
        elif not shutil.which("uftrace"):
            self.skips["uftrace"] = "uftrace is not installed"
        if not peers:
            pass
        elif "bpftrace" in self.skips:
            pass
        elif not shutil.which("bpftrace"):
            self.skips["bpftrace"] = "bpftrace is not installed"
        elif os.geteuid() != 0:
            self.skips["bpftrace"] = "bpftrace needs root"

    def commands(self, wl, quick):
        """(tool, argv, how to count its events) for workload wl."""
        out = os.path.join(self.work, "trace.txt")
        ud = os.path.join(self.work, "uftrace.data")
        yield "alone", wl["argv"], None
        # a workload probes one SPEC (-e), or a file of SPECs (-E)
        spec = ["-E", wl["spec_file"]] if "spec_file" in wl else ["-e", wl["spec"]]
        yield "ukprobe stat", [self.ukprobe, "stat"] + spec + ["--"] + wl["argv"], "stat"
        if not wl.get("no_trace"):
            yield ("ukprobe trace -o", [self.ukprobe, "trace", "-o", out] + spec + ["--"] +
                   wl["argv"], "trace")
        # the recording only (issue 31): report formats it afterwards,
        # untimed (count_events)
        yield ("ukprobe record", [self.ukprobe, "record", "-o", os.path.join(self.work, "rec.data")]
               + spec + ["--"] + wl["argv"], "record")
        if "spec_file_ret" in wl:
            # entries and returns, as uftrace records them
            yield ("ukprobe record (entries + returns)",
                   [self.ukprobe, "record", "-o", os.path.join(self.work, "rec.data"), "-E",
                    wl["spec_file_ret"], "--"] + wl["argv"], "record")
        if wl.get("no_peers"):
            return
        if "uftrace" not in self.skips:
            pats = wl["uftrace"] if isinstance(wl["uftrace"], list) else [wl["uftrace"]]
            yield ("uftrace record", ["uftrace", "record", "--no-libcall", "--no-event", "-d", ud] +
                   [a for p in pats for a in ("-P", p)] + wl["argv"], "uftrace")
        if ("bpftrace" not in self.skips and not wl.get("no_bpftrace") and
                not (quick and wl["uprobe"].endswith("*"))):
            prog = "uprobe:%s { @hits = count(); }" % wl["uprobe"]
            yield ("bpftrace", ["bpftrace", "-q", "-e", prog, "-c", " ".join(wl["argv"])],
                   "bpftrace")


def count_events(how, r, work):
    """(events, lost) the tool reports, or (None, None)."""
    lost = 0
    m = re.search(r"(\d+) events lost", r.stderr)
    if m:
        lost = int(m[1])
    if how == "stat":
        hits = [int(x) for x in re.findall(r"^\S+/\S+ +(\d+) +\d+$", r.stdout, re.M)]
        return sum(hits), lost
    if how == "trace":
        with open(os.path.join(work, "trace.txt"), "rb") as f:
            n = sum(1 for _ in f)
        return n, lost
    if how == "record":
        # formatted now, outside the time taken: the lines trace -o writes
        out = os.path.join(work, "report.txt")
        t0 = time.monotonic()
        rep = subprocess.run([UKPROBE_PATH[0], "report", "-i", os.path.join(work, "rec.data"),
                              "-o", out], capture_output=True, text=True)
        REPORT_SECONDS.append(time.monotonic() - t0)
        if rep.returncode:
            return None, lost
        with open(out, "rb") as f:
            n = sum(1 for _ in f)
        os.unlink(out)
        return n, lost
    if how == "bpftrace":
        m = re.search(r"@hits: (\d+)", r.stdout)
        return (int(m[1]) if m else None), None
    if how == "uftrace":
        # the calls it recorded, from its own report (uftrace patches the
        # functions it can: fewer than every function, often)
        rep = subprocess.run(["uftrace", "report", "-d", os.path.join(work, "uftrace.data"),
                              "--no-pager", "-f", "call"], capture_output=True, text=True)
        calls = [int(m[1]) for m in re.finditer(r"^\s*(\d+)\s+\S", rep.stdout, re.M)]
        return (sum(calls) if rep.returncode == 0 and calls else None), None
    return None, None


def count_functions(how, r, work):
    """How many functions the tool saw hit, or None."""
    if how == "stat":
        return len([x for x in re.findall(r"^\S+/\S+ +(\d+) +\d+$", r.stdout, re.M)
                    if int(x)])
    if how == "uftrace":
        rep = subprocess.run(["uftrace", "report", "-d", os.path.join(work, "uftrace.data"),
                              "--no-pager", "-f", "call"], capture_output=True, text=True)
        return len(re.findall(r"^\s*\d+\s+\S", rep.stdout, re.M)) or None
    return None


def uftrace_functions(wl, work):
    """The functions uftrace records of workload wl's every-function run
    (the ones it can patch and the program calls: uftrace skips functions
    whose first instructions it cannot move), from one untimed run, or
    None."""
    ud = os.path.join(work, "uftrace-discover.data")
    r = subprocess.run(["uftrace", "record", "--no-libcall", "--no-event", "-d", ud, "-P",
                        wl["uftrace"]] + wl["argv"], capture_output=True, text=True,
                       env=dict(os.environ, **wl.get("env", {})), timeout=600)
    if r.returncode:
        return None
    rep = subprocess.run(["uftrace", "report", "-d", ud, "--no-pager", "-f", "call"],
                         capture_output=True, text=True)
    shutil.rmtree(ud, ignore_errors=True)
    names = re.findall(r"^\s*\d+\s+(\S+)\s*$", rep.stdout, re.M)
    return sorted(set(names)) or None


def same_functions(wl, tools, work):
    """Workload wl made to probe, with both tools, only the functions
    uftrace records of it (wl["same_as"]'s every-function run): ukprobe's
    SPECs go into a file (-E), entries only and entries with returns;
    uftrace gets one -P per name. A reason string when it cannot."""
    if "uftrace" in tools.skips:
        return "uftrace: %s" % tools.skips["uftrace"]
    names = uftrace_functions(wl, work)
    if not names:
        return "uftrace recorded no function of it"
    obj = wl["spec"].split()[1].split(":")[0]
    wl["spec_file"] = os.path.join(work, "same.specs")
    wl["spec_file_ret"] = os.path.join(work, "same_ret.specs")
    with open(wl["spec_file"], "w") as f:
        f.write("".join("p %s:%s\n" % (obj, n) for n in names))
    with open(wl["spec_file_ret"], "w") as f:
        f.write("".join("p %s:%s\nr %s:%s\n" % (obj, n, obj, n) for n in names))
    wl["uftrace"] = names
    wl["what"] += " (%d functions)" % len(names)
    return None


def bench_workloads(args, tools, work):
    rows = int(2000 if args.quick else 20000)
    sql = os.path.join(work, "script.sql")
    with open(sql, "w") as f:
        f.write(SQL.format(rows=rows, join=rows // 20))
    empty = os.path.join(work, "empty.sql")
    with open(empty, "w") as f:
        f.write("SELECT 1;\n")
    py = os.path.join(work, "script.py")
    with open(py, "w") as f:
        f.write(PY.format(n=3000 if args.quick else 30000))
    py_all = os.path.join(work, "script_all.py")
    with open(py_all, "w") as f:
        f.write(PY_ALL.format(n=1000 if args.quick else 10000))
    lua = os.path.join(work, "script.lua")
    with open(lua, "w") as f:
        f.write(LUA.format(n=30000 if args.quick else 300000, fib=20 if args.quick else 26))
    py_long = os.path.join(work, "script_long.py")
    with open(py_long, "w") as f:
        f.write(PY_ALL.format(n=6000 if args.quick else 60000))
    # Kernel uprobes (bpftrace) go into every process that maps the probed
    # file: on the system's python3.11 and libsqlite3 they rewrote the
    # entries that other programs' ukprobe had jump-optimized (their first
    # byte int3, then the file's byte back) and crashed them (doc/torture.md,
    # bug 4). Every tool here runs private copies, under the same names.
    os.makedirs(os.path.join(work, "bin"), exist_ok=True)
    os.makedirs(os.path.join(work, "lib"), exist_ok=True)
    python = os.path.join(work, "bin", os.path.basename(PYTHON))
    sqlite_lib = os.path.join(work, "lib", os.path.basename(SQLITE_LIB))
    for src, dst in ((PYTHON, python), (SQLITE_LIB, sqlite_lib)):
        if os.path.exists(src):
            shutil.copy2(src, dst)
    lib_env = {"LD_LIBRARY_PATH": os.path.join(work, "lib")}
    # every function's entries and returns, as uftrace records them
    sqlite_ret = os.path.join(work, "sqlite_ret.specs")
    with open(sqlite_ret, "w") as f:
        f.write("p libsqlite3.so.0:*\nr libsqlite3.so.0:*\n")
    wls = [
        {"id": "sqlite3", "what": "sqlite3 shell, SQL script, every libsqlite3 function probed",
         "argv": ["sqlite3", ":memory:", ".read " + sql], "spec": "p libsqlite3.so.0:*",
         "spec_file_ret": sqlite_ret,
         "uftrace": ".@libsqlite3.so.0", "uprobe": sqlite_lib + ":*", "env": lib_env},
        {"id": "python3", "what": "python3.11 script, %s probed" % PY_FUNC,
         "argv": [python, py], "spec": "p python3.11:%s" % PY_FUNC,
         "uftrace": "%s@python3.11" % PY_FUNC, "uprobe": python + ":" + PY_FUNC},
        {"id": "python3_all", "what": "python3.11 threaded script, every python3.11 function "
                                      "probed",
         "argv": [python, py_all], "spec": "p python3.11:*", "uftrace": ".", "uprobe": "",
         "no_bpftrace": "attaching a uprobe to each of ~1,500 functions takes minutes (the "
                        "sqlite3 rows show bpftrace on every function)"},
        # python3_all with both tools on the same functions: the ones
        # uftrace records there (it cannot patch about half of
        # python3.11's functions: a prologue it cannot move); uftrace
        # records each call's entry and exit, so ukprobe records both
        # too in a row of its own
        {"id": "python3_same", "what": "python3_all's script, both tools on the functions "
                                       "uftrace records of python3_all",
         "argv": [python, py_all], "spec": "p python3.11:*", "uftrace": ".", "uprobe": "",
         "same_as_uftrace": True, "no_trace": True,
         "no_bpftrace": "as python3_all"},
        {"id": "python3_all_long", "what": "python3_all's script on 6x the data (per-hit "
                                           "costs over start-up), every python3.11 function "
                                           "probed",
         "argv": [python, py_long], "spec": "p python3.11:*", "uftrace": ".", "uprobe": "",
         "no_bpftrace": "as python3_all"},
        # issue 14's every-function run: an interpreter built at -O2
        # with its ~700 functions' symbols (bench_lua.c)
        {"id": "lua", "what": "Lua 5.4 interpreter (bench_lua, -O2, Debian's liblua5.4.a), a "
                              "script of calls, strings and tables, every function probed",
         "argv": [os.path.join(os.path.abspath(args.bin), "bench_lua"), lua],
         "spec": "p bench_lua:*", "uftrace": ".", "uprobe": "",
         "no_bpftrace": "attaching a uprobe to each of ~700 functions takes about a minute "
                        "per run (the sqlite3 rows show bpftrace on every function)"},
        {"id": "start", "what": "sqlite3 shell, empty script, every libsqlite3 function probed "
                                "(start-up, attach)",
         "argv": ["sqlite3", ":memory:", ".read " + empty], "spec": "p libsqlite3.so.0:*",
         "uftrace": ".@libsqlite3.so.0", "uprobe": sqlite_lib + ":*", "env": lib_env},
        # every libc function: the agent registers about 3,000 probes in
        # the library it calls itself (issue 14: at most 0.3 s). No
        # peers: a kernel uprobe on the system's libc reaches every
        # process of the machine.
        {"id": "libc_start", "what": "true, every libc.so.6 function probed (start-up)",
         "argv": ["true"], "spec": "p libc.so.6:*", "no_peers": True,
         "uftrace": "", "uprobe": ""},
    ]
    results = []
    for wl in wls:
        if shutil.which(wl["argv"][0]):
            wl["argv"][0] = shutil.which(wl["argv"][0])  # bpftrace -c wants a path
        else:
            results.append({"id": wl["id"], "what": wl["what"], "skipped": "%s is not installed"
                            % wl["argv"][0]})
            continue
        if args.only and wl["id"] not in args.only.split(","):
            continue
        if wl.get("same_as_uftrace"):
            why = same_functions(wl, tools, work)
            if why:
                results.append({"id": wl["id"], "what": wl["what"], "skipped": why})
                continue
        times, counts, lost, fails, funcs = {}, {}, {}, {}, {}
        del REPORT_SECONDS[:]
        for rep in range(args.reps):
            for tool, argv, how in tools.commands(wl, args.quick):
                if tool in fails:
                    continue
                t, r = run(argv, wl.get("env"))
                if r.returncode != 0:
                    fails[tool] = "exit status %d: %s" % (r.returncode,
                                                          (r.stderr.strip().splitlines() or [""])[-1][:200])
                    continue
                times.setdefault(tool, []).append(t)
                n, l = count_events(how, r, work)
                if n is not None:
                    counts.setdefault(tool, []).append(n)
                nf = count_functions(how, r, work)
                if nf is not None:
                    funcs.setdefault(tool, []).append(nf)
                if l is not None:
                    lost.setdefault(tool, []).append(l)
        alone = times.get("alone", [])
        row = {"id": wl["id"], "what": wl["what"], "tools": {}}
        for tool, ts in times.items():
            ratios = [a / b for a, b in zip(ts, alone)] if tool != "alone" else []
            row["tools"][tool] = {
                "seconds": {"median": median(ts), "min": min(ts), "max": max(ts), "n": len(ts)},
                "ratio_to_alone": median(ratios),
                "events": median(counts.get(tool, [])),
                "functions": median(funcs.get(tool, [])),
                "lost": max(lost[tool]) if tool in lost else None,
            }
        skips = dict(tools.skips)
        if wl.get("no_bpftrace") and "bpftrace" not in skips:
            skips["bpftrace"] = wl["no_bpftrace"]
        if args.quick and wl["uprobe"].endswith("*") and "bpftrace" not in skips:
            skips["bpftrace"] = "quick mode: attaching a uprobe per function takes minutes"
        for tool, why in list(fails.items()) + list(skips.items()):
            row["tools"].setdefault(tool, {"skipped": why})
        st, tr = row["tools"].get("ukprobe stat", {}), row["tools"].get("ukprobe trace -o", {})
        ut = row["tools"].get("uftrace record", {})
        if st.get("seconds") and ut.get("seconds") and alone:
            over = lambda x: x["seconds"]["median"] - median(alone)
            if over(ut) > 0:
                row["stat_overhead_vs_uftrace"] = over(st) / over(ut)
                # per event: the tools do not see the same events
                if st.get("events") and ut.get("events"):
                    row["per_event_ns"] = {"ukprobe stat": over(st) / st["events"] * 1e9,
                                           "uftrace record": over(ut) / ut["events"] * 1e9}
                if tr.get("seconds"):
                    row["trace_overhead_vs_uftrace"] = over(tr) / over(ut)
                for tool, key in (("ukprobe record", "record"),
                                  ("ukprobe record (entries + returns)", "record_ret")):
                    rc = row["tools"].get(tool, {})
                    if not rc.get("seconds"):
                        continue
                    row[key + "_overhead_vs_uftrace"] = over(rc) / over(ut)
                    # per repetition (the tools ran one after the other)
                    ru = [(a - b) / (c - b) for a, c, b in zip(times[tool],
                                                              times["uftrace record"], alone)
                          if c > b]
                    if ru:
                        row[key + "_overhead_vs_uftrace_per_rep"] = ru
        if REPORT_SECONDS:
            row["report_seconds"] = median(REPORT_SECONDS)
        results.append(row)
    return results


def bench_micro(args, bindir):
    n = 200000 if args.quick else 2000000
    hit, lib = os.path.join(bindir, "bench_tool_hit"), os.path.join(bindir, "bench_tool_lib")
    fn = "%s:bench_tool_target" % hit
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace.txt")
        cmds = [
            ("call", [hit, str(n)]),
            ("o", [lib, str(n)]),
            ("stat", [args.ukprobe, "stat", "-o", os.path.join(d, "stat.txt"), "-e", "p " + fn,
                      "--", hit, str(n)]),
            ("trace -o", [args.ukprobe, "trace", "-o", out, "-e", "p %s a=%%di b=%%si" % fn,
                          "--", hit, str(n)]),
            # issue 31's output path: 0 and 4 register arguments
            # ($params-like), trace -o and the recording alone
            ("trace -o 0", [args.ukprobe, "trace", "-o", out, "-e", "p " + fn, "--", hit, str(n)]),
            ("trace -o 4", [args.ukprobe, "trace", "-o", out, "-e",
                            "p %s a=%%di b=%%si c=%%dx d=%%cx" % fn, "--", hit, str(n)]),
            ("record 0", [args.ukprobe, "record", "-o", os.path.join(d, "r0"), "-e", "p " + fn,
                          "--", hit, str(n)]),
            ("record 4", [args.ukprobe, "record", "-o", os.path.join(d, "r4"), "-e",
                          "p %s a=%%di b=%%si c=%%dx d=%%cx" % fn, "--", hit, str(n)]),
            # a function's entry and return (uftrace's record): the
            # return alone, then the pair on one function
            ("record r", [args.ukprobe, "record", "-o", os.path.join(d, "rr"), "-e", "r " + fn,
                          "--", hit, str(n)]),
            ("record p+r", [args.ukprobe, "record", "-o", os.path.join(d, "rpr"), "-e",
                            "p " + fn, "-e", "r " + fn, "--", hit, str(n)]),
            ("stat p+r", [args.ukprobe, "stat", "-o", os.path.join(d, "spr.txt"), "-e",
                          "p " + fn, "-e", "r " + fn, "--", hit, str(n)]),
            # the triggers' costs, against a bare stat hit (#16): a filter
            # that rejects every hit (b is the loop's counter, below
            # 10^8), a hist update, a stack trace recorded
            ("stat --filter", [args.ukprobe, "stat", "-o", os.path.join(d, "f.txt"),
                               "-e", "p %s b=%%si:u32" % fn, "--filter", "b > 100000000",
                               "--", hit, str(n)]),
            ("stat hist", [args.ukprobe, "stat", "-o", os.path.join(d, "h.txt"),
                           "-e", "p %s b=%%si:u32" % fn, "--trigger", "hist:keys=b.log2",
                           "--", hit, str(n)]),
            ("trace stacktrace", [args.ukprobe, "trace", "-o", os.path.join(d, "s.txt"),
                                  "-e", "p " + fn, "--trigger", "stacktrace", "--", hit,
                                  str(n // 10)]),
            # ukprobe run (issue 31): a script's compiled handler, a count
            # and a count keyed by an argument (1024 keys)
            ("run count", [args.ukprobe, "run", "-e", "uprobe:%s { @ = count(); }" % fn,
                           "--", hit, str(n)]),
            ("run keyed", [args.ukprobe, "run", "-e",
                           "uprobe:%s { @[arg1 & 1023] = count(); }" % fn, "--", hit, str(n)]),
        ]
        # a statically linked copy: the freestanding agent's hits
        # (issue 28), against the dynamic agent's above
        st = os.path.join(bindir, "bench_tool_hit_static")
        if os.path.exists(st):
            sfn = "%s:bench_tool_target" % st
            cmds += [
                ("static call", [st, str(n)]),
                ("static stat", [args.ukprobe, "stat", "-o", os.path.join(d, "sstat.txt"),
                                 "-e", "p " + sfn, "--", st, str(n)]),
                ("static trace -o 0", [args.ukprobe, "trace", "-o", out, "-e", "p " + sfn,
                                       "--", st, str(n)]),
            ]
        # bpftrace on the same function, as root where it attaches (a
        # private copy: a kernel uprobe is in every process mapping the
        # file); fewer calls, its hits cost microseconds
        bt = shutil.which("bpftrace")
        if bt and not args.no_peers and not args.no_bpftrace and os.geteuid() == 0:
            copy = os.path.join(d, "bench_tool_hit")
            shutil.copy(hit, copy)
            cmds.append(("bpftrace count", [bt, "-e", "uprobe:%s:bench_tool_target "
                                            "{ @ = count(); }" % copy,
                                            "-c", "%s %d" % (copy, max(n // 100, 1000))]))
        ns, wall, lost = {}, {}, {}
        for rep in range(args.reps):
            for name, argv in cmds:
                _, r = run(argv)
                m = re.search(r"ns_per_call ([\d.]+) wall_ns_per_call ([\d.]+)", r.stdout)
                if r.returncode or not m:
                    print("bench_tool: %s failed: %s" % (name, r.stderr.strip()), file=sys.stderr)
                    continue
                ns.setdefault(name, []).append(float(m[1]))
                wall.setdefault(name, []).append(float(m[2]))
                lm = re.search(r"(\d+) events lost", r.stderr)
                if name.startswith("trace -o") or name == "static trace -o 0":
                    with open(out, "rb") as f:
                        written = sum(1 for _ in f)
                    lost.setdefault(name, []).append(n - written)
                if name.startswith("record"):
                    lost.setdefault(name, []).append(int(lm[1]) if lm else 0)
    rows = {}
    for name in ns:
        o = ns.get("o", [])
        rows[name] = {
            "ns": {"median": median(ns[name]), "min": min(ns[name]), "max": max(ns[name]),
                   "n": len(ns[name])},
            "wall_ns": {"median": median(wall[name])},
            "ratio_to_o": median([a / b for a, b in zip(ns[name], o)]) if o else None,
            "ratio_to_stat": median([a / b for a, b in zip(ns[name], ns.get("stat", []))])
                             if ns.get("stat") else None,
            "lost": max(lost[name]) if name in lost else None,
        }
    return {"hits": n, "rows": rows}


def build_go_hit(d, static=False):
    """bench/go_hit.go linked by the system's linker (dynamic, cgo), or
    as Go builds by default (static, no cgo), or None."""
    go = shutil.which("go")
    if not go:
        return None, "no go (golang-go)"
    out = os.path.join(d, "go_hit_static" if static else "go_hit")
    env = dict(os.environ, GOCACHE=os.path.join(d, "gocache"), GO111MODULE="off", GOFLAGS="",
               CGO_ENABLED="0" if static else "1", CC="gcc")
    r = subprocess.run([go, "build"] + ([] if static else ["-ldflags=-linkmode=external"]) +
                       ["-o", out,
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "go_hit.go")],
                       capture_output=True, text=True, env=env)
    return (out, None) if r.returncode == 0 else (None, "go build: " + r.stderr.strip())


GO_ROWS = ("go call", "go p", "go r", "go split call", "go split p", "go split p bp",
           "go split r", "go split r bp", "go split r d", "go static split call",
           "go static split p", "go static split r", "c call", "c p", "c p bp", "c r",
           "c r bp", "c r d", "bpftrace go p", "bpftrace c p")


def bench_go(args, bindir):
    """Issue 32's rows: a hit of an entry probe and of a return probe on a
    Go function (main.target of go_hit.go, a leaf of Go's register ABI)
    against the same on C's bench_tool_target, in one run, tools
    interleaved: C's as ukprobe places them (jump-optimized entry; a
    kretprobe's entry and trampoline) and as breakpoints (--no-optimize),
    and the kernel's uprobe (bpftrace) on both. main.target is a leaf
    without a stack check: its entry probe and its ret take the leaf
    template (no byte of the goroutine's stack; session 21); main.split
    (go_hit split) has one, and its entry probe past it is jump-optimized
    (the Go template, doc/go_rust.md), and so is its return probe, at the
    epilogue before its ret (issue 32). "r d": the return with its entry's $duration (a filter that
    passes every hit), which pairs a hidden entry probe's record with each
    return (Go: by goroutine; C: the kretprobe's instance). The kernel's
    uretprobe is not measured on Go (it swaps the return address, which
    kills Go programs: Go's issue 22008)."""
    n = 20000 if args.quick else 200000
    hit = os.path.join(bindir, "bench_tool_hit")
    with tempfile.TemporaryDirectory() as d:
        gohit, why = build_go_hit(d)
        if not gohit:
            return {"skipped": why}
        # Go's default build: static, the freestanding agent in Go's threads
        gostatic, _ = build_go_hit(d, static=True)
        st = os.path.join(d, "stat.txt")
        uk = [args.ukprobe, "stat", "-o", st]
        gofn, cfn = "%s:main.target" % gohit, "%s:bench_tool_target" % hit
        gosplit = "%s:main.split" % gohit
        cmds = [
            ("go call", [gohit, str(n)]),
            ("go p", uk + ["-e", "p " + gofn, "--", gohit, str(n)]),
            ("go r", uk + ["-e", "r " + gofn, "--", gohit, str(n)]),
            ("go split call", [gohit, "split", str(n)]),
            ("go split p", uk + ["-e", "p " + gosplit, "--", gohit, "split", str(n)]),
            ("go split p bp", uk + ["--no-optimize", "-e", "p " + gosplit, "--", gohit, "split",
                                    str(n)]),
            ("go split r", uk + ["-e", "r " + gosplit, "--", gohit, "split", str(n)]),
            ("go split r bp", uk + ["--no-optimize", "-e", "r " + gosplit, "--", gohit, "split",
                                    str(n)]),
            ("go split r d", uk + ["-e", "r %s d=$duration" % gosplit, "--filter", "d >= 0", "--",
                                   gohit, "split", str(n)]),
        ]
        if gostatic and os.path.exists(os.path.join(os.path.dirname(args.ukprobe), "..", "..",
                                                    "agent", "libukprobe-agent.bin")):
            gss = "%s:main.split" % gostatic
            cmds += [
                ("go static split call", [gostatic, "split", str(n)]),
                ("go static split p", uk + ["-e", "p " + gss, "--", gostatic, "split", str(n)]),
                ("go static split r", uk + ["-e", "r " + gss, "--", gostatic, "split", str(n)]),
            ]
        cmds += [
            ("c call", [hit, str(n)]),
            ("c p", uk + ["-e", "p " + cfn, "--", hit, str(n)]),
            ("c p bp", uk + ["--no-optimize", "-e", "p " + cfn, "--", hit, str(n)]),
            ("c r", uk + ["-e", "r " + cfn, "--", hit, str(n)]),
            ("c r bp", uk + ["--no-optimize", "-e", "r " + cfn, "--", hit, str(n)]),
            ("c r d", uk + ["-e", "r %s d=$duration" % cfn, "--filter", "d >= 0", "--", hit,
                            str(n)]),
        ]
        bt = shutil.which("bpftrace")
        if bt and not args.no_peers and not args.no_bpftrace and os.geteuid() == 0:
            # private copies: a kernel uprobe is in every process mapping the file
            for name, prog, fn in (("bpftrace go p", gohit, "main.target"),
                                   ("bpftrace c p", hit, "bench_tool_target")):
                copy = os.path.join(d, "bt_" + os.path.basename(prog))
                shutil.copy(prog, copy)
                cmds.append((name, [bt, "-e", "uprobe:%s:%s { @ = count(); }" % (copy, fn),
                                    "-c", "%s %d" % (copy, n)]))
        ns = {}
        for rep in range(args.reps):
            for name, argv in cmds:
                _, r = run(argv)
                m = re.search(r"ns_per_call ([\d.]+) wall_ns_per_call ([\d.]+)", r.stdout)
                if r.returncode or not m:
                    print("bench_tool: %s failed: %s" % (name, r.stderr.strip()), file=sys.stderr)
                    ns.setdefault(name, []).append(None)
                    continue
                if name.startswith(("go p", "go r", "go split p", "go split r", "go static split p",
                                    "go static split r", "c p", "c r")):
                    # every call counted: the probe was hit, not skipped
                    rows = open(st).read()
                    if not re.search(r" %d +0$" % n, rows, re.M):
                        print("bench_tool: %s: counts are not %d: %s" % (name, n, rows),
                              file=sys.stderr)
                ns.setdefault(name, []).append(float(m[1]))
    # a hit's cost: the call's time under the probe less the call's alone,
    # per repetition; Go's to C's of the same repetition
    def hit_costs(name):
        alone = ("go static split call" if name.startswith("go static split") else
                 "go split call" if name.startswith("go split") else
                 "go call" if name.startswith(("go", "bpftrace go")) else "c call")
        return [a - b if a is not None and b is not None else None
                for a, b in zip(ns.get(name, []), ns.get(alone, []))]

    def ratio(a, b):
        xs = [x / y for x, y in zip(hit_costs(a), hit_costs(b)) if x and y]
        return median(xs) if xs else None
    rows = {}
    for name in ns:
        vals = [x for x in ns[name] if x is not None]
        if not vals:
            continue
        costs = [x for x in hit_costs(name) if x is not None]
        rows[name] = {"ns": {"median": median(vals), "min": min(vals), "max": max(vals),
                             "n": len(vals)},
                      "hit_ns": median(costs) if costs and "call" not in name else None}
    return {"hits": n, "rows": rows,
            "ratios": {"go split p / c p": ratio("go split p", "c p"),
                       "go split r / c r": ratio("go split r", "c r"),
                       "go static split p / c p": ratio("go static split p", "c p"),
                       "go static split r / c r": ratio("go static split r", "c r"),
                       "go split r d / c r d": ratio("go split r d", "c r d"),
                       "go split r bp / c r": ratio("go split r bp", "c r"),
                       "go split r bp / c r bp": ratio("go split r bp", "c r bp"),
                       "go split p bp / c p bp": ratio("go split p bp", "c p bp"),
                       "go p / c p": ratio("go p", "c p"),
                       "go p / c p bp": ratio("go p", "c p bp"),
                       "go r / c r": ratio("go r", "c r"),
                       "go r / c r bp": ratio("go r", "c r bp"),
                       "bpftrace go p / bpftrace c p": ratio("bpftrace go p", "bpftrace c p")}}


def markdown_go(g, reps):
    out = ["Go (issue 32): a hit on `main.target` of `bench/go_hit.go` (a leaf of Go's register "
           "ABI, `lea (%%rbx,%%rax,1),%%rax; lea 0x1(%%rax),%%rax; ret`) and on `main.split` "
           "(which calls it: a frame, so a stack check) against C's "
           "`bench_tool_target`, thread CPU time per call, median of %d:\n" % reps]
    if "skipped" in g:
        return out + ["skipped: %s\n" % g["skipped"]]
    labels = {"go call": "Go: the function alone", "go p": "Go: `ukprobe stat`, `p` (a leaf "
              "without a stack check: the leaf template)",
              "go split call": "Go: `main.split` alone (it calls `main.target`)",
              "go split p": "Go: `ukprobe stat`, `p` on `main.split` (past the stack check: "
              "jump-optimized)",
              "go split p bp": "Go: `ukprobe stat --no-optimize`, `p` on `main.split` "
              "(a breakpoint)",
              "go split r": "Go: `ukprobe stat`, `r` on `main.split` (at the epilogue: "
              "jump-optimized)",
              "go split r bp": "Go: `ukprobe stat --no-optimize`, `r` on `main.split` "
              "(a breakpoint, as every Go return probe was)",
              "go split r d": "Go: `ukprobe stat`, `r` on `main.split` with `$duration` "
              "(a filter: the hidden entry probe pairs)",
              "go static split call": "Go, static (Go's default build): `main.split` alone",
              "go static split p": "Go, static: `ukprobe stat`, `p` on `main.split` (the "
              "freestanding agent; jump-optimized)",
              "go static split r": "Go, static: `ukprobe stat`, `r` on `main.split` (at the "
              "epilogue: jump-optimized)",
              "c r d": "C: `ukprobe stat`, `r` with `$duration` (a filter)", "go r": "Go: `ukprobe stat`, `r` (on the `ret`: the leaf "
              "template)", "c call": "C: the function alone", "c p": "C: `ukprobe stat`, `p` "
              "(jump-optimized)", "c p bp": "C: `ukprobe stat --no-optimize`, `p` (a breakpoint)",
              "c r": "C: `ukprobe stat`, `r` (kretprobe: optimized entry, trampoline)",
              "c r bp": "C: `ukprobe stat --no-optimize`, `r` (breakpoint entry, trampoline)",
              "bpftrace go p": "Go: bpftrace `uprobe` `@ = count()` (root)",
              "bpftrace c p": "C: bpftrace `uprobe` `@ = count()` (root)"}
    out.append("| | ns/call | min | max | ns/hit |")
    out.append("| --- | ---: | ---: | ---: | ---: |")
    for k in GO_ROWS:
        r = g["rows"].get(k)
        if not r:
            out.append("| %s | skipped | | | |" % labels[k])
            continue
        out.append("| %s | %.1f | %.1f | %.1f | %s |" % (
            labels[k], r["ns"]["median"], r["ns"]["min"], r["ns"]["max"],
            "%.1f" % r["hit_ns"] if r["hit_ns"] is not None else ""))
    out.append("")
    out.append("Per hit, Go's to C's (median of the repetitions' ratios): " + "; ".join(
        "%s %s" % (k, "%.2f" % v if v else "-") for k, v in g["ratios"].items()) + ".\n")
    return out


def bench_dwarf(args, bindir):
    """Source-level fetches per hit (issue 29): on bench_dwarf_hit's
    dwarf_target (-O2 -g), a bare `stat` hit, `trace -o` of its four
    parameters by name ($params) and of the same four registers, of
    p->next->value and of the same +8(+8(%di)) chain: each against the
    bare stat hit, and the name against the fetch it becomes."""
    n = 200000 if args.quick else 2000000
    hit = os.path.join(bindir, "bench_dwarf_hit")
    if not os.path.exists(hit):
        return {"skipped": "no bench_dwarf_hit"}
    fn = "%s:dwarf_target" % hit
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace.txt")
        cmds = [
            ("call", [hit, str(n)]),
            ("stat", [args.ukprobe, "stat", "-o", os.path.join(d, "stat.txt"), "-e", "p " + fn,
                      "--", hit, str(n)]),
            # the record alone (its clock, ring slot, header, comm), no
            # argument: what every trace hit costs before any fetch
            ("trace 0 args", [args.ukprobe, "trace", "-o", out, "-e", "p " + fn, "--", hit,
                              str(n)]),
            ("$params", [args.ukprobe, "trace", "-o", out, "-e", "p %s $params" % fn,
                         "--", hit, str(n)]),
            ("4 registers", [args.ukprobe, "trace", "-o", out, "-e",
                             "p %s p=%%di:x64 x=%%si:s64 y=%%dx:s32 z=%%cx:u32" % fn, "--", hit,
                             str(n)]),
            ("p->next->value", [args.ukprobe, "trace", "-o", out, "-e",
                                "p %s v=p->next->value" % fn, "--", hit, str(n)]),
            ("+8(+8(%di))", [args.ukprobe, "trace", "-o", out, "-e",
                             "p %s v=+8(+8(%%di)):s64" % fn, "--", hit, str(n)]),
            # fetched by a filter that rejects every hit: the fetch's
            # cost on a stat hit, without a record written
            ("filter $params", [args.ukprobe, "stat", "-o", os.path.join(d, "f.txt"), "-e",
                                "p %s $params" % fn, "--filter", "p == 0 || x < 0 || y > 0 || "
                                "z > 4000000000", "--", hit, str(n)]),
            ("filter 4 registers", [args.ukprobe, "stat", "-o", os.path.join(d, "f.txt"), "-e",
                                    "p %s p=%%di:x64 x=%%si:s64 y=%%dx:s32 z=%%cx:u32" % fn,
                                    "--filter", "p == 0 || x < 0 || y > 0 || z > 4000000000",
                                    "--", hit, str(n)]),
            ("filter p->next->value", [args.ukprobe, "stat", "-o", os.path.join(d, "f.txt"),
                                       "-e", "p %s v=p->next->value" % fn, "--filter", "v < 0",
                                       "--", hit, str(n)]),
            ("filter +8(+8(%di))", [args.ukprobe, "stat", "-o", os.path.join(d, "f.txt"), "-e",
                                    "p %s v=+8(+8(%%di)):s64" % fn, "--filter", "v < 0", "--",
                                    hit, str(n)]),
        ]
        ns = {}
        for rep in range(args.reps):
            for name, argv in cmds:
                _, r = run(argv)
                m = re.search(r"ns_per_call ([\d.]+)", r.stdout)
                if r.returncode or not m:
                    print("bench_tool: %s failed: %s" % (name, r.stderr.strip()), file=sys.stderr)
                    continue
                ns.setdefault(name, []).append(float(m[1]))
    rows = {}
    for name in ns:
        rows[name] = {"ns": {"median": median(ns[name]), "min": min(ns[name]),
                             "max": max(ns[name]), "n": len(ns[name])},
                      "ratio_to_stat": median([a / b for a, b in zip(ns[name], ns.get("stat", []))])
                      if ns.get("stat") else None}
    return {"hits": n, "rows": rows}


def markdown_dwarf(dw, reps):
    if "skipped" in dw:
        return "Source-level fetches: skipped (%s).\n" % dw["skipped"]
    out = ["Source-level fetches per hit (`bench_dwarf_hit`'s `dwarf_target`, -O2 -g, "
           "%d calls, median of %d); a name is resolved by ukprobe into the fetch below it:\n"
           % (dw["hits"], reps),
           "| | ns/call | min | max | × `stat` |", "| --- | ---: | ---: | ---: | ---: |"]
    labels = {"call": "the function alone", "stat": "`ukprobe stat`",
              "trace 0 args": "`trace -o`, no argument (the record alone)",
              "$params": "`trace -o` `$params` (4 parameters by name)",
              "4 registers": "`trace -o` the same 4 registers (`%di`...)",
              "p->next->value": "`trace -o` `v=p->next->value`",
              "+8(+8(%di))": "`trace -o` the same `+8(+8(%di))`",
              "filter $params": "`stat --filter` on `$params` (rejects every hit)",
              "filter 4 registers": "`stat --filter` on the same 4 registers",
              "filter p->next->value": "`stat --filter 'v < 0'`, `v=p->next->value`",
              "filter +8(+8(%di))": "`stat --filter 'v < 0'`, `v=+8(+8(%di))`"}
    for k, label in labels.items():
        r = dw["rows"].get(k)
        if not r:
            out.append("| %s | skipped | | | |" % label)
            continue
        out.append("| %s | %.1f | %.1f | %.1f | %s |" % (
            label, r["ns"]["median"], r["ns"]["min"], r["ns"]["max"],
            "%.2f" % r["ratio_to_stat"] if r["ratio_to_stat"] and k not in ("call", "stat")
            else ""))
    return "\n".join(out) + "\n"


def commit():
    """The commit measured (with + when the tree has changes)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+" if dirty else "") if rev else "unknown"
    except OSError:
        return "unknown"


def markdown(res):
    out = []
    m = res["micro"]
    if res.get("commit"):
        out.append("Measured at commit `%s`, %s.\n" % (res["commit"], res.get("date", "")))
    if m:
        out.extend(markdown_micro(m, res))
    for w in res["workloads"]:
        out.extend(markdown_workload(w, res))
    out.extend(markdown_same(res["workloads"]))
    return "\n".join(out) + "\n"


def markdown_same(ws):
    """sqlite3 and python3_all (every function) beside python3_same (the
    functions uftrace records): ukprobe record's overhead over uftrace
    record's."""
    by = {w["id"]: w for w in ws if "skipped" not in w}
    if "python3_same" not in by and "sqlite3" not in by:
        return []
    out = ["`ukprobe record` / `uftrace record` overhead (median; per repetition), every "
           "function and the same functions:\n",
           "| workload | functions hit: ukprobe, uftrace | events: ukprobe, uftrace calls | "
           "record / uftrace | record (entries + returns) / uftrace |",
           "| --- | --- | --- | --- | --- |"]
    for wid in ("sqlite3", "python3_all", "python3_same"):
        w = by.get(wid)
        if not w:
            continue
        t = w["tools"]
        cell = lambda k: ("%.2f (%s)" % (w[k + "_overhead_vs_uftrace"], ", ".join(
            "%.2f" % x for x in w.get(k + "_overhead_vs_uftrace_per_rep", [])))
            if k + "_overhead_vs_uftrace" in w else "")
        ev = lambda k: "" if not t.get(k, {}).get("events") else "%d" % t[k]["events"]
        fn = lambda k: t.get(k, {}).get("functions") or "?"
        out.append("| %s | %s, %s | %s, %s | %s | %s |" % (
            wid, fn("ukprobe stat"), fn("uftrace record"), ev("ukprobe record"),
            ev("uftrace record"), cell("record"), cell("record_ret")))
    out.append("")
    return out


def markdown_micro(m, res):
    out = []
    out.append("Per hit on `bench_tool_target` (`lea 0x1(%%rdi),%%eax; add %%esi,%%eax; ret`), "
               "%d calls, thread CPU time per call, median of %d (the machine is shared and "
               "noisy: compare the ratios):\n" % (m["hits"], res["reps"]))
    out.append("| | ns/call | min | max | × library `o` | × `stat` | events lost |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    labels = {"call": "the function alone", "o": "library: optimized kprobe (`o`)",
              "stat": "`ukprobe stat`", "trace -o": "`ukprobe trace -o` (2 args + timestamp)",
              "trace -o 0": "`ukprobe trace -o` (0 args + timestamp)",
              "trace -o 4": "`ukprobe trace -o` (4 args `%di %si %dx %cx`)",
              "record 0": "`ukprobe record` (0 args + timestamp)",
              "record 4": "`ukprobe record` (4 args `%di %si %dx %cx`)",
              "record r": "`ukprobe record` of the return (`r`)",
              "record p+r": "`ukprobe record` of the entry and the return (`p` + `r`)",
              "stat p+r": "`ukprobe stat` of the entry and the return (`p` + `r`)",
              "stat --filter": "`stat --filter` (a filter that rejects every hit)",
              "stat hist": "`stat --trigger hist:keys=b.log2` (a hist update)",
              "trace stacktrace": "`trace -o --trigger stacktrace` (a stack recorded)",
              "run count": "`ukprobe run` `@ = count()`",
              "run keyed": "`ukprobe run` `@[arg1 & 1023] = count()` (1024 keys)",
              "bpftrace count": "bpftrace `@ = count()` (root)",
              "static call": "static program: the function alone",
              "static stat": "static program: `ukprobe stat` (the freestanding agent)",
              "static trace -o 0": "static program: `ukprobe trace -o` (0 args + timestamp)"}
    for k in ("call", "o", "stat", "trace -o", "trace -o 0", "trace -o 4", "record 0",
              "record 4", "record r", "record p+r", "stat p+r", "stat --filter", "stat hist",
              "trace stacktrace",
              "run count", "run keyed", "bpftrace count", "static call", "static stat",
              "static trace -o 0"):
        r = m["rows"].get(k)
        if not r:
            out.append("| %s | skipped | | | | | |" % labels[k])
            continue
        out.append("| %s | %.1f | %.1f | %.1f | %s | %s | %s |" % (
            labels[k], r["ns"]["median"], r["ns"]["min"], r["ns"]["max"],
            "%.2f" % r["ratio_to_o"] if r["ratio_to_o"] and k != "call" else "",
            "%.2f" % r["ratio_to_stat"] if r.get("ratio_to_stat") and k not in ("call", "o", "stat")
            else "",
            "" if r["lost"] is None else r["lost"]))
    out.append("")
    return out


def markdown_workload(w, res):
    out = []
    if True:
        out.append("`%s`: %s; wall time, median of %d:\n" % (w["id"], w["what"], res["reps"]))
        if "skipped" in w:
            out.append("skipped: %s\n" % w["skipped"])
            return out
        out.append("| tool | seconds | min | max | × alone | events | lost |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for tool, t in w["tools"].items():
            if "skipped" in t:
                out.append("| %s | skipped: %s | | | | | |" % (tool, t["skipped"]))
                continue
            out.append("| %s | %.3f | %.3f | %.3f | %s | %s | %s |" % (
                tool, t["seconds"]["median"], t["seconds"]["min"], t["seconds"]["max"],
                "%.2f" % t["ratio_to_alone"] if t["ratio_to_alone"] else "",
                "" if t["events"] is None else "%d" % t["events"],
                "" if t["lost"] is None else t["lost"]))
        extra = []
        if "stat_overhead_vs_uftrace" in w:
            extra.append("overhead of `ukprobe stat` / overhead of `uftrace record`: %.2f" %
                         w["stat_overhead_vs_uftrace"])
        if "trace_overhead_vs_uftrace" in w:
            extra.append("`ukprobe trace -o` / `uftrace record`: %.2f" %
                         w["trace_overhead_vs_uftrace"])
        if "record_overhead_vs_uftrace" in w:
            extra.append("`ukprobe record` / `uftrace record`: %.2f (per repetition: %s)" % (
                w["record_overhead_vs_uftrace"],
                ", ".join("%.2f" % x for x in w.get("record_overhead_vs_uftrace_per_rep", []))))
        if "record_ret_overhead_vs_uftrace" in w:
            extra.append("`ukprobe record` (entries + returns) / `uftrace record`: %.2f (per "
                         "repetition: %s)" % (
                             w["record_ret_overhead_vs_uftrace"],
                             ", ".join("%.2f" % x for x in
                                       w.get("record_ret_overhead_vs_uftrace_per_rep", []))))
        if "report_seconds" in w:
            extra.append("`ukprobe report` of the recording, after the run: %.3f s" %
                         w["report_seconds"])
        if "per_event_ns" in w:
            pe, t = w["per_event_ns"], w["tools"]
            extra.append("overhead per event (start-up included): `ukprobe stat` %.0f ns over "
                         "%d events in %s functions, `uftrace record` %.0f ns over %d calls "
                         "in %s functions" % (
                             pe["ukprobe stat"], t["ukprobe stat"]["events"],
                             t["ukprobe stat"].get("functions") or "?",
                             pe["uftrace record"], t["uftrace record"]["events"],
                             t["uftrace record"].get("functions") or "?"))
        out.append("")
        if extra:
            out.append("; ".join(extra) + ".\n")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ukprobe", required=True)
    ap.add_argument("--bin", required=True, help="the directory of bench_tool_hit/_lib")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--no-peers", action="store_true", help="no uftrace, no bpftrace")
    ap.add_argument("--dwarf-only", action="store_true",
                    help="only the source-level fetches' rows")
    ap.add_argument("--no-bpftrace", action="store_true", help="uftrace, but no bpftrace")
    ap.add_argument("--only", help="these workloads only (IDs, comma-separated)")
    ap.add_argument("--no-micro", action="store_true", help="no per-hit rows")
    ap.add_argument("--micro-only", action="store_true", help="the per-hit rows only")
    ap.add_argument("--go-only", action="store_true", help="the Go per-hit rows only (issue 32)")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    if args.reps is None:
        args.reps = 1 if args.quick else 5
    UKPROBE_PATH[0] = args.ukprobe
    with tempfile.TemporaryDirectory(prefix="ukpbench-tool.") as work:
        tools = Tools(args.ukprobe, work, not args.no_peers, not args.no_bpftrace)
        res = {"reps": args.reps, "quick": args.quick, "commit": commit(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "micro": bench_micro(args, args.bin) if not (args.dwarf_only or args.no_micro or
                                                            args.go_only) else None,
               "dwarf": bench_dwarf(args, args.bin) if not (args.micro_only or args.no_micro or
                                                            args.only or args.go_only) else None,
               "go": bench_go(args, args.bin) if not (args.dwarf_only or args.no_micro or
                                                      args.only) else None,
               "workloads": bench_workloads(args, tools, work)
                            if not (args.dwarf_only or args.micro_only or args.go_only)
                            else []}
    md = (markdown(res) + "\n" if not args.dwarf_only else "") + (
        "\n".join(markdown_go(res["go"], args.reps)) + "\n" if res["go"] is not None else "") + (
        markdown_dwarf(res["dwarf"], args.reps) if res["dwarf"] is not None else "")
    sys.stdout.write(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Merge the benchmark programs' JSON into one file and print the table.

Called by bench/run.sh:

  report.py --work DIR --mode quick|full --json OUT [--markdown OUT.md]

DIR holds what run.sh collected: overhead.json, scale.json,
register_<N>.json, coverage.json, coverage_insns.json, attach.json, redis.json, uftrace.json / uftrace_nop5.json (+ .calls, the call
counts `uftrace report` found), skips.tsv (id, reason: what run.sh
skipped itself). Everything missing is reported as skipped, never as a
failure.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine():
    m = {}
    cpuinfo = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    g = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    m["cpu"] = g.group(1).strip() if g else platform.processor()
    g = re.search(r"^cpu MHz\s*:\s*(.*)$", cpuinfo, re.M)
    if g:
        m["cpu_mhz"] = round(float(g.group(1)))
    m["cpus"] = len(os.sched_getaffinity(0))
    flags = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    vm = container = ""
    if shutil.which("systemd-detect-virt"):
        vm = run(["systemd-detect-virt", "--vm"])
        container = run(["systemd-detect-virt", "--container"])
    if (not vm or vm == "none") and flags and "hypervisor" in flags.group(1).split():
        vm = "a hypervisor"
    virt = []
    if vm and vm != "none":
        virt.append(vm + " guest")
    if container and container != "none":
        virt.append(container + " container")
    m["virtualized"] = ", ".join(virt) or "no"
    m["kernel"] = platform.release()
    osr = {}
    if os.path.exists("/etc/os-release"):
        for line in open("/etc/os-release"):
            k, _, v = line.strip().partition("=")
            osr[k] = v.strip('"')
    m["os"] = osr.get("PRETTY_NAME", platform.system())
    m["libc"] = platform.libc_ver()[0] + " " + platform.libc_ver()[1]
    cc = run(["cc", "--version"]).splitlines()
    m["compiler"] = cc[0] if cc else "?"
    g = re.search(r"^MemTotal:\s*(\d+)", open("/proc/meminfo").read(), re.M)
    if g:
        m["mem_gib"] = round(int(g.group(1)) / 1048576, 1)
    if shutil.which("uftrace"):
        m["uftrace"] = run(["uftrace", "--version"]).split("(")[0].strip()
    return m


def git_info(root):
    head = run(["git", "-C", root, "rev-parse", "HEAD"])
    dirty = bool(run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]))
    return head or "unknown", dirty


# ------------------------------------------------------------ formatting

def ns(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x


def us(x):
    return "%.2f" % (x / 1000.0)


def rate(x):
    if x >= 1e6:
        return "%.2fM" % (x / 1e6)
    return "%.0fk" % (x / 1e3)


def secs(x):
    if x < 1:
        return "%.1f ms" % (x * 1e3)
    return "%.2f s" % x


def ratio(r):
    if not r:
        return "-"
    if r.get("note"):
        return "%.2f (%s)" % (r["median"], r["note"])
    return "%.2f [%.2f-%.2f]" % (r["median"], r["min"], r["max"])


def mem(r):
    opt = ("; %.0f B with the jumps" % r["optimized_bytes_per_probe"]
           if "optimized_bytes_per_probe" in r else "")
    own = ("the library's own %.0f, " % r["library_bytes_per_probe"]
           if "library_bytes_per_probe" in r else "")
    return "%.0f B (%stext copies %.0f, heap %.0f)%s" % (
        r["bytes_per_probe"], own, r["text_copy_bytes_per_probe"], r["heap_bytes_per_probe"], opt)


# Rows of the overhead table in order (ids from bench_overhead and the
# uftrace runs).
ROWS = ["call", "1rt", "2rt", "detour", "k", "b", "o", "ov", "r", "rb", "ro", "call_sdt", "sdt", "kr",
        "k_nop5", "j", "jr",
        "w", "w_nb", "w_hw", "uprobe", "uretprobe", "uprobe_nop5", "uretprobe_nop5", "uftrace", "uftrace_nop5"]

RATIOS_SHOWN = ["k/1rt", "k/2rt", "b/1rt", "b/k", "r/1rt", "rb/1rt", "kr/1rt", "r/k", "kr/k", "k_nop5/k", "detour/call",
                "o/detour", "o/call", "b/o", "ov/o", "ro/r", "ro/o", "k_nop5/o", "sdt/o", "j/k", "j/2rt", "jr/j",
                "uprobe/k", "uretprobe/r", "uprobe/1rt", "uprobe_nop5/k", "uprobe_nop5/uprobe",
                "uretprobe_nop5/r", "w/1rt", "w_nb/w", "w_hw/1rt", "uftrace/k", "uftrace_nop5/k"]


def merge_uftrace(work, overhead, skips):
    """uftrace measures join the overhead rows (from another process)."""
    for uid, label in (("uftrace", "uftrace -P, dynamic patching"),
                       ("uftrace_nop5", "uftrace -P on a 5-byte NOP entry")):
        row = {"id": uid, "label": label, "kind": "peer", "process": "separate"}
        data = load(os.path.join(work, uid + ".json"))
        if uid in skips:
            row.update(status="skipped", reason=skips[uid])
        elif data is None:
            row.update(status="skipped", reason="no result (uftrace run failed, see the log)")
        elif data.get("status") != "ok":
            row.update(status="skipped", reason=data.get("reason", "?"))
        else:
            calls = None
            try:
                calls = int(open(os.path.join(work, uid + ".calls")).read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
            if calls is not None and calls != data["target_calls"]:
                row.update(status="skipped",
                           reason="uftrace recorded %d calls for %d" % (calls, data["target_calls"]))
            else:
                row.update(status="ok", iters=data["iters"], ns=data["ns"],
                           overhead_ns=data["overhead_ns"], call_ns_same_process=data["call"],
                           recorded_calls=calls)
        overhead["measures"].append(row)
        # cross-process ratio: medians
        k = next((m for m in overhead["measures"] if m["id"] == "k" and m["status"] == "ok"), None)
        if row["status"] == "ok" and k:
            v = row["ns"]["median"] / k["ns"]["median"]
            overhead["ratios"].append({"id": uid + "/k", "median": v, "min": v, "max": v,
                                       "n": 1, "note": "medians of two processes"})


# ---------------------------------------------------- optimization coverage

COVERAGE_GOAL = 95.0  # issue 4: >= 95% of the function entries [OPTIMIZED]


def pct(a, b):
    return "%.1f%%" % (100.0 * a / b) if b else "-"


def coverage_libs(cov):
    return [lib for lib in cov["libraries"] if lib.get("status") == "ok"]


def coverage_total(cov):
    t = {"entries": 0, "probeable": 0, "optimized": 0}
    for lib in coverage_libs(cov):
        for k in t:
            t[k] += lib["functions"][k]
    return t


def coverage_reasons(cov, cls):
    """[(reason, instruction or None, {soname: count}, examples)] of class
    cls ("functions" or "ifunc"): the optimizer's why strings (with the
    instruction in the way) and the errno names of refusals; grouped by
    reason, the most frequent reason and instruction first."""
    rows = {}
    for lib in coverage_libs(cov):
        if cls not in lib:
            continue
        c = lib[cls]
        for refused, items in ((False, c["not_optimized"]), (True, c["refused"])):
            for r in items:
                reason = ("not probe-able: " if refused else "") + r["reason"]
                row = rows.setdefault((reason, r.get("instruction")), ({}, []))
                row[0][lib["soname"]] = row[0].get(lib["soname"], 0) + r["count"]
                row[1].extend(r["examples"][:2])
    per_reason = {}
    for (reason, _), (counts, _) in rows.items():
        per_reason[reason] = per_reason.get(reason, 0) + sum(counts.values())
    return sorted(((k[0], k[1], v[0], v[1]) for k, v in rows.items()),
                  key=lambda x: (-per_reason[x[0]], x[0], -sum(x[2].values())))


def reasons_line(cov, cls):
    return "; ".join("%s%s %d" % (r, " [%s]" % i if i else "", sum(c.values()))
                     for r, i, c, _ in coverage_reasons(cov, cls))


def coverage_mismatches(cov):
    out = []
    for lib in coverage_libs(cov):
        for cls in ("functions", "ifunc", "instructions"):
            for m in lib.get(cls, {}).get("mismatches", []):
                out.append("%s %s: %s x%d (%s)" % (lib["soname"], cls, m["reason"], m["count"],
                                                  ", ".join(m["examples"])))
    return out


def coverage_rows(cov, total_note):
    """The cells of the coverage table: (library, failure or None, entries,
    probe-able, optimized, % of entries, % of probe-able, registration),
    the last row for all libraries together."""
    rows = []
    for lib in cov["libraries"]:
        if lib.get("status") != "ok":
            rows.append((lib["soname"], lib.get("reason", "?")) + ("",) * 6)
            continue
        f = lib["functions"]
        rows.append((lib["soname"], None, f["entries"], f["probeable"], f["optimized"],
                     pct(f["optimized"], f["entries"]), pct(f["optimized"], f["probeable"]),
                     "%s, %d self-hits" % (secs(lib["register_seconds"]), lib["self_hits"])))
    t = coverage_total(cov)
    rows.append(("all", None, t["entries"], t["probeable"], t["optimized"],
                 pct(t["optimized"], t["entries"]), pct(t["optimized"], t["probeable"]),
                 total_note))
    return rows


def coverage_text(cov):
    out = ["", "Jump-optimization coverage: a pre_handler-only kprobe on every exported function "
           "entry (.dynsym, one per address), after ukprobes_wait_optimizer():"]
    out.append("  %-16s %8s %10s %10s %10s %12s  %s" % (
        "library", "entries", "probe-able", "optimized", "% entries", "% probe-able", "registration"))
    for r in coverage_rows(cov, "(goal: %.0f%% of entries)" % COVERAGE_GOAL):
        if r[1]:
            out.append("  %-16s failed: %s" % r[:2])
        else:
            out.append("  %-16s %8d %10d %10d %10s %12s  %s" % ((r[0],) + r[2:]))
    last = None
    for reason, insn, counts, ex in coverage_reasons(cov, "functions"):
        if reason != last:
            out.append("  the rest: %s" % reason)
            last = reason
        out.append("    %5d  %-40s %s; e.g. %s" % (
            sum(counts.values()), insn or "", ", ".join("%s %d" % kv for kv in counts.items()),
            ", ".join(ex[:3])))
    for lib in coverage_libs(cov):
        if lib["ifunc_symbols"]:
            i = lib["ifunc"]
            why = reasons_line({"libraries": [lib]}, "ifunc")
            out.append("  %s IFUNC symbols: %d, resolved to %d implementations: %d probe-able, "
                       "%d optimized%s" % (lib["soname"], lib["ifunc_symbols"], i["entries"],
                                          i["probeable"], i["optimized"], "; " + why if why else ""))
    mm = coverage_mismatches(cov)
    out.append("  ukprobes_optimizable() predicted every result" if not mm else
               "  ukprobes_optimizable() mispredicted: " + "; ".join(mm))
    return out


def coverage_markdown(cov, commit):
    out = ["", "Jump-optimization coverage at commit `%s`: a kprobe with only a pre_handler on "
           "every exported function entry (each defined FUNC symbol of `.dynsym`, one per "
           "address), registered with `register_kprobes()` in batches of %d, then "
           "`ukprobes_wait_optimizer()`:" % (commit[:12], cov["batch"]), ""]
    out.append("| library | entries | probe-able | optimized | of entries | of probe-able | "
               "registration |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in coverage_rows(cov, "goal ≥ %.0f%% of entries" % COVERAGE_GOAL):
        name = "`%s`" % r[0] if r[0] != "all" else "all"
        if r[1]:
            out.append("| %s | failed: %s | | | | | |" % (name, r[1]))
        else:
            out.append("| %s | %d | %d | %d | %s | %s | %s |" % ((name,) + r[2:]))
    reasons = coverage_reasons(cov, "functions")
    libs = [lib["soname"] for lib in coverage_libs(cov)]
    if reasons:
        out.append("")
        out.append("The rest, by the optimizer's reason and the instruction in the way:")
        out.append("")
        out.append("| reason | instruction | " + " | ".join("`%s`" % n for n in libs) + " | e.g. |")
        out.append("| --- | --- | " + " | ".join("---:" for _ in libs) + " | --- |")
        last = None
        for reason, insn, counts, ex in reasons:
            out.append("| %s | %s | %s | %s |" % (
                reason if reason != last else "", insn or "",
                " | ".join(str(counts.get(n, 0)) for n in libs),
                ", ".join("`%s`" % e for e in ex[:3])))
            last = reason
    notes = []
    for lib in coverage_libs(cov):
        if lib["ifunc_symbols"]:
            i = lib["ifunc"]
            why = reasons_line({"libraries": [lib]}, "ifunc")
            notes.append("`%s` has %d IFUNC symbols, resolved to %d implementations (not counted "
                         "above): %d probe-able, %d optimized%s" % (
                             lib["soname"], lib["ifunc_symbols"], i["entries"], i["probeable"],
                             i["optimized"], " (" + why + ")" if why else ""))
    mm = coverage_mismatches(cov)
    notes.append("`ukprobes_optimizable()` predicted every result" if not mm else
                 "`ukprobes_optimizable()` mispredicted: " + "; ".join(mm))
    out.append("")
    out.append("; ".join(notes) + ".")
    return out


# ------------------------------------------------------------ ukprobe -p

ATTACH_COLS = (("stop_us", "target stopped", lambda x: "%d us" % x),
               ("inject_us", "injection", lambda x: "%d us" % x),
               ("registered_ms", "probes registered", lambda x: "%d ms" % x),
               ("first_event_ms", "first event", lambda x: "%d ms" % x),
               ("detach_ms", "detach", lambda x: "%d ms" % x))


def attach_cells(r):
    """(first attach, then median/max of the others) per column."""
    cells = []
    for k, _, f in ATTACH_COLS:
        cells.append("%s; %s / %s" % (f(r["first"][k]), f(r[k]["median"]), f(r[k]["max"])))
    return cells


def attach_text(att):
    reps = max([r.get("reps", 1) for r in att["rows"]] + [1])
    out = ["", "Attach (%s): the first attach (it loads the agent); median / max of the next %d"
           % (att["command"], reps - 1), ""]
    out.append("%-22s %s" % ("target", "  ".join("%-30s" % c[1] for c in ATTACH_COLS)))
    for r in att["rows"]:
        if r["status"] != "ok":
            out.append("%-22s %s: %s" % (r["id"], r["status"], r.get("reason", "")))
            continue
        out.append("%-22s %s" % (r["id"], "  ".join("%-30s" % c for c in attach_cells(r))))
    return out


def attach_markdown(att):
    out = ["", "Attach (`%s`, `UKPROBE_TIMING=1`): the chosen thread's stop (seize to "
           "detach), the whole injection, then from the start of the session: probes "
           "registered, first event; the detach (DETACH to the agent's last thread gone). "
           "Each cell: the first attach (it loads the agent); median / max of the next ones."
           % att["command"], ""]
    out.append("| target | " + " | ".join(c[1] for c in ATTACH_COLS) + " |")
    out.append("| --- |" + " --- |" * len(ATTACH_COLS))
    for r in att["rows"]:
        if r["status"] != "ok":
            out.append("| %s | %s: %s |" % (r["id"], r["status"], r.get("reason", "")) +
                       " |" * (len(ATTACH_COLS) - 1))
            continue
        out.append("| %s | %s |" % (r["id"], " | ".join(attach_cells(r))))
    return out


def redis_cells(r):
    """no probes' rps, then ukprobe's, ukprobe run's and bpftrace's ratios
    (median, min-max)."""
    def ratio(x):
        return "%.2f (%.2f-%.2f)" % (x["median"], x["min"], x["max"]) if x else "-"
    return ["%.0f" % r["base_rps"]["median"], ratio(r["ukprobe"]), ratio(r.get("ukprobe_run")),
            ratio(r["bpftrace"]) if "bpftrace" in r else "skipped: " + r["bpftrace_skipped"]]


REDIS_COLS = ("rps, no probes", "ukprobe -p, 3 probes", "ukprobe run -p, 3 count()",
              "bpftrace, 3 uprobes")


def redis_text(rd):
    out = ["", "Redis (%s): requests per second as a ratio to no probes (median, min-max "
           "over the rounds)" % rd["command"], ""]
    out.append("%-26s %s" % ("", "  ".join("%-24s" % c for c in REDIS_COLS)))
    for r in rd["rows"]:
        if r["status"] != "ok":
            out.append("%-26s %s: %s" % (r["id"], r["status"], r.get("reason", "")))
            continue
        out.append("%-26s %s" % (r["id"], "  ".join("%-24s" % c for c in redis_cells(r))))
    return out


def redis_markdown(rd):
    out = ["", "Redis (`%s`; bench/redis.py): Debian's redis-server, requests per second "
           "with `call`, `processCommand` and `lookupKey` counted (the last row: every "
           "function of redis-server, `p redis-server:*`), as a ratio to the same "
           "server without probes in the same round (median, min-max)." % rd["command"], ""]
    out.append("| | " + " | ".join(REDIS_COLS) + " |")
    out.append("| --- |" + " --- |" * len(REDIS_COLS))
    for r in rd["rows"]:
        if r["status"] != "ok":
            out.append("| %s | %s: %s | | | |" % (r["id"], r["status"], r.get("reason", "")))
            continue
        out.append("| %s | %s |" % (r["id"], " | ".join(redis_cells(r))))
    return out


# ---------------------------------------- ... at instruction boundaries

INSNS_GOAL = 97.0  # issue 14: >= 97% of the probe-able instruction boundaries


def insns_libs(cov):
    return [lib for lib in coverage_libs(cov) if "instructions" in lib]


def insns_rows(cov):
    """(library, boundaries, sampled, probe-able, optimized, % of probe-able)"""
    return [(lib["soname"], lib["instruction_boundaries"], lib["instructions"]["entries"],
             lib["instructions"]["probeable"], lib["instructions"]["optimized"],
             pct(lib["instructions"]["optimized"], lib["instructions"]["probeable"]))
            for lib in insns_libs(cov)]


def insns_text(cov):
    out = ["", "... at instruction boundaries inside the exported functions, drawn at random "
           "(seed %d; none within 16 bytes of another):" % insns_libs(cov)[0]["seed"]]
    out.append("  %-20s %10s %8s %10s %10s %12s" % (
        "library", "boundaries", "sampled", "probe-able", "optimized", "% probe-able"))
    for r in insns_rows(cov):
        out.append("  %-20s %10d %8d %10d %10d %12s" % r)
    last = None
    for reason, insn, counts, ex in coverage_reasons(cov, "instructions"):
        if reason != last:
            out.append("  the rest: %s" % reason)
            last = reason
        out.append("    %5d  %-40s %s; e.g. %s" % (
            sum(counts.values()), insn or "", ", ".join("%s %d" % kv for kv in counts.items()),
            ", ".join(ex[:3])))
    return out


def insns_markdown(cov, commit):
    libs = [lib["soname"] for lib in insns_libs(cov)]
    out = ["", "The same at instruction boundaries inside the exported functions (commit `%s`), "
           "drawn at random (seed %d; none within 16 bytes of another; goal ≥ %.0f%% of the "
           "probe-able):" % (commit[:12], insns_libs(cov)[0]["seed"], INSNS_GOAL), ""]
    out.append("| library | boundaries | sampled | probe-able | optimized | of probe-able |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in insns_rows(cov):
        out.append("| `%s` | %d | %d | %d | %d | %s |" % r)
    reasons = coverage_reasons(cov, "instructions")
    if reasons:
        out.append("")
        out.append("| reason | instruction | " + " | ".join("`%s`" % n for n in libs) + " | e.g. |")
        out.append("| --- | --- | " + " | ".join("---:" for _ in libs) + " | --- |")
        last = None
        for reason, insn, counts, ex in reasons:
            out.append("| %s | %s | %s | %s |" % (
                reason if reason != last else "", insn or "",
                " | ".join(str(counts.get(n, 0)) for n in libs),
                ", ".join("`%s`" % e for e in ex[:3])))
            last = reason
    return out


def table_text(res):
    out = []
    m = res["machine"]
    out.append("ukprobes benchmark (%s mode), %s" % (res["mode"], res["date"]))
    out.append("machine: %s, %d CPUs%s, %s, Linux %s, %s, %s" % (
        m["cpu"], m["cpus"], ", " + m["virtualized"] if m["virtualized"] != "no" else "",
        m["os"], m["kernel"], m["libc"], m["compiler"]))
    if m.get("loadavg_at_start"):
        busy = float(m["loadavg_at_start"].split()[0]) >= 0.5
        out.append("load:    %s at the start%s" % (
            m["loadavg_at_start"], " (other work on the machine: expect noise)" if busy else ""))
    out.append("commit:  %s%s" % (res["commit"], " (with uncommitted changes)" if res["dirty"] else ""))
    ov = res.get("overhead")
    if ov:
        out.append("")
        out.append("Per hit on bench_target (%s), median [min-max] of %d repetitions, "
                   "%d calls each (%d for the cheap rows):" % (
                       ov["target"]["asm"], ov["reps"], ov["iters"], ov["call_iters"]))
        out.append("  %-15s %-38s %10s %10s %10s %12s %9s" % (
            "id", "what", "ns/call", "min", "max", "overhead ns", "x 1rt"))
        by = {x["id"]: x for x in ov["measures"]}
        rt1 = by.get("1rt", {}).get("ns", {}).get("median")
        for rid in ROWS:
            x = by.get(rid)
            if not x:
                continue
            if x["status"] != "ok":
                what = "not implemented yet (issue 4)" if x["status"] == "not_implemented" \
                    else "skipped: " + x["reason"]
                out.append("  %-15s %-38s %s" % (rid, x["label"], what))
                continue
            s = x["ns"]
            over = x["overhead_ns"]["median"] if rid != "call" else None
            xr = "%.2f" % (s["median"] / rt1) if rt1 and rid not in ("call", "detour") else "-"
            note = " (other process)" if x.get("process") == "separate" else ""
            out.append("  %-15s %-38s %10s %10s %10s %12s %9s%s" % (
                rid, x["label"], ns(s["median"]), ns(s["min"]), ns(s["max"]), ns(over), xr, note))
        out.append("")
        out.append("Ratios, taken per repetition: median [min-max]")
        rat = {r["id"]: r for r in ov["ratios"]}
        line = []
        for rid in RATIOS_SHOWN:
            if rid in rat:
                line.append("%s = %s" % (rid, ratio(rat[rid])))
        for i in range(0, len(line), 3):
            out.append("  " + ";  ".join(line[i:i + 3]))
        out.append("")
        out.append("As the spec prints it (usec): " + spec_line(by))
    sc = res.get("scaling")
    if sc:
        out.append("")
        out.append("Scaling, hits per second, one thread per CPU (%d CPUs), %d hits per thread, "
                   "median of %d:" % (sc["cpus"], sc["iters_per_thread"], sc["reps"]))
        out.append("  %-8s %-32s %10s %22s %22s" % ("id", "what", "1 thread", "2 threads, same probe",
                                                   "2 threads, 2 probes"))
        for row in sc["rows"]:
            if row["status"] != "ok":
                out.append("  %-8s %-32s skipped: %s" % (row["id"], row["label"], row["reason"]))
                continue
            same = "%s (x%.2f)" % (rate(row["t2_same"]["median"]), row["scale_same"]["median"])
            diff = "%s (x%.2f)" % (rate(row["t2_diff"]["median"]), row["scale_diff"]["median"]) \
                if "t2_diff" in row else "= same"
            out.append("  %-8s %-32s %10s %22s %22s" % (row["id"], row["label"],
                                                       rate(row["t1"]["median"]), same, diff))
    regs = res.get("registration") or []
    if regs:
        out.append("")
        out.append("Registration on libc/libsqlite3/libz (function entries, then instructions "
                   "inside sqlite/libz functions), median:")
        out.append("  %7s %-11s %18s %18s %18s %18s  %s" % (
            "probes", "points", "register 1 by 1", "unregister 1 by 1", "register_kprobes",
            "unregister_kprobes", "memory per probe (RssAnon)"))
        for r in regs:
            if r.get("status") == "skipped":
                out.append("  %7s skipped: %s" % (r["count"], r["reason"]))
                continue
            n = r["count"]

            def cell(k):
                if k not in r:
                    return "not run"
                return "%s (%.1f us)" % (secs(r[k]["median"]), r[k]["median"] * 1e6 / n)
            out.append("  %7d %-11s %18s %18s %18s %18s  %s" % (
                n, "%d+%d" % (r["entries"], r["inner"]), cell("register_single"),
                cell("unregister_single"), cell("register_batch"), cell("unregister_batch"),
                mem(r)))
        for r in regs:
            if r.get("status") == "skipped":
                continue
            f = r["first"]
            hot = ", ".join("%s %d" % (h[0].split(":")[-1], h[1]) for h in f["hot"][:6])
            if not f["hits"]:
                out.append("  %d: first registration %s, no probe hit while registering" % (
                    r["count"], secs(f["register_seconds"])))
                continue
            out.append("  %d: first registration %s with %d hits of the library's own calls on %d "
                       "probed functions%s; those replaced for the figures above" % (
                           r["count"], secs(f["register_seconds"]), f["hits"], f["probes_hit"],
                           " (" + hot + ")" if hot else ""))
        out.append("  not probed: %s (the library's hit path calls them: a probe there recurses)"
                   % ", ".join(regs[0].get("not_probed", [])) if regs[0].get("not_probed") else "")
    if res.get("coverage"):
        out.extend(coverage_text(res["coverage"]))
    if res.get("attach"):
        out.extend(attach_text(res["attach"]))
    if res.get("redis"):
        out.extend(redis_text(res["redis"]))
    if res.get("coverage_insns") and insns_libs(res["coverage_insns"]):
        out.extend(insns_text(res["coverage_insns"]))
    if res["skipped"]:
        out.append("")
        out.append("Skipped:")
        for s in res["skipped"]:
            out.append("  %s: %s" % (s["id"], s["reason"]))
    return "\n".join(out)


def spec_line(by):
    parts = []
    for rid in ("k", "b", "o", "r", "rb", "ro", "kr", "j", "jr"):
        x = by.get(rid)
        if x and x["status"] == "ok":
            parts.append("%s = %s" % (rid, us(x["overhead_ns"]["median"])))
        else:
            parts.append("%s = n/a" % rid)
    return "; ".join(parts)


def table_markdown(res):
    out = []
    m = res["machine"]
    out.append("Measured %s on %s (%d CPUs%s), Linux %s, %s, %s; commit `%s`%s; `%s`." % (
        res["date"], m["cpu"], m["cpus"],
        ", " + m["virtualized"] if m["virtualized"] != "no" else "",
        m["kernel"], m["os"], m["compiler"], res["commit"][:12],
        " plus uncommitted changes" if res["dirty"] else "", res["command"]))
    if m.get("loadavg_at_start"):
        out[-1] = out[-1][:-1] + "; load average at the start: %s." % m["loadavg_at_start"]
    ov = res.get("overhead")
    if ov:
        out.append("")
        out.append("Per hit, on `bench_target` (`%s`), median of %d repetitions of %d calls "
                   "(%d for `call` and `detour`); overhead = ns/call - `call`:" % (
                       ov["target"]["asm"], ov["reps"], ov["iters"], ov["call_iters"]))
        out.append("")
        out.append("| | what | ns/call | min | max | overhead ns | × 1rt |")
        out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        by = {x["id"]: x for x in ov["measures"]}
        rt1 = by.get("1rt", {}).get("ns", {}).get("median")
        for rid in ROWS:
            x = by.get(rid)
            if not x:
                continue
            if x["status"] != "ok":
                what = "not implemented yet (issue 4)" if x["status"] == "not_implemented" \
                    else "skipped: " + x["reason"]
                out.append("| `%s` | %s | %s | | | | |" % (rid, x["label"], what))
                continue
            s = x["ns"]
            over = ns(x["overhead_ns"]["median"]) if rid != "call" else ""
            xr = "%.2f" % (s["median"] / rt1) if rt1 and rid not in ("call", "detour") else ""
            label = x["label"] + (" (separate process)" if x.get("process") == "separate" else "")
            out.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
                rid, label, ns(s["median"]), ns(s["min"]), ns(s["max"]), over, xr))
        out.append("")
        rat = {r["id"]: r for r in ov["ratios"]}
        out.append("Ratios, per repetition, median [min-max]: " + "; ".join(
            "%s %s" % (rid, ratio(rat[rid])) for rid in RATIOS_SHOWN if rid in rat) + ".")
        out.append("")
        out.append("As the spec prints it (usec): " + spec_line(by) + ".")
    sc = res.get("scaling")
    if sc:
        out.append("")
        out.append("Scaling, hits per second, each thread on its own CPU, %d hits per thread, "
                   "median of %d (× = over one thread):" % (sc["iters_per_thread"], sc["reps"]))
        out.append("")
        out.append("| | 1 thread | 2 threads, same probe | 2 threads, different probes |")
        out.append("| --- | ---: | ---: | ---: |")
        for row in sc["rows"]:
            if row["status"] != "ok":
                out.append("| `%s` %s | skipped: %s | | |" % (row["id"], row["label"], row["reason"]))
                continue
            same = "%s (×%.2f)" % (rate(row["t2_same"]["median"]), row["scale_same"]["median"])
            diff = "%s (×%.2f)" % (rate(row["t2_diff"]["median"]), row["scale_diff"]["median"]) \
                if "t2_diff" in row else "(same case)"
            out.append("| `%s` %s | %s | %s | %s |" % (row["id"], row["label"],
                                                     rate(row["t1"]["median"]), same, diff))
    regs = res.get("registration") or []
    if regs:
        out.append("")
        out.append("Registration: probes on libc, libsqlite3 and libz function entries, then on "
                   "instructions inside libsqlite3/libz functions; median time (per probe):")
        out.append("")
        out.append("| probes | entries + inner | register one by one | unregister one by one | "
                   "`register_kprobes` | `unregister_kprobes` | memory per probe (RssAnon) |")
        out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in regs:
            if r.get("status") == "skipped":
                out.append("| %s | skipped: %s | | | | | |" % (r["count"], r["reason"]))
                continue
            n = r["count"]

            def cell(k):
                if k not in r:
                    return "not run"
                return "%s (%.1f µs)" % (secs(r[k]["median"]), r[k]["median"] * 1e6 / n)
            out.append("| %d | %d + %d | %s | %s | %s | %s | %s |" % (
                n, r["entries"], r["inner"], cell("register_single"), cell("unregister_single"),
                cell("register_batch"), cell("unregister_batch"), mem(r)))
        notes = []
        for r in regs:
            if r.get("status") == "skipped":
                continue
            f = r["first"]
            if f["hits"]:
                hot = ", ".join("`%s`" % h[0].split(":")[-1].split("+")[0] for h in f["hot"][:6])
                notes.append("with %d probes, the first registration took %s: %d hits of the "
                             "library's own calls into probed libc functions (%s, ...); those "
                             "%d probes were replaced by others for the figures above" % (
                                 r["count"], secs(f["register_seconds"]), f["hits"], hot,
                                 f["probes_hit"]))
        if notes:
            out.append("")
            out.append("Self-hits: " + "; ".join(notes) + ".")
    if res.get("coverage"):
        out.extend(coverage_markdown(res["coverage"], res["commit"]))
    if res.get("attach"):
        out.extend(attach_markdown(res["attach"]))
    if res.get("redis"):
        out.extend(redis_markdown(res["redis"]))
    if res.get("coverage_insns") and insns_libs(res["coverage_insns"]):
        out.extend(insns_markdown(res["coverage_insns"], res["commit"]))
    if res["skipped"]:
        out.append("")
        out.append("Skipped: " + "; ".join("%s: %s" % (s["id"], s["reason"])
                                           for s in res["skipped"]) + ".")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--mode", default="full")
    ap.add_argument("--json", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("--command", default="bash bench/run.sh")
    a = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit, dirty = git_info(root)
    skips = {}
    sk = os.path.join(a.work, "skips.tsv")
    if os.path.exists(sk):
        for line in open(sk):
            k, _, v = line.rstrip("\n").partition("\t")
            if k:
                skips[k] = v
    res = {
        "schema": "ukprobes-bench/1",
        "mode": a.mode,
        "command": a.command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "dirty": dirty,
        "machine": machine(),
    }
    try:
        res["machine"]["loadavg_at_start"] = " ".join(
            open(os.path.join(a.work, "loadavg")).read().split()[:3])
    except OSError:
        pass
    ov = load(os.path.join(a.work, "overhead.json"))
    if ov:
        merge_uftrace(a.work, ov, skips)
        res["overhead"] = ov
    sc = load(os.path.join(a.work, "scale.json"))
    if sc:
        res["scaling"] = sc
    regs = []
    for n in (1000, 10000, 100000):
        key = "register_%d" % n
        r = load(os.path.join(a.work, key + ".json"))
        if r:
            regs.append(r)
        elif key in skips:
            regs.append({"count": n, "status": "skipped", "reason": skips[key]})
    res["registration"] = regs
    cov = load(os.path.join(a.work, "coverage.json"))
    if cov:
        res["coverage"] = cov
    att = load(os.path.join(a.work, "attach.json"))
    if att:
        res["attach"] = att
    rd = load(os.path.join(a.work, "redis.json"))
    if rd:
        res["redis"] = rd
    cov_insns = load(os.path.join(a.work, "coverage_insns.json"))
    if cov_insns:
        res["coverage_insns"] = cov_insns

    # one list of everything that was not measured, and why
    skipped = []
    for x in (ov or {}).get("measures", []):
        if x["status"] == "skipped":
            skipped.append({"id": x["id"], "reason": x["reason"]})
    for row in (sc or {}).get("rows", []):
        if row["status"] == "skipped":
            skipped.append({"id": "scaling " + row["id"], "reason": row["reason"]})
    for r in regs:
        if r.get("status") == "skipped":
            skipped.append({"id": "registration %d" % r["count"], "reason": r["reason"]})
    for k, v in skips.items():
        if not k.startswith(("uftrace", "register_")):
            skipped.append({"id": k, "reason": v})
    for r in (att or {}).get("rows", []):
        if r["status"] == "skipped":
            skipped.append({"id": "attach " + r["id"], "reason": r["reason"]})
    for r in (rd or {}).get("rows", []):
        if r["status"] == "skipped":
            skipped.append({"id": r["id"], "reason": r["reason"]})
        elif r.get("bpftrace_skipped"):
            skipped.append({"id": r["id"] + " bpftrace", "reason": r["bpftrace_skipped"]})
    res["skipped"] = skipped

    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(table_text(res))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table_markdown(res) + "\n")
    missing = [n for n, v in (("overhead", ov), ("scaling", sc), ("coverage", cov),
                              ("attach", att)) if not v]
    if missing:
        print("report: no result for " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ukprobe's command-line tests: clitest.py CASE runs one case.

Environment (set by tests/cli/meson.build):
  UKPROBE       the ukprobe executable
  UKP_TARGETS   the directory of the tgt_* target programs
  UKP_CLI_SRC   this directory (tables and golden files)
  UKP_MANPAGE   doc/ukprobe.1
  UKP_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.

Trace lines are normalised before comparison: thread ids, CPUs,
timestamps, function sizes, return addresses' offsets and pointer values
change from run to run and from compiler to compiler.
Exit status: 0 pass, 1 fail, 77 skip.
"""
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

UKPROBE = os.environ["UKPROBE"]
TARGETS = os.environ["UKP_TARGETS"]
SRC = os.environ["UKP_CLI_SRC"]
PREFIX = "ukprobe: error: "


class Fail(Exception):
    pass


def check(cond, what, *context):
    if not cond:
        raise Fail(what + "".join("\n--- %s" % c for c in context))


def tgt(name):
    return os.path.join(TARGETS, "tgt_" + name)


def no_core():
    # programs killed on purpose must not leave core files behind
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def ukprobe(args, **kw):
    kw.setdefault("timeout", 60)
    kw.setdefault("preexec_fn", no_core)
    return subprocess.run([UKPROBE] + args, capture_output=True, text=True, **kw)


def show(r):
    return "rc=%s\nstdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr)


# comm-tid [cpu] secs.micros: event: (where) args
LINE_RE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<tid>\d+)\s+\[(?P<cpu>\d{3})\]\s+(?P<ts>\d+\.\d{6}): "
    r"(?P<event>\w+): \((?P<where>[^)]*)\)(?P<args>.*)$")


def parse_line(line):
    m = LINE_RE.match(line)
    check(m, "not a trace line: %r" % line)
    return m


def normalise(line):
    m = parse_line(line)
    where = re.sub(r"/0x[0-9a-f]+", "/SIZE", m["where"])
    where = re.sub(r"^([^ ]+?)\+0x[0-9a-f]+/SIZE <- ", r"\1+OFF/SIZE <- ", where)
    args = re.sub(r"0x[0-9a-f]{10,}", "ADDR", m["args"])
    args = re.sub(r"(\+0x[0-9a-f]+)/0x[0-9a-f]+", r"\1/SIZE", args)  # symbol values
    return "%s-TID [CPU] TS: %s: (%s)%s" % (m["comm"], m["event"], where, args)


def golden(name, text):
    path = os.path.join(SRC, "golden", name)
    if os.environ.get("UKP_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        want = f.read()
    check(text == want, "output differs from golden/%s" % name, "got:\n" + text, "want:\n" + want)


def error_lines(spec, col, msg):
    return "%s%s: %s\n%s^\n" % (PREFIX, spec, msg, " " * (len(PREFIX) + col))


def read_table(name):
    """Lines 'SPEC-with-^-at-the-column<TAB>message'; # comments."""
    cases = []
    with open(os.path.join(SRC, name)) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            marked, msg = line.split("\t", 1)
            col = marked.index("^")
            cases.append((marked[:col] + marked[col + 1:], col, msg.strip("\t")))
    return cases


# ------------------------------------------------------------------ cases

def case_help():
    r = ukprobe(["--help"])
    check(r.returncode == 0 and "Usage: ukprobe COMMAND" in r.stdout, "--help", show(r))
    for cmd in ("trace", "stat", "probes"):
        check(re.search(r"^  %s " % cmd, r.stdout, re.M), "--help lists %s" % cmd, show(r))
        for args in ([cmd, "--help"], [cmd, "-h"], ["help", cmd]):
            r2 = ukprobe(args)
            check(r2.returncode == 0 and r2.stdout.startswith("Usage: ukprobe %s " % cmd)
                  and not r2.stderr, " ".join(args), show(r2))
    r = ukprobe(["--version"])
    check(r.returncode == 0 and r.stdout.startswith("ukprobe "), "--version", show(r))
    for args, msg in (([], "Usage:"),
                      (["frobnicate"], "unknown command 'frobnicate'"),
                      (["trace", "--bogus"], "ukprobe: error: unknown option --bogus\n"
                       "Try 'ukprobe trace --help'."),
                      (["trace", "-x"], "ukprobe: error: unknown option -x\n"),
                      (["stat", "-e"], "ukprobe: error: option -e needs an argument\n"
                       "Try 'ukprobe stat --help'."),
                      (["trace", "--json"], "ukprobe: error: option --json needs an argument\n"),
                      (["stat", "--json", "f", "-e", "p add", "true"],
                       "ukprobe: error: option '--json' is not for ukprobe stat\n"),
                      (["trace", "--", "true"], "no probe: give at least one -e SPEC"),
                      (["trace", "-e", "p add"], "no command to run"),
                      (["stat", "-e", "p add"], "no command to run")):
        r = ukprobe(args)
        check(r.returncode == 2 and msg in r.stderr and not r.stdout,
              "usage error: %s" % args, show(r))


def expect_spec_errors(cases, rc, extra_args=(), command="trace"):
    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "ran")
        for spec, col, msg in cases:
            r = ukprobe([command, "-e", spec] + list(extra_args) +
                        ["--", tgt("basic"), "--marker", marker])
            want = error_lines(spec, col, msg)
            check(r.returncode == rc and r.stderr == want and r.stdout == "",
                  "SPEC %r" % spec, show(r), "want rc=%d stderr:\n%s" % (rc, want))
            check(not os.path.exists(marker), "the program ran for %r" % spec)


def case_syntax_errors():
    cases = read_table("syntax_errors.txt")
    check(len(cases) >= 40, "the table has %d cases" % len(cases))
    expect_spec_errors(cases, 2)
    # the same checks in stat, and for a second -e
    expect_spec_errors(cases[:5], 2, command="stat")
    expect_spec_errors(cases[:5], 2, extra_args=["-e", "p add"])
    # an event name is defined once per group
    r = ukprobe(["trace", "-e", "p:g/ev add", "-e", "p:g/ev norm", "--", tgt("basic")])
    check(r.returncode == 2 and r.stderr == error_lines(
        "p:g/ev norm", 4, "event g/ev is already defined (by -e 'p:g/ev add')"),
        "duplicate event", show(r))
    r = ukprobe(["trace", "-e", "p add", "-e", "p add", "--", tgt("basic")])
    check(r.returncode == 2 and r.stderr == error_lines(
        "p add", 0, "event ukprobes/p_add_0 is already defined (by -e 'p add')"),
        "duplicate default event", show(r))
    r = ukprobe(["trace", "-e", "p add\nx=%di", "--", tgt("basic")])
    check(r.returncode == 2 and "control character in the definition" in r.stderr,
          "newline in a SPEC", show(r))


def case_probe_errors():
    expect_spec_errors(read_table("probe_errors.txt"), 1)
    # every failing probe is reported, and the good ones do not run either
    r = ukprobe(["trace", "-e", "p nosuch1", "-e", "p add", "-e", "p nosuch2",
                 "--", tgt("basic")])
    want = (error_lines("p nosuch1", 2, "symbol nosuch1 not found in the program or its libraries") +
            error_lines("p nosuch2", 2, "symbol nosuch2 not found in the program or its libraries"))
    check(r.returncode == 1 and r.stderr == want and r.stdout == "", "two errors", show(r))


BASIC_SPECS = [
    "p add a=%di:s32 b=$arg2:u32 h=%si:x16",
    "r add $retval:s32",
    "p:pts/norm norm x=+0(%di):s64 y=+8($arg1):s64 name=+0(+16(%di)):string c=$comm nul=@0:u32",
    "r:pts/greet_ret greet len=$retval:u64 who=+0($arg1):string sp=$stack",
    "p many_args a7=$arg7:u32 a8=$arg8:s16 s1=$stack1:u32 r9=%r9:u8 ret=$stack0",
    "r5:neg tgt_basic:negate v=$arg1:s32 r=$retval:s32 rx=$retval:x32 ru=$retval:u8",
]
BASIC_OUT = ("sum 33 norm 25\nhello %s\nmany 70013 negate -42\n")
LONG_NAME = "a name that is longer than the sixty-four bytes an event keeps of a string"


def case_basic_golden():
    """ftrace-format lines of every fetch-arg kind, with and without jump
    optimization."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace")
        args = ["trace"]
        for s in BASIC_SPECS:
            args += ["-e", s]
        r = ukprobe(args + ["-o", out, "--", tgt("basic"), LONG_NAME])
        check(r.returncode == 3, "exit status of the program", show(r))
        check(r.stdout == BASIC_OUT % LONG_NAME, "the program's own stdout", show(r))
        check(r.stderr == "", "no errors", show(r))
        with open(out) as f:
            lines = f.read().splitlines()
    golden("basic.trace", "".join(normalise(l) + "\n" for l in lines))
    tids = {parse_line(l)["tid"] for l in lines}
    check(len(tids) == 1, "one thread", "\n".join(lines))
    # the same with breakpoints only
    r, nlines = traced_opts(["--no-optimize"], BASIC_SPECS, [tgt("basic"), LONG_NAME])
    check(r.returncode == 3 and r.stderr == "" and
          [normalise(l) for l in nlines] == [normalise(l) for l in lines], "--no-optimize",
          show(r), "\n".join(nlines))


def case_stat_golden():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "stat")
        args = ["stat"]
        for s in BASIC_SPECS:
            args += ["-e", s]
        r = ukprobe(args + ["-o", out, "--", tgt("basic")])
        check(r.returncode == 3 and r.stdout == BASIC_OUT % "world" and r.stderr == "",
              "stat run", show(r))
        with open(out) as f:
            golden("basic.stat", f.read())
    # without -o the table follows the program's output
    r = ukprobe(["stat", "-e", "p add", "--", tgt("basic")])
    check(r.returncode == 3 and r.stdout.startswith(BASIC_OUT % "world") and
          re.search(r"^ukprobes/p_add_0 +3 +0$", r.stdout, re.M), "stat to stdout", show(r))


def case_events_file():
    """-E FILE: SPECs one per line (comments and blank lines skipped), in
    the order of the options; the same table as with -e."""
    with tempfile.TemporaryDirectory() as d:
        specs = os.path.join(d, "specs")
        with open(specs, "w") as f:
            f.write("# the basic SPECs\n\n")
            for s in BASIC_SPECS[1:]:
                f.write("  %s  \n# between\n" % s)
        by_e, by_file = os.path.join(d, "e.stat"), os.path.join(d, "f.stat")
        args = ["stat", "-o", by_e]
        for s in BASIC_SPECS:
            args += ["-e", s]
        r = ukprobe(args + ["--", tgt("basic")])
        check(r.returncode == 3 and r.stderr == "", "stat with -e", show(r))
        r = ukprobe(["stat", "-o", by_file, "-e", BASIC_SPECS[0], "-E", specs,
                     "--", tgt("basic")])
        check(r.returncode == 3 and r.stderr == "", "stat with -E", show(r))
        with open(by_e) as a, open(by_file) as b:
            ta, tb = a.read(), b.read()
        check(ta == tb and len(ta.splitlines()) == len(BASIC_SPECS) + 1,
              "-E gives the table -e gives", ta, tb)
        r = ukprobe(["stat", "-E", os.path.join(d, "nope"), "--", tgt("basic")])
        check(r.returncode == 2 and r.stderr.startswith(PREFIX + os.path.join(d, "nope") +
                                                        ": No such file or directory"),
              "a missing file", show(r))
        with open(specs, "a") as f:
            f.write("p add+%\n")
        r = ukprobe(["probes", "-E", specs, "--", tgt("basic")])
        check(r.returncode == 2 and r.stderr.startswith(PREFIX + "p add+%"),
              "a malformed SPEC in the file is reported", show(r))


def case_trace_stdout():
    r = ukprobe(["trace", "-e", "p add a=%di:s32", "-e", "p greet", "--", tgt("basic")])
    check(r.returncode == 3 and r.stderr == "", "run", show(r))
    prog = [l for l in r.stdout.splitlines() if not LINE_RE.match(l)]
    trace = [normalise(l) for l in r.stdout.splitlines() if LINE_RE.match(l)]
    check("\n".join(prog) + "\n" == BASIC_OUT % "world", "program lines", show(r))
    check(trace == ["tgt_basic-TID [CPU] TS: p_add_0: (add+0x0/SIZE) a=%d" % i
                    for i in range(3)] +
          ["tgt_basic-TID [CPU] TS: p_greet_0: (greet+0x0/SIZE)"], "trace lines", show(r))


def case_exit_status():
    r = ukprobe(["trace", "-e", "p add", "--", tgt("basic"), "--abort"])
    check(r.returncode == 128 + 6, "killed by SIGABRT: 134", show(r))
    check(r.stdout == "aborting\n", "program output", show(r))
    check("tgt_basic ended without the agent's final report" in r.stderr, "warning", show(r))
    r = ukprobe(["stat", "-e", "p add", "--", tgt("basic"), "--abort"])
    check(r.returncode == 134 and "ukprobes/p_add_0" in r.stdout and "<not counted>" in r.stdout,
          "stat of a killed program", show(r))
    r = ukprobe(["trace", "-e", "p libc.so.6:exit", "--", "sh", "-c", "exit 42"])
    check(r.returncode == 42, "exit status passed on", show(r))


def case_static():
    if not os.path.exists(tgt("static")):
        print("no static C library: skipped")
        sys.exit(77)
    r = ukprobe(["trace", "-e", "p main", "--", tgt("static")])
    check(r.returncode == 1 and r.stdout == "" and
          r.stderr == PREFIX + "%s is statically linked: the agent cannot be preloaded into it "
          "(tracing static programs is not supported)\n" % tgt("static"), "static", show(r))


def case_not_found():
    r = ukprobe(["trace", "-e", "p add", "--", "/nonexistent/ukp-prog"])
    check(r.returncode == 127 and "No such file or directory" in r.stderr, "missing path", show(r))
    r = ukprobe(["trace", "-e", "p add", "--", "ukp-no-such-command"])
    check(r.returncode == 127 and
          r.stderr == PREFIX + "ukp-no-such-command: command not found\n", "not in PATH", show(r))


def case_real_ls():
    ls = shutil.which("ls") or "/bin/ls"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace")
        want = subprocess.run([ls, "-la", SRC], capture_output=True, text=True)
        r = ukprobe(["trace",
                     "-e", "p:malloc libc.so.6:malloc size=%di:u64",
                     "-e", "r:malloc_ret libc.so.6:malloc ptr=$retval",
                     "-e", "p:free libc.so.6:free ptr=%di",
                     "-o", out, "--", ls, "-la", SRC])
        check(r.returncode == 0 and r.stderr == "", "run", show(r))
        check(r.stdout == want.stdout, "ls's own output is unchanged", show(r))
        with open(out) as f:
            lines = f.read().splitlines()
    counts = {"malloc": 0, "malloc_ret": 0, "free": 0}
    returned, freed = set(), set()
    for l in lines:
        m = parse_line(l)
        check(m["comm"].strip() == "ls", "comm is ls: %r" % l)
        ev = m["event"]
        counts[ev] += 1
        if ev == "malloc":
            check(re.fullmatch(r"malloc\+0x[04]/0x[0-9a-f]+ \[libc\.so\.6\]", m["where"]) and
                  re.fullmatch(r" size=\d+", m["args"]), "malloc line: %r" % l)
        elif ev == "malloc_ret":
            check(m["where"].endswith(" <- malloc") and re.fullmatch(r" ptr=0x[0-9a-f]+", m["args"]),
                  "malloc_ret line: %r" % l)
            returned.add(m["args"].split("=")[1])
        else:
            check(re.fullmatch(r"free\+0x[04]/0x[0-9a-f]+ \[libc\.so\.6\]",
                               m["where"]) and re.fullmatch(r" ptr=0x[0-9a-f]+", m["args"]),
                  "free line: %r" % l)
            freed.add(m["args"].split("=")[1])
    check(counts["malloc"] >= 20 and counts["malloc"] == counts["malloc_ret"] and counts["free"] > 0,
          "counts %s" % counts)
    check(len(returned & freed) >= 5, "pointers malloc returned are freed later")


def case_needed_lib():
    r, lines = traced(["p libz.so.1:compress2 srclen=$arg4:u64 level=$arg5:s32",
                       "r:zb libz.so.1:compressBound n=$arg1:u64 bound=$retval:u64"],
                      [tgt("zlib")])
    check(r.returncode == 0 and r.stderr == "" and r.stdout == "bound 1013 ret 0\n", "run",
          show(r))
    lines = [normalise(l) for l in lines]
    check(len(lines) == 2 and
          re.fullmatch(r"tgt_zlib-TID \[CPU\] TS: zb: \(main\+OFF/SIZE <- compressBound\) "
                       r"n=1000 bound=1013", lines[0]) and
          re.fullmatch(r"tgt_zlib-TID \[CPU\] TS: p_compress2_0: "
                       r"\(compress2\+0x[04]/SIZE \[libz\.so\.1\]\) srclen=1000 level=-1",
                       lines[1]), "events", "\n".join(lines))


def traced(specs, argv):
    """Run ukprobe trace with the trace in a file; returns (result, lines)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace")
        args = ["trace"]
        for s in specs:
            args += ["-e", s]
        r = ukprobe(args + ["-o", out, "--"] + argv)
        with open(out) as f:
            return r, f.read().splitlines()


def case_threads():
    r, lines = traced(["p work id=%di:s32 i=%si:u32 who=$comm"], [tgt("threads"), "50"])
    check(r.returncode == 0 and r.stderr == "", "run", show(r))
    check(r.stdout == "threads done\n", "program output", show(r))
    check(len(lines) == 4 * 50 + 1, "%d events" % len(lines), "\n".join(lines))
    seen = {}
    for l in lines:
        m = parse_line(l)
        a = dict(kv.split("=", 1) for kv in m["args"].split())
        wid = int(a["id"])
        comm = m["comm"].strip()
        check(a["who"] == '"%s"' % comm, "$comm is the thread's name: %r" % l)
        if wid >= 0:
            check(comm == "worker-%d" % wid, "comm of worker %d: %r" % (wid, l))
        else:
            check(comm == "tgt_threads", "main thread: %r" % l)
        seen.setdefault(wid, []).append((int(a["i"]), m["tid"]))
    check(sorted(seen) == [-1, 0, 1, 2, 3], "threads seen: %s" % sorted(seen))
    tids = set()
    for wid in range(4):
        check([i for i, _ in seen[wid]] == list(range(50)), "worker %d in order" % wid)
        wt = {t for _, t in seen[wid]}
        check(len(wt) == 1, "one tid per worker")
        tids |= wt
    check(len(tids) == 4 and seen[-1][0][1] not in tids, "distinct tids")


def case_flood():
    n = 200000
    # The trace goes to a FIFO that is not read for a while: ukprobe's
    # writes block, the agent's socket fills up, then the rings; the
    # program must run on, and every event it could not keep be counted.
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        p = subprocess.Popen([UKPROBE, "trace", "-e", "p tick i=%di:u32", "-o", fifo, "--",
                              tgt("flood"), str(n)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        os.set_blocking(rfd, True)
        chunks = []
        while True:
            b = os.read(rfd, 1 << 16)
            if not b:
                break
            chunks.append(b)
        os.close(rfd)
        out, err = p.communicate(timeout=120)
    check(p.returncode == 0 and out == "ticks %d\n" % n, "rc %d" % p.returncode, out, err)
    ticks = [int(parse_line(l)["args"].split("=")[1])
             for l in b"".join(chunks).decode().splitlines()]
    m = re.fullmatch(r"ukprobe: warning: (\d+) events lost \(buffers full\)\n", err)
    check(m, "a lost-events report", err)
    lost = int(m[1])
    check(lost > 0 and len(ticks) + lost == n,
          "received %d + lost %d == %d" % (len(ticks), lost, n))
    check(all(a < b for a, b in zip(ticks, ticks[1:])), "events in order, none twice")


def case_fork():
    """Without -f a forked child runs untraced."""
    r, lines = traced(["p step n=%di:s32"], [tgt("forker")])
    check(r.returncode == 0 and r.stderr == "", "run", show(r))
    lines = [normalise(l) for l in lines]
    prog = sorted(r.stdout.splitlines())
    check(lines == ["tgt_forker-TID [CPU] TS: p_step_0: (step+0x0/SIZE) n=1",
                    "tgt_forker-TID [CPU] TS: p_step_0: (step+0x0/SIZE) n=3"],
          "the child is not traced", show(r))
    check(prog == ["child done", "parent done, child status 0"], "both ran", show(r))


def lines_by(lines):
    """[(tid, comm, event, args)] of trace lines."""
    out = []
    for l in lines:
        m = parse_line(l)
        out.append((int(m["tid"]), m["comm"].strip(), m["event"], m["args"].strip()))
    return out


def case_follow():
    """-f: forked children and exec'd programs are traced; without it
    only the first process is (but its events before an exec are kept)."""
    specs = ["p step n=%di:s32", "p add a=%di:s32"]
    # without -f, a SPEC the first program does not have is an error
    r = ukprobe(["trace", "-e", specs[0], "-e", specs[1], "--", tgt("forker")])
    check(r.returncode == 1 and "symbol add not found" in r.stderr, "add without -f", show(r))
    r, lines = traced(specs[:1], [tgt("forker"), "--exec", tgt("basic")])
    check(r.returncode == 0 and r.stderr == "", "run without -f", show(r))
    ev = lines_by(lines)
    check([e[2:] for e in ev] == [("p_step_0", "n=1"), ("p_step_0", "n=3")] and
          ev[0][0] == ev[1][0], "without -f: the parent only", "\n".join(lines))
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace")
        r = ukprobe(["trace", "-f", "-e", specs[0], "-e", specs[1], "-o", out, "--",
                     tgt("forker"), "--exec", tgt("basic")])
        with open(out) as f:
            lines = f.read().splitlines()
    check(r.returncode == 0 and r.stderr == "", "run with -f", show(r))
    ev = lines_by(lines)
    parent = ev[0][0]
    child = [e for e in ev if e[0] != parent]
    check([e[2:] for e in ev if e[0] == parent] == [("p_step_0", "n=1"), ("p_step_0", "n=3")],
          "parent's events", "\n".join(lines))
    check([e[1:] for e in child] == [("tgt_forker", "p_step_0", "n=2")] +
          [("tgt_basic", "p_add_0", "a=%d" % i) for i in range(3)] and
          len({e[0] for e in child}) == 1, "the child, then the program it exec'd",
          "\n".join(lines))
    # exec without fork: the events before it are delivered, no warning;
    # with -f the new program is traced in the same process
    for follow in (False, True):
        r, lines = traced_opts(["-f"] if follow else [], specs if follow else specs[:1],
                               [tgt("forker"), "--exec-now", tgt("basic")])
        check(r.returncode == 3 and r.stderr == "", "exec (-f %s)" % follow, show(r))
        ev = lines_by(lines)
        want = [("tgt_forker", "p_step_0", "n=1")]
        if follow:
            want += [("tgt_basic", "p_add_0", "a=%d" % i) for i in range(3)]
        check([e[1:] for e in ev] == want and len({e[0] for e in ev}) == 1,
              "exec (-f %s)" % follow, "\n".join(lines))
    # a program that clears its environment still gets the agent
    r, lines = traced_opts(["-f"], specs, ["env", "-i", tgt("basic")])
    check(r.returncode == 3 and r.stderr == "" and
          [e[2:] for e in lines_by(lines)] == [("p_add_0", "a=%d" % i) for i in range(3)],
          "env -i", show(r), "\n".join(lines))
    # a shell: SPECs that do not apply to it are not errors; it ends with
    # _exit(), and its children run the program twice
    r, lines = traced_opts(["-f"], ["p add a=%di:s32"],
                           ["sh", "-c", "%s; %s" % (tgt("basic"), tgt("basic"))])
    ev = lines_by(lines)
    check(r.returncode == 3 and r.stderr == "" and len(ev) == 6 and
          len({e[0] for e in ev}) == 2, "sh -c", show(r), "\n".join(lines))
    # stat sums over the processes
    r = ukprobe(["stat", "-f", "-e", specs[0], "-e", specs[1], "--", tgt("forker"), "--exec",
                 tgt("basic")])
    check(r.returncode == 0 and re.search(r"^ukprobes/p_step_0 +3 +0$", r.stdout, re.M) and
          re.search(r"^ukprobes/p_add_0 +3 +0$", r.stdout, re.M), "stat -f", show(r))
    # a SPEC no process had: a warning at the end, not an error
    r = ukprobe(["trace", "-f", "-e", "p nosuchfn", "-e", "p step", "--", tgt("forker")])
    check(r.returncode == 0 and r.stderr.endswith(
        "ukprobe: warning: p nosuchfn: symbol nosuchfn not found in the program or its "
        "libraries (in every traced process)\n%s^\n" % (" " * len("ukprobe: warning: p "))),
        "never registered", show(r))
    # --json: one pid per process
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "t.json")
        r = ukprobe(["trace", "-f", "--json", js, "-e", specs[0], "--", tgt("forker")])
        ev = json_events(js)
    pids = {e["pid"] for e in ev if e["ph"] == "i"}
    check(r.returncode == 0 and len(pids) == 2, "json pids", pids)


def case_all_of_libc():
    """A probe on every function of libc, in a shell pipeline and with
    -f in each of its processes; the functions glibc runs with every
    signal blocked (thread start and exit) are refused by name."""
    for follow in ([], ["-f"]):
        r = ukprobe(["stat"] + follow + ["-e", "p libc.so.6:*", "--",
                                         "sh", "-c", "ls %s | sort | wc -l" % SRC])
        m = re.fullmatch(r"ukprobe: warning: p libc\.so\.6:\*: (\d+) of the (\d+) functions matching "
                         r"\* cannot be probed \(ukprobe probes shows why\)\n +\^\n", r.stderr)
        check(r.returncode == 0 and m and int(m[2]) > 1000 and int(m[1]) < 50,
              "stat %s" % follow, show(r))
        hits = {ev: int(n) for ev, n in re.findall(r"^ukprobes/(\w+) +(\d+) +\d+$", r.stdout, re.M)}
        check(hits.get("malloc", 0) > 0 and hits.get("qsort", 0) > 0 if follow else
              hits.get("malloc", 0) > 0, "hits %s" % follow, show(r))
    for fn in ("_setjmp", "__ctype_init", "getpagesize"):
        spec = "p libc.so.6:%s" % fn
        r = ukprobe(["stat", "-e", spec, "--", tgt("basic")])
        check(r.returncode == 1 and r.stderr == error_lines(
            spec, len("p libc.so.6:"), "cannot probe this address (blacklisted, or not code)"),
            spec, show(r))


def traced_opts(opts, specs, argv):
    """traced() with more options."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace")
        args = ["trace"] + opts
        for sp in specs:
            args += ["-e", sp]
        r = ukprobe(args + ["-o", out, "--"] + argv)
        with open(out) as f:
            return r, f.read().splitlines()


def case_segv():
    r, lines = traced(["p poke ptr=%di", "p on_segv sig=%di:s32"], [tgt("segv")])
    check(r.returncode == 0 and r.stderr == "", "run", show(r))
    lines = [normalise(l) for l in lines]
    check(lines == ["tgt_segv-TID [CPU] TS: p_poke_0: (poke+0x0/SIZE) ptr=0x0",
                    "tgt_segv-TID [CPU] TS: p_on_segv_0: (on_segv+0x0/SIZE) sig=11"] * 3,
          "events", show(r))
    check(r.stdout == "recovered 3\n", "the program's handler ran", show(r))


SIGMASK_PY = r"""
import os, signal, subprocess
S = signal
S.pthread_sigmask(S.SIG_BLOCK, [S.SIGTRAP])
print("mask", sorted(S.pthread_sigmask(S.SIG_BLOCK, [])))
got = []
S.signal(S.SIGTRAP, lambda s, f: got.append(int(s)))
os.kill(os.getpid(), S.SIGTRAP)
print("pending", sorted(S.sigpending()), "got", got)
r = subprocess.run(["grep", "SigBlk", "/proc/self/status"], capture_output=True, text=True)
print("child", r.stdout.strip())
S.pthread_sigmask(S.SIG_UNBLOCK, [S.SIGTRAP])
print("pending", sorted(S.sigpending()), "got", got)
S.pthread_sigmask(S.SIG_SETMASK, [S.SIGSEGV, S.SIGUSR1, S.SIGTRAP])
print("mask", sorted(S.pthread_sigmask(S.SIG_BLOCK, [])))
os.kill(os.getpid(), S.SIGTRAP)
print("wait", S.sigtimedwait([S.SIGTRAP], 0).si_signo, "got", got)
"""


def case_python_sigmask():
    """Python blocks SIGTRAP under probes: it sees exactly what it sees
    without them (mask, pending, a child's mask, sigtimedwait)."""
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        print("skip: no %s" % py)
        sys.exit(77)
    plain = subprocess.run([py, "-c", SIGMASK_PY], capture_output=True, text=True, timeout=60)
    check(plain.returncode == 0 and "child SigBlk:\t0000000000000010" in plain.stdout,
          "the run without probes", show(plain))
    with tempfile.TemporaryDirectory() as d:
        st = os.path.join(d, "stat")
        r = ukprobe(["stat", "-o", st, "-e", "p libc.so.6:malloc", "-e", "p libc.so.6:getpid",
                     "--", py, "-c", SIGMASK_PY])
        with open(st) as f:
            table = f.read()
    check(r.returncode == 0 and r.stderr == "", "run", show(r))
    check(r.stdout == plain.stdout, "the output differs from the run without probes",
          show(r), plain.stdout)
    hits = {row.split()[0]: int(row.split()[1]) for row in table.splitlines()[1:] if row.strip()}
    check(hits.get("ukprobes/p_malloc_0", 0) > 0 and hits.get("ukprobes/p_getpid_0", 0) > 0,
          "the probes fired", table)


TYPES_OUT = "letter 118 flags 4464 tally 1003 dispatch 21 fact 24 probe everything\n"
TYPES_SPECS = [
    "p letter c=%di:char cx=%di:x8 q=@motto+2:char",
    "p flags low=+0(%di):b3@0/32 mid=+0(%di):b5@3/32 high=+0(%di):b8@8/32 "
    "top=+0(%di):b16@16/32 top8=+2(%di):b8@0/16 all=+0(%di):x32 p=%di:symbol",
    "p tally n=%di:s64 c=@counter:s64 c8=@counter:u8 m=@motto:string hi=@settings+3:u8",
    "r tally c=@counter:s64 ret=$retval:s64",
    "p dispatch fn=%di:symbol not_code=$stack:symbol tail=@motto+6:string",
]


def case_types_golden():
    """char, bitfields, @SYM[+|-OFFS], symbol."""
    r, lines = traced(TYPES_SPECS, [tgt("types")])
    check(r.returncode == 0 and r.stdout == TYPES_OUT and r.stderr == "", "run", show(r))
    golden("types.trace", "".join(normalise(l) + "\n" for l in lines))


def elf_symbol(path, name):
    """The ELF address of a function, as nm prints it."""
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == name and f[1] in "Tt":
            return int(f[0], 16)
    raise Fail("no %s in %s" % (name, path))


def case_addresses():
    """[OBJ:]0xADDR: ELF addresses in an object, absolute addresses."""
    if not shutil.which("nm"):
        print("no nm: skipped")
        sys.exit(77)
    pie = tgt("types")
    tally = elf_symbol(pie, "tally")
    fact = elf_symbol(pie, "fact")
    # the entry, the second instruction (push %rbp is one byte at -O0),
    # a return probe by address; default names as uprobe_events' ones
    r, lines = traced(["p tgt_types:0x%x n=%%di:s64" % tally,
                       "p:second tgt_types:0x%x" % (tally + 1),
                       "r %s:0x%x ret=$retval:s64" % (pie, fact)],
                      [pie])
    check(r.returncode == 0 and r.stderr == "" and r.stdout == TYPES_OUT, "run", show(r))
    lines = [normalise(l) for l in lines]
    want = ["tgt_types-TID [CPU] TS: p_tgt_types_0x%x: (tally+0x0/SIZE) n=3" % tally,
            "tgt_types-TID [CPU] TS: second: (tally+0x1/SIZE)"]
    want += ["tgt_types-TID [CPU] TS: r_tgt_types_0x%x: (fact+OFF/SIZE <- fact) ret=%d" % (fact, v)
             for v in (1, 2, 6)]
    want += ["tgt_types-TID [CPU] TS: r_tgt_types_0x%x: (main+OFF/SIZE <- fact) ret=24" % fact]
    check(lines == want, "events", "\n".join(lines), "want:\n" + "\n".join(want))
    # absolute addresses: a program that is not position-independent
    nopie = tgt("types_nopie")
    tally = elf_symbol(nopie, "tally")
    r, lines = traced(["p 0x%x n=%%di:s64" % tally, "p:abs2 0x%x" % (tally + 1)], [nopie])
    check(r.returncode == 0 and r.stderr == "", "run (no PIE)", show(r))
    lines = [normalise(l) for l in lines]
    check(lines == ["tgt_types_nopie-TID [CPU] TS: p_0x%x: (tally+0x0/SIZE) n=3" % tally,
                    "tgt_types_nopie-TID [CPU] TS: abs2: (tally+0x1/SIZE)"],
          "absolute address events", "\n".join(lines))
    # not an instruction boundary (inside "mov %rsp,%rbp")
    r = ukprobe(["trace", "-e", "p tgt_types:0x%x" % (elf_symbol(pie, "tally") + 2),
                 "--", pie])
    check(r.returncode == 1 and r.stderr == error_lines(
        "p tgt_types:0x%x" % (elf_symbol(pie, "tally") + 2), 12,
        "probe point is not an instruction boundary"), "mid-instruction address", show(r))


def case_glob_zlib():
    """Globs over a real library: one probe per function, perf's names."""
    specs = ["p libz.so.1:deflate* strm=%di", "r libz.so.1:deflate* ret=$retval:s32",
             "p:zb libz.so.1:compress* n=%di"]
    r, lines = traced(specs, [tgt("zlib")])
    check(r.returncode == 0 and r.stderr == "" and r.stdout == "bound 1013 ret 0\n", "run", show(r))
    entries, returns, zb = [], [], []
    for l in lines:
        m = parse_line(l)
        ev, where = m["event"], m["where"]
        if ev.endswith("__return"):
            fn = ev[:-len("__return")]
            check(where.endswith(" <- " + fn) and re.fullmatch(r" ret=-?\d+", m["args"]),
                  "return line %r" % l)
            returns.append(fn)
        elif ev.startswith("zb"):
            check(re.fullmatch(r"compress\w*\+0x[04]/0x[0-9a-f]+ \[libz\.so\.1\]", where),
                  "compress line %r" % l)
            zb.append((ev, where.split("+")[0]))
        else:
            check(ev.startswith("deflate") and
                  re.fullmatch(re.escape(ev) + r"\+0x[04]/0x[0-9a-f]+ \[libz\.so\.1\]", where),
                  "entry line %r" % l)
            entries.append(ev)
    check({"deflate", "deflateInit_", "deflateEnd"} <= set(entries), "deflate functions hit",
          "\n".join(lines))
    check(sorted(entries) == sorted(returns), "every entry returns", "\n".join(lines))
    # an explicit event name with a glob: zb, zb_1, ... one name per function
    names = {}
    for ev, fn in zb:
        check(names.setdefault(fn, ev) == ev, "one name per function: %s" % zb)
    check(sorted(names) == ["compress", "compress2", "compressBound"] and
          sorted(names.values()) == ["zb", "zb_1", "zb_2"], "zb names %s" % names)
    # stat: one row per function
    r = ukprobe(["stat", "-e", "p libz.so.1:deflate*", "--", tgt("zlib")])
    check(r.returncode == 0 and re.search(r"^ukprobes/deflateEnd +1 +0$", r.stdout, re.M) and
          re.search(r"^ukprobes/deflateInit_ +1 +0$", r.stdout, re.M), "stat rows", show(r))


def json_events(path):
    with open(path) as f:
        doc = json.load(f)
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "trace-event object")
    for e in doc["traceEvents"]:
        check(e.get("ph") in ("X", "i", "M") and isinstance(e.get("pid"), int) and
              isinstance(e.get("tid"), int) and isinstance(e.get("name"), str), "event %r" % e)
        if e["ph"] != "M":
            check(isinstance(e["ts"], (int, float)) and isinstance(e["args"], dict), "event %r" % e)
        if e["ph"] == "X":
            check(isinstance(e["dur"], (int, float)) and e["dur"] >= 0, "duration %r" % e)
    return doc["traceEvents"]


def case_json():
    """--json: valid trace-event JSON; entry/return pairs become "X"."""
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "t.json")
        r = ukprobe(["trace", "--json", js, "-e", "p fact n=%di:s64", "-e", "r fact r=$retval:s64",
                     "-e", "p letter c=%di:char", "-e", "r:tl tally", "--", tgt("types")])
        check(r.returncode == 0 and r.stderr == "" and r.stdout == TYPES_OUT,
              "no text trace without -o", show(r))
        ev = json_events(js)
        # the same with a text trace too
        out = os.path.join(d, "t.txt")
        r = ukprobe(["trace", "--json", js, "-o", out, "-e", "p letter", "--", tgt("types")])
        check(r.returncode == 0 and os.path.getsize(out) > 0, "json and -o", show(r))
        check([e["name"] for e in json_events(js) if e["ph"] == "i"] == ["p_letter_0"], "json 2")
    facts = sorted((e for e in ev if e["ph"] == "X"), key=lambda e: e["ts"])
    check([e["name"] for e in facts] == ["fact"] * 4, "four fact frames", facts)
    check([(e["args"]["entry"]["n"], e["args"]["return"]["r"]) for e in facts] ==
          [(4, 24), (3, 6), (2, 2), (1, 1)], "arguments and results", facts)
    for outer, inner in zip(facts, facts[1:]):
        check(outer["ts"] <= inner["ts"] and
              inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.001,
              "recursion nests", outer, inner)
    inst = [(e["name"], e["args"]) for e in ev if e["ph"] == "i"]
    check(inst == [("p_letter_0", {"c": "u"}), ("tl", {})], "instants", inst)
    meta = [e for e in ev if e["ph"] == "M"]
    check({(e["name"], e["args"]["name"]) for e in meta} ==
          {("thread_name", "tgt_types"), ("process_name", "tgt_types")}, "names", meta)
    check(len({(e["pid"], e["tid"]) for e in ev if e["ph"] != "M"}) == 1, "one thread")
    # entries whose return never comes (siglongjmp out of a fault):
    # instants, and the JSON is still whole
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "t.json")
        r = ukprobe(["trace", "--json", js, "-e", "p poke", "-e", "r poke", "-e", "p on_segv",
                     "--", tgt("segv")])
        check(r.returncode == 0 and r.stderr == "", "segv run", show(r))
        ev = json_events(js)
    names = [e["name"] for e in ev if e["ph"] != "M"]
    check(sorted(names) == ["p_on_segv_0"] * 3 + ["p_poke_0"] * 3 and
          all(e["ph"] == "i" for e in ev if e["ph"] != "M"), "unfinished frames", names)
    # several threads: each its own tid and name
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "t.json")
        r = ukprobe(["trace", "--json", js, "-e", "p work", "-e", "r work", "--",
                     tgt("threads"), "5"])
        ev = json_events(js)
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check(names == {"worker-0", "worker-1", "worker-2", "worker-3", "tgt_threads"}, "threads", names)
    check(len([e for e in ev if e["ph"] == "X" and e["name"] == "work"]) == 21, "21 work frames")


def case_dlopen():
    """SPECs on objects loaded later: dlopen()ed by name through the
    RUNPATH, unloaded and loaded again, and loaded by libc itself."""
    gconv = sorted(glob.glob("/usr/lib/*/gconv/UTF-16.so"))
    specs = ["p libz.so.1:compressBound n=%di:u64",
             "p libukp_plugin.so:plugin_* i=%di:s32 calls=@plugin_calls:s32",
             "r libukp_plugin.so:plugin_work r=$retval:s32"]
    if gconv:
        specs.append("p %s:gconv" % gconv[0])
    r, lines = traced(specs, [tgt("dlopen"), "--gconv"])
    # plugin_trap is ud2: it cannot be probed, and that is said once
    # (not once per load)
    check(r.returncode == 0 and r.stderr == "ukprobe: warning: %s: 1 of the 3 functions matching "
          "plugin_* cannot be probed (ukprobe probes shows why)\n%s^\n" %
          (specs[1], " " * len("ukprobe: warning: p libukp_plugin.so:")) and
          r.stdout == "bound 113\nplugin 11 21\nutf-16 6 bytes\n", "run", show(r))
    got = [normalise(l) for l in lines]
    want = ["tgt_dlopen-TID [CPU] TS: p_compressBound_0: (compressBound+0x0/SIZE [libz.so.1]) n=100"]
    for i in (1, 2):
        want += ["tgt_dlopen-TID [CPU] TS: plugin_other: (plugin_other+0x0/SIZE "
                 "[libukp_plugin.so]) i=%d calls=0" % i,
                 "tgt_dlopen-TID [CPU] TS: plugin_work: (plugin_work+0x0/SIZE "
                 "[libukp_plugin.so]) i=%d calls=0" % i]
    if gconv:
        want.append("tgt_dlopen-TID [CPU] TS: p_gconv_0: (gconv+0x0/SIZE [UTF-16.so])")
    # the return's caller is in the plugin, which may be unloaded before
    # it is symbolized: only the value is compared
    rets = [l for l in got if "r_plugin_work_0" in l]
    check([l.split(")")[-1] for l in rets] == [" r=10", " r=20"], "returns", "\n".join(got))
    check([l for l in got if "r_plugin_work_0" not in l] == want, "events", "\n".join(got),
          "want:\n" + "\n".join(want))
    # counted over both loads, under one name
    r = ukprobe(["stat"] + sum((["-e", x] for x in specs[:2]), []) + ["--", tgt("dlopen")])
    check(r.returncode == 0 and re.search(r"^ukprobes/plugin_other +2 +0$", r.stdout, re.M) and
          re.search(r"^ukprobes/p_compressBound_0 +1 +0$", r.stdout, re.M), "stat", show(r))
    # an object that exists but is never loaded: the program runs, and
    # ukprobe says the probe never was in place
    plugin = os.path.join(TARGETS, "libukp_plugin.so")
    spec = "p:pw %s:plugin_work" % plugin
    r = ukprobe(["trace", "-e", spec, "-e", "p add", "--", tgt("basic")])
    check(r.returncode == 3 and r.stderr == "ukprobe: warning: %s: %s was never loaded: the "
          "probe was not registered\n%s^\n" % (spec, plugin, " " * len("ukprobe: warning: p:pw ")),
          "never loaded", show(r))
    r = ukprobe(["stat", "-e", spec, "-e", "p add", "--", tgt("basic")])
    check(re.search(r"^ukprobes/pw +<not registered> +-$", r.stdout, re.M) and
          re.search(r"^ukprobes/p_add_0 +3 +0$", r.stdout, re.M), "stat: never loaded", show(r))


PROBES_HEADER = "%-36s %-18s %-44s %-28s %s" % ("EVENT", "ADDRESS", "PROBE POINT", "ELF ADDRESS",
                                               "OPTIMIZED")
PROBES_ROW = re.compile(r"^(?P<event>\S+) +(?P<addr>0x[0-9a-f]+|-) +(?P<point>\S+(?: \[[^]]+\])?"
                        r"(?: \(each match\))?) +(?P<elf>\S+) +(?P<opt>jump|ftrace|no: .*)?"
                        r"(?P<note>(?:pending|cannot probe): .*)?$")


def probes_rows(text):
    lines = text.splitlines()
    check(lines and lines[0].rstrip() == PROBES_HEADER.rstrip(), "probes header", text)
    rows = []
    for l in lines[1:]:
        m = PROBES_ROW.match(l)
        check(m, "probes row %r" % l)
        rows.append(m.groupdict())
    return rows


def nm_functions(path, dynamic=False):
    """{name: ELF address} of the defined functions of an ELF file."""
    out = subprocess.run(["nm"] + (["-D"] if dynamic else []) + ["--defined-only", path],
                         capture_output=True, text=True, check=True).stdout
    funcs = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TtWi":
            funcs.setdefault(f[2].split("@")[0], int(f[0], 16))
    return funcs


def case_probes():
    """ukprobe probes: what SPECs resolve to (main() never runs), and the
    functions of an object."""
    if not shutil.which("nm"):
        print("no nm: skipped")
        sys.exit(77)
    plugin = os.path.join(TARGETS, "libukp_plugin.so")
    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "ran")
        r = ukprobe(["probes", "-e", "p add", "-e", "r:ng negate", "-e", "p norm+4",
                     "-e", "p:lz libz.so.1:deflate*", "-e", "p %s:plugin_work" % plugin,
                     "-e", "p %s:plugin_*" % plugin,
                     "--", tgt("basic"), "--marker", marker])
        check(r.returncode == 0 and r.stderr == "", "run", show(r))
        check(not os.path.exists(marker), "main() did not run")
    rows = probes_rows(r.stdout)
    funcs = nm_functions(tgt("basic"))
    mine = {row["event"]: row for row in rows}
    for ev, fn, off in (("ukprobes/p_add_0", "add", 0), ("ukprobes/ng", "negate", 0),
                        ("ukprobes/p_norm_4", "norm", 4)):
        row = mine.get(ev)
        check(row and row["point"].startswith("%s+0x%x/0x" % (fn, off)) and
              row["elf"] == "tgt_basic:0x%x" % (funcs[fn] + off) and row["addr"] != "-" and
              row["opt"] and not row["note"], "row of %s" % ev, r.stdout)
    # add() at -O0 starts with push/mov/mov: room for a jump
    check(mine["ukprobes/p_add_0"]["opt"] == "jump", "add is jump-optimized", r.stdout)
    lz = [row for row in rows if row["event"].startswith("ukprobes/lz")]
    check(len(lz) >= 5 and all(row["point"].startswith("deflate") and
                               row["point"].endswith("[libz.so.1]") for row in lz),
          "a glob's rows", r.stdout)
    pend = [row for row in rows if row["note"]]
    check([(row["event"], row["point"], row["elf"], row["note"]) for row in pend] ==
          [("ukprobes/p_plugin_work_0", "plugin_work+0x0", "libukp_plugin.so:0x%x" %
            nm_functions(plugin)["plugin_work"], "pending: not loaded yet, probed when it is"),
           ("ukprobes/plugin_*", "plugin_* (each match)", "libukp_plugin.so",
            "pending: not loaded yet, probed when it is")], "pending rows", r.stdout)
    # a library: every function of libz, at nm's addresses
    r = ukprobe(["probes", "libz.so.1"])
    check(r.returncode == 0 and r.stderr == "", "probes libz.so.1", show(r))
    rows = probes_rows(r.stdout)
    check(all(row["opt"] in ("jump", "ftrace") or row["opt"].startswith("no: ")
              for row in rows), "every function says how it is probed", r.stdout)
    # --no-optimize: breakpoints only, and it says so
    r = ukprobe(["probes", "--no-optimize", "libz.so.1", "compress*"])
    nrows = probes_rows(r.stdout)
    check(r.returncode == 0 and len(nrows) == 3 and
          all(row["opt"] == "no: optimization is turned off" for row in nrows),
          "--no-optimize", show(r))
    zpath = sorted(glob.glob("/usr/lib/*/libz.so.1") + glob.glob("/lib/*/libz.so.1"))
    if zpath:
        zf = nm_functions(zpath[0], dynamic=True)
        got = {row["event"].split("/")[1]: int(row["elf"].split(":0x")[1], 16) for row in rows}
        check(set(got) == set(zf) and all(got[f] in (zf[f], zf[f] + 4) for f in got),
              "libz's functions", r.stdout)
    # a glob; a function that cannot be probed, and why
    r = ukprobe(["probes", plugin, "plugin_*"])
    rows = probes_rows(r.stdout)
    check(r.returncode == 0 and
          sorted((row["event"], row["note"] or "") for row in rows) ==
          [("ukprobes/plugin_other", ""),
           ("ukprobes/plugin_trap", "cannot probe: probe point is not an instruction boundary "
            "(exception instruction)"), ("ukprobes/plugin_work", "")], "plugin_*", show(r))
    # a program, and -o
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "list")
        r = ukprobe(["probes", "-o", out, tgt("types"), "fac?"])
        with open(out) as f:
            rows = probes_rows(f.read())
    check(r.returncode == 0 and r.stdout == "" and [row["event"] for row in rows] ==
          ["ukprobes/fact"], "a program", show(r))
    # errors
    for args, rc, err in (
            (["probes"], 2, "ukprobe: error: nothing to show"),
            (["probes", "-f", "libz.so.1"], 2,
             "ukprobe: error: unknown option -f\nTry 'ukprobe probes --help'.\n"),
            (["probes", "--json", "x", "libz.so.1"], 2,
             "ukprobe: error: option '--json' is not for ukprobe probes"),
            (["probes", "libnosuch.so.7"], 1,
             "ukprobe: error: cannot load libnosuch.so.7: libnosuch.so.7: cannot open shared "
             "object file"),
            (["probes", "libz.so.1", "nosuch*"], 1,
             "ukprobe: error: no function matches nosuch* in libz.so.1\n"),
            (["probes", "/nonexistent/libx.so"], 1, "ukprobe: error: /nonexistent/libx.so: no such file"),
            (["probes", "-e", "p nosuchfn", "--", tgt("basic")], 1,
             error_lines("p nosuchfn", 2, "symbol nosuchfn not found in the program or its "
                         "libraries"))):
        r = ukprobe(args)
        check(r.returncode == rc and r.stderr.startswith(err) and not r.stdout, " ".join(args),
              show(r))


MANPAGES = {
    "ukprobe.1": ["ukprobe trace", "ukprobe stat", "ukprobe probes", "$retval", ".BI @ SYM",
                  ".RI [ OBJ :] 0x ADDR", ".B symbol", ".B char", ".BI b WIDTH", "glob",
                  "EXIT STATUS",
                  "ukprobe\\-trace", "ukprobe\\-stat", "ukprobe\\-probes", "dlopen"],
    "ukprobe-trace.1": ["\\-e", "\\-o", "\\-\\-json", "\\-f", "\\-\\-follow", "Perfetto",
                        "\\-\\-no\\-optimize",
                        "\\(dqph\\(dq:\\(dqX\\(dq"],
    "ukprobe-stat.1": ["\\-e", "\\-o", "\\-f", "MISSED", "<not registered>",
                       "\\-\\-no\\-optimize"],
    "ukprobe-probes.1": ["\\-e", "\\-o", "OBJ", "GLOB", "ELF ADDRESS", "ukprobe\\-host",
                         "cannot probe", "OPTIMIZED", "\\-\\-no\\-optimize"],
}


def case_manpage():
    """Every man page is there, says what its command does, and renders
    without warnings."""
    doc = os.path.dirname(os.environ["UKP_MANPAGE"])
    groff = shutil.which("groff")
    for page, words in MANPAGES.items():
        path = os.path.join(doc, page)
        with open(path) as f:
            text = f.read()
        for word in words:
            check(word in text, "%s mentions %s" % (page, word))
        if groff:
            r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", path], capture_output=True,
                               text=True)
            check(r.returncode == 0 and r.stderr == "", "groff warnings in %s" % page, r.stderr)
    if not groff:
        print("no groff: rendering not checked")
    # every command's --help names its page
    for cmd in ("trace", "stat", "probes"):
        r = ukprobe([cmd, "--help"])
        check("See ukprobe-%s(1)." % cmd in r.stdout, "%s --help names its page" % cmd, show(r))


def case_return_everything():
    """r PROG:* on an ordinary -O2 -g program: the ELF entry point and the
    .cold part are not return-probed (the library refuses them, and says
    why), every other function is; the program's output and exit status
    are those of a run without probes. p PROG:* keeps them."""
    prog = tgt("cold")
    words = ["delta", "be", "alpha"]
    plain = subprocess.run([prog] + words, capture_output=True, text=True, timeout=60)
    check(plain.returncode == 4 and plain.stdout.startswith("argc 4 checksum"),
          "the plain run", show(plain))
    r = ukprobe(["stat", "-e", "r tgt_cold:*", "--", prog] + words)
    check(r.returncode == plain.returncode, "exit status under probes", show(r), show(plain))
    check(r.stdout.startswith(plain.stdout), "output under probes", show(r), show(plain))
    # fib recurses deeper than maxactive: hits + misses (GCC turns some of
    # its recursion into a loop, so the count of calls is its own)
    hits = {ev: int(h) + int(m) for ev, h, m in
            re.findall(r"^ukprobes/(\w+)\s+(\d+)\s+(\d+)$", r.stdout, re.M)}
    check(hits.get("main__return") == 1 and hits.get("checksum__return") == 1 and
          hits.get("fib__return", 0) > 0 and
          hits.get("report_rare__return") == 3 and hits.get("by_length__return", 0) > 0,
          "every function's returns are counted", show(r))
    check("_start__return" not in hits and "checksum_cold__return" not in hits,
          "_start and checksum.cold are not probed", show(r))
    skipped = 2 if "checksum.cold" in nm_functions(prog) else 1
    check("%d of the" % skipped in r.stderr and
          "functions matching * cannot be probed" in r.stderr,
          "the skipped functions are counted", show(r))
    # ukprobe probes says why
    r = ukprobe(["probes", "-e", "r tgt_cold:*", "--", prog])
    check(r.returncode == 0 and r.stderr == "", "probes r", show(r))
    rows = {row["event"]: row for row in probes_rows(r.stdout)}
    check(rows["ukprobes/_start__return"]["note"] ==
          "cannot probe: cannot put a return probe here: the ELF entry point: the kernel "
          "enters it with argc where a return address would be", "_start's row", r.stdout)
    gcc = "checksum.cold" in nm_functions(prog)   # clang makes no .cold part
    check(not gcc or rows["ukprobes/checksum_cold__return"]["note"] ==
          "cannot probe: cannot put a return probe here: a .cold part of a function: "
          "reached by jumps, never called", ".cold's row", r.stdout)
    check(rows["ukprobes/checksum__return"]["addr"] != "-" and
          not rows["ukprobes/checksum__return"]["note"], "checksum's row", r.stdout)
    # Debian's python3 exports _start in .dynsym: every return probed
    py = os.path.realpath("/usr/bin/python3")
    if os.path.exists(py):
        script = "import json, re; print(sum(range(10)), json.dumps({'a': [1, 2]}), " \
                 "re.sub('b+', '-', 'abbbc'))"
        plain = subprocess.run([py, "-c", script], capture_output=True, text=True, timeout=60)
        r = ukprobe(["stat", "-e", "r %s:*" % os.path.basename(py), "--", py, "-c", script],
                    timeout=300)
        check(r.returncode == plain.returncode == 0 and r.stdout.startswith(plain.stdout) and
              "ended without the agent's final report" not in r.stderr,
              "r %s:*" % py, show(r), show(plain))
    # kprobes there are fine
    r = ukprobe(["probes", "-e", "p tgt_cold:*", "--", prog])
    rows = {row["event"]: row for row in probes_rows(r.stdout)}
    check(r.returncode == 0 and rows["ukprobes/_start"]["addr"] != "-" and
          not rows["ukprobes/_start"]["note"] and
          (not gcc or (rows["ukprobes/checksum_cold"]["addr"] != "-" and
                       not rows["ukprobes/checksum_cold"]["note"])),
          "p keeps them", show(r))


def case_program_names():
    """OBJ names the program as the user typed it: through a symlink (as
    /usr/bin/python3 -> python3.11), by its basename, found in PATH, by
    a relative path, and by its real file's name."""
    with tempfile.TemporaryDirectory() as d:
        alias = os.path.join(d, "ukt-alias")
        os.symlink(tgt("basic"), alias)
        specs = ["p:n/typed ukt-alias:add", "p:n/full %s:add" % alias,
                 "p:n/real tgt_basic:add", "p:n/rel ./ukt-alias:add"]
        for cmd, env in (([alias], None), (["./ukt-alias"], None),
                         (["ukt-alias"], dict(os.environ, PATH=d + ":/usr/bin:/bin"))):
            args = ["stat"]
            for sp in specs:
                args += ["-e", sp]
            r = ukprobe(args + ["--"] + cmd, cwd=d, env=env)
            check(r.returncode == 3 and r.stdout.startswith(BASIC_OUT % "world") and
                  all(re.search(r"^n/%s +3 +0$" % ev, r.stdout, re.M)
                      for ev in ("typed", "full", "real", "rel")) and r.stderr == "",
                  "names of %s" % cmd, show(r))
    # the real python3 symlink of Debian
    py = "/usr/bin/python3"
    if os.path.islink(py) and os.path.basename(os.path.realpath(py)) != "python3":
        real = os.path.basename(os.path.realpath(py))
        for cmd, env in (([py], None), (["python3"], dict(os.environ, PATH="/usr/bin:/bin"))):
            r = ukprobe(["stat", "-e", "p:n/short python3:PyObject_Malloc",
                         "-e", "p:n/real %s:PyObject_Malloc" % real, "--"] + cmd +
                        ["-c", "print('hi')"], env=env)
            m = re.findall(r"^n/(short|real) +(\d+) +0$", r.stdout, re.M)
            check(r.returncode == 0 and r.stdout.startswith("hi\n") and len(m) == 2 and
                  m[0][1] == m[1][1] and int(m[0][1]) > 0 and r.stderr == "",
                  "python3:PyObject_Malloc for %s" % cmd, show(r))


def main():
    case = sys.argv[1]
    fn = globals().get("case_" + case)
    if not fn:
        print("unknown case %s" % case)
        return 1
    try:
        fn()
    except Fail as e:
        print("FAIL %s: %s" % (case, e))
        return 1
    print("ok %s" % case)
    return 0


if __name__ == "__main__":
    sys.exit(main())

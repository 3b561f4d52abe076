#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The torture tier: real Debian programs under thousands of probes.

Each case runs a real program (Python's own regression tests, the sqlite3
shell on a SQL workload, zlib round trips through pigz, coreutils) twice:
once as it is, once under `ukprobe stat` with probes put by one of three
modes, and passes when the exit status and the (normalised) output are the
same:

  entry   every function entry of an object kprobed   (p OBJ:*)
  return  every function of an object kretprobed      (r OBJ:*)
  insn    N instruction boundaries chosen at random   (p OBJ:0xADDR ...)
          from objdump's disassembly of the object's function symbols,
          with a seed that is printed
  pair    every function of an object kprobed and     (p OBJ:* r OBJ:*)
          kretprobed, and the counts compared: a function returns as
          often as it was entered, but for those the target names (the
          calls still on a stack when the program exits, or that a panic
          unwound, or that never return)

  torture.py [--tier short|long] [--seed N] [--case GLOB]... [--list]
             [--keep DIR] [--ukprobe PATH] [--timeout-factor F]

Every case prints the exact ukprobe command it ran (random probes go to a
file of SPECs, given with -E; --keep keeps it, and the outputs). The last
line is "torture: N passed, N failed". Exit status: 0 when every case
passed, 1 otherwise, 77 when nothing could run (missing programs).

Go's gofmt (built from golang-go's sources, and golang-go's own: static
and stripped) and rustc (Debian's, its std and compiler shared libraries)
are probed in pair mode.

The short tier is what scripts/test.sh runs (fixed seed, a few minutes);
the long tier runs by hand, and its results go to doc/torture.md.
"""
import argparse
import bisect
import difflib
import fnmatch
import glob
import hashlib
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SEED = 13

PYTHON = "/usr/bin/python3.11"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"
LIBSQLITE = "/lib/x86_64-linux-gnu/libsqlite3.so.0"

# ------------------------------------------------------------ objects

# Instructions the library refuses by design (doc/api.md, "Errors"): they are
# never chosen, so that a refusal of anything else is a finding.
REFUSED_MNEMONICS = {
    "int3", "int", "int1", "icebp", "ud0", "ud1", "ud2", "into",
    "ljmp", "lcall", "lret", "lretq", "iret", "iretq", "iretw", "iretl",
    "xbegin",
}
REFUSED_PATTERNS = [
    re.compile(r"\bdata16\b.*\b(j\w+|call\w*|ret\w*|loop\w*)\b"),  # 0x66 branches
    re.compile(r"\b(jmp|call)\w*\s+\*%[fg]s:"),                     # through %fs/%gs
    re.compile(r"\b(jmpw|callw|retw)\b"),
]
INSN_RE = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")


def elf_functions(path, names=None):
    """(start, size, name) of the sized, defined FUNC symbols of the file
    (.symtab and .dynsym), one per start address; names, when given, gets
    every name's (start, size)."""
    out = subprocess.run(["readelf", "-W", "--syms", "--dyn-syms", path],
                         capture_output=True, text=True, check=True).stdout
    funcs = {}
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) < 8 or f[3] != "FUNC" or f[6] == "UND":
            continue
        start, size = int(f[1], 16), int(f[2], 0)
        if size <= 0:
            continue
        name = f[7].split("@")[0]
        funcs.setdefault(start, (start, size, name))
        if names is not None:
            names[name] = (start, size)
    return sorted(funcs.values())


def unprobeable(ukprobe, path):
    """The functions `ukprobe probes OBJ '*'` says cannot be probed
    (the library's blacklist: glibc's functions that run with every
    signal blocked, ...)."""
    out = subprocess.run([ukprobe, "probes", path, "*"], capture_output=True, text=True).stdout
    return {line.split()[0].split("/", 1)[1] for line in out.splitlines()
            if "cannot probe" in line}


def instruction_boundaries(ukprobe, path):
    """Every instruction inside a function symbol that the library should
    accept, as (address, function, text), from objdump's disassembly.
    A function whose start is not an instruction of the listing (objdump
    lost sync) is left out whole, and so are the functions the library
    refuses whole."""
    names = {}
    funcs = elf_functions(path, names)
    refused = [names[n] for n in unprobeable(ukprobe, path) if n in names]
    dis = subprocess.run(["objdump", "-d", "-w", "--no-show-raw-insn", path],
                         capture_output=True, text=True, check=True).stdout
    insns = {}
    for line in dis.splitlines():
        m = INSN_RE.match(line)
        if m:
            insns[int(m.group(1), 16)] = m.group(2).strip()
    addrs = sorted(insns)
    out = []
    for start, size, name in funcs:
        if start not in insns or any(a <= start < a + n for a, n in refused):
            continue
        i = bisect.bisect_left(addrs, start)
        while i < len(addrs) and addrs[i] < start + size:
            text = insns[addrs[i]]
            words = text.replace(",", " ").split()
            mnem = next((w for w in words if w not in
                         ("lock", "rep", "repz", "repnz", "repe", "repne", "bnd",
                          "notrack", "cs", "ds", "ss", "es", "fs", "gs", "data16",
                          "addr32", "rex", "rex.W")), "")
            if (mnem not in REFUSED_MNEMONICS and not mnem.startswith("(bad)")
                    and not any(p.search(text) for p in REFUSED_PATTERNS)):
                out.append((addrs[i], name, text))
            i += 1
    return out


_BOUNDARIES = {}


def random_insns(ukprobe, path, n, rng):
    if path not in _BOUNDARIES:
        _BOUNDARIES[path] = instruction_boundaries(ukprobe, path)
    all_ = _BOUNDARIES[path]
    return sorted(rng.sample(all_, min(n, len(all_))))

# ------------------------------------------------------- normalising


def strip_ukprobe(text):
    """The program's stderr without ukprobe's own messages (a message and
    the SPEC/caret lines under it), and those messages."""
    kept, ours = [], []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if lines[i].startswith("ukprobe: "):
            ours.append(lines[i].rstrip("\n"))
            i += 1
            while i < len(lines) and re.match(r"^ *\^\s*$", lines[i]):
                i += 1
            continue
        kept.append(lines[i])
        i += 1
    return "".join(kept), ours


def norm_common(text, tmp):
    text = text.replace(tmp, "<TMP>")
    return text


def norm_python(text, tmp):
    """regrtest's output: times, load averages, its cwd and pids change
    from run to run."""
    text = norm_common(text, tmp)
    out = []
    for line in text.splitlines():
        line = re.sub(r"^\d+:\d\d:\d\d (load avg: [\d.]+ )?", "", line)
        # the next progress line names the previous test's result
        # ("[5/5] test_x -- test_y passed in 1 min 2 sec"): a passed test
        # only when it took over 30 s (with probes it may), any other
        # always, with its time only when over 30 s
        line = re.sub(r" -- test_\w+ passed in .*$", "", line)
        line = re.sub(r"( -- test_\w+ [a-z ]+( \([^)]*\))?) in (\d+ min )?[\d.]+ (sec|ms)$",
                      r"\1", line)
        line = re.sub(r" in (\d+ min )?[\d.]+ (sec|ms)\b", " in <T>", line)
        line = re.sub(r"test_python_\d+", "test_python_<PID>", line)
        line = re.sub(r"\(\d+(\.\d+)? (sec|ms)\)", "(<T>)", line)
        if re.match(r"^(Total duration|Ran \d+ tests? in)", line):
            continue
        if re.match(r"^(== CPU count|== Python build|== encodings|== resources"
                    r"|== cwd|== hash algorithm|== platform|== Python|== fs encoding"
                    r"|== Threads|== Seed)", line):
            continue
        # regrtest names the slowest tests and the ones still running:
        # which they are depends on the load
        if re.match(r"^(\d+ slowest tests?:|- test_\w+: |running: |.*\(\d+ sec\)$)", line):
            continue
        # a test that took over 30 s gets a line of its own ("test_x
        # passed in 31.2 sec"): with probes in every child python it may
        if re.match(r"^test_\w+ (passed|failed|skipped)( \(.*\))? in <T>$", line):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def junit_results(path):
    """(test, outcome) of regrtest's --junit-xml, in order; outcome is
    ok, skipped, failure or error (with the message's first line)."""
    if not os.path.exists(path):
        return ["<no junit file>"]
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return ["<junit unreadable: %s>" % e]
    out = []
    for tc in root.iter("testcase"):
        what = "ok"
        for child in tc:
            if child.tag in ("skipped", "failure", "error"):
                msg = (child.get("message") or "").splitlines()[:1]
                what = child.tag + (": " + msg[0] if msg and child.tag != "skipped" else "")
        out.append("%s %s %s" % (tc.get("name"), tc.get("result"), what))
    return out

# ------------------------------------------------------------ targets


class Target:
    def __init__(self, name, argv, probe_objs, norm=norm_common, files=(),
                 follow=False, setup=None, shell=False, needs=(), env=None,
                 pending=(), reentered=(), exit_slack=0, min_timeout=60):
        self.name = name
        self.argv = argv              # {tmp} is the case's directory, {work} the run's
        self.probe_objs = probe_objs  # mode -> [object names (as ukprobe takes them)]
        self.norm = norm
        self.files = files            # files of {tmp} compared too: (name, reader)
        self.follow = follow
        self.setup = setup            # makes the inputs in {tmp}
        self.needs = needs            # programs that must exist
        self.env = env or {}          # the program's environment, besides the run's
        # pair mode: the events (globs on the stat table's names) that may
        # return fewer times than they were entered, and those entered
        # past their start (Duff's devices), which may return more often
        self.pending = pending
        self.reentered = reentered
        # and how many calls of any other function may be in flight at the
        # exit (on threads or goroutines the exit does not wait for)
        self.exit_slack = exit_slack
        # a hung run's floor: these programs take a second without probes,
        # and their thousands of breakpoints' setup takes seconds of CPU
        # (tens of seconds under a loaded machine's share)
        self.min_timeout = min_timeout

    def args(self, tmp):
        work = os.path.dirname(tmp)
        return [a.replace("{tmp}", tmp).replace("{work}", work) for a in self.argv]

    def objs(self, mode):
        objs = self.probe_objs[mode]
        return objs() if callable(objs) else objs


def setup_sql(tmp, rng):
    sql = os.path.join(HERE, "workload.sql")
    shutil.copy(sql, os.path.join(tmp, "workload.sql"))


def make_data(tmp, size, seed):
    """A compressible but not trivial file: words from a fixed vocabulary
    in an order given by the seed, with some random bytes."""
    rng = random.Random(seed)
    words = [("%x" % rng.getrandbits(rng.randint(4, 40))) for _ in range(4000)]
    out = bytearray()
    while len(out) < size:
        if rng.random() < 0.02:
            out += rng.randbytes(rng.randint(1, 300))
        else:
            out += (" ".join(rng.choice(words) for _ in range(rng.randint(1, 20))) + "\n").encode()
    with open(os.path.join(tmp, "data"), "wb") as f:
        f.write(out[:size])


def setup_zlib_short(tmp, rng):
    make_data(tmp, 3 << 20, 1)


def setup_zlib_long(tmp, rng):
    make_data(tmp, 32 << 20, 1)


def setup_sort(tmp, rng):
    make_data(tmp, 4 << 20, 2)


def python_target(name, modules, match=None):
    """regrtest on modules; match: the test id patterns to run (its
    --matchfile), or all of them."""
    def setup(tmp, rng):
        if match:
            with open(os.path.join(tmp, "match.txt"), "w") as f:
                f.write("\n".join(match) + "\n")
    return Target(
        name,
        [PYTHON, "-m", "test", "--junit-xml", "{tmp}/junit.xml", "--tempdir", "{tmp}/pytmp"] +
        (["--matchfile", "{tmp}/match.txt"] if match else []) + modules,
        {"entry": [PYTHON], "return": [PYTHON], "pair": [PYTHON], "insn": [PYTHON, LIBC]},
        norm=norm_python,
        files=(("junit.xml", junit_results),),
        follow=True,
        setup=setup,
        needs=(PYTHON,),
        # pair: the tests' child processes end inside these (sys.exit
        # and os._exit: the frames on the stack never return)
        pending=("Py_BytesMain", "Py_RunMain", "Py_Exit", "PyErr_PrintEx", "PyRun_*",
                 "_PyRun_*", "_PyEval_EvalFrameDefault"),
        exit_slack=2)


SQLITE_ARGV = ["/usr/bin/sqlite3", "-bail", "{tmp}/db.sqlite", ".read {tmp}/workload.sql"]
# pigz compresses with zlib's deflate (-n: no name nor time in the
# header, so the bytes depend on the data only), decompresses with its
# inflateBack, and gzip (its own code) checks the stream too.
ZLIB_SH = ("pigz -{level} -n -p 2 -c data > data.gz && sha256sum data.gz && pigz -d -c data.gz"
           " | cmp - data && gzip -d -c data.gz | cmp - data && pigz -l data.gz && pigz -t data.gz"
           " && pigz -1 -n -c data | pigz -d | sha256sum && echo zlib round trip ok")
SORT_SH = ("sort data | sha256sum && sort -r -k2 -t ' ' --parallel=2 -S 1M data | sha256sum && "
           "sort -u -n data | sha256sum && ls -R /usr/lib/python3.11 | sha256sum")

# The short tier: whole modules that take a second or two, and the parts
# of test_signal and test_subprocess that do not wait for timeouts
# (signals between processes, wakeup fds, sigwait, vfork+exec children).
PY_SHORT = ["test_json", "test_thread", "test_zlib", "test_signal", "test_subprocess"]
PY_SHORT_MATCH = [
    "test.test_json.*", "test.test_thread.*", "test.test_zlib.*",
    "test.test_signal.PosixTests.*", "test.test_signal.WakeupSignalTests.*",
    "test.test_signal.PendingSignalsTests.test_sigwait*",
    "test.test_signal.PendingSignalsTests.test_pthread*",
    "test.test_signal.PidfdSignalTest.*",
    "test.test_signal.SiginterruptTest.test_siginterrupt_on",
    "test.test_subprocess.ProcessTestCase.test_call*",
    "test.test_subprocess.ProcessTestCase.test_communicate*",
    "test.test_subprocess.POSIXProcessTestCase.test_send_signal*",
    "test.test_subprocess.POSIXProcessTestCase.test_preexec*",
    "test.test_subprocess.POSIXProcessTestCase.test_restore_signals*",
]
PY_LONG = ["test_json", "test_re", "test_zlib", "test_thread", "test_os", "test_threading",
           "test_signal", "test_subprocess", "test_fork1", "test_pickle", "test_set",
           "test_itertools", "test_queue", "test_select", "test_unicode", "test_math",
           "test_long", "test_exceptions", "test_gzip", "test_struct", "test_dict"]


# ----------------------------------------------------- Go and Rust

GO = "/usr/bin/go"
GOFMT_STATIC = "/usr/lib/go-1.19/bin/gofmt"  # golang-go's, as Debian built it
RUSTC = "/usr/bin/rustc"  # Debian's (a rustup one may come first in PATH)


def goroot():
    return subprocess.run([GO, "env", "GOROOT"], capture_output=True, text=True,
                          check=True).stdout.strip()


def build_gofmt(work):
    """Go's gofmt, from the sources golang-go installs, linked by the
    system's linker (a dynamic executable: the agent cannot be preloaded
    into Go's default static one yet). A command inside GOROOT is built
    without cgo's runtime (its threads would have no C library state), so
    it is built from a copy: its internal/diff and the vendored
    golang.org/x/sync/semaphore beside it, the one import renamed."""
    out = os.path.join(work, "gofmt")
    if os.path.exists(out):
        return out
    src = goroot() + "/src"
    gp = os.path.join(work, "gopath")
    main = os.path.join(gp, "src", "gofmt")
    os.makedirs(os.path.join(main, "internal", "diff"))
    for f in os.listdir(os.path.join(src, "cmd", "gofmt")):
        if f.endswith(".go") and not f.endswith("_test.go"):
            text = open(os.path.join(src, "cmd", "gofmt", f)).read()
            with open(os.path.join(main, f), "w") as g:
                g.write(text.replace('"internal/diff"', '"gofmt/internal/diff"'))
    shutil.copy(os.path.join(src, "internal", "diff", "diff.go"),
                os.path.join(main, "internal", "diff"))
    shutil.copytree(os.path.join(src, "cmd", "vendor", "golang.org", "x", "sync", "semaphore"),
                    os.path.join(gp, "src", "golang.org", "x", "sync", "semaphore"))
    env = dict(base_env(), GOPATH=gp, GO111MODULE="off", GOFLAGS="", CGO_ENABLED="1", CC="gcc",
               GOCACHE=os.path.join(work, "gocache"))
    files = sorted(f for f in os.listdir(main) if f.endswith(".go"))
    subprocess.run([GO, "build", "-ldflags=-linkmode=external", "-o", out] + files, cwd=main,
                   env=env, check=True, capture_output=True)
    return out


# gofmt -s -d over these: gofmt's own test inputs (reformatted,
# simplified: diffs), go/parser's (syntax errors), and in the long tier
# go/token's sources; and a file of 15 errors, past the 10 after which
# go/parser gives up by a panic that its ParseFile recovers (the frames it
# unwinds are probed)
GOFMT_SHORT = ["cmd/gofmt/testdata/" + f + ".input" for f in
               ("typeswitch", "go2numbers", "typeparams", "rewrite5", "tabs", "crlf", "stdin1")] + \
              ["go/parser/testdata/" + f for f in
               ("commas.src", "issue3106.src", "tparams.go2")]


def setup_gofmt(tier, build=True):
    def setup(tmp, rng):
        if build:
            build_gofmt(os.path.dirname(tmp))
        src, d = goroot() + "/src", os.path.join(tmp, "src")
        os.makedirs(d)
        if tier == "short":
            inputs = [os.path.join(src, f) for f in GOFMT_SHORT]
        else:
            inputs = sorted(glob.glob(src + "/cmd/gofmt/testdata/*.input") +
                            glob.glob(src + "/go/parser/testdata/*.src") +
                            glob.glob(src + "/go/parser/testdata/*.go2") +
                            glob.glob(src + "/go/token/*.go"))
        for f in inputs:
            rel = os.path.relpath(f, src).replace("/", "_").replace(".", "_")
            shutil.copy(f, os.path.join(d, rel + ".go"))
        with open(os.path.join(d, "bailout.go"), "w") as f:
            f.write("package bailout\n" + "".join("var v%d = ]\n" % i for i in range(15)))
    return setup


LIBSQLITE_A = "/usr/lib/x86_64-linux-gnu/libsqlite3.a"


def setup_sql_static(tmp, rng):
    """sqlite_static.c linked statically (glibc's libc.a, Debian's
    libsqlite3.a): the freestanding agent's program, every function of
    SQLite and of the C library in it."""
    work = os.path.dirname(tmp)
    out = os.path.join(work, "sqlite_static")
    if not os.path.exists(out):
        subprocess.run(["gcc", "-O2", "-static", "-o", out, os.path.join(HERE, "sqlite_static.c"),
                        "-l:libsqlite3.a", "-lm"], check=True, capture_output=True)
    setup_sql(tmp, rng)


def rust_libs():
    """rustc's own Rust objects: std and the compiler (librustc_driver),
    shared libraries whose exported functions have legacy-mangled names."""
    out = subprocess.run(["ldd", RUSTC], capture_output=True, text=True, check=True).stdout
    libs = [m[1] for m in re.finditer(r"=> (\S*/lib(?:std|rustc_driver)-[0-9a-f]+\.so) ", out)]
    if len(libs) != 2:
        raise RuntimeError("ldd %s: no libstd-*.so and librustc_driver-*.so in:\n%s" % (RUSTC, out))
    return sorted(libs, key=lambda p: "std" not in os.path.basename(p))


def setup_rustc(tmp, rng):
    shutil.copy(os.path.join(ROOT, "tests", "cli", "targets", "panics.rs"), tmp)


def setup_rustc_panic(tmp, rng):
    with open(os.path.join(tmp, "ice.rs"), "w") as f:
        f.write('fn main() {\n    let x: u32 = "a";\n}\n')


def norm_backtrace(text, tmp):
    """A Rust backtrace's addresses change from run to run."""
    return re.sub(r"0x[0-9a-f]+", "0x<A>", norm_common(text, tmp))


def targets(tier):
    py = (python_target("python", PY_SHORT, PY_SHORT_MATCH) if tier == "short"
          else python_target("python", PY_LONG))
    sqlite = Target("sqlite3", SQLITE_ARGV,
                    {"entry": [LIBSQLITE], "return": [LIBSQLITE], "pair": [LIBSQLITE],
                     "insn": [LIBSQLITE, LIBC]},
                    setup=setup_sql, needs=("/usr/bin/sqlite3",))
    zlib = Target("zlib", ["/bin/sh", "-c", ZLIB_SH.format(level=6 if tier == "short" else 9)],
                  {"entry": [LIBZ], "return": [LIBZ], "insn": [LIBZ]},
                  setup=setup_zlib_short if tier == "short" else setup_zlib_long,
                  follow=True, needs=("/usr/bin/pigz",))
    core = Target("coreutils", ["/bin/sh", "-c", SORT_SH],
                  {"entry": [LIBC], "return": [LIBC], "insn": [LIBC]},
                  setup=setup_sort, follow=True)
    # gofmt: returns fewer than entries in the runtime (its scheduler's
    # functions never return, goroutines are parked at the exit), in cgo's
    # thread starts, on the main goroutine's stack at os.Exit, and in the
    # parser (the panic of bailout.go); and a few calls anywhere else: a
    # file's goroutine hands the output on to the next one, which lets
    # main exit, before it releases its semaphore and returns (seen: one
    # main.(*sequencer).Add.func2 in flight)
    # the same workload in a statically linked program (the freestanding
    # agent, loaded by ptrace at the program's start)
    sqlite_static = Target("sqlite3_static",
                           ["{work}/sqlite_static", "{tmp}/db.sqlite", "{tmp}/workload.sql"],
                           {"entry": ["sqlite_static"], "return": ["sqlite_static"]},
                           setup=setup_sql_static, needs=(LIBSQLITE_A,))
    gofmt = Target("gofmt", ["{work}/gofmt", "-s", "-d", "{tmp}/src"],
                   {m: ["gofmt"] for m in ("entry", "return", "pair")},
                   setup=setup_gofmt(tier), needs=(GO,),
                   pending=("runtime_*", "crosscall_amd64", "threadentry", "main_main", "os_Exit",
                            "syscall_Exit", "go_parser_*"),
                   reentered=("runtime_duffzero", "runtime_duffcopy"), exit_slack=4,
                   min_timeout=300)
    # Debian's own gofmt: Go's default build, static and stripped (the
    # freestanding agent in Go's threads, functions by Go's pclntab)
    gofmt_static = Target("gofmt_static", [GOFMT_STATIC, "-s", "-d", "{tmp}/src"],
                          {m: ["gofmt"] for m in ("entry", "return", "pair")},
                          setup=setup_gofmt(tier, build=False), needs=(GOFMT_STATIC,),
                          pending=("runtime_*", "main_main", "os_Exit", "syscall_Exit",
                                   "go_parser_*"),
                          # (the agent starts inside runtime.settls, at the
                          # system call that gives the first thread its
                          # thread pointer: one return without an entry)
                          reentered=("runtime_duffzero", "runtime_duffcopy", "runtime_settls"),
                          exit_slack=4, min_timeout=300)
    # rustc compiling a program (a Rust program of its own: std and the
    # compiler as shared libraries); main's stack at exit() is left, and
    # a call or two elsewhere may be (codegen's worker threads say they
    # are done before they end; not seen in 6 runs)
    rustc = Target("rustc", [RUSTC, "-C", "opt-level=0", "-o", "{tmp}/panics", "{tmp}/panics.rs"],
                   {m: rust_libs for m in ("entry", "return", "pair")}, setup=setup_rustc,
                   needs=(RUSTC,), env={"RUST_BACKTRACE": "0"},
                   pending=("rustc_driver__main", "std__process__exit",
                            "std__rt__lang_start_internal"), exit_slack=2, min_timeout=300)
    # rustc panicking at its first error (an internal compiler error on
    # request, -Z treat-err-as-bug): the panic unwinds through probed
    # frames of the compiler thread and is thrown again in main's, and
    # the default hook prints a backtrace of the frames (walked through
    # the pending returns)
    rustc_panic = Target("rustc_panic", [RUSTC, "-Z", "treat-err-as-bug=1", "-o", "{tmp}/ice",
                                         "{tmp}/ice.rs"],
                         {"pair": rust_libs}, setup=setup_rustc_panic, needs=(RUSTC,),
                         env={"RUSTC_BOOTSTRAP": "1", "RUST_BACKTRACE": "full"},
                         norm=norm_backtrace, pending=("*",), min_timeout=300)
    return {t.name: t for t in (py, sqlite, sqlite_static, zlib, core, gofmt, gofmt_static, rustc,
                                 rustc_panic)}


# (target, mode, random probes per object) of each tier
TIERS = {
    "short": [
        ("python", "entry", 0), ("python", "return", 0), ("python", "pair", 0),
        ("python", "insn", 1000),
        ("sqlite3", "entry", 0), ("sqlite3", "return", 0), ("sqlite3", "pair", 0),
        ("sqlite3", "insn", 1000),
        ("sqlite3_static", "entry", 0), ("sqlite3_static", "return", 0),
        ("zlib", "entry", 0), ("zlib", "return", 0), ("zlib", "insn", 500),
        ("coreutils", "entry", 0), ("coreutils", "return", 0), ("coreutils", "insn", 1000),
        ("gofmt", "pair", 0), ("gofmt_static", "pair", 0), ("rustc", "pair", 0),
        ("rustc_panic", "pair", 0),
    ],
    "long": [
        # (no python/pair here: the long set's fork tests make children
        # return from frames their parent entered, and their os._exit
        # leaves others pending, in numbers no per-function rule bounds)
        ("python", "entry", 0), ("python", "return", 0), ("python", "insn", 2000),
        ("sqlite3", "entry", 0), ("sqlite3", "return", 0), ("sqlite3", "pair", 0),
        ("sqlite3", "insn", 2000),
        ("sqlite3_static", "entry", 0), ("sqlite3_static", "return", 0),
        ("zlib", "entry", 0), ("zlib", "return", 0), ("zlib", "insn", 1000),
        ("coreutils", "entry", 0), ("coreutils", "return", 0), ("coreutils", "insn", 2000),
        ("gofmt", "entry", 0), ("gofmt", "return", 0), ("gofmt", "pair", 0),
        ("gofmt_static", "entry", 0), ("gofmt_static", "return", 0), ("gofmt_static", "pair", 0),
        ("rustc", "entry", 0), ("rustc", "return", 0), ("rustc", "pair", 0),
        ("rustc_panic", "pair", 0),
    ],
}

# ------------------------------------------------------------ running


def run(argv, cwd, env, timeout):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, start_new_session=True)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout after %ds" % timeout, e.stdout or b"", e.stderr or b""
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), \
        time.monotonic() - t0


def read_stat(path, rows=None):
    """events, hits, misses, and the events not counted/registered; rows,
    when given, gets every event's (hits, missed) by its name."""
    ev = hits = missed = 0
    odd = []
    try:
        lines = open(path).read().splitlines()[1:]
    except OSError:
        return 0, 0, 0, ["<no stat table>"]
    for line in lines:
        f = line.split()
        if len(f) == 3 and f[1].isdigit():
            ev += 1
            hits += int(f[1])
            missed += int(f[2])
            if rows is not None:
                rows[f[0].split("/", 1)[-1]] = (int(f[1]), int(f[2]))
        else:
            odd.append(line)
    return ev, hits, missed, odd


def pair_problems(t, rows):
    """pair mode: every function's entries against its returns (hits and
    misses: a return beyond maxactive is missed, not lost), by the
    target's rule; and the number of functions compared."""
    out, n = [], 0
    for name, (eh, em) in sorted(rows.items()):
        if name.endswith("__return") or name + "__return" not in rows:
            continue
        rh, rm = rows[name + "__return"]
        n += 1
        ent, ret = eh + em, rh + rm
        if ret > ent and not any(fnmatch.fnmatchcase(name, g) for g in t.reentered):
            out.append("%s returned %d times, entered %d times" % (name, ret, ent))
        elif ret + t.exit_slack < ent and not any(fnmatch.fnmatchcase(name, g)
                                                   for g in t.pending):
            out.append("%s entered %d times, returned %d times" % (name, ent, ret))
    return out, n


def obj_name(path):
    return os.path.basename(path)


def diff(a, b, what):
    d = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "without probes",
                                  "with probes", lineterm="", n=2))
    if len(d) > 60:
        d = d[:60] + ["... (%d more lines)" % (len(d) - 60)]
    return "%s differs:\n%s" % (what, "\n".join(d))


class Case:
    def __init__(self, target, mode, count, seed):
        self.t, self.mode, self.count, self.seed = target, mode, count, seed
        self.name = "%s/%s" % (target.name, mode)

    def specs(self, ukprobe):
        objs = self.t.objs(self.mode)
        if self.mode == "entry":
            return ["p %s:*" % obj_name(o) for o in objs]
        if self.mode == "return":
            return ["r %s:*" % obj_name(o) for o in objs]
        if self.mode == "pair":
            return [s for o in objs for s in ("p %s:*" % obj_name(o), "r %s:*" % obj_name(o))]
        out = []
        for o in objs:
            rng = random.Random("%d/%s/%s" % (self.seed, self.name, obj_name(o)))
            for addr, func, text in random_insns(ukprobe, o, self.count, rng):
                out.append("p %s:0x%x  # %s: %s" % (obj_name(o), addr, func, text))
        return out

    def drop_blacklisted(self, ukprobe, specs, work, log):
        """Random SPECs inside the library's blacklist ranges that are not
        whole functions (glibc code run with every signal blocked, such as
        pthread_create's body) are taken out, each one logged: `ukprobe
        probes` names them one at a time. Any other refusal is kept, for
        the case to fail on."""
        path = os.path.join(work, self.name.replace("/", "-") + ".check")
        host = [self.t.needs[0] if self.t.needs else "/bin/true"]
        for _ in range(100):
            with open(path, "w") as f:
                f.write("\n".join(s.partition("  # ")[0] for s in specs) + "\n")
            r = subprocess.run([ukprobe, "probes", "-o", "/dev/null", "-E", path, "--"] + host,
                               capture_output=True, text=True, stdin=subprocess.DEVNULL)
            m = re.search(r"^ukprobe: error: (p \S+): cannot probe this address \(blacklisted",
                          r.stderr, re.M)
            if r.returncode == 0 or not m:
                break
            bad = [s for s in specs if s.partition("  # ")[0] == m.group(1)]
            if not bad:
                break
            log("[%s]   left out (blacklisted): %s" % (self.name, bad[0]))
            specs = [s for s in specs if s is not bad[0]]
        return specs


def prepare(c, work, suffix):
    d = os.path.join(work, c.t.name + suffix)
    os.makedirs(os.path.join(d, "pytmp"))
    if c.t.setup:
        c.t.setup(d, None)
    return d


def base_env():
    env = dict(os.environ, LC_ALL="C", TZ="UTC")
    env.pop("LD_PRELOAD", None)
    return env


class Reference:
    """A target's run without probes (once per target: every mode is
    compared with it): exit status, normalised outputs and files."""

    def __init__(self, c, work):
        self.dir = prepare(c, work, ".ref")
        env = dict(base_env(), TMPDIR=self.dir + "/pytmp", **c.t.env)
        self.rc, out, err, self.secs = run(c.t.args(self.dir), self.dir, env, 900)
        self.out, self.err = c.t.norm(out, self.dir), c.t.norm(err, self.dir)
        self.files = {f: "\n".join(reader(os.path.join(self.dir, f))) for f, reader in c.t.files}


def run_case(c, ref, ukprobe, work, factor, log):
    tmp = prepare(c, work, "-" + c.mode + ".ukp")
    specs = c.specs(ukprobe)
    if c.mode == "insn":
        specs = c.drop_blacklisted(ukprobe, specs, work, log)
    base = os.path.join(work, c.name.replace("/", "-"))
    spec_file, stat_file = base + ".spec", base + ".stat"
    cmd = [ukprobe, "stat", "-o", stat_file] + (["-f"] if c.t.follow else [])
    if c.mode == "insn":
        with open(spec_file, "w") as f:
            f.write("# torture.py --seed %d --case %s: %d random instruction probes\n"
                    % (c.seed, c.name, len(specs)))
            # ukprobe takes whole lines as SPECs: keep the comments apart
            for s in specs:
                spec, _, note = s.partition("  # ")
                f.write("# %s\n%s\n" % (note, spec))
        cmd += ["-E", spec_file]
        nprobes = "%d random instructions" % len(specs)
    else:
        for s in specs:
            cmd += ["-e", s]
        objs = []
        for s in specs:
            if s.split()[1][:-2] not in objs:
                objs.append(s.split()[1][:-2])
        nprobes = ("every function of " + ", ".join(objs) +
                   (", entries and returns" if c.mode == "pair" else ""))

    log("[%s] probes: %s; seed %d" % (c.name, nprobes, c.seed))
    argv = c.t.args(tmp)
    log("[%s] $ cd %s && %s" % (c.name, tmp, " ".join(shlex.quote(a) for a in cmd + ["--"] + argv)))
    timeout = max(c.t.min_timeout, int(ref.secs * factor))
    rc, out, err, secs = run(cmd + ["--"] + argv, tmp,
                             dict(base_env(), TMPDIR=tmp + "/pytmp", **c.t.env), timeout)
    err, ours = strip_ukprobe(err)
    problems = []
    if ref.rc != rc:
        problems.append("exit status %s without probes, %s with" % (ref.rc, rc))
    out, err = c.t.norm(out, tmp), c.t.norm(err, tmp)
    if ref.out != out:
        problems.append(diff(ref.out, out, "stdout"))
    if ref.err != err:
        problems.append(diff(ref.err, err, "stderr"))
    for fname, reader in c.t.files:
        got = "\n".join(reader(os.path.join(tmp, fname)))
        if ref.files[fname] != got:
            problems.append(diff(ref.files[fname], got, fname))
    for m in ours:
        # a glob's functions that cannot be probed are counted, and a
        # process that ends by a signal or _exit() (tests kill their
        # children) has no final report: not failures when the status and
        # the output are right; anything else ukprobe says is
        if re.search(r"functions matching .* cannot be probed|ended without the agent's final"
                     r" report \(killed, or _exit\(\)\)", m):
            log("[%s]   %s" % (c.name, m))
        else:
            problems.append("ukprobe said: " + m)
    rows = {}
    ev, hits, missed, odd = read_stat(stat_file, rows)
    if not hits:
        problems.append("no probe was hit")
    if c.mode == "pair":
        bad, npairs = pair_problems(c.t, rows)
        log("[%s]   %d functions' entries and returns compared, %d differ against the rule"
            % (c.name, npairs, len(bad)))
        if not npairs:
            problems.append("no function has both an entry and a return event")
        problems += bad[:20] + (["... (%d more)" % (len(bad) - 20)] if len(bad) > 20 else [])
    for line in odd[:5]:
        log("[%s]   stat: %s" % (c.name, line))
    status = "PASS" if not problems else "FAIL"
    log("[%s] %s: %d events, %d hits, %d missed; %.1fs without probes, %.1fs with"
        % (c.name, status, ev, hits, missed, ref.secs, secs))
    for p in problems:
        for line in p.splitlines():
            log("[%s]   %s" % (c.name, line))
    if not problems:
        shutil.rmtree(tmp, ignore_errors=True)
    return not problems, dict(case=c.name, seed=c.seed, probes=len(specs), events=ev, hits=hits,
                              missed=missed, ref_s=ref.secs, probed_s=secs, ok=not problems)


def main():
    # A harness that runs us with SIGINT ignored (a job started in the
    # background without job control) hands that on to every program
    # run: regrtest's SIGINT tests then fail in both runs and test
    # nothing of a probed program's signals. Programs start with the
    # default action, as from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tier", choices=("short", "long"), default="short")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--case", action="append", default=[],
                    help="run only the cases matching this glob (target/mode)")
    ap.add_argument("--count", type=int, help="random probes per object (insn mode)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", help="keep every case's files in this directory")
    ap.add_argument("--ukprobe", default=os.environ.get(
        "UKPROBE", os.path.join(ROOT, "build", "tools", "ukprobe", "ukprobe")))
    ap.add_argument("--timeout-factor", type=float, default=40.0,
                    help="a probed run may take this many times the plain run (min 60 s, "
                    "300 s for gofmt and rustc)")
    a = ap.parse_args()
    a.ukprobe = os.path.abspath(a.ukprobe)

    tg = targets(a.tier)
    cases = []
    for tname, mode, count in TIERS[a.tier]:
        c = Case(tg[tname], mode, a.count or count, a.seed)
        if a.case and not any(fnmatch.fnmatch(c.name, g) for g in a.case):
            continue
        cases.append(c)
    if a.list:
        for c in cases:
            print(c.name, c.count or "")
        return 0
    for c in cases:
        for need in c.t.needs:
            if not os.path.exists(need):
                print("torture: %s needs %s: skipped" % (c.name, need))
                return 77
    if not os.access(a.ukprobe, os.X_OK):
        print("torture: no ukprobe at %s (build first)" % a.ukprobe)
        return 77

    work = a.keep or tempfile.mkdtemp(prefix="ukp-torture-")
    os.makedirs(work, exist_ok=True)

    logf = open(os.path.join(work, "torture.log"), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    log("torture: tier %s, seed %d (reproduce: %s --tier %s --seed %d --case NAME), files in %s"
        % (a.tier, a.seed, os.path.relpath(__file__, os.getcwd()), a.tier, a.seed, work))
    # Kernel uprobes of other tools (bpftrace, bcc) put int3 into the text
    # of every process that maps their object: the library then sees them
    # (an entry "cannot be probed: exception instruction"). Say so.
    try:
        with open("/sys/kernel/tracing/uprobe_events") as f:
            others = f.read().split()
        objs = {os.path.realpath(o) for c in cases for o in c.t.objs(c.mode) if os.path.isabs(o)}
        hit = sorted({o for o in objs for e in others
                      if os.path.realpath(e.rsplit(":", 1)[0]) == o})
        if hit:
            log("torture: note: kernel uprobes are set on %s by another program: their int3s are"
                " in every process's text" % ", ".join(hit))
    except OSError:
        pass
    t_start = time.monotonic()
    passed = failed = 0
    refs = {}
    for c in cases:
        if c.t.name not in refs:
            refs[c.t.name] = Reference(c, work)
        ok, _ = run_case(c, refs[c.t.name], a.ukprobe, work, a.timeout_factor, log)
        passed += ok
        failed += not ok
    if not failed and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    log("torture: %d passed, %d failed (%.0fs)" % (passed, failed, time.monotonic() - t_start))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())

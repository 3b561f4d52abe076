#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ukprobe run`'s tests (issue 31): bpftrace one-liners on tgt_script,
whose calls are known in advance, with their exact output as bpftrace
0.17 prints it; the same scripts under bpftrace where it can attach
(else skipped, with why); errors with their line and caret; the same
scripts on Debian's sqlite3 and python3.

    run_cases.py CASE   (meson: cli_run_*)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402
from clitest import Fail, check, show, start_attachee, stat_hits, tgt, ukprobe  # noqa: E402

TGT = tgt("script")


def hist_lines(buckets):
    """bpftrace's hist()/lhist() lines for (label, count) pairs: the
    label in 16 columns, the count in 8, a bar of 52."""
    top = max(c for _, c in buckets)
    return "".join("%-16s%8d |%-52s|\n" % (label, c, "@" * int(c / top * 52))
                   for label, c in buckets)


# (script, tgt_script's argument, expected standard output after
# "Attaching N probes...")
ONELINERS = [
    # count
    ("uprobe:TGT:work { @ = count(); }", "1", "\n\n@: 100\n"),
    # keyed count, str()
    ("uprobe:TGT:tag { @[str(arg0)] = count(); }", "1",
     "\n\n@[alpha]: 1\n@[beta]: 2\n@[gamma]: 3\n"),
    # two keys, comm
    ("uprobe:TGT:tag { @[comm, arg1 > 3] = count(); }", "2",
     "\n\n@[tgt_script, 1]: 4\n@[tgt_script, 0]: 8\n"),
    # hist: work(0) ... work(99)
    ("uprobe:TGT:work { @ = hist(arg0); }", "1",
     "\n\n@: \n" + hist_lines([("[0]", 1), ("[1]", 1), ("[2, 4)", 2), ("[4, 8)", 4),
                               ("[8, 16)", 8), ("[16, 32)", 16), ("[32, 64)", 32),
                               ("[64, 128)", 36)]) + "\n"),
    # lhist, with the below-min bucket
    ("uprobe:TGT:work { @ = lhist(arg0 - 10, 0, 100, 25); }", "1",
     "\n\n@: \n" + hist_lines([("(..., 0)", 10), ("[0, 25)", 25), ("[25, 50)", 25),
                               ("[50, 75)", 25), ("[75, 100)", 15)]) + "\n"),
    # predicate, positional parameter
    ("uprobe:TGT:work /arg0 >= $1/ { @ = count(); }", "1 90", "\n\n@: 10\n"),
    # retval
    ("uretprobe:TGT:work { @ = sum(retval); @max = max(retval); }", "1",
     "\n\n@: 9900\n@max: 198\n"),
    # stats, avg, min, max; maps printed in the order of their names
    ("uprobe:TGT:work { @s = stats(arg0); @a = avg(arg0); @mn = min(arg0); @mx = max(arg0); }",
     "1", "\n\n@a: 49\n\n@mn: 0\n@mx: 99\n@s: count 100, average 49, total 4950\n\n"),
    # printf with str(), widths
    ('uprobe:TGT:tag { printf("%s=%d [%3d|%-3d] %x\\n", str(arg0), arg1, arg1, arg1, arg1 + 10); }',
     "1", "alpha=0 [  0|0  ] a\nbeta=1 [  1|1  ] b\nbeta=2 [  2|2  ] c\ngamma=3 [  3|3  ] d\n"
     "gamma=4 [  4|4  ] e\ngamma=5 [  5|5  ] f\n\n\n"),
    # BEGIN and END, a map read back in END, if/else, ternary, scratch variables
    ('BEGIN { printf("start\\n"); @n = 0; } '
     'uprobe:TGT:work { $c = arg0 < 10 ? 0 : (arg0 < 30 ? 1 : 2); @k[$c] = count(); '
     'if (arg0 % 2 == 0) { @n = @n + 1; } else { @odd++; } } '
     'END { printf("end %d %d\\n", @n, @odd); }', "1",
     "start\nend 50 50\n\n\n@k[0]: 10\n@k[1]: 20\n@k[2]: 70\n@n: 50\n@odd: 50\n"),
    # several probes sharing a block, a glob, func (bpftrace 0.17 prints
    # func's address: the process is gone when it prints)
    ("uprobe:TGT:wor*, uprobe:TGT:tag { @[func] = count(); }", "1",
     "\n\n@[tag]: 6\n@[work]: 100\n", "bpftrace names no function of an exited process"),
    # printf's conversions, print() of values
    ('BEGIN { printf("%s|%5s|%-5s|%c|%x|%05d|%ld|%u|%X|%o|%3d|\\n", "x", "ab", "cd", 65, 255, '
     '42, -3, 7, 255, 8, 1234); print(5); print("str"); }', "1",
     "x|   ab|cd   |A|ff|00042|-3|7|FF|10|1234|\n5\nstr\n\n\n"),
    # strings compared, string scratch variables and maps, else if,
    # negative values in hist(), lhist()'s edges, probe
    ('uprobe:TGT:tag\n/comm == "tgt_script" && arg1 != 3/\n{\n\t$s = str(arg0);\n'
     '\t$n = -arg1 + 10;\n\tif ($s == "beta") { @b[$s, $n] = sum($n); }\n'
     '\telse if ($s != "gamma") { @o = count(); }\n\telse { @g = max($n * 2 - (arg1 << 1)); }\n'
     '\t@neg = hist(-1 - arg1);\n\t@l = lhist(arg1 + 3, 2, 7, 2);\n\t@x = $s;\n\t@p = probe;\n}\n'
     'END { printf("%s %s|\\n", @x, @p); }', "1",
     "gamma uprobe:TGT:tag|\n\n\n@b[beta, 8]: 8\n@b[beta, 9]: 9\n@g: 4\n@l: \n" +
     hist_lines([("[2, 4)", 1), ("[4, 6)", 2), ("[7, ...)", 2)]) + "\n@neg: \n" +
     hist_lines([("(..., 0)", 5)]) + "\n@o: 1\n@p: uprobe:TGT:tag\n@x: gamma\n"),
    # buf() in printf (%r) and as a key: bytes as they are, \xNN for the others
    # (5 bytes: "beta" and its NUL; what follows a string is the
    # compiler's layout, another on AArch64)
    ('uprobe:TGT:tag { printf("%r|%s\\n", buf(arg0, 5), str(arg0)); @[buf(arg0, 3)] = count(); }',
     "1", "alpha|alpha\n" r"beta\x00|beta" "\n" r"beta\x00|beta" "\n" +
     "gamma|gamma\ngamma|gamma\ngamma|gamma\n\n\n@[alp]: 1\n@[bet]: 2\n@[gam]: 3\n"),
    # usym(): a function pointer named (glibc registers _dl_fini, the
    # program at_end); string keys' tie by name
    ("uprobe:libc:__cxa_atexit { @[usym(arg0)] = count(); @last = usym(arg0); }", "1",
     "\n\n@[_dl_fini]: 1\n@[at_end]: 1\n@last: at_end\n",
     "bpftrace names no function of an exited process"),
    # print() and clear() in END: printed then, empty at the end
    ("uprobe:TGT:tag { @c[arg1 < 2] = count(); } END { print(@c); clear(@c); }", "1",
     "@c[1]: 2\n@c[0]: 4\n\n\n\n"),
    # usdt: the SDT marker tgt:tagged(name, i, -i), its arguments from
    # the note; usdt:OBJ:NAME without the provider
    ("usdt:TGT:tgt:tagged { @[str(arg0)] = sum(arg1); @neg = min(arg2); } "
     "usdt:TGT:tagged { @n = count(); }", "2",
     "\n\n@[alpha]: 0\n@[beta]: 6\n@[gamma]: 24\n@n: 12\n@neg: -5\n"),
    # args: tag(const char *name, long v)'s parameters by name (DWARF)
    ("uprobe:TGT:tag /args->v != 1/ { @[str(args->name)] = sum(args->v); "
     "@z[args->name == 0] = count(); }", "1",
     "\n\n@[alpha]: 0\n@[beta]: 2\n@[gamma]: 12\n@z[0]: 5\n"),
    # FUNC+OFFS: past work's push and mov (at -O0, arg0 still in its register)
    ("uprobe:TGT:work+4 { @ = count(); @s = sum(arg0); }", "1", "\n\n@: 100\n@s: 4950\n",
     "this bpftrace 0.17 is built without uprobe offset support"),
    # uaddr(): the address of the global greeting[] = "hello" (bpftrace
    # 0.17 gives its file address in a PIE: its str() reads nothing)
    ('uprobe:TGT:tag /arg1 == 0/ { printf("%s|%s\\n", str(uaddr("greeting")), '
     'str(uaddr("greeting") + 1, 2)); }', "1", "hello|el\n\n\n",
     "bpftrace 0.17 does not relocate uaddr() in a PIE"),
]


def attaching(script):
    n = len(re.findall(r"\b(?:uprobe|uretprobe|usdt|BEGIN|END)\b", script))
    return "Attaching %d probe%s...\n" % (n, "" if n == 1 else "s")


def run_script(script, args):
    argv = ["run", "-e", script.replace("TGT", TGT)]
    words = args.split()
    return ukprobe(argv + words[1:] + ["--", TGT, words[0]])


def case_run_oneliners():
    """Each one-liner's output, exactly as bpftrace prints it."""
    for script, args, want, *_ in ONELINERS:
        r = run_script(script, args)
        want = want.replace("TGT", TGT)
        check(r.returncode == 0 and r.stdout == attaching(script) + want and r.stderr == "",
              "ukprobe run -e '%s'" % script, "want:\n" + want, show(r))


def case_run_latency():
    """The latency idiom: @start[tid] = nsecs at the entry, the time
    since at the return; tgt_script sleeps 1 ms in pause_us()."""
    script = ("uprobe:TGT:pause_us { @start[tid] = nsecs; } "
              "uretprobe:TGT:pause_us /@start[tid]/ { "
              "@us = hist((nsecs - @start[tid]) / 1000); delete(@start[tid]); }")
    r = run_script(script, "3")
    lines = r.stdout.split("\n")
    # @start is empty (every entry deleted): a blank line, as bpftrace's
    check(r.returncode == 0 and lines[:4] == ["Attaching 2 probes...", "", "", ""] and
          lines[4] == "@us: ", "the latency hist", show(r))
    total = 0

    def number(text):
        return int(text[:-1]) * {"K": 1024, "M": 1 << 20}[text[-1]] if text[-1] in "KM" \
            else int(text)
    for l in lines[5:]:
        if not l:
            break
        # microseconds: a 1 ms sleep is in [512, 1K) (1000 to 1023) or above
        m = re.match(r"^\[(\d+[KM]?), (\d+[KM]?)\)\s+(\d+) \|@*\s*\|$", l)
        check(m and number(m[2]) > 1000, "a bucket of 1 ms or more: %r" % l, show(r))
        total += int(m[3])
    check(total == 3, "three sleeps timed", show(r))


# (script, exit status, standard error); run in tgt_script's directory
ERRORS = [
    ("uprobe:./tgt_script:work { @ = count() ", 2,
     "stdin:1:39-40: ERROR: syntax error, unexpected end of file, expecting }\n"
     "uprobe:./tgt_script:work { @ = count() \n"
     "                                      ~\n"),
    ("uprobe:./tgt_script:work {\n  @x = kstack;\n}", 2,
     "stdin:2:8-14: ERROR: the kstack builtin is not available in ukprobe run: it traces "
     "user space, without BPF\n  @x = kstack;\n       ~~~~~~\n"),
    ("uprobe:./tgt_script:work { @x = nosuch; }", 2,
     "stdin:1:33-39: ERROR: Unknown identifier: 'nosuch'\n"
     "uprobe:./tgt_script:work { @x = nosuch; }\n                                ~~~~~~\n"),
    ("uprobe:./tgt_script:work { @x = nosuch(1); }", 2,
     "stdin:1:33-39: ERROR: Unknown function: 'nosuch'\n"
     "uprobe:./tgt_script:work { @x = nosuch(1); }\n                                ~~~~~~\n"),
    ('uprobe:./tgt_script:work { $x = arg0 + "a"; }', 2,
     "stdin:1:33-43: ERROR: Type mismatch for '+': comparing 'string' with another type\n"
     'uprobe:./tgt_script:work { $x = arg0 + "a"; }\n'
     "                                ~~~~~~~~~~\n"),
    ("uprobe:./tgt_script:work { @x = count(); @x = 1; }", 2,
     "stdin:1:42-48: ERROR: Type mismatch for @x: trying to assign value of type 'int64' "
     "when map already contains a value of another type\n"
     "uprobe:./tgt_script:work { @x = count(); @x = 1; }\n"
     "                                         ~~~~~~\n"),
    ("uretprobe:./tgt_script:work { @x = arg0; }", 2,
     "stdin:1:36-40: ERROR: The arg0 builtin can only be used with 'uprobe' and 'usdt' probes\n"
     "uretprobe:./tgt_script:work { @x = arg0; }\n                                   ~~~~\n"),
    ("uprobe:./tgt_script:work /$y > 1/ { @ = count(); }", 2,
     "stdin:1:27-29: ERROR: Undefined or undeclared variable: $y\n"
     "uprobe:./tgt_script:work /$y > 1/ { @ = count(); }\n                          ~~\n"),
    ('uprobe:./tgt_script:work { printf("%d\\n"); }', 2,
     "stdin:1:28-34: ERROR: printf: Not enough arguments for format string\n"
     'uprobe:./tgt_script:work { printf("%d\\n"); }\n                           ~~~~~~\n'),
    ("kprobe:vfs_read { @ = count(); }", 2,
     "stdin:1:1-16: ERROR: probe type 'kprobe' is not supported: ukprobe run traces user "
     "space (uprobe, uretprobe, usdt, BEGIN, END, interval)\nkprobe:vfs_read { @ = count(); }\n"
     "~~~~~~~~~~~~~~~\n"),
    # args: a parameter that is not there, with the nearest names
    ("uprobe:./tgt_script:tag { @ = sum(args->nam); }", 2,
     "stdin:1:35-44: ERROR: no variable nam here (nearest: name, v, sink)\n"
     "uprobe:./tgt_script:tag { @ = sum(args->nam); }\n"
     "                                  ~~~~~~~~~\n"),
    ("uretprobe:./tgt_script:tag { @ = sum(args->v); }", 2,
     "stdin:1:38-45: ERROR: The args builtin can only be used with 'uprobe' probes in "
     "ukprobe run\nuretprobe:./tgt_script:tag { @ = sum(args->v); }\n"
     "                                     ~~~~~~~\n"),
    ("uprobe:./tgt_script:tag, usdt:./tgt_script:tgt:tagged { @ = sum(arg1); }", 2,
     "stdin:1:65-69: ERROR: arg1 is a register in a uprobe and the marker's argument in a "
     "usdt probe: give them separate blocks\n"
     "uprobe:./tgt_script:tag, usdt:./tgt_script:tgt:tagged { @ = sum(arg1); }\n"
     "                                                                ~~~~\n"),
    # usdt: a marker that is not there, an argument it does not have
    ("usdt:./tgt_script:tgt:nosuch { @ = count(); }", 1,
     "stdin:1:1-29: ERROR: SDT probe %tgt:nosuch not found in ./tgt_script\n"
     "usdt:./tgt_script:tgt:nosuch { @ = count(); }\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"),
    ("usdt:./tgt_script:tgt:tagged { @ = sum(arg3); }", 1,
     "stdin:1:1-29: ERROR: SDT probe tgt:tagged has 3 arguments, not $arg4\n"
     "usdt:./tgt_script:tgt:tagged { @ = sum(arg3); }\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"),
    ('uprobe:./tgt_script:tag { @ = uaddr("nosuchsym"); }', 1,
     "stdin:1:1-24: ERROR: data symbol nosuchsym not found in ./tgt_script\n"
     'uprobe:./tgt_script:tag { @ = uaddr("nosuchsym"); }\n~~~~~~~~~~~~~~~~~~~~~~~\n'),
    ('BEGIN { @ = uaddr("greeting"); }', 2,
     "stdin:1:13-18: ERROR: uaddr can only be used with uprobes, uretprobes and usdt probes\n"
     'BEGIN { @ = uaddr("greeting"); }\n            ~~~~~\n'),
    # matches nothing: said by the agent, before the program runs
    ("BEGIN { }\nuprobe:./tgt_script:nosuch* { @ = count(); }", 1,
     "stdin:2:1-28: ERROR: no function matches nosuch* in ./tgt_script\n"
     "uprobe:./tgt_script:nosuch* { @ = count(); }\n~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"),
]


def case_run_errors():
    """Errors bpftrace's way: file:line:columns, the line, a caret; the
    program does not run (BEGIN's output would show)."""
    for script, code, want in ERRORS:
        r = ukprobe(["run", "-e", script, "--", "./tgt_script"], cwd=os.path.dirname(TGT))
        check(r.returncode == code and r.stderr == want and r.stdout == "",
              "error for %r" % script, "want:\n" + want, show(r))
    # a script file: its name in the error
    with tempfile.NamedTemporaryFile("w", suffix=".bt") as f:
        f.write("// counts\nuprobe:%s:work {\n\t@ = count(1);\n}\n" % TGT)
        f.flush()
        r = ukprobe(["run", f.name, "--", TGT])
        want = ("%s:3:6-11: ERROR: count() takes no argument(s)\n"
                "    @ = count(1);\n        ~~~~~\n" % f.name)
        check(r.returncode == 2 and r.stderr == want, "error in a file", "want:\n" + want,
              show(r))


def case_run_vector_free():
    """The compiled handlers (maps, hist, str(), comm, printf, nsecs,
    uretprobes, ustack and usym() records, args, uaddr(), usdt) pass libukprobes' proof that they leave the vector state
    alone: a jump-optimized hit saves none (UKPROBE_DEBUG=1 prints the
    library's verdicts)."""
    env = dict(os.environ, UKPROBE_DEBUG="1")
    script = ('uprobe:TGT:tag { @[str(arg0), comm] = count(); printf("%s %d\\n", comm, arg1); '
              'printf("%s %s\\n", ustack(2), usym(arg0)); print(ustack); @a = sum(args->v); '
              '@g = min(uaddr("greeting")); '
              '@s = stats(arg1); @l = lhist(arg1, 0, 10, 2); } '
              'uprobe:TGT:pause_us { @t[tid] = nsecs; } '
              'uretprobe:TGT:pause_us /@t[tid]/ { @h = hist(nsecs - @t[tid]); delete(@t[tid]); '
              '@c[cpu >= 0, pid, elapsed > 0] = count(); @u[ustack] = count(); } '
              'usdt:TGT:tgt:tagged { @sdt = sum(arg2); }').replace("TGT", TGT)
    r = ukprobe(["run", "-e", script, "--", TGT], env=env)
    check(r.returncode == 0 and "@h: " in r.stdout and "\n@a: 15\n" in r.stdout and
          "\n@sdt: -15\n" in r.stdout, "the script runs", show(r))
    check("state saved" not in r.stderr and "vector state" not in r.stderr,
          "every handler proven vector-free", show(r))


def case_run_interval():
    """interval:ms:N and interval:s:N run on the agent's timer thread,
    with print() of a map; their own sleeps are not counted."""
    script = ('interval:ms:100 { printf("tick %s\\n", probe); @ticks = count(); } '
              'interval:ms:250 { print(@ticks); } '
              'uprobe:libc:clock_nanosleep { @sleeps = count(); }')
    # tgt_script 11 550: no pause_us() (more than 10 rounds), then one
    # sleep of 0.55 s (an AArch64 program under qemu-user as well)
    r = ukprobe(["run", "-e", script, "--", TGT, "11", "550"])
    lines = r.stdout.split("\n")
    ticks = lines.count("tick interval:ms:100")
    # (under qemu-user, the program's start before main() takes longer)
    most = 6 if clitest.ARCH == os.uname().machine else 9
    check(r.returncode == 0 and lines[0] == "Attaching 3 probes..." and 4 <= ticks <= most,
          "about 5 ticks in 0.55 s", show(r))
    check(r.stdout.endswith("\n\n\n@sleeps: 1\n@ticks: %d\n" % ticks) and
          "@ticks: 2" in lines, "print() every 250 ms, the maps at the end", show(r))


def case_run_attach():
    """-p: a script in a running multi-threaded program, for -d seconds;
    then another script in the same process (the first one's blocks and
    object are gone); the program sees nothing of either."""
    if os.uname().machine != "x86_64":
        print("skip: attaching is x86-64's only")
        return
    p = start_attachee(idle=4)
    try:
        work = "uprobe:%s:work" % tgt("attachee")
        r = ukprobe(["run", "-e", work + " { @ = count(); @m[arg0 % 3] = count(); } "
                     'interval:ms:200 { @ticks = count(); } END { printf("end\\n"); }',
                     "-p", str(p.pid), "-d", "1"])
        m = re.fullmatch(r"Attaching 3 probes\.\.\.\nend\n\n\n@: (\d+)\n"
                         r"((?:@m\[[012]\]: \d+\n){3})@ticks: ([3-6])\n", r.stdout)
        check(r.returncode == 0 and r.stderr == "" and m, "the first script", show(r))
        parts = [int(x) for x in re.findall(r": (\d+)", m[2])]
        check(int(m[1]) > 0 and sum(parts) == int(m[1]), "@m's counts add up to @'s", show(r))
        r = ukprobe(["run", "-e", work + " { @[probe] = count(); @c[comm] = count(); }",
                     "-p", str(p.pid), "-d", "0.5"])
        m = re.fullmatch(r"Attaching 1 probe\.\.\.\n\n\n@\[uprobe:%s:work\]: (\d+)\n"
                         r"@c\[tgt_attachee\]: (\d+)\n" % re.escape(tgt("attachee")), r.stdout)
        check(r.returncode == 0 and m and m[1] == m[2] and int(m[1]) > 0,
              "the second script", show(r))
        # then a session without a script (stat -p): the scripts' messages
        # and handlers are gone (it saw "unexpected data from the agent")
        r = ukprobe(["stat", "-p", str(p.pid), "-d", "0.5", "-e", "p:w " + tgt("attachee") + ":work"])
        hits = stat_hits(r.stdout, "ukprobes/w")
        check(r.returncode == 0 and r.stderr == "" and hits and int(hits) > 0,
              "stat -p after the scripts", show(r))
        # two processes: their maps merged, func named in each
        p2 = start_attachee(idle=1)
        try:
            r = ukprobe(["run", "-e", work + " { @ = count(); @p[pid] = count(); "
                         "@f[func] = count(); }", "-p", "%d,%d" % (p.pid, p2.pid), "-d", "0.5"])
        finally:
            p2.communicate("quit\n", timeout=60)
        m = re.fullmatch(r"Attaching 1 probe\.\.\.\n\n\n@: (\d+)\n@f\[work\]: (\d+)\n"
                         r"@p\[(\d+)\]: (\d+)\n@p\[(\d+)\]: (\d+)\n", r.stdout)
        check(r.returncode == 0 and m and m[1] == m[2] and
              sorted([int(m[3]), int(m[5])]) == sorted([p.pid, p2.pid]) and
              int(m[4]) + int(m[6]) == int(m[1]) and int(m[4]) > 0 and int(m[6]) > 0,
              "two processes' maps merged", show(r))
    finally:
        out, err = p.communicate("quit\n", timeout=60)
    check(p.returncode == 3 and "eintr 0" in out and "actions changed 0" in out and
          "mask same" in out, "the program saw nothing", out + err)


def case_run_begin_order():
    """"Attaching" and BEGIN's output come before the program's first
    write, as bpftrace's do (the program waits for ukprobe to print
    them): echo writes at once, so in 12 launches under the suite's load
    one overtook them before the program waited."""
    script = 'BEGIN { printf("begin\\n"); } END { printf("end\\n"); }'
    want = "Attaching 2 probes...\nbegin\nprog\nend\n\n\n"
    for i in range(12):
        r = ukprobe(["run", "-e", script, "--", "echo", "prog"])
        check(r.returncode == 0 and r.stdout == want, "launch %d: in order" % i,
              "want:\n" + want, show(r))
    print("12 launches: Attaching, BEGIN, the program, END in order")


def case_run_exit():
    """exit(), as bpftrace's: END and the maps at once, and the program
    (sleep 30) ended then, ukprobe's status 0; the same bytes as
    bpftrace's where it attaches. Attached (-p), exit() detaches and the
    process goes on."""
    import time as _time
    script = ('uprobe:libc:clock_nanosleep { @n = count(); printf("bye\\n"); exit(); } '
              'END { printf("end\\n"); }')
    t0 = _time.monotonic()
    r = ukprobe(["run", "-e", script, "--", "sleep", "30"])
    took = _time.monotonic() - t0
    want = "Attaching 2 probes...\nbye\nend\n\n\n@n: 1\n"
    check(r.returncode == 0 and r.stdout == want and r.stderr == "" and took < 20,
          "exit() ends the program (%.1f s)" % took, "want:\n" + want, show(r))
    # on a copy of tgt_script (bpftrace's uprobes are in every process
    # that maps the file): the same bytes
    script = ('uprobe:TGT:tag /arg1 == 2/ { @n = count(); printf("bye %s\\n", str(arg0)); '
              'exit(); } END { printf("end\\n"); }')
    want = "Attaching 2 probes...\nbye beta\nend\n\n\n@n: 1\n"
    bt, why = bpftrace_attaches()
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "tgt_script")
        shutil.copy(TGT, prog)
        r = ukprobe(["run", "-e", script.replace("TGT", prog), "--", prog, "1"])
        check(r.returncode == 0 and r.stdout == want, "exit() in tgt_script", show(r))
        if bt:
            b = subprocess.run([bt, "-e", script.replace("TGT", prog), "-c", prog + " 1"],
                               capture_output=True, text=True, timeout=60)
            check(b.stdout == want, "bpftrace's exit() prints the same", b.stdout + b.stderr)
            print("same output under bpftrace: %s" % script)
        else:
            print("not compared with bpftrace: %s" % why)
    if os.uname().machine != "x86_64":
        print("attached: skipped (attaching is x86-64's only)")
        return
    p = start_attachee(idle=4)
    try:
        work = "uprobe:%s:work" % tgt("attachee")
        r = ukprobe(["run", "-e", work + " { @n++; if (@n >= 10) { exit(); } }",
                     "-p", str(p.pid)], timeout=60)
        m = re.fullmatch(r"Attaching 1 probe\.\.\.\n\n\n@n: (\d+)\n", r.stdout)
        check(r.returncode == 0 and m and int(m[1]) >= 10, "exit() detaches", show(r))
        check(p.poll() is None, "the attached process goes on")
    finally:
        out, err = p.communicate("quit\n", timeout=60)
    check(p.returncode == 3, "the attached process ended as it does", out + err)


def case_run_follow():
    """-f: the children tgt_forker forks and the program a child execs
    (tgt_forker again) are traced too, their maps merged with the
    launched process's; BEGIN and END run once (the launched
    process's); pid is each process's own. Without -f the child is not
    traced. The maps as bpftrace prints them (its uprobes are in every
    process): the same bytes."""
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "tgt_forker")
        shutil.copy(tgt("forker"), prog)
        script = ('BEGIN { printf("begin\\n"); } uprobe:%s:step { @[arg0] = sum(arg0); '
                  '@n = count(); @pids[pid == $1] = count(); } END { printf("end\\n"); }' % prog)
        maps = "\n\n@[1]: 2\n@[2]: 4\n@[3]: 6\n@n: 6\n@pids[0]: 6\n"
        r = ukprobe(["run", "-f", "-e", script, "0", "--", prog, "--exec", prog])
        check(r.returncode == 0 and r.stdout.startswith("Attaching 3 probes...\nbegin\n") and
              r.stdout.count("begin\n") == 1 and r.stdout.count("end\n") == 1 and
              r.stdout.count("parent done") == 2 and r.stdout.endswith(maps),
              "-f: the forked child and its exec'd program traced", "want the maps:" + maps,
              show(r))
        bt, why = bpftrace_attaches()
        if bt:
            b = subprocess.run([bt, "-e", script, "0", "-c", "%s --exec %s" % (prog, prog)],
                               capture_output=True, text=True, timeout=60)
            check(b.stdout.endswith(maps) and b.stdout.count("end\n") == 1,
                  "bpftrace's maps are the same", b.stdout + b.stderr)
            print("same maps under bpftrace: %s" % script)
        else:
            print("not compared with bpftrace: %s" % why)
        # fork only: the child's pid is its own (@pids: $1 is the parent's
        # pid, unknown here: pid != 0 counted); without -f only the parent
        script = ("uprobe:%s:step { @[arg0] = count(); @p[pid] = count(); }" % prog)
        r = ukprobe(["run", "-f", "-e", script, "--", prog])
        pids = re.findall(r"^@p\[(\d+)\]: (\d)$", r.stdout, re.M)
        check(r.returncode == 0 and "@[1]: 1\n@[2]: 1\n@[3]: 1\n" in r.stdout and
              len(set(p for p, _ in pids)) == 2 and [n for _, n in pids] == ["1", "2"],
              "-f: a forked child with its own pid", show(r))
        r = ukprobe(["run", "-e", script, "--", prog])
        check(r.returncode == 0 and "@[1]: 1\n@[3]: 1\n@p[" in r.stdout and "@[2]" not in r.stdout,
              "without -f the child is not traced", show(r))


def case_run_threads():
    """Per-thread tables merged when printed: four named threads and the
    main one; equal counts in the order of their keys."""
    prog = tgt("threads")
    r = ukprobe(["run", "-e", "uprobe:%s:work { @[comm] = count(); @all = count(); "
                 "@s = sum(arg1); @t[tid] = count(); }" % prog, "--", prog, "1000"])
    want = ("\n\n@[tgt_threads]: 1\n" + "".join("@[worker-%d]: 1000\n" % i for i in range(4)) +
            "@all: 4001\n@s: 1998000\n")
    check(r.returncode == 0 and r.stdout.startswith("Attaching 1 probe...\n") and
          want in r.stdout and "threads done\n" in r.stdout, "per-thread counts", show(r))
    tids = re.findall(r"^@t\[(\d+)\]: (\d+)$", r.stdout, re.M)
    check(sorted(int(n) for _, n in tids) == [1, 1000, 1000, 1000, 1000] and
          [int(t) for t, _ in tids[1:]] == sorted(int(t) for t, _ in tids[1:]),
          "one entry per thread, equal counts by tid", show(r))


def case_run_full_map():
    """A map of 5000 keys: 4096 entries at most (bpftrace's default);
    what did not fit is counted and said at the end."""
    r = run_script("uprobe:TGT:work { @i++; @k[@i] = count(); }", "50")
    keys = re.findall(r"^@k\[(\d+)\]: 1$", r.stdout, re.M)
    m = re.search(r"ukprobe: warning: (\d+) map updates were dropped: a map was full", r.stderr)
    check(r.returncode == 0 and "\n@i: 5000\n" in r.stdout and m and 3000 < len(keys) <= 4096 and
          len(keys) + int(m[1]) == 5000, "entries + drops = 5000 updates", show(r))
    check([int(k) for k in keys] == sorted(int(k) for k in keys), "equal counts by key")


def case_run_signal():
    """A program ended by SIGINT (Ctrl-C) or SIGTERM that leaves them to
    their default action: END runs and the maps are printed first, then
    the program ends by the signal."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        u = subprocess.Popen([os.environ["UKPROBE"], "run", "-e",
                              "uprobe:libc:clock_nanosleep { @n = count(); } "
                              'END { printf("end\\n"); }', "--", TGT, "11", "30000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = u.stdout.readline()
        with open("/proc/%d/task/%d/children" % (u.pid, u.pid)) as f:
            child = int(f.read().split()[0])
        os.kill(child, sig)
        out, err = u.communicate(timeout=60)
        check(first == "Attaching 2 probes...\n" and u.returncode == 128 + sig and
              re.fullmatch(r"end\n\n\n(@n: [12])?\n", out) and err == "",
              "END and the maps before the end by %s" % sig.name,
              "rc=%s\n%s%s\n%s" % (u.returncode, first, out, err))


def case_run_ustack():
    """@[ustack] = count(): the stacks of uprobes and uretprobes, as map
    keys, as bpftrace prints them (sym+offset, indented by 4); the frames
    are those of ukprobe trace's stacktrace trigger (.eh_frame: through
    libc, which has no frame pointers)."""
    t = ukprobe(["trace", "-e", "p %s:work" % TGT, "--trigger", "stacktrace:1", "--", TGT])
    truth = re.findall(r"^ => (\S+)\+0x([0-9a-f]+)", t.stdout, re.M)
    check(t.returncode == 0 and len(truth) >= 3 and truth[1][0] == "main",
          "the trigger's stack", show(t))
    frames = "".join("    %s+%d\n" % (f, int(off, 16)) for f, off in truth)
    r = run_script("uprobe:TGT:work /arg0 < 3/ { @[ustack] = count(); } "
                   "uretprobe:TGT:tag { @r[ustack(1), retval > 100] = count(); }", "2")
    main_ret = re.search(r"^@r\[\n    main\+(\d+)\n, 0\]: 6\n@r\[\n    main\+\1\n, 1\]: 6\n$",
                         r.stdout, re.M)
    check(r.returncode == 0 and r.stdout.startswith("Attaching 2 probes...\n\n\n@[\n" + frames +
                                                    "]: 6\n") and main_ret,
          "the stacks", "want first:\n@[\n" + frames + "]: 6", show(r))


def case_run_ustack_printf():
    """ustack and usym() printed from a hit (printf's %s, print()), as
    bpftrace prints them: the frames indented by 8; named by the agent's
    reader from the record's address words. The same bytes as bpftrace's
    where it attaches (ustack(3): its frame-pointer walk ends there)."""
    t = ukprobe(["trace", "-e", "p %s:work" % TGT, "--trigger", "stacktrace:1", "--", TGT])
    truth = re.findall(r"^ => (\S+)\+0x([0-9a-f]+)", t.stdout, re.M)
    check(t.returncode == 0 and len(truth) >= 3, "the trigger's stack", show(t))
    frames = ["        %s+%d\n" % (f, int(off, 16)) for f, off in truth]
    script = ('uprobe:TGT:work /arg0 == 1/ { printf("[%s]\\n", ustack(3)); '
              'printf("<%s>\\n", ustack(2)); print(ustack(1)); } '
              'uprobe:libc:__cxa_atexit /comm == "tgt_ustack_pr"/ { printf("sym %s|\\n", '
              'usym(arg0)); print(usym(arg0)); }')
    want = ("Attaching 2 probes...\nsym _dl_fini|\n_dl_fini\nsym at_end|\nat_end\n[\n" +
            "".join(frames[:3]) + "]\n<\n" + "".join(frames[:2]) + ">\n\n" + frames[0] +
            "\n\n\n")
    # a copy by another name: bpftrace's uprobe in libc is in every
    # process, the other cases' tgt_script among them
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "tgt_ustack_pr")
        shutil.copy(TGT, prog)
        r = ukprobe(["run", "-e", script.replace("TGT", prog), "--", prog, "1"])
        check(r.returncode == 0 and r.stdout == want, "ustack and usym() printed",
              "want:\n" + want, show(r))
        bt, why = bpftrace_attaches()
        if bt:
            b = subprocess.run([bt, "-e", script.replace("TGT", prog), "-c", prog + " 1 500"],
                               capture_output=True, text=True, timeout=60)
            check(b.stdout == want, "bpftrace prints the same", b.stdout + b.stderr)
            print("same output under bpftrace: %s" % script)
        else:
            print("not compared with bpftrace: %s" % why)
    # all 16 frames a record holds, and a uretprobe's stack; the
    # uretprobe on work puts its trampoline in work's return address,
    # which the unwinder takes back (main, not the trampoline)
    r = run_script('uprobe:TGT:work /arg0 == 2/ { printf("%s", ustack); } '
                   'uretprobe:TGT:work /retval == 4/ { print(ustack(1)); }', "1")
    m = re.fullmatch(r"Attaching 2 probes\.\.\.\n\n%s\n        main\+(\d+)\n\n\n\n" %
                     re.escape("".join(frames)), r.stdout)
    check(r.returncode == 0 and m, "ustack's frames, a uretprobe's", show(r))


def case_run_time():
    """time(): the local time when ukprobe prints the record (bpftrace
    formats it so too), by default %H:%M:%S and a newline."""
    import time as _time
    before = _time.localtime()
    r = run_script('BEGIN { time(); time("%Y|\\n"); } uprobe:TGT:tag /arg1 == 0/ { time("t %Y\\n"); }',
                   "1")
    m = re.fullmatch(r"Attaching 2 probes\.\.\.\n(\d\d):(\d\d):(\d\d)\n(\d{4})\|\nt (\d{4})\n\n\n",
                     r.stdout)
    check(r.returncode == 0 and m and int(m[4]) >= before.tm_year and m[4] == m[5] and
          int(m[1]) < 24, "time()'s lines", show(r))


def bpftrace_attaches():
    bt = shutil.which("bpftrace")
    if not bt:
        return None, "bpftrace is not installed"
    if clitest.ARCH != os.uname().machine:
        # (the host's kernel would put its breakpoints in the file
        # qemu-user runs)
        return None, "the targets are %s programs under qemu-user" % clitest.ARCH
    r = subprocess.run([bt, "-e", "BEGIN { exit(); }"], capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return bt, ""


def case_run_bpftrace():
    """The one-liners under bpftrace, where it can attach: the same
    output, byte for byte."""
    bt, why = bpftrace_attaches()
    if not bt:
        print("skip: bpftrace cannot attach here (%s); the expected outputs are "
              "bpftrace 0.17's formats" % why)
        return
    # on a copy of the program: the kernel's uprobes are in every process
    # that maps the file, and the other cases run tgt_script meanwhile
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "tgt_script")
        shutil.copy(TGT, prog)
        for script, args, _, *differs in ONELINERS:
            if differs:
                print("not compared: %r (%s)" % (script, differs[0]))
                continue
            words = args.split()
            text = script.replace("TGT", prog)
            b = subprocess.run([bt, "-e", text] + words[1:] + ["-c", "%s %s" % (prog, words[0])],
                               capture_output=True, text=True, timeout=120)
            u = ukprobe(["run", "-e", text] + words[1:] + ["--", prog, words[0]])
            check(b.stdout == u.stdout, "bpftrace and ukprobe run agree on %r" % script,
                  "bpftrace:\n" + b.stdout + b.stderr, show(u))
            print("same output: %s" % script)


def case_run_real():
    """The same kinds of scripts on Debian's sqlite3 (the statements it
    prepares, keyed by their text) and python3 (counted calls = ukprobe
    stat's count of the same function)."""
    sql = (".output /dev/null\ncreate table t(x);\n" + "insert into t values(1);\n" * 4 +
           "select count(*) from t;\n" * 3)
    script = ('uprobe:libsqlite3.so.0:sqlite3_prepare_v2 { @[str(arg1, 6)] = count(); '
              'printf("prepare %s\\n", str(arg1, 6)); } '
              'uretprobe:libsqlite3.so.0:sqlite3_prepare_v2 { @rc = hist(retval); }')
    r = ukprobe(["run", "-e", script, "--", "sqlite3", ":memory:"], input=sql)
    # the shell reads its schema (SELECT) before the first statement
    want = ("Attaching 2 probes...\nprepare create\nprepare SELECT\nprepare SELECT\n" +
            "prepare insert\n" * 4 + "prepare select\n" * 3 + "\n\n"
            "@[create]: 1\n@[SELECT]: 2\n@[select]: 3\n@[insert]: 4\n"
            "@rc: \n" + hist_lines([("[0]", 10)]) + "\n")
    check(r.returncode == 0 and r.stdout == want, "sqlite3's statements", "want:\n" + want,
          show(r))
    py = "/usr/bin/python3.11"  # Debian's (not a pyenv shim)
    env = dict(os.environ, PYTHONHASHSEED="0")
    code = "import json\nfor i in range(50): json.dumps({'a': i})\n"
    r = ukprobe(["run", "-e", "uprobe:%s:PyDict_New { @ = count(); } "
                 "uretprobe:%s:PyDict_New /retval != 0/ { @ok = count(); }" % (py, py),
                 "--", py, "-c", code], env=env)
    m = re.fullmatch(r"Attaching 2 probes\.\.\.\n\n\n@: (\d+)\n@ok: (\d+)\n", r.stdout)
    check(r.returncode == 0 and m and m[1] == m[2], "python3's PyDict_New", show(r))
    s = ukprobe(["stat", "-e", "p %s:PyDict_New" % py, "--", py, "-c", code], env=env)
    hits = re.search(r"ukprobes/\w*PyDict_New\w*\s+(\d+)", s.stdout)
    check(hits and hits[1] == m[1], "run's count = stat's count (%s)" % m[1], show(s))
    # usdt: python's function__entry(file, function, line) markers (with
    # their semaphore), counted per Python function; the same under
    # bpftrace where it attaches
    with tempfile.TemporaryDirectory() as d:
        calls = os.path.join(d, "calls.py")
        with open(calls, "w") as f:
            f.write(clitest.USDT_PY)
        script = ('usdt:%s:python:function__entry /str(arg1) == "target" || '
                  'str(arg1) == "other"/ { @[str(arg1)] = count(); @line[str(arg1)] = max(arg2); }'
                  % py)
        r = ukprobe(["run", "-e", script, "--", py, calls, "profile", "1234"])
        want = ("Attaching 1 probe...\ndone\n\n\n@[other]: 1\n@[target]: 1234\n"
                "@line[target]: 3\n@line[other]: 5\n")
        check(r.returncode == 0 and r.stdout == want, "python's function__entry markers",
              "want:\n" + want, show(r))
        bt, why = bpftrace_attaches()
        if bt:
            b = subprocess.run([bt, "-e", script, "-c", "%s %s profile 1234" % (py, calls)],
                               capture_output=True, text=True, timeout=120)
            check(b.stdout == want, "bpftrace's output is the same", b.stdout + b.stderr)
            print("same output under bpftrace: %s" % script)
        else:
            print("not compared with bpftrace: %s" % why)


def _free_agent_or_skip(*names):
    for name in names:
        if not os.path.exists(tgt(name)):
            print("no %s here: skipped" % tgt(name))
            sys.exit(77)
    if not os.path.exists(os.path.join(os.path.dirname(os.environ["UKP_AGENT"]),
                                       "libukprobe-agent.bin")):
        print("no freestanding agent in this build (a sanitizer build): skipped")
        sys.exit(77)


def _static_launch(name, script, stdin):
    path = tgt(name)
    return ukprobe(["run", "-e", script.replace("TGT", path), "--", path], input=stdin)


def _static_attach(name, script, cmds):
    """The script attached (-p) to a running static_work program, with a
    probe of its own that prints "on" for work(0): the program runs
    work(0) until that comes (the hits count from when tracing is on,
    which "Attaching" may precede), then the commands, then SIGINT.
    (ukprobe's result without the "on" lines, the program's answers)"""
    import select
    path = tgt(name)
    p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(p.stdout.readline() == "ready\n", "%s is ready" % name)
        u = subprocess.Popen([clitest.UKPROBE, "run", "-e",
                              'uprobe:TGT:work /arg0 == 0/ { printf("on\\n"); } '.replace(
                                  "TGT", path) + script.replace("TGT", path),
                              "-p", str(p.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, end = b"", time.time() + 60
        while b"on\n" not in out and time.time() < end and u.poll() is None:
            p.stdin.write("run 1 0\n")
            p.stdin.flush()
            check(p.stdout.readline() == "ran 1 1\n", "%s runs work(0)" % name)
            if select.select([u.stdout], [], [], 0.05)[0]:
                out += os.read(u.stdout.fileno(), 65536)
        check(b"on\n" in out, "%s: attached, tracing on" % name,
              out.decode() + (u.stderr.read().decode() if u.poll() is not None else ""))
        answers = []
        for c in cmds:
            p.stdin.write(c + "\n")
            p.stdin.flush()
            answers.append(p.stdout.readline())
        u.send_signal(signal.SIGINT)
        rest, err = u.communicate(timeout=60)
        p.stdin.write("run 2 1\nquit\n")
        p.stdin.flush()
        tail = p.stdout.read()
        check(p.wait(timeout=60) == 3 and tail == "ran 2 11\n",
              "%s goes on after the detach and ends as it would" % name, tail)
        text = "".join(l for l in (out + rest).decode().splitlines(True) if l != "on\n")
        return subprocess.CompletedProcess(u.args, u.returncode, text, err.decode()), answers
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def case_run_static():
    """ukprobe run in statically linked programs (the freestanding agent
    maps the compiled script itself: agent/free/script_map.c): static C
    launched and attached, each output the same script's on the dynamic
    build of the same source and the counts known; static Go launched
    (the counts known) and attached (entries that agree). END and the maps come at a static program's own exit (its
    exit_group instruction, probed)."""
    _free_agent_or_skip("static_work", "static_work_dyn", "go_static", "go", "go_wait_static")
    # (work(0), the attached run's signal, counts nothing: work(i) = 3i + 1)
    script = ('BEGIN { printf("begin\\n"); } uprobe:TGT:work /arg0/ { @[arg0 & 7] = count(); } '
              'uretprobe:TGT:work /retval > 1/ { @r = hist(retval); @s = sum(retval); } '
              'END { printf("end\\n"); }')
    base, n = 5, 300
    known = {k: sum(1 for i in range(base, base + n) if i & 7 == k) for k in range(8)}

    def keyed(out):
        return {int(k): int(v) for k, v in re.findall(r"^@\[(\d+)\]: (\d+)$", out, re.M)}
    ran = "ran %d %d\n" % (n, sum(3 * i + 1 for i in range(base, base + n)))
    # launched: BEGIN before the program's first write, END at its exit
    got = {}
    for name in ("static_work", "static_work_dyn"):
        r = _static_launch(name, script, "run %d %d\nquit\n" % (n, base))
        check(r.returncode == 3 and r.stderr == "", "%s launched: its exit status" % name,
              show(r))
        check(r.stdout.startswith("Attaching 4 probes...\nbegin\nready\n" + ran + "end\n"),
              "%s launched: Attaching, BEGIN, the program, END in order" % name, show(r))
        got[name] = r.stdout
    check(got["static_work"] == got["static_work_dyn"],
          "launched: the static program's output is the dynamic one's",
          "static:\n" + got["static_work"], "dynamic:\n" + got["static_work_dyn"])
    out = got["static_work"]
    # the handlers pass the vector-free proof there too (UKPROBE_DEBUG=1
    # prints the library's verdicts): a hit saves no vector state
    path = tgt("static_work")
    r = ukprobe(["run", "-e", script.replace("TGT", path), "--", path],
                input="run 3 1\nquit\n", env=dict(os.environ, UKPROBE_DEBUG="1"))
    check(r.returncode == 3 and "@s: 21\n" in r.stdout and "vector state" not in r.stderr,
          "static: every handler proven vector-free", show(r))
    check(keyed(out) == known and "@s: %d\n" % sum(3 * i + 1 for i in range(base, base + n)) in out,
          "launched: the counts and the sum known", out)
    # attached: a running program (two threads), left at SIGINT
    got = {}
    for name in ("static_work", "static_work_dyn"):
        r, answers = _static_attach(name, script.replace('BEGIN { printf("begin\\n"); } ', ""),
                                    ["run %d %d" % (n, base)])
        check(r.returncode == 0 and r.stderr == "" and answers == [ran],
              "%s attached: ends with 0 at SIGINT" % name, show(r), str(answers))
        got[name] = r.stdout
    check(got["static_work"] == got["static_work_dyn"],
          "attached: the static program's output is the dynamic one's",
          "static:\n" + got["static_work"], "dynamic:\n" + got["static_work_dyn"])
    check(got["static_work"].startswith("Attaching 4 probes...\nend\n\n\n") and
          keyed(got["static_work"]) == known,
          "attached: the counts known", got["static_work"])
    # Go's default build (static, no cgo) launched, beside its cgo build:
    # entry probes through stack growth, goroutines on other threads;
    # the program ends by a raw exit_group (os.Exit)
    go = ('BEGIN { printf("begin\\n"); } uprobe:TGT:main.deep { @d = count(); } '
          'uprobe:TGT:main.sleeper { @s = count(); @t[tid > 0] = count(); } '
          'uprobe:TGT:main.add9 { @a = count(); } END { printf("end\\n"); }')
    got = {}
    for name in ("go_static", "go"):
        r = _static_launch(name, go, "")
        check(r.returncode == 3 and r.stderr == "", "%s launched: its exit status" % name,
              show(r))
        got[name] = r.stdout
    # (the cgo build ends by the same raw exit_group, which a dynamic
    # program's agent does not see: its END and maps are not printed)
    head = "Attaching 5 probes...\nbegin\n" + clitest.GO_OUT
    check(got["go"].startswith(head),
          "Go, the cgo build: Attaching, BEGIN, the program", got["go"])
    check(got["go_static"] == head + "end\n\n\n@a: 1\n@d: 10001\n@s: 100\n@t[1]: 100\n",
          "Go, static: the output known, END and the maps at its exit", got["go_static"])
    # static Go attached: each goroutine's loop enters deep() 101 times
    # per sleeper() (calls in flight at either edge: 2 x 101 a goroutine)
    p = subprocess.Popen([tgt("go_wait_static")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        check(p.stdout.readline() == "waiting\n", "the Go program runs")
        path = tgt("go_wait_static")
        r = ukprobe(["run", "-e", "uprobe:%s:main.deep { @d = count(); } uprobe:%s:main.sleeper "
                     '{ @s = count(); } END { printf("end\\n"); }' % (path, path),
                     "-p", str(p.pid), "-d", "1"])
        m = re.fullmatch(r"Attaching 3 probes\.\.\.\nend\n\n\n@d: (\d+)\n@s: (\d+)\n", r.stdout)
        check(r.returncode == 0 and r.stderr == "" and m and int(m[2]) > 0 and
              abs(int(m[1]) - 101 * int(m[2])) <= 808, "Go, static, attached: the counts agree",
              show(r))
        check(p.poll() is None, "the Go program runs on")
        p.stdin.close()
        check(p.wait(timeout=60) == 0, "the Go program ends as it would (status 0)")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # a uretprobe in Go code stays refused (agent/probes.c), as in the cgo build
    errs = {}
    for name in ("go_static", "go"):
        r = _static_launch(name, "uretprobe:TGT:main.add9 { @ = count(); }", "")
        # (the caret's span is the path's length)
        errs[name] = r.stderr.partition("ERROR:")[2].splitlines()[:1]
        check(r.returncode != 0 and "main.add9" in r.stderr, "%s: a Go uretprobe refused" % name,
              show(r))
    check(errs["go_static"] == errs["go"] and errs["go"], "the same refusal", str(errs))


if __name__ == "__main__":
    sys.exit(clitest.main(globals()))

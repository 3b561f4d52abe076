#!/usr/bin/env bash
# Builds and runs the whole test suite: the normal build, then the
# sanitizer build (ASan + UBSan), then the benchmark in quick mode (to
# prove it runs, not to time anything). Exits non-zero if anything fails
# and ends with one line "tests: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/meson_dir.sh

summary() {
  # counts of one meson test run, from its JSON log
  python3 - "$1" <<'PY'
import json, sys
ok = bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("result") in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r.get("result") != "SKIP": bad += 1
print(ok, bad)
PY
}

status=0
meson_dir build
meson compile -C build
meson test -C build --print-errorlogs || status=1
read -r ok1 bad1 < <(summary build/meson-logs/testlog.json)

# The torture tier, short (tests/torture/torture.py, doc/torture.md): Debian's
# python3.11 regression tests, sqlite3, pigz and coreutils under every-entry,
# every-return and 2,000 random instruction probes, seed 13; Go's gofmt and
# rustc with an entry and a return probe on every function; 4 to 5 minutes
# on 2 cores. Its cases count as tests.
python3 tests/torture/torture.py --tier short | tee build/torture.log || status=1
read -r okt badt < <(sed -n 's/^torture: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' \
  build/torture.log | tail -n 1)
ok1=$((ok1 + ${okt:-0})); bad1=$((bad1 + ${badt:-1}))

CC=clang CXX=clang++ meson_dir build-san -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbuildtype=debug
meson compile -C build-san
# The library owns SIGSEGV/SIGBUS/SIGFPE/SIGILL (handler faults, faults of
# probed instructions): ASan must leave those signals to it.
ASAN_OPTIONS=detect_leaks=0:allow_user_segv_handler=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-san --print-errorlogs || status=1
read -r ok2 bad2 < <(summary build-san/meson-logs/testlog.json)

# (a failure of the benchmark or of the fuzz run counts as one failed test
# and is named at the end)
extra_failed=()
bash bench/run.sh --quick || { status=1; extra_failed+=("bench/run.sh --quick"); }

# The AArch64 build under qemu-user (doc/arch.md).
bash scripts/test_aarch64.sh build-aarch64 || status=1
ok3=0; bad3=1
if [ -f build-aarch64/meson-logs/testlog.json ]; then
  read -r ok3 bad3 < <(summary build-aarch64/meson-logs/testlog.json)
fi
ok2=$((ok2 + ok3)); bad2=$((bad2 + bad3))

# the SPEC and filter parsers, and what ukprobe reads from an agent, under
# libFuzzer: a short run of each (when clang is here)
# (its log in build/fuzz.log: libFuzzer's progress lines would fill the
# tail of a CI log that should name what failed)
if bash scripts/fuzz.sh -runs=20000 > build/fuzz.log 2>&1; then
  echo "fuzz: $(grep -E '^Done [0-9]+ runs' build/fuzz.log | tr '\n' ' ')"
else
  status=1; tail -n 40 build/fuzz.log; extra_failed+=("fuzz (build/fuzz.log)")
fi

# Name what failed last, where a truncated CI log still shows it.
python3 - build/meson-logs/testlog.json build-san/meson-logs/testlog.json \
  build-aarch64/meson-logs/testlog.json <<'PY' || true
import json, os, sys
for path in sys.argv[1:]:
    if not os.path.exists(path):
        print("failed: no test log", path); continue
    for line in open(path):
        r = json.loads(line)
        if r.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
            print("failed:", path.split("/")[0], r.get("name"), r.get("result"))
            # what it said of its failure (criterion's "[----]" lines, the
            # CLI cases' FAIL lines), a few lines
            out = (r.get("stdout") or "") + (r.get("stderr") or "")
            said = [l for l in out.splitlines()
                    if ("[----]" in l and l.strip() != "[----]") or "[FAIL]" in l
                    or l.startswith(("FAIL", "---")) or "Error" in l or "error:" in l]
            if not said:  # killed, say: its last lines
                said = [l for l in out.splitlines() if l.strip()][-4:]
            for l in said[:16]:
                print("   ", l[:200])
PY
if [ "$status" != 0 ]; then
  # what a failure on another machine may depend on
  echo "machine: $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
    "ASLR $(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)," \
    "LANG=${LANG-} LC_ALL=${LC_ALL-}," \
    "uprobe_events $(wc -l < /sys/kernel/tracing/uprobe_events 2>/dev/null || echo -)"
  echo "packages: $(dpkg-query -W -f='${binary:Package}=${Version} ' libc6 zlib1g libsqlite3-0 \
    libpython3.11 2>/dev/null)"
fi
grep -E '\] FAIL:' build/torture.log 2>/dev/null | sed 's/^/failed: torture /' || true
for f in "${extra_failed[@]}"; do echo "failed: $f"; done
echo "tests: $((ok1 + ok2)) passed, $((bad1 + bad2 + ${#extra_failed[@]})) failed"
exit $status

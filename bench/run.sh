#!/usr/bin/env bash
# The benchmark runner: builds the benchmarks into build-bench
# (-Dbench=true), runs them, prints the table and writes it as JSON
# (see doc/benchmarks.md).
#
#   bash bench/run.sh            full run (a few minutes): writes
#                                bench/results/latest.json and latest.md
#   bash bench/run.sh --quick    proves that everything runs (CI; well
#                                under a minute): build-bench/bench-quick.json
#   options: --out FILE (the JSON), --no-peers (no uprobes, no uftrace),
#            --reps N, --iters N (per-hit measures)
#
# Peers (the kernel's uprobes through tracefs, uftrace) run where the
# machine allows: as root, tracefs is mounted if it is not; without root,
# tracefs or uftrace the peer is skipped with the reason, never failed.
# The uprobe events this run creates are removed on exit, even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0 peers=1 out="" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --no-peers) peers=0 ;;
    --out) out="$2"; shift ;;
    --reps|--iters) extra+=("$1" "$2"); shift ;;
    *) echo "usage: bash bench/run.sh [--quick] [--no-peers] [--out FILE] [--reps N] [--iters N]" >&2
       exit 2 ;;
  esac
  shift
done
mode=full; [ $quick = 1 ] && mode=quick
if [ -z "$out" ]; then
  if [ $quick = 1 ]; then out=build-bench/bench-quick.json; else out=bench/results/latest.json; fi
fi
md=""
[ $quick = 0 ] && md="${out%.json}.md"

# ------------------------------------------------------------------ build
if [ -f build-bench/meson-private/coredata.dat ]; then
  meson setup --reconfigure build-bench -Dbench=true -Dtests=false >/dev/null
else
  meson setup --wipe build-bench -Dbench=true -Dtests=false >/dev/null 2>&1 ||
    meson setup build-bench -Dbench=true -Dtests=false >/dev/null
fi
ninja -C build-bench bench/bench_overhead bench/bench_scale bench/bench_register \
  bench/bench_coverage bench/bench_coverage_preload.so bench/bench_uftrace bench/bench_uftrace_nop5 \
  bench/bench_tool_hit bench/bench_tool_lib bench/bench_dwarf_hit tools/ukprobe/ukprobe agent/libukprobe-agent.so \
  agent/ukprobe-host >/dev/null
# the Lua interpreter of the tool benchmark's `lua` workload, where
# liblua5.4-dev is installed (bench_tool.py skips the workload without it)
ninja -C build-bench bench/bench_lua >/dev/null 2>&1 || true
bin=build-bench/bench

work=$(mktemp -d "${TMPDIR:-/tmp}/ukpbench.XXXXXX")
group="ukpbench_$$"
tracing=/sys/kernel/tracing
mounted=0
skips="$work/skips.tsv"
: >"$skips"
cat /proc/loadavg >"$work/loadavg" 2>/dev/null || true

# Remove what this run put into tracefs (the programs do it themselves;
# this is for a program that died): after each program, and on exit.
tracefs_cleanup() {
  if [ -w "$tracing/uprobe_events" ]; then
    if [ -d "$tracing/instances/$group" ]; then rmdir "$tracing/instances/$group" 2>/dev/null || true; fi
    { grep -o "^[pr]:$group/[^ ]*" "$tracing/uprobe_events" 2>/dev/null || true; } |
      while read -r ev; do
        echo "-:${ev#?:}" >>"$tracing/uprobe_events" 2>/dev/null || true
      done
  fi
  return 0
}
cleanup() {
  tracefs_cleanup
  if [ $mounted = 1 ]; then umount "$tracing" 2>/dev/null || true; fi
  rm -rf "$work"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ------------------------------------------------------------------ peers
peer_args=(--tracefs-group "$group")
if [ $peers = 0 ]; then
  peer_args=(--no-peers)
elif [ "$(id -u)" = 0 ] && [ ! -e "$tracing/uprobe_events" ] && [ -d "$tracing" ]; then
  if mount -t tracefs nodev "$tracing" 2>/dev/null; then
    mounted=1
  else
    echo "bench: cannot mount tracefs on $tracing: the uprobe peers will be skipped" >&2
  fi
fi

status=0
q=(); [ $quick = 1 ] && q=(--quick)

# --------------------------------------------------------------- per hit
echo "bench: per-hit overhead (bench_overhead)" >&2
"$bin/bench_overhead" "${q[@]}" "${extra[@]}" "${peer_args[@]}" --json "$work/overhead.json" ||
  status=1
tracefs_cleanup

# uftrace's dynamic patching, on the plain target and on the 5-byte NOP
for v in uftrace uftrace_nop5; do
  if [ $peers = 0 ]; then
    printf '%s\tpeers not requested (--no-peers)\n' $v >>"$skips"
    continue
  fi
  if ! command -v uftrace >/dev/null; then
    printf '%s\tuftrace is not installed (apt-get install uftrace)\n' $v >>"$skips"
    continue
  fi
  fn=bench_target prog=bench_uftrace
  [ $v = uftrace_nop5 ] && fn=bench_target_nop5 prog=bench_uftrace_nop5
  echo "bench: $v (uftrace record -P '^$fn\$' $prog)" >&2
  if uftrace record -d "$work/$v.data" --no-libcall -P "^$fn\$" \
       "$bin/$prog" "${q[@]}" "${extra[@]}" --json "$work/$v.json" >"$work/$v.log" 2>&1; then
    uftrace report -d "$work/$v.data" --no-pager -f call 2>/dev/null |
      awk -v f="$fn" '$2 == f { print $1 }' >"$work/$v.calls" || true
  else
    printf '%s\tuftrace record failed (exit %s): %s\n' $v $? \
      "$(tail -n 1 "$work/$v.log" | tr '\t' ' ')" >>"$skips"
  fi
done

# --------------------------------------------------------------- scaling
echo "bench: scaling (bench_scale)" >&2
"$bin/bench_scale" "${q[@]}" "${peer_args[@]}" --json "$work/scale.json" || status=1
tracefs_cleanup

# ---------------------------------------------------------- registration
# (100,000: register_kprobes only; one by one they take minutes)
for n in 1000 10000 100000; do
  if [ $quick = 1 ] && [ $n != 1000 ]; then
    printf 'register_%s\tquick mode: 1,000 probes only\n' $n >>"$skips"
    continue
  fi
  only=(); [ $n = 100000 ] && only=(--batch-only --reps 3)
  echo "bench: registration of $n probes (bench_register)" >&2
  "$bin/bench_register" "${q[@]}" --count $n "${only[@]}" --json "$work/register_$n.json" || status=1
done

# -------------------------------------------------------------- coverage
# The entries of three libraries and of a non-PIE executable (python3.11,
# measured from inside: bench_coverage --exe), then random instruction
# boundaries inside the functions of libsqlite3 and python3.11.
py=/usr/bin/python3.11
exe=(); [ -x $py ] && exe=(--exe $py)
[ -x $py ] || printf 'coverage %s\tnot installed\n' $py >>"$skips"
echo "bench: jump-optimization coverage of libc, libz, libsqlite3${exe:+, python3.11} (bench_coverage)" >&2
"$bin/bench_coverage" "${q[@]}" --lib libc.so.6 --lib libz.so.1 --lib libsqlite3.so.0 "${exe[@]}" \
  --json "$work/coverage.json" || status=1
insns=2000; [ $quick = 1 ] && insns=200
echo "bench: ... at $insns random instruction boundaries of libsqlite3${exe:+, python3.11}" >&2
"$bin/bench_coverage" "${q[@]}" --lib libsqlite3.so.0 "${exe[@]}" --insns $insns --seed 1 \
  --json "$work/coverage_insns.json" || status=1

# ---------------------------------------------------------------- attach
echo "bench: ukprobe -p (attach.py): stop and attach times" >&2
reps=10; [ $quick = 1 ] && reps=2
python3 bench/attach.py --ukprobe build-bench/tools/ukprobe/ukprobe --reps $reps \
  --json "$work/attach.json" || status=1

# ----------------------------------------------------------------- redis
echo "bench: redis-server under redis-benchmark, 3 probes counting: ukprobe -p, bpftrace (redis.py)" >&2
rounds=5 requests=200000; [ $quick = 1 ] && rounds=1 requests=5000
redis_peers=(); [ $peers = 0 ] && redis_peers=(--no-peers)
python3 bench/redis.py --ukprobe build-bench/tools/ukprobe/ukprobe --rounds $rounds \
  --requests $requests "${redis_peers[@]}" --json "$work/redis.json" || status=1

# ------------------------------------------------------------------ tool
# ukprobe itself on real programs, with uftrace and bpftrace (its own
# tables and JSON: bench/results/latest-tool.{json,md} in a full run)
echo "bench: the ukprobe tool on sqlite3 and python3, with uftrace and bpftrace (bench_tool.py)" >&2
tool_peers=(); [ $peers = 0 ] && tool_peers=(--no-peers)
python3 bench/bench_tool.py --ukprobe build-bench/tools/ukprobe/ukprobe --bin "$bin" "${q[@]}" \
  "${tool_peers[@]}" --json "${out%.json}-tool.json" ${md:+--md "${md%.md}-tool.md"} \
  >"$work/tool.md" || status=1
cat "$work/tool.md"

# ----------------------------------------------------------------- report
cmd="bash bench/run.sh"
[ $quick = 1 ] && cmd="$cmd --quick"
python3 bench/report.py --work "$work" --mode $mode --json "$out" ${md:+--markdown "$md"} \
  --command "$cmd${extra[*]:+ ${extra[*]}}" || status=1
echo "bench: results in $out${md:+ and $md}"
exit $status

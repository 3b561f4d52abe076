#!/usr/bin/env bash
# Builds the benchmarks into build-bench (-Dbench=true) and runs
# bench_kprobe. Extra arguments go to it (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d build-bench ]; then
  meson setup --reconfigure build-bench -Dbench=true -Dtests=false >/dev/null
else
  meson setup build-bench -Dbench=true -Dtests=false >/dev/null
fi
ninja -C build-bench bench/bench_kprobe >/dev/null
exec ./build-bench/bench/bench_kprobe "$@"

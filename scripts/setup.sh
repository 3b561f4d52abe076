#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12 (run as root, or
# with sudo available). Safe to run again.
set -euo pipefail
# Besides the build: libc6-dbg (libc's debug symbols, for the tests of
# debug files), xz-utils and binutils (the tests make a MiniDebugInfo
# object; the torture tier disassembles with objdump), python3.11,
# libpython3.11, sqlite3 and python3 (real targets of the tests and
# benchmarks; python3.11 is a non-PIE executable), and
# libpython3.11-testsuite and pigz (the torture tier's programs),
# libiberty-dev (C++ and Rust demangling in ukprobe) and g++ (a C++ test
# program), abigail-tools (the ABI check, scripts/abi_check.sh),
# liblua5.4-dev (the tool benchmark's interpreter, bench/bench_lua.c).
pkgs=(build-essential meson ninja-build pkg-config libzydis-dev libelf-dev
      libcriterion-dev zlib1g-dev libsqlite3-dev clang libclang-rt-14-dev
      liblzma-dev xz-utils binutils libc6-dbg python3.11 libpython3.11 sqlite3 python3
      libpython3.11-testsuite pigz libiberty-dev g++ abigail-tools liblua5.4-dev
      # redis-server, redis-tools: the real-server test of ukprobe -p (cli_attach_redis)
      redis-server redis-tools)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
# Optional: uftrace, a peer in the benchmark (bench/run.sh skips it when it
# is missing). Two small packages; failing to install it fails nothing.
if ! command -v uftrace >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq uftrace >/dev/null 2>&1 ||
    echo "setup: uftrace not installed (optional: the benchmark skips that peer)" >&2
fi
# Optional: bpftrace, a peer in the tool benchmark (bench/bench_tool.py
# skips it when it is missing or cannot attach: it needs root).
if ! command -v bpftrace >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bpftrace >/dev/null 2>&1 ||
    echo "setup: bpftrace not installed (optional: the benchmark skips that peer)" >&2
fi

#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12 (run as root, or
# with sudo available), then checks that each thing the build, the tests
# and the benchmarks call is there. Safe to run again: it installs by list
# every time (a no-op for what is installed) and skips nothing because a
# tool happens to be present. scripts/fresh_check.sh runs it on a new
# Debian 12 root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup_lib.sh

# Besides the build: libc6-dbg (libc's debug symbols, for the tests of
# debug files), xz-utils and binutils (the tests make a MiniDebugInfo
# object; the torture tier disassembles with objdump), python3.11,
# libpython3.11, sqlite3 and python3 (real targets of the tests and
# benchmarks; python3.11 is a non-PIE executable), and
# libpython3.11-testsuite and pigz (the torture tier's programs),
# libiberty-dev (C++ and Rust demangling in ukprobe) and g++ (a C++ test
# program), abigail-tools (the ABI check, scripts/abi_check.sh),
# liblua5.4-dev (the tool benchmark's interpreter, bench/bench_lua.c),
# groff-base (the man pages' rendering test), util-linux (setpriv,
# setarch), git (the benchmarks record the commit they measured),
# uftrace and bpftrace (the benchmarks' peers), libdw-dev (ukprobe's source
# lines and variables by name, from DWARF), systemtap-sdt-dev (<sys/sdt.h>:
# the SDT probes of tests/unit/test_usdt.c and tests/cli), redis-server and
# redis-tools (the real-server test of ukprobe -p, cli_attach_redis),
# golang-go (a statically linked Go program the ptrace loader's test loads
# into, tests/loader/loadee.go; the Go programs of cli_go; the torture
# tier's gofmt, built from its sources) and rustc (the Rust programs of
# cli_rust; the torture tier's rustc cases probe its own libstd and
# librustc_driver), llvm (llvm-dwarfdump: cli_dwarf_entry_value
# reads a parameter's location list with a reader other than libdw),
# postgresql (the second real server of ukprobe -p -f, cli_attach_postgres:
# initdb, postgres, pgbench, psql; the test runs its own instance, not the
# service), strace (cli_attach_fork_fds holds up the agent thread's close()
# calls with its delay injection), musl-tools (musl-gcc: a static program
# on another C library for the freestanding agent, cli_static).
pkgs=(build-essential meson ninja-build pkgconf libzydis-dev libelf-dev
      libcriterion-dev zlib1g-dev libsqlite3-dev clang libclang-rt-14-dev
      liblzma-dev xz-utils binutils libc6-dbg python3.11 libpython3.11 sqlite3 python3
      libpython3.11-testsuite pigz libiberty-dev g++ abigail-tools liblua5.4-dev
      groff-base util-linux git uftrace bpftrace libdw-dev
      systemtap-sdt-dev redis-server redis-tools golang-go rustc llvm
      postgresql strace musl-tools)
apt_install "${pkgs[@]}"

need_cmd cc build-essential
need_cmd g++ g++
need_cmd clang clang
need_cmd meson meson
need_cmd ninja ninja-build
need_cmd pkg-config pkgconf
for m in libelf libdw liblzma criterion zlib sqlite3 lua5.4; do
  need_pc pkg-config "$m" "the -dev package of $m"
done
need_file /usr/include/Zydis/Zydis.h libzydis-dev
need_file /usr/include/libiberty/demangle.h libiberty-dev
need_file /usr/include/x86_64-linux-gnu/sys/sdt.h systemtap-sdt-dev
# clang's sanitizer runtimes (the ASan+UBSan build, the fuzzers)
need_file "$(clang -print-file-name=libclang_rt.asan-x86_64.a 2>/dev/null || echo /nonexistent)" \
  libclang-rt-14-dev
need_file "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || echo /nonexistent)" \
  libclang-rt-14-dev
for c in readelf nm objdump as ld; do need_cmd "$c" binutils; done
need_cmd xz xz-utils
need_cmd python3 python3
need_cmd python3.11 python3.11
need_cmd sqlite3 sqlite3
need_cmd pigz pigz
need_cmd abidw abigail-tools
need_cmd abidiff abigail-tools
need_cmd groff groff-base
need_cmd setpriv util-linux
need_cmd setarch util-linux
need_cmd git git
need_cmd uftrace uftrace
need_cmd bpftrace bpftrace
need_cmd redis-server redis-server
need_cmd redis-benchmark redis-tools
need_cmd redis-cli redis-tools
need_cmd go golang-go
need_file /usr/lib/postgresql/15/bin/pgbench postgresql
need_file /usr/bin/rustc rustc
need_file /usr/lib/python3.11/test/regrtest.py libpython3.11-testsuite
# libc's debug file, by the build-id of the libc installed now
libc=/lib/$(gcc -print-multiarch)/libc.so.6
bid=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
need_file "/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug" "libc6-dbg (of the installed libc6)"
setup_verdict setup

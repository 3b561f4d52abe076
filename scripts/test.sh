#!/usr/bin/env bash
# Builds and runs the whole test suite: the normal build, then the
# sanitizer build (ASan + UBSan). Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -d build ]; then meson setup build >/dev/null; fi
meson compile -C build
meson test -C build --print-errorlogs
if [ ! -d build-san ]; then
  CC=clang meson setup build-san -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debug >/dev/null
fi
meson compile -C build-san
ASAN_OPTIONS=detect_leaks=0:allow_user_segv_handler=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-san --print-errorlogs

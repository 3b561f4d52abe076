#!/usr/bin/env bash
# Sets up, builds, and runs the main job: samples/kprobe_example probing
# zlib's deflate during a real compression, then the probe list; then
# ukprobe counting malloc and free in ls.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -d build ]; then meson setup build >/dev/null; fi
meson compile -C build >/dev/null
./build/samples/kprobe_example libz.so.1:deflate 2
echo
echo "--- ukprobe: counting malloc/free of a real program (ls /) ---"
./build/tools/ukprobe/ukprobe stat -e 'p:malloc libc.so.6:malloc' -e 'p:free libc.so.6:free' -- ls -l /usr/lib

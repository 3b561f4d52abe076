#!/usr/bin/env bash
# Cross-builds libukprobes and ukprobe for AArch64 and runs their tests
# under qemu-user (doc/arch.md): the library's (suite aarch64) and
# ukprobe's (suite cli: the aarch64 ukprobe runs the targets built with it,
# the agent preloaded, through binfmt_misc). scripts/setup_aarch64.sh
# installs the toolchain, the arm64 libraries, Criterion and the binfmt
# registration first.
# Usage: scripts/test_aarch64.sh [BUILDDIR]   (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_aarch64.sh
. scripts/meson_dir.sh
dir=${1:-build-aarch64}
meson_dir "$dir" --cross-file cross/aarch64-linux-gnu.ini
meson compile -C "$dir"
status=0
meson test -C "$dir" --print-errorlogs || status=1

# The library as a user gets it: installed (headers, shared library),
# then a program built against the installation alone (the kernel's
# kprobe sample, on libz's deflate) run under qemu.
dest=$(realpath "$dir")/destdir
rm -rf "$dest"
meson install -C "$dir" --destdir "$dest" >/dev/null
prefix=$dest$(meson introspect "$dir" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
libdir=$(dirname "$(find "$prefix" -name libukprobes.so | head -n 1)")
aarch64-linux-gnu-gcc -I"$prefix/include" samples/kprobe_example.c -o "$dir/kprobe_example_installed" \
  -L"$libdir" -lukprobes -lz -Wl,-rpath,"$libdir"
out=$("$dir/kprobe_example_installed" 2>&1) || true
if grep -q "handler_pre: <libz.so.1:deflate>" <<<"$out" && grep -q "handler_post" <<<"$out"; then
  echo "aarch64: the installed library works for a program built against it"
else
  echo "aarch64: the program built against the installed library failed:"; echo "$out" | head -n 20
  status=1
fi
exit $status

#!/usr/bin/env bash
# Cross-builds libukprobes for AArch64 and runs its tests under qemu-user
# (doc/arch.md): scripts/setup_aarch64.sh installs the toolchain, the
# arm64 libraries, Criterion and the binfmt registration first.
# Usage: scripts/test_aarch64.sh [BUILDDIR]   (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_aarch64.sh
dir=${1:-build-aarch64}
if [ ! -d "$dir" ]; then
  meson setup --cross-file cross/aarch64-linux-gnu.ini "$dir" >/dev/null
fi
meson compile -C "$dir"
meson test -C "$dir" --print-errorlogs

#!/usr/bin/env bash
# Installs what the AArch64 cross build and its tests under qemu-user need
# on Debian 12 x86-64 (run as root). Safe to run again.
#  - the cross compilers, qemu-user-static, and Debian's arm64 libraries
#    through multiarch (libelf, liblzma, zlib, libc6 for qemu -L /; libdw:
#    ukprobe's source-level probes);
#  - Criterion for arm64 unpacked into /opt/ukp-a64: libcriterion-dev and
#    libnanomsg5 cannot be installed for amd64 and arm64 at once, and the
#    native build needs the amd64 ones;
#  - qemu registered with binfmt_misc, so that an aarch64 program can
#    exec another (Criterion runs each test in a child it re-executes).
set -euo pipefail
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
pkgs=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
      binutils-aarch64-linux-gnu libc6:arm64 libelf-dev:arm64 liblzma-dev:arm64 zlib1g-dev:arm64
      libdw-dev:arm64
      libsqlite3-dev:arm64 libpython3.11:arm64 libstdc++6:arm64 libgit2-1.5:arm64 libffi8:arm64
      pkg-config)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -q
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q || true
  $SUDO apt-get install -y -q "${missing[@]}"
fi

root=/opt/ukp-a64
if [ ! -e "$root/usr/lib/aarch64-linux-gnu/libcriterion.so.3" ] ||
   [ ! -e "$root/usr/lib/aarch64-linux-gnu/libnanomsg.so.5" ]; then
  tmp=$(mktemp -d)
  chmod 755 "$tmp"
  (cd "$tmp" && apt-get download libcriterion-dev:arm64 libcriterion3:arm64 libnanomsg5:arm64)
  $SUDO mkdir -p "$root"
  for d in "$tmp"/*.deb; do $SUDO dpkg -x "$d" "$root"; done
  rm -rf "$tmp"
fi

# binfmt_misc: mounted and qemu-aarch64 registered (the F flag keeps the
# interpreter open, so it works in any mount namespace afterwards).
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  [ -r "$conf" ] || { echo "setup_aarch64: $conf missing (qemu-user-static)" >&2; exit 1; }
  $SUDO sh -c "cat $conf > /proc/sys/fs/binfmt_misc/register"
fi
echo "setup_aarch64: ok"

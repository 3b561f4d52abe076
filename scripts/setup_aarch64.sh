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
cd "$(dirname "$0")/.."
. scripts/setup_lib.sh
# pkgconf:arm64 brings aarch64-linux-gnu-pkg-config (the cross file's
# pkgconfig); libiberty-dev:arm64 the demangler ukprobe links;
# libc6-dbg:arm64 the debug file of the arm64 libc (cli_debug_symbols);
# systemtap-sdt-dev:arm64 the cross compiler's <sys/sdt.h> (its
# multiarch directory: the SDT targets of cli_usdt).
pkgs=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
      binutils-aarch64-linux-gnu libc6:arm64 libelf-dev:arm64 liblzma-dev:arm64 zlib1g-dev:arm64
      libdw-dev:arm64
      libsqlite3-dev:arm64 libpython3.11:arm64 libstdc++6:arm64 libgit2-1.5:arm64 libffi8:arm64
      pkgconf pkgconf:arm64 libiberty-dev:arm64 libc6-dbg:arm64 systemtap-sdt-dev:arm64)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get "${APT_OPTS[@]}" update >/dev/null
fi
apt_install "${pkgs[@]}"

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
need_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
need_cmd aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
need_cmd qemu-aarch64-static qemu-user-static
need_cmd aarch64-linux-gnu-pkg-config pkgconf:arm64
for m in libelf libdw liblzma zlib sqlite3; do
  need_pc aarch64-linux-gnu-pkg-config "$m" "the arm64 -dev package of $m"
done
need_file /usr/lib/aarch64-linux-gnu/libiberty.a libiberty-dev:arm64
need_file /usr/include/libiberty/demangle.h libiberty-dev
need_file "$root/usr/lib/aarch64-linux-gnu/libcriterion.so.3" "libcriterion3:arm64 (unpacked)"
need_file "$root/usr/lib/aarch64-linux-gnu/libnanomsg.so.5" "libnanomsg5:arm64 (unpacked)"
need_file "$root/usr/include/criterion/criterion.h" "libcriterion-dev:arm64 (unpacked)"
libc=/lib/aarch64-linux-gnu/libc.so.6
bid=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
need_file "/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug" "libc6-dbg:arm64 (of the installed libc6:arm64)"
need_file /proc/sys/fs/binfmt_misc/qemu-aarch64 "qemu-user-static (binfmt registration)"
setup_verdict setup_aarch64
echo "setup_aarch64: ok"

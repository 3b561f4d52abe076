#!/usr/bin/env bash
# The README's two commands on a really fresh Debian 12: builds a minimal
# Debian 12 root with mmdebstrap in a temporary directory, puts a clean
# clone of this repository's HEAD (or REV) in it, and runs, as root in a
# chroot with /proc, /sys and /dev mounted (ptrace and perf work there:
# the kernel is the host's), either `bash scripts/demo.sh` then
# `bash scripts/test.sh` (--mode demo-test, the default) or test.sh alone
# (--mode test). Prints what it ran, how long each step took, the
# packages the project's scripts installed, and test.sh's last line; the
# whole log goes to --log FILE too.
#
# Not run by CI: it downloads a Debian root and ~1.5 GB of packages. Needs
# root, Debian's mirror, and ~8 GB in $TMPDIR (default /var/tmp).
#
# Usage: scripts/fresh_check.sh [--mode demo-test|test] [--log FILE] [--keep] [REV]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mode=demo-test; log=""; keep=0; rev=HEAD
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "fresh_check: unknown option $1" >&2; exit 2 ;;
    *) rev=$1; shift ;;
  esac
done
case "$mode" in demo-test|test) ;; *) echo "fresh_check: --mode is demo-test or test" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "fresh_check: run as root (chroot, mounts)" >&2; exit 2; }
if [ -n "$log" ]; then
  log=$(realpath -m "$log")
  exec > >(tee "$log") 2>&1
fi

# the host's own tools for this: mmdebstrap (and git for the clone)
. "$here/scripts/setup_lib.sh"
apt_install mmdebstrap git
need_cmd mmdebstrap mmdebstrap
setup_verdict fresh_check

commit=$(git -C "$here" rev-parse "$rev")
work=$(mktemp -d "${TMPDIR:-/var/tmp}/ukp-fresh.XXXXXX")
root=$work/root
cleanup() {
  # the mounts are in a private mount namespace (unshare below) and go
  # with it; this only removes the files
  if [ $keep = 1 ]; then echo "fresh_check: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

t0=$(date +%s)
echo "fresh_check: $(date -u '+%F %T') UTC, commit $commit, mode $mode, root $root"
mirror=http://deb.debian.org/debian
# minbase: apt, dpkg, bash, coreutils and Debian's essential set, nothing of
# the project's (no compiler, no python3, no git)
mmdebstrap --variant=minbase --quiet bookworm "$root" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main"
t1=$(date +%s)
echo "fresh_check: root made in $((t1 - t0)) s ($(chroot "$root" dpkg-query -W | wc -l) packages)"
chroot "$root" dpkg-query -W -f='${binary:Package}\n' | sort > "$work/before.txt"

# a clean clone, as CI makes one, of the commit asked for
git clone -q --no-local "$here" "$root/root/ukprobes"
git -C "$root/root/ukprobes" checkout -q "$commit"

case "$mode" in
  demo-test) steps='bash scripts/demo.sh && echo "fresh_check: demo.sh ok after $((SECONDS)) s" && bash scripts/test.sh' ;;
  test) steps='bash scripts/test.sh' ;;
esac
set +e
unshare --mount --propagation private bash -c '
  set -e
  root=$1; steps=$2
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs tmpfs "$root/dev/shm"
  # the host resolver: the chroot reaches the same mirror
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/ukprobes && SECONDS=0 && $steps"
' fresh_check "$root" "$steps"
rc=$?
set -e
t2=$(date +%s)
chroot "$root" dpkg-query -W -f='${binary:Package}\n' | sort > "$work/after.txt"
added=$(comm -13 "$work/before.txt" "$work/after.txt")
echo "fresh_check: packages the project's scripts installed: $(wc -l <<<"$added")"
tr '\n' ' ' <<<"$added" | fold -s -w 100
echo
echo "fresh_check: exit $rc after $((t2 - t1)) s in the root ($((t2 - t0)) s in all), commit $commit, mode $mode"
exit $rc

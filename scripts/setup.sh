#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12 (run as root, or
# with sudo available). Safe to run again.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libzydis-dev libelf-dev
      libcriterion-dev zlib1g-dev libsqlite3-dev clang libclang-rt-14-dev
      python3.11 libpython3.11-testsuite sqlite3 pigz binutils)   # the torture tier's programs
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

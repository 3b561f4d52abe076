#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12 (run as root, or
# with sudo available). Safe to run again.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libzydis-dev libelf-dev
      libcriterion-dev zlib1g-dev libsqlite3-dev clang libclang-rt-14-dev)
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

# Sourced by the setup scripts: install Debian packages by list, every
# time, and check right after that what the project relies on is there.
# Nothing is skipped because a tool happens to be present: apt-get
# install of an installed package is a quick no-op, and a machine that
# had the tool from elsewhere (another version, a hand install) still gets
# the package the project was tested with.

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
# other jobs (unattended upgrades, a second setup) may hold dpkg's lock:
# wait for it instead of failing
APT_OPTS=(-q -o DPkg::Lock::Timeout=900)

# apt_install PKG...: install the packages; on a machine whose package
# lists are missing or stale (a fresh one has none), update them and try
# again. Prints apt's output only when it fails.
apt_install() {
  local log
  log=$(mktemp)
  if ! $SUDO apt-get "${APT_OPTS[@]}" install -y "$@" >"$log" 2>&1; then
    if ! $SUDO apt-get "${APT_OPTS[@]}" update >>"$log" 2>&1 ||
       ! $SUDO apt-get "${APT_OPTS[@]}" install -y "$@" >>"$log" 2>&1; then
      tail -n 30 "$log" >&2
      rm -f "$log"
      echo "setup: apt-get install failed for: $*" >&2
      return 1
    fi
  fi
  rm -f "$log"
}

# The checks after installing: each names what is missing and which
# package should have brought it, and the caller exits non-zero.
setup_missing=()
need_cmd() {  # need_cmd COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || setup_missing+=("command $1 (package $2)")
}
need_file() {  # need_file PATH PACKAGE
  [ -e "$1" ] || setup_missing+=("file $1 (package $2)")
}
need_pc() {  # need_pc PKG-CONFIG-COMMAND MODULE PACKAGE
  "$1" --exists "$2" 2>/dev/null || setup_missing+=("pkg-config module $2 for $1 (package $3)")
}
setup_verdict() {  # setup_verdict NAME: exit 1 naming what is missing
  if [ ${#setup_missing[@]} -gt 0 ]; then
    echo "$1: missing after installing:" >&2
    printf '  %s\n' "${setup_missing[@]}" >&2
    exit 1
  fi
}

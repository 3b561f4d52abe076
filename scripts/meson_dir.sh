# Sourced by the scripts that build: meson_dir DIR [MESON-SETUP-ARGS...]
# sets DIR up unless it is a finished meson build directory. A directory
# that an earlier, failed setup left half-made (no build.ninja) is removed
# and set up again, and a setup that fails now removes what it made, so a
# rerun never trips over it.
meson_dir() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ] && [ -f "$dir/meson-private/coredata.dat" ]; then
    return 0
  fi
  rm -rf "$dir"
  local log
  log=$(mktemp)
  if ! meson setup "$@" "$dir" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    rm -rf "$dir"
    echo "meson setup of $dir failed (removed; the next run sets it up again)" >&2
    return 1
  fi
  rm -f "$log"
}

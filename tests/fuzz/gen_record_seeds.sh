#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Seeds for fuzz_record (tests/fuzz/corpus_record): recordings of small
# runs by this build's ukprobe record (the records file's RECS messages
# of a return probe with strings, a hist trigger's tables, a stack of a
# process killed with SIGKILL, compact records of entries, and of
# entries and returns), each as the
# fuzzer reads one: a 4-byte little-endian length, the session file, the
# records file. A recording
# of another build is refused at its header: make them again when the
# recording's format or the protocol changes.
#   bash tests/fuzz/gen_record_seeds.sh build/tools/ukprobe/ukprobe tests/fuzz/corpus_record
set -euo pipefail
ukprobe=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed() {
  local name=$1
  shift
  "$ukprobe" record -o "$tmp/$name" "$@" >/dev/null || true
  python3 - "$tmp/$name" "$out/$name" <<'PY'
import os, struct, sys
d, dst = sys.argv[1:3]
s = open(os.path.join(d, "session"), "rb").read()
r = open(os.path.join(d, "records"), "rb").read()
open(dst, "wb").write(struct.pack("<I", len(s)) + s + r)
PY
}
mkdir -p "$out"
seed ls_libc -e 'p:m libc.so.6:malloc size=%di:u64' -e 'r:mr libc.so.6:malloc p=$retval' \
  -e 'p:op libc.so.6:openat f=+0(%si):string fl=%dx:x32' -- ls /
seed sh_hist -e 'p:c libc.so.6:close fd=%di:s32' --trigger 'hist:keys=fd' \
  -e 'r:w libc.so.6:write n=$retval:s64' -- sh -c 'echo a; echo b >/dev/null; echo c'
seed sh_killed -e 'p:g libc.so.6:getpid' --trigger stacktrace:4 -- sh -c 'kill -9 $$'
# entries without arguments: 16-byte compact records (common/region.h)
seed sh_compact -e 'p:c libc.so.6:close' -e 'p:w libc.so.6:write' \
  -- sh -c 'echo a; echo b >/dev/null; echo c'
# entries and returns without arguments: 24-byte compact records with
# the caller
seed sh_compact_ret -e 'p:c libc.so.6:close' -e 'r:cr libc.so.6:close' \
  -e 'r:wr libc.so.6:write' -- sh -c 'echo a; echo b >/dev/null; echo c'
ls -l "$out"

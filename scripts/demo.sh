#!/usr/bin/env bash
# Sets up, builds, and runs the main job: samples/kprobe_example probing
# zlib's deflate during a real compression, then the probe list; then
# ukprobe on the system's own programs: the directories and files ls
# opens (arguments, strings, return values), malloc/free/qsort/strcoll
# counted over a whole shell pipeline (-f: forks and execs), and sort's
# calls to qsort and strcoll as a Perfetto trace (--json), and two
# histograms made in ls (--trigger hist: malloc sizes, readdir latency).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/meson_dir.sh
meson_dir build
meson compile -C build >/dev/null
./build/samples/kprobe_example libz.so.1:deflate 2

ukprobe=./build/tools/ukprobe/ukprobe
echo
echo "--- ukprobe probes: what a glob over zlib resolves to ---"
$ukprobe probes libz.so.1 'deflate*' | head -6
echo
echo "--- ukprobe trace: what ls /usr opens (the directory, and stdio's files) ---"
$ukprobe trace -e 'p:opendir libc.so.6:opendir path=+0(%di):string' \
               -e 'r:opendir_ret libc.so.6:opendir dir=$retval' \
               -e 'p:fopen libc.so.6:fopen* path=+0(%di):string mode=+0(%si):string' \
               -- ls -C /usr
echo
echo "--- ukprobe stat -f: a pipeline, every process of it (sh, ls, sort, head) ---"
$ukprobe stat -f -e 'p:malloc libc.so.6:malloc' -e 'p:free libc.so.6:free' \
                 -e 'p:qsort libc.so.6:qsort' -e 'r:strcoll libc.so.6:strcoll' \
                 -- sh -c 'ls /usr/lib | sort -r | head -3'
echo
echo "--- ukprobe trace --json: sort's qsort and strcoll calls, for ui.perfetto.dev ---"
json=build/demo-sort.json
$ukprobe trace --json "$json" -e 'p libc.so.6:qsort n=%si:u64' -e 'r libc.so.6:qsort' \
               -e 'p libc.so.6:strcoll a=+0(%di):string b=+0(%si):string' \
               -e 'r libc.so.6:strcoll cmp=$retval:s32' -- sort /etc/passwd > /dev/null
python3 - "$json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
calls = [e for e in events if e["ph"] == "X"]
q = [e for e in calls if e["name"] == "qsort"]
print("%s: %d events, %d calls with durations (%d qsort of %s lines, %d strcoll)"
      % (sys.argv[1], len(events), len(calls), len(q),
         "/".join(str(e["args"]["entry"]["n"]) for e in q),
         len([e for e in calls if e["name"] == "strcoll"])))
PY
echo
echo "--- ukprobe stat --trigger hist: the sizes ls asks malloc for, and how long its readdir calls take ---"
$ukprobe stat -f -e 'p:malloc libc.so.6:malloc size=%di:u64 comm=$comm' \
              --trigger 'hist:keys=size.log2:vals=size:sort=size if comm == "ls"' \
              -e 'r:readdir libc.so.6:readdir64 $duration' \
              --trigger 'hist:keys=duration.buckets=1000:sort=duration' \
              -- sh -c 'ls -R /usr/share/doc/zlib1g /usr/share/doc/libc6 > /dev/null' 

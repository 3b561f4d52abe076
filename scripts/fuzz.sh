#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang (ASan + UBSan)
# and runs each on a copy of its seed corpus: fuzz_spec_filter (ukprobe's
# SPEC and filter parsers and the parsed form its agent reads; corpus/),
# fuzz_agent_msgs (what ukprobe reads from an agent; corpus_msgs/),
# fuzz_record (what ukprobe report reads: a recording; corpus_record/) and
# fuzz_script (ukprobe run's script compiler; corpus_script/).
# Extra arguments go to libFuzzer; by default a short run
# (-runs=20000), as CI does. A long run by hand:
#   bash scripts/fuzz.sh -runs=10000000 -jobs=1
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang >/dev/null; then
  echo "fuzz: no clang (scripts/setup.sh installs it)" >&2
  exit 1
fi
mkdir -p build-fuzz
src=common
clang -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I"$src" tests/fuzz/fuzz_spec_filter.c "$src/spec.c" "$src/spec_fetch.c" "$src/spec_sdt.c" \
  "$src/fetch_types.c" "$src/filter.c" "$src/trigger.c" "$src/hist.c" \
  "$src/spec_parsed.c" "$src/filter_run.c" "$src/filter_branch.c" "$src/spec_wire.c" \
  "$src/arch/$(uname -m)/fetch_regs.c" \
  -o build-fuzz/fuzz_spec_filter
# ukprobe's own sources but its main(), for the agent's messages (with
# ukprobe run's compiler, and libdw for the source-level SPECs)
cli=(build-fuzz/script_embed.c)
for f in tools/ukprobe/*.c tools/ukprobe/dwarf/*.c tools/ukprobe/script/*.c \
    tools/ukprobe/arch/"$(uname -m)"/*.c; do
  [ "$f" = tools/ukprobe/main.c ] || cli+=("$f")
done
# (the files a compiled script includes, as tools/ukprobe/meson.build embeds them)
python3 tools/ukprobe/script/embed.py build-fuzz/script_embed.c \
  runtime.h=tools/ukprobe/script/runtime.h script_abi.h=common/script_abi.h \
  ukprobes.h=include/ukprobes.h ukprobes-arch/x86_64.h=include/ukprobes-arch/x86_64.h \
  ukprobes-arch/aarch64.h=include/ukprobes-arch/aarch64.h
# the agent's messages and record directories: against the CLI's own code
for t in fuzz_agent_msgs fuzz_record; do
  clang -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -I"$src" -Itools/ukprobe -Itools/ukprobe/arch -Itools/ukprobe/arch/"$(uname -m)" -DUKPROBE_VERSION='"fuzz"' -DUKPROBE_BUILD_DIR='"."' \
    -DUKPROBE_AGENT_BUILD='""' -DUKPROBE_AGENT_INSTALLED='""' \
    -Itools/ukprobe/script tests/fuzz/$t.c "${cli[@]}" "$src/spec.c" \
    "$src/spec_fetch.c" "$src/spec_sdt.c" \
    "$src/fetch_types.c" "$src/filter.c" "$src/trigger.c" "$src/hist.c" "$src/spec_parsed.c" \
    "$src/filter_run.c" "$src/spec_wire.c" "$src/sdt_refusal.c" "$src/arch/$(uname -m)/fetch_regs.c" \
    -ldw -lelf -liberty -o build-fuzz/$t
done
rm -rf build-fuzz/corpus build-fuzz/corpus_msgs build-fuzz/corpus_record
cp -r tests/fuzz/corpus build-fuzz/corpus
cp -r tests/fuzz/corpus_msgs build-fuzz/corpus_msgs
cp -r tests/fuzz/corpus_record build-fuzz/corpus_record
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-runs=20000)
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build-fuzz/fuzz_spec_filter -max_len=4096 -timeout=10 "${args[@]}" build-fuzz/corpus
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build-fuzz/fuzz_agent_msgs -max_len=16384 -timeout=10 "${args[@]}" build-fuzz/corpus_msgs
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build-fuzz/fuzz_record -max_len=65536 -timeout=10 "${args[@]}" build-fuzz/corpus_record

# ukprobe run's script compiler (tests/fuzz/fuzz_script.c): lexer, parser,
# checks and C translation on any text, with its own seed corpus (the
# tests' scripts).
clang -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Icommon -Itools/ukprobe/script tests/fuzz/fuzz_script.c tools/ukprobe/script/lex.c \
  tools/ukprobe/script/parse.c tools/ukprobe/script/sema.c tools/ukprobe/script/gen.c \
  tools/ukprobe/script/free.c -o build-fuzz/fuzz_script
rm -rf build-fuzz/corpus_script
cp -r tests/fuzz/corpus_script build-fuzz/corpus_script
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build-fuzz/fuzz_script -max_len=4096 -timeout=10 -close_fd_mask=2 "${args[@]}" \
  build-fuzz/corpus_script

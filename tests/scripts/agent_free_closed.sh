#!/bin/bash
# agent_free_closed.sh BIN: the freestanding agent (libukprobe-agent.bin)
# is a closed world the ptrace loader can map into a static program: a
# position-independent executable with no interpreter and no TLS, whose
# only library is libZydis, and whose every undefined symbol is one
# libZydis defines (nothing of a C library: it has none to bind to).
# Fails naming each symbol or property that breaks it.
set -u
bin=$1
bad=0
hdr=$(readelf -hW "$bin") || exit 1
grep -q 'Type: *DYN' <<<"$hdr" || { echo "agent_free_closed: $bin is not ET_DYN" >&2; bad=1; }
segs=$(readelf -lW "$bin")
if grep -qE '^ +(INTERP|TLS) ' <<<"$segs"; then
  echo "agent_free_closed: $bin has an interpreter or a TLS segment" >&2
  bad=1
fi
needed=$(readelf -dW "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
zydis=""
for n in $needed; do
  case $n in
    libZydis.so*) zydis=$({ command -v ldconfig >/dev/null && ldconfig -p || /sbin/ldconfig -p; } |
                             awk -v n="$n" '$1 == n { print $NF; exit }') ;;
    *) echo "agent_free_closed: $bin needs $n (only libZydis may be mapped beside it)" >&2
       bad=1 ;;
  esac
done
[ -n "$zydis" ] || { echo "agent_free_closed: $bin: libZydis not found among its needs" >&2; exit 1; }
defined=$(nm -D --defined-only "$zydis" | awk '{ sub(/@.*/, "", $3); print $3 }')
undef=$(nm -u "$bin" | awk '{ print $2 }')
for u in $undef; do
  case $u in *@*) echo "agent_free_closed: $bin takes the versioned $u" >&2; bad=1; continue ;; esac
  grep -qx -- "$u" <<<"$defined" || { echo "agent_free_closed: $bin needs $u, which libZydis does not define" >&2; bad=1; }
done
[ $bad = 0 ] && echo "agent_free_closed: $(wc -w <<<"$undef") symbols, all libZydis's"
exit $bad

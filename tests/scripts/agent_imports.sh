#!/bin/bash
# agent_imports.sh AGENT: the agent imports none of the C library
# functions it has its own of (src/base/libc.h, doc/static_agent.md: "The
# agent's own C library"), nor the stdio its messages went through before
# (they are written with the agent's dprintf now), nor the dynamic
# loader's queries (dl_iterate_phdr, dladdr, dladdr1, dlinfo), and has no
# TLS segment.
# Fails naming each one still imported.
set -u
agent=$1
own="memchr memcmp bcmp memcpy memmove memset explicit_bzero __memcpy_chk __memmove_chk
  __memset_chk strlen strnlen strcmp strncmp strcpy stpcpy strcat __strcpy_chk strchr strchrnul strrchr
  strspn strcspn strstr strtok_r strtol strtoul __ctype_b_loc fnmatch snprintf vsnprintf
  sprintf vsprintf dprintf vdprintf __snprintf_chk __vsnprintf_chk __sprintf_chk
  __vsprintf_chk vfprintf fputs fwrite stderr __fprintf_chk sbrk"
own=$(echo $own)
imports=$(nm -D --undefined-only "$agent" | awk '{ sub(/@.*/, "", $2); print $2 }') || exit 1
[ -n "$imports" ] || { echo "agent_imports: no imports read from $agent" >&2; exit 1; }
bad=0
for f in $own; do
  if grep -qx -- "$f" <<<"$imports"; then
    echo "agent_imports: $agent imports $f (the agent has its own: src/base/libc.h)" >&2
    bad=1
  fi
done
# and no other of their families: a new call of libc's mempcpy, stpcpy,
# strcat... must get its own first (strerror is "What the agent imports
# today"'s, fprintf the public API's FILE dumpers')
for f in $(grep -E '^(mem|str|stp|bcmp|bzero)|printf|^__.*_chk$|^(is|to)[a-z]+$|^__ctype' <<<"$imports"); do
  case " $own strerror fprintf __stack_chk_fail " in
    *" $f "*) ;;
    *) echo "agent_imports: $agent imports $f: give the agent its own (src/base/libc.h)" >&2
       bad=1 ;;
  esac
done
# and none of the dynamic loader's address and path queries: an
# address's object from the library's walk (ukp_object_at), a search path
# from the object's dynamic section (common/search_path.c); the walk itself
# is the loader's dl_iterate_phdr() in this agent (the freestanding one has
# its own table: agent_free_closed); dlsym/dlvsym (the interposers'
# constructors) and _r_debug (the loader watch) stay
loader="dladdr dladdr1 dlinfo"
for f in $loader; do
  if grep -qx -- "$f" <<<"$imports"; then
    echo "agent_imports: $agent imports $f (the loader's query: the library's object table answers it, doc/static_agent.md)" >&2
    bad=1
  fi
done
# and no TLS of its own: libukprobes' and the agent's per-thread state is
# in the per-thread block (common/thread_block.h, src/base/tb_lib.h)
if readelf -lW "$agent" | grep -qE '^ +TLS '; then
  echo "agent_imports: $agent has a TLS segment (per-thread state goes in the thread's block: src/base/tb_lib.h)" >&2
  bad=1
fi
[ $bad = 0 ] && echo "agent_imports: $(wc -l <<<"$imports") imports, none of the agent's own C library"
exit $bad

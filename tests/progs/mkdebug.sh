#!/bin/sh
# SPDX-License-Identifier: MIT
# Strip a shared object of .symtab and give its symbols back the ways
# Linux distributions do (binutils and xz only):
#   mkdebug.sh minidebug IN OUT
#       OUT has .gnu_debugdata: an xz-compressed ELF whose .symtab holds
#       the functions .dynsym lacks (Fedora's MiniDebugInfo recipe).
#   mkdebug.sh buildid IN OUT ROOT [DEBUG_OF]
#       OUT is stripped; ROOT/.build-id/NN/REST.debug (NN/REST: IN's
#       build-id) holds the debug file of DEBUG_OF (default IN: a
#       different object makes a debug file whose build-id does not match).
#   mkdebug.sh debuglink IN OUT DEBUG [DEBUG_OF]
#       OUT is stripped with a .gnu_debuglink naming DEBUG, its debug file
#       (or, with DEBUG_OF, that object's: its CRC does not match).
set -eu
mode=$1 in=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $mode in
minidebug)
	nm -D --format=posix --defined-only "$in" | awk '{ print $1 }' | sort > "$tmp/dynsyms"
	nm --format=posix --defined-only "$in" |
		awk '$2 == "T" || $2 == "t" { print $1 }' | sort > "$tmp/funcsyms"
	comm -13 "$tmp/dynsyms" "$tmp/funcsyms" > "$tmp/keep"
	objcopy --only-keep-debug "$in" "$tmp/debug"
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols="$tmp/keep" "$tmp/debug" "$tmp/mini"
	xz -c "$tmp/mini" > "$tmp/mini.xz"
	strip --strip-all -R .comment -o "$tmp/stripped" "$in"
	objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/stripped" "$out"
	;;
buildid)
	root=$4 from=${5:-$in}
	id=$(readelf -n "$in" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
	[ -n "$id" ] || { echo "$in has no build-id" >&2; exit 1; }
	dir=$root/.build-id/$(echo "$id" | cut -c1-2)
	rm -rf "$root"
	mkdir -p "$dir"
	objcopy --only-keep-debug "$from" "$dir/$(echo "$id" | cut -c3-).debug"
	strip --strip-all -o "$out" "$in"
	;;
debuglink)
	debug=$4
	objcopy --only-keep-debug "$in" "$debug"
	strip --strip-all -o "$tmp/stripped" "$in"
	objcopy --add-gnu-debuglink="$debug" "$tmp/stripped" "$out"
	if [ $# -ge 5 ]; then
		objcopy --only-keep-debug "$5" "$debug"
	fi
	;;
*)
	echo "mkdebug.sh: unknown mode $mode" >&2
	exit 2
	;;
esac

// SPDX-License-Identifier: MIT
/*
 * func_returns.c - where a function returns from (ukprobes_func_returns).
 *
 * A return probe swaps the return address, which a runtime that walks
 * its own stacks by return addresses (Go: stack growth copies a
 * goroutine's frames, the garbage collector scans them) cannot take. A
 * probe on each of the function's return instructions sees every return
 * and changes nothing on the stack. The function's code is decoded from
 * its start to its end (the symbol's size), from the bytes the program
 * has without our patches; a direct jump out of it is a tail call: its
 * callee returns for it, so its returns cannot be listed. An indirect
 * jump is taken to stay inside (a jump table).
 *
 * Context: [reg] (the registry mutex).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <ukprobes.h>

#include "arch/arch.h"
#include "base/base.h"
#include "core/core.h"
#include "symbols/symbols.h"
#include "text/text.h"

/* Decoded in windows of this many bytes, with room for the longest
 * instruction past each. */
#define WIN 4096
#define INSN_MAX 16

static int func_returns(uintptr_t func, unsigned long *rets, size_t max, const char **why)
{
	struct ukp_symres sym;
	uint8_t buf[WIN + INSN_MAX];
	uintptr_t end, pos;
	size_t n = 0;

	if (ukp_sym_lookup_addr(func, &sym) || sym.start != func || !sym.size) {
		*why = "no function starts there";
		return -ENOENT;
	}
	end = sym.start + sym.size;
	for (pos = sym.start; pos < end;) {
		size_t have = ukp_read_original(pos, buf, end - pos < sizeof(buf) ? end - pos
										     : sizeof(buf));
		size_t off = 0;

		if (!have) {
			*why = "the function's code cannot be read";
			return -EINVAL;
		}
		/* the last instruction of a window may run past it: it is
		 * decoded again at the next window's start */
		while (off < have && (off < WIN || pos + have == end)) {
			uintptr_t at = pos + off, target = 0;
			size_t len;
			enum arch_insn_flow f = arch_insn_flow(buf + off, have - off, at, &len,
								  &target);

			if (!len) {
				*why = "an instruction of the function does not decode";
				return -EINVAL;
			}
			if (f == ARCH_FLOW_RET) {
				if (n < max)
					rets[n] = at;
				n++;
			} else if (f == ARCH_FLOW_JUMP && (target < sym.start || target >= end)) {
				*why = "the function leaves by a jump to other code (a tail call)";
				return -ENOTSUP;
			}
			off += len;
		}
		pos += off;
	}
	if (!n) {
		*why = "the function has no return instruction";
		return -ENOENT;
	}
	return n > max ? -E2BIG : (int)n;
}

UKPROBES_API int ukprobes_func_returns(void *func, unsigned long *rets, size_t max,
				       const char **why)
{
	const char *w = NULL;
	int ret;

	if (!func || (!rets && max))
		return -EINVAL;
	ret = ukp_lock_for_show();
	if (ret)
		return ret;
	ret = func_returns((uintptr_t)func, rets, max, &w);
	ukp_unlock_for_show();
	if (why)
		*why = w;
	return ret;
}

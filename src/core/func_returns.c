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
#include "flow/codeflow.h"
#include "symbols/symbols.h"
#include "text/text.h"

/* Decoded in windows of this many bytes, with room for the longest
 * instruction past each. */
#define WIN 4096
#define INSN_MAX 16

/* The instruction starts before a return that an epilogue may begin at
 * (three, and NOPs before the return) */
#define EPI_INSNS 6

/* [reg] The exit of the return at ret in sym, whose last instructions
 * before it start at prev[0..nprev) (the nearest last). */
static void find_exit(const struct ukp_symres *sym, uintptr_t ret, const uintptr_t *prev,
		      size_t nprev, struct ukprobes_func_exit *x)
{
	uint8_t code[UKP_MAX_INSN_SIZE * EPI_INSNS + 1];
	struct arch_exit e;
	const char *w;
	size_t i, n;

	x->addr = ret;
	x->ret = ret;
	x->sp_adj = 0;
	x->fp_at = -1;
	/* the longest epilogue first */
	for (i = 0; i < nprev; i++) {
		uintptr_t at = prev[i];

		if (ret + 1 - at > sizeof(code))
			continue;
		n = ukp_read_original(at, code, ret + 1 - at);
		if (n != ret + 1 - at || !arch_func_exit(code, n, &e) || e.len != n)
			continue;
		if (ukp_codeflow_check(sym, at, e.len, &w))
			continue; /* a jump lands inside: the ret sees every return */
		x->addr = at;
		x->sp_adj = e.sp_adj;
		x->fp_at = e.fp_at;
		return;
	}
}

static int func_returns(uintptr_t func, unsigned long *rets, struct ukprobes_func_exit *exits,
			size_t max, const char **why)
{
	uintptr_t prev[EPI_INSNS] = { 0 };
	size_t nprev = 0;
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
				if (n < max && rets)
					rets[n] = at;
				if (n < max && exits)
					find_exit(&sym, at, prev, nprev, &exits[n]);
				n++;
			} else if (f == ARCH_FLOW_JUMP && (target < sym.start || target >= end)) {
				*why = "the function leaves by a jump to other code (a tail call)";
				return -ENOTSUP;
			}
			/* (the nearest last; a window's last instruction,
			 * decoded again, is recorded once) */
			if (!nprev || prev[nprev - 1] != at) {
				if (nprev == EPI_INSNS) {
					memmove(prev, prev + 1, sizeof(prev) - sizeof(prev[0]));
					nprev--;
				}
				prev[nprev++] = at;
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
	ret = func_returns((uintptr_t)func, rets, NULL, max, &w);
	ukp_unlock_for_show();
	if (why)
		*why = w;
	return ret;
}

UKPROBES_API int ukprobes_func_exits(void *func, struct ukprobes_func_exit *exits, size_t max,
				     const char **why)
{
	const char *w = NULL;
	int ret;

	if (!func || (!exits && max))
		return -EINVAL;
	ret = ukp_lock_for_show();
	if (ret)
		return ret;
	ret = func_returns((uintptr_t)func, NULL, exits, max, &w);
	ukp_unlock_for_show();
	if (why)
		*why = w;
	return ret;
}

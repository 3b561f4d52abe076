/* SPDX-License-Identifier: MIT */
/*
 * kretprobe_unwind.c - stack traces and unwinding while return addresses
 * are hijacked (the kernel's unwind_recover_rethook, for a process; the
 * same job as uftrace's libmcount/wrap.c does for its return hooks).
 *
 * A pending kretprobe leaves the trampoline's address in its function's
 * return slot. Two kinds of walkers read those slots:
 *
 *  - Stack traces (glibc's backtrace(), libgcc's _Unwind_Backtrace()):
 *    interposed; the real return addresses go back into every live slot
 *    for the duration of the walk, then the trampoline goes back in. The
 *    trace shows the real addresses and the probes stay armed.
 *
 *  - Every other walk with libgcc (C++ exceptions, pthread_exit() and
 *    thread cancellation, and stack traces our interposers do not stand
 *    before: glibc's __backtrace, its own calls, a handle on libgcc_s)
 *    asks _Unwind_Find_FDE for the frame information of each return
 *    address. For the trampoline's address it asks about the byte
 *    before the trampoline, which only this interposer answers: a
 *    zero-size frame whose return address a DWARF expression finds in
 *    the thread's return stack (kretprobe_fde.c). The walk carries on
 *    to the real caller and changes nothing: the return probes stay
 *    armed (a walk may be a trace); the frames an exception or a thread
 *    exit leaves are dropped as stale later, as after longjmp, without
 *    their handlers.
 *
 * These definitions take effect where they come first in symbol lookup:
 * in a program linked with the static library, and for the shared
 * library once its version script gives them the versions the callers
 * ask for (backtrace@GLIBC_2.2.5, _Unwind_*@GCC_3.0). A program that
 * links libgcc statically (-static-libgcc) bypasses _Unwind_Find_FDE:
 * there, an exception through a pending kretprobe ends the program.
 */
#include <dlfcn.h>
#include <string.h>
#include <unwind.h>

#include "base/base.h"
#include "core/core.h"
#include "core/kretprobes.h"
#include "core/kretprobes_layout.h" /* KRP_MAX_DEPTH */

/* libgcc's struct dwarf_eh_bases (unwind-dw2-fde.h). */
struct ukp_dwarf_eh_bases {
	void *tbase;
	void *dbase;
	void *func;
};

typedef const void *(*find_fde_fn)(void *pc, struct ukp_dwarf_eh_bases *bases);

static int (*real_backtrace)(void **buffer, int size);
static _Unwind_Reason_Code (*real_unwind_backtrace)(_Unwind_Trace_Fn fn, void *arg);
static find_fde_fn real_find_fde;

/*
 * Resolved before main (dlsym is not async-signal-safe, and the
 * interposers may run in signal handlers). libgcc_s may not be loaded in
 * a C program yet (glibc loads it, privately, on the first backtrace or
 * cancellation): load it here, so that there is one and we know it.
 */
__attribute__((constructor)) static void resolve_unwind_reals(void)
{
	void *gcc_s = NULL;

	real_backtrace = (int (*)(void **, int))dlsym(RTLD_NEXT, "backtrace");
	real_unwind_backtrace = (_Unwind_Reason_Code(*)(_Unwind_Trace_Fn, void *))dlsym(
		RTLD_NEXT, "_Unwind_Backtrace");
	real_find_fde = (find_fde_fn)dlsym(RTLD_NEXT, "_Unwind_Find_FDE");
	if (!real_unwind_backtrace || !real_find_fde)
		gcc_s = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (gcc_s && !real_unwind_backtrace)
		real_unwind_backtrace = (_Unwind_Reason_Code(*)(_Unwind_Trace_Fn, void *))dlsym(
			gcc_s, "_Unwind_Backtrace");
	if (gcc_s && !real_find_fde)
		real_find_fde = (find_fde_fn)dlsym(gcc_s, "_Unwind_Find_FDE");
}

/* Drop trampoline addresses a walker may still have recorded. */
static int strip_trampolines(void **buffer, int n)
{
	int i, j;

	for (i = j = 0; i < n; i++)
		if (!is_kretprobe_trampoline((unsigned long)buffer[i]))
			buffer[j++] = buffer[i];
	return j;
}

/*
 * Both walkers start at their caller's frame, which is the interposer's
 * here: that frame is left out, so that the program gets the trace it
 * gets without the library (a Rust panic's backtrace showed the
 * interposer as its frame 0).
 */

/* The IP of frame number want of a libgcc walk (0: the walker's caller). */
struct nth_frame {
	int want, at;
	void *ip;
};

#ifndef UKP_FREE /* (no libc or libgcc walker in the freestanding agent's process) */
/* [any] (a walk's callback) */
static _Unwind_Reason_Code nth_frame_ip(struct _Unwind_Context *ctx, void *arg)
{
	struct nth_frame *w = arg;

	if (w->at++ < w->want)
		return _URC_NO_REASON;
	w->ip = (void *)_Unwind_GetIP(ctx);
	return _URC_END_OF_STACK;
}

/* glibc's backtrace(): the real return addresses, never the trampoline. */
UKPROBES_API int backtrace(void **buffer, int size)
{
	uintptr_t locs[KRP_MAX_DEPTH];
	uint64_t restored;
	int n;

	if (!real_backtrace)
		return 0;
	restored = ukp_krp_restore((uintptr_t)__builtin_frame_address(0), locs);
	n = real_backtrace(buffer, size);
	if (n > 0) {
		memmove(buffer, buffer + 1, (size_t)(n - 1) * sizeof(*buffer));
		n--;
		/* a full buffer: its last frame is the one after, which a
		 * walk of libgcc's (glibc's walker) numbers the same */
		if (n + 1 == size && real_unwind_backtrace) {
			struct nth_frame w = { .want = size };

			real_unwind_backtrace(nth_frame_ip, &w);
			if (w.ip)
				buffer[n++] = w.ip;
		}
	}
	ukp_krp_rehijack(restored, locs);
	return n > 0 ? strip_trampolines(buffer, n) : n;
}

/* The program's walk, past the interposer's frame. */
struct own_frame_skipped {
	_Unwind_Trace_Fn fn;
	void *arg;
	bool skipped;
};

/* [any] (a walk's callback) */
static _Unwind_Reason_Code past_own_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct own_frame_skipped *w = arg;

	if (!w->skipped) {
		w->skipped = true;
		return _URC_NO_REASON;
	}
	return w->fn(ctx, w->arg);
}

/* libgcc's stack walker, for the programs that call it themselves. */
UKPROBES_API _Unwind_Reason_Code _Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg)
{
	uintptr_t locs[KRP_MAX_DEPTH];
	struct own_frame_skipped w = { .fn = fn, .arg = arg };
	_Unwind_Reason_Code ret;
	uint64_t restored;

	if (!real_unwind_backtrace)
		return _URC_END_OF_STACK;
	restored = ukp_krp_restore((uintptr_t)__builtin_frame_address(0), locs);
	ret = real_unwind_backtrace(past_own_frame, &w);
	ukp_krp_rehijack(restored, locs);
	return ret;
}

#endif

/* libgcc's frame lookup: see the comment at the top. */
UKPROBES_API const void *_Unwind_Find_FDE(void *pc, struct ukp_dwarf_eh_bases *bases)
{
	const void *fde;
	uintptr_t func;

	if ((uintptr_t)pc == (uintptr_t)ukp_kretprobe_trampoline - 1) {
		/* No return stack on this thread: no frame information, the
		 * walk ends here. */
		fde = ukp_krp_pseudo_fde(&func);
		if (!fde)
			return NULL;
		bases->tbase = NULL;
		bases->dbase = NULL;
		bases->func = (void *)func;
		return fde;
	}
	return real_find_fde ? real_find_fde(pc, bases) : NULL;
}

/* [reg] */
bool ukp_krp_unwind_ready(void)
{
	return real_find_fde != NULL;
}

/* [any] */
UKPROBES_API unsigned long kretprobe_find_ret_addr(unsigned long task, void *fp, void **cur)
{
	return ukp_krp_find_ret(task, (uintptr_t)fp, cur);
}

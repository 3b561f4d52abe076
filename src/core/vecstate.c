/* SPDX-License-Identifier: MIT */
/*
 * vecstate.c - who keeps the vector state on the trap-free hit paths.
 *
 * A jump-optimized probe (the detour, optprobe_tramp.S) and a return
 * probe (the return trampoline, kretprobe_tramp.S) interrupt the program
 * with no signal frame, so the vector, x87 and MXCSR state of the
 * interrupted code is still in the registers when C code runs. Saving it
 * on every hit costs more than the rest of the hit (an XSAVE/XRSTOR
 * pair: see bench/). The kernel's optprobes never save it: kernel handlers
 * may not touch it. We get the same cost without that rule:
 *
 *  - The library's own hit path is built with -mgeneral-regs-only and
 *    checked at start-up (ukp_vecstate_init): the code reachable from
 *    ukp_optprobe_hit, ukp_kretprobe_dispatch and the handler thunks
 *    must not touch the vector state (arch_code_vector_free; its
 *    indirect calls are the handlers). Only then is ukp_vec_lazy set and
 *    the templates stop saving the state.
 *  - Each handler is checked when its probe is registered
 *    (ukp_vec_free): one proven vector-free is called directly; any other
 *    is called through arch_vecsafe_call, which saves the state around it
 *    (trap.c, ukp_call_handler). A handler pointer changed after
 *    registration no longer matches the proven one and takes the safe
 *    call.
 *
 * UKPROBES_LAZY_VECTOR=0 in the environment makes the templates save the
 * state on every hit, as when the check fails (a sanitizer build, whose
 * instrumentation calls into its runtime, fails it).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "base/base.h"
#include "process/process.h"
#include "symbols/symbols.h"
#include "core/kretprobes.h"

__attribute__((visibility("hidden"))) uint32_t ukp_vec_lazy;

/* Why the hit path was not proven vector-free, for tests and logs. */
const char *ukp_vec_lazy_why;
uintptr_t ukp_vec_lazy_where;

/* The library's own handlers: vector-free when the hit path is. */
static bool own_handler(const void *fn)
{
	return fn == (const void *)ukp_kretprobe_pre_handler;
}

/*
 * Calls the check need not follow: arch_vecsafe_call saves the state
 * itself; ukp_signals_install is reached from copy_from_user_nofault()
 * only when the library's handlers are not installed, which no hit ever
 * sees (they are installed when the library is loaded, and again before
 * the first registration after ukprobes_shutdown()).
 */
static const uintptr_t *safe_calls(size_t *n)
{
	static uintptr_t safe[2];

	safe[0] = (uintptr_t)arch_vecsafe_call;
	safe[1] = (uintptr_t)ukp_signals_install;
	*n = 2;
	return safe;
}

/*
 * Handlers proven (or not) since the loaded objects last changed: a
 * caller that registers probe by probe (ukprobe's agent, one SPEC at a
 * time) mostly passes the same few handlers, and each proof walks their
 * code (looking up every branch target's object). An unload may put
 * other code at a handler's address: the objects' generation clears it.
 */
#define VF_MEMO 8
static struct {
	const void *fn;
	bool ok;
} vf_memo[VF_MEMO];
static unsigned int vf_memo_n, vf_memo_next;
static uint64_t vf_memo_gen;
__attribute__((visibility("hidden"))) uint64_t ukp_vec_walks;

/* [reg] once, under the registry mutex */
void ukp_vecstate_init(void)
{
	const uintptr_t roots[] = {
		(uintptr_t)ukp_optprobe_hit,
		(uintptr_t)ukp_fast_abandoned,
		(uintptr_t)ukp_defer_async_flush,
		(uintptr_t)ukp_krp_recycle,
		(uintptr_t)ukp_kretprobe_dispatch,
		(uintptr_t)ukp_kretprobe_pre_handler,
		(uintptr_t)ukp_kprobe_thunk,
		(uintptr_t)ukp_krp_thunk,
	};
	const char *env = getenv("UKPROBES_LAZY_VECTOR");
	const uintptr_t *safe;
	size_t i, nsafe;

	ukp_vec_lazy = 0;
	vf_memo_n = 0;
	if (env && !strcmp(env, "0")) {
		ukp_vec_lazy_why = "UKPROBES_LAZY_VECTOR=0";
		return;
	}
	safe = safe_calls(&nsafe);
	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		const char *why;
		uintptr_t where;
		int ret;

		ukp_objects_pin();
		ret = arch_code_vector_free(roots[i], ARCH_VF_INDIRECT_CALLS_OK, safe, nsafe,
					    ukp_read_original, &why, &where);
		ukp_objects_unpin();

		if (ret != 1) {
			struct ukp_symres sym;

			ukp_vec_lazy_why = ret < 0 ? "the check failed" : why;
			ukp_vec_lazy_where = where;
			if (!ukp_sym_lookup_addr(where, &sym) && sym.name)
				pr_debug("vector state: saved on every hit: %s at %s+%#lx\n",
					 ukp_vec_lazy_why, sym.name, (unsigned long)(where - sym.start));
			return;
		}
	}
	ukp_vec_lazy_why = NULL;
	ukp_vec_lazy = 1;
}

/* [reg] registry mutex held */
bool ukp_vec_free(const void *fn)
{
	const uintptr_t *safe;
	const char *why;
	uintptr_t where;
	uint64_t gen;
	size_t nsafe;
	unsigned int i;
	int ret;
	bool ok;

	if (!ukp_vec_lazy)
		return false; /* the templates save it anyway */
	if (own_handler(fn))
		return true;
	gen = ukp_objects_generation();
	if (gen != vf_memo_gen) {
		vf_memo_n = 0;
		vf_memo_gen = gen;
	}
	for (i = 0; i < vf_memo_n; i++)
		if (vf_memo[i].fn == fn)
			return vf_memo[i].ok;
	safe = safe_calls(&nsafe);
	why = NULL;
	where = 0;
	ukp_vec_walks++;
	ukp_objects_pin();
	ret = arch_code_vector_free((uintptr_t)fn, 0, safe, nsafe, ukp_read_original, &why,
				    &where);
	ukp_objects_unpin();
	ok = ret == 1;
	if (!ok)
		pr_debug("vector state: handler %p is called with the state saved: %s at %#lx\n",
			 fn, why ? why : "error", (unsigned long)where);
	/* (a walk that could not run, e.g. out of memory, is not kept) */
	if (ret >= 0) {
		i = vf_memo_n < VF_MEMO ? vf_memo_n++ : vf_memo_next++ % VF_MEMO;
		vf_memo[i].fn = fn;
		vf_memo[i].ok = ok;
	}
	return ok;
}

uintptr_t ukp_vf_base[UKP_VF_BASES];

/* [reg] fn: not NULL. 0 as a whole (base 0, offset 0) reads as none: a
 * base is set 4 bytes below the handler that sets it. */
int32_t ukp_vf_rel(const void *fn)
{
	_Static_assert(UKP_VF_BASES == 4, "two bits of base");
	unsigned int i;

	for (i = 0; i < UKP_VF_BASES; i++) {
		intptr_t d;

		if (!ukp_vf_base[i])
			ukp_vf_base[i] = (uintptr_t)fn - 4;
		d = (intptr_t)((uintptr_t)fn - ukp_vf_base[i]);
		if (d >= -(1L << 29) && d < 1L << 29)
			return (int32_t)((uint32_t)d << 2 | i);
	}
	return 0;
}

/* [reg] */
bool ukp_vec_free_locking(const void *fn)
{
	bool ret;

	if (ukp_lock_for_show())
		return false;
	ret = ukp_vec_free(fn);
	ukp_unlock_for_show();
	return ret;
}

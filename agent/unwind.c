/* SPDX-License-Identifier: MIT */
/*
 * unwind.c - the user stack of a hit, for the stacktrace trigger and
 * ukprobe run's ustack: the return addresses of the frames above the
 * probed address, from the library's stack_trace_save_regs_from() (its
 * call frame information interpreter, frame pointers where an address
 * has none). Here only where the walk starts (the probed address, a
 * function's entry, a return address) and the record's layout.
 *
 * [hit] async-signal-safe and allocation-free, as the library's walk.
 */
#include <stddef.h>
#include <stdatomic.h>

#include "agent.h"

/* [hit] n words to a record slot (maybe unaligned) without memcpy():
 * libc's uses vector registers (agent.h: the handlers stay vector-free). */
static void words_out(unsigned char *dst, const uint64_t *src, uint64_t n)
{
	uint64_t i;
	unsigned int b;

	for (i = 0; i < n; i++)
		for (b = 0; b < 8; b++) {
			dst[i * 8 + b] = (unsigned char)(src[i] >> (8 * b));
			__asm__ volatile("" ::: "memory");
		}
}

/* [hit] ukprobe run's ustack (common/script_abi.h): as a stacktrace
 * trigger's stack. */
__attribute__((visibility("default"))) int ukpa_script_ustack(const struct kprobe *kp, int ret,
							      uint64_t retaddr,
							      const struct pt_regs *regs,
							      uint64_t *frames, int max)
{
	const struct ukpa_probe *pr;
	uintptr_t ip = (uintptr_t)kp->addr;

	if (max <= 0)
		return 0;
	if (ret)
		return (int)stack_trace_save_regs_from(regs, retaddr, STACK_TRACE_RET, frames,
						       (unsigned int)max, 0);
	pr = (const struct ukpa_probe *)(const void *)((const char *)kp -
						       offsetof(struct ukpa_probe, kp));
	return (int)stack_trace_save_regs_from(regs, ip,
					       ip == pr->func ? STACK_TRACE_ENTRY : STACK_TRACE_INSIDE,
					       frames, (unsigned int)max, 0);
}

void ukpa_stack_record(const struct ukpa_probe *pr, const struct pt_regs *regs, uintptr_t ip,
		       uintptr_t caller, unsigned char *data)
{
	const struct ukp_spec *spec = &pr->spec->spec;
	unsigned long frames[UKP_SPEC_PAYLOAD_MAX / 8];
	uint64_t n = 0;
	unsigned int max = spec->stack_max;

	if (max > sizeof(frames) / sizeof(frames[0]))
		max = sizeof(frames) / sizeof(frames[0]);
	/* stacktrace:N: the first N hits */
	if (!spec->stack_count ||
	    (atomic_load_explicit(&pr->spec->stack_left, memory_order_relaxed) > 0 &&
	     atomic_fetch_sub_explicit(&pr->spec->stack_left, 1, memory_order_relaxed) > 0)) {
		if (caller)
			n = stack_trace_save_regs_from(regs, caller, STACK_TRACE_RET, frames, max, 0);
		else if (spec->is_watch) /* ip is the watched address: the access's next insn */
			n = stack_trace_save_regs((struct pt_regs *)regs, frames, max, 0);
		else
			n = stack_trace_save_regs_from(regs, ip,
						       ip == pr->func ? STACK_TRACE_ENTRY
								      : STACK_TRACE_INSIDE,
						       frames, max, 0);
	}
	words_out(data + spec->stack_off, &n, 1);
	words_out(data + spec->stack_off + 8, frames, n);
}

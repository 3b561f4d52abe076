/* SPDX-License-Identifier: MIT */
/*
 * text_view.c - the program's code as it was before the library patched
 * it. The layers that patch code (the core's breakpoints, the
 * optimizer's jumps) register how to undo their patches in a copy; the
 * readers of original code (the flow checks, the blacklist, instruction
 * boundaries, the vector-use proofs) call ukp_read_original() and need
 * nothing of those layers.
 *
 * Context: [reg] (registration, under the registry mutex).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "text/text.h"

#define UNPATCHERS 4

static _Atomic(ukp_text_unpatch_fn) unpatchers[UNPATCHERS];

/* [reg] Once per layer, at its init; a second call with the same fn is
 * a no-op. */
void ukp_text_view_register(ukp_text_unpatch_fn fn)
{
	unsigned int i;

	for (i = 0; i < UNPATCHERS; i++) {
		ukp_text_unpatch_fn cur = NULL;

		if (atomic_compare_exchange_strong(&unpatchers[i], &cur, fn) || cur == fn)
			return;
	}
	__builtin_trap(); /* more patching layers than UNPATCHERS */
}

/* [reg] Bytes of code at addr as they were before our breakpoints and
 * jumps: all at once, or byte by byte up to the end of the mapping. */
size_t ukp_read_original(uintptr_t addr, uint8_t *buf, size_t len)
{
	size_t n;
	unsigned int i;

	if (arch_copy_nofault(buf, (const void *)addr, len) == 0)
		n = len;
	else
		for (n = 0; n < len; n++)
			if (arch_copy_nofault(&buf[n], (const void *)(addr + n), 1))
				break;
	/* in registration order: the core's breakpoints first, then the
	 * optimizer's jumps (a jump's copy holds no breakpoint of ours) */
	for (i = 0; i < UNPATCHERS; i++) {
		ukp_text_unpatch_fn fn = atomic_load(&unpatchers[i]);

		if (!fn)
			break;
		fn(addr, buf, n);
	}
	return n;
}

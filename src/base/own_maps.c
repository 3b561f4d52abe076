/* SPDX-License-Identifier: MIT */
/*
 * own_maps.c - the freestanding agent's record of the memory it maps
 * (sys.h: ukp_own_map_note/ukp_own_unmap_note; doc/static_agent.md,
 * "Unloading at the detach"). Every mmap and munmap of the library and
 * the agent in that build goes through sys.h's calls, free/sys.c's
 * wrappers or the thread blocks' own (thread_block.c), and each notes
 * the range here: the set of ranges the agent has mapped and not
 * unmapped, which ukprobe unmaps at the unload (tools/ukprobe/load.c,
 * ukp_unload) with every thread of the process stopped. A range is
 * forgotten before it is unmapped (the address may be the program's
 * right after) and noted after it is mapped.
 *
 * [any] context (the thread blocks' arena is mapped at a thread's first
 * need, in a handler too): a spin lock taken with every signal blocked,
 * no allocation. Other builds note nothing (an ordinary library's
 * mappings go with the process or are the program's).
 */
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "arch/arch.h"
#include "base/sys.h"
#include "load_block.h"

struct ukp_own_maps ukp_own_maps;
static int lock;

static UKP_TRAP_TEXT void take(uint64_t *old)
{
	uint64_t all = ~0ULL;
	int expect;

	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)old, 8);
	for (;;) {
		expect = 0;
		if (__atomic_compare_exchange_n(&lock, &expect, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		arch_syscall3(__NR_sched_yield, 0, 0, 0);
	}
}

static UKP_TRAP_TEXT void give(uint64_t *old)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)old, 0, 8);
}

/* [lock] [lo, hi) taken out of every range (a range split in two when
 * it is cut in its middle; no room for the second half: the record is
 * no longer whole, and says so) */
static UKP_TRAP_TEXT void cut(uintptr_t lo, uintptr_t hi)
{
	struct ukp_own_maps *m = &ukp_own_maps;
	uint32_t i;

	for (i = 0; i < m->n;) {
		uintptr_t a = m->r[i].lo, b = m->r[i].hi;

		if (hi <= a || lo >= b) {
			i++;
			continue;
		}
		if (lo > a && hi < b) {
			m->r[i].hi = lo;
			if (m->n < UKP_OWN_MAPS_MAX)
				m->r[m->n++] = (struct ukp_own_range){ hi, b };
			else
				m->lost = 1;
			i++;
		} else if (lo > a) {
			m->r[i++].hi = lo;
		} else if (hi < b) {
			m->r[i++].lo = hi;
		} else {
			m->r[i] = m->r[--m->n];
		}
	}
}

static UKP_TRAP_TEXT uintptr_t page_end(uintptr_t a, size_t len)
{
	return (a + len + 4095) & ~(uintptr_t)4095;
}

UKP_TRAP_TEXT void ukp_own_map_note_(void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = page_end(lo, len);
	uint64_t old;

	take(&old);
	cut(lo, hi); /* (a fixed mapping over one of its own) */
	if (ukp_own_maps.n < UKP_OWN_MAPS_MAX)
		ukp_own_maps.r[ukp_own_maps.n++] = (struct ukp_own_range){ lo, hi };
	else
		ukp_own_maps.lost = 1;
	give(&old);
}

UKP_TRAP_TEXT void ukp_own_unmap_note_(void *addr, size_t len)
{
	uint64_t old;

	take(&old);
	cut((uintptr_t)addr & ~(uintptr_t)4095, page_end((uintptr_t)addr, len));
	give(&old);
}

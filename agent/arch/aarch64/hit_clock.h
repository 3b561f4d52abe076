/* SPDX-License-Identifier: MIT */
/*
 * hit_clock.h - AArch64's event clock for ring.c (its only includer): the
 * generic timer's virtual counter (cntvct_el0), which arm64 Linux lets
 * user space read and its vDSO uses, at the constant rate cntfrq_el0
 * gives. The CPU comes from the thread's rseq area, where the C library
 * registered one (glibc 2.35 on); else from getcpu (a system call: the
 * architecture has no user-readable CPU number).
 */
#ifndef UKPA_HIT_CLOCK_H
#define UKPA_HIT_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "raw_syscall.h"

/* [hit] The counter, and the CPU the thread runs on. The isb keeps the
 * read from being taken ahead of the code before it, as the vDSO does. */
static inline uint64_t hit_counter_cpu(int32_t *cpu)
{
	uint64_t t;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(t) :: "memory");
	if (__rseq_size >= offsetof(struct rseq, cpu_id) + sizeof(uint32_t)) {
		const volatile struct rseq *rs = (const volatile struct rseq *)(const void *)
			((const char *)__builtin_thread_pointer() + __rseq_offset);

		*cpu = (int32_t)rs->cpu_id;
	} else {
		unsigned int c = 0;

		/* (the agent's own call: the program's syscall() is the
		 * agent's interposer, raw_fork.c, not for the hit path) */
		ukpa_sys(SYS_getcpu, &c, 0, 0);
		*cpu = (int32_t)c;
	}
	return t;
}

/* [init] The counter runs (its frequency is set up by the firmware). */
static inline bool hit_counter_usable(void)
{
	uint64_t f;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	return f != 0;
}

#endif /* UKPA_HIT_CLOCK_H */

/* SPDX-License-Identifier: MIT */
/*
 * cpu_relax.h - x86-64's pause for the agent's spin-waits (the kernel's
 * cpu_relax()): hist_hit.c, waiting for an entry another thread fills.
 */
#ifndef UKPA_CPU_RELAX_H
#define UKPA_CPU_RELAX_H

/* [hit] One turn of a spin-wait: tell the CPU (and a sibling thread). */
static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

#endif /* UKPA_CPU_RELAX_H */

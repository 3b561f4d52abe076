/* SPDX-License-Identifier: MIT */
/*
 * cpu_relax.h - AArch64's turn of the agent's spin-waits (the kernel's
 * cpu_relax()): hist_hit.c, waiting for an entry another thread fills.
 * Nothing but a compiler barrier: the waits yield the CPU after a few
 * turns anyway, and qemu-user runs a yield as a no-op.
 */
#ifndef UKPA_CPU_RELAX_H
#define UKPA_CPU_RELAX_H

/* [hit] One turn of a spin-wait. */
static inline void cpu_relax(void)
{
	__asm__ volatile("" ::: "memory");
}

#endif /* UKPA_CPU_RELAX_H */

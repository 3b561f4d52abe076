/* SPDX-License-Identifier: MIT */
/*
 * hit_clock.h - x86-64's event clock for ring.c (its only includer): the
 * time-stamp counter and the CPU, read in the hit path without a system
 * call. rdtsc and rdpid where the CPU has rdpid (cheaper than rdtscp),
 * else rdtscp. Linux keeps the CPU number in TSC_AUX, which both read,
 * under the NUMA node from bit 12.
 */
#ifndef UKPA_HIT_CLOCK_H
#define UKPA_HIT_CLOCK_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static bool use_rdpid;

/* [hit] The counter, and the CPU the thread runs on. */
static inline uint64_t hit_counter_cpu(int32_t *cpu)
{
	uint32_t lo, hi, aux;
	uint64_t pid;

	if (use_rdpid) {
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		__asm__ volatile("rdpid %0" : "=r"(pid));
		aux = (uint32_t)pid;
	} else {
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	}
	*cpu = (int32_t)(aux & 0xfff);
	return (uint64_t)hi << 32 | lo;
}

/* [init] Is the TSC the kernel's clock (so that it runs at one rate and
 * in step on every CPU), and has the CPU rdtscp? */
static inline bool hit_counter_usable(void)
{
	char cs[32] = "";
	unsigned int eax, ebx, ecx, edx;
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, cs, sizeof(cs) - 1);
	close(fd);
	if (n < 3 || strncmp(cs, "tsc", 3) || (n > 3 && cs[3] != '\n'))
		return false;
	__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000000));
	if (eax < 0x80000001)
		return false;
	__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000001));
	if (!(edx & (1u << 27))) /* RDTSCP: TSC_AUX is set up */
		return false;
	__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0), "c"(0));
	if (eax >= 7) {
		__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx)
				 : "a"(7), "c"(0));
		use_rdpid = ecx & (1u << 22); /* RDPID */
	}
	return true;
}

#endif /* UKPA_HIT_CLOCK_H */

// SPDX-License-Identifier: MIT
/*
 * sdtlib.c - an SDT probe with a semaphore in a shared object that the
 * tests dlopen() (test_usdt.c): libukpsdt.so is this object stripped of
 * its .symtab, so that the probe's function, a static one, has no symbol
 * at all (as CPython's function__entry in Debian's python3.11).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short ukpsdt_fire_semaphore
	__attribute__((unused, section(".probes"), visibility("default")));

static int enabled_calls;

/* (noinline, and called through a pointer: it stays a function of its
 * own, which the stripped object names nowhere) */
static __attribute__((noinline)) int hidden_fire(int v)
{
	if (ukpsdt_fire_semaphore)
		enabled_calls++;
	STAP_PROBE1(ukpsdt, fire, v);
	return v * 3;
}

int (*volatile ukpsdt_fire_fn)(int) = hidden_fire;

int ukpsdt_call(int v)
{
	return ukpsdt_fire_fn(v) + 1;
}

/* Calls that saw the semaphore raised. */
int ukpsdt_enabled_calls(void)
{
	return enabled_calls;
}

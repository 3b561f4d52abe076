/* SPDX-License-Identifier: MIT */
/*
 * An object tgt_sdt dlopen()s (by name, through its RUNPATH): an SDT
 * probe with a semaphore of its own.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short plug_fire_semaphore
	__attribute__((unused, section(".probes"), visibility("default")));

static int enabled;

int plug_fire(int v)
{
	if (plug_fire_semaphore)
		enabled++;
	STAP_PROBE2(plug, fire, v, v * 10L);
	return v + 1;
}

/* calls that saw the semaphore raised */
int plug_enabled(void)
{
	return enabled;
}

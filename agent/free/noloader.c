/* SPDX-License-Identifier: MIT */
/*
 * noloader.c - the agent's loader functions (agent/loader.c and
 * interpose.c in the dynamic agent), in a static program: no loader to
 * load with (dlopen() fails: src/free/dl.c says why), no r_brk to watch
 * (its objects never change).
 */
#include <dlfcn.h>
#include <errno.h>

#include "agent.h"

void *ukpa_real_dlopen(const char *file, int mode)
{
	return dlopen(file, mode);
}

/* [init] no r_brk: nothing to watch (probes.c registers the SPECs on
 * the objects there are) */
int ukpa_loader_watch(int *state)
{
	*state = 0;
	return -ENOSYS;
}

void ukpa_loader_unwatch(void)
{
}

/* SPDX-License-Identifier: MIT */
/*
 * noloader.c - the agent's dlopen() (interpose.c's in the dynamic agent):
 * the freestanding agent loads nothing through the program's loader
 * (dlopen() fails: src/free/dl.c says why; a script is mapped by
 * script_map.c). The loader's r_brk is watched by loader.c.
 */
#include <dlfcn.h>
#include <errno.h>

#include "agent.h"

void *ukpa_real_dlopen(const char *file, int mode)
{
	return dlopen(file, mode);
}

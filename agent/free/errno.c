/* SPDX-License-Identifier: MIT */
/*
 * errno.c - the freestanding agent's errno (src/free/ is its C library):
 * per thread, in the agent's room of the thread's block, never the
 * program's. [any] context.
 */
#include <errno.h>

#include "agent.h"

int *__errno_location(void)
{
	return &ukpa_self()->err;
}

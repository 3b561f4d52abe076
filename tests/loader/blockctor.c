/* SPDX-License-Identifier: MIT */
/*
 * blockctor.c - libukp_blockctor.so: its constructor says it started (a
 * byte to $UKP_STARTED_FD) and waits for a byte on $UKP_GATE_FD, so that
 * the thread that dlopen()s it is held inside dlopen() (loadee.c, dlopen).
 */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void blockctor(void)
{
	const char *s = getenv("UKP_STARTED_FD"), *g = getenv("UKP_GATE_FD");
	char c;

	if (!s || !g)
		return;
	if (write(atoi(s), "c", 1) != 1 || read(atoi(g), &c, 1) != 1)
		abort();
}

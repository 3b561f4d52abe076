/* SPDX-License-Identifier: MIT */
/*
 * A program that loads and unloads libz all the time (issue 27): each
 * round dlopen()s libz.so.1, calls crc32(round, buf, 8) exactly CALLS
 * times, and dlclose()s it (the last reference: libz is unmapped).
 * tgt_reload ROUNDS: that many rounds, then "calls N". tgt_reload 0:
 * prints "ready", runs rounds until stdin says "quit" (or closes), then
 * prints "calls N rounds R".
 */
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CALLS 5

typedef unsigned long (*crc32_fn)(unsigned long, const unsigned char *, unsigned);

static long calls;

static int round_once(unsigned long round)
{
	static const unsigned char buf[8] = "reload!";
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	crc32_fn crc;
	int i;

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return -1;
	}
	crc = (crc32_fn)dlsym(h, "crc32");
	if (!crc)
		return -1;
	for (i = 0; i < CALLS; i++) {
		crc(round, buf, sizeof(buf));
		calls++;
	}
	return dlclose(h);
}

static int quit_asked(void)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 0, r;

	if (rounds > 0) {
		for (r = 1; r <= rounds; r++)
			if (round_once((unsigned long)r))
				return 1;
		printf("calls %ld\n", calls);
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	for (r = 1; !quit_asked(); r++)
		if (round_once((unsigned long)r))
			return 1;
	printf("calls %ld rounds %ld\n", calls, r - 1);
	return 0;
}

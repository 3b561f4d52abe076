/* SPDX-License-Identifier: MIT */
/*
 * Objects loaded after start-up. tgt_dlopen [--marker FILE] [--gconv]:
 *  1. dlopen("libz.so.1") (not linked with it) and compressBound(100);
 *  2. dlopen("libukp_plugin.so") (found through the RUNPATH),
 *     plugin_other(1), dlclose; the same again with plugin_other(2);
 *  3. --gconv: iconv_open() to UTF-16, which libc loads by itself (its
 *     gconv module, not through dlopen()), a pause (for the agent to see
 *     it), and one conversion.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int use_plugin(int i)
{
	void *h = dlopen("libukp_plugin.so", RTLD_NOW);
	int (*other)(int);
	int ret;

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return -1;
	}
	other = (int (*)(int))dlsym(h, "plugin_other");
	ret = other(i);
	dlclose(h);
	return ret;
}

static int convert(void)
{
	struct timespec pause = { 0, 300 * 1000 * 1000 };
	char in[] = "abc", out[32], *ip = in, *op = out;
	size_t il = 3, ol = sizeof(out);
	iconv_t cd = iconv_open("UTF-16LE", "UTF-8");

	if (cd == (iconv_t)-1)
		return -1;
	/* the whole pause: signals (libukprobes' thread scans) cut it short */
	while (nanosleep(&pause, &pause) && errno == EINTR)
		;
	iconv(cd, &ip, &il, &op, &ol);
	iconv_close(cd);
	return (int)(sizeof(out) - ol);
}

int main(int argc, char **argv)
{
	unsigned long (*bound)(unsigned long);
	void *z;
	int i, gconv = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--marker") && i + 1 < argc)
			close(open(argv[++i], O_CREAT | O_WRONLY, 0644));
		else if (!strcmp(argv[i], "--gconv"))
			gconv = 1;
	}
	z = dlopen("libz.so.1", RTLD_NOW);
	if (!z) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	bound = (unsigned long (*)(unsigned long))dlsym(z, "compressBound");
	printf("bound %lu\n", bound(100));
	i = use_plugin(1);
	printf("plugin %d %d\n", i, use_plugin(2));
	if (gconv)
		printf("utf-16 %d bytes\n", convert());
	return 0;
}

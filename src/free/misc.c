/* SPDX-License-Identifier: MIT */
/*
 * misc.c - the rest of what the freestanding agent's code takes from a C
 * library: error strings, and the hand-back of memory another allocator
 * gave (agent/mem.c's __real_free and __real_realloc: in this build
 * nothing but mem.c allocates, so a pointer of no mapping of its is a
 * bug, said and ended).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "syscall_raw.h"

static const struct {
	int err;
	const char *text;
} texts[] = {
	{ EPERM, "Operation not permitted" },
	{ ENOENT, "No such file or directory" },
	{ ESRCH, "No such process" },
	{ EINTR, "Interrupted system call" },
	{ EIO, "Input/output error" },
	{ E2BIG, "Argument list too long" },
	{ ENOEXEC, "Exec format error" },
	{ EBADF, "Bad file descriptor" },
	{ EAGAIN, "Resource temporarily unavailable" },
	{ ENOMEM, "Cannot allocate memory" },
	{ EACCES, "Permission denied" },
	{ EFAULT, "Bad address" },
	{ EBUSY, "Device or resource busy" },
	{ EEXIST, "File exists" },
	{ ENOTDIR, "Not a directory" },
	{ EISDIR, "Is a directory" },
	{ EINVAL, "Invalid argument" },
	{ ENOSPC, "No space left on device" },
	{ ERANGE, "Numerical result out of range" },
	{ ENOSYS, "Function not implemented" },
	{ ENAMETOOLONG, "File name too long" },
	{ EOVERFLOW, "Value too large for defined data type" },
	{ ETIMEDOUT, "Connection timed out" },
	{ ECONNREFUSED, "Connection refused" },
};

char *strerror(int err)
{
	static char unknown[32];
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].err == err)
			return (char *)texts[i].text;
	snprintf(unknown, sizeof(unknown), "Unknown error %d", err);
	return unknown;
}

static void foreign(const char *what)
{
	static const char msg[] = "ukprobe-agent: memory of no allocator of the agent's given back (";

	arch_syscall3(__NR_write, 2, (long)msg, sizeof(msg) - 1);
	arch_syscall3(__NR_write, 2, (long)what, (long)strlen(what));
	arch_syscall3(__NR_write, 2, (long)")\n", 2);
	abort();
}

/* (mem.c's __real_free and __real_realloc are these: --wrap) */
void free(void *p)
{
	if (p)
		foreign("free");
}

void *realloc(void *p, size_t n)
{
	(void)n;
	if (p)
		foreign("realloc");
	return NULL;
}

__attribute__((visibility("default"))) void __assert_fail(const char *expr, const char *file, unsigned int line, const char *fn)
{
	dprintf(2, "ukprobe-agent: %s:%u: %s: assertion '%s' failed\n", file, line, fn, expr);
	abort();
}

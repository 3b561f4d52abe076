/* SPDX-License-Identifier: MIT */
/*
 * proc.c - what the freestanding agent reads of its process where the
 * dynamic agent asks the C library: the auxiliary vector
 * (/proc/self/auxv), the environment (/proc/self/environ: the program's
 * as it was at its exec; the agent only reads UKPROBE_* settings there)
 * and the program's name (/proc/self/cmdline). Read once, at the first
 * need, into memory of the agent's own (mem.c). [init] context.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch_syscall.h"
#include "base/sys.h"

/* the whole file, NUL-terminated; its length in *len */
static char *slurp(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int fd = ukp_sys_open(path, O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			ukp_sys_close(fd);
		return NULL;
	}
	for (;;) {
		long r;

		if (n == cap) {
			char *b = realloc(buf, 2 * cap + 1);

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		r = ukp_sys_read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	ukp_sys_close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

static uint64_t *auxv;
static size_t auxv_words;

unsigned long getauxval(unsigned long type)
{
	size_t i, len;

	if (!auxv) {
		auxv = (uint64_t *)slurp("/proc/self/auxv", &len);
		auxv_words = auxv ? len / 8 : 0;
	}
	for (i = 0; i + 1 < auxv_words && auxv[i]; i += 2)
		if (auxv[i] == type)
			return auxv[i + 1];
	errno = ENOENT;
	return 0;
}

static char *env, *env_end;

char *getenv(const char *name)
{
	size_t n = strlen(name), len;
	char *p;

	if (!env) {
		env = slurp("/proc/self/environ", &len);
		env_end = env ? env + len : NULL;
	}
	for (p = env; p && p < env_end; p += strlen(p) + 1)
		if (!strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}

/* The exec interposers' (not in this build: a static program's exec is
 * its own); the agent's own settings are never changed. */
int setenv(const char *name, const char *value, int overwrite)
{
	(void)name;
	(void)value;
	(void)overwrite;
	errno = ENOSYS;
	return -1;
}

int unsetenv(const char *name)
{
	(void)name;
	errno = ENOSYS;
	return -1;
}

char *program_invocation_name = "";

/* (the first constructor: the library's program-name look-ups need it) */
__attribute__((constructor(101))) static void names_init(void)
{
	size_t len;
	char *cmd = slurp("/proc/self/cmdline", &len);

	if (cmd)
		program_invocation_name = cmd;
}

/* The program's environment as its C library keeps it is not the
 * agent's to see (no C library here): the exec interposers that read it
 * are not reached in a static program. */
char **environ;

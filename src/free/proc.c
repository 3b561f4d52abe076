/* SPDX-License-Identifier: MIT */
/*
 * proc.c - what the freestanding agent reads of its process where the
 * dynamic agent asks the C library: the auxiliary vector
 * (/proc/self/auxv), the environment (/proc/self/environ: the program's
 * as it was at its exec; the agent only reads UKPROBE_* settings there)
 * and the program's name (/proc/self/cmdline). Read once, at the first
 * need, into mappings of their own. [init] context.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "syscall_raw.h"
#include "base/sys.h"

/* The whole file, NUL-terminated, in a mapping of its own (up to cap
 * bytes, pages taken as read; its length in *len): no allocator here,
 * since these run before the library's per-thread blocks are set up (a
 * malloc there takes one, and would settle their mode too early). */
static char *slurp(const char *path, size_t cap, size_t *len)
{
	size_t n = 0;
	void *map;
	char *buf;
	int fd;

	if (ukp_sys_mmap(NULL, cap + 1, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &map))
		return NULL;
	buf = map;
	fd = ukp_sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ukp_sys_munmap(map, cap + 1);
		return NULL;
	}
	while (n < cap) {
		long r = ukp_sys_read(fd, buf + n, cap - n);

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
		auxv = (uint64_t *)(void *)slurp("/proc/self/auxv", 64UL << 10, &len);
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
		env = slurp("/proc/self/environ", 16UL << 20, &len);
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
	char *cmd = slurp("/proc/self/cmdline", 1UL << 20, &len);

	if (cmd)
		program_invocation_name = cmd;
}

/* The program's environment as its C library keeps it is not the
 * agent's to see (no C library here): the exec interposers that read it
 * are not reached in a static program. */
char **environ;

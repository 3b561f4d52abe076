// SPDX-License-Identifier: MIT
/*
 * program_name.c - the names the main program answers to besides its
 * file's (see symbols.h, ukp_main_answers_to).
 *
 * /proc/self/exe gives the program's real path: /usr/bin/python3.11 for
 * a program started as "python3" through the /usr/bin/python3 symlink.
 * Users name it as they typed it. The kernel keeps the path execve() was
 * given (AT_EXECFN: /usr/bin/python3 after a PATH search, ./prog as
 * typed), and argv[0] is the name on the command line (for a "#!"
 * script, the interpreter as the script names it). argv[0] is copied
 * when the library is loaded, before the program can rewrite it (as
 * programs that set their process title do).
 *
 * Context: [any]; the names are captured once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "base/base.h"
#include "symbols/symbols.h"

static char *argv0_copy;
static const char *execfn;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

/* glibc passes (argc, argv, envp) to the constructors of every object. */
__attribute__((constructor)) static void capture_argv0(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc > 0 && argv && argv[0] && argv[0][0])
		argv0_copy = strdup(argv[0]);
}

static void names_init(void)
{
	execfn = (const char *)ukp_getauxval(AT_EXECFN);
	if (!argv0_copy && program_invocation_name && program_invocation_name[0])
		argv0_copy = strdup(program_invocation_name);
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Is name path itself, or (name without a '/') path's basename? */
static bool names_path(const char *path, const char *name)
{
	if (!path || !path[0])
		return false;
	return !strcmp(path, name) || (!strchr(name, '/') && !strcmp(base_of(path), name));
}

bool ukp_main_answers_to(const char *name)
{
	if (!name || !name[0])
		return false;
	pthread_once(&names_once, names_init);
	return names_path(execfn, name) || names_path(argv0_copy, name);
}

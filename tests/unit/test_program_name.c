// SPDX-License-Identifier: MIT
/*
 * test_program_name.c - the main program answers to the names it was
 * started by: "object:sym" with the object the path execve() was given,
 * its basename, argv[0] or its basename, besides the file's own names
 * (src/program_name.c, src/symbols.c).
 *
 * program_name_prog is run through a symlink with a different name and a
 * third name as argv[0] (as /usr/bin/python3 -> python3.11 started as
 * "python3"), and registers probes under every name.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

extern char **environ;

/* Run the program through dir/ukt_alias_prog as argv0, in dir, with the
 * NAME=ERRNO arguments; its exit status (or -1). */
static int run_alias(const char *dir, char *argv0, char **names)
{
	char link[PATH_MAX + 32], cwd[PATH_MAX];
	const char *prog = getenv("UKT_NAMES_PROG");
	char *argv[16];
	pid_t pid;
	int status, i;

	cr_assert(prog, "UKT_NAMES_PROG (tests/meson.build)");
	snprintf(link, sizeof(link), "%s/ukt_alias_prog", dir);
	unlink(link);
	cr_assert_eq(symlink(prog, link), 0);
	argv[0] = argv0;
	for (i = 0; names[i] && i < 14; i++)
		argv[i + 1] = names[i];
	argv[i + 1] = NULL;
	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(dir), 0);
	cr_assert_eq(posix_spawn(&pid, link, NULL, NULL, argv, environ), 0);
	cr_assert_eq(chdir(cwd), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	unlink(link);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(program_name, through_symlink_and_argv0)
{
	char dir[] = "/tmp/ukt_names_XXXXXX", full[PATH_MAX + 64], noent[16];
	char *names[12];
	int k = 0;

	cr_assert(mkdtemp(dir));
	snprintf(full, sizeof(full), "%s/ukt_alias_prog=0", dir);
	snprintf(noent, sizeof(noent), "=%d", ENOENT);
	names[k++] = full;                              /* AT_EXECFN */
	names[k++] = "ukt_alias_prog=0";                /* its basename */
	names[k++] = "ukt_typed-name=0";                /* argv[0] */
	names[k++] = "program_name_prog=0";             /* the real file's name */
	names[k++] = "./ukt_alias_prog=0";              /* another path to the file */
	names[k++] = "./program_name_prog=2";           /* not a file here: ENOENT */
	names[k++] = "ukt_alias=2";                     /* no prefix matching */
	names[k++] = "ukt_no_such_name=2";
	names[k] = NULL;
	cr_expect_eq(run_alias(dir, "ukt_typed-name", names), 0, "every name (output above)");
	/* argv[0] with a directory: the path and its basename */
	names[0] = "/opt/ukt/bin/ukt-started-as=0";
	names[1] = "ukt-started-as=0";
	names[2] = NULL;
	cr_expect_eq(run_alias(dir, "/opt/ukt/bin/ukt-started-as", names), 0, "argv[0] as a path");
	rmdir(dir);
}

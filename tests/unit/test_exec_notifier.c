// SPDX-License-Identifier: MIT
/*
 * test_exec_notifier.c - register_exec_notifier(): every exec of the
 * family calls the notifiers, highest priority first, before (with the
 * environment, which a notifier may replace) and after a failed one;
 * unregistered, they are not called; bad registrations are refused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <ukprobes.h>

static char order[32];
static size_t norder;
static char *new_env[] = { "UKT_NOTIFIED=yes", NULL };
static bool replace_env;

static int note(struct notifier_block *nb, unsigned long action, void *data)
{
	char who = (char)nb->priority + '0';

	if (norder + 2 < sizeof(order)) {
		order[norder++] = action == EXEC_NOTIFY_BEFORE ? 'b' : action == EXEC_NOTIFY_FAILED ? 'f' : '?';
		order[norder++] = who;
	}
	if (action == EXEC_NOTIFY_BEFORE) {
		struct exec_notify_env *e = data;

		cr_assert_not_null(e->envp);
		cr_assert_not_null(e->env_out);
		cr_assert_gt(e->env_max, 0);
		if (replace_env)
			e->envp = new_env;
	} else {
		cr_assert_null(data);
	}
	return NOTIFY_DONE;
}

Test(exec_notifier, order_and_failed_exec)
{
	struct notifier_block a = { .notifier_call = note, .priority = 1 };
	struct notifier_block b = { .notifier_call = note, .priority = 5 };
	struct notifier_block c = { .notifier_call = note, .priority = 1 };
	char *argv[] = { "x", NULL };

	cr_assert_eq(register_exec_notifier(&a), 0);
	cr_assert_eq(register_exec_notifier(&b), 0);
	cr_assert_eq(register_exec_notifier(&c), 0);
	cr_assert_eq(register_exec_notifier(&a), -EEXIST);
	cr_assert_eq(execv("/nonexistent/ukt", argv), -1);
	cr_assert_eq(errno, ENOENT, "the exec's errno is kept");
	order[norder] = 0;
	/* b (5) first; a and c (1) in the order registered */
	cr_assert_str_eq(order, "b5b1b1f5f1f1");

	norder = 0;
	cr_assert_eq(unregister_exec_notifier(&b), 0);
	cr_assert_eq(unregister_exec_notifier(&b), -ENOENT);
	cr_assert_eq(execlp("ukt-no-such-program", "x", (char *)NULL), -1);
	order[norder] = 0;
	cr_assert_str_eq(order, "b1b1f1f1");
	cr_assert_eq(unregister_exec_notifier(&a), 0);
	cr_assert_eq(unregister_exec_notifier(&c), 0);
	norder = 0;
	cr_assert_eq(execv("/nonexistent/ukt", argv), -1);
	cr_assert_eq(norder, 0);
}

Test(exec_notifier, bad_registrations)
{
	struct notifier_block none = { 0 };

	cr_assert_eq(register_exec_notifier(NULL), -EINVAL);
	cr_assert_eq(register_exec_notifier(&none), -EINVAL);
	cr_assert_eq(unregister_exec_notifier(&none), -ENOENT);
}

/* The environment a notifier gives is the new program's. */
Test(exec_notifier, environment_replaced)
{
	struct notifier_block a = { .notifier_call = note, .priority = 2 };
	char buf[256] = { 0 };
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *argv[] = { "env", NULL };

		dup2(fds[1], 1);
		register_exec_notifier(&a);
		replace_env = true;
		execve("/usr/bin/env", argv, (char *[]){ "UKT_NOTIFIED=no", NULL });
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_str_eq(buf, "UKT_NOTIFIED=yes\n");
}

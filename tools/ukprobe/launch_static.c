/* SPDX-License-Identifier: MIT */
/*
 * launch_static.c - a static program launched (ukprobe CMD): the
 * freestanding agent loaded at its entry point by the ptrace loader
 * (load.c), since no agent can be preloaded into it.
 */
#include <errno.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "cli.h"
#include "load.h"

/*
 * The child pid, stopped at its execve (PTRACE_TRACEME): the agent at
 * agent is loaded at its entry point with empty parameters, and its
 * constructors set tracing up from the environment ukprobe gave the
 * program, as a preloaded agent's do; the program is held there until
 * the agent's thread ends, so that its first instruction runs with the
 * probes in place. 0 (also when the exec failed: the child said so), or
 * -1 after one line.
 */
int ukp_launch_static(const char *path, const char *agent, pid_t pid)
{
	struct ukp_loaded ld;
	int st, ret;

	while ((ret = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (ret < 0 || !WIFSTOPPED(st))
		return 0;
	ret = ukp_load_at_entry(pid, agent, "", 0, &ld);
	if (ret) {
		ukp_err("%s: the freestanding agent could not be loaded: %s", path, ld.err);
		return -1;
	}
	/* (the program ended meanwhile: the agent ended it, for a SPEC it
	 * could not register, and said why; the session reads that) */
	ret = ukp_load_wait_end(&ld, 120000);
	if (ret && ret != -ESRCH)
		ukp_err("%s: the freestanding agent did not start: %s", path, ld.err);
	ukp_load_release(&ld);
	return ret && ret != -ESRCH ? -1 : 0;
}

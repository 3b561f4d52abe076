/* SPDX-License-Identifier: MIT */
/*
 * launch_static.c - a static program launched (ukprobe CMD): the
 * freestanding agent loaded at its entry point by the ptrace loader
 * (load.c), since no agent can be preloaded into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "load.h"
#include "ptrace_arch.h"
#include "target.h"

/*
 * Run the child, stopped at its execve, to the end of the system call
 * that gives its first thread its thread pointer (arch_prctl
 * ARCH_SET_FS): a static program's C library runs its own start before
 * (relocations, IFUNC resolvers, the TLS set-up itself) with no thread
 * pointer, where no probe's handler can run (they find the thread's
 * state through it). Signals on the way are the program's. 0 (stopped
 * there), 1 (it ended), -1 (no such call: the child stays stopped).
 */
static int run_to_thread_pointer(pid_t pid)
{
	int st, sig = 0;

	/* (where no system call sets it: at the entry point, as a dynamic
	 * program's agent is) */
	if (ukp_arch_sets_thread_pointer(pid) < 0 ||
	    ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD))
		return -1;
	for (;;) {
		struct __ptrace_syscall_info si;
		int set;

		if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig))
			return 1;
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				return 1;
		if (!WIFSTOPPED(st))
			return 1;
		sig = 0;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof(si), &si) <= 0 ||
		    si.op != PTRACE_SYSCALL_INFO_EXIT)
			continue;
		set = ukp_arch_sets_thread_pointer(pid);
		if (set < 0)
			return -1;
		if (set)
			return 0;
	}
}

/*
 * The child pid, stopped at its execve (PTRACE_TRACEME): the agent at
 * agent is loaded once the program has its thread pointer (above), with
 * empty parameters, and its
 * constructors set tracing up from the environment ukprobe gave the
 * program, as a preloaded agent's do; the program is held there until
 * the agent's thread ends, so that its first instruction runs with the
 * probes in place (and, with held, until ukprobe has read what the agent
 * sent: `ukprobe run`'s BEGIN comes before the program's output). 0 (also when the exec failed: the child said so), or
 * -1 after one line.
 */
int ukp_launch_static(const char *path, const char *agent, pid_t pid, void (*held)(void *),
		      void *arg)
{
	int st, ret;

	while ((ret = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (ret < 0 || !WIFSTOPPED(st))
		return 0;
	return ukp_launch_static_stopped(path, agent, pid, held, arg);
}

/* The same from the stop after its execve (PTRACE_TRACEME's SIGTRAP, or
 * PTRACE_EVENT_EXEC: follow_exec.c). */
int ukp_launch_static_stopped(const char *path, const char *agent, pid_t pid,
			      void (*held)(void *), void *arg)
{
	struct ukp_loaded ld;
	/* (entry.c: no socket, no key; 'g': Go's threads) */
	const char *params = "\0\0g";
	size_t plen = 0;
	int ret, fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		plen = ukp_go_without_cgo(fd) ? 4 : 0;
		close(fd);
	}
	ret = run_to_thread_pointer(pid);
	if (ret > 0)
		return 0; /* (it ended: the session says how) */
	ret = ret ? ukp_load_at_entry(pid, agent, params, plen, &ld)
		  : ukp_load_stopped(pid, agent, params, plen, &ld);
	if (ret) {
		ukp_err("%s: the freestanding agent could not be loaded: %s", path, ld.err);
		return -1;
	}
	/* (the program ended meanwhile: the agent ended it, for a SPEC it
	 * could not register, and said why; the session reads that) */
	ret = ukp_load_wait_end(&ld, 120000);
	if (ret && ret != -ESRCH)
		ukp_err("%s: the freestanding agent did not start: %s", path, ld.err);
	else if (!ret && held)
		held(arg);
	ukp_load_release(&ld);
	return ret && ret != -ESRCH ? -1 : 0;
}

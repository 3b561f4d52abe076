/* SPDX-License-Identifier: MIT */
/*
 * launch_static.c - a static program launched (ukprobe CMD): the
 * freestanding agent loaded at its entry point by the ptrace loader
 * (load.c), since no agent can be preloaded into it. Attached with -f,
 * any program a traced process execs gets it the same way, with the
 * attach's parameters (follow_exec.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* attached: how long an exec'd program is held for its agent's word that
 * its probes are in place (as long as a launched static program's agent
 * may take) */
#define READY_WAIT_MS 120000

/*
 * Attached, -f: the program pid, stopped at its exec (PTRACE_EVENT_EXEC,
 * traced by the calling thread), gets the freestanding agent at agent
 * with the attach's socket name and key, as -p gives it (inject.c's
 * inject_free): a static program once it has its thread pointer (as
 * above), a dynamic one at its entry point, its loader done (the C
 * library mapped and set up, the program's own code not run yet; the
 * agent needs nothing of either). 0 with *out (the agent, its program
 * held: ukp_follow_hold), 1 (it ended), or -1 after one line (let go,
 * the program runs untraced).
 */
int ukp_follow_load(const char *path, const char *agent, pid_t pid, bool is_static,
		    const char *name, const char *key, struct ukp_loaded **out)
{
	struct ukp_loaded *ld;
	char params[256];
	size_t nl = strlen(name), kl = strlen(key);
	bool go = false;
	int ret, fd;

	*out = NULL;
	if (nl + kl + 4 > sizeof(params)) {
		ukp_err("%s: the attach's parameters are too long", path);
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		go = is_static && ukp_go_without_cgo(fd);
		close(fd);
	}
	if (go && !ukp_go_threads_ok()) {
		ukp_err("%s (process %d) is a static Go program: its threads are keyed by their "
			"FS base, which needs the FSGSBASE instructions this machine does not "
			"allow", path, pid);
		return -1;
	}
	ld = calloc(1, sizeof(*ld));
	if (!ld) {
		ukp_err("out of memory");
		return -1;
	}
	memcpy(params, name, nl + 1);
	memcpy(params + nl + 1, key, kl + 1);
	params[nl + kl + 2] = go ? 'g' : 0;
	params[nl + kl + 3] = 0;
	ret = is_static ? run_to_thread_pointer(pid) : -1;
	if (ret <= 0)
		ret = ret ? ukp_load_at_entry(pid, agent, params, nl + kl + 4, ld)
			  : ukp_load_stopped(pid, agent, params, nl + kl + 4, ld);
	else
		ret = -ESRCH;
	if (ret) {
		if (ret != -ESRCH)
			ukp_err("%s (process %d): the freestanding agent could not be loaded: %s",
				path, pid, ld->err);
		free(ld);
		return ret == -ESRCH ? 1 : -1;
	}
	*out = ld;
	return 0;
}

/*
 * The program ukp_follow_load() loaded into is held until ready(arg)
 * (its agent's READY: the probes are in place), the agent's thread ends
 * (told to detach first, or it failed and said why), the process ends,
 * or READY_WAIT_MS pass; then let go.
 */
void ukp_follow_hold(struct ukp_loaded *ld, bool (*ready)(void *), void *arg)
{
	long waited = 0;

	/* (each wait_end: up to 20 ms) */
	while (!ready(arg) && waited < READY_WAIT_MS && ukp_load_wait_end(ld, 20) == -ETIMEDOUT)
		waited += 20;
	if (waited >= READY_WAIT_MS)
		ukp_warn("-f: process %d: its agent did not say its probes were in place within "
			 "%d s: the program goes on", ld->pid, READY_WAIT_MS / 1000);
	ukp_load_release(ld);
}

pid_t ukp_loaded_pid(const struct ukp_loaded *ld)
{
	return ld->pid;
}

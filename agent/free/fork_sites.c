/* SPDX-License-Identifier: MIT */
/*
 * fork_sites.c - -f with the freestanding agent (a static program, or a
 * dynamic one attached): its forks made as its C library's fork() makes
 * them, with the atfork handlers around them, so that a child is a new
 * image as under the dynamic agent (agent.c's atfork_child: its HELLO,
 * its own region, its reader thread).
 *
 * No atfork handler can be given to a static program's C library (nor,
 * without calling it, to libc.so.6's: glibc's fork() runs the program's
 * handlers around _Fork, whose clone instruction is the site here, so
 * the agent's run inside glibc's, nearest the call), and its fork()
 * makes the system call itself. So with -f the program's fork
 * and clone system call instructions are probed too (signal_sites.c's
 * scan: the number loaded into eax before the instruction), and a hit
 * on one that forks (fork, or clone without CLONE_VM, CLONE_THREAD or
 * CLONE_VFORK and without a new stack) sends the thread to the fork
 * trampoline (arch/ARCH/fork_tramp.S), out of the trap handler: there,
 * in the thread's own context as in a C library's fork(), the prepare
 * handlers run (src/free/pthread.c keeps them: the library's registry,
 * the return probes', the allocator's and the agent's locks, the
 * agent's flush of the parent's events), then the call, then the
 * parent's or the child's handlers, and the thread goes on after the
 * instruction with the call's result. The handlers may wait for locks,
 * which no trap handler may (a grace period waits for it).
 *
 * The child's per-thread blocks read zero (MADV_WIPEONFORK,
 * src/base/thread_block.c): its first look-up takes a new block and the
 * agent's fork hook (ukp_tb_forked) turns tracing off; what the forking
 * thread's block held that its handlers count on (the agent's busy
 * count, tracing) is put back before the child's handlers run. A fork
 * made another way (Go's raw clone with CLONE_VM for its os/exec) is not
 * seen: its child runs untraced, as without -f; one through glibc's
 * syscall() is, from its call sites (syscall_fn.c).
 * Attached, the child goes on once ukprobe has admitted its connection
 * (below).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "agent.h"
#include "syscall_site.h"

/* (src/free/pthread.c) */
void ukp_free_atfork_prepare(void);
void ukp_free_atfork_parent(void);
void ukp_free_atfork_child(void);
long syscall(long n, ...);
/* (arch/ARCH/fork_tramp.S) */
void ukpa_fork_tramp(void);
long ukpa_fork_site_run(struct ukpa_fork_call *c);
/* (signal_sites.c) */
long ukpa_sigprocmask_site_run(const struct ukpa_fork_call *c);

/* Threads sent to the trampoline and not back in the program yet: the
 * agent's code is in use (free/entry.c waits for none at the unload). */
_Atomic int ukpa_forks_running;

/* struct clone_args' first words (linux/sched.h, CLONE_ARGS_SIZE_VER0) */
struct clone3_head {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

/* [hit] Does the call nr(a0, a1, ...) fork: fork, or clone or clone3
 * without CLONE_VM, CLONE_THREAD or CLONE_VFORK and without a stack of
 * its own? (clone3's arguments that cannot be read: the kernel refuses
 * them, no.) */
bool ukpa_call_forks(long nr, unsigned long a0, unsigned long a1)
{
	struct clone3_head h;

	switch (nr) {
	case UKPA_NR_FORK:
		return true;
	case UKPA_NR_CLONE:
		return !(a0 & (CLONE_VM | CLONE_THREAD | CLONE_VFORK)) && !a1;
	case UKPA_NR_CLONE3:
		if (a1 < sizeof(h) || copy_from_user_nofault(&h, (const void *)a0, sizeof(h)))
			return false;
		return !(h.flags & (CLONE_VM | CLONE_THREAD | CLONE_VFORK)) && !h.stack;
	default:
		return false;
	}
}

/* [hit] At a fork or clone instruction: true if the thread goes to the
 * trampoline (a fork), false if the call runs as the probe's instruction
 * (a thread, a vfork, a child on another stack). */
bool ukpa_fork_site_pre(struct pt_regs *regs, uintptr_t addr)
{
	if (!ukpa_call_forks(ukpa_site_nr(regs), ukpa_site_arg(regs, 0), ukpa_site_arg(regs, 1)))
		return false;
	atomic_fetch_add(&ukpa_forks_running, 1);
	ukpa_site_divert(regs, addr, (uintptr_t)ukpa_fork_tramp);
	return true;
}

/* [hit] */
void ukpa_site_call_divert(struct pt_regs *regs, uintptr_t addr)
{
	atomic_fetch_add(&ukpa_forks_running, 1);
	ukpa_site_divert(regs, addr, (uintptr_t)ukpa_fork_tramp);
}

/* [init] On the forking thread, from the trampoline: the handlers and
 * the call (see the top); or another call diverted here
 * (ukpa_site_call_divert). Returns the call's result (-errno). */
long ukpa_fork_site_run(struct ukpa_fork_call *c)
{
	bool tracing;
	int busy, saved_errno;
	long r;

	if (c->nr == UKPA_NR_RT_SIGPROCMASK) {
		r = ukpa_sigprocmask_site_run(c);
		atomic_fetch_sub(&ukpa_forks_running, 1);
		return r;
	}
	if (c->nr == UKPA_NR_EXECVE) {
		/* (-f: signal_sites.c) ukprobe asked to follow the program
		 * (exec_follow.c); the count is given back before the call,
		 * which a vfork() child's success never returns from (its
		 * parent shares the count) */
		ukpa_exec_follow((const char *)c->arg[0]);
		atomic_fetch_sub(&ukpa_forks_running, 1);
		saved_errno = errno;
		r = syscall((long)c->nr, c->arg[0], c->arg[1], c->arg[2]);
		if (r < 0) {
			r = -errno;
			ukpa_exec_follow(NULL);
		}
		errno = saved_errno;
		return r;
	}

	ukp_free_atfork_prepare();
	tracing = atomic_load(&ukpa_tracing);
	busy = ukpa_busy;
	saved_errno = errno;
	r = syscall((long)c->nr, c->arg[0], c->arg[1], c->arg[2], c->arg[3], c->arg[4], c->arg[5]);
	if (r < 0)
		r = -errno;
	if (r == 0) {
		/* the child: a new block (the look-up in ukpa_busy), the fork
		 * hook told; then the forking thread's state back */
		ukpa_busy = busy;
		atomic_store(&ukpa_tracing, tracing);
		errno = saved_errno;
		ukp_free_atfork_child();
		/* Attached, ukprobe admits the child's connection by its
		 * parent link, gone once the parent reaped it: the child
		 * goes on once admitted (or refused, or after 5 s), so that
		 * however it ends (SIGKILL, a raw exit_group: no exit of the
		 * agent's runs) its region reaches ukprobe. */
		if (ukpa_attached)
			ukpa_attach_wait_admitted(5000);
	} else {
		errno = saved_errno;
		ukp_free_atfork_parent();
	}
	atomic_fetch_sub(&ukpa_forks_running, 1);
	return r;
}

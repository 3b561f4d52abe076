/* SPDX-License-Identifier: MIT */
/*
 * raw_fork.c - the dynamic agent's syscall(): a child made by a raw
 * fork system call through the C library's syscall() (syscall(SYS_fork),
 * syscall(SYS_clone, SIGCHLD, 0), clone3 without CLONE_VM or
 * CLONE_THREAD) gets the handlers a child of fork() gets: with -f a
 * traced image of its own (agent.c's atfork_child), without it a child
 * that runs untraced. Without them it went on with its parent's agent
 * state, and its hits counted and recorded as the parent's.
 *
 * The program's calls of syscall() bind to the agent's entry
 * (arch/ARCH/syscall_entry.S, glibc's version name), which sends every
 * call that cannot fork to the kernel at once, as glibc's syscall() does:
 * Rust's std makes its futex calls through syscall(), and they cost what
 * they cost without the agent (a few compares more). A call that forks
 * comes here, to ukpa_syscall_fork.
 *
 * Only the library's and the agent's own atfork handlers run around the
 * call, as around fork() (the program's do not: it asked for the system
 * call, not for fork()). They are the ones given to pthread_atfork() by
 * the code linked into the agent, which the link sends to
 * __wrap_pthread_atfork (agent/meson.build): each goes to glibc too (its
 * fork() runs them as before), and to the list here.
 *
 * A raw fork made while the agent works on the thread (a signal handler
 * that interrupted it) does not wait for the agent's locks, which that
 * thread may hold: the child runs untraced.
 *
 * Context: [init] on program threads, but the entry's path to the kernel
 * ([any]).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"

#define MAX_ATFORK 32

static struct {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
} atfork[MAX_ATFORK];
static _Atomic int natfork; /* entries claimed */
static _Atomic int nready;  /* entries filled, in order */

int __real_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* [init] The library's and the agent's pthread_atfork(): glibc's, and
 * kept for the raw forks. */
int __wrap_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	int r = __real_pthread_atfork(prepare, parent, child), i, expect;

	if (r)
		return r;
	i = atomic_fetch_add(&natfork, 1);
	if (i >= MAX_ATFORK)
		return 0; /* (glibc's fork() still runs it: a raw fork not) */
	atfork[i].prepare = prepare;
	atfork[i].parent = parent;
	atfork[i].child = child;
	/* (published in order: a raw fork sees whole entries only) */
	do {
		expect = i;
	} while (!atomic_compare_exchange_weak(&nready, &expect, i + 1));
	return 0;
}

/* [init] ukpa_syscall_fork's call, its handlers around it as glibc's
 * fork() runs them: prepare newest first, then parent or child oldest
 * first. Returns the kernel's result. */
static long fork_with_handlers(long nr, long a, long b, long c, long d, long e, long f)
{
	int n = atomic_load(&nready), i;
	long r;

	for (i = n; i-- > 0;)
		if (atfork[i].prepare)
			atfork[i].prepare();
	r = ukpa_sys6(nr, a, b, c, d, e, f);
	for (i = 0; i < n; i++) {
		void (*fn)(void) = r == 0 ? atfork[i].child : atfork[i].parent;

		if (fn)
			fn();
	}
	return r;
}

/* [init] From the entry: a call of syscall() that forks, with syscall()'s
 * arguments. Returns as syscall() does (-1 and errno on failure). */
long ukpa_syscall_fork(long nr, long a, long b, long c, long d, long e, long f)
{
	int saved_errno = errno;
	long r;

	if (ukpa_busy) {
		/* inside the agent: no handler (see the top) */
		r = ukpa_sys6(nr, a, b, c, d, e, f);
		if (r == 0)
			atomic_store(&ukpa_tracing, false);
	} else {
		r = fork_with_handlers(nr, a, b, c, d, e, f);
	}
	errno = saved_errno;
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* [any] The entry's failed call: errno set, -1. */
long ukpa_syscall_error(long err)
{
	errno = (int)err;
	return -1;
}

/* struct clone_args' first words (linux/sched.h, CLONE_ARGS_SIZE_VER0) */
struct clone3_head {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

/* [any] From the entry: does clone3(args, size) fork (no CLONE_VM,
 * CLONE_THREAD or CLONE_VFORK, no stack of its own)? Arguments that
 * cannot be read are the kernel's to refuse: false. */
int ukpa_clone3_forks(const void *args, unsigned long size)
{
	struct clone3_head h;

	if (size < sizeof(h) || copy_from_user_nofault(&h, args, sizeof(h)))
		return 0;
	return !(h.flags & (CLONE_VM | CLONE_THREAD | CLONE_VFORK)) && !h.stack;
}

/* SPDX-License-Identifier: MIT */
/*
 * signal_sites.c - the program's own sigaction() and sigprocmask() (a
 * static program's, or libc.so.6's in a dynamic one), kept from taking
 * the library's signals (the freestanding agent only).
 *
 * The library's signals (SIGTRAP, the fault signals, its scan signal)
 * must keep the library's handlers and stay unblocked in the kernel's
 * mask of every thread: a breakpoint with SIGTRAP blocked or ignored
 * kills the process. In a dynamic program the agent's sigaction(),
 * sigprocmask() and the others come before the C library's
 * (src/process/signals.c, sigmask.c: the program's wishes are recorded
 * and shown back to it, its handlers chained). A static program makes
 * the system calls itself: Go's runtime installs a handler for every
 * signal at start (after the agent, in a launched program) with every
 * signal blocked while it runs, and starts each thread with every signal
 * blocked; a static C program's sigaction() and sigprocmask() are
 * glibc's inside it.
 *
 * So the program's rt_sigaction and rt_sigprocmask system call
 * instructions are probed (the code that loads the number before the
 * instruction: arch/ARCH/syscall_site.h), and each call goes to the
 * library's sigaction() or sigprocmask() instead, with the kernel's
 * structures translated; the instruction is skipped and the thread gets
 * the result as the kernel's. (Calls made another way, e.g. through
 * glibc's syscall(), are not seen.) Its exit_group instructions are
 * probed too: no exit handler of the agent's runs in a static program,
 * and a `ukprobe run` script's END and maps live in the process; with a
 * script loaded, the image ends there (agent.c's ukpa_before_exit, as at
 * a dynamic program's _exit), then the call runs (without a script they
 * are not probed: a `stat` or `trace` has its last counts and events
 * from the region). With -f its fork and clone instructions are probed
 * as well (fork_sites.c: each child a traced image of its own), and
 * its execve instructions (a program it execs is traced too: launched a
 * static one, attached any; exec_follow.c, from the fork trampoline),
 * and its close_range instructions (glibc's closefrom() makes the same
 * call): the agent's descriptors stay open through them (below), so that
 * a child that closes every descriptor before its exec (python3.11's
 * subprocess) can still ask ukprobe to follow the exec, as the dynamic
 * agent's close_range() interposer keeps them (agent/interpose.c). The
 * probes have a post_handler (never called) so that they stay
 * breakpoints: a jump-optimized hit ignores a changed instruction
 * pointer.
 *
 * Context: [init] under probes.c's lock, but the handlers ([hit]).
 */
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "syscall_site.h"

#define MAX_SITES 64

/* the library's blacklist (src/core/blacklist.c, freestanding build): an
 * address that stays probe-able in its ranges */
int ukp_blacklist_exempt(uintptr_t addr);

/* the kernel's struct sigaction (the C library's differs) */
struct ksigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	uint64_t mask;
};

static struct kprobe site_kps[MAX_SITES];
static bool exits;         /* the exit_group sites too (a script is loaded) */
static bool forks;         /* the fork and clone sites too (-f, not Go: fork_sites.c) */
static bool execs;         /* the execve and close_range sites too (-f, not Go:
			    * exec_follow.c) */
static bool site_on[MAX_SITES];
static bool site_fork[MAX_SITES]; /* a fork or clone site: never taken from the blacklist */
static int nsites;

/* [hit] rt_sigaction(sig, act, oact, 8) through the library's sigaction() */
static long do_sigaction(const struct pt_regs *regs)
{
	long sig = (long)ukpa_site_arg(regs, 0);
	const struct ksigaction *kact = (const void *)ukpa_site_arg(regs, 1);
	struct ksigaction *koact = (void *)ukpa_site_arg(regs, 2), k;
	struct sigaction act, oact;

	if (ukpa_site_arg(regs, 3) != sizeof(k.mask))
		return -EINVAL;
	memset(&act, 0, sizeof(act));
	if (kact) {
		if (copy_from_user_nofault(&k, kact, sizeof(k)))
			return -EFAULT;
		act.sa_handler = (void (*)(int))k.handler;
		act.sa_flags = (int)k.flags;
		act.sa_restorer = (void (*)(void))k.restorer;
		memcpy(&act.sa_mask, &k.mask, sizeof(k.mask));
	}
	if (koact && copy_from_user_nofault(&k, koact, sizeof(k)))
		return -EFAULT;
	if (sigaction((int)sig, kact ? &act : NULL, koact ? &oact : NULL))
		return -errno;
	if (koact) {
		k.handler = (unsigned long)oact.sa_handler;
		k.flags = (unsigned long)(unsigned int)oact.sa_flags;
		k.restorer = (unsigned long)oact.sa_restorer;
		memcpy(&k.mask, &oact.sa_mask, sizeof(k.mask));
		memcpy(koact, &k, sizeof(k));
	}
	return 0;
}

/* rt_sigprocmask(how, set, oset, 8) through the library's sigprocmask().
 * [init] in the thread's own context (ukpa_sigprocmask_site_run); [hit]
 * in a Go program only (below). */
static long do_sigprocmask(int how, const uint64_t *kset, uint64_t *koset, unsigned long size)
{
	uint64_t w;
	sigset_t set, oset;

	if (size != sizeof(w))
		return -EINVAL;
	sigemptyset(&set);
	if (kset && copy_from_user_nofault(&set, kset, sizeof(w)))
		return -EFAULT;
	if (koset && copy_from_user_nofault(&w, koset, sizeof(w)))
		return -EFAULT;
	if (sigprocmask(how, kset ? &set : NULL, koset ? &oset : NULL))
		return -errno;
	if (koset)
		memcpy(koset, &oset, sizeof(w));
	return 0;
}

/* [init] From the trampoline (fork_sites.c), on the thread at an
 * rt_sigprocmask site: the call made in the thread's own context. In the
 * trap handler the mask it set would be undone when the handler returns
 * (the kernel puts back the mask of the signal frame) and the old mask
 * it read would be the handler's: a program's SIG_BLOCK never reached
 * the kernel (PostgreSQL's backends lost the SIGURG their signalfd waits
 * for). Returns the call's result (-errno). */
long ukpa_sigprocmask_site_run(const struct ukpa_fork_call *c)
{
	int saved_errno = errno;
	long r = do_sigprocmask((int)c->arg[0], (const uint64_t *)c->arg[1],
				(uint64_t *)c->arg[2], c->arg[3]);

	errno = saved_errno;
	return r;
}

/* [hit] close_range(first, last, flags) without the agent's descriptors
 * (ukpa_fd_kept_now): each part of the range around them closed as
 * asked, a system call each (async-signal-safe); the first error is the
 * result, as the kernel's would be for the whole range. */
static long do_close_range(const struct pt_regs *regs)
{
	unsigned int first = (unsigned int)ukpa_site_arg(regs, 0);
	unsigned int last = (unsigned int)ukpa_site_arg(regs, 1), from = first;
	long flags = (long)ukpa_site_arg(regs, 2), res = 0, r;
	int saved_errno = errno;

	/* (the agent's are few and low: a bounded look) */
	for (unsigned int fd = first; first <= last && fd <= last && fd - first < 65536u; fd++) {
		if (!ukpa_fd_kept_now(fd))
			continue;
		if (fd > from && (r = syscall(UKPA_NR_CLOSE_RANGE, from, fd - 1, flags)) && !res)
			res = -errno;
		from = fd + 1;
		if (fd == last)
			break;
	}
	if ((first > last || from <= last) && from >= first &&
	    (r = syscall(UKPA_NR_CLOSE_RANGE, first > last ? first : from, last, flags)) && !res)
		res = -errno;
	errno = saved_errno;
	return res;
}

/* [hit] */
static int site_pre(struct kprobe *kp, struct pt_regs *regs)
{
	long res;

	switch (ukpa_site_nr(regs)) {
	case UKPA_NR_RT_SIGACTION:
		res = do_sigaction(regs);
		break;
	case UKPA_NR_RT_SIGPROCMASK:
		/* (Go: its threads' stacks may be too small for the
		 * library's call, and its runtime masks only at a thread's
		 * start and in its signal handler: in the trap handler, as
		 * before) */
		if (!ukp_tb_go) {
			ukpa_site_call_divert(regs, (uintptr_t)kp->addr);
			return 1; /* resumes at the trampoline */
		}
		res = do_sigprocmask((int)ukpa_site_arg(regs, 0),
				     (const void *)ukpa_site_arg(regs, 1),
				     (void *)ukpa_site_arg(regs, 2), ukpa_site_arg(regs, 3));
		break;
	case UKPA_NR_CLONE:
	case UKPA_NR_FORK:
		/* (resumes at the trampoline, or runs the call as the probe's
		 * instruction) */
		return ukpa_fork_site_pre(regs, (uintptr_t)kp->addr) ? 1 : 0;
	case UKPA_NR_EXECVE:
		if (!execs)
			return 0;
		ukpa_site_call_divert(regs, (uintptr_t)kp->addr);
		return 1; /* resumes at the trampoline: fork_sites.c */
	case UKPA_NR_CLOSE_RANGE:
		if (!execs)
			return 0;
		res = do_close_range(regs);
		break;
	case UKPA_NR_EXIT_GROUP:
		if (ukpa_script_loaded())
			ukpa_before_exit();
		return 0; /* the call runs */
	default:
		return 0; /* another call: it runs */
	}
	ukpa_site_done(regs, (uintptr_t)kp->addr, res);
	return 1; /* resume after the instruction */
}

static bool site_known(const unsigned char *q)
{
	int i;

	for (i = 0; i < nsites; i++)
		if (site_kps[i].addr == (kprobe_opcode_t *)q)
			return true;
	return false;
}

/* [hit] never called: its presence keeps the probe a breakpoint */
static void site_post(struct kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
	(void)kp;
	(void)regs;
	(void)flags;
}

/* The sites in [p, end): a load of either signal call's number, then
 * the system call instruction within reach; for exit_group, every
 * system call instruction within reach of a load of its number into
 * any register (the hit checks the number in eax). */
static void scan(const unsigned char *p, const unsigned char *end)
{
	const unsigned char *q;

	for (; p + UKPA_SITE_LOAD_LEN <= end && nsites < MAX_SITES; p++) {
		bool any = exits && ukpa_site_loads_any(p, UKPA_NR_EXIT_GROUP);
		bool fork = forks && (ukpa_site_loads(p, UKPA_NR_CLONE) ||
				      ukpa_site_loads(p, UKPA_NR_FORK));
		/* (taken from the blacklist as the signal sites are) */
		bool exec = execs && (ukpa_site_loads(p, UKPA_NR_EXECVE) ||
				      ukpa_site_loads(p, UKPA_NR_CLOSE_RANGE));

		if (!any && !fork && !exec && !ukpa_site_loads(p, UKPA_NR_RT_SIGACTION) &&
		    !ukpa_site_loads(p, UKPA_NR_RT_SIGPROCMASK))
			continue;
		for (q = p + UKPA_SITE_LOAD_LEN; q + UKPA_SYSCALL_INSN_LEN <= end &&
		     q < p + (any ? UKPA_SITE_REACH_ANY : UKPA_SITE_REACH) && nsites < MAX_SITES;
		     q++)
			if (ukpa_site_syscall(q) && !site_known(q)) {
				site_fork[nsites] = fork;
				site_kps[nsites++].addr = (kprobe_opcode_t *)q;
				if (!any)
					break;
			}
	}
}

/* The executable segments of the program (the first object walked) and
 * of the C library: a static program has its C library inside; in a
 * dynamic one the program's sigaction(), sigprocmask() and
 * pthread_sigmask() are libc.so.6's, which makes the system calls (the
 * dynamic agent's interposers come before those functions instead). */
static int find_sites(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *n = arg, i;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if ((*n)++ && strcmp(base, "libc.so.6"))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		scan(p, p + ph->p_filesz);
	}
	return 0;
}

/* Returns how many sites are probed. */
int ukpa_signal_sites_watch(void)
{
	int i = 0, k = 0;

	if (nsites)
		return 0;
	exits = ukpa_script_loaded();
	forks = ukpa_follow && !ukp_tb_go;
	execs = forks;
	dl_iterate_phdr(find_sites, &i);
	for (i = 0; i < nsites; i++) {
		site_kps[i].pre_handler = site_pre;
		site_kps[i].post_handler = site_post;
		/* (the C library's signal-masked functions are blacklisted
		 * for every other probe; a match that is no instruction start
		 * is refused here; a fork site stays refused there: glibc's
		 * __clone makes threads) */
		site_on[i] = (site_fork[i] || !ukp_blacklist_exempt((uintptr_t)site_kps[i].addr)) &&
			     !register_kprobe(&site_kps[i]);
		k += site_on[i];
	}
	if (forks)
		k += ukpa_syscall_calls_watch();
	return k;
}

void ukpa_signal_sites_unwatch(void)
{
	int i;

	for (i = 0; i < nsites; i++)
		if (site_on[i])
			unregister_kprobe(&site_kps[i]);
	memset(site_kps, 0, sizeof(site_kps));
	memset(site_on, 0, sizeof(site_on));
	memset(site_fork, 0, sizeof(site_fork));
	nsites = 0;
	ukpa_syscall_calls_unwatch();
}

/* SPDX-License-Identifier: MIT */
/*
 * sigmask.c - the program's view of its signal mask.
 *
 * The library's signals (UKP_OWNED_MASK: SIGTRAP, SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL and UKP_SCAN_SIG) must stay deliverable in the kernel's
 * mask of every thread: a breakpoint with SIGTRAP blocked kills the
 * process, and so does a fault of copy_from_user_nofault() or of a
 * probe handler with SIGSEGV blocked. So they never reach the kernel's
 * mask from the program; the program's blocking of them is kept here,
 * per thread (vsig.mask), and every libc function that reads or takes a
 * mask puts it back in, so that the program sees exactly what it set:
 *
 *  - sigprocmask, pthread_sigmask (and sigblock, sigsetmask, siggetmask,
 *    sighold, sigrelse, which glibc implements with its internal one):
 *    old masks;
 *  - sigpending: an owned signal the program sent while it blocks it is
 *    held here (vsig.pending, with its siginfo) instead of running its
 *    handler (ukp_vmask_hold, from ukp_chain_signal), and queued again
 *    (rt_tgsigqueueinfo to this thread) when the program unblocks it;
 *    a fault the CPU raises while the program blocks its signal kills,
 *    as the kernel's force_sig does;
 *  - the uc_sigmask a program's handler sees and what it restores
 *    (ukp_vmask_enter/leave, around every program handler), and the
 *    handler's sa_mask (signals.c records it as given);
 *  - sigsuspend, sigpause, ppoll, pselect, epoll_pwait, epoll_pwait2 (the
 *    temporary mask), sigwait, sigwaitinfo, sigtimedwait (held signals
 *    are taken from here);
 *  - pthread_create (the new thread starts with its creator's view),
 *    fork (the child starts with nothing held), posix_spawn and the exec
 *    family (exec.c: the new image gets the whole mask the program
 *    believes it has, since the kernel keeps the mask across execve).
 *
 * An owned bit in the kernel's mask (set by a raw system call, or before
 * the library started) is shown as blocked too: the view is always the
 * kernel's mask plus vsig.mask.
 *
 * Not covered: the raw rt_sigprocmask/rt_sigpending/... system calls;
 * signalfd() of an owned signal (the library's handler takes it before
 * it can be read); an owned signal sent to the process (kill) while the
 * thread that receives it blocks it is held for that thread, not handed
 * to another thread that does not block it; while held, a second one of
 * the same signal is merged with it (also for the real-time
 * UKP_SCAN_SIG); sigsuspend and the other waits may return EINTR for an
 * owned signal that the temporary mask blocks (it was held).
 *
 * Everything here is per thread (initial-exec TLS) and async-signal-safe
 * unless marked [any]: a handler that interrupts an update restores the
 * view it found on return (ukp_vmask_leave), as the kernel restores the
 * mask.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "process/process.h"
#include "symbols/maps_objects.h"

#define SIGBIT(sig) (1ULL << ((sig) - 1))
#define OWNED UKP_OWNED_MASK

/* The fields of a siginfo a program can send (kill, sigqueue, tgkill,
 * a timer): what is needed to queue it again. */
struct held_info {
	int code;
	int pid_or_timer;
	int uid_or_overrun;
	void *value;
};

/* Slots of the owned signals: 1..11 by number, UKP_SCAN_SIG in 0. */
#define HELD_SLOTS 12

struct vsig_state {
	uint64_t mask;    /* the owned signals the program blocks */
	uint64_t pending; /* owned signals held for the program */
	struct held_info info[HELD_SLOTS];
};

/* (the thread's, in its block: base/tb_lib.h) */
UKP_TB_LIB_FITS(struct vsig_state, UKP_TBL_VSIG, UKP_TBL_VSIG_SIZE);
#define vsig (*UKP_TB_LIB(struct vsig_state, UKP_TBL_VSIG))

static inline uint64_t *word(sigset_t *s)
{
	return (uint64_t *)s;
}

static inline uint64_t cword(const sigset_t *s)
{
	return *(const uint64_t *)s;
}

static UKP_TRAP_TEXT unsigned int slot_of(int sig)
{
	return sig == UKP_SCAN_SIG ? 0 : (unsigned int)sig;
}

/* [trap] The owned signals this thread's program blocks. */
UKP_TRAP_TEXT uint64_t ukp_vmask_get(void)
{
	return vsig.mask;
}

/* [trap] Set them (the library's start adopts what the kernel had). */
UKP_TRAP_TEXT void ukp_vmask_set(uint64_t m)
{
	vsig.mask = m & OWNED;
}

/*
 * [trap] An owned signal sig for the program (not the library's own
 * use of it): true when the program blocks it and it was held, to be
 * queued again when the program unblocks it. A signal the CPU or the
 * kernel raised (si_code > 0) cannot wait: false, and *forced tells the
 * caller to take the default action, as the kernel does for a blocked
 * synchronous fault.
 */
UKP_TRAP_TEXT bool ukp_vmask_hold(int sig, const siginfo_t *info, bool *forced)
{
	struct held_info *h;

	*forced = false;
	if (!(vsig.mask & SIGBIT(sig)))
		return false;
	if (info->si_code > 0) {
		*forced = true;
		return false;
	}
	/* one pending instance per signal, the first (the kernel's
	 * legacy_queue) */
	if (vsig.pending & SIGBIT(sig))
		return true;
	h = &vsig.info[slot_of(sig)];
	h->code = info->si_code;
	h->pid_or_timer = info->si_pid;
	h->uid_or_overrun = (int)info->si_uid;
	h->value = info->si_value.sival_ptr;
	vsig.pending |= SIGBIT(sig);
	return true;
}

/* [trap] The siginfo of held signal sig. */
static UKP_TRAP_TEXT void held_siginfo(int sig, siginfo_t *si)
{
	const struct held_info *h = &vsig.info[slot_of(sig)];
	size_t i;

	for (i = 0; i < sizeof(*si) / sizeof(long); i++)
		((volatile unsigned long *)si)[i] = 0;
	si->si_signo = sig;
	si->si_code = h->code;
	si->si_pid = h->pid_or_timer;
	si->si_uid = (uid_t)h->uid_or_overrun;
	si->si_value.sival_ptr = h->value;
}

/*
 * [trap] Queue again, to this thread, every held signal the program no
 * longer blocks: the kernel delivers it at once (it is not blocked for
 * real), and ukp_chain_signal gives it to the program's handler.
 */
UKP_TRAP_TEXT void ukp_vmask_flush(void)
{
	uint64_t m;

	while ((m = vsig.pending & ~vsig.mask) != 0) {
		int sig = __builtin_ctzll(m) + 1;
		siginfo_t si;

		held_siginfo(sig, &si);
		vsig.pending &= ~SIGBIT(sig);
		arch_syscall4(__NR_rt_tgsigqueueinfo, ukp_sys_getpid(), ukp_sys_gettid(), sig, (long)&si);
	}
}

/*
 * [trap] Around a program's handler, called from the library's handler
 * with the kernel's uc: the handler sees the program's view of the
 * interrupted mask in uc_sigmask, and runs with the owned signals of
 * add (its sa_mask, and its own signal unless SA_NODEFER) blocked in
 * the program's view. The owned bits the kernel had in uc (blocked by
 * the library itself there) are kept in *f for ukp_vmask_leave.
 */
UKP_TRAP_TEXT void ukp_vmask_enter(ucontext_t *uc, uint64_t add, struct ukp_vmask_frame *f)
{
	uint64_t *ucm = (uint64_t *)&uc->uc_sigmask;

	f->prev = vsig.mask;
	f->kernel = *ucm & OWNED;
	*ucm = (*ucm & ~OWNED) | f->prev;
	vsig.mask = f->prev | (add & OWNED);
}

/* [trap] After the program's handler: what it left in uc_sigmask takes
 * effect at sigreturn (the owned part here, the rest in the kernel), and
 * held signals it unblocked are delivered. */
UKP_TRAP_TEXT void ukp_vmask_leave(ucontext_t *uc, const struct ukp_vmask_frame *f)
{
	uint64_t *ucm = (uint64_t *)&uc->uc_sigmask;

	vsig.mask = *ucm & OWNED;
	*ucm = (*ucm & ~OWNED) | f->kernel;
	ukp_vmask_flush();
}

/* ---------------------------------------------------- interposers */

static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
static int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);
static int (*real_sigpending)(sigset_t *);
static int (*real_sigsuspend)(const sigset_t *);
static int (*real_sigtimedwait)(const sigset_t *, siginfo_t *, const struct timespec *);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			   const sigset_t *);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
				const sigset_t *);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*real_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			       const posix_spawnattr_t *, char *const[], char *const[]);
static int (*real_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
				const posix_spawnattr_t *, char *const[], char *const[]);

/* [init] A forked child starts with nothing pending (the kernel's
 * fork). */
static void vmask_after_fork_child(void)
{
	if (ukp_tb_mapped())
		vsig.pending = 0;
}

static void (*real_siglongjmp)(struct __jmp_buf_tag *, int);
static void (*real_longjmp)(struct __jmp_buf_tag *, int);
static void (*real__longjmp)(struct __jmp_buf_tag *, int);
static void (*real___longjmp_chk)(struct __jmp_buf_tag *, int);
void *ukp_real_sigsetjmp; /* sigjmp.S */
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));

/*
 * The next definition of name after this object's. In a program that
 * links the library statically with a sanitizer runtime, the runtime's
 * interceptor of name (a weak definition) was displaced by ours: it is
 * called instead, so that it still sees the call. "This object" is
 * where this function is: the address of our own definition of name, as
 * code of a shared library takes it, is the first definition in the
 * program (a sanitizer's interceptor in the executable, when the library
 * is shared), whose next one is ours again.
 */
static void *next_fn(const char *name)
{
	char buf[64] = "__interceptor_";
	struct ukp_object_at a, b;
	void *p;

	/* (the objects' bases, as dladdr()'s dli_fbase: not the loader's
	 * query, which the agent's build makes none of) */
	if (strlen(name) < sizeof(buf) - 15) {
		strcat(buf, name);
		p = dlsym(RTLD_DEFAULT, buf);
		if (p && !ukp_object_at((uintptr_t)p, &a, NULL, 0) &&
		    !ukp_object_at((uintptr_t)next_fn, &b, NULL, 0) && a.bias == b.bias &&
		    a.phnum == b.phnum)
			return p;
	}
	return dlsym(RTLD_NEXT, name);
}

#define REAL(name) (__typeof__(real_##name))next_fn(#name)

/* Resolved once, before main (dlsym is not async-signal-safe). */
__attribute__((constructor)) static void vmask_init(void)
{
	real_sigprocmask = REAL(sigprocmask);
	real_pthread_sigmask = REAL(pthread_sigmask);
	real_sigpending = REAL(sigpending);
	real_sigsuspend = REAL(sigsuspend);
	real_sigtimedwait = REAL(sigtimedwait);
	real_ppoll = REAL(ppoll);
	real_pselect = REAL(pselect);
	real_epoll_pwait = REAL(epoll_pwait);
	real_epoll_pwait2 = REAL(epoll_pwait2);
	real_pthread_create = REAL(pthread_create);
	real_posix_spawn = REAL(posix_spawn);
	real_posix_spawnp = REAL(posix_spawnp);
	real_siglongjmp = REAL(siglongjmp);
	real_longjmp = REAL(longjmp);
	real__longjmp = REAL(_longjmp);
	real___longjmp_chk = REAL(__longjmp_chk);
	ukp_real_sigsetjmp = dlsym(RTLD_NEXT, "__sigsetjmp");
	pthread_atfork(NULL, NULL, vmask_after_fork_child);
}

/* The kernel's mask of this thread (first word). */
static uint64_t kernel_mask(void)
{
	uint64_t m = 0;

	ukp_sys_sigprocmask(SIG_BLOCK, NULL, &m);
	return m;
}

/* sigprocmask and pthread_sigmask: 0 or -errno. */
static int mask_op(int how, const sigset_t *set, sigset_t *old,
		   int (*real)(int, const sigset_t *, sigset_t *), bool pthread)
{
	uint64_t v = vsig.mask, nv = v;
	const sigset_t *kset = set;
	sigset_t copy;
	int ret;

	if (set) {
		uint64_t s = cword(set) & OWNED;

		switch (how) {
		case SIG_BLOCK:
			nv = v | s;
			break;
		case SIG_UNBLOCK:
			nv = v & ~s;
			break;
		case SIG_SETMASK:
			nv = s;
			break;
		default:
			return -EINVAL;
		}
		/* unblocking an owned signal for real is harmless */
		if (s && how != SIG_UNBLOCK) {
			copy = *set;
			*word(&copy) &= ~OWNED;
			kset = &copy;
		}
	}
	vsig.mask = nv;
	if (real) {
		ret = real(how, kset, old);
		if (!pthread && ret)
			ret = -errno;
		else if (pthread)
			ret = -ret;
	} else {
		ret = (int)ukp_sys_sigprocmask(how, (const uint64_t *)kset, (uint64_t *)old);
	}
	if (ret) {
		vsig.mask = v;
		return ret;
	}
	if (old)
		*word(old) |= v;
	ukp_vmask_flush();
	return 0;
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t *set,
						       sigset_t *old)
{
	int ret = mask_op(how, set, old, real_sigprocmask, false);

	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t *set,
							   sigset_t *old)
{
	return -mask_op(how, set, old, real_pthread_sigmask, true);
}

__attribute__((visibility("default"))) int sigpending(sigset_t *set)
{
	int ret;

	if (real_sigpending) {
		ret = real_sigpending(set);
	} else {
		memset(set, 0, sizeof(*set));
		ret = (int)arch_syscall4(__NR_rt_sigpending, (long)set, 8, 0, 0);
		if (ret < 0) {
			errno = -ret;
			ret = -1;
		}
	}
	if (ret == 0)
		*word(set) |= vsig.pending & vsig.mask;
	return ret;
}

/* The BSD and System V mask functions (glibc's call its internal
 * sigprocmask): through the interposer above. */
static int old_word_op(int how, int mask, bool with_set)
{
	sigset_t set, old;

	sigemptyset(&set);
	*word(&set) = (unsigned int)mask;
	if (sigprocmask(how, with_set ? &set : NULL, &old))
		return -1;
	return (int)(unsigned int)*word(&old);
}

__attribute__((visibility("default"))) int sigblock(int mask)
{
	return old_word_op(SIG_BLOCK, mask, true);
}

__attribute__((visibility("default"))) int sigsetmask(int mask)
{
	return old_word_op(SIG_SETMASK, mask, true);
}

__attribute__((visibility("default"))) int siggetmask(void)
{
	return old_word_op(SIG_BLOCK, 0, false);
}

static int one_sig_op(int how, int sig)
{
	sigset_t set;

	sigemptyset(&set);
	if (sigaddset(&set, sig))
		return -1;
	return sigprocmask(how, &set, NULL);
}

__attribute__((visibility("default"))) int sighold(int sig)
{
	return one_sig_op(SIG_BLOCK, sig);
}

__attribute__((visibility("default"))) int sigrelse(int sig)
{
	return one_sig_op(SIG_UNBLOCK, sig);
}

/*
 * A temporary mask (sigsuspend and the waits that take one): the
 * kernel gets it without the owned signals, the view gets them for the
 * duration. Returns true when a held signal is unblocked by it: it was
 * delivered, and the caller returns EINTR at once, as the kernel would.
 */
struct tmp_mask {
	uint64_t saved;
	bool active;
	sigset_t copy;
};

static bool tmp_mask_enter(const sigset_t **mask, struct tmp_mask *t)
{
	t->active = *mask != NULL;
	if (!t->active)
		return false;
	t->saved = vsig.mask;
	t->copy = **mask;
	*word(&t->copy) &= ~OWNED;
	vsig.mask = cword(*mask) & OWNED;
	*mask = &t->copy;
	if (vsig.pending & ~vsig.mask) {
		ukp_vmask_flush();
		vsig.mask = t->saved;
		return true;
	}
	return false;
}

static void tmp_mask_leave(struct tmp_mask *t)
{
	int saved_errno = errno;

	if (!t->active)
		return;
	vsig.mask = t->saved;
	ukp_vmask_flush();
	errno = saved_errno;
}

#define EINTR_NOW() (errno = EINTR, -1)

__attribute__((visibility("default"))) int sigsuspend(const sigset_t *mask)
{
	struct tmp_mask t;
	int ret;

	if (!real_sigsuspend)
		return errno = ENOSYS, -1;
	if (tmp_mask_enter(&mask, &t))
		return EINTR_NOW();
	ret = real_sigsuspend(mask);
	tmp_mask_leave(&t);
	return ret;
}

/* sigpause: BSD (a mask word) or X/Open (one signal to unblock). */
__attribute__((visibility("default"))) int __sigpause(int sig_or_mask, int is_sig)
{
	sigset_t m;

	if (is_sig) {
		if (sigprocmask(SIG_BLOCK, NULL, &m) || sigdelset(&m, sig_or_mask))
			return -1;
	} else {
		sigemptyset(&m);
		*word(&m) = (unsigned int)sig_or_mask;
	}
	return sigsuspend(&m);
}

/* <signal.h> redirects sigpause to __xpg_sigpause: the BSD one by its
 * symbol name */
int bsd_sigpause(int mask) __asm__("sigpause");
__attribute__((visibility("default"))) int bsd_sigpause(int mask)
{
	return __sigpause(mask, 0);
}

__attribute__((visibility("default"))) int __xpg_sigpause(int sig)
{
	return __sigpause(sig, 1);
}

__attribute__((visibility("default"))) int ppoll(struct pollfd *fds, nfds_t n,
						 const struct timespec *ts, const sigset_t *mask)
{
	struct tmp_mask t;
	int ret;

	if (!real_ppoll)
		return errno = ENOSYS, -1;
	if (tmp_mask_enter(&mask, &t))
		return EINTR_NOW();
	ret = real_ppoll(fds, n, ts, mask);
	tmp_mask_leave(&t);
	return ret;
}

__attribute__((visibility("default"))) int pselect(int n, fd_set *r, fd_set *w, fd_set *e,
						   const struct timespec *ts, const sigset_t *mask)
{
	struct tmp_mask t;
	int ret;

	if (!real_pselect)
		return errno = ENOSYS, -1;
	if (tmp_mask_enter(&mask, &t))
		return EINTR_NOW();
	ret = real_pselect(n, r, w, e, ts, mask);
	tmp_mask_leave(&t);
	return ret;
}

__attribute__((visibility("default"))) int epoll_pwait(int fd, struct epoll_event *ev, int max,
						       int timeout, const sigset_t *mask)
{
	struct tmp_mask t;
	int ret;

	if (!real_epoll_pwait)
		return errno = ENOSYS, -1;
	if (tmp_mask_enter(&mask, &t))
		return EINTR_NOW();
	ret = real_epoll_pwait(fd, ev, max, timeout, mask);
	tmp_mask_leave(&t);
	return ret;
}

__attribute__((visibility("default"))) int epoll_pwait2(int fd, struct epoll_event *ev, int max,
							const struct timespec *ts,
							const sigset_t *mask)
{
	struct tmp_mask t;
	int ret;

	if (!real_epoll_pwait2)
		return errno = ENOSYS, -1;
	if (tmp_mask_enter(&mask, &t))
		return EINTR_NOW();
	ret = real_epoll_pwait2(fd, ev, max, ts, mask);
	tmp_mask_leave(&t);
	return ret;
}

/* A held signal of set, taken (as the kernel dequeues a pending one):
 * its number, or 0. */
static int take_held(const sigset_t *set, siginfo_t *info)
{
	uint64_t m = vsig.pending & cword(set) & OWNED;
	int sig;

	if (!m)
		return 0;
	sig = __builtin_ctzll(m) + 1;
	if (info)
		held_siginfo(sig, info);
	vsig.pending &= ~SIGBIT(sig);
	return sig;
}

__attribute__((visibility("default"))) int sigtimedwait(const sigset_t *set, siginfo_t *info,
							const struct timespec *ts)
{
	int sig = take_held(set, info), ret, saved;

	if (sig)
		return sig;
	if (!real_sigtimedwait)
		return errno = ENOSYS, -1;
	ret = real_sigtimedwait(set, info, ts);
	saved = errno;
	/* interrupted by the library's handler holding one of set */
	if (ret < 0 && saved == EINTR && (sig = take_held(set, info)))
		return sig;
	errno = saved;
	return ret;
}

__attribute__((visibility("default"))) int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return sigtimedwait(set, info, NULL);
}

__attribute__((visibility("default"))) int sigwait(const sigset_t *set, int *sig)
{
	int ret;

	do
		ret = sigtimedwait(set, NULL, NULL);
	while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return errno;
	*sig = ret;
	return 0;
}

/* A new thread starts with its creator's view (the kernel copies the
 * creator's mask into it). */
struct start_arg {
	void *(*fn)(void *);
	void *arg;
	uint64_t mask;
};

static void *start_with_mask(void *p)
{
	struct start_arg a = *(struct start_arg *)p;

	free(p);
	vsig.mask = a.mask;
	return a.fn(a.arg);
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *t, const pthread_attr_t *attr,
							  void *(*fn)(void *), void *arg)
{
	struct start_arg *a;
	int ret;

	if (!real_pthread_create)
		return ENOSYS;
	if (!vsig.mask)
		return real_pthread_create(t, attr, fn, arg);
	a = malloc(sizeof(*a));
	if (!a)
		return EAGAIN;
	a->fn = fn;
	a->arg = arg;
	a->mask = vsig.mask;
	ret = real_pthread_create(t, attr, start_with_mask, a);
	if (ret)
		free(a);
	return ret;
}

/*
 * posix_spawn: a child that inherits the mask (no POSIX_SPAWN_SETSIGMASK)
 * gets the program's view of it, owned signals included, for the image
 * it executes; the spawn itself sets it between its fork and exec.
 */
#ifndef UKP_FREE /* (a static program's posix_spawn is its own) */
bool (*ukp_spawn_call_hook)(const char *file, bool by_file, bool done);

static int spawn(bool by_file, pid_t *pid, const char *path,
		 const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		 char *const argv[], char *const envp[])
{
	int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *,
		    const posix_spawnattr_t *, char *const[], char *const[]) =
		by_file ? real_posix_spawnp : real_posix_spawn;
	bool (*hook)(const char *, bool, bool);
	posix_spawnattr_t copy;
	short flags = 0;
	int ret;

	if (!real)
		return ENOSYS;
	if (attr)
		posix_spawnattr_getflags(attr, &flags);
	if (!(flags & POSIX_SPAWN_SETSIGMASK) && vsig.mask) {
		sigset_t view;

		if (real_sigprocmask)
			real_sigprocmask(SIG_BLOCK, NULL, &view);
		else
			sigemptyset(&view);
		*word(&view) |= vsig.mask;
		if (attr)
			copy = *attr;
		else
			posix_spawnattr_init(&copy);
		posix_spawnattr_setflags(&copy, (short)(flags | POSIX_SPAWN_SETSIGMASK));
		posix_spawnattr_setsigmask(&copy, &view);
		attr = &copy;
	}
	hook = ukp_spawn_call_hook;
	if (!hook || !hook(path, by_file, false))
		return real(pid, path, fa, attr, argv, envp);
	ret = real(pid, path, fa, attr, argv, envp);
	hook(path, by_file, true);
	return ret;
}

__attribute__((visibility("default"))) int posix_spawn(pid_t *pid, const char *path,
						       const posix_spawn_file_actions_t *fa,
						       const posix_spawnattr_t *attr,
						       char *const argv[], char *const envp[])
{
	return spawn(false, pid, path, fa, attr, argv, envp);
}

__attribute__((visibility("default"))) int posix_spawnp(pid_t *pid, const char *file,
							const posix_spawn_file_actions_t *fa,
							const posix_spawnattr_t *attr,
							char *const argv[], char *const envp[])
{
	return spawn(true, pid, file, fa, attr, argv, envp);
}

#endif

/*
 * [any, vfork child] Just before an execve: the kernel's mask becomes
 * the program's view (the new image keeps it). Returns the mask to put
 * back if the exec fails (ukp_exec_mask_leave), or false when nothing
 * was changed.
 */
bool ukp_exec_mask_enter(uint64_t *saved)
{
	uint64_t k, m;

	if (!vsig.mask)
		return false;
	k = kernel_mask();
	if (!(vsig.mask & ~k))
		return false;
	m = k | vsig.mask;
	*saved = k;
	ukp_sys_sigprocmask(SIG_SETMASK, &m, NULL);
	return true;
}

void ukp_exec_mask_leave(const uint64_t *saved)
{
	ukp_sys_sigprocmask(SIG_SETMASK, saved, NULL);
}

/* ------------------------------------------------ setjmp/longjmp */

/* Marks the owned part of the view in __saved_mask's second word (the
 * kernel's mask is its first; glibc saves only that). */
#define JMP_TAG 0x6b73616d76706b75ULL /* "ukpvmask" */
_Static_assert(sizeof(((struct __jmp_buf_tag *)0)->__saved_mask) >= 3 * sizeof(uint64_t),
	       "room for the view in __saved_mask");

/* [trap] Called by __sigsetjmp (sigjmp.S) before glibc's. */
UKP_TRAP_TEXT void ukp_vmask_jmp_save(struct __jmp_buf_tag *env)
{
	uint64_t *w = (uint64_t *)&env->__saved_mask;

	w[1] = JMP_TAG;
	w[2] = vsig.mask;
}

/* [trap] Before a long jump that restores the saved mask: the view
 * saved with it (a buffer saved by glibc itself leaves the view as it
 * is). Held signals that it unblocks are delivered now. */
static UKP_TRAP_TEXT void jmp_restore(struct __jmp_buf_tag *env)
{
	const uint64_t *w = (const uint64_t *)&env->__saved_mask;

	if (!env->__mask_was_saved || w[1] != JMP_TAG)
		return;
	vsig.mask = w[2] & OWNED;
	ukp_vmask_flush();
}

#define LONGJMP(fn)                                                                      \
	__attribute__((visibility("default"), noreturn)) void fn(struct __jmp_buf_tag env[1], \
								 int val)                    \
	{                                                                                \
		jmp_restore(env);                                                        \
		if (real_##fn)                                                           \
			real_##fn(env, val);                                             \
		abort();                                                                 \
	}

LONGJMP(siglongjmp)
LONGJMP(longjmp)
LONGJMP(_longjmp)
LONGJMP(__longjmp_chk)

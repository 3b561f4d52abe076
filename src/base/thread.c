/* SPDX-License-Identifier: MIT */
/*
 * thread.c - the library's own threads and its tool's (the optimizer's,
 * a large scan's helper, ukprobe's agent's reader, session and script
 * timer threads): started with every signal blocked but the ones the
 * library owns.
 *
 * ukprobes_kthread_create() starts a pthread. ukprobes_kthread_run()
 * starts one that borrows nothing of the program's: the raw clone on a
 * mapping of the library's (guard page, stack, and a zeroed area around
 * a thread pointer of its own), so that nothing of the program's runs
 * for it (pthread_create() allocates the new thread's TLS with the
 * program's allocator: jemalloc starts threads of its own for a new
 * caller) and nothing is left at its end (a detached one unmaps its own
 * mapping as it exits). The C library finds at that thread pointer what
 * it looks for in its own threads' descriptors: errno and the rest of
 * its static TLS (zeroed: the thread's own), the stack protector's guard,
 * and the thread's id (a recursive mutex of the dynamic loader's compares
 * it with its owner's: 0 would pass for anyone's).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "base/base.h"
#include "base/sys.h"

/*
 * [reg] Start a thread of the library's or of its tool's own: from its
 * first instruction every signal is blocked but the library's
 * (UKP_OWNED_MASK), so that it takes breakpoints in the libc it calls
 * (malloc, in a helper of a scan that runs while a probe on malloc is in
 * place) and answers thread scans, and never runs the program's
 * handlers. The mask is set through whichever pthread_sigmask the
 * library's calls reach: this interposer when the library was preloaded,
 * libc's when it was dlopen()ed (ukprobe -p), where blocking SIGTRAP is
 * real and a breakpoint hit would kill the process. attr may be NULL.
 * 0 or an errno value.
 */
UKPROBES_API int ukprobes_kthread_create(pthread_t *t, const pthread_attr_t *attr,
					 void *(*fn)(void *), void *arg)
{
	sigset_t mask, old;
	int sig, ret;

	sigfillset(&mask);
	for (sig = 1; sig <= 64; sig++)
		if (UKP_OWNED_MASK & (1ULL << (sig - 1)))
			sigdelset(&mask, sig);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	ret = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* ------------------------------------------------------ raw kthreads */

long arch_clone_thread(unsigned long flags, void *stack_top, int *ptid, int *ctid,
		       unsigned long tls, int (*fn)(void *), void *arg);
void arch_thread_exit_unmap(void *base, size_t len) __attribute__((noreturn));

#define KT_GUARD 4096UL
#define KT_STACK (8UL << 20)    /* as pthread's default: pages are taken as used */
#define KT_SIDE (128UL << 10)   /* zeroed room below and above the thread pointer */
#define KT_RAW_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | \
		      CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID)

/* The thread's record, at the top of its stack (in its mapping). */
struct kthread {
	_Atomic uint32_t ctid; /* a joinable thread's id until it has ended */
	int tid;
	void *map;
	size_t map_len;
	void *(*fn)(void *);
	void *arg;
	void *ret;
	unsigned int flags;
	char name[16];
};

/* What the caller keeps (struct ukprobes_kthread's room). */
struct kthread_handle {
	struct kthread *k; /* the raw thread, or NULL: a pthread */
	pthread_t pt;
	int tid;
};

_Static_assert(sizeof(struct kthread_handle) <= sizeof(struct ukprobes_kthread),
	       "struct ukprobes_kthread holds the handle");

/* The C library's thread descriptor: where its thread id is, from the
 * descriptor, and where the descriptor is, from the thread pointer
 * (x86-64: at it; AArch64: below it). -1: not known (a raw thread is a
 * pthread then). */
static _Atomic int desc_state; /* 0 not looked at, 1 known, -1 unknown */
static long tid_off;
static intptr_t desc_delta;

/* The static TLS of the program's modules (the executable's, the C
 * library's...): where each module's block is from the thread pointer,
 * and its initialization image, as the C library sets up a new thread's
 * (its locale pointer, for one, is initialized data: strtoul() and
 * sysconf() read it). Learned once, in a thread of the program's. */
#define KT_IMAGES 32
struct tls_image {
	long off;
	const void *init;
	size_t filesz, memsz;
};
static struct tls_image images[KT_IMAGES];
static int nimages;
static size_t tls_reach; /* the farthest byte of a block from the thread pointer */

#ifdef UKP_OWN_OBJECTS
/* The agent's link binds dl_iterate_phdr() to the library's object table
 * (src/symbols/iterate_objects.c), which knows no TLS: the TLS layout is
 * the loader's, asked of its own walk, found in a constructor (inside the
 * agent's dlopen(), whose loader lock dlsym() takes). The one loader
 * query the agent makes outside its constructors, and not on a
 * resolution path (doc/static_agent.md). */
static int (*loader_walk)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

__attribute__((constructor)) static void find_loader_walk(void)
{
	loader_walk = (int (*)(int (*)(struct dl_phdr_info *, size_t, void *), void *))dlsym(
		RTLD_DEFAULT, "dl_iterate_phdr");
}
#else
#define loader_walk dl_iterate_phdr
#endif

static __attribute__((unused)) int tls_image_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t tp = arch_thread_pointer();
	long off;
	int i;

	(void)size;
	(void)arg;
	if (!info->dlpi_tls_data || nimages == KT_IMAGES)
		return 0;
	off = (long)((intptr_t)info->dlpi_tls_data - (intptr_t)tp);
	/* a block the loader allocated later (dynamic TLS) is not static */
	if (off < -(long)(16UL << 20) || off > (long)(16UL << 20))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		size_t far;

		if (ph->p_type != PT_TLS)
			continue;
		images[nimages].off = off;
		images[nimages].init = (const void *)(info->dlpi_addr + ph->p_vaddr);
		images[nimages].filesz = ph->p_filesz;
		images[nimages].memsz = ph->p_memsz;
		nimages++;
		far = off < 0 ? (size_t)-off : (size_t)off + ph->p_memsz;
		if (far > tls_reach)
			tls_reach = far;
		break;
	}
	return 0;
}

/* The C library's flag "only one thread has ever run" (glibc 2.32 on):
 * while it is set glibc takes no lock in malloc and elsewhere. */
extern char __libc_single_threaded __attribute__((weak));

static __attribute__((unused)) void *nothing(void *arg)
{
	return arg;
}

/*
 * [reg] Where the thread id is in the C library's descriptor, learned
 * from the C library itself: pthread_getcpuclockid() computes a thread's
 * CPU clock from the id it reads in the descriptor ((~tid << 3) | 6, in
 * glibc and musl alike), so a descriptor of numbered words says which
 * word that is; the calling thread's own descriptor must then hold its
 * id there.
 */
static void look_at_descriptor(void)
{
#ifdef UKP_FREE
	/* (the freestanding agent: no C library's threads to look like) */
	atomic_store(&desc_state, 1);
	tid_off = -1;
#else
	static int fake[1024];
	clockid_t cid;
	int i, v;
	char *self;

	for (i = 0; i < 1024; i++)
		fake[i] = i + 1;
	if (pthread_getcpuclockid((pthread_t)(uintptr_t)fake, &cid) != 0)
		goto unknown;
	v = ~(cid >> 3);
	if (v < 1 || v > 1024)
		goto unknown;
	self = (char *)(uintptr_t)pthread_self();
	if (*(int *)(self + (v - 1) * 4) != ukp_sys_gettid())
		goto unknown;
	tid_off = (long)(v - 1) * 4;
	desc_delta = (intptr_t)(arch_thread_pointer() - (uintptr_t)self);
	if (desc_delta < 0 || desc_delta > (intptr_t)(KT_SIDE / 2))
		goto unknown;
#ifdef UKP_OWN_OBJECTS
	if (loader_walk)
#endif
		loader_walk(tls_image_cb, NULL);
	atomic_store(&desc_state, 1);
	return;
unknown:
	atomic_store(&desc_state, -1);
#endif
}

/* [reg] The program as glibc sees it must be multi-threaded before a
 * thread it does not know of runs (its single-threaded paths take no
 * lock): one pthread started and joined from the calling thread (the
 * program's: its allocator gives the new thread's TLS from the caller's
 * arena) makes it so for the process's life. */
static void not_single_threaded(void)
{
#ifndef UKP_FREE
	pthread_t t;

	if (&__libc_single_threaded && __libc_single_threaded &&
	    ukprobes_kthread_create(&t, NULL, nothing, NULL) == 0)
		pthread_join(t, NULL);
#endif
}

/* The raw thread's first frame: its mask (the library's signals
 * deliverable), its name, fn, and its end. */
/* raw threads started and not past their function yet (base.h) */
_Atomic int ukp_kthreads_live;

static int kthread_main(void *p)
{
	struct kthread *k = p;
	uint64_t m = ~UKP_OWNED_MASK, all = ~0ULL;

	/* a thread pointer of its own: its creator's block is not its own
	 * (the GS base it inherited is forgotten) */
	ukp_thread_block_forget();
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&m, 0, 8);
	if (k->name[0])
		arch_syscall3(__NR_prctl, PR_SET_NAME, (long)k->name, 0);
	k->ret = k->fn(k->arg);
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8);
	ukp_thread_block_release();
	atomic_fetch_sub(&ukp_kthreads_live, 1);
	if (k->flags & UKPROBES_KTHREAD_DETACHED) {
		/* (forgotten first: the range may be the program's once
		 * unmapped) */
		ukp_own_unmap_note(k->map, k->map_len);
		arch_thread_exit_unmap(k->map, k->map_len);
	}
	return 0;
}

static __attribute__((unused)) int run_pthread(struct kthread_handle *h, void *(*fn)(void *), void *arg, const char *name,
		       unsigned int flags)
{
	pthread_attr_t attr;
	int ret;

	pthread_attr_init(&attr);
	if (flags & UKPROBES_KTHREAD_DETACHED)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = ukprobes_kthread_create(&h->pt, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (!ret && name)
		pthread_setname_np(h->pt, name);
	h->k = NULL;
	h->tid = 0;
	return ret;
}

/*
 * [reg] A raw thread (include/ukprobes.h). Where the C library's
 * descriptor cannot be learned, a pthread (ukprobes_kthread_create()).
 */
UKPROBES_API int ukprobes_kthread_run(struct ukprobes_kthread *t, void *(*fn)(void *), void *arg,
				      const char *name, unsigned int flags)
{
	struct kthread_handle *h = (struct kthread_handle *)t;
	size_t side = KT_SIDE, len, far, n;
	uint64_t all = ~0ULL, old;
	uintptr_t tp;
	uint64_t *dtv;
	struct kthread *k;
	void *map;
	long tid;
	int r;

	memset(t, 0, sizeof(*t));
	if (atomic_load(&desc_state) == 0)
		look_at_descriptor();
#ifndef UKP_FREE
	if (atomic_load(&desc_state) < 0)
		return run_pthread(h, fn, arg, name, flags);
#endif
	not_single_threaded();
	/* errno and the rest of the program's static TLS in the zeroed
	 * room, however large */
	far = (size_t)(ukp_errno_offset < 0 ? -ukp_errno_offset : ukp_errno_offset);
	if (tls_reach > far)
		far = tls_reach;
	far += 64UL << 10;
	if (far > side)
		side = (far + 4095) & ~4095UL;
	len = KT_GUARD + KT_STACK + 2 * side;
	r = ukp_sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0, &map);
	if (r)
		return -r;
	ukp_sys_mprotect(map, KT_GUARD, PROT_NONE);
	tp = (uintptr_t)map + KT_GUARD + KT_STACK + side;
	/* The dynamic thread vector, at the area's bottom (away from the
	 * static TLS on either side of tp): the dynamic loader's
	 * dl_iterate_phdr() reads it for each module's TLS of this thread.
	 * Its length (dtv[-1]) 0 and its generation (dtv[0]) never the
	 * loader's say that the thread has none (the fields of glibc's
	 * dtv_t, 16 bytes each). */
	dtv = (uint64_t *)((uintptr_t)map + KT_GUARD + KT_STACK + 32);
	dtv[-2] = 0;
	dtv[0] = ~0ULL;
	arch_kthread_tcb(tp, (uintptr_t)dtv);
	for (n = 0; n < (size_t)nimages; n++)
		memcpy((void *)(tp + images[n].off), images[n].init, images[n].filesz);
	k = (struct kthread *)((uintptr_t)map + KT_GUARD + KT_STACK - sizeof(*k));
	k->map = map;
	k->map_len = len;
	k->fn = fn;
	k->arg = arg;
	k->flags = flags;
	for (n = 0; name && name[n] && n < sizeof(k->name) - 1; n++)
		k->name[n] = name[n];
	/* nonzero until the kernel clears it at the thread's end: a join
	 * that comes before the thread ran waits too */
	atomic_store(&k->ctid, UINT32_MAX);
	/* the new thread starts with every signal blocked (its first frame
	 * unblocks the library's) */
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
	atomic_fetch_add(&ukp_kthreads_live, 1);
	tid = arch_clone_thread(KT_RAW_FLAGS | ((flags & UKPROBES_KTHREAD_DETACHED) ? 0 :
						 CLONE_CHILD_CLEARTID),
				(void *)((uintptr_t)k & ~15UL),
				tid_off < 0 ? &k->tid : (int *)(tp - desc_delta + tid_off),
				(int *)&k->ctid, tp,
				kthread_main, k);
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
	if (tid < 0) {
		atomic_fetch_sub(&ukp_kthreads_live, 1);
		ukp_sys_munmap(map, len);
		return (int)-tid;
	}
	h->k = (flags & UKPROBES_KTHREAD_DETACHED) ? NULL : k;
	h->tid = (int)tid;
	return 0;
}

/* [reg] Wait for a joinable thread's end and unmap its mapping: fn's
 * value. */
UKPROBES_API void *ukprobes_kthread_join(struct ukprobes_kthread *t)
{
	struct kthread_handle *h = (struct kthread_handle *)t;
	struct kthread *k = h->k;
	uint32_t v;
	void *ret;

	if (!k) {
#ifndef UKP_FREE
		if (!h->tid && h->pt && pthread_join(h->pt, &ret) == 0)
			return ret;
#endif
		return NULL;
	}
	/* the kernel clears ctid and wakes its futex once the thread is gone
	 * (off its stack) */
	while ((v = atomic_load(&k->ctid)))
		ukp_sys_futex_wait((uint32_t *)&k->ctid, v, NULL);
	ret = k->ret;
	ukp_sys_munmap(k->map, k->map_len);
	h->k = NULL;
	return ret;
}

/* [any] The thread's id (gettid()'s in it): 0 for a pthread. */
UKPROBES_API int ukprobes_kthread_tid(const struct ukprobes_kthread *t)
{
	return ((const struct kthread_handle *)t)->tid;
}

/* [reg] base.h */
int ukp_kthread_start(struct ukprobes_kthread *t, void *(*fn)(void *), void *arg, const char *name)
{
#ifdef UKP_AGENT
	return ukprobes_kthread_run(t, fn, arg, name, 0);
#else
	memset(t, 0, sizeof(*t));
	return run_pthread((struct kthread_handle *)t, fn, arg, name, 0);
#endif
}

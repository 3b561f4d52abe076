/* SPDX-License-Identifier: MIT */
/*
 * entry.c - the freestanding agent's start (libukprobe-agent.bin): the
 * thread ukprobe's ptrace loader (tools/ukprobe/load.c) starts in the
 * process, with the load block (common/load_block.h) as its argument.
 * No dynamic loader ran for the object: its constructors run here, in
 * link order (the library's first, as in the dynamic agent), then the
 * session the parameters name runs on this thread, as the dynamic
 * agent's attach thread does; the thread ends with exit (not
 * exit_group) once ukprobe has detached, and the loader unmaps it.
 *
 * params: "NAME\0KEY\0FLAGS\0" (the abstract socket ukprobe listens on,
 * the secret to present there, and letters: 'g', the program's threads
 * are Go's own, ukp_tb_go): attached. NAME empty: launched (ukprobe started
 * the program and holds it at its entry point until this thread ends);
 * the constructors then set up tracing from the environment ukprobe gave
 * the program (agent.c's ukpa_init, as in a preloaded agent) and the
 * thread ends.
 *
 * Attached, the session's end gives back what the agent took (the
 * probes, the signal actions and its threads: ukpa_attach_end), then
 * says in the block what the loader may unmap (give_back): the ranges
 * it mapped (base/own_maps.c), and the returns still pending through
 * its trampoline, whose real addresses the loader puts back; unless
 * something of it is still in use (a signal action of its own, a thread
 * of its own, a thread of the program's inside its fork:
 * free/fork_sites.c). The loader unmaps them with the image once this thread is gone,
 * every thread of the process stopped (tools/ukprobe/load.c,
 * ukp_unload): only a stop proves that no thread of the program is
 * still in the agent's code or memory (the tail of a handler of the
 * library's it just left).
 */
#include <stddef.h>
#include <stdint.h>

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include "load_block.h"
#include "thread_block.h"

typedef void (*init_fn)(void);
extern init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern init_fn __init_array_end[] __attribute__((visibility("hidden")));

int ukpa_free_session(const char *name, char *key);
extern int ukp_tb_go; /* common/thread_block.h */
long syscall(long n, ...);
/* the library's blacklist of the agent's own text (src/core/blacklist.c) */
extern uintptr_t ukp_self_text_lo, ukp_self_text_hi;

/* (the library: src/core/kretprobes.c, src/base/thread.c, own_maps.c) */
unsigned int ukp_krp_pending(void);
bool ukp_krp_each_pending(void (*fn)(void *arg, int tid, uintptr_t slot, uintptr_t ret),
			  void *arg);
uintptr_t ukp_krp_trampoline(void);
extern _Atomic int ukp_kthreads_live;
extern struct ukp_own_maps ukp_own_maps;

#define GIVE_BACK_WAIT_MS 2000

/* The kernel's form of a signal action (rt_sigaction). */
struct kaction {
	uintptr_t handler, flags, restorer;
	uint64_t mask;
};

/* Is a in the image or in a mapping of the agent's? */
static bool agent_addr(const struct ukp_load_block *b, uintptr_t a)
{
	uint32_t i;

	if (a - b->area < b->area_len)
		return true;
	for (i = 0; i < ukp_own_maps.n; i++)
		if (a >= ukp_own_maps.r[i].lo && a < ukp_own_maps.r[i].hi)
			return true;
	return false;
}

/* Signal actions that still lead into the agent (its handler or its
 * signal return): ukprobes_shutdown() gave the program's back unless a
 * signal of the library's was still pending. */
static unsigned int own_actions(const struct ukp_load_block *b)
{
	unsigned int n = 0;

	for (int sig = 1; sig <= 64; sig++) {
		struct kaction k;

		if (syscall(SYS_rt_sigaction, sig, NULL, &k, 8) == 0 &&
		    (agent_addr(b, k.handler) || agent_addr(b, k.restorer)))
			n++;
	}
	return n;
}

/* [reg] Wait up to GIVE_BACK_WAIT_MS for *left() to be 0: what is left. */
static unsigned int wait_none(unsigned int (*left)(void))
{
	unsigned int n = left();

	for (int i = 0; n && i < GIVE_BACK_WAIT_MS; i++) {
		struct timespec d = { 0, 1000000 };

		nanosleep(&d, NULL);
		n = left();
	}
	return n;
}

/* (free/fork_sites.c: threads sent to the agent's fork, not back yet) */
extern _Atomic int ukpa_forks_running;

static unsigned int forks_left(void)
{
	int n = ukpa_forks_running;

	return n > 0 ? (unsigned int)n : 0;
}

static unsigned int threads_left(void)
{
	int n = ukp_kthreads_live;

	return n > 0 ? (unsigned int)n : 0;
}

/* What the loader may unmap at the unload (see the top). */
/* The returns still pending at the unload, for the loader to put back
 * (load_block.h); rets_n counts past UKP_RET_BACK_MAX. */
static struct ukp_ret_back rets[UKP_RET_BACK_MAX];
static uint64_t rets_n;

/* [reg] */
static void note_ret(void *arg, int tid, uintptr_t slot, uintptr_t ret)
{
	(void)arg;
	if (rets_n < UKP_RET_BACK_MAX)
		rets[rets_n] = (struct ukp_ret_back){ (uint64_t)tid, slot, ret };
	rets_n++;
}

/* [reg] Can the returns still pending be put back by the loader (no
 * shadow stack, not too many)? Then the block says where they are. */
static bool rets_put_back(struct ukp_load_block *b)
{
	rets_n = 0;
	if (!ukp_krp_each_pending(note_ret, NULL) || rets_n > UKP_RET_BACK_MAX)
		return false;
	b->rets = (uintptr_t)rets;
	b->rets_n = rets_n;
	b->trampoline = ukp_krp_trampoline();
	return true;
}

static void give_back(struct ukp_load_block *b)
{
	unsigned int n;
	int32_t say = UKP_UNLOAD_GIVEN;

	/* (a thread blocked in a function whose return was probed, a server
	 * in select(): its return address goes back in place, by the loader) */
	if (ukp_krp_pending() && !rets_put_back(b) && (n = wait_none(ukp_krp_pending)))
		say = UKP_UNLOAD_RETURNS;
	else if ((n = wait_none(threads_left)))
		say = UKP_UNLOAD_THREADS;
	else if ((n = wait_none(forks_left)))
		say = UKP_UNLOAD_FORKS;
	else if ((n = own_actions(b)))
		say = UKP_UNLOAD_SIGNALS;
	else if (ukp_own_maps.lost)
		say = UKP_UNLOAD_LOST;
	b->own_maps = (uintptr_t)&ukp_own_maps;
#if defined(__x86_64__)
	if (ukp_tb_arena) {
		b->tb_lo = (uintptr_t)ukp_tb_arena - ARCH_TB_GS_BIAS;
		b->tb_hi = b->tb_lo + UKP_TB_ARENA;
	}
#endif
	b->unload_n = n;
	__atomic_store_n(&b->unload, say, __ATOMIC_RELEASE);
}

/* The thread's end: exit, not exit_group (the loader unmaps its stack
 * after it, once the kernel cleared ctid). */
static __attribute__((noreturn)) void ukpa_free_exit(int code)
{
	(void)code;
	for (;;)
		syscall(60 /* __NR_exit, x86-64: the only architecture of this build */, 0);
}

__attribute__((visibility("default"), noreturn)) void ukpa_free_entry(struct ukp_load_block *b)
{
	const char *name = (const char *)b->params;
	char *key;
	size_t i, n = b->params_len;

	for (i = 0; i < n && name[i]; i++)
		;
	key = i + 1 < n ? (char *)b->params + i + 1 : NULL;
	if (key) {
		const char *flags = key;

		while (flags < name + n && *flags)
			flags++;
		for (flags++; flags < name + n && *flags; flags++)
			if (*flags == 'g')
				ukp_tb_go = 1;
	}
	/* the image (and the loader's clone trampoline after it): never
	 * probed, as the dynamic agent's object is not */
	ukp_self_text_lo = (uintptr_t)b->area;
	ukp_self_text_hi = (uintptr_t)(b->area + b->area_len);
	for (init_fn *f = __init_array_start; f < __init_array_end; f++)
		(*f)();
	if (!n || !name[0])
		ukpa_free_exit(0); /* launched: set up by the constructors */
	if (ukpa_free_session(name, key) == 0)
		give_back(b);
	ukpa_free_exit(0);
}

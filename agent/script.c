/* SPDX-License-Identifier: MIT */
/*
 * script.c - a compiled `ukprobe run` script in this process
 * (common/script_abi.h, doc/scripts.md): loading it, the thread blocks
 * its per-thread maps live in, its records and messages to ukprobe.
 *
 * The script's handlers are the probes' own handlers (probes.c asks
 * ukpa_script_kp/rp for them): a hit runs the script's code and calls
 * back only ukpa_script_thread() (the gate and the thread's block) and,
 * for a printf, ukpa_script_emit().
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"
#include "script_abi.h"

/* the script calls these (agent.map) */
#define EXPORT __attribute__((visibility("default")))
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static const struct ukp_script_desc *desc;
static void *handle;              /* its dlopen() handle */
static char *set_path;            /* ukpa_script_set_path's */
/* addresses whose symbol went to ukprobe (ukpa_script_sym): an
 * open-addressing set, grown by doubling */
static uint64_t *syms_sent;
static size_t syms_cap, syms_n;

struct block {
	_Atomic int state;        /* 0 free, 1 being set up, 2 a thread's */
	void *mem;
	uint64_t bytes;
};
static struct block blocks[UKP_SCRIPT_THREADS];
static _Atomic uint64_t no_block;  /* hits of threads that found no block */
/* (the thread's: in its block, agent.h) */
#define my_block (ukpa_self()->script_block)
/* a thread's block is of the script of this generation (attached again:
 * another script, whose blocks are new) */
static _Atomic unsigned generation;
#define my_generation (ukpa_self()->script_generation)

/* interval probes: a thread started with the script (before any probe is
 * in place: glibc starts a thread with every signal blocked), which runs
 * them once BEGIN has; it also ends the image when SIGINT or SIGTERM
 * came (see on_signal) */
static struct ukprobes_kthread timer;
static _Atomic int timer_tid; /* the timer thread's id, once it runs */
static bool timer_exists;
static _Atomic int timer_state;   /* 0 waits, 1 runs the intervals, 2 ends */
static _Atomic int pending_signal;
static _Atomic int pending_exit;  /* the script called exit() */
static pid_t owner;               /* the process the script is loaded in */
static bool launched;             /* not attached: the signals are ours to watch */
/* -f: the launched (or attached) process, whose images run BEGIN, END
 * and the interval probes; first: this image is its first (BEGIN) */
static pid_t root_pid;
static bool first_image = true;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *timer_main(void *arg)
{
	const struct ukp_script_desc *d = arg;
	uint64_t next[64], now;
	uint32_t i, n = d->nintervals < 64 ? d->nintervals : 64;

	/* its hits of the script's probes (in libc) count nothing */
	ukpa_busy++;
	atomic_store(&timer_tid, (int)ukpa_sys0(SYS_gettid));
	while (atomic_load(&timer_state) == 0) {
		struct timespec step = { 0, 1000000 };

		nanosleep(&step, NULL);
	}
	now = mono_ms();
	for (i = 0; i < n; i++)
		next[i] = now + d->interval_ms[i];
	while (atomic_load(&timer_state) == 1) {
		/* intervals to the millisecond; a signal within 20 ms */
		struct timespec step = { 0, n ? 1000000 : 20000000 };
		int sig = atomic_load(&pending_signal);

		if (atomic_exchange(&pending_exit, 0)) {
			/* exit(), as bpftrace's with -c: END and the maps,
			 * then the program is ended by SIGTERM (ukprobe
			 * exits 0); attached, ukprobe detaches */
			ukpa_script_send(UKP_SCRIPT_EXIT, 0, NULL, 0);
			if (launched) {
				atomic_store(&pending_signal, SIGTERM);
				sig = SIGTERM;
			}
		}
		if (sig) {
			struct sigaction dfl;
			int ended;

			/* END and the maps, then the signal's default action.
			 * Another thread ending the image meanwhile (the
			 * program's own exit, an exec) runs END itself and may
			 * be joining this thread: no signal then, or it would
			 * end the process in the middle of that END */
			while (!(ended = ukpa_end_before_signal()) &&
			       atomic_load(&timer_state) == 1)
				nanosleep(&step, NULL);
			if (!ended)
				return NULL;
			memset(&dfl, 0, sizeof(dfl));
			dfl.sa_handler = SIG_DFL;
			sigaction(sig, &dfl, NULL);
			kill(getpid(), sig);
			return NULL;
		}
		now = mono_ms();
		for (i = 0; i < n; i++)
			if (now >= next[i]) {
				d->interval(i);
				next[i] += d->interval_ms[i];
			}
		nanosleep(&step, NULL);
	}
	return NULL;
}

/* [signal] SIGINT or SIGTERM whose action was the default (the end of the
 * process): the timer thread ends the image first (END, the maps), then
 * takes the default action. In another process (a forked child, which
 * the script does not trace), the default action now. */
static void on_signal(int sig)
{
	if ((pid_t)ukpa_sys0(SYS_getpid) != root_pid) {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
		kill((pid_t)ukpa_sys0(SYS_getpid), sig);
		return;
	}
	atomic_store(&pending_signal, sig);
}

/* [init] Watch SIGINT and SIGTERM where the program leaves them to their
 * default action (a handler it sets later replaces ours). */
static void watch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old, sa;

		if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

static int timer_start(void)
{
	int ret;

	owner = getpid();
	/* attached, the session ends by ukprobe's DETACH */
	launched = !ukpa_attached;
	atomic_store(&pending_exit, 0);
	if (!root_pid)
		root_pid = owner;
	/* -f: another process's image runs no interval probes */
	if (root_pid != owner ||
	    (!desc->nintervals && !launched && !(desc->flags & UKP_SCRIPT_F_EXIT)))
		return 0;
	/* no signal handler of the program runs on it */
	atomic_store(&timer_state, 0);
	atomic_store(&timer_tid, 0);
	ret = ukprobes_kthread_run(&timer, timer_main, (void *)desc, "ukprobe-script", 0);
	if (ret)
		return -1;
	timer_exists = true;
	return 0;
}

static void timer_end(void)
{
	if (!timer_exists)
		return;
	atomic_store(&timer_state, 2);
	/* the timer thread ends the image itself for a signal */
	if (atomic_load(&timer_tid) != (int)ukpa_sys0(SYS_gettid))
		ukprobes_kthread_join(&timer);
	timer_exists = false;
}

void ukpa_script_set_path(const char *path)
{
	free(set_path);
	set_path = path && *path ? strdup(path) : NULL;
}

static void forget(void);

/* [init] The session's script, or none: a session without one (stat,
 * trace) after a `run -p` must not find the earlier script's handlers
 * and messages still in place. */
int ukpa_script_load_set(void)
{
	int ret = 0;

	if (set_path)
		ret = ukpa_script_load(set_path);
	else if (desc)
		forget();
	ukpa_script_set_path(NULL);
	return ret;
}

/* [init] A script of an earlier session (attached again): its blocks
 * and its object go; no probe runs its handlers any more. */
static void forget(void)
{
	uint32_t i;

	for (i = 0; i < UKP_SCRIPT_THREADS; i++)
		if (atomic_load(&blocks[i].state) == 2) {
			munmap(blocks[i].mem, blocks[i].bytes);
			blocks[i].mem = NULL;
			atomic_store(&blocks[i].state, 0);
		}
	atomic_fetch_add(&generation, 1);
	atomic_store(&no_block, 0);
	/* a new session: ukprobe knows no symbol of it yet */
	free(syms_sent);
	syms_sent = NULL;
	syms_cap = syms_n = 0;
	if (handle)
#ifdef UKP_FREE
		ukpa_script_unmap(handle);
#else
		dlclose(handle);
#endif
	handle = NULL;
	desc = NULL;
}

/* [init] The object at path in this process: handle and desc, or -1
 * (said why). A static program has no loader: the agent maps it itself. */
static int open_object(const char *path)
{
#ifdef UKP_FREE
	char err[256];
	const void *d;

	handle = ukpa_script_map(path, &d, err, sizeof(err));
	if (!handle) {
		dprintf(2, "ukprobe-agent: cannot load the script %s\n", err);
		return -1;
	}
	desc = d;
#else
	struct ukpa_obj_at self;
	void *h;

	/* injected (-p), the agent was loaded RTLD_LOCAL: its symbols, which
	 * the script binds to, go into the global scope */
	if (!ukpa_obj_at((void *)ukpa_script_thread, &self) &&
	    !ukpa_real_dlopen(self.obj.path, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
		dprintf(2, "ukprobe-agent: cannot make the agent's symbols global: %s\n", dlerror());
		return -1;
	}
	/* RTLD_NOW: its calls into the agent are bound before any hit, so
	 * that the vector-free proof can follow them */
	h = ukpa_real_dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		dprintf(2, "ukprobe-agent: cannot load the script %s: %s\n", path, dlerror());
		return -1;
	}
	handle = h;
	desc = dlsym(h, "ukp_script");
#endif
	return 0;
}

int ukpa_script_load(const char *path)
{
	if (desc)
		forget();
	if (open_object(path))
		return -1;
	if (!desc || desc->abi != UKP_SCRIPT_ABI ||
	    desc->nspecs != (uint32_t)ukpa_specs_count()) {
		dprintf(2, "ukprobe-agent: %s is not a script of this ukprobe\n", path);
		desc = NULL;
		return -1;
	}
	if (timer_start()) {
		dprintf(2, "ukprobe-agent: cannot start the interval probes' thread\n");
		desc = NULL;
		return -1;
	}
	return 0;
}

bool ukpa_script_loaded(void)
{
	return desc != NULL;
}

size_t ukpa_script_payload(void)
{
	return desc ? desc->out_max : 0;
}

kprobe_pre_handler_t ukpa_script_kp(uint32_t spec)
{
	return desc && spec < desc->nspecs ? desc->kp[spec] : NULL;
}

kretprobe_handler_t ukpa_script_rp(uint32_t spec)
{
	return desc && spec < desc->nspecs ? desc->rp[spec] : NULL;
}

void ukpa_script_set_root(pid_t root, bool first)
{
	root_pid = root;
	first_image = first;
}

/* [init] Until ukprobe has written out what the agent sent so far
 * (common/region.h's begun), bounded: a ukprobe too slow to answer
 * delays the program, never stops it. */
static void wait_begun(void)
{
	uint64_t until = mono_ms() + 10000;

	if (!ukpa_region || ukpa_script_send(UKP_SCRIPT_BEGUN, 0, NULL, 0))
		return;
#ifdef UKP_FREE
	/* a static program is held at its entry until this thread has ended
	 * and ukprobe has read what it sent (launch.c's held_drain) */
	return;
#endif
	while (!atomic_load_explicit(&ukpa_region->begun, memory_order_acquire) &&
	       mono_ms() < until) {
		struct timespec step = { 0, 100000 };

		nanosleep(&step, NULL);
	}
}

void ukpa_script_begin(void)
{
	if (!desc)
		return;
	/* before START: from then on ukprobe's user may press Ctrl-C */
	if (launched && owner == root_pid)
		watch_signals();
	ukpa_script_send(UKP_SCRIPT_START, ukpa_probes_count(), NULL, 0);
	if (first_image)
		desc->begin();
	else
		desc->setup();
	/* bpftrace prints "Attaching" and BEGIN's output before the program
	 * runs: the program's first write must not overtake them */
	if (first_image && launched && !atomic_load(&pending_exit))
		wait_begun();
	atomic_store(&timer_state, 1);
}

void ukpa_script_after_fork(void)
{
	uint32_t i;

	if (!desc)
		return;
	/* the parent's threads' blocks hold the parent's counts: this
	 * process's threads take new ones */
	for (i = 0; i < UKP_SCRIPT_THREADS; i++)
		if (atomic_load(&blocks[i].state) == 2) {
			munmap(blocks[i].mem, blocks[i].bytes);
			blocks[i].mem = NULL;
			atomic_store(&blocks[i].state, 0);
		}
	atomic_fetch_add(&generation, 1);
	atomic_store(&no_block, 0);
	atomic_store(&pending_exit, 0);
	atomic_store(&pending_signal, 0);
	/* the symbols go to ukprobe again, for this image */
	free(syms_sent);
	syms_sent = NULL;
	syms_cap = syms_n = 0;
	timer_exists = false;     /* (the parent's thread) */
	owner = getpid();
	first_image = false;
	desc->after_fork();
}

void ukpa_script_end(bool exec)
{
	uint64_t drops;
	uint32_t i;

	if (!desc)
		return;
	timer_end();
	/* -f: END is the launched process's, at its end (not at an exec,
	 * whose image goes on) */
	if (getpid() == root_pid && !(exec && ukpa_follow))
		desc->end();
	else
		desc->dump();
	drops = atomic_load(&no_block);
	for (i = 0; i < UKP_SCRIPT_THREADS; i++)
		if (atomic_load(&blocks[i].state) == 2)
			drops += ((struct ukp_script_thread *)blocks[i].mem)->drops;
	ukpa_script_send(UKP_SCRIPT_DROPS, 0, &drops, sizeof(drops));
}

/* [hit] Claim a block: once per thread (system calls, no allocation). */
static void *claim(void)
{
	uint32_t i;

	for (i = 0; i < UKP_SCRIPT_THREADS; i++) {
		int expected = 0;
		struct ukp_script_thread *t;
		void *mem;

		if (atomic_load_explicit(&blocks[i].state, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&blocks[i].state, &expected, 1))
			continue;
		/* reserved, committed as the maps fill */
		mem = mmap(NULL, desc->thread_bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (mem == MAP_FAILED) {
			atomic_store(&blocks[i].state, 0);
			return NULL;
		}
		t = mem;
		t->tid = (int32_t)ukpa_sys0(SYS_gettid);
		/* not prctl(): see ring.c's get_comm */
		ukpa_sys(SYS_prctl, PR_GET_NAME, t->comm, 0);
		blocks[i].mem = mem;
		blocks[i].bytes = desc->thread_bytes;
		atomic_store_explicit(&blocks[i].state, 2, memory_order_release);
		my_block = mem;
		my_generation = atomic_load_explicit(&generation, memory_order_relaxed);
		return mem;
	}
	return NULL;
}

EXPORT void *ukpa_script_thread(void)
{
	struct ukpa_thread *t = ukpa_self();
	void *b = t->script_block;

	if (t->busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return NULL;
	if (__builtin_expect(b != NULL, 1) &&
	    t->script_generation == atomic_load_explicit(&generation, memory_order_relaxed))
		return b;
	b = claim();
	if (!b)
		atomic_fetch_add_explicit(&no_block, 1, memory_order_relaxed);
	return b;
}

EXPORT void ukpa_script_emit(const struct kprobe *kp, int ret, const void *data, uint32_t len)
{
	const struct ukpa_probe *pr = ret ? container_of(kp, struct ukpa_probe, rp.kp)
					  : container_of(kp, struct ukpa_probe, kp);

	/* ukprobe knows the probe from its PROBE message first */
	if (!atomic_load_explicit(&pr->live, memory_order_acquire))
		return;
	ukpa_record_data(pr, (uintptr_t)kp->addr, data, len);
}

EXPORT int ukpa_script_send(uint32_t kind, uint32_t arg, const void *data, uint32_t len)
{
	static uint64_t buf[UKP_MSG_MAX / 8];
	struct ukp_msg_script_hdr *h = (struct ukp_msg_script_hdr *)buf;
	uint32_t total = (uint32_t)sizeof(*h) + len;

	if (total > sizeof(buf))
		return -1;
	h->type = UKPM_SCRIPT;
	h->len = (total + 7) & ~7u;
	h->kind = kind;
	h->arg = arg;
	memset((char *)buf + total, 0, h->len - total);
	if (len)
		memcpy(h + 1, data, len);
	return ukpa_send(buf, h->len);
}


static bool sym_add(uint64_t addr)
{
	size_t i;

	if (2 * (syms_n + 1) > syms_cap) {
		size_t cap = syms_cap ? 2 * syms_cap : 1024, j;
		uint64_t *t = calloc(cap, sizeof(*t));

		if (!t)
			return true;
		for (j = 0; j < syms_cap; j++) {
			if (!syms_sent[j])
				continue;
			for (i = (syms_sent[j] * 0x9e3779b97f4a7c15ULL) & (cap - 1); t[i];
			     i = (i + 1) & (cap - 1))
				;
			t[i] = syms_sent[j];
		}
		free(syms_sent);
		syms_sent = t;
		syms_cap = cap;
	}
	for (i = (addr * 0x9e3779b97f4a7c15ULL) & (syms_cap - 1); syms_sent[i];
	     i = (i + 1) & (syms_cap - 1))
		if (syms_sent[i] == addr)
			return false;
	syms_sent[i] = addr;
	syms_n++;
	return true;
}

EXPORT void ukpa_script_sym(uint64_t addr)
{
	if (addr && sym_add(addr))
		ukpa_send_sym(addr);
}

EXPORT void *ukpa_script_block(uint32_t i)
{
	if (i >= UKP_SCRIPT_THREADS || atomic_load(&blocks[i].state) != 2)
		return NULL;
	return blocks[i].mem;
}

EXPORT int64_t ukpa_script_arg(const struct kprobe *kp, int ret, const struct pt_regs *regs,
			       uint32_t i)
{
	const struct ukpa_probe *pr = ret ? container_of(kp, struct ukpa_probe, rp.kp)
					  : container_of(kp, struct ukpa_probe, kp);
	const struct ukp_spec *fs = pr->fspec;
	const struct ukp_fetcharg *fa;
	struct ukp_rec rec;
	uint64_t v;

	if (i >= (uint32_t)fs->nargs)
		return 0;
	fa = &fs->args[i];
	/* the fetch writes the argument's slot and its fault bit only; the
	 * SPEC's arguments are all numbers (script.c makes them) */
	rec.faults = 0;
	ukpa_fetch_some(fs, regs, regs, &rec, 1u << i);
	if (rec.faults || fa->type == UKP_TY_STRING)
		return 0;
	v = *(const uint64_t *)(const void *)(rec.data + fa->off);
	if (fa->type == UKP_TY_S && fa->size < 8 && (v >> (fa->size * 8 - 1)) & 1)
		v |= ~0ULL << (fa->size * 8);
	return (int64_t)v;
}

EXPORT void ukpa_script_exit(void)
{
	atomic_store_explicit(&pending_exit, 1, memory_order_relaxed);
}

/* SPDX-License-Identifier: MIT */
/*
 * script_abi.h - between the agent and a compiled `ukprobe run` script
 * (doc/scripts.md).
 *
 * ukprobe translates the script to C and builds it into a shared object
 * with the system's C compiler; the agent dlopen()s it (its path in
 * UKPROBE_SCRIPT), finds `ukp_script`, and registers the script's
 * uprobes and uretprobes (one SPEC each, in the script's order) with the
 * object's handlers as their pre_handler / return handler: a hit runs
 * the script's own code, straight. The object calls back into the agent
 * through the functions below (bound at load: RTLD_NOW, -z now), and
 * never through a pointer, so that libukprobes can prove its handlers
 * vector-free.
 *
 * Contexts: [hit] a probe handler (async-signal-safe, no allocation, no
 * locks); [init] the agent's start-up and exit (BEGIN, END, the dump).
 */
#ifndef UKPROBE_SCRIPT_ABI_H
#define UKPROBE_SCRIPT_ABI_H

#include <stdint.h>

#define UKP_SCRIPT_ABI 1
#define UKP_ENV_SCRIPT "UKPROBE_SCRIPT"

/* Thread blocks the agent hands out; the threads after these go
 * untraced (their hits are counted as drops). */
#define UKP_SCRIPT_THREADS 256

/* The first bytes of every thread's block (the rest is the script's
 * per-thread maps, zeroed). */
struct ukp_script_thread {
	int32_t tid;
	uint32_t age;             /* hits since comm was read */
	char comm[16];
	uint64_t drops;           /* updates a full per-thread map refused */
};

struct kprobe;
struct kretprobe_instance;
struct pt_regs;

/* The script calls exit(): the agent watches for it (ukpa_script_exit). */
#define UKP_SCRIPT_F_EXIT 1u

/* What a compiled script exports as `ukp_script`. */
struct ukp_script_desc {
	uint32_t abi;             /* UKP_SCRIPT_ABI */
	uint32_t nspecs;          /* SPECs (uprobes and uretprobes), in order */
	uint64_t thread_bytes;    /* a thread's block, header included */
	uint32_t out_max;         /* the longest record a hit emits */
	uint32_t flags;           /* UKP_SCRIPT_F_* */
	/* by SPEC index: the uprobe's handler, or the uretprobe's */
	int (*const *kp)(struct kprobe *, struct pt_regs *);
	int (*const *rp)(struct kretprobe_instance *, struct pt_regs *);
	void (*begin)(void);      /* [init] after the probes are in, before main() */
	void (*end)(void);        /* [init] after the last hit: END, then every map */
	/* interval probes: their periods; the agent's timer thread runs
	 * interval(i) [init] every interval_ms[i] */
	uint32_t nintervals;
	const uint32_t *interval_ms;
	void (*interval)(uint32_t i);
	/* -f: the images after the first run neither BEGIN nor END (those
	 * are the launched process's), only these */
	void (*setup)(void);      /* [init] pid, comm: instead of begin */
	void (*dump)(void);       /* [init] every map: instead of end */
	void (*after_fork)(void); /* [init] a forked child's own maps, empty */
};

/* The script's messages to ukprobe (UKPM_SCRIPT, after struct ukp_msg):
 * kind, arg, then data. */
enum ukp_script_kind {
	UKP_SCRIPT_START = 1,     /* arg: probes attached */
	UKP_SCRIPT_OUT,           /* one printf/print record (BEGIN, END) */
	UKP_SCRIPT_MAP,           /* arg: map; data: entries (key, value): the
				   * process's last (at the end), or a print()'s */
	UKP_SCRIPT_PRINT,         /* arg: map: print the entries sent since its CLEAR */
	UKP_SCRIPT_CLEAR,         /* arg: map: a print() of it begins */
	UKP_SCRIPT_DROPS,         /* data: u64 updates refused by full maps */
	UKP_SCRIPT_EXIT,          /* the script called exit(): a launched program
				   * is ended (END and the maps first), an
				   * attached one left (ukprobe detaches) */
	UKP_SCRIPT_BEGUN,         /* launched: BEGIN is done; the program waits
				   * for ukprobe to print what came before (its
				   * region's begun) */
};

struct ukp_msg_script_hdr {
	uint32_t type, len;       /* struct ukp_msg */
	uint32_t kind;
	uint32_t arg;
};

/* The agent's side, for the script (exported by the agent). */
/* [hit] This thread's block, or NULL when the hit must do nothing (the
 * thread runs agent code, tracing is off, no block left). */
void *ukpa_script_thread(void);
/* [hit] One record (printf) of this hit of kp (a uprobe's, or
 * ret: a uretprobe's rp.kp) into the thread's ring, for ukprobe. */
void ukpa_script_emit(const struct kprobe *kp, int ret, const void *data, uint32_t len);
/* [init] A message to ukprobe. 0 or -1. */
int ukpa_script_send(uint32_t kind, uint32_t arg, const void *data, uint32_t len);
/* [init] Thread i's block, or NULL (i < UKP_SCRIPT_THREADS). */
void *ukpa_script_block(uint32_t i);
/* [hit] ustack: the user stack of this hit of kp (ret: a uretprobe's,
 * which returns to retaddr), at most max return addresses into frames;
 * how many. */
int ukpa_script_ustack(const struct kprobe *kp, int ret, uint64_t retaddr,
		       const struct pt_regs *regs, uint64_t *frames, int max);
/* [init] addr's symbol to ukprobe (UKPM_SYM), once. */
void ukpa_script_sym(uint64_t addr);
/* [hit] The value of fetch argument i of the SPEC of this hit of kp
 * (ret as for ukpa_script_emit): a parameter by name, a usdt argument, an
 * address (uaddr); 0 when it cannot be read (as bpftrace reads a fault). */
int64_t ukpa_script_arg(const struct kprobe *kp, int ret, const struct pt_regs *regs, uint32_t i);
/* [hit] exit(): the session ends, as soon as the agent's script thread
 * sees it (bpftrace's exit() is not at once either). */
void ukpa_script_exit(void);

#endif /* UKPROBE_SCRIPT_ABI_H */

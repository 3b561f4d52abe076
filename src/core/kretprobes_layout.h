/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_layout.h - the structs of kretprobes.c behind the fast
 * paths' pool and return-stack primitives (src/fastpath.h defines the
 * operations; each arch's fastpath_ops.h implements them through the
 * P_* offsets src/asm_offsets.c generates). C only (the _Atomic
 * members). Owned by kretprobes.c: nothing else writes them.
 */
#ifndef UKP_KRETPROBES_LAYOUT_H
#define UKP_KRETPROBES_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "ukprobes.h"

/* Pending return probes per thread (uprobes' MAX_URETPROBE_DEPTH). */
#define KRP_MAX_DEPTH 64
/* A record's pseudo CIE + FDE (struct krp_thread's eh). */
#define KRP_EH_SIZE 144
#define KRP_EH_FDE_OFF 24

struct kretprobe_holder {
	struct kretprobe *_Atomic rp;  /* NULL once unregistered */
	_Atomic uint64_t free_head;    /* ABA tag << 32 | (index + 1); 0: empty */
	_Atomic uint32_t *free_next;   /* per instance: index + 1 of the next free one */
	unsigned char *insts;
	size_t stride;
	int ninst;
	struct kretprobe *owner;       /* [krp_mutex] the registered struct */
	/* entry_handler and handler as proven vector-free at registration
	 * (vecstate.c), or NULL */
	const void *vf_entry, *vf_handler;
	struct kretprobe_holder *next; /* [krp_mutex] registered or zombie list */
};

/* In front of every instance. */
struct krp_inst_hdr {
	struct kretprobe_holder *rph;
	uint32_t idx;
	uint32_t pad;
};

struct krp_entry {
	uintptr_t slot;                          /* where the trampoline address is */
	uintptr_t ret;                           /* the real return address */
	struct kretprobe_instance *_Atomic ri;   /* NULL once consumed */
};

struct krp_thread {
	_Atomic int tid;             /* 0: free; KRP_TID_BUSY: being (re)claimed */
	int pid;                     /* process the record belongs to (fork) */
	unsigned long task;          /* pthread_self() */
	bool shstk;                  /* the thread has a shadow stack */
	_Atomic unsigned int depth;  /* entries in use */
	/* A free instance kept by this thread (see "Spares" above). */
	struct kretprobe_instance *_Atomic spare;
	struct krp_entry e[KRP_MAX_DEPTH];
	/* [thread] The unwinder's CIE and FDE for the trampoline, which
	 * name this record's entries (kretprobe_fde.c); the FDE at
	 * KRP_EH_FDE_OFF, its length 0 until built. */
	_Alignas(8) unsigned char eh[KRP_EH_SIZE];
};

#endif /* UKP_KRETPROBES_LAYOUT_H */

/* SPDX-License-Identifier: MIT */
/*
 * load_block.h - what ukprobe's ptrace loader (tools/ukprobe/load.c)
 * hands the freestanding object it loads into a process: the block its
 * thread's entry gets as its one argument, entry(struct ukp_load_block *).
 *
 * The block sits at the top of the thread's stack (the loader maps both).
 * The entry never returns: the thread ends with the exit system call
 * (not exit_group), and the kernel then clears ctid (CLONE_CHILD_CLEARTID),
 * which tells the loader that the stack and the object can be unmapped.
 */
#ifndef UKP_LOAD_BLOCK_H
#define UKP_LOAD_BLOCK_H

#include <stdint.h>

#define UKP_LOAD_MAGIC 0x554b504cu /* "UKPL" */

struct ukp_load_block {
	uint32_t magic;         /* UKP_LOAD_MAGIC */
	uint32_t size;          /* of the block, params included */
	uint64_t area, area_len;   /* the object's image (and the loader's clone trampoline) */
	uint64_t stack, stack_len; /* this thread's stack; the block is at its top */
	uint32_t ctid;          /* the thread's id; 0 once it has ended (written by the kernel) */
	uint32_t pad;
	/* what the thread pointer points at (x86-64: a TCB's self pointers
	 * and a stack guard at %fs:0x28, for libraries built with a stack
	 * protector; unused where the guard is a global) */
	uint64_t tcb[8];
	/* The object's word at its end (the unload, ukp_unload): written by
	 * its thread before it exits, read by the loader once it has. */
	int32_t unload;         /* UKP_UNLOAD_*: 0 until said */
	uint32_t unload_n;      /* what kept it: how many (returns pending, ...) */
	uint64_t own_maps;      /* its struct ukp_own_maps: what it mapped and still has */
	uint64_t tb_lo, tb_hi;  /* thread block bases of its (x86-64 GS bases): [lo, hi) */
	/* Returns still pending through its trampoline (its own memory:
	 * struct ukp_ret_back[rets_n]): the loader puts each real return
	 * address back where the trampoline's still is, every thread
	 * stopped, before it unmaps the object. */
	uint64_t rets, rets_n, trampoline;
	uint64_t params_len;
	unsigned char params[]; /* the loader's caller's, as given */
};

/* unload: what the object's end says the loader may do */
#define UKP_UNLOAD_GIVEN 1      /* its own maps listed, nothing of it in use: unmap it all */
#define UKP_UNLOAD_RETURNS -1   /* unload_n return probes still pending that cannot be
				 * put back (a shadow stack, more than
				 * UKP_RET_BACK_MAX): it stays */
#define UKP_UNLOAD_SIGNALS -2   /* unload_n signal actions still its own: it stays */
#define UKP_UNLOAD_THREADS -3   /* unload_n threads of its own still run: it stays */
#define UKP_UNLOAD_LOST -4      /* its record of its maps is not whole: it stays */
#define UKP_UNLOAD_FORKS -5     /* unload_n threads still in its fork (-f): it stays */

/* A return pending at the unload: thread tid's stack word at slot holds
 * the trampoline's address; ret is the real return address. */
#define UKP_RET_BACK_MAX 1024
struct ukp_ret_back {
	uint64_t tid, slot, ret;
};

/*
 * The freestanding agent's mappings (src/base/own_maps.c): the ranges it
 * mapped and has not unmapped, read by the loader at the unload.
 */
#define UKP_OWN_MAPS_MAX 1024
struct ukp_own_range {
	uint64_t lo, hi;  /* [lo, hi), page-rounded */
};
struct ukp_own_maps {
	uint32_t n;       /* ranges in r */
	uint32_t lost;    /* 1: more ranges than r holds (the record is not whole) */
	struct ukp_own_range r[UKP_OWN_MAPS_MAX];
};

#endif /* UKP_LOAD_BLOCK_H */

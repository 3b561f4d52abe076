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
	uint64_t params_len;
	unsigned char params[]; /* the loader's caller's, as given */
};

#endif /* UKP_LOAD_BLOCK_H */

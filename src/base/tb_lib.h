/* SPDX-License-Identifier: MIT */
/*
 * base/tb_lib.h - the library's room in each thread's per-thread block
 * (common/thread_block.h): libukprobes' per-thread state, which needs no
 * TLS of the program's (a static program's cannot grow; a thread started
 * with the raw clone has its creator's: doc/static_agent.md, "Per-thread
 * state without TLS").
 *
 * Each part has a fixed offset in the room, so that a room of the
 * library's needs no type of another's (a lower room never sees a higher
 * one's); each owner checks that its part fits (UKP_TB_LIB_FITS). The
 * first part's first int is the room's "not now" count (the core's
 * probe status): the overflow block's (threads that found no block) is
 * large, so that no fast path takes such a thread.
 *
 * UKP_TB_LIB() is [any] context and allocation-free: a thread's first
 * use takes its block (common/thread_block.h: a few system calls, with
 * its signals blocked), later ones are a few loads.
 */
#ifndef UKP_TB_LIB_H
#define UKP_TB_LIB_H

#include "thread_block.h"

/* offsets in the room, and the room each part has */
#define UKP_TBL_CTL 0          /* core: struct ukp_ctlblk, read by the fast paths */
#define UKP_TBL_CTL_SIZE 256
#define UKP_TBL_HITS 256       /* core: the hit path's counters (tests) */
#define UKP_TBL_HITS_SIZE 32
#define UKP_TBL_UC 288         /* process/threads.c: the thread's context record */
#define UKP_TBL_UC_SIZE 32
#define UKP_TBL_JPROBE 320     /* core/jprobes.c: a jprobe's saved state */
#define UKP_TBL_JPROBE_SIZE 640
#define UKP_TBL_GO 960         /* core/go_stack.c: the stack of Go probes' hits */
#define UKP_TBL_GO_SIZE 64
#define UKP_TBL_VSIG 1024      /* process/sigmask.c: the program's view of its mask */
#define UKP_TBL_VSIG_SIZE 384
#define UKP_TBL_WATCH 1408     /* watch/watch.c: the in-place step */
#define UKP_TBL_WATCH_SIZE 576
#define UKP_TBL_ARCH 1984      /* the arch's (AArch64's watch: the exclusive monitor) */
#define UKP_TBL_ARCH_SIZE 64

_Static_assert(UKP_TBL_ARCH + UKP_TBL_ARCH_SIZE <= UKP_TB_LIB_SIZE, "the library's room");

/* [any] The calling thread's part at off, as a type *. */
#define UKP_TB_LIB(type, off) \
	((type *)(void *)((char *)ukp_thread_block() + UKP_TB_LIB_OFF + (off)))

/* Does type fit in the part at off with size bytes (and its alignment)? */
#define UKP_TB_LIB_FITS(type, off, size)                                          \
	_Static_assert(sizeof(type) <= (size) &&                                  \
			       (UKP_TB_LIB_OFF + (off)) % _Alignof(type) == 0,     \
		       #type " in the library's room")

#endif /* UKP_TB_LIB_H */

/* SPDX-License-Identifier: MIT */
/*
 * go_stack.c - each thread's own stack for the hits of jump-optimized
 * probes in Go code (doc/go_rust.md, "Jump-optimized Go probes"): the
 * Go template of the detour (src/arch/ARCH/optprobe_tramp.S) moves to
 * it, because a goroutine's stack has no room for handlers. A thread
 * gets one at its first such hit, which falls back to a breakpoint hit
 * (trap.c) and comes here; its later hits find it in the thread's
 * per-thread block (struct ukp_go_stack, base/tb_lib.h's UKP_TBL_GO),
 * which the template reads %gs-relative once the block is the thread's.
 *
 * A stack is mapped for the thread's life and the process's: nothing
 * tells the library that a thread ended (Go's threads seldom do: the
 * runtime keeps them), and two threads must never share one. Only the
 * pages a hit touched take memory (MAP_NORESERVE).
 */
#include <stdint.h>
#include <sys/mman.h>

#include "base/base.h"
#include "base/sys.h"
#include "base/tb_lib.h"
#include "core/core.h"

#define GO_STACK_SIZE (64 * 1024)
#define GO_GUARD 4096 /* PROT_NONE below it: an overflow faults */

/*
 * [trap] The fallback hit of a Go probe (breakpoint_trap): a thread
 * without a stack gets one (one that could not be mapped keeps its
 * breakpoint hits). Two system calls, once per thread.
 */
UKP_TRAP_TEXT void ukp_go_stack_need(void)
{
	struct ukp_go_stack *gs = UKP_TB_LIB(struct ukp_go_stack, UKP_TBL_GO);
	void *m;

	if (gs->base)
		return;
	if (ukp_sys_mmap(NULL, GO_STACK_SIZE + GO_GUARD, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m))
		return;
	if (ukp_sys_mprotect(m, GO_GUARD, PROT_NONE)) {
		ukp_sys_munmap(m, GO_STACK_SIZE + GO_GUARD);
		return;
	}
	gs->base = (uintptr_t)m + GO_GUARD;
	gs->top = gs->base + GO_STACK_SIZE;
}

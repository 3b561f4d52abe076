/* SPDX-License-Identifier: MIT */
/*
 * ptrace_arch.h - what ukprobe's ptrace code needs of an architecture
 * (tools/ukprobe/arch/ARCH/ptrace_arch.c): a stopped thread's registers,
 * a system call set up in them, the restart of a system call the stop
 * made fail, and the few instructions the loader
 * writes or looks for (load.c). ptrace_regs.h (per arch) holds the
 * register block and the ELF constants.
 *
 * All of it runs in ukprobe, on threads it has stopped.
 */
#ifndef UKPROBE_PTRACE_ARCH_H
#define UKPROBE_PTRACE_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace_regs.h"

/* The system call instruction; how its address must be aligned. */
extern const unsigned char ukp_arch_syscall_insn[];
extern const size_t ukp_arch_syscall_insn_len, ukp_arch_insn_align;
/* A breakpoint, and the pc a thread stops at after the one at addr. */
extern const unsigned char ukp_arch_break_insn[];
extern const size_t ukp_arch_break_insn_len;
uintptr_t ukp_arch_break_stop_pc(uintptr_t addr);
/*
 * The clone trampoline: the system call instruction, then, in the new
 * thread only (its stack as ukp_arch_child_frame() laid it out), a
 * cleared frame pointer, the block's address as the first argument and
 * an indirect jump to the entry. The parent never runs past the system
 * call: the loader takes it back at the call's exit.
 */
extern const unsigned char ukp_arch_clone_tramp[];
extern const size_t ukp_arch_clone_tramp_len;
/* The words the trampoline pops, below block (16-byte aligned): *n of
 * them in words[], the new thread's stack pointer in *sp. */
void ukp_arch_child_frame(uintptr_t block, uintptr_t entry, uint64_t words[4], size_t *n,
			  uintptr_t *sp);
/* The thread pointer of the loaded object's thread, with tcb (8 words,
 * at address at in the process) filled as this architecture's code
 * built with a stack protector reads it; 0: none. */
uintptr_t ukp_arch_thread_pointer(uintptr_t at, uint64_t tcb[8]);
/* clone's arguments in the order of this architecture's system call. */
void ukp_arch_clone_args(unsigned long a[6], unsigned long flags, uintptr_t stack, uintptr_t ptid,
			 uintptr_t ctid, uintptr_t tls);

int ukp_arch_get_regs(pid_t tid, struct ukp_regs *r);
int ukp_arch_set_regs(pid_t tid, const struct ukp_regs *r);
uintptr_t ukp_arch_pc(const struct ukp_regs *r);
uintptr_t ukp_arch_sp(const struct ukp_regs *r);
void ukp_arch_set_pc(struct ukp_regs *r, uintptr_t pc);
/* Registers for the system call nr(a[0..5]) at the instruction at insn,
 * marked as not in a system call (no restart of their own). */
void ukp_arch_set_syscall(struct ukp_regs *r, uintptr_t insn, long nr, const unsigned long a[6]);
/* The return value register: a system call's result, a function's value. */
long ukp_arch_result(const struct ukp_regs *r);
/* The system call the thread is in (its number), or -1. */
long ukp_arch_syscall_nr(pid_t tid, const struct ukp_regs *r);
/*
 * Registers for a call of fn(a0, a1) on the stack below sp (sp past any
 * red zone; ptrace_regs.h: UKP_ARCH_RED_ZONE), returning to address 0
 * (the SIGSEGV there ends the call: inject.c). *n words to write at *at
 * first (a return address on the stack), or none.
 */
void ukp_arch_set_call(struct ukp_regs *r, uintptr_t fn, uintptr_t sp, unsigned long a0,
		       unsigned long a1, uint64_t *word, uintptr_t *at, size_t *n);
/* The vector and floating-point state, which a call may change: saved in
 * a buffer of ukp_arch_ext_save()'s (free()), put back. */
int ukp_arch_ext_save(pid_t tid, void **buf, size_t *len);
int ukp_arch_ext_restore(pid_t tid, const void *buf, size_t len);
/*
 * A thread stopped (PTRACE_INTERRUPT) in a waiting system call that the
 * stop made fail with EINTR (epoll_wait, sockets with a timeout, ...),
 * which the kernel does not restart: made to run again (the program
 * would see an EINTR it never asked for). at_insn: the instruction
 * before the pc is the system call instruction. True when *r changed.
 */
bool ukp_arch_restart_eintr(struct ukp_regs *r, bool at_insn);
/* tid stopped at a system call's exit: did that call give the thread its
 * thread pointer (x86-64: arch_prctl ARCH_SET_FS)? -1 where no system
 * call does (AArch64 writes TPIDR_EL0 itself), else 0 or 1. */
int ukp_arch_sets_thread_pointer(pid_t tid);
/* The per-thread block base the library keeps in a register of the
 * thread's (common/thread_block.h: x86-64's GS base; 0 where there is
 * none), and set it (the unload puts 0 back: load.c). */
uintptr_t ukp_arch_block_base(const struct ukp_regs *r);
void ukp_arch_set_block_base(struct ukp_regs *r, uintptr_t v);
/* Can a static Go program's threads be told apart here (x86-64: by
 * their FS base, which the agent reads with rdfsbase: FSGSBASE)? */
bool ukp_go_threads_ok(void);

#endif /* UKPROBE_PTRACE_ARCH_H */

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
/* clone's arguments in the order of this architecture's system call. */
void ukp_arch_clone_args(unsigned long a[6], unsigned long flags, uintptr_t stack, uintptr_t ptid,
			 uintptr_t ctid, uintptr_t tls);

int ukp_arch_get_regs(pid_t tid, struct ukp_regs *r);
int ukp_arch_set_regs(pid_t tid, const struct ukp_regs *r);
uintptr_t ukp_arch_pc(const struct ukp_regs *r);
void ukp_arch_set_pc(struct ukp_regs *r, uintptr_t pc);
/* Registers for the system call nr(a[0..5]) at the instruction at insn,
 * marked as not in a system call (no restart of their own). */
void ukp_arch_set_syscall(struct ukp_regs *r, uintptr_t insn, long nr, const unsigned long a[6]);
long ukp_arch_syscall_result(const struct ukp_regs *r);
/*
 * A thread stopped (PTRACE_INTERRUPT) in a waiting system call that the
 * stop made fail with EINTR (epoll_wait, sockets with a timeout, ...),
 * which the kernel does not restart: made to run again (the program
 * would see an EINTR it never asked for). at_insn: the instruction
 * before the pc is the system call instruction. True when *r changed.
 */
bool ukp_arch_restart_eintr(struct ukp_regs *r, bool at_insn);

#endif /* UKPROBE_PTRACE_ARCH_H */

/* SPDX-License-Identifier: MIT */
/*
 * ptrace_arch.c - AArch64's part of ukprobe's ptrace code (ptrace_arch.h).
 * Built and cross-compiled; ptrace cannot run under qemu-user, so the
 * loader's tests run on x86-64 only.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "ptrace_arch.h"

/* little-endian words */
#define W(x) (unsigned char)((x) & 0xff), (unsigned char)(((x) >> 8) & 0xff), \
	(unsigned char)(((x) >> 16) & 0xff), (unsigned char)(((x) >> 24) & 0xff)

const unsigned char ukp_arch_syscall_insn[] = { W(0xd4000001u) }; /* svc #0 */
const size_t ukp_arch_syscall_insn_len = 4, ukp_arch_insn_align = 4;
const unsigned char ukp_arch_break_insn[] = { W(0xd4200000u) };  /* brk #0 */
const size_t ukp_arch_break_insn_len = 4;

uintptr_t ukp_arch_break_stop_pc(uintptr_t addr)
{
	return addr; /* brk stops on itself */
}

/* svc #0; mov x29, #0; mov x30, #0; ldp x0, x16, [sp], #16; br x16 */
const unsigned char ukp_arch_clone_tramp[] = { W(0xd4000001u), W(0xd280001du), W(0xd280001eu),
					       W(0xa8c143e0u), W(0xd61f0200u) };
const size_t ukp_arch_clone_tramp_len = sizeof(ukp_arch_clone_tramp);

void ukp_arch_child_frame(uintptr_t block, uintptr_t entry, uint64_t words[4], size_t *n,
			  uintptr_t *sp)
{
	*sp = block - 16; /* sp stays 16-byte aligned */
	words[0] = block;
	words[1] = entry;
	*n = 2;
}

/* the generic order: flags, stack, ptid, tls, ctid */
/* No thread pointer: AArch64's stack guard is a global
 * (__stack_chk_guard), which the loaded object defines. */
uintptr_t ukp_arch_thread_pointer(uintptr_t at, uint64_t tcb[8])
{
	(void)at;
	(void)tcb;
	return 0;
}

void ukp_arch_clone_args(unsigned long a[6], unsigned long flags, uintptr_t stack, uintptr_t ptid,
			 uintptr_t ctid, uintptr_t tls)
{
	a[0] = flags;
	a[1] = stack;
	a[2] = ptid;
	a[3] = tls;
	a[4] = ctid;
	a[5] = 0;
}

int ukp_arch_get_regs(pid_t tid, struct ukp_regs *r)
{
	struct iovec iov = { &r->r, sizeof(r->r) };

	return ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) ? -errno : 0;
}

int ukp_arch_set_regs(pid_t tid, const struct ukp_regs *r)
{
	struct iovec iov = { (void *)&r->r, sizeof(r->r) };

	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) ? -errno : 0;
}

uintptr_t ukp_arch_pc(const struct ukp_regs *r)
{
	return r->r.pc;
}

uintptr_t ukp_arch_sp(const struct ukp_regs *r)
{
	return r->r.sp;
}

void ukp_arch_set_pc(struct ukp_regs *r, uintptr_t pc)
{
	r->r.pc = pc;
}

void ukp_arch_set_syscall(struct ukp_regs *r, uintptr_t insn, long nr, const unsigned long a[6])
{
	int i;

	r->r.pc = insn;
	r->r.regs[8] = (unsigned long)nr;
	for (i = 0; i < 6; i++)
		r->r.regs[i] = a[i];
}

long ukp_arch_result(const struct ukp_regs *r)
{
	return (long)r->r.regs[0];
}

/*
 * AArch64 makes the restart before the stop (do_signal() rewinds the pc
 * and puts the first argument back before it looks for a signal): a
 * thread stopped in a system call is already at its svc with its
 * arguments. Two things are out of reach: a call the stop made fail with
 * EINTR (x0, its first argument, is lost) and a restart_block call
 * (nanosleep's rest), which restarts with its first arguments (a timeout
 * starts over).
 */
bool ukp_arch_restart_eintr(struct ukp_regs *r, bool at_insn)
{
	(void)r;
	(void)at_insn;
	return false;
}

/* The kernel's syscallno (NT_ARM_SYSTEM_CALL); do_signal() has already
 * forgotten it in a thread stopped after a call it interrupted. */
long ukp_arch_syscall_nr(pid_t tid, const struct ukp_regs *r)
{
	int nr = -1;
	struct iovec iov = { &nr, sizeof(nr) };

	(void)r;
	return ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &iov) ? -1 : nr;
}

void ukp_arch_set_call(struct ukp_regs *r, uintptr_t fn, uintptr_t sp, unsigned long a0,
		       unsigned long a1, uint64_t *word, uintptr_t *at, size_t *n)
{
	(void)word;
	(void)at;
	*n = 0;
	r->r.sp = sp & ~(uintptr_t)15;
	r->r.pc = fn;
	r->r.regs[0] = a0;
	r->r.regs[1] = a1;
	r->r.regs[30] = 0; /* the return address */
}

int ukp_arch_ext_save(pid_t tid, void **buf, size_t *len)
{
	struct iovec iov;

	*buf = malloc(sizeof(struct user_fpsimd_struct));
	if (!*buf)
		return -ENOMEM;
	iov.iov_base = *buf;
	iov.iov_len = sizeof(struct user_fpsimd_struct);
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov))
		return -errno;
	*len = iov.iov_len;
	return 0;
}

int ukp_arch_ext_restore(pid_t tid, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRFPREG, &iov) ? -errno : 0;
}

int ukp_arch_sets_thread_pointer(pid_t tid)
{
	(void)tid;
	return -1; /* (the C library writes TPIDR_EL0 itself) */
}

uintptr_t ukp_arch_block_base(const struct ukp_regs *r)
{
	(void)r;
	return 0; /* (the blocks are a table keyed by TPIDR_EL0: no register of the library's) */
}

void ukp_arch_set_block_base(struct ukp_regs *r, uintptr_t v)
{
	(void)r;
	(void)v;
}

bool ukp_go_threads_ok(void)
{
	return false; /* (no freestanding agent on AArch64 yet) */
}

/* SPDX-License-Identifier: MIT */
/*
 * ptrace_arch.c - x86-64's part of ukprobe's ptrace code (ptrace_arch.h).
 */
#include <errno.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "ptrace_arch.h"

const unsigned char ukp_arch_syscall_insn[] = { 0x0f, 0x05 };
const size_t ukp_arch_syscall_insn_len = 2, ukp_arch_insn_align = 1;
const unsigned char ukp_arch_break_insn[] = { 0xcc };
const size_t ukp_arch_break_insn_len = 1;

uintptr_t ukp_arch_break_stop_pc(uintptr_t addr)
{
	return addr + 1;
}

/* syscall; xor %ebp,%ebp; pop %rdi; pop %rax; jmp *%rax (no ret: a
 * shadow stack would refuse it) */
const unsigned char ukp_arch_clone_tramp[] = { 0x0f, 0x05, 0x31, 0xed, 0x5f, 0x58, 0xff, 0xe0 };
const size_t ukp_arch_clone_tramp_len = sizeof(ukp_arch_clone_tramp);

void ukp_arch_child_frame(uintptr_t block, uintptr_t entry, uint64_t words[4], size_t *n,
			  uintptr_t *sp)
{
	/* the entry starts with rsp % 16 == 8, as after a call, on a return
	 * address of 0 */
	*sp = block - 24;
	words[0] = block;
	words[1] = entry;
	words[2] = 0;
	*n = 3;
}

void ukp_arch_clone_args(unsigned long a[6], unsigned long flags, uintptr_t stack, uintptr_t ptid,
			 uintptr_t ctid, uintptr_t tls)
{
	a[0] = flags;
	a[1] = stack;
	a[2] = ptid;
	a[3] = ctid;
	a[4] = tls;
	a[5] = 0;
}

int ukp_arch_get_regs(pid_t tid, struct ukp_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, &r->r) ? -errno : 0;
}

int ukp_arch_set_regs(pid_t tid, const struct ukp_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, NULL, &r->r) ? -errno : 0;
}

uintptr_t ukp_arch_pc(const struct ukp_regs *r)
{
	return r->r.rip;
}

void ukp_arch_set_pc(struct ukp_regs *r, uintptr_t pc)
{
	r->r.rip = pc;
}

void ukp_arch_set_syscall(struct ukp_regs *r, uintptr_t insn, long nr, const unsigned long a[6])
{
	r->r.rip = insn;
	r->r.rax = (unsigned long)nr;
	r->r.orig_rax = (unsigned long)-1;
	r->r.rdi = a[0];
	r->r.rsi = a[1];
	r->r.rdx = a[2];
	r->r.r10 = a[3];
	r->r.r8 = a[4];
	r->r.r9 = a[5];
}

long ukp_arch_syscall_result(const struct ukp_regs *r)
{
	return (long)r->r.rax;
}

bool ukp_arch_restart_eintr(struct ukp_regs *r, bool at_insn)
{
	if ((long)r->r.orig_rax >= 0 && (long)r->r.rax == -EINTR && at_insn) {
		r->r.rax = r->r.orig_rax;
		r->r.rip -= 2;
		return true;
	}
	return false;
}

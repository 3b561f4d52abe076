/* SPDX-License-Identifier: MIT */
/*
 * ptrace_arch.c - x86-64's part of ukprobe's ptrace code (ptrace_arch.h).
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <sys/user.h>

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

/* The ABI's TCB: its own address at %fs:0 and %fs:0x10, the stack
 * guard at %fs:0x28 (a random one: getauxval(AT_RANDOM)'s bytes are the
 * process's, not ours to reuse). */
uintptr_t ukp_arch_thread_pointer(uintptr_t at, uint64_t tcb[8])
{
	uint64_t guard = 0;
	FILE *f = fopen("/dev/urandom", "re");

	if (f) {
		if (fread(&guard, sizeof(guard), 1, f) != 1)
			guard = 0;
		fclose(f);
	}
	tcb[0] = at;
	tcb[2] = at;
	tcb[5] = guard & ~(uint64_t)0xff; /* a zero byte first, as glibc's */
	return at;
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

uintptr_t ukp_arch_sp(const struct ukp_regs *r)
{
	return r->r.rsp;
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

long ukp_arch_result(const struct ukp_regs *r)
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

long ukp_arch_syscall_nr(pid_t tid, const struct ukp_regs *r)
{
	(void)tid;
	return (long)r->r.orig_rax;
}

void ukp_arch_set_call(struct ukp_regs *r, uintptr_t fn, uintptr_t sp, unsigned long a0,
		       unsigned long a1, uint64_t *word, uintptr_t *at, size_t *n)
{
	sp = (sp & ~(uintptr_t)15) - 8; /* rsp % 16 == 8 at a function's entry */
	*word = 0;
	*at = sp;
	*n = 1;
	r->r.rsp = sp;
	r->r.rip = fn;
	r->r.rdi = a0;
	r->r.rsi = a1;
	r->r.rax = 0;
	r->r.orig_rax = (unsigned long)-1; /* not in a system call: no restart */
	r->r.eflags &= ~0x400UL;           /* DF clear, as the ABI wants */
}

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#define XSTATE_MAX (64 * 1024)
#define FPREGS_ONLY (1UL << 62) /* in *len: NT_PRFPREG's, no XSAVE area */

int ukp_arch_ext_save(pid_t tid, void **buf, size_t *len)
{
	struct iovec iov;

	*buf = malloc(XSTATE_MAX);
	if (!*buf)
		return -ENOMEM;
	iov.iov_base = *buf;
	iov.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		*len = iov.iov_len;
		return 0;
	}
	iov.iov_len = sizeof(struct user_fpregs_struct);
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov))
		return -errno;
	*len = iov.iov_len | FPREGS_ONLY;
	return 0;
}

int ukp_arch_ext_restore(pid_t tid, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len & ~FPREGS_ONLY };

	return ptrace(PTRACE_SETREGSET, tid,
		      (void *)(uintptr_t)(len & FPREGS_ONLY ? NT_PRFPREG : NT_X86_XSTATE), &iov)
		       ? -errno : 0;
}

int ukp_arch_sets_thread_pointer(pid_t tid)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
		return 0;
	return r.orig_rax == SYS_arch_prctl && r.fs_base;
}

uintptr_t ukp_arch_block_base(const struct ukp_regs *r)
{
	return (uintptr_t)r->r.gs_base;
}

void ukp_arch_set_block_base(struct ukp_regs *r, uintptr_t v)
{
	r->r.gs_base = v;
}

bool ukp_go_threads_ok(void)
{
	return getauxval(AT_HWCAP2) & 2; /* HWCAP2_FSGSBASE */
}

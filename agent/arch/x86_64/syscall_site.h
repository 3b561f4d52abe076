/* SPDX-License-Identifier: MIT */
/*
 * syscall_site.h - x86-64's part of the freestanding agent's signal
 * sites (free/signal_sites.c): how a static program's system calls look
 * in its code, and a call's registers at its instruction.
 */
#ifndef UKPA_SYSCALL_SITE_H
#define UKPA_SYSCALL_SITE_H

#include <stdbool.h>
#include <stdint.h>

#include <ukprobes.h>

/* How the program's code makes the system call nr: the number loaded
 * into eax (mov $nr, %eax: b8 imm32), and the system call instruction
 * (0f 05) at most UKPA_SITE_REACH bytes after it. glibc's and Go's
 * wrappers do so; a match that is no instruction start is refused by
 * register_kprobe, and the number is checked again at every hit. */
#define UKPA_SITE_LOAD_LEN 5
#define UKPA_SITE_REACH 24
/* (glibc's _exit: its exit_group 32 bytes after the load) */
#define UKPA_SITE_REACH_ANY 48
#define UKPA_SYSCALL_INSN_LEN 2
#define UKPA_NR_RT_SIGACTION 13
#define UKPA_NR_RT_SIGPROCMASK 14
#define UKPA_NR_EXIT_GROUP 231
#define UKPA_NR_CLONE 56
#define UKPA_NR_FORK 57
#define UKPA_NR_CLONE3 435
#define UKPA_NR_EXECVE 59
#define UKPA_NR_CLOSE_RANGE 436

/* Is code[1..4] nr (the immediate of a mov)? */
static inline bool ukpa_site_imm(const unsigned char *code, long nr)
{
	return code[1] == (unsigned char)nr && code[2] == (unsigned char)(nr >> 8) &&
	       code[3] == (unsigned char)(nr >> 16) && code[4] == (unsigned char)(nr >> 24);
}

/* Does code[0..] load nr into eax? */
static inline bool ukpa_site_loads(const unsigned char *code, long nr)
{
	return code[0] == 0xb8 && ukpa_site_imm(code, nr);
}

/* Does code[0..] load nr into any 32-bit register (mov $nr, %r32: b8+r
 * imm32, REX.B before it for r8d-r15d)? glibc's _exit loads exit_group's
 * number into esi and moves it to eax before the instruction. */
static inline bool ukpa_site_loads_any(const unsigned char *code, long nr)
{
	return (code[0] & 0xf8) == 0xb8 && ukpa_site_imm(code, nr);
}

/* Is code[0..] the system call instruction? */
static inline bool ukpa_site_syscall(const unsigned char *code)
{
	return code[0] == 0x0f && code[1] == 0x05;
}

/* [hit] The system call's number and arguments at the instruction. */
static inline long ukpa_site_nr(const struct pt_regs *r)
{
	return (long)r->ax;
}

static inline unsigned long ukpa_site_arg(const struct pt_regs *r, int i)
{
	switch (i) {
	case 0:
		return r->di;
	case 1:
		return r->si;
	case 2:
		return r->dx;
	default:
		return r->r10;
	}
}

/* [hit] The call made: its result, and the thread goes on after the
 * instruction at addr. */
static inline void ukpa_site_done(struct pt_regs *r, uintptr_t addr, long res)
{
	r->ax = (unsigned long)res;
	r->ip = addr + UKPA_SYSCALL_INSN_LEN;
}

/* The registers of a call at its instruction, as the agent's fork
 * trampoline takes them (arch/ARCH/fork_tramp.S): the number, then the
 * six arguments. */
struct ukpa_fork_call {
	unsigned long nr, arg[6];
};

/* [hit] The thread at the system call instruction at addr goes to the
 * fork trampoline instead, which makes the call and comes back after the
 * instruction (rcx: the system call clobbers it). */
static inline void ukpa_site_divert(struct pt_regs *r, uintptr_t addr, uintptr_t tramp)
{
	r->cx = addr + UKPA_SYSCALL_INSN_LEN;
	r->ip = tramp;
}

/* The C library's syscall() function (free/syscall_fn.c): glibc's
 * moves the number and six arguments to the kernel's registers (the
 * sixth from the stack), then the instruction, with nothing on the
 * stack but the return address; after it, the result's errno and the
 * return. (musl's keeps a frame of its own there: not followed.) */
#define UKPA_SYSCALL_FN_INSN 23
static inline bool ukpa_syscall_fn_is_glibc(const unsigned char *code)
{
	static const unsigned char glibc[UKPA_SYSCALL_FN_INSN + UKPA_SYSCALL_INSN_LEN] = {
		0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xd6, 0x48, 0x89, 0xca, 0x4d,
		0x89, 0xc2, 0x4d, 0x89, 0xc8, 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05
	};

	for (unsigned int i = 0; i < sizeof(glibc); i++)
		if (code[i] != glibc[i])
			return false;
	return true;
}

/* A direct call (e8 rel32) or jump (e9 rel32: a tail call) of fn at
 * code: 1 for a call, 2 for a jump, else 0. */
#define UKPA_CALL_LEN 5
static inline int ukpa_site_calls(const unsigned char *code, uintptr_t fn)
{
	int32_t rel;

	if (code[0] != 0xe8 && code[0] != 0xe9)
		return 0;
	__builtin_memcpy(&rel, code + 1, sizeof(rel));
	if ((uintptr_t)code + UKPA_CALL_LEN + (uintptr_t)(intptr_t)rel != fn)
		return 0;
	return code[0] == 0xe8 ? 1 : 2;
}

/* Does code[0..] load a constant into the first argument's register
 * (mov $imm32, %edi: bf imm32)? *v: the constant. */
#define UKPA_ARG0_REACH 24
static inline bool ukpa_site_loads_arg0(const unsigned char *code, long *v)
{
	int32_t imm;

	if (code[0] != 0xbf)
		return false;
	__builtin_memcpy(&imm, code + 1, sizeof(imm));
	*v = (long)(uint32_t)imm;
	return true;
}

/* [hit] The number and first two arguments of a call of syscall() at
 * its call site. */
static inline void ukpa_site_call_args(const struct pt_regs *r, long *nr, unsigned long *a0,
				       unsigned long *a1)
{
	*nr = (long)r->di;
	*a0 = r->si;
	*a1 = r->dx;
}

/* [hit] A thread at a call (call: true) or tail jump of glibc's
 * syscall() at addr, made as if at syscall()'s instruction insn: the
 * return address pushed (a call), the number and arguments moved as
 * syscall() moves them. False (nothing changed) if the stack cannot be
 * read. The thread may then be diverted as at insn. */
static inline bool ukpa_site_call_enter(struct pt_regs *r, uintptr_t addr, bool call)
{
	unsigned long sp = r->sp, slot[2];

	if (call) {
		sp -= 8;
		if (copy_from_user_nofault(slot, (const void *)sp, sizeof(slot)))
			return false;
		*(volatile unsigned long *)sp = addr + UKPA_CALL_LEN;
	} else if (copy_from_user_nofault(slot, (const void *)sp, sizeof(slot))) {
		return false;
	}
	r->sp = sp;
	r->ax = r->di;
	r->di = r->si;
	r->si = r->dx;
	r->dx = r->cx;
	r->r10 = r->r8;
	r->r8 = r->r9;
	r->r9 = ((volatile unsigned long *)sp)[1];
	return true;
}

#endif /* UKPA_SYSCALL_SITE_H */

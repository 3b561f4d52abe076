// SPDX-License-Identifier: MIT
/*
 * test_insn.c - the x86-64 arch layer on its own: the decoder wrapper
 * (boundaries, classification, slot images with rip-relative re-basing)
 * and the emulator of control transfers.
 *
 * Where the CPU can be asked, it is the reference: jcc and loop outcomes
 * come from running the same bytes, and re-based slot images are run to
 * show they reach the original data.
 *
 * Built by tests/meson.build against the static library. To build it on
 * its own (before the rest of the library exists):
 *   gcc -DUKP_STANDALONE_TEST -Isrc -Isrc/arch/x86_64 -Iinclude \
 *       tests/unit/test_insn.c src/arch/x86_64/insn.c src/arch/x86_64/core.c \
 *       -lZydis -lZycore -lcriterion
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arch/arch.h"
#include "emu_ops.h"

/* the slot bytes of the last arch_prepare_insn() */
static struct ukp_slot_img img;

#ifdef UKP_STANDALONE_TEST
/*
 * Stand-ins for nofault.S. process_vm_readv on ourselves copies like
 * memcpy but reports an unmapped source or destination as EFAULT instead
 * of faulting, which the emulator's fault paths need.
 */
long arch_copy_nofault(void *dst, const void *src, size_t n)
{
	struct iovec local = { .iov_base = dst, .iov_len = n };
	struct iovec remote = { .iov_base = (void *)src, .iov_len = n };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

bool arch_nofault_fixup(uintptr_t ip, uintptr_t *fixup_ip)
{
	return false;
}
#endif

/*
 * The library's own SIGSEGV handler may not be installed when no probe
 * was ever registered, so route faults inside arch_copy_nofault to its
 * fix-up ourselves (documented in arch.h).
 */
static void nofault_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uintptr_t fixup;

	if (arch_nofault_fixup(uc->uc_mcontext.gregs[REG_RIP], &fixup)) {
		uc->uc_mcontext.gregs[REG_RIP] = fixup;
		return;
	}
	signal(sig, SIG_DFL);	/* re-faults and kills the test */
}

static void install_nofault_handler(void)
{
	struct sigaction sa = { .sa_sigaction = nofault_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

#define X86_CF (1UL << 0)
#define X86_PF (1UL << 2)
#define X86_ZF (1UL << 6)
#define X86_SF (1UL << 7)
#define X86_OF (1UL << 11)
#define X86_FLAGS_BASE 0x202UL	/* IF and the always-one bit */

#define PAGE 4096UL

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static void *map_pages(size_t n, int extra_flags)
{
	void *p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);

	cr_assert_neq(p, MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

static void make_exec(void *p, size_t n)
{
	cr_assert_eq(mprotect(p, n * PAGE, PROT_READ | PROT_EXEC), 0);
}

/* ---------------------------------------------------------------------- */
/* Golden classification table                                            */
/* ---------------------------------------------------------------------- */

#define G_ADDR 0x400000UL
#define G_SLOT 0x410000UL	/* re-based disp = old - 0x10000 */
#define FAR_SLOT 0x7fff00000000UL

struct golden {
	const char *name;
	uint8_t code[16];
	uint8_t n;		/* bytes offered (avail) */
	int ret;
	uint8_t len;		/* 0: the bytes do not decode */
	bool ool;
	uint8_t emu;
	/* Expected slot image when ool; all zero means "the bytes + int3". */
	uint8_t slot[UKP_SLOT_SIZE];
	uint8_t slot_len;
	uintptr_t addr, slot_addr;	/* 0: G_ADDR / G_SLOT */
	const char *why;	/* checked when set */
};

#define CODE(...) .code = { __VA_ARGS__ }, .n = sizeof((uint8_t[]){ __VA_ARGS__ })
#define SLOT(...) .slot = { __VA_ARGS__ }, .slot_len = sizeof((uint8_t[]){ __VA_ARGS__ })
#define EMU(op, l) .ret = 0, .len = (l), .ool = false, .emu = (op)
#define OOL(l) .ret = 0, .len = (l), .ool = true

static const struct golden golden[] = {
	/* -EILSEQ: exception instructions and garbage */
	{ "int3",		CODE(0xcc), .ret = -EILSEQ, .len = 1 },
	{ "int $0x80",		CODE(0xcd, 0x80), .ret = -EILSEQ, .len = 2 },
	{ "into (invalid)",	CODE(0xce), .ret = -EILSEQ },
	{ "int1",		CODE(0xf1), .ret = -EILSEQ, .len = 1 },
	{ "ud0",		CODE(0x0f, 0xff, 0xc0), .ret = -EILSEQ, .len = 3 },
	{ "ud1",		CODE(0x0f, 0xb9, 0xc0), .ret = -EILSEQ, .len = 3 },
	{ "ud2",		CODE(0x0f, 0x0b), .ret = -EILSEQ, .len = 2,
				.why = "exception instruction" },
	{ "0f 04 invalid",	CODE(0x0f, 0x04), .ret = -EILSEQ },
	{ "lock nop invalid",	CODE(0xf0, 0x90), .ret = -EILSEQ },
	{ "truncated call",	CODE(0xe8, 0x00, 0x00), .ret = -EILSEQ,
				.why = "undecodable instruction" },

	/* -EINVAL: ss loads, displacement overflow */
	{ "mov %ax,%ss",	CODE(0x8e, 0xd0), .ret = -EINVAL, .len = 2 },
	{ "mov (%rax),%ss",	CODE(0x8e, 0x10), .ret = -EINVAL, .len = 2 },
	{ "pop %ss (17)",	CODE(0x17), .ret = -EINVAL },
	{ "rip disp overflow",	CODE(0x48, 0x8b, 0x05, 0x04, 0x03, 0x02, 0x01), .ret = -EINVAL,
				.len = 7, .slot_addr = FAR_SLOT,
				.why = "new displacement does not fit into s32" },
	{ "rip disp +1 past max", CODE(0x8b, 0x05, 0xff, 0xff, 0xff, 0x7f), .ret = -EINVAL,
				.len = 6, .addr = G_ADDR + 1, .slot_addr = G_ADDR,
				.why = "new displacement does not fit into s32" },
	{ "rip disp -1 past min", CODE(0x8b, 0x05, 0x00, 0x00, 0x00, 0x80), .ret = -EINVAL,
				.len = 6, .addr = G_ADDR, .slot_addr = G_ADDR + 1,
				.why = "new displacement does not fit into s32" },

	/* -EOPNOTSUPP: far transfers, iret, xbegin, 0x66 branches, fs/gs */
	{ "lcall ptr16:32 (9a)", CODE(0x9a, 1, 2, 3, 4, 5, 6), .ret = -EOPNOTSUPP },
	{ "ljmp ptr16:32 (ea)",	CODE(0xea, 1, 2, 3, 4, 5, 6), .ret = -EOPNOTSUPP },
	{ "lcall *(%rax)",	CODE(0xff, 0x18), .ret = -EOPNOTSUPP, .len = 2 },
	{ "ljmp *(%rax)",	CODE(0xff, 0x28), .ret = -EOPNOTSUPP, .len = 2 },
	{ "lret $8",		CODE(0xca, 0x08, 0x00), .ret = -EOPNOTSUPP, .len = 3 },
	{ "lret",		CODE(0xcb), .ret = -EOPNOTSUPP, .len = 1 },
	{ "iret",		CODE(0xcf), .ret = -EOPNOTSUPP, .len = 1 },
	{ "iretq",		CODE(0x48, 0xcf), .ret = -EOPNOTSUPP, .len = 2 },
	{ "xbegin",		CODE(0xc7, 0xf8, 0, 0, 0, 0), .ret = -EOPNOTSUPP, .len = 6 },
	{ "66 jmp rel8",	CODE(0x66, 0xeb, 0x01), .ret = -EOPNOTSUPP, .len = 3 },
	{ "66 jmp rel32",	CODE(0x66, 0xe9, 0, 0, 0, 0), .ret = -EOPNOTSUPP, .len = 6 },
	{ "66 jz rel32",	CODE(0x66, 0x0f, 0x84, 0, 0, 0, 0), .ret = -EOPNOTSUPP, .len = 7 },
	{ "66 jz rel8",		CODE(0x66, 0x74, 0x00), .ret = -EOPNOTSUPP, .len = 3 },
	{ "66 call rel32",	CODE(0x66, 0xe8, 0, 0, 0, 0), .ret = -EOPNOTSUPP, .len = 6 },
	{ "66 ret",		CODE(0x66, 0xc3), .ret = -EOPNOTSUPP, .len = 2 },
	{ "66 ret $8",		CODE(0x66, 0xc2, 0x08, 0x00), .ret = -EOPNOTSUPP, .len = 4 },
	{ "66 jmp *%rax",	CODE(0x66, 0xff, 0xe0), .ret = -EOPNOTSUPP, .len = 3 },
	{ "66 call *(%rax)",	CODE(0x66, 0xff, 0x10), .ret = -EOPNOTSUPP, .len = 3 },
	{ "66 loop",		CODE(0x66, 0xe2, 0x00), .ret = -EOPNOTSUPP, .len = 3 },
	{ "jmp *%fs:0",		CODE(0x64, 0xff, 0x24, 0x25, 0, 0, 0, 0), .ret = -EOPNOTSUPP,
				.len = 8, .why = "indirect branch through fs/gs" },
	{ "call *%gs:(%rax)",	CODE(0x65, 0xff, 0x10), .ret = -EOPNOTSUPP, .len = 3 },
	{ "sysenter",		CODE(0x0f, 0x34), .ret = -EOPNOTSUPP, .len = 2 },
	{ "uiret",		CODE(0xf3, 0x0f, 0x01, 0xec), .ret = -EOPNOTSUPP, .len = 4 },

	/* emulated */
	{ "jmp rel8",		CODE(0xeb, 0xfe), EMU(UKP_EMU_JMP, 2) },
	{ "jmp rel32",		CODE(0xe9, 0x00, 0x01, 0x00, 0x00), EMU(UKP_EMU_JMP, 5) },
	{ "jz rel8",		CODE(0x74, 0x05), EMU(UKP_EMU_JCC, 2) },
	{ "jg rel32",		CODE(0x0f, 0x8f, 0x10, 0, 0, 0), EMU(UKP_EMU_JCC, 6) },
	{ "call rel32",		CODE(0xe8, 0, 0, 0, 0), EMU(UKP_EMU_CALL, 5) },
	{ "ret",		CODE(0xc3), EMU(UKP_EMU_RET, 1) },
	{ "ret $16",		CODE(0xc2, 0x10, 0x00), EMU(UKP_EMU_RET, 3) },
	{ "loopne",		CODE(0xe0, 0x00), EMU(UKP_EMU_LOOPNE, 2) },
	{ "loope",		CODE(0xe1, 0x00), EMU(UKP_EMU_LOOPE, 2) },
	{ "loop",		CODE(0xe2, 0x00), EMU(UKP_EMU_LOOP, 2) },
	{ "jrcxz",		CODE(0xe3, 0x00), EMU(UKP_EMU_JRCXZ, 2) },
	{ "addr32 loop",	CODE(0x67, 0xe2, 0x00), EMU(UKP_EMU_LOOP, 3) },
	{ "jecxz",		CODE(0x67, 0xe3, 0x00), EMU(UKP_EMU_JRCXZ, 3) },
	{ "call *%rax",		CODE(0xff, 0xd0), EMU(UKP_EMU_CALL_IND, 2) },
	{ "jmp *%r15",		CODE(0x41, 0xff, 0xe7), EMU(UKP_EMU_JMP_IND, 3) },
	{ "call *0(%rip)",	CODE(0xff, 0x15, 0, 0, 0, 0), EMU(UKP_EMU_CALL_IND, 6) },
	{ "jmp *0x10(%rbx,%rcx,8)", CODE(0xff, 0x64, 0xcb, 0x10), EMU(UKP_EMU_JMP_IND, 4) },
	{ "bnd call",		CODE(0xf2, 0xe8, 0, 0, 0, 0), EMU(UKP_EMU_CALL, 6) },
	{ "bnd ret",		CODE(0xf2, 0xc3), EMU(UKP_EMU_RET, 2) },
	{ "bnd jmp *%rax",	CODE(0xf2, 0xff, 0xe0), EMU(UKP_EMU_JMP_IND, 3) },
	{ "notrack jmp *%rax",	CODE(0x3e, 0xff, 0xe0), EMU(UKP_EMU_JMP_IND, 3) },
	{ "notrack call *(%rax)", CODE(0x3e, 0xff, 0x10), EMU(UKP_EMU_CALL_IND, 3) },
	{ "ds jz (hint)",	CODE(0x3e, 0x74, 0x00), EMU(UKP_EMU_JCC, 3) },
	{ "cs jmp *(%rax) (ignored seg)", CODE(0x2e, 0xff, 0x20), EMU(UKP_EMU_JMP_IND, 3) },

	/* out of line, bytes unchanged */
	{ "nop",		CODE(0x90), OOL(1) },
	{ "push %rbp",		CODE(0x55), OOL(1) },
	{ "mov %rsp,%rbp",	CODE(0x48, 0x89, 0xe5), OOL(3) },
	{ "endbr64",		CODE(0xf3, 0x0f, 0x1e, 0xfa), OOL(4) },
	{ "movabs",		CODE(0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8), OOL(10) },
	{ "syscall",		CODE(0x0f, 0x05), OOL(2) },
	{ "hlt (faults in slot)", CODE(0xf4), OOL(1) },
	{ "cli (faults in slot)", CODE(0xfa), OOL(1) },
	{ "in $0x60,%al",	CODE(0xe4, 0x60), OOL(2) },
	{ "pushf",		CODE(0x9c), OOL(1) },
	{ "popf",		CODE(0x9d), OOL(1) },
	{ "sysret (faults)",	CODE(0x0f, 0x07), OOL(2) },
	{ "push (%rax)",	CODE(0xff, 0x30), OOL(2) },
	{ "extra bytes ignored", CODE(0x90, 0xcc, 0xcc), OOL(1) },

	/* out of line, rip-relative displacement re-based by -0x10000 */
	{ "mov rip,%rax",	CODE(0x48, 0x8b, 0x05, 0x04, 0x03, 0x02, 0x01), OOL(7),
				SLOT(0x48, 0x8b, 0x05, 0x04, 0x03, 0x01, 0x01, 0xcc) },
	{ "lea -0x10(%rip)",	CODE(0x48, 0x8d, 0x0d, 0xf0, 0xff, 0xff, 0xff), OOL(7),
				SLOT(0x48, 0x8d, 0x0d, 0xf0, 0xff, 0xfe, 0xff, 0xcc) },
	{ "movl $imm,rip (disp before imm)",
				CODE(0xc7, 0x05, 0x04, 0x03, 0x02, 0x01, 0x78, 0x56, 0x34, 0x12), OOL(10),
				SLOT(0xc7, 0x05, 0x04, 0x03, 0x01, 0x01, 0x78, 0x56, 0x34, 0x12, 0xcc) },
	{ "push rip",		CODE(0xff, 0x35, 0x04, 0x03, 0x02, 0x01), OOL(6),
				SLOT(0xff, 0x35, 0x04, 0x03, 0x01, 0x01, 0xcc) },
	{ "VEX2 vmovdqa rip,%ymm0", CODE(0xc5, 0xfd, 0x6f, 0x05, 0x04, 0x03, 0x02, 0x01), OOL(8),
				SLOT(0xc5, 0xfd, 0x6f, 0x05, 0x04, 0x03, 0x01, 0x01, 0xcc) },
	{ "VEX3 vbroadcastss rip,%ymm0",
				CODE(0xc4, 0xe2, 0x7d, 0x18, 0x05, 0x04, 0x03, 0x02, 0x01), OOL(9),
				SLOT(0xc4, 0xe2, 0x7d, 0x18, 0x05, 0x04, 0x03, 0x01, 0x01, 0xcc) },
	{ "EVEX vmovups rip,%zmm0",
				CODE(0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 0x04, 0x03, 0x02, 0x01), OOL(10),
				SLOT(0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 0x04, 0x03, 0x01, 0x01, 0xcc) },
	{ "rip disp exactly max", CODE(0x8b, 0x05, 0xfe, 0xff, 0xff, 0x7f), OOL(6),
				SLOT(0x8b, 0x05, 0xff, 0xff, 0xff, 0x7f, 0xcc),
				.addr = G_ADDR + 1, .slot_addr = G_ADDR },
	{ "eip-relative wraps, never overflows",
				CODE(0x67, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00), OOL(7),
				SLOT(0x67, 0x8b, 0x05, 0x00, 0x00, 0x40, 0x00, 0xcc),
				.slot_addr = FAR_SLOT },
};

Test(insn_golden, classification_and_slot_images)
{
	size_t i;

	for (i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
		const struct golden *g = &golden[i];
		uintptr_t addr = g->addr ? g->addr : G_ADDR;
		uintptr_t slot = g->slot_addr ? g->slot_addr : G_SLOT;
		struct ukp_arch_insn ai;
		uint8_t want[UKP_SLOT_SIZE] = { 0 };
		uint8_t want_len;
		int ret;

		memset(&ai, 0xa5, sizeof(ai));	/* prepare must not rely on a clean struct */
		ret = arch_prepare_insn(&ai, &img, g->code, g->n, addr, slot);
		cr_expect_eq(ret, g->ret, "%s: ret %d, want %d", g->name, ret, g->ret);
		if (ret != g->ret)
			continue;
		if (g->len)
			cr_expect_eq(ai.len, g->len, "%s: len %u, want %u", g->name, ai.len, g->len);
		if (g->why)
			cr_expect(arch_insn_why(&ai) && !strcmp(arch_insn_why(&ai), g->why),
				  "%s: why \"%s\", want \"%s\"", g->name,
				  arch_insn_why(&ai) ? arch_insn_why(&ai) : "(null)", g->why);
		if (ret) {
			cr_expect_not_null(arch_insn_why(&ai), "%s: an error needs a reason", g->name);
			continue;
		}

		cr_expect_eq(ai.ool, g->ool, "%s: ool %d, want %d", g->name, ai.ool, g->ool);
		if (!g->ool) {
			cr_expect_eq(ai.emu, g->emu, "%s: emu %u, want %u", g->name, ai.emu, g->emu);
			continue;
		}
		if (g->slot_len) {
			memcpy(want, g->slot, g->slot_len);
			want_len = g->slot_len;
		} else {
			memcpy(want, g->code, g->len);
			want[g->len] = 0xcc;
			want_len = g->len + 1;
		}
		cr_expect_eq(img.slot_len, want_len, "%s: slot_len %u, want %u", g->name,
			     img.slot_len, want_len);
		cr_expect_arr_eq(img.slot_image, want, want_len, "%s: slot image differs", g->name);
		cr_expect_eq(img.slot_image[ai.len], 0xcc, "%s: no trailing int3", g->name);
	}
}

Test(insn_golden, syscall_is_marked)
{
	static const uint8_t sys[] = { 0x0f, 0x05 }, nop[] = { 0x90 };
	struct ukp_arch_insn ai;

	cr_assert_eq(arch_prepare_insn(&ai, &img, sys, sizeof(sys), G_ADDR, G_SLOT), 0);
	cr_assert(ai.ool && ai.is_syscall);
	cr_assert_eq(arch_prepare_insn(&ai, &img, nop, sizeof(nop), G_ADDR, G_SLOT), 0);
	cr_assert(ai.ool && !ai.is_syscall);
}

/*
 * The booster (the kernel's can_boost): which copies may jump straight
 * back, and the image for slot + 16: the instruction re-based there and
 * jmp rel32 to addr + len. From G_SLOT + 16 back to G_ADDR + len the jump
 * is always -(0x10010 + 5) = 0xfffeffeb, whatever the length.
 */
struct boost_golden {
	const char *name;
	uint8_t code[UKP_MAX_INSN_SIZE];
	size_t n;
	bool boost;
	uint8_t image[16];	/* expected boost image, when .image_len */
	size_t image_len;
};

#define BIMG(...) .image = { __VA_ARGS__ }, .image_len = sizeof((uint8_t[]){ __VA_ARGS__ })
#define JMP_BACK 0xe9, 0xeb, 0xff, 0xfe, 0xff

static const struct boost_golden boost_golden[] = {
	{ "nop",		CODE(0x90), true, BIMG(0x90, JMP_BACK) },
	{ "mov %rbx,%rax",	CODE(0x48, 0x89, 0xd8), true, BIMG(0x48, 0x89, 0xd8, JMP_BACK) },
	{ "push %rbp",		CODE(0x55), true, BIMG(0x55, JMP_BACK) },
	{ "sub $0x18,%rsp",	CODE(0x48, 0x83, 0xec, 0x18), true },
	{ "nopl 0(%rax,%rax)",	CODE(0x0f, 0x1f, 0x44, 0x00, 0x00), true },
	{ "imul %ecx,%eax",	CODE(0x0f, 0xaf, 0xc1), true },
	{ "lock cmpxchg",	CODE(0xf0, 0x0f, 0xb1, 0x0f), true },
	{ "rep movsb",		CODE(0xf3, 0xa4), true },
	{ "pxor %xmm0,%xmm0",	CODE(0x66, 0x0f, 0xef, 0xc0), true },
	{ "inc %eax (ff /0)",	CODE(0xff, 0xc0), true },
	{ "inc %al (fe /0)",	CODE(0xfe, 0xc0), true },
	{ "movabs $imm64,%rax (10 bytes)",
				CODE(0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8), true,
				BIMG(0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, JMP_BACK) },
	{ "mov d(%rip),%eax re-based for slot+16",
				CODE(0x8b, 0x05, 0x04, 0x03, 0x02, 0x01), true,
				BIMG(0x8b, 0x05, 0xf4, 0x02, 0x01, 0x01, JMP_BACK) },
	{ "lea -0x10(%rip),%rcx re-based for slot+16",
				CODE(0x48, 0x8d, 0x0d, 0xf0, 0xff, 0xff, 0xff), true,
				BIMG(0x48, 0x8d, 0x0d, 0xe0, 0xff, 0xfe, 0xff, JMP_BACK) },
	/* not boostable */
	{ "12 bytes: movq $imm,0x100(%rsp)",
				CODE(0x48, 0xc7, 0x84, 0x24, 0x00, 0x01, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12),
				false },
	{ "cs prefix",		CODE(0x2e, 0x48, 0x89, 0xd8), false },
	{ "address-size prefix", CODE(0x67, 0x8b, 0x00), false },
	{ "x87 fld %st0",	CODE(0xd9, 0xc0), false },
	{ "hlt",		CODE(0xf4), false },
	{ "syscall",		CODE(0x0f, 0x05), false },
	{ "cpuid (not whitelisted)", CODE(0x0f, 0xa2), false },
	{ "push (%rax) (ff /6)", CODE(0xff, 0x30), false },
	{ "VEX vzeroupper",	CODE(0xc5, 0xf8, 0x77), false },
	{ "jz rel8 (emulated)",	CODE(0x74, 0x10), false },
	{ "call rel32 (emulated)", CODE(0xe8, 0, 0, 0, 0), false },
	{ "ret (emulated)",	CODE(0xc3), false },
	{ "jmp *%rax (emulated)", CODE(0xff, 0xe0), false },
};

Test(insn_golden, boostable_and_boost_images)
{
	size_t i;

	for (i = 0; i < sizeof(boost_golden) / sizeof(boost_golden[0]); i++) {
		const struct boost_golden *g = &boost_golden[i];
		struct ukp_arch_insn ai;
		int ret;

		memset(&ai, 0xa5, sizeof(ai));
		ret = arch_prepare_insn(&ai, &img, g->code, g->n, G_ADDR, G_SLOT);
		cr_expect_eq(ret, 0, "%s: ret %d", g->name, ret);
		if (ret)
			continue;
		cr_expect_eq(ai.boostable, g->boost, "%s: boostable %d, want %d", g->name,
			     ai.boostable, g->boost);
		if (!g->boost || !ai.boostable)
			continue;
		cr_expect(ai.ool, "%s: boostable but not ool", g->name);
		cr_expect_eq(img.boost_len, ai.len + 5, "%s: boost_len %u", g->name, img.boost_len);
		cr_expect_eq(img.boost_image[ai.len], 0xe9, "%s: no jmp rel32", g->name);
		/* the normal image is untouched: [insn][int3] */
		cr_expect_eq(img.slot_image[ai.len], 0xcc, "%s: no trailing int3", g->name);
		if (g->image_len) {
			cr_expect_eq(img.boost_len, g->image_len, "%s: boost_len %u, want %zu",
				     g->name, img.boost_len, g->image_len);
			cr_expect_arr_eq(img.boost_image, g->image, g->image_len,
					 "%s: boost image differs", g->name);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Instruction boundaries                                                 */
/* ---------------------------------------------------------------------- */

/*
 * A real, callable function whose instruction starts the assembler
 * records for us: ukp_walk_starts[] holds every boundary, so the test
 * does not depend on our own idea of instruction lengths.
 * unsigned long ukp_walk_fn(const unsigned long *p)
 *	= 0x1122334455667788 + 5 + p[1]
 */
extern const uint8_t ukp_walk_fn[] __attribute__((visibility("hidden")));
extern const uint8_t ukp_walk_starts[] __attribute__((visibility("hidden")));
extern const uint32_t ukp_walk_nstarts __attribute__((visibility("hidden")));
extern const uint32_t ukp_walk_size __attribute__((visibility("hidden")));

asm("	.pushsection .text\n"
    "	.globl ukp_walk_fn\n"
    "	.hidden ukp_walk_fn\n"
    "	.type ukp_walk_fn, @function\n"
    "ukp_walk_fn:\n"
    ".Lw0:	endbr64\n"
    ".Lw1:	push %rbp\n"
    ".Lw2:	mov %rsp, %rbp\n"
    ".Lw3:	movabs $0x1122334455667788, %rax\n"
    ".Lw4:	lea ukp_walk_data(%rip), %rcx\n"
    ".Lw5:	add (%rcx), %rax\n"
    ".Lw6:	add 0x8(%rdi), %rax\n"
    ".Lw7:	pxor %xmm0, %xmm0\n"
    ".Lw8:	imul $0x1234567, %rax, %rdx\n"
    ".Lw9:	test %rdx, %rdx\n"
    ".Lw10:	jne .Lw12\n"
    ".Lw11:	nopw 0x0(%rax,%rax,1)\n"
    ".Lw12:	pop %rbp\n"
    ".Lw13:	ret\n"
    ".Lwend:\n"
    "	.size ukp_walk_fn, .Lwend - ukp_walk_fn\n"
    "	.popsection\n"
    "	.pushsection .rodata\n"
    "ukp_walk_data:	.quad 5\n"
    "	.globl ukp_walk_starts, ukp_walk_nstarts, ukp_walk_size\n"
    "	.hidden ukp_walk_starts, ukp_walk_nstarts, ukp_walk_size\n"
    "ukp_walk_starts:\n"
    "	.byte .Lw0-ukp_walk_fn, .Lw1-ukp_walk_fn, .Lw2-ukp_walk_fn, .Lw3-ukp_walk_fn\n"
    "	.byte .Lw4-ukp_walk_fn, .Lw5-ukp_walk_fn, .Lw6-ukp_walk_fn, .Lw7-ukp_walk_fn\n"
    "	.byte .Lw8-ukp_walk_fn, .Lw9-ukp_walk_fn, .Lw10-ukp_walk_fn, .Lw11-ukp_walk_fn\n"
    "	.byte .Lw12-ukp_walk_fn, .Lw13-ukp_walk_fn\n"
    "	.balign 4\n"
    "ukp_walk_nstarts:	.long 14\n"
    "ukp_walk_size:	.long .Lwend - ukp_walk_fn\n"
    "	.popsection\n");

Test(insn_boundary, every_offset_of_a_real_function)
{
	unsigned long (*fn)(const unsigned long *) = (void *)ukp_walk_fn;
	static const unsigned long arg[2] = { 0, 7 };
	bool start[256] = { false };
	uint32_t i, nstart = 0;

	/* It is code the CPU runs, not a byte soup. */
	cr_assert_eq(fn(arg), 0x1122334455667788UL + 5 + 7);

	cr_assert_lt(ukp_walk_size, sizeof(start));
	for (i = 0; i < ukp_walk_nstarts; i++)
		start[ukp_walk_starts[i]] = true;

	for (i = 0; i < ukp_walk_size; i++) {
		int ret = arch_check_boundary(ukp_walk_fn, i, ukp_walk_size);

		cr_expect_eq(ret, start[i] ? 0 : -EILSEQ, "offset %u: %d", i, ret);
		nstart += ret == 0;
	}
	cr_assert_eq(nstart, ukp_walk_nstarts);
}

Test(insn_boundary, mid_instruction_and_bad_prefix_stream)
{
	/* movabs (10 bytes) then nop */
	static const uint8_t movabs[] = { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 0x90 };
	/* nop, an opcode invalid in 64-bit mode, nop, nop */
	static const uint8_t bad[] = { 0x90, 0x06, 0x90, 0x90 };
	size_t i;

	cr_assert_eq(arch_check_boundary(movabs, 0, sizeof(movabs)), 0);
	for (i = 1; i < 10; i++)
		cr_assert_eq(arch_check_boundary(movabs, i, sizeof(movabs)), -EILSEQ, "offset %zu", i);
	cr_assert_eq(arch_check_boundary(movabs, 10, sizeof(movabs)), 0);

	/* The instruction at off itself is not decoded by the walk... */
	cr_assert_eq(arch_check_boundary(bad, 1, sizeof(bad)), 0);
	/* ...but everything before it must decode. */
	cr_assert_eq(arch_check_boundary(bad, 2, sizeof(bad)), -EILSEQ);
	cr_assert_eq(arch_check_boundary(bad, 3, sizeof(bad)), -EILSEQ);
}

/* ---------------------------------------------------------------------- */
/* Emulation helpers                                                      */
/* ---------------------------------------------------------------------- */

static void prepare_ok(struct ukp_arch_insn *ai, const uint8_t *code, size_t n, uintptr_t addr)
{
	int ret = arch_prepare_insn(ai, &img, code, n, addr, addr + PAGE);

	cr_assert_eq(ret, 0, "prepare: %d (%s)", ret, arch_insn_why(ai) ? arch_insn_why(ai) : "");
	cr_assert(!ai->ool, "expected an emulated instruction");
}

/* Registers with recognisable junk everywhere. */
static void init_regs(struct pt_regs *regs, uintptr_t addr)
{
	unsigned long *w = (unsigned long *)regs;
	unsigned int i;

	for (i = 0; i < UKP_PT_REGS_NWORDS; i++)
		w[i] = 0x5a5a000000000000UL + i;
	regs->flags = X86_FLAGS_BASE;
	regs->ip = addr + 1;	/* as at the breakpoint */
}

static int emulate(const struct ukp_arch_insn *ai, uintptr_t addr, struct pt_regs *regs,
		   uintptr_t *fault)
{
	*fault = 0;
	return arch_emulate(ai, addr, regs, fault);
}

/* Emulate and expect success, with only ip/sp/cx allowed to change. */
static void emulate_ok(const struct ukp_arch_insn *ai, uintptr_t addr, struct pt_regs *regs)
{
	struct pt_regs before = *regs;
	uintptr_t fault;
	int ret = emulate(ai, addr, regs, &fault);

	cr_assert_eq(ret, 0, "emulate: %d (fault at %#lx)", ret, (unsigned long)fault);
	before.ip = regs->ip;
	before.sp = regs->sp;
	before.cx = regs->cx;
	cr_assert_arr_eq(regs, &before, sizeof(before), "a register other than ip/sp/cx changed");
}

/* Emulate and expect -EFAULT at want_fault with regs untouched. */
static void emulate_faults(const struct ukp_arch_insn *ai, uintptr_t addr, struct pt_regs *regs,
			   uintptr_t want_fault)
{
	struct pt_regs before = *regs;
	uintptr_t fault;
	int ret;

	install_nofault_handler();
	ret = emulate(ai, addr, regs, &fault);
	cr_assert_eq(ret, -EFAULT);
	cr_assert_eq(fault, want_fault, "fault at %#lx, want %#lx", (unsigned long)fault,
		     (unsigned long)want_fault);
	cr_assert_arr_eq(regs, &before, sizeof(before), "regs changed on a fault");
}

/* ---------------------------------------------------------------------- */
/* jmp, call, ret                                                         */
/* ---------------------------------------------------------------------- */

Test(emulate, jmp_rel8_rel32_both_directions)
{
	static const uint8_t self[] = { 0xeb, 0xfe };			/* jmp . */
	static const uint8_t fwd[] = { 0xe9, 0x00, 0x01, 0x00, 0x00 };	/* jmp .+0x105 */
	static const uint8_t back[] = { 0xe9, 0x00, 0xff, 0xff, 0xff };	/* jmp .-0xfb */
	const uintptr_t addr = 0x7f0000001000UL;
	struct ukp_arch_insn ai;
	struct pt_regs regs;

	prepare_ok(&ai, self, sizeof(self), addr);
	init_regs(&regs, addr);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, addr);

	prepare_ok(&ai, fwd, sizeof(fwd), addr);
	init_regs(&regs, addr);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, addr + 5 + 0x100);

	prepare_ok(&ai, back, sizeof(back), addr);
	init_regs(&regs, addr);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, addr + 5 - 0x100);
}

Test(emulate, call_rel32_pushes_next_ip)
{
	static const uint8_t call[] = { 0xe8, 0xfb, 0xef, 0xff, 0xff };	/* call .-0x1000 */
	const uintptr_t addr = 0x7f0000002000UL;
	unsigned long stack[8] = { 0 };
	struct ukp_arch_insn ai;
	struct pt_regs regs;

	prepare_ok(&ai, call, sizeof(call), addr);
	init_regs(&regs, addr);
	regs.sp = (uintptr_t)&stack[4];
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, addr - 0x1000);
	cr_assert_eq(regs.sp, (uintptr_t)&stack[3]);
	cr_assert_eq(stack[3], addr + 5);
	cr_assert_eq(stack[4], 0, "wrote above the pushed word");
	cr_assert_eq(stack[2], 0, "wrote below the pushed word");
}

/* A stack whose next push lands on an unmapped page. */
static uintptr_t stack_on_guard_page(void)
{
	uint8_t *p = map_pages(2, 0);

	cr_assert_eq(mprotect(p, PAGE, PROT_NONE), 0);
	return (uintptr_t)p + PAGE;
}

Test(emulate, call_push_fault_leaves_regs)
{
	static const uint8_t call[] = { 0xe8, 0x10, 0x00, 0x00, 0x00 };
	static const uint8_t call_reg[] = { 0xff, 0xd0 };	/* call *%rax */
	const uintptr_t addr = 0x7f0000003000UL;
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	uintptr_t sp = stack_on_guard_page();

	prepare_ok(&ai, call, sizeof(call), addr);
	init_regs(&regs, addr);
	regs.sp = sp;
	emulate_faults(&ai, addr, &regs, sp - 8);

	prepare_ok(&ai, call_reg, sizeof(call_reg), addr);
	init_regs(&regs, addr);
	regs.sp = sp;
	emulate_faults(&ai, addr, &regs, sp - 8);
}

Test(emulate, ret_and_ret_imm16)
{
	static const uint8_t ret[] = { 0xc3 };
	static const uint8_t ret16[] = { 0xc2, 0x10, 0x00 };	/* ret $16 */
	const uintptr_t addr = 0x7f0000004000UL;
	unsigned long stack[8] = { 0x1111, 0x2222, 0x3333, 0x4444 };
	struct ukp_arch_insn ai;
	struct pt_regs regs;

	prepare_ok(&ai, ret, sizeof(ret), addr);
	init_regs(&regs, addr);
	regs.sp = (uintptr_t)&stack[0];
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, 0x1111);
	cr_assert_eq(regs.sp, (uintptr_t)&stack[1]);

	prepare_ok(&ai, ret16, sizeof(ret16), addr);
	init_regs(&regs, addr);
	regs.sp = (uintptr_t)&stack[1];
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, 0x2222);
	cr_assert_eq(regs.sp, (uintptr_t)&stack[1] + 8 + 16);
}

Test(emulate, ret_pop_fault_leaves_regs)
{
	static const uint8_t ret[] = { 0xc3 };
	const uintptr_t addr = 0x7f0000005000UL;
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	uintptr_t sp = stack_on_guard_page() - PAGE;	/* sp on the unmapped page */

	prepare_ok(&ai, ret, sizeof(ret), addr);
	init_regs(&regs, addr);
	regs.sp = sp;
	emulate_faults(&ai, addr, &regs, sp);
}

/* ---------------------------------------------------------------------- */
/* Indirect call/jmp                                                      */
/* ---------------------------------------------------------------------- */

Test(emulate, indirect_through_registers)
{
	static const uint8_t call_rax[] = { 0xff, 0xd0 };	/* call *%rax */
	static const uint8_t jmp_r15[] = { 0x41, 0xff, 0xe7 };	/* jmp *%r15 */
	static const uint8_t call_rsp[] = { 0xff, 0xd4 };	/* call *%rsp */
	const uintptr_t addr = 0x7f0000006000UL;
	unsigned long stack[4] = { 0 };
	struct ukp_arch_insn ai;
	struct pt_regs regs;

	prepare_ok(&ai, call_rax, sizeof(call_rax), addr);
	init_regs(&regs, addr);
	regs.sp = (uintptr_t)&stack[2];
	regs.ax = 0x123456789aUL;
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, 0x123456789aUL);
	cr_assert_eq(regs.sp, (uintptr_t)&stack[1]);
	cr_assert_eq(stack[1], addr + 2);

	prepare_ok(&ai, jmp_r15, sizeof(jmp_r15), addr);
	init_regs(&regs, addr);
	regs.r15 = 0xfedcba98UL;
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, 0xfedcba98UL);

	/* The target is sp before the push. */
	prepare_ok(&ai, call_rsp, sizeof(call_rsp), addr);
	init_regs(&regs, addr);
	regs.sp = (uintptr_t)&stack[2];
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, (uintptr_t)&stack[2]);
	cr_assert_eq(stack[1], addr + 2);
}

Test(emulate, indirect_through_rip_relative_memory)
{
	/* The instruction and its pointer live in one blob: disp = 16 - 6. */
	static uint8_t blob[32] __attribute__((aligned(8))) = {
		0xff, 0x25, 0x0a, 0x00, 0x00, 0x00,	/* jmp *0xa(%rip) */
	};
	static uint8_t blob_call[32] __attribute__((aligned(8))) = {
		0xff, 0x15, 0x0a, 0x00, 0x00, 0x00,	/* call *0xa(%rip) */
	};
	const unsigned long target = 0x0000123456789000UL;
	unsigned long stack[4] = { 0 };
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	uintptr_t addr;

	memcpy(blob + 16, &target, 8);
	addr = (uintptr_t)blob;
	prepare_ok(&ai, blob, 6, addr);
	init_regs(&regs, addr);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, target);

	memcpy(blob_call + 16, &target, 8);
	addr = (uintptr_t)blob_call;
	prepare_ok(&ai, blob_call, 6, addr);
	init_regs(&regs, addr);
	regs.sp = (uintptr_t)&stack[2];
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, target);
	cr_assert_eq(stack[1], addr + 6);
	cr_assert_eq(regs.sp, (uintptr_t)&stack[1]);
}

Test(emulate, indirect_through_base_index_scale)
{
	static const uint8_t jmp_sib[] = { 0xff, 0x64, 0xcb, 0x10 };	/* jmp *0x10(%rbx,%rcx,8) */
	/* jmp *0x8(%r12,%r13,4): REX.X and REX.B select r13 and r12 */
	static const uint8_t jmp_rex[] = { 0x43, 0xff, 0x64, 0xac, 0x08 };
	unsigned long table[8] = { 0 };
	const uintptr_t addr = 0x7f0000007000UL;
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	unsigned int i;

	for (i = 0; i < 8; i++)
		table[i] = 0xabc000 + i;

	prepare_ok(&ai, jmp_sib, sizeof(jmp_sib), addr);
	init_regs(&regs, addr);
	regs.bx = (uintptr_t)table;
	regs.cx = 3;
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, table[3 + 2]);

	/* A negative index wraps like on the CPU: 0x10 - 8 = table[1]. */
	init_regs(&regs, addr);
	regs.bx = (uintptr_t)table;
	regs.cx = (unsigned long)-1;
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, table[1]);

	prepare_ok(&ai, jmp_rex, sizeof(jmp_rex), addr);
	init_regs(&regs, addr);
	regs.r12 = (uintptr_t)table;
	regs.r13 = 4;	/* 4 * 4 + 8 = 24 bytes: table[3] */
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, table[3]);
}

Test(emulate, indirect_with_32bit_address_size_and_absolute)
{
	/* Below 2 GiB, so a 32-bit or a sign-extended disp32 address reaches it. */
	uint8_t *low = map_pages(1, MAP_32BIT);
	unsigned long *ptr = (unsigned long *)(low + 0x100);
	const unsigned long target = 0x7f00deadbeefUL;
	uint8_t jmp_eax[] = { 0x67, 0xff, 0x60, 0x08 };			/* jmp *0x8(%eax) */
	uint8_t jmp_abs[] = { 0xff, 0x24, 0x25, 0, 0, 0, 0 };		/* jmp *disp32 */
	uint8_t jmp_eip[] = { 0x67, 0xff, 0x25, 0, 0, 0, 0 };		/* jmp *disp(%eip) */
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	uintptr_t addr = 0x7f0000008000UL;

	cr_assert_lt((uintptr_t)low, 0x80000000UL);
	*ptr = target;

	/* Upper half of rax set: only eax + 8, truncated, is the address. */
	prepare_ok(&ai, jmp_eax, sizeof(jmp_eax), addr);
	init_regs(&regs, addr);
	regs.ax = 0xdead000000000000UL | ((uintptr_t)ptr - 8);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, target);

	put32(jmp_abs + 3, (uint32_t)(uintptr_t)ptr);
	prepare_ok(&ai, jmp_abs, sizeof(jmp_abs), addr);
	init_regs(&regs, addr);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, target);

	/* eip-relative, the instruction far above 4 GiB: the upper half of
	 * the next ip drops out of the address. */
	put32(jmp_eip + 3, (uint32_t)((uintptr_t)ptr - (uint32_t)(addr + sizeof(jmp_eip))));
	prepare_ok(&ai, jmp_eip, sizeof(jmp_eip), addr);
	init_regs(&regs, addr);
	emulate_ok(&ai, addr, &regs);
	cr_assert_eq(regs.ip, target);
}

Test(emulate, indirect_target_read_fault_leaves_regs)
{
	static const uint8_t call_mem[] = { 0xff, 0x53, 0x10 };	/* call *0x10(%rbx) */
	uint8_t *p = map_pages(1, 0);
	const uintptr_t addr = 0x7f0000009000UL;
	unsigned long stack[4] = { 0 };
	struct ukp_arch_insn ai;
	struct pt_regs regs;

	cr_assert_eq(mprotect(p, PAGE, PROT_NONE), 0);
	prepare_ok(&ai, call_mem, sizeof(call_mem), addr);
	init_regs(&regs, addr);
	regs.bx = (uintptr_t)p + 0x40;
	regs.sp = (uintptr_t)&stack[2];
	emulate_faults(&ai, addr, &regs, (uintptr_t)p + 0x50);
	cr_assert_eq(stack[1], 0, "pushed although the target read faulted");
}

/* ---------------------------------------------------------------------- */
/* jcc against the CPU                                                    */
/* ---------------------------------------------------------------------- */

/*
 * int thunk(unsigned long flags):
 *	push %rdi; popfq; jcc T; mov $0,%eax; ret; T: mov $1,%eax; ret
 * The jcc is the very byte sequence that is then prepared and emulated.
 */
static uint8_t *emit_jcc_thunk(uint8_t *p, unsigned int cc, bool near, uint8_t **jcc,
			       uint8_t *jcc_len)
{
	*p++ = 0x57;
	*p++ = 0x9d;
	*jcc = p;
	if (near) {
		*p++ = 0x0f;
		*p++ = 0x80 | cc;
		put32(p, 6);
		p += 4;
		*jcc_len = 6;
	} else {
		*p++ = 0x70 | cc;
		*p++ = 6;
		*jcc_len = 2;
	}
	*p++ = 0xb8; put32(p, 0); p += 4; *p++ = 0xc3;
	*p++ = 0xb8; put32(p, 1); p += 4; *p++ = 0xc3;
	return p;
}

static unsigned long flags_combo(unsigned int m)
{
	return X86_FLAGS_BASE | (m & 1 ? X86_CF : 0) | (m & 2 ? X86_PF : 0) |
	       (m & 4 ? X86_ZF : 0) | (m & 8 ? X86_SF : 0) | (m & 16 ? X86_OF : 0);
}

Test(emulate, jcc_all_conditions_match_cpu)
{
	uint8_t *page = map_pages(1, 0);
	uint8_t *jcc[32];
	uint8_t jcc_len[32];
	unsigned int t, m;

	for (t = 0; t < 32; t++)
		emit_jcc_thunk(page + t * 32, t & 15, t >= 16, &jcc[t], &jcc_len[t]);
	make_exec(page, 1);

	for (t = 0; t < 32; t++) {
		int (*thunk)(unsigned long) = (void *)(page + t * 32);
		uintptr_t addr = (uintptr_t)jcc[t];
		uintptr_t next = addr + jcc_len[t];
		unsigned int taken = 0, not_taken = 0;
		struct ukp_arch_insn ai;

		prepare_ok(&ai, jcc[t], jcc_len[t], addr);
		cr_assert_eq(ai.emu, UKP_EMU_JCC);
		cr_assert_eq(ai.len, jcc_len[t]);

		for (m = 0; m < 32; m++) {
			unsigned long flags = flags_combo(m);
			int cpu = thunk(flags);
			struct pt_regs regs;

			init_regs(&regs, addr);
			regs.flags = flags;
			emulate_ok(&ai, addr, &regs);
			cr_expect_eq(regs.ip, cpu ? next + 6 : next,
				     "%s jcc cc=%#x flags=%#lx: cpu %s, emulated ip %#lx",
				     t >= 16 ? "near" : "short", t & 15, flags,
				     cpu ? "taken" : "not taken", (unsigned long)regs.ip);
			if (cpu)
				taken++;
			else
				not_taken++;
		}
		cr_assert(taken && not_taken, "cc %#x never went both ways", t & 15);
	}
}

/* ---------------------------------------------------------------------- */
/* loop family against the CPU                                            */
/* ---------------------------------------------------------------------- */

/*
 * int thunk(unsigned long rcx, unsigned long flags, unsigned long *rcx_out):
 *	mov %rdi,%rcx; push %rsi; popfq; [67] loopX T;
 *	mov $0,%eax; jmp S; T: mov $1,%eax; S: mov %rcx,(%rdx); ret
 */
static void emit_loop_thunk(uint8_t *p, uint8_t opcode, bool addr32, uint8_t **insn,
			    uint8_t *insn_len)
{
	*p++ = 0x48; *p++ = 0x89; *p++ = 0xf9;
	*p++ = 0x56;
	*p++ = 0x9d;
	*insn = p;
	if (addr32)
		*p++ = 0x67;
	*p++ = opcode;
	*p++ = 7;
	*insn_len = addr32 ? 3 : 2;
	*p++ = 0xb8; put32(p, 0); p += 4;
	*p++ = 0xeb; *p++ = 5;
	*p++ = 0xb8; put32(p, 1); p += 4;
	*p++ = 0x48; *p++ = 0x89; *p++ = 0x0a;
	*p++ = 0xc3;
}

Test(emulate, loop_family_matches_cpu_in_both_address_sizes)
{
	static const unsigned long counts[] = {
		0, 1, 2, 0x100000000UL, 0x100000001UL, 0x5ffffffffUL, ~0UL,
	};
	uint8_t *page = map_pages(1, 0);
	uint8_t *insn[8];
	uint8_t insn_len[8];
	unsigned int t, c, z;

	for (t = 0; t < 8; t++)
		emit_loop_thunk(page + t * 32, 0xe0 + (t & 3), t >= 4, &insn[t], &insn_len[t]);
	make_exec(page, 1);

	for (t = 0; t < 8; t++) {
		int (*thunk)(unsigned long, unsigned long, unsigned long *) =
			(void *)(page + t * 32);
		uintptr_t addr = (uintptr_t)insn[t];
		uintptr_t next = addr + insn_len[t];
		unsigned int taken = 0, not_taken = 0;
		struct ukp_arch_insn ai;

		prepare_ok(&ai, insn[t], insn_len[t], addr);
		cr_assert_eq(ai.len, insn_len[t]);

		for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			for (z = 0; z < 2; z++) {
				unsigned long flags = X86_FLAGS_BASE | (z ? X86_ZF : 0);
				unsigned long cpu_rcx = 0;
				int cpu = thunk(counts[c], flags, &cpu_rcx);
				struct pt_regs regs;

				init_regs(&regs, addr);
				regs.cx = counts[c];
				regs.flags = flags;
				emulate_ok(&ai, addr, &regs);
				cr_expect_eq(regs.ip, cpu ? next + 7 : next,
					     "opcode %#x addr%d rcx=%#lx zf=%u: cpu %s",
					     0xe0 + (t & 3), t >= 4 ? 32 : 64, counts[c], z,
					     cpu ? "taken" : "not taken");
				cr_expect_eq(regs.cx, cpu_rcx,
					     "opcode %#x addr%d rcx=%#lx: rcx %#lx, cpu %#lx",
					     0xe0 + (t & 3), t >= 4 ? 32 : 64, counts[c],
					     regs.cx, cpu_rcx);
				if (cpu)
					taken++;
				else
					not_taken++;
			}
		}
		cr_assert(taken && not_taken, "loop kind %u never went both ways", t);
	}
}

/* ---------------------------------------------------------------------- */
/* Out-of-line slots                                                      */
/* ---------------------------------------------------------------------- */

Test(ool, resume_moves_ip_back_and_fixes_syscall_rcx)
{
	static const uint8_t sys[] = { 0x0f, 0x05 };
	static const uint8_t mov[] = { 0x48, 0x89, 0xe5 };
	const uintptr_t addr = 0x7f000000a000UL, slot = 0x7f000000f000UL;
	struct ukp_arch_insn ai;
	struct pt_regs regs;

	cr_assert_eq(arch_prepare_insn(&ai, &img, sys, sizeof(sys), addr, slot), 0);
	init_regs(&regs, addr);
	regs.ip = slot + 2 + 1;
	regs.cx = slot + 2;	/* what the kernel left in rcx */
	arch_resume_ool(&ai, addr, slot, &regs);
	cr_assert_eq(regs.ip, addr + 2);
	cr_assert_eq(regs.cx, addr + 2);

	cr_assert_eq(arch_prepare_insn(&ai, &img, mov, sizeof(mov), addr, slot), 0);
	init_regs(&regs, addr);
	regs.ip = slot + 3 + 1;
	regs.cx = 0x1234;
	arch_resume_ool(&ai, addr, slot, &regs);
	cr_assert_eq(regs.ip, addr + 3);
	cr_assert_eq(regs.cx, 0x1234, "rcx changed for a non-syscall");
}

/*
 * Make a re-based slot image runnable: the probed location (never run)
 * and the data word it addresses rip-relatively are on one page, the
 * slot two pages further on. The trailing int3 becomes a ret so that the
 * caller can simply call the slot and look at what it loaded.
 */
static void *rebased_slot(const uint8_t *insn, size_t len, size_t disp_off, uint64_t value)
{
	uint8_t *base = map_pages(3, 0);
	uint8_t *orig = base + 0x100;
	uint64_t *data = (uint64_t *)(base + 0x800);
	uint8_t *slot = base + 2 * PAGE;
	struct ukp_arch_insn ai;

	*data = value;
	memcpy(orig, insn, len);
	put32(orig + disp_off, (uint32_t)((uintptr_t)data - (uintptr_t)(orig + len)));

	cr_assert_eq(arch_prepare_insn(&ai, &img, orig, len, (uintptr_t)orig, (uintptr_t)slot), 0);
	cr_assert(ai.ool);
	cr_assert_eq(img.slot_len, len + 1);
	cr_assert_eq(img.slot_image[len], 0xcc);
	memcpy(slot, img.slot_image, img.slot_len);
	slot[len] = 0xc3;
	make_exec(slot, 1);
	return slot;
}

Test(ool, rebased_slot_reads_the_original_data)
{
	static const uint8_t mov[] = { 0x48, 0x8b, 0x05, 0, 0, 0, 0 };	/* mov d(%rip),%rax */
	static const uint8_t lea[] = { 0x48, 0x8d, 0x05, 0, 0, 0, 0 };	/* lea d(%rip),%rax */
	const uint64_t value = 0x0123456789abcdefULL;
	uint64_t (*fn)(void);

	fn = rebased_slot(mov, sizeof(mov), 3, value);
	cr_assert_eq(fn(), value);

	/* lea gives the address itself: it must point at the data. */
	fn = rebased_slot(lea, sizeof(lea), 3, value);
	cr_assert_eq(*(uint64_t *)fn(), value);
}

Test(ool, rebased_vex_slot_reads_the_original_data)
{
	/* vmovq d(%rip),%xmm0: the word comes back as the double in xmm0 */
	static const uint8_t vmovq[] = { 0xc5, 0xfa, 0x7e, 0x05, 0, 0, 0, 0 };
	const uint64_t pi = 0x400921fb54442d18ULL;
	double (*fn)(void);
	uint64_t bits;
	double d;

	if (!__builtin_cpu_supports("avx"))
		cr_skip_test("no AVX on this CPU");

	fn = rebased_slot(vmovq, sizeof(vmovq), 4, pi);
	d = fn();
	memcpy(&bits, &d, sizeof(bits));
	cr_assert_eq(bits, pi);
}

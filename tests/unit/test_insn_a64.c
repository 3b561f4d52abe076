// SPDX-License-Identifier: MIT
/*
 * test_insn_a64.c - the AArch64 arch layer on its own: the decoder
 * (boundaries, classification, slot and boost images), the simulator
 * of the instructions that read or write pc, and the relocation of one
 * instruction into a detour (src/arch/aarch64).
 *
 * The CPU is the reference wherever it can be asked: each simulated
 * instruction also runs for real from an executable buffer, with every
 * register set by a loader stub (insn_a64_stub.S), and a SIGTRAP handler
 * takes the registers where it led (every other word of the buffer is a
 * brk). objdump is the reference for decoding: every instruction of the
 * arm64 libc is classified and checked against objdump's mnemonic and
 * branch target.
 *
 * Standalone build and run (aarch64, under qemu-user on x86-64), from the
 * repository root; the three headers written first are empty stand-ins
 * for the ones the AArch64 port has not written yet (arch.h includes
 * them):
 *
 *   B=/tmp/ukp-a64-test; mkdir -p $B/inc
 *   for h in arch_tls arch_syscall; do echo '#pragma once' > $B/inc/$h.h; done
 *   printf '#pragma once\nstruct arch_jprobe_vec;\nstruct arch_jprobe_start;\n' \
 *       > $B/inc/arch_jprobe.h
 *   aarch64-linux-gnu-objdump -d /usr/lib/aarch64-linux-gnu/libc.so.6 > $B/libc.dis
 *   aarch64-linux-gnu-gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
 *       -DUKP_STANDALONE_TEST -I/opt/ukp-a64/usr/include -Iinclude -Isrc \
 *       -Isrc/arch/aarch64 -I$B/inc -o $B/test_insn_a64 tests/unit/test_insn_a64.c \
 *       tests/unit/insn_a64_stub.S src/arch/aarch64/insn.c src/arch/aarch64/core.c \
 *       src/arch/aarch64/reloc.c \
 *       -L/opt/ukp-a64/usr/lib/aarch64-linux-gnu -lcriterion \
 *       -Wl,-rpath-link,/usr/lib/aarch64-linux-gnu \
 *       -Wl,-rpath-link,/opt/ukp-a64/usr/lib/aarch64-linux-gnu
 *   UKP_A64_LIBC_DIS=$B/libc.dis LD_LIBRARY_PATH=/opt/ukp-a64/usr/lib/aarch64-linux-gnu \
 *       $B/test_insn_a64 --jobs=1
 *
 * UKP_A64_LIBC_DIS names the objdump listing of libc; without it the
 * libc tests fail (they do not skip).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arch/arch.h"
#include "sim_ops.h"

/* the slot bytes of the last arch_prepare_insn() */
static struct ukp_slot_img img;

#ifdef UKP_STANDALONE_TEST
/*
 * Stand-in for nofault.S: a write() of the source into a pipe copies it
 * like memcpy, but an unreadable source is EFAULT instead of a fault.
 */
long arch_copy_nofault(void *dst, const void *src, size_t n)
{
	static int fd[2] = { -1, -1 };
	ssize_t w;

	if (fd[0] < 0 && pipe2(fd, O_CLOEXEC))
		return -EFAULT;
	w = write(fd[1], src, n);
	if (w > 0 && read(fd[0], dst, (size_t)w) != w)
		return -EFAULT;
	return w == (ssize_t)n ? 0 : -EFAULT;
}

bool arch_nofault_fixup(uintptr_t ip, uintptr_t *fixup_ip)
{
	(void)ip;
	(void)fixup_ip;
	return false;	/* the stand-in never faults */
}

/* Stand-in for the arch's check of a guarded control stack (GCS), which
 * the GCS tests switch on. */
static bool test_gcs;

bool arch_shadow_stack_active(void)
{
	return test_gcs;
}

static bool set_gcs(bool on)
{
	test_gcs = on;
	return true;
}
#else
/* In the library's build the real check answers; it cannot be switched. */
static bool set_gcs(bool on)
{
	return on == arch_shadow_stack_active();
}
#endif

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void le32(uint8_t b[4], uint32_t w)
{
	b[0] = (uint8_t)w;
	b[1] = (uint8_t)(w >> 8);
	b[2] = (uint8_t)(w >> 16);
	b[3] = (uint8_t)(w >> 24);
}

static int prep(struct ukp_arch_insn *ai, uint32_t w, uintptr_t addr, uintptr_t slot)
{
	uint8_t b[4];

	le32(b, w);
	return arch_prepare_insn(ai, &img, b, 4, addr, slot);
}

/* Encoders for the simulated forms (the Arm ARM's field layouts). */
static uint32_t enc_b(bool link, int64_t off)
{
	return (link ? 0x94000000u : 0x14000000u) | ((uint32_t)(off >> 2) & 0x3ffffff);
}

static uint32_t enc_bcond(unsigned int cond, int64_t off, bool bc)
{
	return 0x54000000u | ((uint32_t)(off >> 2) & 0x7ffff) << 5 | (bc ? 0x10 : 0) | cond;
}

static uint32_t enc_cb(bool nz, bool x, unsigned int rt, int64_t off)
{
	return (x ? 0x80000000u : 0) | 0x34000000u | (nz ? 1u << 24 : 0) |
	       ((uint32_t)(off >> 2) & 0x7ffff) << 5 | rt;
}

static uint32_t enc_tb(bool nz, unsigned int bit, unsigned int rt, int64_t off)
{
	return (bit >> 5) << 31 | 0x36000000u | (nz ? 1u << 24 : 0) | (bit & 31) << 19 |
	       ((uint32_t)(off >> 2) & 0x3fff) << 5 | rt;
}

static uint32_t enc_br(unsigned int opc, unsigned int rn)	/* 0 br, 1 blr, 2 ret */
{
	return 0xd61f0000u | opc << 21 | rn << 5;
}

static uint32_t enc_adr(bool page, int64_t imm, unsigned int rd)
{
	uint32_t v = (uint32_t)imm & 0x1fffff;

	return (page ? 0x90000000u : 0x10000000u) | (v & 3) << 29 | (v >> 2) << 5 | rd;
}

static uint32_t enc_ldr_lit(unsigned int opc, int64_t off, unsigned int rt) /* 0 w, 1 x, 2 sw */
{
	return opc << 30 | 0x18000000u | ((uint32_t)(off >> 2) & 0x7ffff) << 5 | rt;
}

/* ------------------------------------------------ running on the CPU */

/* The loader (insn_a64_stub.S) and the state it loads. */
extern const uint8_t a64_stub_begin[], a64_stub_end[];

struct a64_in {
	uint64_t x[31];
	uint64_t nzcv;
};

struct cpu_out {
	int sig;
	uint64_t x[31], pc, pstate, fault;
	uint32_t word;		/* the instruction at pc, when in the buffer */
};

#define BUF_SIZE (4u << 20)
#define FILL_INSN 0xd4207ce0u	/* brk #0x3e7: where a run ends */
#define A64_PAGE 4096u

static uint8_t *xbuf;		/* RWX, BUF_SIZE, PROT_NONE pages on both sides */
static size_t dirty[256];
static size_t ndirty;
static sigjmp_buf run_jb;
static struct cpu_out *run_out;

static void on_signal(int sig, siginfo_t *si, void *ucv);

/* The executable buffer, and the handlers that end a run (installed
 * before anything runs or is simulated). */
static void xbuf_init(void)
{
	int sigs[] = { SIGTRAP, SIGSEGV, SIGILL, SIGBUS };
	struct sigaction sa;
	uint8_t *p;
	size_t i;

	if (xbuf)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	for (i = 0; i < 4; i++)
		cr_assert_eq(sigaction(sigs[i], &sa, NULL), 0);
	p = mmap(NULL, BUF_SIZE + 2 * A64_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	cr_assert_eq(mprotect(p + A64_PAGE, BUF_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
	xbuf = p + A64_PAGE;
	for (i = 0; i < BUF_SIZE; i += 4)
		le32(xbuf + i, FILL_INSN);
	__builtin___clear_cache((char *)xbuf, (char *)xbuf + BUF_SIZE);
}

static uintptr_t xaddr(size_t off)
{
	return (uintptr_t)xbuf + off;
}

static void put(size_t off, uint32_t w)
{
	cr_assert(off % 4 == 0 && off < BUF_SIZE && ndirty < 256);
	le32(xbuf + off, w);
	dirty[ndirty++] = off;
}

static void clean(void)
{
	while (ndirty)
		le32(xbuf + dirty[--ndirty], FILL_INSN);
}

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t fixup;
	int i;

	/* In the library's build arch_copy_nofault is nofault.S, whose
	 * faults the library's handler (not installed here) would fix up. */
	if (sig == SIGSEGV && arch_nofault_fixup(uc->uc_mcontext.pc, &fixup)) {
		uc->uc_mcontext.pc = fixup;
		return;
	}

	for (i = 0; i < 31; i++)
		run_out->x[i] = uc->uc_mcontext.regs[i];
	run_out->pc = uc->uc_mcontext.pc;
	run_out->pstate = uc->uc_mcontext.pstate;
	run_out->fault = (uint64_t)(uintptr_t)si->si_addr;
	run_out->sig = sig;
	if (run_out->pc >= (uintptr_t)xbuf && run_out->pc < (uintptr_t)xbuf + BUF_SIZE)
		run_out->word = arch_a64_read_insn((const uint8_t *)(uintptr_t)run_out->pc);
	siglongjmp(run_jb, 1);
}

/*
 * Run the instruction(s) already put at xbuf + pos with the registers of
 * in: the stub goes to STUB_OFF, away from every place a test lands,
 * followed by a b to pos. Returns with out holding the signal the run
 * ended in and the registers at it.
 */
#define STUB_OFF 0x800u

static void run(size_t pos, const struct a64_in *in, struct cpu_out *out)
{
	size_t stub_len = (size_t)(a64_stub_end - a64_stub_begin), i;
	void (*entry)(const struct a64_in *);

	cr_assert(pos >= STUB_OFF + 0x100 && stub_len < 0x100);
	for (i = 0; i < stub_len; i += 4) {
		uint32_t w;

		memcpy(&w, a64_stub_begin + i, 4);
		put(STUB_OFF + i, w);
	}
	put(STUB_OFF + stub_len, enc_b(false, (int64_t)pos - (int64_t)(STUB_OFF + stub_len)));
	__builtin___clear_cache((char *)xbuf, (char *)xbuf + BUF_SIZE);
	memset(out, 0, sizeof(*out));
	run_out = out;
	entry = (void (*)(const struct a64_in *))(void *)(xbuf + STUB_OFF);
	if (!sigsetjmp(run_jb, 1)) {
		entry(in);
		cr_assert_fail("the run came back");
	}
	clean();
}

static void random_in(struct a64_in *in, uint64_t nzcv)
{
	int i;

	for (i = 0; i < 31; i++)
		in->x[i] = rnd();
	in->nzcv = nzcv;
}

static void regs_from(struct pt_regs *regs, const struct a64_in *in, uintptr_t pc)
{
	int i;

	for (i = 0; i < 31; i++)
		regs->regs[i] = in->x[i];
	regs->sp = 0x7ffff000u;
	regs->pc = pc;
	/* any BTYPE: the brk may have been reached by an indirect branch;
	 * after the instruction it is what the instruction sets */
	regs->pstate = in->nzcv | (rnd() & 3) << 10;
}

/*
 * Put insn at pos, run it on the CPU, simulate it with arch_emulate, and
 * compare: every x register, pc, NZCV and BTYPE; a load that faulted on
 * the CPU must be -EFAULT with the same address and no register changed.
 * Returns the CPU's pc (where it led).
 */
static uint64_t check_sim(uint32_t insn, size_t pos, const struct a64_in *in,
			  enum ukp_a64_sim want)
{
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	struct cpu_out out;
	uintptr_t addr = xaddr(pos), fault = 0;
	uint64_t pstate;
	int i, ret;

	ret = prep(&ai, insn, addr, addr + 0x1000);
	cr_assert_eq(ret, 0, "%08x: prepare %d (%s)", insn, ret, ai.why ? ai.why : "");
	cr_assert(!ai.ool && ai.sim == want, "%08x: ool %d sim %d, want sim %d", insn, ai.ool,
		  ai.sim, want);
	/* simulated first: the run restores the buffer (literals too) */
	regs_from(&regs, in, addr);
	pstate = regs.pstate;
	ret = arch_emulate(&ai, addr, &regs, &fault);
	put(pos, insn);
	run(pos, in, &out);
	if (out.sig == SIGSEGV && out.pc == addr) {
		/* the instruction's own load faulted */
		cr_assert_eq(ret, -EFAULT, "%08x: cpu faulted at %#" PRIx64 ", sim %d", insn,
			     out.fault, ret);
		cr_assert_eq(fault, out.fault, "%08x: fault %#lx, cpu %#" PRIx64, insn,
			     (unsigned long)fault, out.fault);
		for (i = 0; i < 31; i++)
			cr_assert_eq(regs.regs[i], in->x[i], "%08x: x%d changed on a fault", insn, i);
		cr_assert_eq(regs.pc, addr);
		cr_assert_eq(regs.pstate, pstate);
		return out.pc;
	}
	cr_assert_eq(ret, 0, "%08x: sim %d", insn, ret);
	/* the CPU stopped at a brk of the fill, or jumped out of the buffer */
	if (out.pc >= (uintptr_t)xbuf && out.pc < (uintptr_t)xbuf + BUF_SIZE) {
		cr_assert_eq(out.sig, SIGTRAP, "%08x: signal %d at %#" PRIx64, insn, out.sig, out.pc);
		cr_assert_eq(out.word, FILL_INSN, "%08x: stopped at %08x", insn, out.word);
	}
	cr_assert_eq(regs.pc, out.pc, "%08x at %#lx: sim pc %#" PRIx64 ", cpu %#" PRIx64, insn,
		     (unsigned long)addr, regs.pc, out.pc);
	for (i = 0; i < 31; i++)
		cr_assert_eq(regs.regs[i], out.x[i], "%08x: x%d sim %#" PRIx64 ", cpu %#" PRIx64,
			     insn, i, regs.regs[i], out.x[i]);
	/* NZCV unchanged; BTYPE (bits 11:10) as the CPU set it (qemu's
	 * default cpu has FEAT_BTI; the buffer is not a guarded page) */
	cr_assert_eq(out.pstate & 0xf0000000u, in->nzcv);
	cr_assert_eq(regs.pstate & 0xf0000c00u, out.pstate & 0xf0000c00u,
		     "%08x: pstate sim %#" PRIx64 ", cpu %#" PRIx64, insn, regs.pstate, out.pstate);
	return out.pc;
}

#define MID (BUF_SIZE / 2)

/* --------------------------------------------------- classification */

enum { OOL = -1 };

struct sample {
	uint32_t insn;
	const char *text;
	int err;		/* 0, or the -errno of the refusal */
	int sim;		/* OOL, or enum ukp_a64_sim */
	bool blocking, boost;
};

static const struct sample samples[] = {
	{ 0x14000002, "b .+8", 0, UKP_SIM_B, 0, 0 },
	{ 0x97ffffc0, "bl .-0x100", 0, UKP_SIM_BL, 0, 0 },
	{ 0x54000201, "b.ne .+0x40", 0, UKP_SIM_BCOND, 0, 0 },
	{ 0x54000210, "bc.eq .+0x40", 0, UKP_SIM_BCOND, 0, 0 },
	{ 0xb4000063, "cbz x3", 0, UKP_SIM_CBZ, 0, 0 },
	{ 0x35ffffe7, "cbnz w7", 0, UKP_SIM_CBNZ, 0, 0 },
	{ 0xb6f80089, "tbz x9, #63", 0, UKP_SIM_TBZ, 0, 0 },
	{ 0x372fff82, "tbnz w2, #5", 0, UKP_SIM_TBNZ, 0, 0 },
	{ 0xd61f0200, "br x16", 0, UKP_SIM_BR, 0, 0 },
	{ 0xd63f03c0, "blr x30", 0, UKP_SIM_BLR, 0, 0 },
	{ 0xd65f03c0, "ret", 0, UKP_SIM_RET, 0, 0 },
	{ 0xd65f00a0, "ret x5", 0, UKP_SIM_RET, 0, 0 },
	{ 0x70000900, "adr x0", 0, UKP_SIM_ADR, 0, 0 },
	{ 0x90000011, "adrp x17", 0, UKP_SIM_ADRP, 0, 0 },
	{ 0x18000101, "ldr w1, lit", 0, UKP_SIM_LDR_LIT32, 0, 0 },
	{ 0x58ffff02, "ldr x2, lit", 0, UKP_SIM_LDR_LIT64, 0, 0 },
	{ 0x98000043, "ldrsw x3, lit", 0, UKP_SIM_LDRSW_LIT, 0, 0 },
	{ 0x1c000040, "ldr s0, lit", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x5c000041, "ldr d1, lit", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x9c000042, "ldr q2, lit", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xdc000042, "(V=1 opc=11 literal: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0xd8000040, "prfm pldl1keep, lit", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd71f0822, "braa x1, x2", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd61f0c7f, "brabz x3", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd73f089f, "blraa x4, sp", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd63f0cbf, "blrabz x5", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd65f0bff, "retaa", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd65f0fff, "retab", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd69f03e0, "eret", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd69f0bff, "eretaa", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd6bf03e0, "drps", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd61e0200, "(br with op2 != 11111: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0xd6df03e0, "(branch register opc 0110: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0x55000000, "(b.cond space with o1 set: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0xc85f7c20, "ldxr x0", -EINVAL, 0, 0, 0 },
	{ 0x885ffc20, "ldaxr w0", -EINVAL, 0, 0, 0 },
	{ 0x085f7c20, "ldxrb w0", -EINVAL, 0, 0, 0 },
	{ 0x485ffc20, "ldaxrh w0", -EINVAL, 0, 0, 0 },
	{ 0xc8027c20, "stxr w2, x0", -EINVAL, 0, 0, 0 },
	{ 0x8802fc20, "stlxr w2, w0", -EINVAL, 0, 0, 0 },
	{ 0xc87f0440, "ldxp x0, x1", -EINVAL, 0, 0, 0 },
	{ 0x887f8440, "ldaxp w0, w1", -EINVAL, 0, 0, 0 },
	{ 0xc8230440, "stxp w3, x0, x1", -EINVAL, 0, 0, 0 },
	{ 0x88238440, "stlxp w3, w0, w1", -EINVAL, 0, 0, 0 },
	{ 0x48207c82, "casp x0, x1, x2, x3", 0, OOL, 0, 1 },
	{ 0x0860fc82, "caspal w0, w1, w2, w3", 0, OOL, 0, 1 },
	{ 0xc8a07c41, "cas x0, x1", 0, OOL, 0, 1 },
	{ 0xc8dffc20, "ldar x0", 0, OOL, 0, 1 },
	{ 0xc89ffc20, "stlr x0", 0, OOL, 0, 1 },
	{ 0xf8200041, "ldadd x0, x1", 0, OOL, 0, 1 },
	{ 0xd4200000, "brk #0", -EILSEQ, 0, 0, 0 },
	{ 0xd4200080, "brk #4 (ours)", -EILSEQ, 0, 0, 0 },
	{ 0xd4400000, "hlt #0", -EILSEQ, 0, 0, 0 },
	{ 0xd4000002, "hvc #0", -EILSEQ, 0, 0, 0 },
	{ 0xd4000003, "smc #0", -EILSEQ, 0, 0, 0 },
	{ 0xd4a00001, "dcps1", -EILSEQ, 0, 0, 0 },
	{ 0xd4000000, "(exception opc 000 LL 00: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0x00000000, "udf #0", -EILSEQ, 0, 0, 0 },
	{ 0x0000ffff, "udf #65535", -EILSEQ, 0, 0, 0 },
	{ 0x00010000, "(reserved space, op1 != 0: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0x02000000, "(op0 0001: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0x06000000, "(op0 0011: unallocated)", -EILSEQ, 0, 0, 0 },
	{ 0xd4000001, "svc #0", 0, OOL, 1, 0 },
	{ 0xd4001001, "svc #0x80", 0, OOL, 1, 0 },
	{ 0xd503201f, "nop", 0, OOL, 0, 1 },
	{ 0xd503203f, "yield", 0, OOL, 0, 0 },
	{ 0xd503205f, "wfe", 0, OOL, 0, 0 },
	{ 0xd503233f, "paciasp", 0, OOL, 0, 1 },
	{ 0xd503237f, "pacibsp", 0, OOL, 0, 1 },
	{ 0xd50323bf, "autiasp", 0, OOL, 0, 0 },
	{ 0xd503245f, "bti c", 0, OOL, 0, 1 },
	{ 0xd50324df, "bti jc", 0, OOL, 0, 1 },
	{ 0xd50320ff, "xpaclri", 0, OOL, 0, 1 },
	{ 0xd5033bbf, "dmb ish", 0, OOL, 0, 1 },
	{ 0xd5033fdf, "isb", 0, OOL, 0, 1 },
	{ 0xd5033f5f, "clrex", 0, OOL, 0, 0 },
	{ 0xd53bd040, "mrs x0, tpidr_el0", 0, OOL, 0, 1 },
	{ 0xd51bd041, "msr tpidr_el0, x1", 0, OOL, 0, 1 },
	{ 0xd53b4202, "mrs x2, nzcv", 0, OOL, 0, 1 },
	{ 0xd51b4403, "msr fpcr, x3", 0, OOL, 0, 1 },
	{ 0xd5380004, "mrs x4, midr_el1", 0, OOL, 0, 0 },
	{ 0xd53be045, "mrs x5, cntvct_el0", 0, OOL, 0, 0 },
	{ 0xd50342df, "msr daifset, #2", 0, OOL, 0, 0 },
	{ 0xd503477f, "smstart", 0, OOL, 0, 0 },
	{ 0xd5233060, "tstart x0", -EOPNOTSUPP, 0, 0, 0 },
	{ 0xd503307f, "tcommit", 0, OOL, 0, 0 },
	{ 0xd4600000, "tcancel #0", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x1d010440, "cpyp [x0]!, [x1]!, x2!", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x1d410443, "cpym", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x19c20420, "setp [x0]!, x1!, x2", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x19c18443, "sete", -EOPNOTSUPP, 0, 0, 0 },
	{ 0x91001020, "add x0, x1, #4", 0, OOL, 0, 1 },
	{ 0xd2800020, "mov x0, #1", 0, OOL, 0, 1 },
	{ 0xf9400420, "ldr x0, [x1, #8]", 0, OOL, 0, 1 },
	{ 0xa9bf7bfd, "stp x29, x30, [sp, #-16]!", 0, OOL, 0, 1 },
	{ 0xa8c107e0, "ldp x0, x1, [sp], #16", 0, OOL, 0, 1 },
	{ 0x1e622820, "fadd d0, d1, d2", 0, OOL, 0, 1 },
	{ 0x4ea28420, "add v0.4s, v1.4s, v2.4s", 0, OOL, 0, 1 },
	{ 0x2518e3e0, "ptrue p0.b", 0, OOL, 0, 1 },
	{ 0xa5e0a000, "ld1d {z0.d}, p0/z, [x0]", 0, OOL, 0, 1 },
	{ 0xd9600020, "ldg x0, [x1]", 0, OOL, 0, 1 },
	{ 0xf8200420, "ldraa x0, [x1]", 0, OOL, 0, 1 },
	{ 0xc00800ff, "zero {za}", 0, OOL, 0, 1 },
	{ 0x3a00080d, "setf8 w0", 0, OOL, 0, 1 },
	{ 0xf83fd020, "ld64b x0, [x1]", 0, OOL, 0, 1 },
};

Test(insn_a64, classify_samples)
{
	uintptr_t addr = 0x400000, slot = 0x500000;
	size_t i;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		const struct sample *s = &samples[i];
		struct ukp_arch_insn ai;
		int ret = prep(&ai, s->insn, addr, slot);

		cr_assert_eq(ai.len, 4, "%s", s->text);
		cr_assert_eq(ret, s->err, "%08x %s: %d (%s), want %d", s->insn, s->text, ret,
			     ai.why ? ai.why : "", s->err);
		if (ret) {
			cr_assert(ai.why && *ai.why, "%s: refused without a why", s->text);
			continue;
		}
		cr_assert_null(ai.why, "%s", s->text);
		if (s->sim == OOL) {
			cr_assert(ai.ool && ai.sim == UKP_SIM_NONE, "%08x %s: not ool", s->insn,
				  s->text);
			cr_assert_eq(img.slot_len, 8);
			cr_assert_eq(arch_a64_read_insn(img.slot_image), s->insn);
			cr_assert_eq(arch_a64_read_insn(img.slot_image + 4), 0xd42000c0u);
		} else {
			cr_assert(!ai.ool && ai.sim == s->sim, "%08x %s: sim %d want %d", s->insn,
				  s->text, ai.sim, s->sim);
			cr_assert_eq(img.slot_len, 0);
		}
		cr_assert_eq(ai.blocking, s->blocking, "%s", s->text);
		cr_assert_eq(ai.boostable, s->boost, "%08x %s: boostable %d", s->insn, s->text,
			     ai.boostable);
	}
}

Test(insn_a64, insn_length)
{
	uint8_t b[4];
	size_t i;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		bool unalloc = strchr(samples[i].text, '(') == samples[i].text &&
			       strstr(samples[i].text, "unallocated");

		le32(b, samples[i].insn);
		cr_assert_eq(arch_insn_length(b, 4), unalloc ? 0u : 4u, "%s", samples[i].text);
		cr_assert_eq(arch_insn_length(b, 3), 0u);
	}
}

Test(insn_a64, gcs_refuses_call_and_return_simulation)
{
	struct ukp_arch_insn ai;

	if (set_gcs(true)) {
		cr_assert_eq(prep(&ai, 0x97ffffc0, 0x1000, 0x2000), -EOPNOTSUPP);	/* bl */
		cr_assert_not_null(ai.why);
		cr_assert_eq(prep(&ai, 0xd63f0200, 0x1000, 0x2000), -EOPNOTSUPP); /* blr x16 */
		cr_assert_eq(prep(&ai, 0xd65f03c0, 0x1000, 0x2000), -EOPNOTSUPP); /* ret */
		cr_assert_eq(prep(&ai, 0x14000002, 0x1000, 0x2000), 0);	/* b */
		cr_assert_eq(prep(&ai, 0xd61f0200, 0x1000, 0x2000), 0);	/* br x16 */
	}
	if (set_gcs(false))
		cr_assert_eq(prep(&ai, 0x97ffffc0, 0x1000, 0x2000), 0);
}

Test(insn_a64, prepare_rejects_bad_input)
{
	struct ukp_arch_insn ai;
	uint8_t b[4];

	le32(b, 0xd503201f);
	cr_assert_eq(arch_prepare_insn(&ai, &img, b, 3, 0x1000, 0x2000), -EILSEQ);
	cr_assert_not_null(ai.why);
	cr_assert_eq(arch_prepare_insn(&ai, &img, b, 4, 0x1002, 0x2000), -EILSEQ);
	cr_assert_eq(arch_prepare_insn(&ai, &img, b, 4, 0x1000, 0x2000), 0);
}

Test(insn_a64, inline_helpers)
{
	uint8_t b[4];

	le32(b, UKP_BREAKPOINT_INSN);
	cr_assert(arch_breakpoint_at(b));
	cr_assert(arch_breakpoint_before(b));
	{
		const uint8_t bytes[] = UKP_BREAKPOINT_BYTES;

		cr_assert_eq(sizeof(bytes), UKP_BREAKPOINT_SIZE);
		cr_assert_eq(memcmp(bytes, b, 4), 0);
	}
	le32(b, 0xd42000c0);	/* brk #6 */
	cr_assert(arch_breakpoint_at(b));
	le32(b, 0xd4200000);	/* the program's brk #0 */
	cr_assert(arch_breakpoint_at(b));
	le32(b, 0xd43fffe0);	/* brk #0xffff */
	cr_assert(arch_breakpoint_at(b));
	le32(b, 0xd4400000);	/* hlt */
	cr_assert_not(arch_breakpoint_at(b));
	le32(b, 0xd4000001);	/* svc */
	cr_assert_not(arch_breakpoint_at(b));
	le32(b, 0xd4200081);	/* LL != 0: not a brk */
	cr_assert_not(arch_breakpoint_at(b));

	le32(b, 0x14000010);
	cr_assert(arch_is_opt_jump(b));
	le32(b, 0x17ffffff);
	cr_assert(arch_is_opt_jump(b));
	le32(b, 0x94000010);	/* bl */
	cr_assert_not(arch_is_opt_jump(b));

	le32(b, 0xd503245f);	/* bti c: not skipped */
	cr_assert_eq(arch_entry_skip(b, 4), 0u);
	le32(b, 0xd503233f);	/* paciasp */
	cr_assert_eq(arch_entry_skip(b, 4), 0u);
}

/*
 * Why arch_entry_skip() skips nothing: a probe's brk that replaces the
 * "bti c" of an entry in a guarded page (PROT_BTI) still traps as a
 * breakpoint when reached by blr (a brk is no Branch Target exception),
 * with BTYPE 10 in the frame, where a nop there raises SIGILL; the bti
 * then runs from the unguarded slot.
 */
Test(insn_a64, brk_is_a_landing_pad_in_a_guarded_page)
{
	static const uint32_t words[] = { UKP_BREAKPOINT_INSN, 0xd503201f /* nop */ };
	static const int want[] = { SIGTRAP, SIGILL };
	struct cpu_out out;
	uint8_t *page;
	size_t k;

	xbuf_init();
	page = mmap(NULL, A64_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(page, MAP_FAILED);
	for (k = 0; k < 2; k++)
		le32(page + 4 * k, words[k]);
	le32(page + 8, FILL_INSN);
	if (mprotect(page, A64_PAGE, PROT_READ | PROT_EXEC | 0x10 /* PROT_BTI */)) {
		cr_assert_eq(errno, EINVAL);
		cr_skip_test("this CPU has no BTI: no guarded pages");
	}
	for (k = 0; k < 2; k++) {
		struct a64_in in;

		random_in(&in, 0);
		in.x[9] = (uintptr_t)page + 4 * k;
		put(MID, enc_br(1, 9));		/* blr x9 */
		run(MID, &in, &out);
		cr_assert_eq(out.sig, want[k], "word %zu: signal %d", k, out.sig);
		cr_assert_eq(out.pc, (uintptr_t)page + 4 * k);
		if (k == 0)
			cr_assert_eq(out.pstate & 0xc00u, 0x800u);	/* BTYPE c */
	}
	munmap(page, A64_PAGE);
}

/* ------------------------------------------------------- boundaries */

Test(insn_a64, boundary_alignment)
{
	uint8_t code[16];
	size_t i;

	for (i = 0; i < 16; i += 4)
		le32(code + i, 0xd503201f);
	cr_assert_eq(arch_check_boundary(code, 0, 16), 0);
	cr_assert_eq(arch_check_boundary(code, 12, 16), 0);
	for (i = 1; i < 16; i++)
		if (i % 4)
			cr_assert_eq(arch_check_boundary(code, i, 16), -EILSEQ, "off %zu", i);
	cr_assert_eq(arch_check_boundary(code, 16, 16), -EILSEQ);
	cr_assert_eq(arch_check_boundary(code, 12, 14), -EILSEQ);
}

Test(insn_a64, boundary_exclusive_sequence)
{
	/* 0: ldaxr w0, [x2]; cmp w0, w1; b.ne 24; stlxr w3, w4, [x2];
	 * cbnz w3, 0; 20: ret */
	static const uint32_t seq[] = { 0x885ffc40, 0x6b01001f, 0x54000081, 0x8803fc44,
					0x35ffff63, 0xd65f03c0 };
	static const int want[] = { 0, -EINVAL, -EINVAL, -EINVAL, 0, 0 };
	uint8_t code[sizeof(seq)];
	struct ukp_arch_insn ai;
	size_t i;

	for (i = 0; i < 6; i++)
		le32(code + 4 * i, seq[i]);
	for (i = 0; i < 6; i++)
		cr_assert_eq(arch_check_boundary(code, 4 * i, sizeof(code)), want[i], "off %zu",
			     4 * i);
	/* the exclusives themselves are refused by prepare */
	cr_assert_eq(prep(&ai, seq[0], 0x1000, 0x2000), -EINVAL);
	cr_assert_eq(prep(&ai, seq[3], 0x100c, 0x2000), -EINVAL);
}

Test(insn_a64, boundary_exclusive_window)
{
	/* a load-exclusive 32 instructions back still counts, 33 back not */
	uint8_t code[4 * 40];
	size_t i;

	for (i = 0; i < 40; i++)
		le32(code + 4 * i, 0xd503201f);
	le32(code, 0xc85f7c20);	/* ldxr x0, [x1] */
	cr_assert_eq(arch_check_boundary(code, 4 * 32, sizeof(code)), -EINVAL);
	cr_assert_eq(arch_check_boundary(code, 4 * 33, sizeof(code)), 0);
	/* casp and ldar are no load-exclusives */
	le32(code, 0x0860fc82);
	cr_assert_eq(arch_check_boundary(code, 4, sizeof(code)), 0);
	le32(code, 0xc8dffc20);
	cr_assert_eq(arch_check_boundary(code, 4, sizeof(code)), 0);
	/* a store-exclusive closes the sequence */
	le32(code, 0xc85f7c20);
	le32(code + 8, 0xc8027c20);
	cr_assert_eq(arch_check_boundary(code, 4, sizeof(code)), -EINVAL);
	cr_assert_eq(arch_check_boundary(code, 12, sizeof(code)), 0);
}

/* ------------------------------------------------------- simulation */

Test(insn_a64, sim_b_bl)
{
	static const int64_t offs[] = { 4, 8, -4, -8, 0x1000, -0x1000, 0x1ffffc, -0x1ff000 };
	struct a64_in in;
	size_t i;

	xbuf_init();
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		random_in(&in, 0);
		cr_assert_eq(check_sim(enc_b(false, offs[i]), MID, &in, UKP_SIM_B),
			     xaddr(MID) + (uint64_t)offs[i]);
		cr_assert_eq(check_sim(enc_b(true, offs[i]), MID, &in, UKP_SIM_BL),
			     xaddr(MID) + (uint64_t)offs[i]);
	}
}

/* The full +-128 MiB range (and b ., which would loop on the CPU): the
 * arithmetic is checked against the encoding. */
Test(insn_a64, sim_b_bl_far)
{
	static const int64_t offs[] = { 0x7fffffc, -0x8000000, 0x4000000, -4, 0 };
	uintptr_t addr = 0x40000000;
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	uintptr_t fault;
	size_t i;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		memset(&regs, 0, sizeof(regs));
		cr_assert_eq(prep(&ai, enc_b(true, offs[i]), addr, addr), 0);
		cr_assert_eq(arch_emulate(&ai, addr, &regs, &fault), 0);
		cr_assert_eq(regs.pc, addr + (uint64_t)offs[i]);
		cr_assert_eq(regs.regs[30], addr + 4);
	}
}

Test(insn_a64, sim_bcond_all_conditions)
{
	struct a64_in in;
	unsigned int cond, flags, taken[16] = { 0 };

	xbuf_init();
	for (cond = 0; cond < 16; cond++) {
		for (flags = 0; flags < 16; flags++) {
			int64_t off = (cond & 1) ? -0x40 : 0x80;
			uint64_t pc;

			random_in(&in, (uint64_t)flags << 28);
			pc = check_sim(enc_bcond(cond, off, false), MID, &in, UKP_SIM_BCOND);
			taken[cond] += pc == xaddr(MID) + (uint64_t)off;
			/* bc.cond (FEAT_HBC) is the same branch; qemu may not
			 * know it, so only the simulation is compared */
			{
				struct ukp_arch_insn ai;
				struct pt_regs regs;
				uintptr_t fault;

				cr_assert_eq(prep(&ai, enc_bcond(cond, off, true), xaddr(MID), 0), 0);
				regs_from(&regs, &in, xaddr(MID));
				cr_assert_eq(arch_emulate(&ai, xaddr(MID), &regs, &fault), 0);
				cr_assert_eq(regs.pc, pc, "bc.%u flags %x", cond, flags);
			}
		}
	}
	/* every condition both taken and not for some flags, but al/nv */
	for (cond = 0; cond < 14; cond++)
		cr_assert(taken[cond] > 0 && taken[cond] < 16, "cond %u taken %u/16", cond,
			  taken[cond]);
	cr_assert_eq(taken[14], 16);
	cr_assert_eq(taken[15], 16);
}

Test(insn_a64, sim_cbz_cbnz)
{
	static const uint64_t vals[] = { 0, 1, 0x100000000u, 0xffffffff00000000u, ~0ull,
					 0x80000000u };
	struct a64_in in;
	unsigned int n = 0;
	size_t i;
	int nz, x;

	xbuf_init();
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (nz = 0; nz < 2; nz++) {
			for (x = 0; x < 2; x++) {
				unsigned int rt = (unsigned int)(n++ % 32);	/* 31: zr */

				random_in(&in, 0x60000000);
				if (rt < 31)
					in.x[rt] = vals[i];
				check_sim(enc_cb(nz, x, rt, nz ? -0x20 : 0x24), MID, &in,
					  nz ? UKP_SIM_CBNZ : UKP_SIM_CBZ);
			}
		}
	}
	/* the W form looks at the low half only: 1 << 32 is zero there */
	random_in(&in, 0);
	in.x[4] = 0x100000000u;
	cr_assert_eq(check_sim(enc_cb(false, false, 4, 0x24), MID, &in, UKP_SIM_CBZ),
		     xaddr(MID) + 0x24);
	cr_assert_eq(check_sim(enc_cb(false, true, 4, 0x24), MID, &in, UKP_SIM_CBZ),
		     xaddr(MID) + 4);
}

Test(insn_a64, sim_tbz_tbnz_every_bit)
{
	struct a64_in in;
	unsigned int bit, nz, k;

	xbuf_init();
	for (bit = 0; bit < 64; bit++) {
		for (nz = 0; nz < 2; nz++) {
			for (k = 0; k < 3; k++) {
				unsigned int rt = (bit + k) % 31;
				uint64_t v = k == 0 ? 1ull << bit : k == 1 ? ~(1ull << bit) : rnd();
				uint64_t pc;

				random_in(&in, 0);
				in.x[rt] = v;
				pc = check_sim(enc_tb(nz, bit, rt, nz ? 0x7ffc : -0x8000), MID, &in,
					       nz ? UKP_SIM_TBNZ : UKP_SIM_TBZ);
				if (k < 2)
					cr_assert_eq(pc != xaddr(MID) + 4, ((v >> bit) & 1) == nz,
						     "bit %u nz %u", bit, nz);
			}
		}
	}
}

Test(insn_a64, sim_br_blr_ret)
{
	struct a64_in in;
	unsigned int opc, rn;

	xbuf_init();
	for (opc = 0; opc < 3; opc++) {
		for (rn = 0; rn < 31; rn++) {
			random_in(&in, 0);
			in.x[rn] = xaddr(MID + 0x800 + 0x1000 * rn - 0x10000 * opc);
			check_sim(enc_br(opc, rn), MID, &in,
				  opc == 0 ? UKP_SIM_BR : opc == 1 ? UKP_SIM_BLR : UKP_SIM_RET);
		}
	}
	/* blr x30 goes to the old x30 */
	random_in(&in, 0);
	in.x[30] = xaddr(MID - 0x400);
	cr_assert_eq(check_sim(enc_br(1, 30), MID, &in, UKP_SIM_BLR), xaddr(MID - 0x400));
	/* Rn = 31 reads xzr: a branch to 0 (the CPU faults there) */
	random_in(&in, 0);
	cr_assert_eq(check_sim(enc_br(0, 31), MID, &in, UKP_SIM_BR), 0u);
}

Test(insn_a64, sim_adr_adrp)
{
	/* positions around page boundaries, both page sizes */
	static const size_t pos[] = { MID, MID + 4, MID - 4, MID + 0xffc, MID + 0x1000,
				      MID + 0xfffc, MID + 0x10000, MID + 0x7f8 };
	static const int64_t imms[] = { 0, 1, -1, 0xfffff, -0x100000, 0x800, -0x800, 3 };
	struct a64_in in;
	size_t i, j;

	xbuf_init();
	for (i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		for (j = 0; j < sizeof(imms) / sizeof(imms[0]); j++) {
			unsigned int rd = (unsigned int)((i * 8 + j) % 32);

			random_in(&in, 0);
			check_sim(enc_adr(false, imms[j], rd), pos[i], &in, UKP_SIM_ADR);
			check_sim(enc_adr(true, imms[j], rd), pos[i], &in, UKP_SIM_ADRP);
		}
	}
	for (i = 0; i < 64; i++) {
		int64_t imm = (int64_t)(rnd() & 0x1fffff) - 0x100000;

		random_in(&in, 0);
		check_sim(enc_adr(i & 1, imm, (unsigned int)(rnd() % 32)),
			  MID + 4 * (size_t)(rnd() % 0x4000), &in,
			  (i & 1) ? UKP_SIM_ADRP : UKP_SIM_ADR);
	}
}

Test(insn_a64, sim_ldr_literal)
{
	static const uint64_t vals[] = { 0x0123456789abcdefu, 0xfedcba9876543210u, 0x7fffffff,
					 0x80000000u, 0 };
	static const int64_t offs[] = { 8, -8, 0x1000, -0x3fc, 12, -12 };
	struct a64_in in;
	unsigned int opc;
	size_t i, j;

	xbuf_init();
	for (opc = 0; opc < 3; opc++) {
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			for (j = 0; j < sizeof(offs) / sizeof(offs[0]); j++) {
				unsigned int rt = (unsigned int)((i * 6 + j + opc) % 32);
				size_t lit = (size_t)((int64_t)MID + offs[j]);

				random_in(&in, 0);
				/* the literal's 8 bytes, clear of the
				 * instruction and of the brk after it */
				put(lit, (uint32_t)vals[i]);
				put(lit + 4, (uint32_t)(vals[i] >> 32));
				check_sim(enc_ldr_lit(opc, offs[j], rt), MID, &in,
					  opc == 0 ? UKP_SIM_LDR_LIT32 :
					  opc == 1 ? UKP_SIM_LDR_LIT64 : UKP_SIM_LDRSW_LIT);
				clean();
			}
		}
	}
}

Test(insn_a64, sim_ldr_literal_faults)
{
	struct a64_in in;
	unsigned int opc;

	xbuf_init();
	for (opc = 0; opc < 3; opc++) {
		/* the literal is the first word past the buffer: the guard page */
		random_in(&in, 0);
		cr_assert_eq(check_sim(enc_ldr_lit(opc, 0x40, 5), BUF_SIZE - 0x40, &in,
				       opc == 0 ? UKP_SIM_LDR_LIT32 :
				       opc == 1 ? UKP_SIM_LDR_LIT64 : UKP_SIM_LDRSW_LIT),
			     xaddr(BUF_SIZE - 0x40));
		/* and the word before the buffer */
		random_in(&in, 0);
		cr_assert_eq(check_sim(enc_ldr_lit(opc, -(int64_t)0x1000, 7), 0xffc, &in,
				       opc == 0 ? UKP_SIM_LDR_LIT32 :
				       opc == 1 ? UKP_SIM_LDR_LIT64 : UKP_SIM_LDRSW_LIT),
			     xaddr(0xffc));
	}
}

Test(insn_a64, emulate_unprepared_is_einval)
{
	struct ukp_arch_insn ai;
	struct pt_regs regs;
	uintptr_t fault;

	memset(&regs, 0, sizeof(regs));
	cr_assert_eq(prep(&ai, 0x91001020, 0x1000, 0x2000), 0);	/* add: ool */
	cr_assert_eq(arch_emulate(&ai, 0x1000, &regs, &fault), -EINVAL);
}

/* -------------------------------------------- out-of-line and boost */

/* The slot image runs to its trailing brk #6; resume puts pc after the
 * original. */
Test(insn_a64, ool_slot_runs)
{
	static const uint32_t insns[] = { 0x91001020 /* add x0, x1, #4 */,
					  0xd53b4202 /* mrs x2, nzcv */,
					  0xd503233f /* paciasp */ };
	size_t slot_off = MID + 0x100, addr_off = MID - 0x10000, i;
	struct a64_in in;
	struct cpu_out out;

	xbuf_init();
	for (i = 0; i < 3; i++) {
		struct ukp_arch_insn ai;
		struct pt_regs regs;
		size_t k;

		cr_assert_eq(prep(&ai, insns[i], xaddr(addr_off), xaddr(slot_off)), 0);
		cr_assert(ai.ool);
		for (k = 0; k < img.slot_len; k += 4)
			put(slot_off + k, arch_a64_read_insn(img.slot_image + k));
		random_in(&in, 0x90000000);
		run(slot_off, &in, &out);
		cr_assert_eq(out.sig, SIGTRAP);
		cr_assert_eq(out.pc, xaddr(slot_off + 4));
		cr_assert_eq(out.word, 0xd42000c0u);	/* brk #6 */
		if (i == 0)
			cr_assert_eq(out.x[0], in.x[1] + 4);
		if (i == 1)
			cr_assert_eq(out.x[2], 0x90000000u);
		regs_from(&regs, &in, out.pc);
		arch_resume_ool(&ai, xaddr(addr_off), xaddr(slot_off), &regs);
		cr_assert_eq(regs.pc, xaddr(addr_off) + 4);
	}
}

/* The boost image at slot + 16 runs the instruction and lands at
 * addr + 4, from below and from above the slot. */
Test(insn_a64, boost_image_runs)
{
	static const uint32_t insns[] = { 0x91001020 /* add x0, x1, #4 */,
					  0xd53b4202 /* mrs x2, nzcv */,
					  0xf9400420 /* ldr x0, [x1, #8] */ };
	static const long addr_offs[] = { -0x100000, 0x100000, -0x40, 0x1000 };
	size_t slot_off = MID, i, j;
	struct a64_in in;
	struct cpu_out out;

	xbuf_init();
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 4; j++) {
			size_t addr_off = (size_t)((long)slot_off + addr_offs[j]);
			struct ukp_arch_insn ai;
			uint64_t word = rnd();

			cr_assert_eq(prep(&ai, insns[i], xaddr(addr_off), xaddr(slot_off)), 0);
			cr_assert(ai.ool && ai.boostable, "%08x", insns[i]);
			cr_assert_eq(img.boost_len, 8);
			cr_assert_eq(arch_a64_read_insn(img.boost_image), insns[i]);
			put(slot_off + UKP_BOOST_OFFSET, arch_a64_read_insn(img.boost_image));
			put(slot_off + UKP_BOOST_OFFSET + 4,
			    arch_a64_read_insn(img.boost_image + 4));
			random_in(&in, 0x30000000);
			in.x[1] = (uint64_t)(uintptr_t)&word - 8;
			run(slot_off + UKP_BOOST_OFFSET, &in, &out);
			cr_assert_eq(out.sig, SIGTRAP);
			cr_assert_eq(out.pc, xaddr(addr_off) + 4, "%08x: landed at %#" PRIx64,
				     insns[i], out.pc);
			cr_assert_eq(out.word, FILL_INSN);
			if (i == 0)
				cr_assert_eq(out.x[0], in.x[1] + 4);
			if (i == 1)
				cr_assert_eq(out.x[2], 0x30000000u);
			if (i == 2)
				cr_assert_eq(out.x[0], word);
		}
	}
}

Test(insn_a64, boost_reach)
{
	struct ukp_arch_insn ai;
	uintptr_t addr = 0x40000000;

	/* b reaches +-128 MiB from slot + 20 */
	cr_assert_eq(prep(&ai, 0x91001020, addr, addr + 4 - 20 + 0x8000000), 0);
	cr_assert(ai.ool && ai.boostable);
	cr_assert_eq(arch_a64_read_insn(img.boost_image + 4), 0x16000000u);
	cr_assert_eq(prep(&ai, 0x91001020, addr, addr + 4 - 20 + 0x8000000 + 4), 0);
	cr_assert(ai.ool && !ai.boostable);
	cr_assert_eq(img.boost_len, 0);
	cr_assert_eq(prep(&ai, 0x91001020, addr, addr + 4 - 20 - 0x8000000 + 4), 0);
	cr_assert(ai.ool && ai.boostable);
	cr_assert_eq(arch_a64_read_insn(img.boost_image + 4), 0x15ffffffu);
	cr_assert_eq(prep(&ai, 0x91001020, addr, addr + 4 - 20 - 0x8000000), 0);
	cr_assert(ai.ool && !ai.boostable);
	/* svc: never boosted, blocking */
	cr_assert_eq(prep(&ai, 0xd4000001, addr, addr + 0x1000), 0);
	cr_assert(ai.ool && ai.blocking && !ai.boostable);
}

/* -------------------------------------------- libc, against objdump */

struct dis_line {
	uint64_t addr;
	uint32_t insn;
	char mn[24];
	char ops[160];
};

/* One instruction line of objdump -d, or false. */
static bool parse_dis(const char *line, struct dis_line *d)
{
	const char *t1, *t2, *t3;
	char *end;
	size_t n;

	d->addr = strtoull(line, &end, 16);
	if (end == line || *end != ':' || end[1] != '\t')
		return false;
	t1 = end + 2;
	d->insn = (uint32_t)strtoul(t1, &end, 16);
	if (end - t1 != 8)
		return false;
	t2 = strchr(t1, '\t');
	if (!t2)
		return false;
	t2++;
	t3 = strchr(t2, '\t');
	n = t3 ? (size_t)(t3 - t2) : strcspn(t2, " \n");
	if (n == 0 || n >= sizeof(d->mn))
		return false;
	memcpy(d->mn, t2, n);
	d->mn[n] = 0;
	while (n && d->mn[n - 1] == ' ')
		d->mn[--n] = 0;
	d->ops[0] = 0;
	if (t3) {
		snprintf(d->ops, sizeof(d->ops), "%s", t3 + 1);
		d->ops[strcspn(d->ops, "\n")] = 0;
		end = strstr(d->ops, "//");
		if (end)
			*end = 0;
	}
	return true;
}

static FILE *open_listing(void)
{
	const char *path = getenv("UKP_A64_LIBC_DIS");
	FILE *f;

	cr_assert(path && *path, "UKP_A64_LIBC_DIS must name the objdump -d listing of libc");
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	return f;
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

static int cond_number(const char *c)
{
	static const char *const names[16] = { "eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc",
					       "hi", "ls", "ge", "lt", "gt", "le", "al", "nv" };
	int i;

	if (!strcmp(c, "hs"))
		return 2;
	if (!strcmp(c, "lo"))
		return 3;
	for (i = 0; i < 16; i++)
		if (!strcmp(c, names[i]))
			return i;
	return -1;
}

/* x5 / w5 / xzr / wzr / sp -> number, or -1 */
static int reg_number(const char *op, bool *is64)
{
	*is64 = op[0] == 'x';
	if (op[0] != 'x' && op[0] != 'w')
		return -1;
	if (!strncmp(op + 1, "zr", 2))
		return 31;
	if (op[1] < '0' || op[1] > '9')
		return -1;
	return atoi(op + 1);
}

/* The address objdump prints in the last operand ("... 2a1f0 <sym>"). */
static uint64_t last_target(const char *ops)
{
	const char *p = strrchr(ops, ',');

	p = p ? p + 1 : ops;
	while (*p == ' ')
		p++;
	return strtoull(p, NULL, 16);
}

static const char *const excl_mn[] = { "ldxr", "ldxrb", "ldxrh", "ldaxr", "ldaxrb", "ldaxrh",
				       "stxr", "stxrb", "stxrh", "stlxr", "stlxrb", "stlxrh",
				       "ldxp", "ldaxp", "stxp", "stlxp", NULL };
static const char *const pac_branch_mn[] = { "braa", "brab", "braaz", "brabz", "blraa", "blrab",
					     "blraaz", "blrabz", "retaa", "retab", "eret",
					     "eretaa", "eretab", "drps", NULL };
static const char *const exception_mn[] = { "brk", "hlt", "hvc", "smc", "udf", "dcps1",
					    "dcps2", "dcps3", ".inst", NULL };

/* What the decoder must say of one objdump line; fails the test if not. */
static void check_line(const struct dis_line *d, unsigned int *counts)
{
	static const struct { const char *mn; int sim; } direct[] = {
		{ "b", UKP_SIM_B }, { "bl", UKP_SIM_BL }, { "cbz", UKP_SIM_CBZ },
		{ "cbnz", UKP_SIM_CBNZ }, { "tbz", UKP_SIM_TBZ }, { "tbnz", UKP_SIM_TBNZ },
		{ "br", UKP_SIM_BR }, { "blr", UKP_SIM_BLR }, { "ret", UKP_SIM_RET },
		{ "adr", UKP_SIM_ADR }, { "adrp", UKP_SIM_ADRP },
	};
	struct ukp_arch_insn ai;
	bool literal = !strchr(d->ops, '[') && (!strcmp(d->mn, "ldr") || !strcmp(d->mn, "ldrsw") ||
						!strcmp(d->mn, "prfm"));
	int want_sim = UKP_SIM_NONE, want_err = 0, cond = -1, ret;
	uint8_t b[4];
	bool is64;
	size_t i;

	for (i = 0; i < sizeof(direct) / sizeof(direct[0]); i++)
		if (!strcmp(d->mn, direct[i].mn))
			want_sim = direct[i].sim;
	if (!strncmp(d->mn, "b.", 2) || !strncmp(d->mn, "bc.", 3)) {
		want_sim = UKP_SIM_BCOND;
		cond = cond_number(strchr(d->mn, '.') + 1);
		cr_assert(cond >= 0, "%s", d->mn);
	}
	if (literal) {
		if (!strcmp(d->mn, "ldrsw"))
			want_sim = UKP_SIM_LDRSW_LIT;
		else if (!strcmp(d->mn, "prfm") || (d->ops[0] != 'x' && d->ops[0] != 'w'))
			want_err = -EOPNOTSUPP;
		else
			want_sim = d->ops[0] == 'x' ? UKP_SIM_LDR_LIT64 : UKP_SIM_LDR_LIT32;
	}
	if (in_list(d->mn, excl_mn))
		want_err = -EINVAL;
	if (in_list(d->mn, pac_branch_mn) || !strcmp(d->mn, "tstart") ||
	    !strcmp(d->mn, "tcancel") || !strncmp(d->mn, "cpy", 3) ||
	    (!strncmp(d->mn, "set", 3) && strncmp(d->mn, "setf", 4)))
		want_err = -EOPNOTSUPP;
	if (in_list(d->mn, exception_mn))
		want_err = -EILSEQ;

	ret = prep(&ai, d->insn, d->addr, d->addr + 0x10000);
	cr_assert_eq(ret, want_err, "%" PRIx64 ": %08x %s %s: prepare %d (%s), want %d", d->addr,
		     d->insn, d->mn, d->ops, ret, ai.why ? ai.why : "", want_err);
	le32(b, d->insn);
	cr_assert_eq(arch_insn_length(b, 4), !strcmp(d->mn, ".inst") ? 0u : 4u,
		     "%08x %s: length", d->insn, d->mn);
	if (ret) {
		counts[ret == -EINVAL ? 1 : ret == -EOPNOTSUPP ? 2 : 3]++;
		return;
	}
	if (want_sim == UKP_SIM_NONE) {
		cr_assert(ai.ool, "%" PRIx64 ": %08x %s %s: simulated as %d", d->addr, d->insn,
			  d->mn, d->ops, ai.sim);
		cr_assert_eq(ai.blocking, !strcmp(d->mn, "svc"));
		cr_assert_eq(arch_a64_read_insn(img.slot_image), d->insn);
		if (ai.boostable) {
			uint32_t j = arch_a64_read_insn(img.boost_image + 4);
			int64_t rel = (int64_t)((uint64_t)(j & 0x3ffffff) << 38) >> 36;

			cr_assert_eq(j & 0xfc000000u, 0x14000000u);
			cr_assert_eq(d->addr + 0x10000 + UKP_BOOST_OFFSET + 4 + (uint64_t)rel,
				     d->addr + 4);
			counts[5]++;
		}
		counts[4]++;
		return;
	}
	cr_assert(!ai.ool && ai.sim == want_sim, "%" PRIx64 ": %08x %s %s: sim %d want %d",
		  d->addr, d->insn, d->mn, d->ops, ai.sim, want_sim);
	counts[0]++;
	switch (want_sim) {
	case UKP_SIM_BR:
	case UKP_SIM_BLR:
	case UKP_SIM_RET:
		cr_assert_eq(ai.reg, d->ops[0] ? reg_number(d->ops, &is64) : 30, "%s %s", d->mn,
			     d->ops);
		return;
	case UKP_SIM_ADRP:
		cr_assert_eq((d->addr & ~0xfffull) + (uint64_t)ai.imm, last_target(d->ops),
			     "%" PRIx64 ": %s %s", d->addr, d->mn, d->ops);
		break;
	default:
		cr_assert_eq(d->addr + (uint64_t)ai.imm, last_target(d->ops),
			     "%" PRIx64 ": %s %s", d->addr, d->mn, d->ops);
		break;
	}
	if (want_sim == UKP_SIM_BCOND)
		cr_assert_eq(ai.cond, cond, "%s", d->mn);
	if (want_sim != UKP_SIM_B && want_sim != UKP_SIM_BL && want_sim != UKP_SIM_BCOND) {
		cr_assert_eq(ai.reg, reg_number(d->ops, &is64), "%s %s", d->mn, d->ops);
		if (want_sim == UKP_SIM_CBZ || want_sim == UKP_SIM_CBNZ)
			cr_assert_eq(ai.is64, is64, "%s %s", d->mn, d->ops);
		if (want_sim == UKP_SIM_TBZ || want_sim == UKP_SIM_TBNZ)
			cr_assert_eq(ai.bit, atoi(strchr(d->ops, '#') + 1), "%s %s", d->mn, d->ops);
	}
}

/* Every instruction of libc: classified as objdump's mnemonic says, the
 * branch targets and registers as objdump decodes them. */
Test(insn_a64, libc_every_instruction)
{
	static const char *const names[] = { "simulated", "EINVAL", "EOPNOTSUPP", "EILSEQ",
					     "out of line", "of which boostable" };
	unsigned int counts[6] = { 0 }, first = 0, i;
	struct dis_line d;
	char line[512];
	bool at_start = false;
	FILE *f = open_listing();

	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, ">:\n")) {
			at_start = true;
			continue;
		}
		if (!parse_dis(line, &d))
			continue;
		check_line(&d, counts);
		first += at_start;
		at_start = false;
	}
	fclose(f);
	for (i = 0; i < 6; i++)
		cr_log_info("libc: %u %s", counts[i], names[i]);
	cr_log_info("libc: %u functions", first);
	/* the listing was libc: thousands of functions, every class met */
	cr_assert_gt(first, 2000u);
	cr_assert_gt(counts[0], 10000u);
	cr_assert_gt(counts[1], 0u);
	cr_assert_gt(counts[3], 0u);
	cr_assert_gt(counts[5], 100000u);
}

/* arch_check_boundary on every instruction of every libc function, against
 * the exclusives objdump names: -EINVAL exactly where the last exclusive
 * within 128 bytes before is a load-exclusive. */
Test(insn_a64, libc_boundaries)
{
	static uint8_t code[1 << 20];
	struct dis_line d;
	char line[512];
	size_t n = 0, inside = 0, total = 0;
	uint64_t start = 0;
	int64_t last_ld = -1, last_st = -1;
	FILE *f = open_listing();

	while (fgets(line, sizeof(line), f)) {
		bool is_ld, is_st;
		int want, got;
		size_t off;

		if (!parse_dis(line, &d)) {
			if (strstr(line, ">:\n") || strstr(line, "\t...")) {
				n = 0;	/* a function starts, or a gap */
				last_ld = last_st = -1;
			}
			continue;
		}
		if (n == 0)
			start = d.addr;
		if (d.addr != start + n || n + 4 > sizeof(code)) {
			n = 0;
			start = d.addr;
			last_ld = last_st = -1;
		}
		le32(code + n, d.insn);
		off = n;
		n += 4;
		want = last_ld >= 0 && last_ld > last_st && (int64_t)off - last_ld <= 128 ?
		       -EINVAL : 0;
		got = arch_check_boundary(code, off, n);
		cr_assert_eq(got, want, "%" PRIx64 " (+%zu) %s: %d want %d", d.addr, off, d.mn, got,
			     want);
		inside += got == -EINVAL;
		total++;
		is_ld = in_list(d.mn, excl_mn) && d.mn[0] == 'l';
		is_st = in_list(d.mn, excl_mn) && d.mn[0] == 's';
		if (is_ld)
			last_ld = (int64_t)off;
		if (is_st)
			last_st = (int64_t)off;
	}
	fclose(f);
	cr_log_info("libc: %zu of %zu instructions inside exclusive sequences", inside, total);
	cr_assert_gt(inside, 10u);
	cr_assert_gt(total, 200000u);
}

/* ------------------------------------------------------- relocation */

/*
 * Relocate insn at addr_off to dest_off, then run the original and the
 * copy on the CPU with the same registers (lit: 8 bytes put at lit_off
 * before each run): the same registers after both, and the copy ends
 * where the original does (its fall-through: the end of the copy).
 */
static void check_reloc(uint32_t insn, size_t addr_off, size_t dest_off, const struct a64_in *in,
			size_t want_len, enum arch_reloc_end want_end, const uint64_t *lit,
			size_t lit_off)
{
	uint8_t b[4], copy[UKP_OPT_RELOC_MAX + 8];
	enum arch_reloc_end ends;
	const char *why = NULL;
	struct cpu_out o1, o2;
	size_t n = 0, k;
	int ret, i;

	le32(b, insn);
	ret = arch_relocate_insn(b, 4, xaddr(addr_off), xaddr(dest_off), copy, &n, &ends, &why);
	cr_assert_eq(ret, 4, "%08x: %d (%s)", insn, ret, why ? why : "");
	cr_assert_eq(n, want_len, "%08x: %zu bytes, want %zu", insn, n, want_len);
	cr_assert_eq(ends, want_end, "%08x: ends %d", insn, ends);

	if (lit) {
		put(lit_off, (uint32_t)*lit);
		put(lit_off + 4, (uint32_t)(*lit >> 32));
	}
	put(addr_off, insn);
	run(addr_off, in, &o1);
	if (lit) {
		put(lit_off, (uint32_t)*lit);
		put(lit_off + 4, (uint32_t)(*lit >> 32));
	}
	for (k = 0; k < n; k += 4)
		put(dest_off + k, arch_a64_read_insn(copy + k));
	run(dest_off, in, &o2);

	cr_assert_eq(o1.sig, SIGTRAP, "%08x: original ended in %d", insn, o1.sig);
	cr_assert_eq(o2.sig, SIGTRAP, "%08x: copy ended in %d at %#" PRIx64, insn, o2.sig, o2.pc);
	cr_assert_eq(o2.word, FILL_INSN);
	if (o1.pc == xaddr(addr_off) + 4)
		cr_assert_eq(o2.pc, xaddr(dest_off) + n, "%08x: copy fell through to %#" PRIx64,
			     insn, o2.pc);
	else
		cr_assert_eq(o2.pc, o1.pc, "%08x: copy went to %#" PRIx64 ", original %#" PRIx64,
			     insn, o2.pc, o1.pc);
	for (i = 0; i < 31; i++)
		cr_assert_eq(o2.x[i], o1.x[i], "%08x: x%d copy %#" PRIx64 ", original %#" PRIx64,
			     insn, i, o2.x[i], o1.x[i]);
}

#define NEAR_A 0x200000u	/* addr */
#define NEAR_D 0x201000u	/* dest within +-1 MiB and +-32 KiB */
#define FAR_A 0x080000u
#define FAR_D 0x380000u		/* 3 MiB away */

static int relocate_err(uint32_t insn, uintptr_t addr, uintptr_t dest)
{
	uint8_t b[4], copy[UKP_OPT_RELOC_MAX];
	enum arch_reloc_end ends;
	const char *why = NULL;
	size_t n;
	int ret;

	le32(b, insn);
	ret = arch_relocate_insn(b, 4, addr, dest, copy, &n, &ends, &why);
	if (ret < 0)
		cr_assert(why && *why);
	return ret;
}

Test(insn_a64, reloc_plain_and_leaving)
{
	struct a64_in in;

	xbuf_init();
	random_in(&in, 0);
	check_reloc(0x91001020, NEAR_A, FAR_D, &in, 4, ARCH_RELOC_NEXT, NULL, 0);	/* add */
	check_reloc(enc_b(false, 0x100), FAR_A, FAR_D, &in, 4, ARCH_RELOC_LEAVES, NULL, 0);
	check_reloc(enc_b(false, -0x40000), FAR_D, FAR_A, &in, 4, ARCH_RELOC_LEAVES, NULL, 0);
	in.x[7] = xaddr(0x300000);
	check_reloc(enc_br(0, 7), FAR_A, FAR_D, &in, 4, ARCH_RELOC_LEAVES, NULL, 0);
	in.x[30] = xaddr(0x300100);
	check_reloc(enc_br(2, 30), FAR_A, FAR_D, &in, 4, ARCH_RELOC_LEAVES, NULL, 0);
	/* b.al leaves too */
	check_reloc(enc_bcond(14, 0x40000, false), FAR_A, FAR_D, &in, 4, ARCH_RELOC_LEAVES, NULL,
		    0);
}

Test(insn_a64, reloc_conditional_near_and_far)
{
	struct a64_in in;
	unsigned int cond, flags, bit;

	xbuf_init();
	for (cond = 0; cond < 14; cond++) {
		for (flags = 0; flags < 16; flags += 5) {
			random_in(&in, (uint64_t)flags << 28);
			check_reloc(enc_bcond(cond, 0x200, false), NEAR_A, NEAR_D, &in, 4,
				    ARCH_RELOC_NEXT, NULL, 0);
			check_reloc(enc_bcond(cond, -0x400, false), FAR_A + 0x1000, FAR_D, &in, 8,
				    ARCH_RELOC_NEXT, NULL, 0);
		}
	}
	for (bit = 0; bit < 64; bit += 9) {
		random_in(&in, 0);
		in.x[3] = rnd() | 1ull << bit;
		in.x[4] = in.x[3] & ~(1ull << bit);
		check_reloc(enc_tb(false, bit, 3, 0x100), NEAR_A, NEAR_D, &in, 4, ARCH_RELOC_NEXT,
			    NULL, 0);
		check_reloc(enc_tb(false, bit, 4, 0x100), NEAR_A, NEAR_D + 0x10000, &in, 8,
			    ARCH_RELOC_NEXT, NULL, 0);
		check_reloc(enc_tb(true, bit, 3, -0x100), NEAR_A, NEAR_D + 0x10000, &in, 8,
			    ARCH_RELOC_NEXT, NULL, 0);
		check_reloc(enc_tb(true, bit, 4, -0x100), NEAR_A, NEAR_D + 0x10000, &in, 8,
			    ARCH_RELOC_NEXT, NULL, 0);
	}
	random_in(&in, 0);
	in.x[5] = 0;
	in.x[6] = 0x100000000u;
	check_reloc(enc_cb(false, true, 5, 0x80), FAR_A, FAR_D, &in, 8, ARCH_RELOC_NEXT, NULL, 0);
	check_reloc(enc_cb(true, true, 5, 0x80), FAR_A, FAR_D, &in, 8, ARCH_RELOC_NEXT, NULL, 0);
	check_reloc(enc_cb(false, false, 6, 0x80), FAR_A, FAR_D, &in, 8, ARCH_RELOC_NEXT, NULL,
		    0);
	check_reloc(enc_cb(true, false, 6, 0x80), NEAR_A, NEAR_D, &in, 4, ARCH_RELOC_NEXT, NULL,
		    0);
}

Test(insn_a64, reloc_calls)
{
	struct a64_in in;

	xbuf_init();
	random_in(&in, 0);
	check_reloc(enc_b(true, 0x1000), FAR_A, FAR_D, &in, 16, ARCH_RELOC_CALL, NULL, 0);
	check_reloc(enc_b(true, -0x1000), FAR_D, FAR_A, &in, 16, ARCH_RELOC_CALL, NULL, 0);
	in.x[5] = xaddr(0x300000);
	check_reloc(enc_br(1, 5), FAR_A, FAR_D, &in, 16, ARCH_RELOC_CALL, NULL, 0);
	cr_assert_eq(relocate_err(enc_br(1, 30), 0x10000, 0x20000), -EOPNOTSUPP);
	if (set_gcs(true))
		cr_assert_eq(relocate_err(enc_b(true, 0x1000), 0x10000, 0x20000), -EOPNOTSUPP);
	set_gcs(false);
}

Test(insn_a64, reloc_adr_adrp)
{
	static const int64_t imms[] = { 0, 0x123, -0x7f8, 0xfffff, -0x100000 };
	struct a64_in in;
	int64_t rel;
	size_t i;

	xbuf_init();
	for (i = 0; i < sizeof(imms) / sizeof(imms[0]); i++) {
		random_in(&in, 0);
		/* adr reaches the target from dest only when the target is
		 * within 1 MiB of it; else adrp + add */
		rel = (int64_t)NEAR_A + imms[i] - (int64_t)NEAR_D;
		check_reloc(enc_adr(false, imms[i], 9), NEAR_A, NEAR_D, &in,
			    rel >= -0x100000 && rel < 0x100000 ? 4 : 8, ARCH_RELOC_NEXT, NULL, 0);
		rel = (int64_t)(FAR_A + 4 * i) + imms[i] - (int64_t)FAR_D;
		check_reloc(enc_adr(false, imms[i], 9), FAR_A + 4 * i, FAR_D, &in,
			    rel >= -0x100000 && rel < 0x100000 ? 4 : 8, ARCH_RELOC_NEXT, NULL, 0);
		check_reloc(enc_adr(false, imms[i], 9), FAR_D - 0x80000, FAR_A, &in, 8,
			    ARCH_RELOC_NEXT, NULL, 0);
		/* adrp: the page is 4 GiB back from addr, more from dest */
		if (imms[i] == -0x100000)
			cr_assert_eq(relocate_err(enc_adr(true, imms[i], 10), xaddr(FAR_A),
						  xaddr(FAR_D)), -EINVAL);
		else
			check_reloc(enc_adr(true, imms[i], 10), FAR_A + 4 * i, FAR_D, &in, 4,
				    ARCH_RELOC_NEXT, NULL, 0);
		check_reloc(enc_adr(false, imms[i], 31), FAR_A, FAR_D, &in, 4, ARCH_RELOC_NEXT,
			    NULL, 0);
	}
}

Test(insn_a64, reloc_ldr_literal)
{
	struct a64_in in;
	uint64_t v = 0x8123456789abcdefu;
	unsigned int opc;

	xbuf_init();
	for (opc = 0; opc < 3; opc++) {
		random_in(&in, 0);
		/* near: re-based */
		check_reloc(enc_ldr_lit(opc, 0x40, 2), NEAR_A, NEAR_D, &in, 4, ARCH_RELOC_NEXT, &v,
			    NEAR_A + 0x40);
		/* far, literal 8-aligned: adrp + ldr [x, #lo12] */
		check_reloc(enc_ldr_lit(opc, 0x40, 2), FAR_A, FAR_D, &in, 8, ARCH_RELOC_NEXT, &v,
			    FAR_A + 0x40);
		/* far, literal 4 mod 8: the X load needs the add */
		check_reloc(enc_ldr_lit(opc, 0x44, 3), FAR_A, FAR_D, &in, opc == 1 ? 12 : 8,
			    ARCH_RELOC_NEXT, &v, FAR_A + 0x44);
	}
	cr_assert_eq(relocate_err(enc_ldr_lit(1, 0x40, 31), 0x0, 0x400000), -EINVAL);
}

Test(insn_a64, reloc_refusals_and_other_literals)
{
	uint8_t b[4], copy[UKP_OPT_RELOC_MAX];
	enum arch_reloc_end ends;
	const char *why;
	size_t n;

	cr_assert_eq(relocate_err(enc_b(false, 0x100), 0, 0x8000000 + 0x200), -EINVAL);
	cr_assert_eq(relocate_err(enc_b(true, 0x100), 0, 0x8000000 + 0x200), -EINVAL);
	cr_assert_eq(relocate_err(enc_bcond(0, 0x100, false), 0, 0x8000000 + 0x200), -EINVAL);
	cr_assert_eq(relocate_err(enc_adr(true, 0, 1), 0, 0x100000000ull + 0x1000), -EINVAL);
	cr_assert_eq(relocate_err(0xd4000001, 0x1000, 0x2000), -EOPNOTSUPP);	/* svc */
	cr_assert_eq(relocate_err(0xc85f7c20, 0x1000, 0x2000), -EOPNOTSUPP);	/* ldxr */
	cr_assert_eq(relocate_err(0xd71f0822, 0x1000, 0x2000), -EOPNOTSUPP);	/* braa */
	cr_assert_eq(relocate_err(0xd503205f, 0x1000, 0x2000), -EOPNOTSUPP);	/* wfe */
	cr_assert_eq(relocate_err(0x1d010440, 0x1000, 0x2000), -EOPNOTSUPP);	/* cpyp */
	cr_assert_eq(relocate_err(0xd4200000, 0x1000, 0x2000), -EILSEQ);	/* brk */
	cr_assert_eq(relocate_err(0x00000000, 0x1000, 0x2000), -EILSEQ);	/* udf */

	/* retaa: authenticated with sp, copied as is */
	le32(b, 0xd65f0bff);
	cr_assert_eq(arch_relocate_insn(b, 4, 0x1000, 0x9000, copy, &n, &ends, &why), 4);
	cr_assert(n == 4 && ends == ARCH_RELOC_LEAVES && arch_a64_read_insn(copy) == 0xd65f0bff);
	/* ldr d1, lit: re-based within reach, refused beyond */
	le32(b, 0x5c000041);	/* ldr d1, .+8 */
	cr_assert_eq(arch_relocate_insn(b, 4, 0x100000, 0x100400, copy, &n, &ends, &why), 4);
	cr_assert_eq(arch_a64_read_insn(copy), 0x5c000041u | ((uint32_t)(-0x3f8 / 4) & 0x7ffff) << 5);
	cr_assert_eq(relocate_err(0x5c000041, 0x100000, 0x400000), -EINVAL);
	/* prfm (literal) beyond reach: a nop */
	le32(b, 0xd8000040);
	cr_assert_eq(arch_relocate_insn(b, 4, 0x100000, 0x400000, copy, &n, &ends, &why), 4);
	cr_assert_eq(arch_a64_read_insn(copy), 0xd503201fu);
}

Test(insn_a64, patchable_nops)
{
	uint8_t code[8];

	le32(code, 0xd503201f);
	le32(code + 4, 0xd503201f);
	cr_assert_eq(arch_patchable_nops(code, 8), 4u);
	cr_assert_eq(arch_patchable_nops(code, 4), 4u);
	cr_assert_eq(arch_patchable_nops(code, 3), 0u);
	le32(code, 0xd503245f);	/* bti c */
	cr_assert_eq(arch_patchable_nops(code, 8), 0u);
	le32(code, 0xd503233f);	/* paciasp */
	cr_assert_eq(arch_patchable_nops(code, 8), 0u);
}

/* SPDX-License-Identifier: MIT */
/*
 * optprobe.c - x86-64 jump optimization: the detour buffer of each
 * optimized probe (the kernel's arch_prepare_optimized_kprobe) and the
 * choice of how the shared template (optprobe_tramp.S) keeps the vector
 * state. Everything here is [reg].
 */
#include <cpuid.h>
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "asm_offsets.h"
#include "detour.h"
#include "go_leaf.h"
#include "arch/x86_64/go_prologue.h" /* (common/) */

/* Read by optprobe_tramp.S: 0 save with XSAVE(C)/FXSAVE, 1 xmm0-15 by
 * hand, 2 ymm0-15 by hand. */
#define VEC_FULL 0
#define VEC_SSE  1
#define VEC_AVX  2
__attribute__((visibility("hidden"))) uint32_t ukp_opt_vec_mode = VEC_FULL;

/* XCR0 components a C handler does not change: x87, SSE and AVX are
 * saved by hand; MPX bounds (3, 4), PKRU (9) and AMX (17, 18) are not
 * touched by compiled C code. Anything else (AVX-512: 5-7) takes the
 * XSAVE path. */
#define XCR0_BY_HAND ((1ULL << 0) | (1ULL << 1) | (1ULL << 2))
#define XCR0_UNTOUCHED ((1ULL << 3) | (1ULL << 4) | (1ULL << 9) | (1ULL << 17) | (1ULL << 18))

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* Tests force the slow path (1) to check it too. */
int ukp_opt_force_xsave;

/* [reg] */
int arch_opt_init(void)
{
	unsigned int a = 0, b = 0, c = 0, d = 0;
	uint64_t xcr0;
	int ret = arch_kretprobe_init(); /* sizes the XSAVE area we share */

	if (ret)
		return ret;
	if (ukp_opt_force_xsave) {
		ukp_opt_vec_mode = VEC_FULL;
		return 0;
	}
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) {
		ukp_opt_vec_mode = (d & bit_SSE) ? VEC_SSE : VEC_FULL;
		return 0;
	}
	xcr0 = xgetbv0();
	if (xcr0 & ~(XCR0_BY_HAND | XCR0_UNTOUCHED))
		ukp_opt_vec_mode = VEC_FULL;
	else
		ukp_opt_vec_mode = (xcr0 & (1ULL << 2)) ? VEC_AVX : VEC_SSE;
	return 0;
}

static void put_rel32(uint8_t *p, int64_t rel)
{
	int32_t v = (int32_t)rel;

	memcpy(p, &v, 4);
}

/* prefixes a punned jump may start with */
#define MAX_PAD 3

static bool fits_rel32(int64_t rel)
{
	return rel == (int32_t)rel;
}

/* The detour's entry, up to UKP_OPT_COPY_OFFSET. */
static const uint8_t entry_code[UKP_OPT_COPY_OFFSET] = {
	0x48, 0x8d, 0x64, 0x24, 0x80,                   /* lea -0x80(%rsp),%rsp */
	0xff, 0x35, 0, 0, 0, 0,                         /* push site(%rip) */
	0xff, 0x15, 0, 0, 0, 0,                         /* call *common(%rip) */
	0x48, 0x8d, 0xa4, 0x24, 0x88, 0x00, 0x00, 0x00, /* lea 0x88(%rsp),%rsp */
};
/* where the template comes back to (detour.h) */
_Static_assert(DETOUR_RESUME == 17, "DETOUR_RESUME");
#define LIT_SITE   (UKP_DETOUR_SIZE - 16)
#define LIT_COMMON (UKP_DETOUR_SIZE - 8)

/* [reg] */
int arch_opt_prepare(struct ukp_arch_opt *ao, const uint8_t *code, size_t avail, uintptr_t addr,
		     uintptr_t detour, const void *site, size_t ftrace_len, int pun_pad,
		     const char **why)
{
	uint8_t *img = ao->image;
	size_t pos = 0, out = UKP_OPT_COPY_OFFSET;
	bool pun = pun_pad >= 0;
	/* a punned jump replaces the first instruction only */
	size_t need = pun ? arch_insn_length(code, avail) : UKP_OPT_JUMP_SIZE;
	size_t jlen = pun ? (size_t)pun_pad + UKP_OPT_JUMP_SIZE : UKP_OPT_JUMP_SIZE;
	uint8_t jump[UKP_OPT_JUMP_SIZE + MAX_PAD];
	enum arch_reloc_end ended = ARCH_RELOC_NEXT;
	uintptr_t common = (uintptr_t)ukp_optprobe_common;

	memset(ao, 0, sizeof(*ao));
	memset(img, UKP_BREAKPOINT_INSN, sizeof(ao->image));
	memcpy(img, entry_code, sizeof(entry_code));
	put_rel32(img + 7, (int64_t)LIT_SITE - 11);
	put_rel32(img + 13, (int64_t)LIT_COMMON - 17);
	if (pun && (ftrace_len || !need || need >= UKP_OPT_JUMP_SIZE || pun_pad > MAX_PAD ||
		    (size_t)pun_pad >= need || avail < jlen)) {
		*why = "no punned jump here";
		return -EINVAL;
	}
	if (ftrace_len)
		pos = ftrace_len;	/* NOPs: nothing to copy */
	while (pos < need && ended == ARCH_RELOC_NEXT) {
		size_t olen = 0;
		int n;

		if (pos >= avail) {
			*why = "the code ends before the region";
			return -EINVAL;
		}
		if (ao->ninsn == UKP_OPT_MAX_INSNS) {
			*why = "too many instructions in the region";
			return -EINVAL;
		}
		if (out + UKP_OPT_RELOC_MAX + 5 > LIT_SITE) {
			*why = "the relocated region does not fit in the detour";
			return -EINVAL;
		}
		n = arch_relocate_insn(code + pos, avail - pos, addr + pos, detour + out, img + out,
				       &olen, &ended, why);
		if (n < 0)
			return n;
		ao->map_orig[ao->ninsn] = (uint8_t)pos;
		ao->map_copy[ao->ninsn] = (uint8_t)(out - UKP_OPT_COPY_OFFSET);
		ao->ninsn++;
		pos += (size_t)n;
		out += olen;
	}
	ao->code_len = (uint8_t)pos;
	/* A relocated call pushes addr + pos: the callee must come back to
	 * the first byte after the region, not into it. */
	if (ended == ARCH_RELOC_CALL && pos < need) {
		*why = "a call in the region is not its last instruction";
		return -EOPNOTSUPP;
	}
	/* After a ret or jmp nothing runs from the copy; the jump still
	 * needs 5 bytes: the instructions after it only have to be whole
	 * (what jumps there, and whether they are the function's or the
	 * padding after it, is the control-flow check's business). */
	while (pos < need) {
		size_t n = pos < avail ? arch_insn_length(code + pos, avail - pos) : 0;

		if (!n) {
			*why = "undecodable instruction in the region";
			return -EILSEQ;
		}
		pos += n;
	}
	if (pos > UKP_OPT_MAX_REGION) {
		*why = "the region is too long";
		return -EINVAL;
	}
	if (!fits_rel32((int64_t)detour - (int64_t)(addr + jlen))) {
		*why = "the detour is out of reach";
		return -EINVAL;
	}
	if (ended == ARCH_RELOC_NEXT) {
		/* jmp back to the first byte after the region */
		if (out + 5 > LIT_SITE ||
		    !fits_rel32((int64_t)(addr + pos) - (int64_t)(detour + out + 5))) {
			*why = "the detour is out of reach";
			return -EINVAL;
		}
		img[out] = 0xe9;
		put_rel32(img + out + 1, (int64_t)(addr + pos) - (int64_t)(detour + out + 5));
		out += 5;
	}
	ao->copy_end = (uint8_t)out;
	memcpy(img + LIT_SITE, &site, 8);
	memcpy(img + LIT_COMMON, &common, 8);
	memset(jump, UKP_OPT_PAD_PREFIX, jlen - UKP_OPT_JUMP_SIZE);
	jump[jlen - 5] = 0xe9;
	put_rel32(jump + jlen - 4, (int64_t)detour - (int64_t)(addr + jlen));
	/* The punned jump's last bytes are the next instructions' own. */
	if (pun && memcmp(jump + pos, code + pos, jlen - pos)) {
		*why = "the detour is not where the punned jump lands";
		return -EINVAL;
	}
	memcpy(ao->jump, jump, UKP_OPT_JUMP_SIZE);
	ao->len = (uint8_t)pos;
	ao->span = (uint8_t)(pos > jlen ? pos : jlen);
	return 0;
}

/* [reg] See arch.h: pad prefixes, e9 and the first L-1-pad bytes of
 * rel32 over an instruction of L < 5 bytes; rel32's other bytes are
 * those after it. */
size_t arch_opt_pun_window(const uint8_t *code, size_t avail, uintptr_t addr, unsigned int pad,
			   uintptr_t *lo, uintptr_t *hi)
{
	size_t l = avail >= UKP_OPT_JUMP_SIZE + MAX_PAD ? arch_insn_length(code, avail) : 0;
	uint32_t rel, free_bits;

	if (!l || l >= UKP_OPT_JUMP_SIZE || pad > MAX_PAD || pad + 1 > l)
		return 0;
	memcpy(&rel, code + pad + 1, 4);
	free_bits = (uint32_t)((1ULL << (8 * (l - 1 - pad))) - 1);
	rel &= ~free_bits;
	*lo = addr + pad + UKP_OPT_JUMP_SIZE + (uintptr_t)(int64_t)(int32_t)rel;
	*hi = *lo + free_bits;
	return l;
}

extern char ukp_optprobe_common_entry[];
extern char ukp_krp_entry_stub[];

/* [reg] See arch.h. A kretprobe's detour jumps to the stub before the
 * return trampoline, which calls its template (optprobe_tramp.S). */
void arch_opt_at_entry(struct ukp_arch_opt *ao, bool kretprobe)
{
	uintptr_t common = kretprobe ? (uintptr_t)ukp_krp_entry_stub :
				       (uintptr_t)ukp_optprobe_common_entry;

	if (kretprobe)
		ao->image[12] = 0x25;	/* jmp *common(%rip) */
	memcpy(ao->image + LIT_COMMON, &common, 8);
}

extern char ukp_optprobe_common_go[];

/* [reg] See arch.h: Go's compiler's forms (go_prologue.h). */
size_t arch_go_stack_check_len(const uint8_t *code, size_t avail)
{
	return ukp_go_prologue_len(code, avail);
}

/* [any] See arch.h: Go's compiler's forms (go_prologue.h). */
bool arch_func_exit(const uint8_t *code, size_t avail, struct arch_exit *e)
{
	struct ukp_go_epi g;

	if (!ukp_go_epilogue(code, avail, &g))
		return false;
	e->len = g.len;
	e->first = g.first;
	e->sp_adj = g.sp_adj;
	e->fp_at = g.fp_at;
	return true;
}

/* [reg] See arch.h. The frame the epilogue frees is sp_adj bytes below
 * the stack pointer at the function's start; a check that covers it
 * leaves more than StackLimit bytes (800) below the epilogue's stack
 * pointer (go_prologue.h). */
bool arch_go_exit_room(const uint8_t *fn, size_t fn_n, const uint8_t *code, size_t n)
{
	struct ukp_go_epi g;
	size_t cover = ukp_go_prologue_cover(fn, fn_n);

	return cover && ukp_go_epilogue(code, n, &g) && g.sp_adj <= cover;
}

/* The Go detour's entry, up to UKP_OPT_COPY_OFFSET: no red zone to step
 * over (Go code keeps nothing below its stack pointer); the template
 * returns to the lea, which drops the site, then a NOP up to the copy. */
static const uint8_t go_entry_code[UKP_OPT_COPY_OFFSET] = {
	0xff, 0x35, 0, 0, 0, 0,                         /* push site(%rip) */
	0xff, 0x15, 0, 0, 0, 0,                         /* call *common(%rip) */
	0x48, 0x8d, 0x64, 0x24, 0x08,                   /* lea 0x8(%rsp),%rsp */
	0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, /* nopl 0(%rax,%rax) */
};

/* [reg] See arch.h: the detour calls ukp_optprobe_common_go
 * (optprobe_tramp.S), which takes 16 bytes of the goroutine's stack on
 * top of the detour's 16 before it moves to the thread's own. */
int arch_opt_go(struct ukp_arch_opt *ao, const char **why)
{
	uintptr_t common = (uintptr_t)ukp_optprobe_common_go;

	(void)why;
	memcpy(ao->image, go_entry_code, sizeof(go_entry_code));
	put_rel32(ao->image + 2, (int64_t)LIT_SITE - 6);
	put_rel32(ao->image + 8, (int64_t)LIT_COMMON - 12);
	memcpy(ao->image + LIT_COMMON, &common, 8);
	ao->go = true;
	return 0;
}

extern char ukp_optprobe_goleaf_go[], ukp_optprobe_goleaf_glibc[], ukp_optprobe_goleaf_trap[];

/* Where the FS words of a Go leaf's detour are in this process
 * (go_leaf.h), or false when nowhere known: Go's own threads (m.tls),
 * glibc's (its TCB), not musl's. */
static bool goleaf_words(int32_t *ax, int32_t *r, uintptr_t *common)
{
	if (ukp_tb_go) {
		*ax = GOLEAF_GO_FS_AX;
		*r = GOLEAF_GO_FS_R;
		*common = (uintptr_t)ukp_optprobe_goleaf_go;
		return true;
	}
#if defined(__GLIBC__) && !defined(UKP_FREE)
	*ax = GOLEAF_GLIBC_FS_AX;
	*r = GOLEAF_GLIBC_FS_R;
	*common = (uintptr_t)ukp_optprobe_goleaf_glibc;
	return true;
#else
	return false;
#endif
}

/* an %fs:abs32 operand's ModRM, SIB and displacement */
static uint8_t *fs_abs(uint8_t *p, uint8_t reg, int32_t off)
{
	*p++ = (uint8_t)(0x04 | reg << 3);
	*p++ = 0x25;
	memcpy(p, &off, 4);
	return p + 4;
}

/* [reg] See arch.h: the detour of go_leaf.h, for ukp_optprobe_goleaf_*
 * (optprobe_tramp.S), which take no byte of the goroutine's stack. */
int arch_opt_go_leaf(struct ukp_arch_opt *ao, const char **why)
{
	uint8_t *img = ao->image, *p = img;
	int32_t ax, r;
	uintptr_t common;

	if (!goleaf_words(&ax, &r, &common)) {
		*why = "Go code: a leaf's entry needs the thread's words of Go's m.tls or glibc's TCB";
		return -EOPNOTSUPP;
	}
	if (!ukp_tb_gs_fast) {
		*why = "Go code: a leaf's entry needs the thread's block at its GS base (FSGSBASE)";
		return -EOPNOTSUPP;
	}
	if (ao->copy_end > GOLEAF_ENTER) {
		*why = "Go code: the relocated instruction does not fit in a leaf's detour";
		return -EINVAL;
	}
	memset(img, UKP_BREAKPOINT_INSN, UKP_OPT_COPY_OFFSET);
	memset(img + GOLEAF_ENTER, UKP_BREAKPOINT_INSN, LIT_SITE - GOLEAF_ENTER);
	*p++ = 0x64;					/* btsl $0,%fs:R */
	*p++ = 0x0f;
	*p++ = 0xba;
	p = fs_abs(p, 5, r);
	*p++ = 0;
	*p++ = 0x72;					/* jc BUSY */
	*p = (uint8_t)(GOLEAF_BUSY - (p + 1 - img));
	p++;
	*p++ = 0x64;					/* movq %rax,%fs:AX */
	*p++ = 0x48;
	*p++ = 0x89;
	p = fs_abs(p, 0, ax);
	*p++ = 0xeb;					/* jmp ENTER */
	*p = (uint8_t)(GOLEAF_ENTER - (p + 1 - img));
	p++;
	if (p - img != GOLEAF_BUSY)
		return -EINVAL;
	p = img + GOLEAF_ENTER;				/* leaq detour(%rip),%rax */
	*p++ = 0x48;
	*p++ = 0x8d;
	*p++ = 0x05;
	put_rel32(p, -(int64_t)(GOLEAF_ENTER + 7));
	p += 4;
	*p++ = 0xff;					/* jmp *common(%rip) */
	*p++ = 0x25;
	put_rel32(p, (int64_t)LIT_COMMON - (p + 4 - img));
	p += 4;
	if (p - img > GOLEAF_TAIL)
		return -EINVAL;
	/* movl $0,%fs:R: as wide as bts's load of it at the next hit (a
	 * narrower store would not forward to it: a stall) */
	p = img + GOLEAF_TAIL;
	*p++ = 0x64;
	*p++ = 0xc7;
	p = fs_abs(p, 0, r);
	memset(p, 0, 4);
	p += 4;
	*p++ = 0xeb;					/* jmp the copy */
	*p = (uint8_t)(UKP_OPT_COPY_OFFSET - (p + 1 - img));
	p++;
	if (p - img > LIT_SITE)
		return -EINVAL;
	memcpy(img + LIT_COMMON, &common, 8);
	ao->go = true;
	return 0;
}

/* [trap] See arch.h: a Go leaf's fallbacks (go_leaf.h). The detour's
 * BUSY int3 at addr (the words held by another hit of this thread), or
 * the template's ukp_optprobe_goleaf_trap (the thread's words held by
 * this hit, R the way back into the detour: freed here). The site, or
 * NULL when addr is neither. */
UKP_TRAP_TEXT const struct ukp_site *arch_go_leaf_trap(uintptr_t addr)
{
	int32_t ax, r;
	uintptr_t common, d;
	const struct ukp_site *s;

	if (addr == (uintptr_t)ukp_optprobe_goleaf_trap) {
		if (!goleaf_words(&ax, &r, &common))
			return NULL;
		__asm__ volatile("movq %%fs:(%1), %0" : "=r"(d) : "r"((intptr_t)r) : "memory");
		d -= GOLEAF_TAIL;
		memcpy(&s, (const void *)(d + LIT_SITE), sizeof(s));
		__asm__ volatile("movq $0, %%fs:(%0)" : : "r"((intptr_t)r) : "memory");
		return s;
	}
	s = ukp_slot_owner(addr, &d);
	if (!s || !s->detour || addr != s->detour + GOLEAF_BUSY ||
	    *(const uint8_t *)addr != UKP_BREAKPOINT_INSN)
		return NULL;
	return s;
}

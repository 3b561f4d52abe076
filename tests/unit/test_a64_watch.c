/* SPDX-License-Identifier: MIT */
/*
 * AArch64 data watchpoints by page protection, one instruction class at
 * a time (src/arch/aarch64/watch.c): each case is one instruction (or an
 * exclusive loop) in assembly, run by a harness that loads x0-x15 and
 * v0-v7 from a struct and stores them back. It runs twice from the same
 * state: on a plain buffer (the CPU's own result) and on a buffer inside
 * a watched range, where the library performs it. The registers (an
 * address normalized to its buffer), the vector registers and the
 * buffer's bytes must come out the same, and the handler must have seen
 * exactly the expected accesses (offset, length, read/write), the
 * instruction's address, pc past it, and the new bytes of a write.
 * Also: SVE contiguous loads and stores (predicated: the active
 * elements are the access; where qemu-user cannot return from their
 * faults, performed by calling the emulation directly on a signal frame
 * built here), sp as the base register (pre-index
 * write-back on a watched stack), pc-relative literal loads from a
 * watched read-only page, and an SVE gather the library cannot perform
 * (the program gets the fault).
 */
#include <asm/sigcontext.h>
#include <criterion/criterion.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ukprobes.h"
#include "ukp_test.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "watch/watch.h"

/* The harness's register file: x0-x15, then v0-v7. */
struct st {
	uint64_t x[16];
	uint8_t v[8][16];
};

void a64w_run(struct st *s, void (*fn)(void));
__asm__(".text\n"
	".p2align 2\n"
	".globl a64w_run\n"
	".type a64w_run, %function\n"
	"a64w_run:\n"
	"	stp x29, x30, [sp, #-32]!\n"
	"	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n"
	"	mov x19, x0\n"
	"	mov x20, x1\n"
	"	ldp q0, q1, [x19, #128]\n"
	"	ldp q2, q3, [x19, #160]\n"
	"	ldp q4, q5, [x19, #192]\n"
	"	ldp q6, q7, [x19, #224]\n"
	"	ldp x0, x1, [x19, #0]\n"
	"	ldp x2, x3, [x19, #16]\n"
	"	ldp x4, x5, [x19, #32]\n"
	"	ldp x6, x7, [x19, #48]\n"
	"	ldp x8, x9, [x19, #64]\n"
	"	ldp x10, x11, [x19, #80]\n"
	"	ldp x12, x13, [x19, #96]\n"
	"	ldp x14, x15, [x19, #112]\n"
	"	blr x20\n"
	"	stp x0, x1, [x19, #0]\n"
	"	stp x2, x3, [x19, #16]\n"
	"	stp x4, x5, [x19, #32]\n"
	"	stp x6, x7, [x19, #48]\n"
	"	stp x8, x9, [x19, #64]\n"
	"	stp x10, x11, [x19, #80]\n"
	"	stp x12, x13, [x19, #96]\n"
	"	stp x14, x15, [x19, #112]\n"
	"	stp q0, q1, [x19, #128]\n"
	"	stp q2, q3, [x19, #160]\n"
	"	stp q4, q5, [x19, #192]\n"
	"	stp q6, q7, [x19, #224]\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x29, x30, [sp], #32\n"
	"	ret\n"
	".size a64w_run, .-a64w_run\n");

/* One snippet: the instruction(s) under test, then ret. x1 is the base
 * register (the middle of the buffer), x3 an index or operand. */
#define SNIP(name, body)                                                                         \
	void name(void);                                                                         \
	__asm__(".text\n.arch armv8.4-a\n.p2align 2\n.globl " #name "\n.type " #name              \
		", %function\n" #name ":\n" body "\n\tret\n.size " #name ", .-" #name "\n")

/* integer single registers */
SNIP(s_ldr_x, "ldr x2, [x1, #8]");
SNIP(s_ldr_w, "ldr w2, [x1, #4]");
SNIP(s_ldrb, "ldrb w2, [x1, #3]");
SNIP(s_ldrh, "ldrh w2, [x1, #6]");
SNIP(s_ldrsb_x, "ldrsb x2, [x1, #5]");
SNIP(s_ldrsb_w, "ldrsb w2, [x1, #9]");
SNIP(s_ldrsh_x, "ldrsh x2, [x1, #10]");
SNIP(s_ldrsh_w, "ldrsh w2, [x1, #12]");
SNIP(s_ldrsw, "ldrsw x2, [x1, #20]");
SNIP(s_ldur, "ldur x2, [x1, #-13]");
SNIP(s_ldr_pre, "ldr x2, [x1, #16]!");
SNIP(s_ldr_post, "ldr x2, [x1], #-24");
SNIP(s_ldrsw_post, "ldrsw x2, [x1], #4");
SNIP(s_ldr_lsl, "ldr x2, [x1, x3, lsl #3]");
SNIP(s_ldr_sxtw, "ldr w2, [x1, w3, sxtw #2]");
SNIP(s_ldrb_uxtw, "ldrb w2, [x1, w3, uxtw]");
SNIP(s_ldtr, "ldtr x2, [x1, #-8]");
SNIP(s_ldr_base_dst, "ldr x1, [x1, #8]");
SNIP(s_str_x, "str x2, [x1, #8]");
SNIP(s_strb, "strb w2, [x1, #1]");
SNIP(s_strh_pre, "strh w2, [x1, #-2]!");
SNIP(s_str_w_post, "str w2, [x1], #4");
SNIP(s_stur, "stur x2, [x1, #-7]");
SNIP(s_str_reg, "str x2, [x1, x3]");
SNIP(s_sttrh, "sttrh w2, [x1, #3]");
SNIP(s_str_xzr, "str xzr, [x1, #24]");
/* integer pairs */
SNIP(s_ldp_x, "ldp x2, x4, [x1, #16]");
SNIP(s_ldp_w_post, "ldp w2, w4, [x1], #-8");
SNIP(s_ldpsw_pre, "ldpsw x2, x4, [x1, #-16]!");
SNIP(s_ldnp, "ldnp x2, x4, [x1, #32]");
SNIP(s_stp_x_pre, "stp x2, x4, [x1, #-32]!");
SNIP(s_stp_w, "stp w2, w4, [x1, #4]");
SNIP(s_stnp, "stnp x5, x6, [x1]");
/* FP/SIMD registers */
SNIP(s_ldr_q, "ldr q0, [x1, #16]");
SNIP(s_ldr_d, "ldr d1, [x1, #8]");
SNIP(s_ldr_s, "ldr s2, [x1, #4]");
SNIP(s_ldr_h, "ldr h3, [x1, #2]");
SNIP(s_ldr_b, "ldr b4, [x1, #1]");
SNIP(s_ldur_q, "ldur q5, [x1, #-3]");
SNIP(s_ldr_q_post, "ldr q0, [x1], #32");
SNIP(s_ldr_q_reg, "ldr q1, [x1, x3, lsl #4]");
SNIP(s_str_q_pre, "str q2, [x1, #-16]!");
SNIP(s_str_b, "str b3, [x1, #5]");
SNIP(s_str_d_post, "str d4, [x1], #-8");
SNIP(s_ldp_q_pre, "ldp q0, q1, [x1, #-32]!");
SNIP(s_stp_d_post, "stp d2, d3, [x1], #16");
SNIP(s_ldp_s, "ldp s4, s5, [x1, #8]");
SNIP(s_stnp_q, "stnp q6, q7, [x1, #32]");
/* structures: multiple, single lane, replicate */
SNIP(s_ld1_16b, "ld1 {v0.16b}, [x1]");
SNIP(s_ld1_8b_x4_post, "ld1 {v0.8b, v1.8b, v2.8b, v3.8b}, [x1], #32");
SNIP(s_ld1_4s_x2_postreg, "ld1 {v0.4s, v1.4s}, [x1], x3");
SNIP(s_ld2_8h, "ld2 {v0.8h, v1.8h}, [x1]");
SNIP(s_ld3_4s, "ld3 {v0.4s, v1.4s, v2.4s}, [x1]");
SNIP(s_ld4_16b, "ld4 {v4.16b, v5.16b, v6.16b, v7.16b}, [x1]");
SNIP(s_ld2_2s, "ld2 {v6.2s, v7.2s}, [x1]");
SNIP(s_st1_2d_x2, "st1 {v0.2d, v1.2d}, [x1]");
SNIP(s_st2_4h_post, "st2 {v2.4h, v3.4h}, [x1], #16");
SNIP(s_st3_16b, "st3 {v0.16b, v1.16b, v2.16b}, [x1]");
SNIP(s_st4_8b_postreg, "st4 {v0.8b, v1.8b, v2.8b, v3.8b}, [x1], x3");
SNIP(s_ld1_lane_s, "ld1 {v0.s}[1], [x1]");
SNIP(s_ld1_lane_b_post, "ld1 {v1.b}[15], [x1], #1");
SNIP(s_ld2_lane_h, "ld2 {v2.h, v3.h}[5], [x1]");
SNIP(s_ld3_lane_d_post, "ld3 {v4.d, v5.d, v6.d}[1], [x1], #24");
SNIP(s_ld4_lane_s, "ld4 {v0.s, v1.s, v2.s, v3.s}[3], [x1]");
SNIP(s_st1_lane_d, "st1 {v1.d}[1], [x1]");
SNIP(s_st2_lane_b_postreg, "st2 {v2.b, v3.b}[9], [x1], x3");
SNIP(s_st4_lane_h, "st4 {v4.h, v5.h, v6.h, v7.h}[6], [x1]");
SNIP(s_ld1r_4s, "ld1r {v0.4s}, [x1]");
SNIP(s_ld2r_8b_post, "ld2r {v1.8b, v2.8b}, [x1], #2");
SNIP(s_ld3r_1d, "ld3r {v0.1d, v1.1d, v2.1d}, [x1]");
SNIP(s_ld4r_8h, "ld4r {v4.8h, v5.8h, v6.8h, v7.8h}, [x1]");
/* acquire/release */
SNIP(s_ldar_x, "ldar x2, [x1]");
SNIP(s_ldarb, "ldarb w2, [x1]");
SNIP(s_stlr_w, "stlr w2, [x1]");
SNIP(s_stlrh, "stlrh w2, [x1]");
SNIP(s_ldapr, "ldapr x2, [x1]");
SNIP(s_ldapur, "ldapur x2, [x1, #-8]");
SNIP(s_ldapursb, "ldapursb x2, [x1, #3]");
SNIP(s_stlur, "stlur w2, [x1, #-4]");
/* exclusives: a whole loop, and a lone load-exclusive */
SNIP(s_ldxr_loop, "1: ldxr x2, [x1]\n add x2, x2, x3\n stxr w4, x2, [x1]\n cbnz w4, 1b");
SNIP(s_ldaxrb_loop, "1: ldaxrb w2, [x1]\n add w2, w2, w3\n stlxrb w4, w2, [x1]\n cbnz w4, 1b");
SNIP(s_ldxrh_loop, "1: ldxrh w2, [x1]\n eor w2, w2, w3\n stxrh w4, w2, [x1]\n cbnz w4, 1b");
SNIP(s_ldxp_loop, "1: ldxp x2, x4, [x1]\n add x2, x2, x3\n stxp w5, x2, x4, [x1]\n cbnz w5, 1b");
SNIP(s_ldaxp_w_loop,
     "1: ldaxp w2, w4, [x1]\n add w4, w4, w3\n stlxp w5, w2, w4, [x1]\n cbnz w5, 1b");
SNIP(s_ldaxr_clrex, "ldaxr w2, [x1]\n clrex");
/* LSE atomics */
SNIP(s_ldadd, "ldadd x3, x2, [x1]");
SNIP(s_ldaddalb, "ldaddalb w3, w2, [x1]");
SNIP(s_ldclrh, "ldclrh w3, w2, [x1]");
SNIP(s_ldeor_w, "ldeor w3, w2, [x1]");
SNIP(s_ldset_x, "ldsetl x3, x2, [x1]");
SNIP(s_ldsmax_x, "ldsmax x3, x2, [x1]");
SNIP(s_ldsmin_w, "ldsmina w3, w2, [x1]");
SNIP(s_ldumaxb, "ldumaxb w3, w2, [x1]");
SNIP(s_lduminh, "lduminh w3, w2, [x1]");
SNIP(s_swp_x, "swp x3, x2, [x1]");
SNIP(s_swpal_w, "swpal w3, w2, [x1]");
SNIP(s_stadd, "stadd x3, [x1]");
SNIP(s_cas_x, "cas x2, x3, [x1]");
SNIP(s_casal_w, "casal w2, w3, [x1]");
SNIP(s_casb, "casb w2, w3, [x1]");
SNIP(s_casp_x, "casp x2, x3, x4, x5, [x1]");
/* dc zva: the block that holds the address */
SNIP(s_dc_zva, "add x6, x1, x3\n dc zva, x6");

#define R HW_BREAKPOINT_R
#define W HW_BREAKPOINT_W
#define RW HW_BREAKPOINT_RW

enum need { ANY, LSE, RCPC, ILRCPC };

struct acc {
	int off;
	unsigned int len, type;
};

struct wcase {
	const char *name;
	void (*fn)(void);
	uint64_t x3;
	unsigned int watch;     /* the breakpoint's type */
	unsigned int nacc;
	struct acc acc[2];
	enum need need;
	int x2_from;            /* x2 (and x3 for casp) = the buffer's bytes at this offset */
};

#define NOX2 (-1000)
#define C(fn, x3, wt, n, a0, a1, need) { #fn, fn, x3, wt, n, { a0, a1 }, need, NOX2 }
#define A(o, l, t) { o, l, t }
#define NA { 0, 0, 0 }

static const struct wcase cases[] = {
	C(s_ldr_x, 0, RW, 1, A(8, 8, R), NA, ANY),
	C(s_ldr_w, 0, RW, 1, A(4, 4, R), NA, ANY),
	C(s_ldrb, 0, RW, 1, A(3, 1, R), NA, ANY),
	C(s_ldrh, 0, R, 1, A(6, 2, R), NA, ANY),
	C(s_ldrsb_x, 0, RW, 1, A(5, 1, R), NA, ANY),
	C(s_ldrsb_w, 0, RW, 1, A(9, 1, R), NA, ANY),
	C(s_ldrsh_x, 0, RW, 1, A(10, 2, R), NA, ANY),
	C(s_ldrsh_w, 0, RW, 1, A(12, 2, R), NA, ANY),
	C(s_ldrsw, 0, RW, 1, A(20, 4, R), NA, ANY),
	C(s_ldur, 0, RW, 1, A(-13, 8, R), NA, ANY),
	C(s_ldr_pre, 0, RW, 1, A(16, 8, R), NA, ANY),
	C(s_ldr_post, 0, RW, 1, A(0, 8, R), NA, ANY),
	C(s_ldrsw_post, 0, RW, 1, A(0, 4, R), NA, ANY),
	C(s_ldr_lsl, 2, RW, 1, A(16, 8, R), NA, ANY),
	C(s_ldr_sxtw, 0xffffffffu, RW, 1, A(-4, 4, R), NA, ANY),
	C(s_ldrb_uxtw, 0x100000007ull, RW, 1, A(7, 1, R), NA, ANY),
	C(s_ldtr, 0, RW, 1, A(-8, 8, R), NA, ANY),
	C(s_ldr_base_dst, 0, RW, 1, A(8, 8, R), NA, ANY),
	C(s_str_x, 0, RW, 1, A(8, 8, W), NA, ANY),
	C(s_strb, 0, W, 1, A(1, 1, W), NA, ANY),
	C(s_strh_pre, 0, RW, 1, A(-2, 2, W), NA, ANY),
	C(s_str_w_post, 0, W, 1, A(0, 4, W), NA, ANY),
	C(s_stur, 0, RW, 1, A(-7, 8, W), NA, ANY),
	C(s_str_reg, 16, RW, 1, A(16, 8, W), NA, ANY),
	C(s_sttrh, 0, RW, 1, A(3, 2, W), NA, ANY),
	C(s_str_xzr, 0, W, 1, A(24, 8, W), NA, ANY),
	C(s_ldp_x, 0, RW, 1, A(16, 16, R), NA, ANY),
	C(s_ldp_w_post, 0, RW, 1, A(0, 8, R), NA, ANY),
	C(s_ldpsw_pre, 0, RW, 1, A(-16, 8, R), NA, ANY),
	C(s_ldnp, 0, RW, 1, A(32, 16, R), NA, ANY),
	C(s_stp_x_pre, 0, RW, 1, A(-32, 16, W), NA, ANY),
	C(s_stp_w, 0, W, 1, A(4, 8, W), NA, ANY),
	C(s_stnp, 0, RW, 1, A(0, 16, W), NA, ANY),
	C(s_ldr_q, 0, RW, 1, A(16, 16, R), NA, ANY),
	C(s_ldr_d, 0, RW, 1, A(8, 8, R), NA, ANY),
	C(s_ldr_s, 0, RW, 1, A(4, 4, R), NA, ANY),
	C(s_ldr_h, 0, RW, 1, A(2, 2, R), NA, ANY),
	C(s_ldr_b, 0, RW, 1, A(1, 1, R), NA, ANY),
	C(s_ldur_q, 0, RW, 1, A(-3, 16, R), NA, ANY),
	C(s_ldr_q_post, 0, RW, 1, A(0, 16, R), NA, ANY),
	C(s_ldr_q_reg, 1, RW, 1, A(16, 16, R), NA, ANY),
	C(s_str_q_pre, 0, RW, 1, A(-16, 16, W), NA, ANY),
	C(s_str_b, 0, W, 1, A(5, 1, W), NA, ANY),
	C(s_str_d_post, 0, RW, 1, A(0, 8, W), NA, ANY),
	C(s_ldp_q_pre, 0, RW, 1, A(-32, 32, R), NA, ANY),
	C(s_stp_d_post, 0, RW, 1, A(0, 16, W), NA, ANY),
	C(s_ldp_s, 0, RW, 1, A(8, 8, R), NA, ANY),
	C(s_stnp_q, 0, RW, 1, A(32, 32, W), NA, ANY),
	C(s_ld1_16b, 0, RW, 1, A(0, 16, R), NA, ANY),
	C(s_ld1_8b_x4_post, 0, RW, 1, A(0, 32, R), NA, ANY),
	C(s_ld1_4s_x2_postreg, (uint64_t)-48, RW, 1, A(0, 32, R), NA, ANY),
	C(s_ld2_8h, 0, RW, 1, A(0, 32, R), NA, ANY),
	C(s_ld3_4s, 0, RW, 1, A(0, 48, R), NA, ANY),
	C(s_ld4_16b, 0, RW, 1, A(0, 64, R), NA, ANY),
	C(s_ld2_2s, 0, RW, 1, A(0, 16, R), NA, ANY),
	C(s_st1_2d_x2, 0, RW, 1, A(0, 32, W), NA, ANY),
	C(s_st2_4h_post, 0, W, 1, A(0, 16, W), NA, ANY),
	C(s_st3_16b, 0, RW, 1, A(0, 48, W), NA, ANY),
	C(s_st4_8b_postreg, 8, RW, 1, A(0, 32, W), NA, ANY),
	C(s_ld1_lane_s, 0, RW, 1, A(0, 4, R), NA, ANY),
	C(s_ld1_lane_b_post, 0, RW, 1, A(0, 1, R), NA, ANY),
	C(s_ld2_lane_h, 0, RW, 1, A(0, 4, R), NA, ANY),
	C(s_ld3_lane_d_post, 0, RW, 1, A(0, 24, R), NA, ANY),
	C(s_ld4_lane_s, 0, RW, 1, A(0, 16, R), NA, ANY),
	C(s_st1_lane_d, 0, RW, 1, A(0, 8, W), NA, ANY),
	C(s_st2_lane_b_postreg, 3, RW, 1, A(0, 2, W), NA, ANY),
	C(s_st4_lane_h, 0, RW, 1, A(0, 8, W), NA, ANY),
	C(s_ld1r_4s, 0, RW, 1, A(0, 4, R), NA, ANY),
	C(s_ld2r_8b_post, 0, RW, 1, A(0, 2, R), NA, ANY),
	C(s_ld3r_1d, 0, RW, 1, A(0, 24, R), NA, ANY),
	C(s_ld4r_8h, 0, RW, 1, A(0, 8, R), NA, ANY),
	C(s_ldar_x, 0, RW, 1, A(0, 8, R), NA, ANY),
	C(s_ldarb, 0, RW, 1, A(0, 1, R), NA, ANY),
	C(s_stlr_w, 0, RW, 1, A(0, 4, W), NA, ANY),
	C(s_stlrh, 0, W, 1, A(0, 2, W), NA, ANY),
	C(s_ldapr, 0, RW, 1, A(0, 8, R), NA, RCPC),
	C(s_ldapur, 0, RW, 1, A(-8, 8, R), NA, ILRCPC),
	C(s_ldapursb, 0, RW, 1, A(3, 1, R), NA, ILRCPC),
	C(s_stlur, 0, RW, 1, A(-4, 4, W), NA, ILRCPC),
	/* on a PROT_NONE page the load-exclusive is performed here and
	 * reserves: the store succeeds at once */
	C(s_ldxr_loop, 5, RW, 2, A(0, 8, R), A(0, 8, W), ANY),
	C(s_ldaxrb_loop, 5, RW, 2, A(0, 1, R), A(0, 1, W), ANY),
	C(s_ldxrh_loop, 0x8181, RW, 2, A(0, 2, R), A(0, 2, W), ANY),
	C(s_ldxp_loop, 5, RW, 2, A(0, 16, R), A(0, 16, W), ANY),
	C(s_ldaxp_w_loop, 7, RW, 2, A(0, 8, R), A(0, 8, W), ANY),
	/* on a read-only page the load runs natively: the first store
	 * fails (no access), the retry succeeds */
	C(s_ldxr_loop, 5, W, 1, A(0, 8, W), NA, ANY),
	C(s_ldaxrb_loop, 5, W, 1, A(0, 1, W), NA, ANY),
	C(s_ldxp_loop, 5, W, 1, A(0, 16, W), NA, ANY),
	C(s_ldaxp_w_loop, 7, W, 1, A(0, 8, W), NA, ANY),
	C(s_ldaxr_clrex, 0, RW, 1, A(0, 4, R), NA, ANY),
	C(s_ldadd, 0x1234, RW, 1, A(0, 8, RW), NA, LSE),
	C(s_ldaddalb, 0xf0, RW, 1, A(0, 1, RW), NA, LSE),
	C(s_ldclrh, 0x0ff0, RW, 1, A(0, 2, RW), NA, LSE),
	C(s_ldeor_w, 0x55aa55aa, RW, 1, A(0, 4, RW), NA, LSE),
	C(s_ldset_x, 0x8000000000000001ull, RW, 1, A(0, 8, RW), NA, LSE),
	C(s_ldsmax_x, (uint64_t)-5, RW, 1, A(0, 8, RW), NA, LSE),
	C(s_ldsmin_w, 0x7fffffff, RW, 1, A(0, 4, RW), NA, LSE),
	C(s_ldumaxb, 0x80, RW, 1, A(0, 1, RW), NA, LSE),
	C(s_lduminh, 0x10, W, 1, A(0, 2, W), NA, LSE), /* a W breakpoint sees the write */
	C(s_swp_x, 0xabcdef, RW, 1, A(0, 8, RW), NA, LSE),
	C(s_swpal_w, 0x1234, W, 1, A(0, 4, W), NA, LSE),
	C(s_stadd, 3, RW, 1, A(0, 8, RW), NA, LSE),
	/* a compare that fails reads only */
	C(s_cas_x, 0x77, RW, 1, A(0, 8, R), NA, LSE),
	C(s_casal_w, 0x77, RW, 1, A(0, 4, R), NA, LSE),
	{ "s_cas_x (equal)", s_cas_x, 0x77, RW, 1, { A(0, 8, RW), NA }, LSE, 0 },
	{ "s_casal_w (equal)", s_casal_w, 0x77, RW, 1, { A(0, 4, RW), NA }, LSE, 0 },
	{ "s_casb (equal)", s_casb, 0x77, W, 1, { A(0, 1, W), NA }, LSE, 0 },
	{ "s_casp_x (equal)", s_casp_x, 0, RW, 1, { A(0, 16, RW), NA }, LSE, 0 },
	C(s_casp_x, 0, RW, 1, A(0, 16, R), NA, LSE),
};

/* ------------------------------------------------------------ records */

#define MAXREC 8

struct rec {
	uintptr_t addr, ip, regs_ip;
	unsigned long len;
	unsigned int type;
	uint8_t seen[64]; /* the bytes at addr in the handler */
};
static struct rec recs[MAXREC];
static _Atomic int nrec;

static void handler(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs)
{
	int i = atomic_fetch_add(&nrec, 1);

	(void)bp;
	if (i >= MAXREC)
		return;
	recs[i].addr = d->addr;
	recs[i].len = d->len;
	recs[i].type = d->type;
	recs[i].ip = d->ip;
	recs[i].regs_ip = instruction_pointer(regs);
	copy_from_user_nofault(recs[i].seen, (void *)d->addr, d->len < 64 ? d->len : 64);
}

static struct perf_event *watch(void *addr, unsigned long len, unsigned int type)
{
	struct perf_event_attr attr;
	struct perf_event *bp;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)addr;
	attr.bp_len = len;
	attr.bp_type = type;
	bp = register_user_hw_breakpoint(&attr, handler, NULL, 0);
	cr_assert(!IS_ERR(bp), "register: %ld", PTR_ERR(bp));
	return bp;
}

static void use_page(void)
{
	setenv("UKPROBES_WATCH", "page", 1);
}

TestSuite(a64_watch, .init = use_page);

static bool have(enum need n)
{
	unsigned long hw = getauxval(AT_HWCAP);

	switch (n) {
	case LSE: return hw & HWCAP_ATOMICS;
	case RCPC: return hw & HWCAP_LRCPC;
	case ILRCPC: return hw & HWCAP_ILRCPC;
	default: return true;
	}
}

/* The area the instruction works on: AREA bytes at page offset 1024, the
 * base register at its middle. */
#define AREA 1024
#define AREA_OFF 1024

static void fill(uint8_t *a)
{
	int i;

	for (i = 0; i < AREA; i++)
		a[i] = (uint8_t)(i * 37 + 0x8b);
}

static void init_state(struct st *s, const struct wcase *c, uint8_t *area)
{
	int i, j;

	for (i = 0; i < 16; i++)
		s->x[i] = 0x0123456789abcdefull * (uint64_t)(i + 1) ^ ((uint64_t)i << 60);
	for (i = 0; i < 8; i++)
		for (j = 0; j < 16; j++)
			s->v[i][j] = (uint8_t)(0xc0 + i * 16 + j);
	s->x[1] = (uintptr_t)area + AREA / 2;
	s->x[3] = c->x3;
	if (c->x2_from != NOX2) {
		memcpy(&s->x[2], area + AREA / 2 + c->x2_from, 8);
		memcpy(&s->x[3], area + AREA / 2 + c->x2_from + 8, 8);
		if (c->fn == s_cas_x || c->fn == s_casal_w || c->fn == s_casb)
			s->x[3] = c->x3; /* the new value */
	}
}

/* An address inside the area becomes its offset (tagged), so that the
 * two runs compare. */
static uint64_t norm(uint64_t v, const uint8_t *area)
{
	if (v >= (uintptr_t)area - 64 && v < (uintptr_t)area + AREA + 64)
		return 0xadd0000000000000ull + (v - (uintptr_t)area);
	return v;
}

/* A load-exclusive (ldxr, ldaxr, ldxp, ...): reported before the CPU
 * runs it (src/arch/aarch64/watch.c). */
static bool excl_load(uintptr_t ip)
{
	uint32_t insn = *(const uint32_t *)ip;

	return (insn & 0x3f400000u) == 0x08400000u && !(insn & (1u << 23));
}

static void run_case(const struct wcase *c, uint8_t *plain, uint8_t *watched)
{
	struct st ref, got;
	struct perf_event *bp;
	uint8_t *base = watched + AREA / 2;
	unsigned int i;

	fill(plain);
	fill(watched);
	init_state(&ref, c, plain);
	init_state(&got, c, watched);
	a64w_run(&ref, c->fn);

	bp = watch(watched, AREA, c->watch);
	nrec = 0;
	a64w_run(&got, c->fn);
	unregister_hw_breakpoint(bp);

	for (i = 0; i < 16; i++)
		cr_assert_eq(norm(got.x[i], watched), norm(ref.x[i], plain),
			     "%s: x%u %#lx, the CPU's %#lx", c->name, i,
			     (unsigned long)got.x[i], (unsigned long)ref.x[i]);
	for (i = 0; i < 8; i++)
		cr_assert_arr_eq(got.v[i], ref.v[i], 16, "%s: v%u", c->name, i);
	cr_assert_arr_eq(watched, plain, AREA, "%s: memory", c->name);
	cr_assert_eq(nrec, (int)c->nacc, "%s: %d accesses reported, %u expected", c->name,
		     (int)nrec, c->nacc);
	for (i = 0; i < c->nacc; i++) {
		const struct rec *r = &recs[i];

		cr_assert_eq((long)(r->addr - (uintptr_t)base), c->acc[i].off, "%s: offset %ld",
			     c->name, (long)(r->addr - (uintptr_t)base));
		cr_assert_eq(r->len, c->acc[i].len, "%s: length %lu", c->name, r->len);
		cr_assert_eq(r->type, c->acc[i].type, "%s: type %u", c->name, r->type);
		cr_assert(r->ip >= (uintptr_t)c->fn && r->ip < (uintptr_t)c->fn + 32,
			  "%s: ip %#lx", c->name, (unsigned long)r->ip);
		if (excl_load(r->ip))
			cr_assert_eq(r->regs_ip, r->ip, "%s: pc at the load-exclusive", c->name);
		else
			cr_assert_eq(r->regs_ip, r->ip + 4, "%s: pc after the access", c->name);
		/* the handler ran after the access: a write's new bytes */
		if (r->type & W)
			cr_assert_arr_eq(r->seen, (void *)r->addr, r->len < 64 ? r->len : 64,
					 "%s: the handler saw the old bytes", c->name);
	}
}

static uint8_t *area_in_new_page(void)
{
	uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(m, MAP_FAILED);
	return m + AREA_OFF;
}

Test(a64_watch, every_class_against_the_cpu)
{
	uint8_t *plain = area_in_new_page(), *watched = area_in_new_page();
	unsigned int i, skipped = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!have(cases[i].need)) {
			skipped++;
			continue;
		}
		run_case(&cases[i], plain, watched);
	}
	cr_assert_eq(ukp_watch_inplace_steps, 0);
	cr_assert_eq(ukp_watch_refused, 0);
	cr_log_info("%u cases, %u skipped (the CPU lacks their extension)",
		    (unsigned int)(sizeof(cases) / sizeof(cases[0])) - skipped, skipped);
}

/*
 * qemu-user 7.2 aborts ("cpu == current_cpu") when the guest returns
 * from the handler of a fault raised inside one of its helpers (dc zva,
 * SVE loads and stores): these cases run on a CPU only. The aarch64
 * suite sets UKP_QEMU_USER (tests/arch/aarch64/meson.build).
 */
static bool under_qemu_user(void)
{
	return getenv("UKP_QEMU_USER") != NULL;
}

Test(a64_watch, dc_zva_zeroes_the_block)
{
	uint8_t *plain = area_in_new_page(), *watched = area_in_new_page();
	uint64_t dczid;
	struct wcase c = C(s_dc_zva, 17, W, 1, A(0, 0, W), NA, ANY);

	__asm__ volatile("mrs %0, dczid_el0" : "=r"(dczid));
	if (dczid & 16)
		cr_skip_test("dc zva is prohibited here");
	c.acc[0].len = 4u << (dczid & 15);
	if (c.acc[0].len > AREA / 2)
		cr_skip_test("a dc zva block of %u bytes", c.acc[0].len);
	if (under_qemu_user())
		cr_skip_test("qemu-user aborts after a fault in dc zva");
	run_case(&c, plain, watched);
	cr_assert_eq(watched[AREA / 2 + 1], 0);
}

/* ------------------------------------------------- sp as the base */

SNIP(s_sp_base, "mov x9, sp\n mov sp, x1\n stp x2, x4, [sp, #-16]!\n ldr x5, [sp, #24]\n"
		" mov x1, sp\n mov sp, x9");

Test(a64_watch, sp_as_base_with_write_back)
{
	/* sp points into the watched area: the SIGSEGV frames go to an
	 * alternate stack */
	uint8_t *plain = area_in_new_page(), *watched = area_in_new_page();
	static uint8_t alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct wcase c = C(s_sp_base, 0, RW, 2, A(-16, 16, W), A(8, 8, R), ANY);

	cr_assert_eq(sigaltstack(&ss, NULL), 0);
	run_case(&c, plain, watched);
}

/* ------------------------------------------- pc-relative literals */

/* A literal pool on a data page of its own (not executable, or it could
 * not be watched), within a literal load's reach of the code. */
__asm__(".section .data.a64watch, \"aw\"\n"
	".p2align 12\n"
	".globl a64w_lit\n"
	"a64w_lit:\n"
	".quad 0x1122334455667788, 0x99aabbccddeeff00, 0x8000000180000002, 0\n"
	".p2align 12\n"
	".previous\n");
extern const uint64_t a64w_lit[];
SNIP(s_ldr_lit_x, "ldr x2, a64w_lit + 8");
SNIP(s_ldr_lit_w, "ldr w2, a64w_lit");
SNIP(s_ldrsw_lit, "ldrsw x2, a64w_lit + 20");
SNIP(s_ldr_lit_q, "ldr q3, a64w_lit");
SNIP(s_ldr_lit_d, "ldr d4, a64w_lit + 16");

Test(a64_watch, literal_loads_from_a_watched_page)
{
	static void (*const fns[])(void) = { s_ldr_lit_x, s_ldr_lit_w, s_ldrsw_lit, s_ldr_lit_q,
					     s_ldr_lit_d };
	static const int off[] = { 8, 0, 20, 0, 16 };
	static const unsigned int len[] = { 8, 4, 4, 16, 8 };
	unsigned int i;

	for (i = 0; i < 5; i++) {
		struct st ref, got;
		struct perf_event *bp;
		uint8_t dummy[AREA];
		struct wcase c = { "literal", fns[i], 0, R, 0, { NA, NA }, ANY, NOX2 };

		init_state(&ref, &c, dummy);
		init_state(&got, &c, dummy);
		a64w_run(&ref, fns[i]);
		bp = watch((void *)a64w_lit, 32, HW_BREAKPOINT_R);
		nrec = 0;
		a64w_run(&got, fns[i]);
		unregister_hw_breakpoint(bp);
		cr_assert_arr_eq(&got, &ref, sizeof(got), "literal load %u", i);
		cr_assert_eq(nrec, 1, "literal load %u", i);
		cr_assert_eq(recs[0].addr, (uintptr_t)a64w_lit + off[i]);
		cr_assert_eq(recs[0].len, len[i]);
		cr_assert_eq(recs[0].type, R);
	}
}

/* ------------------------------------------------------------ SVE */

#define SVE_SNIP(name, body) SNIP(name, ".arch_extension sve\n" body)

SVE_SNIP(s_sve_ld1b_while, "whilelo p0.b, xzr, x3\n ld1b {z0.b}, p0/z, [x1]");
SVE_SNIP(s_sve_ld1b_h, "ptrue p1.h, vl8\n ld1b {z1.h}, p1/z, [x1, #-1, mul vl]");
SVE_SNIP(s_sve_ld1sh_s, "ptrue p1.s\n ld1sh {z2.s}, p1/z, [x1, #-1, mul vl]");
SVE_SNIP(s_sve_ld1sw_d, "ptrue p2.d, vl2\n ld1sw {z3.d}, p2/z, [x1, x3, lsl #2]");
SVE_SNIP(s_sve_ld1d_gap, "ptrue p1.b, vl8\n ptrue p2.b, vl4\n bic p0.b, p1/z, p1.b, p2.b\n"
			 " ld1b {z4.b}, p0/z, [x1]");
SVE_SNIP(s_sve_st1b_gap, "ptrue p1.b, vl8\n ptrue p3.b, vl6\n ptrue p4.b, vl3\n"
			 " bic p0.b, p1/z, p1.b, p3.b\n orr p0.b, p1/z, p0.b, p4.b\n"
			 " st1b {z0.b}, p0, [x1, #1, mul vl]");
SVE_SNIP(s_sve_st1w_reg, "mov x6, #7\n whilelo p0.s, xzr, x6\n mov x7, #-4\n"
			 " st1w {z1.s}, p0, [x1, x7, lsl #2]");
SVE_SNIP(s_sve_st1h_d, "ptrue p5.d\n st1h {z2.d}, p5, [x1]");
SVE_SNIP(s_sve_ldnt1d, "ptrue p0.d\n ldnt1d {z5.d}, p0/z, [x1]");
SVE_SNIP(s_sve_stnt1w, "ptrue p0.s\n stnt1w {z1.s}, p0, [x1, x3, lsl #2]");
SVE_SNIP(s_sve_ldr_z, "ldr z6, [x1, #-1, mul vl]");
SVE_SNIP(s_sve_str_z, "str z7, [x1]");
SVE_SNIP(s_sve_str_p, "ptrue p2.h\n str p2, [x1, #3, mul vl]");
SVE_SNIP(s_sve_ldr_p, "ldr p3, [x1, #-2, mul vl]\n mov z4.b, p3/z, #1");
SVE_SNIP(s_sve_none_active, "pfalse p0.b\n ld1b {z0.b}, p0/z, [x1]\n ldr x2, [x1, #8]");

static unsigned long sve_vl(void)
{
	unsigned long vl;

	__asm__ volatile(".arch_extension sve\n rdvl %0, #1" : "=r"(vl));
	return vl;
}

Test(a64_watch, sve_contiguous_loads_and_stores)
{
	uint8_t *plain = area_in_new_page(), *watched = area_in_new_page();
	int vl, pl;
	unsigned int i;

	if (!(getauxval(AT_HWCAP) & HWCAP_SVE))
		cr_skip_test("no SVE");
	vl = (int)sve_vl();
	pl = vl / 8;
	if (vl > AREA / 2)
		cr_skip_test("vector length %d", vl);
	if (under_qemu_user())
		cr_skip_test("qemu-user aborts after a fault in an SVE access");
	{
		const struct wcase cs[] = {
			C(s_sve_ld1b_while, 5, RW, 1, A(0, 5, R), NA, ANY),
			C(s_sve_ld1b_h, 0, RW, 1, A(-vl / 2, 8, R), NA, ANY),
			C(s_sve_ld1sh_s, 0, RW, 1, A(-vl / 2, vl / 2, R), NA, ANY),
			C(s_sve_ld1sw_d, (uint64_t)-3, RW, 1, A(-12, 8, R), NA, ANY),
			C(s_sve_ld1d_gap, 0, RW, 1, A(4, 4, R), NA, ANY),
			C(s_sve_st1b_gap, 0, RW, 1, A(vl, 8, W), NA, ANY),
			C(s_sve_st1w_reg, 0, W, 1, A(-16, 28, W), NA, ANY),
			C(s_sve_st1h_d, 0, RW, 1, A(0, vl / 4, W), NA, ANY),
			C(s_sve_ldnt1d, 0, RW, 1, A(0, vl, R), NA, ANY),
			C(s_sve_stnt1w, 2, RW, 1, A(8, vl, W), NA, ANY),
			C(s_sve_ldr_z, 0, RW, 1, A(-vl, vl, R), NA, ANY),
			C(s_sve_str_z, 0, RW, 1, A(0, vl, W), NA, ANY),
			C(s_sve_str_p, 0, RW, 1, A(3 * pl, pl, W), NA, ANY),
			C(s_sve_ldr_p, 0, RW, 1, A(-2 * pl, pl, R), NA, ANY),
			/* no active element: no access, no fault */
			C(s_sve_none_active, 0, RW, 1, A(8, 8, R), NA, ANY),
		};

		for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
			run_case(&cs[i], plain, watched);
	}
	cr_assert_eq(ukp_watch_refused, 0);
}

/* ----------------------------------------------- what is refused */

SVE_SNIP(s_sve_gather, "ptrue p0.d\n index z1.d, #0, #8\n ld1d {z0.d}, p0/z, [x1, z1.d]");

static sigjmp_buf jb;
static volatile uintptr_t segv_addr;
static volatile int segv_code;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	segv_addr = (uintptr_t)si->si_addr;
	segv_code = si->si_code;
	siglongjmp(jb, 1);
}

Test(a64_watch, sve_gather_gets_the_fault)
{
	/* no single-step in user space: an access the library cannot
	 * perform is the program's fault, as the CPU raised it */
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	uint8_t *watched = area_in_new_page();
	struct perf_event *bp;
	struct st s;
	struct wcase c = C(s_sve_gather, 0, RW, 0, NA, NA, ANY);

	if (!(getauxval(AT_HWCAP) & HWCAP_SVE))
		cr_skip_test("no SVE");
	init_state(&s, &c, watched);
	sigaction(SIGSEGV, &sa, NULL);
	bp = watch(watched, AREA, RW);
	if (!sigsetjmp(jb, 1))
		a64w_run(&s, s_sve_gather);
	cr_assert_eq(segv_addr, (uintptr_t)watched + AREA / 2);
	cr_assert_eq(segv_code, SEGV_ACCERR);
	cr_assert_eq(ukp_watch_refused, 1);
	cr_assert_eq(nrec, 0);
	unregister_hw_breakpoint(bp);
	/* unwatched, it works */
	a64w_run(&s, s_sve_gather);
	cr_assert_eq(memcmp(s.v[0], watched + AREA / 2, 8), 0);
}

/* ------------------------- SVE and dc zva, performed without a fault */

/*
 * Under qemu-user the faulting cases above are skipped; the emulation
 * of SVE and dc zva is then checked by calling it directly
 * (arch_watch_step, with an arch_watch_mem on plain memory and a signal
 * frame built here) at the memory instruction of a snippet whose setup
 * ran natively, against the whole snippet run natively.
 */
struct sst {
	uint64_t x[16];
	uint8_t z[8 * 256]; /* z0-z7, vl bytes each (the harness's "mul vl") */
	uint8_t p[8 * 32];  /* p0-p7, vl / 8 bytes each */
};

#define ZREG(s, i, vl) ((s)->z + (size_t)(i) * (vl))
#define PREG(s, i, vl) ((s)->p + (size_t)(i) * ((vl) / 8))

void a64w_sve_run(struct sst *s, void (*fn)(void));
__asm__(".text\n"
	".arch armv8.4-a\n"
	".arch_extension sve\n"
	".p2align 2\n"
	".globl a64w_sve_run\n"
	".type a64w_sve_run, %function\n"
	"a64w_sve_run:\n"
	"	stp x29, x30, [sp, #-48]!\n"
	"	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n"
	"	stp x21, x22, [sp, #32]\n"
	"	mov x19, x0\n"
	"	mov x20, x1\n"
	"	add x21, x19, #128\n"
	"	add x22, x19, #(128 + 8 * 256)\n"
	"	ldr z0, [x21, #0, mul vl]\n ldr z1, [x21, #1, mul vl]\n"
	"	ldr z2, [x21, #2, mul vl]\n ldr z3, [x21, #3, mul vl]\n"
	"	ldr z4, [x21, #4, mul vl]\n ldr z5, [x21, #5, mul vl]\n"
	"	ldr z6, [x21, #6, mul vl]\n ldr z7, [x21, #7, mul vl]\n"
	"	ldr p0, [x22, #0, mul vl]\n ldr p1, [x22, #1, mul vl]\n"
	"	ldr p2, [x22, #2, mul vl]\n ldr p3, [x22, #3, mul vl]\n"
	"	ldr p4, [x22, #4, mul vl]\n ldr p5, [x22, #5, mul vl]\n"
	"	ldr p6, [x22, #6, mul vl]\n ldr p7, [x22, #7, mul vl]\n"
	"	ldp x0, x1, [x19, #0]\n ldp x2, x3, [x19, #16]\n"
	"	ldp x4, x5, [x19, #32]\n ldp x6, x7, [x19, #48]\n"
	"	ldp x8, x9, [x19, #64]\n ldp x10, x11, [x19, #80]\n"
	"	ldp x12, x13, [x19, #96]\n ldp x14, x15, [x19, #112]\n"
	"	blr x20\n"
	"	stp x0, x1, [x19, #0]\n stp x2, x3, [x19, #16]\n"
	"	stp x4, x5, [x19, #32]\n stp x6, x7, [x19, #48]\n"
	"	stp x8, x9, [x19, #64]\n stp x10, x11, [x19, #80]\n"
	"	stp x12, x13, [x19, #96]\n stp x14, x15, [x19, #112]\n"
	"	str z0, [x21, #0, mul vl]\n str z1, [x21, #1, mul vl]\n"
	"	str z2, [x21, #2, mul vl]\n str z3, [x21, #3, mul vl]\n"
	"	str z4, [x21, #4, mul vl]\n str z5, [x21, #5, mul vl]\n"
	"	str z6, [x21, #6, mul vl]\n str z7, [x21, #7, mul vl]\n"
	"	str p0, [x22, #0, mul vl]\n str p1, [x22, #1, mul vl]\n"
	"	str p2, [x22, #2, mul vl]\n str p3, [x22, #3, mul vl]\n"
	"	str p4, [x22, #4, mul vl]\n str p5, [x22, #5, mul vl]\n"
	"	str p6, [x22, #6, mul vl]\n str p7, [x22, #7, mul vl]\n"
	"	ldp x21, x22, [sp, #32]\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x29, x30, [sp], #48\n"
	"	ret\n"
	".size a64w_sve_run, .-a64w_sve_run\n");

/* The setup alone (name##_setup, ending in ret) and the whole snippet
 * (name), whose memory instruction is at name##_mem. */
#define SPLIT(name, setup, mem)                                                                  \
	SVE_SNIP(name##_setup, setup);                                                           \
	SVE_SNIP(name, setup "\n.globl " #name "_mem\n" #name "_mem:\n" mem);                   \
	extern char name##_mem[]

SPLIT(d_ld1b_while, "whilelo p0.b, xzr, x3", "ld1b {z0.b}, p0/z, [x1]");
SPLIT(d_ld1b_h, "ptrue p1.h, vl8", "ld1b {z1.h}, p1/z, [x1, #-1, mul vl]");
SPLIT(d_ld1sh_s, "ptrue p1.s", "ld1sh {z2.s}, p1/z, [x1, #-1, mul vl]");
SPLIT(d_ld1sw_d, "ptrue p2.d, vl2", "ld1sw {z3.d}, p2/z, [x1, x3, lsl #2]");
SPLIT(d_ld1b_gap, "ptrue p1.b, vl8\n ptrue p2.b, vl4\n bic p0.b, p1/z, p1.b, p2.b",
      "ld1b {z4.b}, p0/z, [x1]");
SPLIT(d_st1b_gap, "ptrue p1.b, vl8\n ptrue p3.b, vl6\n ptrue p4.b, vl3\n"
		  " bic p0.b, p1/z, p1.b, p3.b\n orr p0.b, p1/z, p0.b, p4.b",
      "st1b {z0.b}, p0, [x1, #1, mul vl]");
SPLIT(d_st1w_reg, "mov x6, #7\n whilelo p0.s, xzr, x6\n mov x7, #-4",
      "st1w {z1.s}, p0, [x1, x7, lsl #2]");
SPLIT(d_st1h_d, "ptrue p5.d", "st1h {z2.d}, p5, [x1]");
SPLIT(d_st1b_s_imm, "ptrue p5.s", "st1b {z6.s}, p5, [x1, #-2, mul vl]");
SPLIT(d_ldnt1d, "ptrue p0.d", "ldnt1d {z5.d}, p0/z, [x1]");
SPLIT(d_ldnt1h_reg, "ptrue p0.h, vl5", "ldnt1h {z5.h}, p0/z, [x1, x3, lsl #1]");
SPLIT(d_stnt1w, "ptrue p0.s", "stnt1w {z1.s}, p0, [x1, x3, lsl #2]");
SPLIT(d_stnt1d_imm, "ptrue p0.d", "stnt1d {z1.d}, p0, [x1, #-1, mul vl]");
SPLIT(d_ldr_z, "nop", "ldr z6, [x1, #-1, mul vl]");
SPLIT(d_str_z, "nop", "str z7, [x1]");
SPLIT(d_str_p, "ptrue p2.h", "str p2, [x1, #3, mul vl]");
SPLIT(d_ldr_p, "nop", "ldr p3, [x1, #-2, mul vl]");
SPLIT(d_none, "pfalse p0.b", "ld1b {z0.b}, p0/z, [x1]");
SPLIT(d_dc_zva, "add x6, x1, x3", "dc zva, x6");

static long dm_read(void *dst, uintptr_t src, size_t n)
{
	memcpy(dst, (void *)src, n);
	return 0;
}

static long dm_write(uintptr_t dst, const void *src, size_t n)
{
	memcpy((void *)dst, src, n);
	return 0;
}

static int dm_check(uintptr_t a, size_t len, bool write, uintptr_t *fault)
{
	(void)a, (void)len, (void)write, (void)fault;
	return 0;
}

static void sst_init(struct sst *s, uint64_t x3, uint8_t *area)
{
	int i, j;

	for (i = 0; i < 16; i++)
		s->x[i] = 0x0123456789abcdefull * (uint64_t)(i + 1);
	for (j = 0; j < 8 * 256; j++)
		s->z[j] = (uint8_t)(j * 7 + 1 + j / 256);
	memset(s->p, 0, sizeof(s->p));
	s->x[1] = (uintptr_t)area + AREA / 2;
	s->x[3] = x3;
}

/* The signal frame of the state s at pc: FP/SIMD and SVE records. */
static bool build_frame(ucontext_t *uc, const struct sst *s, unsigned int vl)
{
	unsigned int vq = vl / 16, i;
	unsigned char *r = (unsigned char *)uc->uc_mcontext.__reserved;
	struct fpsimd_context *fp = (void *)r;
	struct sve_context *sve = (void *)(r + sizeof(*fp));
	size_t svesize = SVE_SIG_CONTEXT_SIZE(vq);

	memset(uc, 0, sizeof(*uc));
	if (sizeof(*fp) + svesize + 16 > sizeof(uc->uc_mcontext.__reserved))
		return false;
	for (i = 0; i < 16; i++)
		uc->uc_mcontext.regs[i] = s->x[i];
	fp->head.magic = FPSIMD_MAGIC;
	fp->head.size = sizeof(*fp);
	for (i = 0; i < 8; i++)
		memcpy(&fp->vregs[i], ZREG(s, i, vl), 16);
	sve->head.magic = SVE_MAGIC;
	sve->head.size = (uint32_t)svesize;
	sve->vl = (uint16_t)vl;
	for (i = 0; i < 8; i++) {
		memcpy((char *)sve + SVE_SIG_ZREG_OFFSET(vq, i), ZREG(s, i, vl), vl);
		memcpy((char *)sve + SVE_SIG_PREG_OFFSET(vq, i), PREG(s, i, vl), vl / 8);
	}
	return true;
}

struct dcase {
	const char *name;
	void (*setup)(void), (*fn)(void);
	const char *mem;
	uint64_t x3;
	int off;
	unsigned int len, type; /* len 0: none */
};

static void direct_case(const struct dcase *c, unsigned int vl)
{
	static uint8_t plain[2 * AREA] __attribute__((aligned(4096)));
	static uint8_t mine[2 * AREA] __attribute__((aligned(4096)));
	static struct sst ref, pre;
	static ucontext_t uc;
	const struct arch_watch_mem m = { dm_check, dm_read, dm_write };
	struct sve_context *sve;
	struct arch_watch_access acc[ARCH_WATCH_MAX_ACCESS];
	struct arch_watch_fault f;
	struct pt_regs regs;
	unsigned int nacc = 0, i, vq = vl / 16;
	int ret;

	fill(plain);
	fill(mine);
	sst_init(&ref, c->x3, plain);
	a64w_sve_run(&ref, c->fn);
	sst_init(&pre, c->x3, mine);
	a64w_sve_run(&pre, c->setup);
	cr_assert(build_frame(&uc, &pre, vl), "%s: a frame for VL %u", c->name, vl);
	uc.uc_mcontext.pc = (uintptr_t)c->mem;
	arch_regs_from_ucontext(&regs, &uc);
	ret = arch_watch_step(&m, &regs, &uc, acc, &nacc, &f);
	cr_assert_eq(ret, 0, "%s: %d", c->name, ret);
	cr_assert_eq(regs.pc, (uintptr_t)c->mem + 4, "%s: pc", c->name);
	for (i = 0; i < 16; i++)
		cr_assert_eq(norm(regs.regs[i], mine), norm(ref.x[i], plain), "%s: x%u", c->name, i);
	sve = (void *)((char *)uc.uc_mcontext.__reserved + sizeof(struct fpsimd_context));
	for (i = 0; i < 8; i++) {
		cr_assert_arr_eq((char *)sve + SVE_SIG_ZREG_OFFSET(vq, i), ZREG(&ref, i, vl), vl,
				 "%s: z%u", c->name, i);
		cr_assert_arr_eq((char *)sve + SVE_SIG_PREG_OFFSET(vq, i), PREG(&ref, i, vl), vl / 8,
				 "%s: p%u", c->name, i);
		cr_assert_arr_eq(&((struct fpsimd_context *)uc.uc_mcontext.__reserved)->vregs[i],
				 ZREG(&ref, i, vl), 16, "%s: v%u", c->name, i);
	}
	cr_assert_arr_eq(mine, plain, AREA, "%s: memory", c->name);
	cr_assert_eq(nacc, c->len ? 1u : 0u, "%s: %u accesses", c->name, nacc);
	if (c->len) {
		cr_assert_eq((long)(acc[0].addr - ((uintptr_t)mine + AREA / 2)), c->off,
			     "%s: offset %ld", c->name, (long)(acc[0].addr - ((uintptr_t)mine + AREA / 2)));
		cr_assert_eq(acc[0].len, c->len, "%s: length %zu", c->name, acc[0].len);
		cr_assert_eq(acc[0].type, c->type, "%s: type", c->name);
	}
}

#define D(name, x3, off, len, type) { #name, name##_setup, name, name##_mem, x3, off, len, type }

Test(a64_watch, sve_and_dc_zva_performed_directly)
{
	unsigned int vl, pl, i;
	uint64_t dczid;

	if (!(getauxval(AT_HWCAP) & HWCAP_SVE))
		cr_skip_test("no SVE");
	vl = (unsigned int)sve_vl();
	pl = vl / 8;
	if (vl > AREA / 4)
		cr_skip_test("vector length %u", vl);
	__asm__ volatile("mrs %0, dczid_el0" : "=r"(dczid));
	{
		const int v = (int)vl, p = (int)pl;
		const struct dcase cs[] = {
			D(d_ld1b_while, 5, 0, 5, R),
			D(d_ld1b_h, 0, -v / 2, 8, R),
			D(d_ld1sh_s, 0, -v / 2, vl / 2, R),
			D(d_ld1sw_d, (uint64_t)-3, -12, 8, R),
			D(d_ld1b_gap, 0, 4, 4, R),
			D(d_st1b_gap, 0, v, 8, W),
			D(d_st1w_reg, 0, -16, 28, W),
			D(d_st1h_d, 0, 0, vl / 4, W),
			D(d_st1b_s_imm, 0, -v / 2, vl / 4, W),
			D(d_ldnt1d, 0, 0, vl, R),
			D(d_ldnt1h_reg, 3, 6, 10, R),
			D(d_stnt1w, 2, 8, vl, W),
			D(d_stnt1d_imm, 0, -v, vl, W),
			D(d_ldr_z, 0, -v, vl, R),
			D(d_str_z, 0, 0, vl, W),
			D(d_str_p, 0, 3 * p, pl, W),
			D(d_ldr_p, 0, -2 * p, pl, R),
			D(d_none, 0, 0, 0, 0),
			D(d_dc_zva, 17, 0, 4u << (dczid & 15), W),
		};

		for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
			if (cs[i].setup == d_dc_zva_setup &&
			    ((dczid & 16) || (4u << (dczid & 15)) > AREA / 2))
				continue;
			direct_case(&cs[i], vl);
		}
	}
}

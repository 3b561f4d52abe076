/* SPDX-License-Identifier: MIT */
/*
 * ukt_vec.h - a probe target with ymm0-15 live across its probe point,
 * for the tests of the vector state (include in one .c file per test
 * program: it defines the target in assembly).
 *
 * ukt_vec(in, out) loads ymm0-15 from in (512 bytes), passes
 * ukt_vec_probe (movl $1, %eax: 5 bytes, a region for the jump) and
 * stores them to out.
 */
#ifndef UKT_VEC_H
#define UKT_VEC_H

#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

__asm__(
	".text\n"
	".globl ukt_vec\n .type ukt_vec,@function\n"
	"ukt_vec:\n"
	"	vmovdqu 0(%rdi), %ymm0\n vmovdqu 32(%rdi), %ymm1\n vmovdqu 64(%rdi), %ymm2\n"
	"	vmovdqu 96(%rdi), %ymm3\n vmovdqu 128(%rdi), %ymm4\n vmovdqu 160(%rdi), %ymm5\n"
	"	vmovdqu 192(%rdi), %ymm6\n vmovdqu 224(%rdi), %ymm7\n vmovdqu 256(%rdi), %ymm8\n"
	"	vmovdqu 288(%rdi), %ymm9\n vmovdqu 320(%rdi), %ymm10\n vmovdqu 352(%rdi), %ymm11\n"
	"	vmovdqu 384(%rdi), %ymm12\n vmovdqu 416(%rdi), %ymm13\n vmovdqu 448(%rdi), %ymm14\n"
	"	vmovdqu 480(%rdi), %ymm15\n"
	".globl ukt_vec_probe\n"
	"ukt_vec_probe:\n"
	"	movl $1, %eax\n"			/* b8 01 00 00 00 */
	"	vmovdqu %ymm0, 0(%rsi)\n vmovdqu %ymm1, 32(%rsi)\n vmovdqu %ymm2, 64(%rsi)\n"
	"	vmovdqu %ymm3, 96(%rsi)\n vmovdqu %ymm4, 128(%rsi)\n vmovdqu %ymm5, 160(%rsi)\n"
	"	vmovdqu %ymm6, 192(%rsi)\n vmovdqu %ymm7, 224(%rsi)\n vmovdqu %ymm8, 256(%rsi)\n"
	"	vmovdqu %ymm9, 288(%rsi)\n vmovdqu %ymm10, 320(%rsi)\n vmovdqu %ymm11, 352(%rsi)\n"
	"	vmovdqu %ymm12, 384(%rsi)\n vmovdqu %ymm13, 416(%rsi)\n vmovdqu %ymm14, 448(%rsi)\n"
	"	vmovdqu %ymm15, 480(%rsi)\n"
	"	vzeroupper\n"
	"	ret\n"
	".size ukt_vec, .-ukt_vec\n");

void ukt_vec(const void *in, void *out);
extern char ukt_vec_probe[];

/* rounds calls of ukt_vec, each checking that ymm0-15 came through. */
static inline void ukt_vec_roundtrip(int rounds)
{
	uint8_t in[512], out[512];
	int i, r;

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 512; i++)
			in[i] = (uint8_t)(i * 7 + r);
		memset(out, 0, sizeof(out));
		ukt_vec(in, out);
		cr_assert_arr_eq(in, out, sizeof(in), "ymm0-15 must survive the hit");
	}
}

#endif

// SPDX-License-Identifier: MIT
/*
 * optprobe.c - AArch64 jump optimization (arch.h): a `b` over one
 * instruction to a detour taken from the slot chunks (within the
 * branch's +-128 MiB, insn_slot.c), the kernel's optprobes for a
 * process. [reg] context.
 *
 * The detour (UKP_DETOUR_SIZE bytes):
 *   0   stp x16, x17, [sp, #-32]!     the registers it needs, and x30,
 *   4   str x30, [sp, #16]            below sp (AArch64 has no red zone:
 *   8   ldr x16, LIT_SITE             nothing lives below sp)
 *   12  ldr x17, LIT_COMMON
 *   16  blr x17                       ukp_optprobe_common (optprobe_tramp.S)
 *   20  ldr x30, [sp, #16]            what the handlers left in them
 *   24  ldp x16, x17, [sp], #32
 *   28  the instruction, relocated (reloc.c; UKP_OPT_COPY_OFFSET)
 *       b addr + 4 (none after a branch, a return or a call: they leave)
 *   48  the site, ukp_optprobe_common (literals)
 * A region is one instruction (every instruction is 4 bytes, as is the
 * jump), so nothing can jump into its middle: no control-flow check is
 * needed (optimizer.c), only the relocation. [FTRACE] entries (nops at
 * the entry, arch_patchable_nops) copy nothing: the jump replaces the
 * first nop.
 */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

#define LIT_SITE   (UKP_DETOUR_SIZE - 16)
#define LIT_COMMON (UKP_DETOUR_SIZE - 8)

_Static_assert(UKP_OPT_COPY_OFFSET == 28, "the detour's entry is 7 instructions");
_Static_assert(UKP_OPT_COPY_OFFSET + UKP_OPT_RELOC_MAX + 4 <= LIT_SITE, "the detour's size");

static void put32(uint8_t *p, uint32_t w)
{
	memcpy(p, &w, 4);
}

/* b from pc to target, if it reaches */
static bool enc_b(uintptr_t pc, uintptr_t target, uint32_t *w)
{
	int64_t d = (int64_t)(target - pc);

	if (d & 3 || d < -(1LL << 27) || d >= (1LL << 27))
		return false;
	*w = 0x14000000u | ((uint32_t)(d >> 2) & 0x3ffffffu);
	return true;
}

/* ldr xt, pc + off */
static uint32_t enc_ldr_lit(unsigned int rt, int64_t off)
{
	return 0x58000000u | (((uint32_t)(off >> 2) & 0x7ffffu) << 5) | rt;
}

/* [reg] Nothing to choose: the common code keeps no vector state (its
 * handlers run through arch_vecsafe_call). */
int arch_opt_init(void)
{
	return 0;
}

/* [reg] */
int arch_opt_prepare(struct ukp_arch_opt *ao, const uint8_t *code, size_t avail, uintptr_t addr,
		     uintptr_t detour, const void *site, size_t ftrace_len, int pun_pad,
		     const char **why)
{
	uint8_t *img = ao->image;
	uintptr_t common = (uintptr_t)ukp_optprobe_common;
	enum arch_reloc_end ended = ARCH_RELOC_NEXT;
	size_t out = UKP_OPT_COPY_OFFSET, olen = 0;
	uint32_t w;

	memset(ao, 0, sizeof(*ao));
	if (pun_pad >= 0) {
		*why = "no punned jump here";
		return -EINVAL;
	}
	ukp_fill_breakpoints(img, sizeof(ao->image));
	put32(img + 0, 0xa9be47f0u);			/* stp x16, x17, [sp, #-32]! */
	put32(img + 4, 0xf9000bfeu);			/* str x30, [sp, #16] */
	put32(img + 8, enc_ldr_lit(16, LIT_SITE - 8));
	put32(img + 12, enc_ldr_lit(17, LIT_COMMON - 12));
	put32(img + 16, 0xd63f0220u);			/* blr x17 */
	put32(img + 20, 0xf9400bfeu);			/* ldr x30, [sp, #16] */
	put32(img + 24, 0xa8c247f0u);			/* ldp x16, x17, [sp], #32 */
	if (!ftrace_len) {
		int n = arch_relocate_insn(code, avail, addr, detour + out, img + out, &olen,
					   &ended, why);

		if (n < 0)
			return n;
		ao->map_orig[0] = 0;
		ao->map_copy[0] = 0;
		ao->ninsn = 1;
		out += olen;
	} else if (ftrace_len < UKP_OPT_JUMP_SIZE) {
		*why = "no nop at the [FTRACE] entry";
		return -EINVAL;
	}
	/* [FTRACE]: the jump replaces the first nop and the detour comes
	 * back after it; the other nops of the entry run as they are. */
	ao->code_len = UKP_OPT_JUMP_SIZE;
	if (ended == ARCH_RELOC_NEXT) {
		if (!enc_b(detour + out, addr + UKP_OPT_JUMP_SIZE, &w)) {
			*why = "the detour is out of reach";
			return -EINVAL;
		}
		put32(img + out, w);
	}
	memcpy(img + LIT_SITE, &site, 8);
	memcpy(img + LIT_COMMON, &common, 8);
	if (!enc_b(addr, detour, &w)) {
		*why = "the detour is out of reach";
		return -EINVAL;
	}
	put32(ao->jump, w);
	ao->len = UKP_OPT_JUMP_SIZE;
	ao->span = UKP_OPT_JUMP_SIZE;
	return 0;
}

/* [reg] The b is as long as every instruction: nothing to pun. */
size_t arch_opt_pun_window(const uint8_t *code, size_t avail, uintptr_t addr, unsigned int pad,
			   uintptr_t *lo, uintptr_t *hi)
{
	(void)code, (void)avail, (void)addr, (void)pad, (void)lo, (void)hi;
	return 0;
}

/* [reg] One common path for entries too: a kretprobe's pre_handler sets
 * regs[30], which the common code gives back to the detour. */
void arch_opt_at_entry(struct ukp_arch_opt *ao, bool kretprobe)
{
	(void)ao, (void)kretprobe;
}

/* [reg] No template for Go code here: Go probes stay breakpoints. */
size_t arch_go_stack_check_len(const uint8_t *code, size_t avail)
{
	(void)code, (void)avail;
	return 0;
}

/* [any] No epilogue forms known here: a return is probed at its ret. */
bool arch_func_exit(const uint8_t *code, size_t avail, struct arch_exit *e)
{
	(void)code, (void)avail, (void)e;
	return false;
}

/* [reg] (no Go template here) */
bool arch_go_exit_room(const uint8_t *fn, size_t fn_n, const uint8_t *code, size_t n)
{
	(void)fn, (void)fn_n, (void)code, (void)n;
	return false;
}

/* [reg] */
int arch_opt_go(struct ukp_arch_opt *ao, const char **why)
{
	(void)ao;
	*why = "Go code: a goroutine's stack has no room for the detour's frame";
	return -EOPNOTSUPP;
}

/* [reg] */
int arch_opt_go_leaf(struct ukp_arch_opt *ao, const char **why)
{
	(void)ao;
	*why = "Go code: a goroutine's stack has no room for the detour's frame";
	return -EOPNOTSUPP;
}

/* [trap] (no leaf detours here) */
const struct ukp_site *arch_go_leaf_trap(uintptr_t addr)
{
	(void)addr;
	return NULL;
}

/* [reg] (the one common path: nothing to prove) */
bool arch_opt_entry_template_ok(const uint8_t *code, size_t len)
{
	(void)code, (void)len;
	return true;
}

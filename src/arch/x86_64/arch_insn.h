/* SPDX-License-Identifier: MIT */
/*
 * arch_insn.h - x86-64 per-probe instruction state, as the core stores it
 * in each probe site. The core reads only len, ool, blocking, boostable
 * and the why (arch_insn_why); everything else is private to
 * src/arch/x86_64. (The slot's bytes are not kept: struct ukp_slot_img,
 * arch.h.)
 */
#ifndef UKP_ARCH_INSN_H
#define UKP_ARCH_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UKP_MAX_INSN_SIZE 15

/* The breakpoint (int3), its trap number (#BP) and the length of a
 * system call instruction (syscall, int $0x80): see arch.h. */
#define UKP_BREAKPOINT_INSN 0xcc
#define UKP_BREAKPOINT_BYTES { 0xcc }
#define UKP_BREAKPOINT_SIZE 1
/* The trap leaves ip past the int3. */
#define UKP_BREAKPOINT_IP_OFFSET 1
/* Code is written through /proc/self/mem (text_patch.c): no page of
 * the program is ever writable, and x86 needs no cache maintenance. */
#define UKP_TEXT_POKE_MEM 1

/* The optimized hit's fast path serves a kretprobe + kprobe pair at a
 * function's entry too (fastpath.h's fast_rp; optprobe_tramp.S). */
#define ARCH_FAST_KRP_PAIR 1

/* The core may step an instruction in place with the trap flag when
 * arch_watch_step cannot run it (src/watch.c). */
#define ARCH_WATCH_STEP_IN_PLACE 1
#define UKP_TRAPNR_BREAKPOINT 3
/* The si_code of a SIGTRAP from int3 */
#define UKP_BREAKPOINT_SI_CODE SI_KERNEL
#define UKP_SYSCALL_INSN_SIZE 2

/* The signal restorer (nofault.S: mov $15, %rax; syscall) and where the
 * context is from its stack pointer (the frame's return address is
 * popped): see arch.h. */
#define UKP_RESTORER_SIZE 9
#define UKP_RESTORER_UC_OFFSET 0

/* [any] endbr64, which a probe on a function's entry goes past. */
static inline size_t arch_entry_skip(const uint8_t *code, size_t avail)
{
	return avail >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e &&
	       code[3] == 0xfa ? 4 : 0;
}

/* [any] The jmp rel32 of an optimized probe, or its first prefix: a
 * punned jump may start with up to 3 of these (ES override: ignored by a
 * jmp in 64-bit mode, unlike 0x66, which AMD CPUs honour) to move its
 * rel32 by one byte each (E9Patch's padded jumps). */
#define UKP_OPT_PAD_PREFIX   0x26
static inline bool arch_is_opt_jump(const uint8_t *code)
{
	return code[0] == 0xe9 || code[0] == UKP_OPT_PAD_PREFIX;
}

/* [trap] b: the UKP_BREAKPOINT_CHECK_LEN bytes at a breakpoint's
 * address + UKP_BREAKPOINT_CHECK_OFF, here the two bytes before the trap
 * address: our int3 (the second) or the program's "int $3" (cd 03),
 * which leaves the address two on. */
#define UKP_BREAKPOINT_CHECK_OFF (-1)
#define UKP_BREAKPOINT_CHECK_LEN 2
static inline bool arch_breakpoint_before(const uint8_t b[2])
{
	return b[1] == UKP_BREAKPOINT_INSN || (b[0] == 0xcd && b[1] == 0x03);
}
/*
 * A called function's entry, as the call frame information describes it:
 * the CFA is the stack pointer (DWARF register UKP_DWARF_SP) plus the
 * return address's size, and the return address is saved at CFA minus
 * that size (the CIE's initial row of every x86-64 compiler).
 */
#define UKP_DWARF_SP 7
#define UKP_RET_ADDR_SIZE 8

/* R_X86_64_IRELATIVE: the addend is an IFUNC resolver (arch.h). */
#define UKP_ARCH_R_IRELATIVE 37
/* Debian's multiarch directory name: where a library not loaded yet
 * is looked for when the search path misses (module_file.c). */
#define UKP_ARCH_MULTIARCH "x86_64-linux-gnu"
/* Bytes of one out-of-line slot: instruction + trailing int3, rounded. */
#define UKP_SLOT_SIZE 32
/*
 * The kprobe-booster: a boostable instruction has a second copy at
 * slot + UKP_BOOST_OFFSET, re-based for that address and followed by a
 * jmp rel32 back to addr + len (no trailing trap). The slot is then
 * [insn][int3]... at 0 and [insn'][jmp rel32] at 16, so the boosted
 * instruction is at most UKP_BOOST_MAX_INSN bytes long.
 */
#define UKP_BOOST_OFFSET 16
#define UKP_BOOST_JMP_SIZE 5
#define UKP_BOOST_MAX_INSN (UKP_SLOT_SIZE - UKP_BOOST_OFFSET - UKP_BOOST_JMP_SIZE)

struct ukp_arch_insn {
	uint8_t len;        /* length of the probed instruction */
	bool ool;           /* executed out of line (else emulated) */
	bool blocking;      /* may block for long (a system call): signals stay
			     * deliverable while its out-of-line copy runs */
	bool boostable;     /* ool and may run from the boost image (no trap back) */

	/* --- private to the arch code --- */
	uint8_t emu;        /* enum of the emulated operation */
	uint8_t cond;       /* jcc condition code (low 4 bits of opcode) */
	uint8_t addr_size;  /* address size in bits (loop/jrcxz: cx width) */
	uint8_t is_syscall; /* ool: fix rcx after the step */
	uint16_t imm;       /* ret imm16 */
	/* indirect branch operand */
	uint8_t ind_mem;    /* 1: memory operand, 0: register */
	uint8_t ind_base;   /* pt_regs index of the base (0xff none, 0xfe rip) */
	uint8_t ind_index;  /* pt_regs index of the index (0xff none) */
	uint8_t ind_scale;
	/* x86-64 displacements are at most 32 bits (rel8/rel32, disp8/disp32):
	 * sign-extended where they are used */
	int32_t rel;        /* relative displacement of a branch */
	int32_t ind_disp;
	/* static text explaining an error: its offset from insn.c's why_base
	 * (0: none), read by arch_insn_why; 32 bits keep a site in 160
	 * bytes (kprobes.c) */
	int32_t why_off;
};

/*
 * Jump optimization (optprobe.c, optprobe_tramp.S). A detour buffer is
 * UKP_DETOUR_SIZE bytes taken from the slot chunks (within +-2 GiB of
 * the probe):
 *   0   the entry: red zone, push the site, call the shared template
 *       (Go code's: no red zone, push the site, call, drop it: arch_opt_go)
 *   25  the displaced instructions, relocated (UKP_OPT_COPY_OFFSET)
 *       jmp rel32 to addr + len (none when a ret, jmp or call ends the
 *       copy; a relocated call carries its return address after it)
 *   80  two literals: the site, the shared template's address
 * A breakpoint hit on a probe whose detour is ready goes straight to the
 * copy at UKP_OPT_COPY_OFFSET (no single step).
 */
/* Slots and detours within a rel32's reach (insn_slot.c); instructions
 * have no fixed length (optimizer.c). */
#define UKP_SLOT_REACH       ((1UL << 31) - (1UL << 20))
/* The end of user space with 4-level paging (47 bits less the last page);
 * with 5-level paging the kernel maps above it only when asked to. */
#define UKP_USER_TOP         0x7ffffffff000UL
#define UKP_INSN_FIXED_LEN   0
#define UKP_DETOUR_SIZE      96
#define UKP_OPT_COPY_OFFSET  25
#define UKP_OPT_JUMP_SIZE    5
#define UKP_OPT_MAX_REGION   20   /* 4 bytes of short instructions + one of 15 */
#define UKP_OPT_MAX_INSNS    8
/* Longest relocated instruction: call *m(%rip) becomes push 6(%rip);
 * jmp *m'(%rip); the 8-byte return address (6 + 6 + 8). */
#define UKP_OPT_RELOC_MAX    20

struct ukp_arch_opt {
	uint8_t len;                          /* bytes the jump replaces (whole insns) */
	uint8_t span;                         /* bytes the jump occupies: len, or
					       * more for a punned jump, whose last
					       * bytes are the next instructions' */
	uint8_t code_len;                     /* of which run: up to the end of the
					       * copy (the ret/jmp/call ending it) */
	uint8_t ninsn;                        /* instructions copied */
	/* where each copied instruction starts: in the region, in the copy */
	uint8_t map_orig[UKP_OPT_MAX_INSNS], map_copy[UKP_OPT_MAX_INSNS];
	uint8_t jump[UKP_OPT_JUMP_SIZE];      /* jmp rel32 to the detour */
	uint8_t image[UKP_DETOUR_SIZE];       /* the detour */
	uint8_t copy_end;                     /* the image's copy ends here */
	bool go;                 /* Go code: the Go template (arch_opt_go) */
};

/* The breakpoint the Go template of a detour falls back to
 * (optprobe_tramp.S): the detour's frame is then on the stack, the site
 * UKP_GO_TRAP_SITE above the stack pointer, the probed code's stack
 * pointer UKP_GO_TRAP_FRAME above it (trap.c). */
extern char ukp_optprobe_go_trap[];
#define UKP_GO_TRAP ((uintptr_t)ukp_optprobe_go_trap)
#define UKP_GO_TRAP_SITE 8
#define UKP_GO_TRAP_FRAME 16

#endif /* UKP_ARCH_INSN_H */

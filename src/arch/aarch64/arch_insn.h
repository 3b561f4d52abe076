/* SPDX-License-Identifier: MIT */
/*
 * arch_insn.h - AArch64 per-probe instruction state, as the core stores
 * it in each probe site, and the constants of the arch interface (arch.h).
 * The core reads only len, ool, blocking, why and boostable; everything
 * after them is private to src/arch/aarch64 (insn.c fills it, core.c
 * reads it in the trap). The slot's bytes (struct ukp_slot_img, arch.h)
 * are not kept.
 *
 * The AArch64 meaning of the arch.h contracts (insn.c, core.c):
 *
 *  - Every instruction is 4 bytes, 4-aligned, little-endian in memory.
 *
 *  - arch_check_boundary(code, off, avail): code[0] is the function's
 *    start. 0 when off is a multiple of 4 and the 4 bytes at off are
 *    readable; -EILSEQ when off is not 4-aligned (or not readable);
 *    -EINVAL when off is inside a load/store-exclusive sequence: a
 *    load-exclusive (ldxr, ldaxr, ldxp, ...) precedes it, within the
 *    function and at most UKP_EXCL_SCAN_BYTES back, with no
 *    store-exclusive between them (the kernel's is_probed_address_atomic).
 *    A trap there would clear the exclusive monitor, the store-exclusive
 *    would fail every time and the loop would never end.
 *
 *  - arch_prepare_insn(): len is always 4. The instruction is either
 *      simulated (ool false; core.c): b, bl, b.cond (and bc.cond), cbz,
 *        cbnz, tbz, tbnz, br, blr, ret (plain register forms), adr, adrp,
 *        ldr (literal) of a W or X register, ldrsw (literal); bl, blr
 *        and ret are refused (-EOPNOTSUPP) under a guarded control
 *        stack (arch_shadow_stack_active());
 *      or run out of line (ool true): slot_image = the instruction, then
 *        brk #0x006 (UKP_SSTEP_BREAKPOINT_INSN), slot_len 8; svc sets
 *        blocking. When the instruction may run without a trap back and
 *        a b from slot + UKP_BOOST_OFFSET + 4 reaches addr + 4 (+-128 MiB),
 *        boostable is set and boost_image = the instruction, then
 *        "b addr + 4", boost_len 8. No out-of-line instruction reads pc,
 *        so neither copy needs re-basing.
 *    Refused, with ai->why set:
 *      -EILSEQ     addr or avail wrong, an exception instruction (brk,
 *                  hlt, hvc, smc, dcps, udf) or an encoding known to be
 *                  unallocated;
 *      -EINVAL     a load/store exclusive (ldxr, stxr, ldaxp, ...): the
 *                  trap between it and its partner breaks the sequence;
 *      -EOPNOTSUPP reads pc and is not simulated (FP/SIMD ldr literal,
 *                  prfm literal), pointer-authenticated branches (braa,
 *                  blraa, retaa, ...), exception returns (eret, eretaa,
 *                  drps), memory copy/set (cpyp/cpym/cpye, set*: the
 *                  kernel restarts them from the first of the three, at
 *                  pc - 4 or - 8), transactional tstart/tcancel.
 *
 *  - arch_emulate(): on entry regs->pc == addr (the brk's address). Sets
 *    pc, x30 (bl, blr), the destination register (adr, adrp, ldr literal;
 *    31 is xzr) and PSTATE.BTYPE as the instruction would (br 01, blr 10,
 *    every other 00); a literal load that faults changes nothing and
 *    returns -EFAULT with *fault_addr the literal's address.
 *  - arch_resume_ool(): on entry regs->pc == slot + 4 (the trailing brk);
 *    only pc changes, to addr + 4.
 *  - arch_insn_length(): 4, or 0 when fewer than 4 bytes are available or
 *    the word is an encoding known to be unallocated.
 *  - arch_relocate_insn() (reloc.c): the copy of one instruction for a
 *    detour at dest, pc-relative forms re-encoded or rewritten, at most
 *    UKP_OPT_RELOC_MAX bytes; -EINVAL when a target is out of reach from
 *    dest, -EOPNOTSUPP for what cannot run from a copy, -EILSEQ for
 *    exception instructions and unallocated encodings.
 *  - arch_patchable_nops() (reloc.c): 4 when the entry starts with a nop
 *    (one covers the 4-byte jump), else 0.
 */
#ifndef UKP_ARCH_INSN_H
#define UKP_ARCH_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UKP_MAX_INSN_SIZE 4

/*
 * The probe's breakpoint: brk #0x004, the kernel's BRK64_OPCODE_KPROBES
 * (so a debugger tells it from its own brk #0). At EL0 the kernel turns
 * every brk into SIGTRAP (TRAP_BRKPT) except uprobes' brk #0x005, which
 * is therefore not used. A uint32_t value; in memory it is the
 * little-endian UKP_BREAKPOINT_BYTES. The trap leaves pc AT the brk
 * (x86's int3 leaves ip past it).
 */
#define UKP_BREAKPOINT_INSN UINT32_C(0xd4200080)
#define UKP_BREAKPOINT_BYTES { 0x80, 0x00, 0x20, 0xd4 }
#define UKP_BREAKPOINT_SIZE 4
#define UKP_BREAKPOINT_IP_OFFSET 0
/* The trap at the end of an out-of-line step: brk #0x006, the kernel's
 * BRK64_OPCODE_KPROBES_SS. */
#define UKP_SSTEP_BREAKPOINT_INSN UINT32_C(0xd42000c0)

/*
 * What arch_uc_trapnr() returns for a brk: the exception class of BRK64
 * in ESR_EL1 (ESR_ELx_EC_BRK64). The signal frame's ESR record cannot
 * say it: a brk at EL0 ends in send_user_sigtrap(), which does not set
 * the fault code that record reports (only arm64_notify_die() does), so
 * arch_uc_trapnr() must tell a brk from the instruction at pc
 * (arch_breakpoint_at).
 */
#define UKP_TRAPNR_BREAKPOINT 0x3c
/* The si_code of a SIGTRAP from brk */
#define UKP_BREAKPOINT_SI_CODE TRAP_BRKPT

/* svc #0 */
#define UKP_SYSCALL_INSN_SIZE 4

/*
 * 0: code is written through a store to a page made writable for it,
 * then __builtin___clear_cache (text_patch.c). The instruction cache of
 * AArch64 does not snoop stores; and under qemu-user a write through
 * /proc/self/mem would bypass the emulator's detection of modified code
 * (stale translations).
 */
#define UKP_TEXT_POKE_MEM 0

/* The optimized hit's fast path serves one probe a site, not the
 * kretprobe + kprobe pair of fastpath.h's fast_rp. */
#define ARCH_FAST_KRP_PAIR 0

/* No single-step in user space: an instruction arch_watch_step cannot
 * perform (SVE, memory tagging, ...) is not stepped in place; the
 * program gets the fault (src/watch.c, doc/watchpoints.md). */
#define ARCH_WATCH_STEP_IN_PLACE 0

/* [any] AArch64 instructions in memory: a little-endian word. */
static inline uint32_t arch_a64_read_insn(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

/*
 * [any] Bytes a probe on a function's entry goes past: none on AArch64.
 * The kernel's arm64 kprobes have no arch_adjust_kprobe_addr (only x86
 * and powerpc do), and a BTI landing pad (bti c, bti jc) or paciasp /
 * pacibsp at the entry is itself probe-able: the brk that replaces it is
 * a valid target of blr in a guarded page (it traps as a breakpoint, not
 * as a Branch Target exception), and the instruction runs out of line
 * from the unguarded slot (pacia* signs x30 with sp, neither reads pc).
 */
static inline size_t arch_entry_skip(const uint8_t *code, size_t avail)
{
	(void)code;
	(void)avail;
	return 0;
}

/* [any] The instruction an optimized probe writes: b imm26. */
static inline bool arch_is_opt_jump(const uint8_t *code)
{
	return (arch_a64_read_insn(code) & UINT32_C(0xfc000000)) == UINT32_C(0x14000000);
}

/*
 * [trap] b: the 4 bytes AT a breakpoint's trap pc. A brk of any
 * immediate: ours (#0x004, #0x006) or the program's own (brk #0, from
 * __builtin_trap or a debugger).
 */
static inline bool arch_breakpoint_at(const uint8_t b[4])
{
	return (arch_a64_read_insn(b) & UINT32_C(0xffe0001f)) == UINT32_C(0xd4200000);
}

/* The arch.h spelling: the check reads UKP_BREAKPOINT_CHECK_LEN bytes at
 * the breakpoint's address + UKP_BREAKPOINT_CHECK_OFF, here the brk
 * itself. */
#define UKP_BREAKPOINT_CHECK_OFF 0
#define UKP_BREAKPOINT_CHECK_LEN 4
static inline bool arch_breakpoint_before(const uint8_t b[4])
{
	return arch_breakpoint_at(b);
}

/*
 * A called function's entry as the call frame information describes it:
 * DWARF register 31 is sp. Unlike x86 the return address is not on the
 * stack at the entry but in x30 (CFA = sp + 0, return address column
 * x30 "same value"): UKP_RET_ADDR_SIZE is the size of an address, and
 * func_entry.c's x86 check of the initial row needs an AArch64 version.
 */
#define UKP_DWARF_SP 31
#define UKP_RET_ADDR_SIZE 8

/* R_AARCH64_IRELATIVE: the addend is an IFUNC resolver (arch.h). */
#define UKP_ARCH_R_IRELATIVE 1032
/* Debian's multiarch directory name: where a library not loaded yet
 * is looked for when the search path misses (module_file.c). */
#define UKP_ARCH_MULTIARCH "aarch64-linux-gnu"

/* Bytes of one out-of-line slot: [insn][brk #6] at 0, the boost copy
 * [insn][b addr+4] at UKP_BOOST_OFFSET. */
#define UKP_SLOT_SIZE 32
#define UKP_BOOST_OFFSET 16
#define UKP_BOOST_JMP_SIZE 4
#define UKP_BOOST_MAX_INSN (UKP_SLOT_SIZE - UKP_BOOST_OFFSET - UKP_BOOST_JMP_SIZE)

/*
 * How far back arch_check_boundary looks for an open load-exclusive:
 * the kernel's MAX_ATOMIC_CONTEXT_SIZE (32 instructions). The
 * architecture only promises progress for short exclusive loops, so a
 * sequence longer than this is not expected.
 */
#define UKP_EXCL_SCAN_BYTES 128

struct ukp_arch_insn {
	uint8_t len;        /* always 4 */
	bool ool;           /* executed out of line (else simulated) */
	bool blocking;      /* svc: signals stay deliverable while it runs */
	bool boostable;     /* ool and may run from the boost image */

	/* --- private to src/arch/aarch64 (but why) --- */
	uint32_t opcode;    /* the original instruction */
	uint8_t sim;        /* enum ukp_a64_sim (sim_ops.h), 0 when ool */
	uint8_t reg;        /* Rt / Rn / Rd; 31 is xzr for every simulated form */
	uint8_t cond;       /* b.cond condition */
	uint8_t bit;        /* tbz/tbnz bit number, 0..63 */
	uint8_t is64;       /* cbz/cbnz: compare the X (1) or the W (0) register */
	/* (why here: the small fields fill the words before it, 32 bytes in all) */
	const char *why;    /* static text explaining an error, or NULL */
	int64_t imm;        /* byte offset from addr (adrp: from addr's 4 KiB page) */
};

/*
 * Jump optimization: the jump an optimized probe writes is a b imm26
 * (+-128 MiB), one instruction like the breakpoint. The longest copy of
 * one relocated instruction (reloc.c) is a call: ldr x30, literal; b or
 * br; the 8-byte return address. The detour's layout and struct
 * ukp_arch_opt belong to optprobe.c, which is not ported yet.
 */
#define UKP_OPT_JUMP_SIZE 4
#define UKP_OPT_RELOC_MAX 16

/* The signal restorer (nofault.S: mov x8, #139; svc #0) and where the
 * context is from its stack pointer: the kernel's rt_sigframe starts
 * with the siginfo (see arch.h). */
#define UKP_RESTORER_SIZE 8
#define UKP_RESTORER_UC_OFFSET 128

/*
 * Jump optimization (optprobe.c): one `b` over one instruction, to a
 * detour of UKP_DETOUR_SIZE bytes whose relocated copy starts at
 * UKP_OPT_COPY_OFFSET. Slots and detours are within a b's reach
 * (UKP_SLOT_REACH, insn_slot.c). Every instruction is
 * UKP_INSN_FIXED_LEN bytes: a region of one instruction has no middle
 * to jump into (optimizer.c).
 */
#define UKP_DETOUR_SIZE      64
#define UKP_OPT_COPY_OFFSET  28
#define UKP_OPT_MAX_REGION   4
#define UKP_OPT_MAX_INSNS    1
#define UKP_SLOT_REACH       ((1UL << 27) - (1UL << 20))
/* The end of user space with 48-bit addresses, the most a kernel maps
 * without a hint; a kernel with fewer bits refuses places above its own
 * end, which insn_slot.c then does not try again. */
#define UKP_USER_TOP         (1UL << 48)
#define UKP_INSN_FIXED_LEN   4

struct ukp_arch_opt {
	uint8_t len;
	uint8_t span;            /* = len: no punned jump here */
	uint8_t code_len;
	uint8_t ninsn;
	uint8_t map_orig[UKP_OPT_MAX_INSNS], map_copy[UKP_OPT_MAX_INSNS];
	uint8_t jump[UKP_OPT_JUMP_SIZE];
	uint8_t image[UKP_DETOUR_SIZE];
	bool go;                 /* Go code: the Go template (arch_opt_go) */
};

/* No Go template here (arch_opt_go): no fallback breakpoint. */
#define UKP_GO_TRAP ((uintptr_t)0)
#define UKP_GO_TRAP_SITE 0
#define UKP_GO_TRAP_FRAME 0

#endif /* UKP_ARCH_INSN_H */

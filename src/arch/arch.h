/* SPDX-License-Identifier: MIT */
/*
 * arch.h - the narrow interface between the arch-independent core and the
 * architecture code (src/arch/<arch>/). The core never looks at opcodes;
 * the arch code never touches the probe table.
 *
 * Conventions:
 *  - "code" buffers hold the *original* bytes of the probed text (the core
 *    has already put back the bytes its own breakpoints replaced).
 *  - Functions marked [trap] run in the SIGTRAP/SIGSEGV handler: they must
 *    be async-signal-safe, allocation-free and call no libc function.
 *  - Functions marked [reg] run at registration time under the registry
 *    mutex; they may allocate.
 */
#ifndef UKP_ARCH_H
#define UKP_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "ukprobes.h"
#include "arch_insn.h" /* struct ukp_arch_insn, UKP_* constants of this arch */
#include "arch_tls.h"  /* arch_thread_pointer(), arch_cpu_relax() */
#include "arch_jprobe.h" /* struct arch_jprobe_vec */
#include "syscall_raw.h" /* arch_syscall3/4/6(): raw system calls */

/*
 * What arch_prepare_insn() puts in an out-of-line instruction's slot:
 * written there once (the site keeps only struct ukp_arch_insn).
 */
struct ukp_slot_img {
	uint8_t slot_len;   /* bytes of slot_image in use */
	uint8_t boost_len;  /* bytes of boost_image in use (0: not boosted) */
	uint8_t slot_image[UKP_SLOT_SIZE];
	uint8_t boost_image[UKP_SLOT_SIZE - UKP_BOOST_OFFSET]; /* for slot + UKP_BOOST_OFFSET */
};

/*
 * [reg] Walk instructions from the start of a function to decide whether
 * the byte at code[off] starts an instruction. code[0] is the function's
 * first byte; avail bytes of code are readable (avail > off).
 * Returns 0 (on a boundary), -EILSEQ (not on a boundary, or a byte
 * sequence before it does not decode) or -EINVAL (the arch cannot probe
 * there: AArch64 inside a load/store-exclusive sequence).
 */
int arch_check_boundary(const uint8_t *code, size_t off, size_t avail);

/*
 * [reg] Decode and prepare the instruction at addr for probing.
 *   code/avail: the original bytes starting at addr (avail >= 1; up to
 *               UKP_MAX_INSN_SIZE bytes are used).
 *   slot:       the address of the out-of-line slot the instruction will
 *               run from (needed to re-base rip-relative displacements).
 * Fills *ai, including ai->len, ai->ool and, when ai->ool, the slot image
 * *img (img->slot_image, img->slot_len bytes: the relocated instruction
 * followed by a trailing int3 at offset ai->len; img may be NULL). When
 * the instruction can be boosted (the kernel's can_boost rules, at most
 * UKP_BOOST_MAX_INSN bytes, never a system call), ai->boostable is set
 * and img->boost_image (img->boost_len bytes) holds the instruction
 * re-based for slot + UKP_BOOST_OFFSET followed by a jmp rel32 to
 * addr + len.
 * Returns 0 or:
 *   -EILSEQ     undecodable, or an exception instruction (int3, int n,
 *               into, int1, ud0, ud1, ud2)
 *   -EINVAL     mov/pop ss; a rip-relative displacement that does not fit
 *               in 32 bits from the slot (then also arch_insn_why)
 *   -EOPNOTSUPP neither executable out of line nor emulatable (far
 *               call/jmp/ret, iret, branches with a 0x66 prefix, xbegin,
 *               memory-indirect branches through fs/gs, ...)
 */
int arch_prepare_insn(struct ukp_arch_insn *ai, struct ukp_slot_img *img, const uint8_t *code,
		      size_t avail, uintptr_t addr, uintptr_t slot);
/* [any] Why arch_prepare_insn refused ai's instruction (static text), or
 * NULL. */
const char *arch_insn_why(const struct ukp_arch_insn *ai);

/*
 * [trap] Emulate a prepared instruction that has !ai->ool. On entry
 * regs->ip == addr + 1 (as at the breakpoint). On success set regs as the
 * instruction would (ip, sp, pushed/popped memory, cx for loop) and
 * return 0. If a memory access faults (stack push/pop, reading an indirect
 * target), leave regs unchanged, store the faulting address in
 * *fault_addr and return -EFAULT.
 */
int arch_emulate(const struct ukp_arch_insn *ai, uintptr_t addr, struct pt_regs *regs,
		 uintptr_t *fault_addr);

/*
 * [trap] After the out-of-line copy ran and hit its trailing int3:
 * regs->ip == slot + ai->len + 1. Make regs look as if the instruction
 * had run at addr: ip = addr + len, and any register the copy left with a
 * slot-relative value (e.g. rcx after syscall) is corrected.
 */
void arch_resume_ool(const struct ukp_arch_insn *ai, uintptr_t addr, uintptr_t slot,
		     struct pt_regs *regs);

/* [trap] Signal context <-> pt_regs. */
void arch_regs_from_ucontext(struct pt_regs *regs, const ucontext_t *uc);
void arch_regs_to_ucontext(ucontext_t *uc, const struct pt_regs *regs);
/* [trap] Instruction pointer of a signal context, read and set. */
uintptr_t arch_uc_ip(const ucontext_t *uc);
void arch_uc_set_ip(ucontext_t *uc, uintptr_t ip);
/* [trap] The hardware trap number the kernel recorded in the context. */
int arch_uc_trapnr(const ucontext_t *uc);

/* [trap] Copy without faulting (assembly with a fixup, see nofault.S).
 * Returns 0 or -EFAULT. */
long arch_copy_nofault(void *dst, const void *src, size_t n);
/* [trap] One aligned or unaligned machine word, the same way. */
long arch_load_word_nofault(uintptr_t *v, const void *src);
long arch_store_word_nofault(void *dst, uintptr_t v);
/* [trap] A dereference chain, the same way: n >= 1 times, v = *(v +
 * off[i]), 8 bytes but the last, size bytes (1, 2, 4, 8) for the last,
 * zero-extended; {0, v} or {-EFAULT, undefined}, in the two return
 * registers. */
struct ukprobes_fetched arch_fetch_nofault(uint64_t v, const long *off, unsigned long n,
					   unsigned long size);
/* [trap] True when a fault at ip is inside arch_copy_nofault; then
 * *fixup_ip is where execution must resume to return -EFAULT. */
bool arch_nofault_fixup(uintptr_t ip, uintptr_t *fixup_ip);

/*
 * [reg] IFUNC symbols (STT_GNU_IFUNC). UKP_ARCH_R_IRELATIVE is this
 * arch's ELF relocation whose addend is a resolver: the dynamic linker
 * stores what the resolver returned in the relocated word.
 * arch_ifunc_resolve() calls a resolver the way this arch's dynamic
 * linker does, and returns the implementation it chose.
 */
uintptr_t arch_ifunc_resolve(uintptr_t resolver);

/*
 * Code on the trap path goes into its own section so that it is
 * blacklisted as a whole (the static library puts all of its code there).
 */
#define UKP_TRAP_TEXT __attribute__((section("ukprobes_text")))

/*
 * Each arch's arch_insn.h gives, besides struct ukp_arch_insn:
 *   UKP_BREAKPOINT_BYTES, UKP_BREAKPOINT_SIZE  the breakpoint instruction
 *       (its bytes, an initializer, written first) and its length, which
 *       is sizeof(kprobe_opcode_t);
 *   UKP_BREAKPOINT_IP_OFFSET  how far past the breakpoint's address the
 *       trap leaves the instruction pointer (x86: 1, AArch64: 0);
 *   UKP_TEXT_POKE_MEM  1: code is written through /proc/self/mem;
 *       0: through a store to a page made writable for it, then the
 *       cache maintenance the architecture needs (text_patch.c);
 *   UKP_TRAPNR_BREAKPOINT  the trap number a breakpoint raises
 *       (arch_uc_trapnr()); UKP_BREAKPOINT_SI_CODE the si_code of its
 *       SIGTRAP (<signal.h>);
 *   UKP_SYSCALL_INSN_SIZE  the length of the system call instruction: a
 *       thread the kernel restarts in a system call resumes this far
 *       before the instruction pointer it reports (threads.c);
 *   arch_entry_skip(code, avail)  the bytes a function entry starts with
 *       that a probe on the entry goes past (the kernel's
 *       arch_adjust_kprobe_addr: x86's endbr64);
 *   arch_is_opt_jump(code)  whether code starts with the instruction an
 *       optimized probe writes (so that its original bytes are shown);
 *   arch_breakpoint_before(b)  whether the UKP_BREAKPOINT_CHECK_LEN
 *       bytes b at a breakpoint's address + UKP_BREAKPOINT_CHECK_OFF
 *       still hold a breakpoint (ours or the program's own).
 * Inline: the trap path calls them.
 */
/* arch_insn.h also gives UKP_RESTORER_SIZE, the length of the signal
 * restorer (ukp_restore_rt in nofault.S: rt_sigreturn), and
 * UKP_RESTORER_UC_OFFSET: a thread in it, or just past it in the system
 * call, returns to the signal context at its stack pointer plus that. */

/* ------------------------------------------------------ return probes */
/* src/arch/<arch>/kretprobe.c and the trampoline (kretprobe_tramp.S). */

/*
 * The return trampoline. A hijacked return address is its address. It
 * saves the registers and the extended (vector/x87) state, calls
 * ukp_kretprobe_dispatch (kretprobes.h), restores, and returns to the
 * address the dispatcher gave. The byte before it is covered by no FDE,
 * so that an unwinder that finds the trampoline address on the stack asks
 * for the FDE of that byte (see kretprobe_fde.c).
 */
extern char ukp_kretprobe_trampoline[];

/* [reg] Once, before the first return probe: size the trampoline's save
 * area for this CPU's extended state. Returns 0 or -errno. */
int arch_kretprobe_init(void);

/* [trap] At a hit of a probe on a function's first instruction: the
 * frame's identity, a stack address (x86: where the return address is;
 * AArch64: the stack pointer). Frames deeper in the stack have lower
 * slots. */
uintptr_t arch_kretprobe_ret_slot(const struct pt_regs *regs);

/*
 * arch_kretprobe.h, per arch: [trap] inline
 *   arch_kretprobe_get_ret(regs, slot, &ret), arch_kretprobe_set_ret(regs,
 *   slot, ret): read and replace the return address at a function's
 *   entry (false if memory faulted);
 *   arch_kretprobe_put_back(regs, slot, real): in the trampoline's
 *   dispatch, the real return address back where the return took it
 *   from (regs and slot as the trampoline passed them);
 *   UKP_KRP_RET_IN_SLOT: 1 if the return address stays in memory at the
 *   slot for the whole call (the unwinder interposers restore it there).
 */
#include "arch_kretprobe.h"

/* [any] True if the calling thread runs with a hardware shadow stack
 * (return addresses cannot be rewritten). One system call. */
bool arch_shadow_stack_active(void);

/* The unwinder's pseudo FDE for the trampoline is the core's
 * (kretprobe_fde.c), from arch_kretprobe.h's UKP_DWARF_RA_COLUMN,
 * UKP_DWARF_CODE_ALIGN and UKP_ENTRY_CFA_OFF, and arch_insn.h's
 * UKP_DWARF_SP. */

/* -------------------------------------------------- jump optimization */
/* src/arch/<arch>/optprobe.c and the shared template (optprobe_tramp.S). */

/* [reg] Once, before the first optimized probe: choose how the detour
 * keeps the vector state for this CPU. Returns 0 or -errno. */
int arch_opt_init(void);

/*
 * [reg] Build the detour of a probe at addr: code/avail are the original
 * bytes from addr on. The region is the first instructions covering at
 * least UKP_OPT_JUMP_SIZE bytes; each must be relocatable (see
 * arch_relocate_insn; rip-relative operands re-based for the detour). An
 * instruction that leaves (ret, jmp) ends the copy: the bytes after it
 * up to the region's end only have to decode, the control-flow check
 * says whether they may be overwritten (ao->code_len: the bytes up to
 * the end of that instruction). A call may only be the region's last
 * instruction. With ftrace_len != 0 the region is that many bytes of
 * NOPs and nothing is copied. pun_pad >= 0: a punned jump with that many
 * prefixes (below; detour in its window): the region is the first
 * instruction alone; -1: not punned. site is passed to ukp_optprobe_hit;
 * detour is the buffer's address. Fills ao (len, span: the bytes the
 * jump occupies, code_len, jump, image). Returns 0, or -errno with *why
 * set.
 */
int arch_opt_prepare(struct ukp_arch_opt *ao, const uint8_t *code, size_t avail, uintptr_t addr,
		     uintptr_t detour, const void *site, size_t ftrace_len, int pun_pad,
		     const char **why);

/*
 * [reg] Instruction punning (x86-64): when the instruction at addr is
 * shorter than the jump, a jump may replace it alone, its last bytes
 * being the following instructions' bytes, left as they are. Its target
 * is then fixed but for the bytes written: the detour must start in
 * [*lo, *hi] (computed modulo 2^64: the caller checks the range). pad:
 * the jump starts with that many ignored prefixes, which move its rel32
 * onto other bytes. Returns that instruction's length (the bytes the
 * jump writes), or 0 when there is no such jump (AArch64: every
 * instruction is as long as the b; x86: too many prefixes).
 */
size_t arch_opt_pun_window(const uint8_t *code, size_t avail, uintptr_t addr, unsigned int pad,
			   uintptr_t *lo, uintptr_t *hi);

/* How a relocated instruction ends the copy of a region. */
enum arch_reloc_end {
	ARCH_RELOC_NEXT,        /* falls through to the next copied instruction */
	ARCH_RELOC_LEAVES,      /* ret or jmp: nothing after it runs from the copy */
	ARCH_RELOC_CALL,        /* a call, relocated as "push addr + len; jmp
				 * target": the callee returns to the original
				 * code right after it, never to the copy */
};

/* [reg] Relocate one instruction for dest (see insn.c): the copy goes to
 * out (*out_len bytes, at most UKP_OPT_RELOC_MAX); *ends says whether
 * and how it ends the copy. Returns the original's length or -errno with
 * *why set. */
int arch_relocate_insn(const uint8_t *code, size_t avail, uintptr_t addr, uintptr_t dest,
		       uint8_t *out, size_t *out_len, enum arch_reloc_end *ends,
		       const char **why);
/* [reg] Length of the instruction at code, or 0 if it does not decode. */
size_t arch_insn_length(const uint8_t *code, size_t avail);

/* How an instruction leaves the straight line (func_returns.c). */
enum arch_insn_flow {
	ARCH_FLOW_NEXT,         /* falls through (calls, indirect jumps too) */
	ARCH_FLOW_RET,          /* a return */
	ARCH_FLOW_JUMP,         /* a direct jump, taken always or not: *target */
};
/* [reg] How the instruction at code (avail bytes, at addr) leaves; its
 * length in *len (0: it does not decode). */
enum arch_insn_flow arch_insn_flow(const uint8_t *code, size_t avail, uintptr_t addr,
				   size_t *len, uintptr_t *target);


/* An epilogue: straight-line code that frees the frame and returns,
 * and changes nothing else the return leaves (func_returns.c). */
struct arch_exit {
	size_t len;             /* through the return instruction, inclusive */
	size_t first;           /* its first instruction's length */
	unsigned long sp_adj;   /* the stack pointer at its start is this far below the return's */
	long fp_at;             /* the frame pointer at the return: the word at sp + fp_at */
};
/* [any] Does code (avail bytes) start an epilogue the arch knows (x86-64:
 * Go's compiler's, common/arch/x86_64/go_prologue.h)? Fills *e. */
bool arch_func_exit(const uint8_t *code, size_t avail, struct arch_exit *e);

/* [reg] Length of the run of NOP instructions at code that a function
 * built with -fpatchable-function-entry or -mfentry -mnop-mcount starts
 * with, if it is at least UKP_OPT_JUMP_SIZE bytes (else 0). */
size_t arch_patchable_nops(const uint8_t *code, size_t avail);

/* The shared half of every detour, and the callback it calls [detour]. */
extern char ukp_optprobe_common[], ukp_optprobe_common_end[];

/* [reg] After arch_opt_prepare, for a probe at a function's entry: the
 * detour calls the template that relies on the calling convention there
 * (no live flags, DF clear) to skip pushfq. kretprobe: the site's only
 * probe is a kretprobe, or its probes are the fast pair (fastpath.h's
 * fast_rp): its template installs the return trampoline without a frame
 * or a C call in the usual case, and enters so that the CPU predicts
 * the return to the trampoline. */
void arch_opt_at_entry(struct ukp_arch_opt *ao, bool kretprobe);

/*
 * [reg] Go code (doc/go_rust.md, "Jump-optimized Go probes"): the length
 * of the stack check the Go function whose first bytes are code starts
 * with, or 0 when it has none the arch knows. Past it, the goroutine's
 * stack has Go's stack guard free below the stack pointer.
 */
size_t arch_go_stack_check_len(const uint8_t *code, size_t avail);
/*
 * [reg] Go code: does the stack check of the function whose first bytes
 * are fn prove room below the stack pointer at the epilogue at code
 * (arch_func_exit), as it does right after the check? True when the
 * check covers the frame the epilogue frees: Go's stack limit is then
 * free below it, which the runtime keeps when it moves the stack.
 */
bool arch_go_exit_room(const uint8_t *fn, size_t fn_n, const uint8_t *code, size_t n);
/*
 * [reg] After arch_opt_prepare, for a probe in Go code past the stack
 * check: the detour calls the template that moves to a stack of the
 * thread's own before anything else (the goroutine's is small), and
 * falls back to a breakpoint hit when the thread has none yet. 0, or
 * -errno with *why when the arch has no such template.
 */
int arch_opt_go(struct ukp_arch_opt *ao, const char **why);
/*
 * [reg] After arch_opt_prepare, for a probe at the first instruction of
 * a Go leaf (a function without a stack check: no byte of the
 * goroutine's stack to spare): the detour takes the thread's own words
 * instead, moves to the thread's stack, and falls back to a breakpoint
 * hit when it cannot (arch_go_leaf_trap). 0, or -errno with *why.
 */
int arch_opt_go_leaf(struct ukp_arch_opt *ao, const char **why);
/*
 * [trap] A breakpoint trap at addr that is a Go leaf detour's fallback
 * (arch_opt_go_leaf): the site it is a hit of (as a breakpoint at the
 * probe, with the probed code's registers), its hold on the thread's
 * words released; NULL when addr is no such fallback.
 */
struct ukp_site;
const struct ukp_site *arch_go_leaf_trap(uintptr_t addr);
/* [reg] May a probe anywhere in the function whose code is [code, code +
 * len) take that template too, as an SDT probe's nop may (where the
 * compiler keeps no flag live: usdt.h)? True when nothing in it can set
 * what the template leaves alone (x86: no std, popf or iret: DF stays
 * clear, as the calling convention has it at the entry and after every
 * call); false when in doubt (code that does not decode). */
bool arch_opt_entry_template_ok(const uint8_t *code, size_t len);

/* ------------------------------------------------------ vector state */
/* src/arch/<arch>/vecuse.c, vecsafe_tramp.S; used by vecstate.c. */

/*
 * [reg] Can code reachable from fn change the vector, x87 or MXCSR state
 * (or read it)? The walk follows branches, direct calls and calls through
 * bound GOT slots; calls to the functions in safe[] (which keep that
 * state themselves) are not followed. An indirect call fails the walk
 * unless flags has ARCH_VF_INDIRECT_CALLS_OK. read gives the original
 * code bytes (ukp_read_original). Returns 1 (it cannot), 0 (it may, or
 * the walk could not tell: *why and *where say what and where), or
 * -errno.
 */
#define ARCH_VF_INDIRECT_CALLS_OK 1u
int arch_code_vector_free(uintptr_t fn, unsigned int flags, const uintptr_t *safe, size_t nsafe,
			  size_t (*read)(uintptr_t addr, uint8_t *buf, size_t len),
			  const char **why, uintptr_t *where);

/* [detour] Call f(arg) with the vector, x87 and MXCSR state saved around
 * it (hand-saved registers, or XSAVE; the same code the templates use
 * when they save it themselves); returns what f returned. */
int arch_vecsafe_call(int (*f)(void *arg), void *arg);

/* Read by the templates (optprobe_tramp.S, kretprobe_tramp.S): non-zero
 * once the library's own hit path was proven vector-free (vecstate.c),
 * so that they need not save the vector state themselves. */
extern uint32_t ukp_vec_lazy;

/* ------------------------------------------------------------ jprobes */
/* src/arch/<arch>/jprobe.c and jprobe.S; used by jprobes.c and trap.c. */

/* jprobe_return()'s breakpoint, and the return address a jprobe handler
 * gets: its breakpoint (a handler that returned without jprobe_return). */
extern char ukp_jprobe_return_bp[], ukp_jprobe_handler_ret[];
/* [any] jprobe_return()'s trap (the int3 at ukp_jprobe_return_bp). */
void arch_jprobe_return_trap(void);

/* [reg] Once, before the first jprobe. 0, or -errno: jprobes cannot
 * work here (register_jprobe fails with it). */
int arch_jprobe_init(void);
/*
 * [trap] Make regs, the registers of a hit at a function's entry, those
 * that start the handler at entry, on a copy of the stack top placed
 * below regs->sp (the probed function's stack is not written; the
 * handler's return address is ukp_jprobe_handler_ret); the trap writes
 * them into the signal context. st must stay valid until the handler
 * starts (per-thread state). 0, or -EFAULT with regs unchanged.
 */
int arch_jprobe_start(struct pt_regs *regs, struct arch_jprobe_start *st, uintptr_t entry);
/* [trap] Keep the vector registers that may carry arguments at a
 * function's entry, from a signal frame; put them back into another. */
void arch_jprobe_save_vec(struct arch_jprobe_vec *v, const ucontext_t *uc);
void arch_jprobe_restore_vec(ucontext_t *uc, const struct arch_jprobe_vec *v);

/* -------------------------------------------------- data watchpoints */
/* src/arch/<arch>/watch.c and watch_exec.S (page protection, see
 * src/watch.c). */

#define ARCH_WATCH_R 1 /* = HW_BREAKPOINT_R */
#define ARCH_WATCH_W 2 /* = HW_BREAKPOINT_W */
#define ARCH_WATCH_MAX_ACCESS 2

/* One access of an instruction: [addr, addr + len), ARCH_WATCH_R/W. */
struct arch_watch_access {
	uintptr_t addr;
	size_t len;
	unsigned int type;
};

/* A fault the instruction raises for the program. */
struct arch_watch_fault {
	int sig, code;
	uintptr_t addr;
};

/* The core's access to the program's memory, protected pages included
 * ([trap]; the caller of arch_watch_step holds the watch lock). */
struct arch_watch_mem {
	/* 0 if the program may read (write) every byte of the range now,
	 * else -EFAULT with *fault the first byte it may not */
	int (*check)(uintptr_t addr, size_t len, bool write, uintptr_t *fault);
	/* 0 or -EFAULT; they bypass the protection */
	long (*read)(void *dst, uintptr_t src, size_t n);
	long (*write)(uintptr_t dst, const void *src, size_t n);
};

/* [reg] Once, before the first watchpoint. 0 or -errno. */
int arch_watch_init(void);
/*
 * [trap] Run the instruction at regs->ip for the program with its
 * memory accesses through m. 0: regs as after it (ip at the next
 * instruction), acc[0..*nacc) what it read and wrote. -EFAULT: it faults
 * for the program (*f). -EOPNOTSUPP: it cannot run this way; acc[] holds
 * what it would access as far as the decoder tells. ARCH_WATCH_EXCL_OPEN
 * (AArch64): see below.
 */
int arch_watch_step(const struct arch_watch_mem *m, struct pt_regs *regs, ucontext_t *uc,
		    struct arch_watch_access *acc, unsigned int *nacc, struct arch_watch_fault *f);
/* What arch_watch_step returns for a load-exclusive on a page closed to
 * reads: acc[] is its read, regs are unchanged, and the core reports it
 * and leaves the page readable (not writable) until the next access it
 * runs there (the store-exclusive): the CPU's own load arms the
 * exclusive monitor, which a load performed for it cannot. */
#define ARCH_WATCH_EXCL_OPEN 1
/* [trap] A fault at ip inside the code arch_watch_step runs: resume at
 * *fixup_ip (the fault is recorded for arch_watch_step). */
bool arch_watch_fixup(uintptr_t ip, int sig, int code, uintptr_t addr, uintptr_t *fixup_ip);
/* [trap] 0 if the program may write the byte at addr now (an atomic
 * no-op write), else -EFAULT. */
long arch_watch_probe_write(uintptr_t addr);
/* [trap] Was the page fault of uc a write? */
bool arch_uc_fault_write(const ucontext_t *uc);
/* [trap] Single-step the thread of uc (trap flag), and stop. */
void arch_uc_set_single_step(ucontext_t *uc, bool on);

#endif /* UKP_ARCH_H */

/* SPDX-License-Identifier: MIT */
/*
 * optprobe_tramp.S - the shared half of every jump-optimized probe (the
 * kernel's optprobe_template, for a process). No trap: the probe point's
 * first bytes are a jmp rel32 to the probe's detour buffer (optprobe.c
 * builds it):
 *
 *   detour+0   lea -128(%rsp), %rsp        step over the red zone
 *   detour+5   push site(%rip)             the probe, for the callback
 *   detour+11  call *common(%rip)          here
 *   detour+17  lea 136(%rsp), %rsp         drop the site and the red zone
 *   detour+25  the displaced instructions, relocated
 *              jmp addr + len
 *
 * On entry here:
 *   0(%rsp)    return address (detour + 17)
 *   8(%rsp)    the site
 *   16(%rsp)   the probed code's red zone (128 bytes)
 *   144(%rsp)  where the probed code's stack pointer points
 *
 * The frame: the flags (pushfq), a struct pt_regs with every general
 * register, the flags and the probed code's sp, then, 64-byte aligned,
 * the vector/x87 save area. ukp_optprobe_hit(regs, site) runs the
 * handlers; general registers come back from pt_regs (a handler may
 * change them), ip and sp changes are ignored (kprobes.rst, "NOTE for
 * geeks").
 *
 * Vector and x87 state: nothing to do when the library's hit path is
 * proven vector-free (ukp_vec_lazy, vecstate.c): the C side then saves
 * the state around each handler that is not (arch_vecsafe_call), and a
 * hit whose handlers are vector-free touches none of it, like the
 * kernel's optprobes. Otherwise VEC_SAVE/VEC_RESTORE (tramp.h) keep it
 * here, below pt_regs.
 *
 * Flags come back without popfq (slow): OF by an add, the other
 * arithmetic flags by sahf, DF by std when it was set. A handler's change
 * of TF, AC, ID or IF in regs->flags is ignored.
 */
#include "tramp.h" /* pt_regs, and fastpath_ops.h: the blocks and primitives */
#include "go_leaf.h" /* a Go leaf's detour and FS words */

/* Offset from rsp after pushfq + sub PT_SIZE to the probed code's sp. */
#define ENTRY_SP  (PT_SIZE + 8 + 144)
#define SITE_SLOT (PT_SIZE + 8 + 8)

	.macro SAVE_GPRS_BUT_AX
	movq %r15, PT_R15(%rsp)
	movq %r14, PT_R14(%rsp)
	movq %r13, PT_R13(%rsp)
	movq %r12, PT_R12(%rsp)
	movq %rbp, PT_BP(%rsp)
	movq %rbx, PT_BX(%rsp)
	movq %r11, PT_R11(%rsp)
	movq %r10, PT_R10(%rsp)
	movq %r9, PT_R9(%rsp)
	movq %r8, PT_R8(%rsp)
	movq %rcx, PT_CX(%rsp)
	movq %rdx, PT_DX(%rsp)
	movq %rsi, PT_SI(%rsp)
	movq %rdi, PT_DI(%rsp)
	.endm

	/*
	 * The entry of the pair's kretprobe (FAST_HIT with pair=1; the
	 * site's fast_rp, fastpath.h): the newer of the site's two probes,
	 * so it goes first, as on the C path. The work of the kretprobe
	 * entry template below, with the frame already made: rsi is the
	 * kretprobe (kp first), r9 its holder (KRP_HOLDER), rbx pt_regs,
	 * r13 the thread's ukp_ctl; the thread's state is the hit's (the
	 * handler's call comes next). Where the template would take the C
	 * path (no return stack yet, chained, no room, no instance), the
	 * pre_handler itself is called: it has no entry_handler to call,
	 * so it runs no user code. Clobbers the caller-saved registers and
	 * r12; rbp = rbx = pt_regs after it.
	 */
	.macro KRP_PAIR_ENTRY
	movq %rbx, %rbp				/* over POOL_POP, which takes rbx */
	movq FT_RSTACK(%r13), %rdi		/* the return stack */
	testq %rdi, %rdi
	jz 91f
	leaq ENTRY_SP(%rbx), %rcx		/* the return slot */
	movq (%rcx), %r11			/* the return address */
	leaq ukp_kretprobe_trampoline(%rip), %rax
	cmpq %rax, %r11
	je 91f					/* chained */
	RSTACK_ROOM %rdi, %rcx, %r10, %r10d, %rax, 91f
	SPARE_TAKE %rdi, %r9, 92f
	POOL_POP %r9, 91f
92:	INST_INIT %rax, %r11, %rsi, %rdi, %rdx
	RSTACK_PUSH %rdi, %r10, %r10d, %rcx, %r11, %rax, %rdx
	leaq ukp_kretprobe_trampoline(%rip), %rax
	movq %rax, (%rcx)
	jmp 93f
91:	movq %rsi, %rdi
	movq %rbp, %rsi
	call ukp_kretprobe_pre_handler
93:	movq %rbp, %rbx
	.endm

	/*
	 * The fast path of a lazy hit (ukp_optprobe_hit's work for the
	 * usual case, without the C calls): the thread is idle (no probe
	 * status, handler, read side or held-back signals), has its
	 * grace-period record, no writer asked for heavy read-side fences,
	 * and the site's only probe is enabled, has no post_handler and
	 * still has the pre_handler proven vector-free at registration
	 * (the per-site block's fast_kp/fast_pre, kept by kprobes.c; see
	 * src/fastpath.h). Anything else goes
	 * to .Lslow, the C path, with nothing changed.
	 *
	 * The per-thread state is set as ukp_optprobe_hit and call_outer
	 * set it, in the same order: signals held back first, then the
	 * probe status and the read side. errno is kept in the pushfq slot
	 * (unused once the flags are in pt_regs). A fault in the handler
	 * comes back to 3: by the fault handler's __builtin_longjmp (frame
	 * pointer = pt_regs, the label, the stack pointer at the call).
	 * Registers: rbx pt_regs, r13 the thread's ukp_ctl (in its
	 * per-thread block: TB_CTL), r14 the thread's record, r15 the site; every one of
	 * them is restored from pt_regs afterwards. found=1 (the Go
	 * template): the caller found the block at the GS base to be the
	 * thread's and loaded r15 with the site. pair=1 (templates at a
	 * function's entry): a site with fast_rp runs that kretprobe's
	 * entry first (KRP_PAIR_ENTRY); elsewhere such a site takes the C
	 * path.
	 */
	.macro FAST_HIT slow, regs, found=0, pair=0
	.if \found == 0
	movq SITE_SLOT(%rbx), %r15
	.endif
	cmpq $0, FS_KP(%r15)
	je \slow
	IDLE_OR %r13, %r14, %rax, \slow, \found
	/* in_handler = 1, defer_async = 1; status = ACTIVE, depth = 1 */
	movabsq $(1 << 32 | FP_HIT_ACTIVE), %rax
	movq %rax, FT_IN_HANDLER(%r13)
	movq %rax, FT_STATUS(%r13)
	READ_ENTER %r14				/* odd: inside (ukp_read_lock) */
	/* under the read side: the probe as it is now */
	movq FS_KP(%r15), %rdi
	testq %rdi, %rdi
	jz 5f
	movq FS_PRE(%r15), %rax
	KPROBE_OK %rdi, %rax, 5f
	.if \pair
	movq FS_RP(%r15), %rsi			/* the pair's kretprobe, or 0 */
	testq %rsi, %rsi
	jz 7f
	leaq ukp_kretprobe_pre_handler(%rip), %rcx
	KPROBE_OK %rsi, %rcx, 5f
	KRP_HOLDER %rsi, %r9, 5f		/* no entry_handler: the holder */
7:
	.else
	cmpq $0, FS_RP(%r15)
	jne 5f					/* a pair: only at an entry */
	.endif
	movq %r15, FT_CUR_SITE(%r13)
	movq %rdi, FT_CUR_KP(%r13)
	movq %rdi, FT_FAULT_KP(%r13)
	movq FS_ADDR(%r15), %rcx
	leaq FP_BREAKPOINT_SIZE(%rcx), %rcx
	movq %rcx, PT_IP(%rbx)			/* as after a breakpoint */
	movq ukp_errno_offset(%rip), %rcx
	movl %fs:(%rcx), %ecx
	movl %ecx, PT_SIZE(%rbx)
	.if \pair
	testq %rsi, %rsi
	jz 8f
	pushq %rdi
	pushq %rax
	KRP_PAIR_ENTRY
	popq %rax
	popq %rdi
8:
	.endif
	movq %rbx, %rbp
	movq %rbp, FT_JB(%r13)
	leaq 3f(%rip), %rcx
	movq %rcx, (FT_JB + 8)(%r13)
	movq %rsp, (FT_JB + 16)(%r13)
	movq %rbx, %rsi
	call *%rax
1:	/* leave: the state as before, then what was held back */
	xorl %eax, %eax
	movq %rax, FT_CUR_SITE(%r13)
	movq %rax, FT_CUR_KP(%r13)
	movq %rax, FT_FAULT_KP(%r13)
	movq %rax, FT_STATUS(%r13)
	READ_LEAVE %r14				/* even: outside */
	movq %rax, FT_IN_HANDLER(%r13)
	cmpq $0, FT_DEFERRED(%r13)
	jne 4f
2:	movq ukp_errno_offset(%rip), %rcx
	movl PT_SIZE(%rbx), %eax
	movl %eax, %fs:(%rcx)
	jmp \regs

3:	/* the handler faulted and was abandoned (ukp_sigfault_handler) */
	.cfi_def_cfa_register %rbp
	movq %rbp, %rbx
	.cfi_def_cfa_register %rbx
	TB_CTL_AGAIN %r13
	movq FT_REC(%r13), %r14
	movq %r13, %rdi
	movq SITE_SLOT(%rbx), %rsi
	call ukp_fast_abandoned
	jmp 1b

4:	/* signals came while held back: deliver them now */
	movq %r13, %rdi
	call ukp_defer_async_flush
	jmp 2b

5:	/* not for the fast path after all: undo, then the C path */
	xorl %eax, %eax
	movq %rax, FT_STATUS(%r13)
	READ_LEAVE %r14
	movq %rax, FT_IN_HANDLER(%r13)
	cmpq $0, FT_DEFERRED(%r13)
	je \slow
	movq %r13, %rdi
	call ukp_defer_async_flush
	jmp \slow
	.endm

	/* The start of both entry templates: rax into pt_regs, the
	 * arithmetic flags into ah (SF ZF AF PF CF) and al (OF), then rsp =
	 * pt_regs (the frame of the other template: pushfq slot included). */
	.macro ENTRY_FRAME
	movq %rax, (PT_AX - PT_SIZE - 8)(%rsp)
	lahf
	seto %al
	leaq -(PT_SIZE + 8)(%rsp), %rsp
	.cfi_adjust_cfa_offset (PT_SIZE + 8)
	.endm

	/* regs->flags from what ENTRY_FRAME left in ax (rsp = pt_regs),
	 * with IF and the reserved bit 1 set; clobbers rax and rcx. */
	.macro ENTRY_FLAGS
	movzbl %al, %ecx
	shll $11, %ecx			/* OF */
	movzbl %ah, %eax
	orl %ecx, %eax
	orl $0x202, %eax
	movq %rax, PT_FLAGS(%rsp)
	.endm

	/* rax = where the detour resumes after the template (rsp =
	 * pt_regs; the site is in its stack slot). */
	.macro RESUME_ADDR
	movq SITE_SLOT(%rsp), %rax
	movq FS_DETOUR(%rax), %rax
	addq $DETOUR_RESUME, %rax
	.endm

	/* The rest of pt_regs (the general registers and the flags are
	 * in), then rbx = pt_regs as the frame's CFA base. */
	.macro FRAME
	leaq ENTRY_SP(%rsp), %rax
	movq %rax, PT_SP(%rsp)
	movq $-1, PT_ORIG_AX(%rsp)
	movq $USER_CS, PT_CS(%rsp)
	movq $USER_DS, PT_SS(%rsp)
	movq %rsp, %rbx			/* pt_regs, kept across the call */
	.cfi_def_cfa_register %rbx
	.endm

	/* General registers but rax from pt_regs (rsp = pt_regs). */
	.macro RESTORE_GPRS_BUT_AX
	movq PT_R15(%rsp), %r15
	movq PT_R14(%rsp), %r14
	movq PT_R13(%rsp), %r13
	movq PT_R12(%rsp), %r12
	movq PT_BP(%rsp), %rbp
	movq PT_BX(%rsp), %rbx
	movq PT_R11(%rsp), %r11
	movq PT_R10(%rsp), %r10
	movq PT_R9(%rsp), %r9
	movq PT_R8(%rsp), %r8
	movq PT_CX(%rsp), %rcx
	movq PT_DX(%rsp), %rdx
	movq PT_SI(%rsp), %rsi
	movq PT_DI(%rsp), %rdi
	.endm

	/* OF, then SF ZF AF PF CF from regs->flags (rsp = pt_regs);
	 * clobbers eax. */
	.macro RESTORE_ARITH_FLAGS
	movzbl PT_FLAGS+1(%rsp), %eax	/* flags 15:8; OF is bit 3 */
	shrl $3, %eax
	andl $1, %eax
	addb $0x7f, %al			/* 1 + 0x7f overflows: OF = old OF */
	movb PT_FLAGS(%rsp), %ah	/* SF ZF AF PF CF */
	sahf
	.endm

	.section ukprobes_text, "ax", @progbits
	/*
	 * The template of probes at a function's entry. There the ABI
	 * leaves DF clear and no flag live, so the flags are read without
	 * pushfq (slow): lahf and seto give every arithmetic flag;
	 * regs->flags gets them with IF and bit 1 set, and they come back
	 * with sahf and an add (DF stays clear: no cld, no std). The frame
	 * is the same as below (the pushfq slot keeps errno on the fast
	 * path); the eager path is shared with it.
	 */
	.p2align 6
	.globl ukp_optprobe_common_entry
	.hidden ukp_optprobe_common_entry
	.type ukp_optprobe_common_entry, @function
ukp_optprobe_common_entry:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, 144
	.cfi_undefined %rip
	ENTRY_FRAME
	SAVE_GPRS_BUT_AX
	ENTRY_FLAGS
	FRAME
	/* DF is clear (the ABI): no cld. */
	cmpl $0, ukp_vec_lazy(%rip)
	je .Leager
	FAST_HIT .Lentry_slow, .Lentry_regs, 0, 1
.Lentry_slow:
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	movl $1, %edx
	call ukp_optprobe_hit
.Lentry_regs:
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	RESTORE_GPRS_BUT_AX
	RESTORE_ARITH_FLAGS
	movq PT_AX(%rsp), %rax
	leaq PT_SIZE+8(%rsp), %rsp
	.cfi_adjust_cfa_offset -(PT_SIZE + 8)
	ret
	.cfi_endproc
	.size ukp_optprobe_common_entry, .-ukp_optprobe_common_entry

	.p2align 6
	.globl ukp_optprobe_common
	.hidden ukp_optprobe_common
	.type ukp_optprobe_common, @function
ukp_optprobe_common:
	.cfi_startproc simple
	/* CFA = the probed code's stack pointer; its return address is
	 * unknown here, so unwinders stop at this frame. */
	.cfi_def_cfa %rsp, 144
	.cfi_undefined %rip
	pushfq
	.cfi_adjust_cfa_offset 8
	subq $PT_SIZE, %rsp
	.cfi_adjust_cfa_offset PT_SIZE
	SAVE_GPRS_BUT_AX
	movq %rax, PT_AX(%rsp)
	movq PT_SIZE(%rsp), %rax
	movq %rax, PT_FLAGS(%rsp)
	FRAME

	/* The vector state: left in the registers when the hit path is
	 * vector-free (ukp_vec_lazy: the C side saves it around any
	 * handler that is not, see vecstate.c), else saved here. */
	cmpl $0, ukp_vec_lazy(%rip)
	jne .Llazy
.Leager:
	subq ukp_krp_xsave_size(%rip), %rsp
	andq $-64, %rsp
	VEC_SAVE
	cld
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	xorl %edx, %edx
	call ukp_optprobe_hit
	VEC_RESTORE
	jmp .Lregs

.Llazy:
	testl $0x400, PT_FLAGS(%rbx)	/* cld only when DF is set: it is */
	jz 1f				/* not cheap here */
	cld
1:	FAST_HIT .Lslow, .Lregs
.Lslow:
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	movl $1, %edx
	call ukp_optprobe_hit

.Lregs:
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	RESTORE_GPRS_BUT_AX
	/* The flags, from regs->flags: DF, then the arithmetic ones. */
	testl $0x400, PT_FLAGS(%rsp)
	jz 1f
	std
1:	RESTORE_ARITH_FLAGS
	movq PT_AX(%rsp), %rax
	leaq PT_SIZE+8(%rsp), %rsp	/* pt_regs and the pushed flags */
	.cfi_adjust_cfa_offset -(PT_SIZE + 8)
	ret
	.cfi_endproc
	.size ukp_optprobe_common, .-ukp_optprobe_common

	/*
	 * The template of kretprobe entries: the detour of a site whose
	 * only probe was a kretprobe when it was optimized jumps (not
	 * calls) to ukp_krp_entry_stub (kretprobe_tramp.S), which calls
	 * this from the five bytes before ukp_kretprobe_trampoline. The
	 * stack is as for the other templates, but the return address is
	 * the trampoline's, and so is the CPU's prediction for the next
	 * ret. When the probed function's return slot gets the trampoline
	 * (the usual case), this template leaves by a jmp to the detour
	 * (detour + DETOUR_RESUME, through the site's stack slot) and that
	 * prediction is left for the function's own ret: the return probe
	 * costs no mispredicted return. Otherwise it leaves with a ret to
	 * the detour, written over the trampoline's address: mispredicted,
	 * but the return stack buffer stays balanced.
	 */
	.p2align 6
	.globl ukp_optprobe_krp_entry
	.hidden ukp_optprobe_krp_entry
	.type ukp_optprobe_krp_entry, @function
ukp_optprobe_krp_entry:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, 144
	.cfi_undefined %rip
	ENTRY_FRAME
	movq %rcx, PT_CX(%rsp)
	ENTRY_FLAGS
	movq SITE_SLOT(%rsp), %rcx
	cmpq $0, FS_RP(%rcx)
	jne 9f					/* the pair: FAST_HIT below */
	/*
	 * The entry of a kretprobe (the work of ukp_kretprobe_pre_handler,
	 * kretprobes.c, for the usual case) with the scratch registers
	 * only: no pt_regs is needed when there is no entry_handler. It
	 * applies when the site's only probe is an enabled kretprobe
	 * without entry_handler, the thread is idle and has its return
	 * stack (claimed at its first hit, on the C path), the return
	 * slot does not hold the trampoline already (chained), no entry
	 * of a gone frame is to be dropped, and there is an instance: the
	 * thread's spare (kretprobes.c) or one from the pool.
	 * Anything else: every register back, then the full frame and the
	 * C path (.Lkrp_full), with nothing changed.
	 *
	 * The order is the C path's: signals held back, read side, then
	 * the instance (SPARE_TAKE, or POOL_POP: the primitives of
	 * src/fastpath.h), the entry written and published by the depth
	 * (RSTACK_PUSH), and last the trampoline's address in the return
	 * slot. No user code runs and nothing here
	 * can fault (the slot is the live stack), so no probe state is set.
	 * rsp is pt_regs (16-byte aligned): the scratch registers go to
	 * their pt_regs slots, rax and rcx are saved, the flags are in
	 * regs->flags, rcx is the site.
	 */
	cmpl $0, ukp_vec_lazy(%rip)
	je 9f
	movq %rbx, PT_BX(%rsp)
	movq %rdx, PT_DX(%rsp)
	movq %rsi, PT_SI(%rsp)
	movq %rdi, PT_DI(%rsp)
	movq %r8, PT_R8(%rsp)
	movq %r9, PT_R9(%rsp)
	movq %r10, PT_R10(%rsp)
	movq %r11, PT_R11(%rsp)
	movq %r12, PT_R12(%rsp)
	IDLE_OR %rdx, %r8, %rax, 8f
	/* defer_async = 1, then the read side: depth = 1 */
	movabsq $(1 << 32), %rax
	movq %rax, FT_IN_HANDLER(%rdx)
	movq %rax, FT_STATUS(%rdx)
	READ_ENTER %r8				/* odd: inside */
	/* under the read side: the probe as it is now */
	movq FS_KP(%rcx), %rsi			/* the kretprobe (kp first) */
	testq %rsi, %rsi
	jz 7f
	leaq ukp_kretprobe_pre_handler(%rip), %rax
	KPROBE_OK %rsi, %rax, 7f
	KRP_HOLDER %rsi, %r9, 7f		/* no entry_handler: the holder */
	movq FT_RSTACK(%rdx), %rdi		/* the return stack */
	testq %rdi, %rdi
	jz 7f
	leaq (PT_SIZE + 8 + 144)(%rsp), %rcx	/* the return slot */
	movq (%rcx), %r11			/* the return address */
	leaq ukp_kretprobe_trampoline(%rip), %rax
	cmpq %rax, %r11
	je 7f					/* chained */
	RSTACK_ROOM %rdi, %rcx, %r10, %r10d, %rax, 7f
	SPARE_TAKE %rdi, %r9, 4f		/* this thread's spare instance */
	POOL_POP %r9, 7f			/* none free: the C path counts it */
4:	INST_INIT %rax, %r11, %rsi, %rdi, %rdx
	RSTACK_PUSH %rdi, %r10, %r10d, %rcx, %r11, %rax, %rdx
	leaq ukp_kretprobe_trampoline(%rip), %rax
	movq %rax, (%rcx)
	xorl %ebx, %ebx				/* done: the way out */
	jmp 6f
7:	movl $1, %ebx				/* undo: then the C path */
6:	TB_CTL_AGAIN %rdx
	LEAVE_HELD %rdx, %r8
	movl %ebx, %eax
	jmp 4f
8:	movl $1, %eax				/* nothing done: the C path */
4:	movq PT_BX(%rsp), %rbx
	movq PT_DX(%rsp), %rdx
	movq PT_SI(%rsp), %rsi
	movq PT_DI(%rsp), %rdi
	movq PT_R8(%rsp), %r8
	movq PT_R9(%rsp), %r9
	movq PT_R10(%rsp), %r10
	movq PT_R11(%rsp), %r11
	movq PT_R12(%rsp), %r12
	movq PT_CX(%rsp), %rcx
	testl %eax, %eax
	jnz .Lkrp_full
	/* the return slot holds the trampoline: keep the prediction */
.Lkrp_jmp_out:
	RESUME_ADDR
	movq %rax, SITE_SLOT(%rsp)
	RESTORE_ARITH_FLAGS
	movq PT_AX(%rsp), %rax
	leaq PT_SIZE+16(%rsp), %rsp	/* pt_regs, the flags, the return address */
	.cfi_adjust_cfa_offset -(PT_SIZE + 16)
	jmp *(%rsp)			/* the detour drops the site and the red zone */
	.cfi_adjust_cfa_offset (PT_SIZE + 16)

9:	movq PT_CX(%rsp), %rcx
	/* The C path (every register as the probed code has them but rax,
	 * which is in pt_regs, as are the flags). */
.Lkrp_full:
	SAVE_GPRS_BUT_AX
	FRAME
	cmpl $0, ukp_vec_lazy(%rip)
	jne 1f
	/* the other template's eager path, which leaves with a ret: make
	 * it the detour's */
	RESUME_ADDR			/* rsp = rbx = pt_regs */
	movq %rax, PT_SIZE+8(%rsp)
	jmp .Leager
1:	FAST_HIT .Lkrp_slow, .Lkrp_regs, 0, 1	/* a kretprobe + kprobe pair */
.Lkrp_slow:
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	movl $1, %edx
	call ukp_optprobe_hit
.Lkrp_regs:
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	RESTORE_GPRS_BUT_AX
	leaq ukp_kretprobe_trampoline(%rip), %rax
	cmpq %rax, ENTRY_SP(%rsp)
	je .Lkrp_jmp_out
	/* no return probe after all: a ret to the detour pops the
	 * prediction of the trampoline (mispredicted once) */
	RESUME_ADDR
	movq %rax, PT_SIZE+8(%rsp)
	RESTORE_ARITH_FLAGS
	movq PT_AX(%rsp), %rax
	leaq PT_SIZE+8(%rsp), %rsp
	.cfi_adjust_cfa_offset -(PT_SIZE + 8)
	ret
	.cfi_endproc
	.size ukp_optprobe_krp_entry, .-ukp_optprobe_krp_entry
	/*
	 * The template of probes in Go code, right after a function's stack
	 * check or at an epilogue (optimizer.c, go_region_ok; doc/go_rust.md).
	 * A goroutine's stack is small: past the check, Go's stack guard (928
	 * bytes on amd64) is free below the probed code's stack pointer. Go
	 * code keeps nothing below its stack pointer (no red zone: the
	 * runtime pushes a call there to preempt it), so the Go detour
	 * (arch_opt_go) skips none: it pushes the site and calls this, and
	 * this takes 16 bytes more there (rax, rcx) until it knows the top of
	 * the thread's own stack, where everything else goes. The top is in
	 * the thread's block (go_stack.c), found as TB_CTL finds the block: 0
	 * when the thread has none yet. Then it falls back to a breakpoint
	 * hit (ukp_optprobe_go_trap), which gives the thread a stack for its
	 * next hits.
	 *
	 * The arithmetic flags are read first (lahf, seto: regs->flags),
	 * then the look-up compares freely; the fallback gives them back (an
	 * add, sahf) for the breakpoint hit's registers. A hit does not give
	 * them back: no flag is live at this template's probes (a function's
	 * entry past its stack check: Go's ABI passes nothing in the flags,
	 * and the check's are its own; an epilogue: its add writes them all
	 * before the ret), so a handler's change of regs->flags has no effect.
	 * DF is clear there (Go's ABI).
	 *
	 * A hit never nests here, so the stack is not claimed: only a
	 * signal handler can interrupt this one, and the handlers that run
	 * Go code are Go's, which run the runtime's functions only, and
	 * those get no Go template (go_region_ok); C code (the library's
	 * handlers, a program's C handlers) gets the C templates, on the
	 * stack it runs on (Go does not let a C signal handler call Go).
	 *
	 * The frame on the thread's stack is the entry template's (pt_regs,
	 * the errno slot, the return slot, the site: SITE_SLOT, FAST_HIT),
	 * then GO_SAVE: the goroutine's stack pointer.
	 *
	 * CFI: the CFA here is the top of the thread's stack, and the return
	 * address is undefined: unwinders stop at this frame.
	 */
#define GO_SAVE  (PT_SIZE + 24)
#define GO_FRAME (PT_SIZE + 32)
#define GO_DETOUR 16		/* the detour's frame: return address, site */
	/*
	 * The fallback: everything as the probed code had it, the detour's
	 * frame on top of the goroutine's stack (its return address, the
	 * site: UKP_GO_TRAP_SITE, UKP_GO_TRAP_FRAME): the trap handler
	 * (trap.c) makes this a breakpoint hit of the site, and sends the
	 * thread on to the detour's copy of the region as for any breakpoint
	 * hit of an optimized probe; the ret is for a trap that finds no
	 * probe.
	 */
	.p2align 6
	.type ukp_optprobe_go_fallback, @function
ukp_optprobe_go_fallback:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, GO_DETOUR
	.cfi_undefined %rip
.Lgo_not_mine:
	addb $0x7f, %al			/* OF (al is 0 or 1), then the rest */
	sahf
	movq -8(%rsp), %rax
	movq -16(%rsp), %rcx
	.globl ukp_optprobe_go_trap
	.hidden ukp_optprobe_go_trap
ukp_optprobe_go_trap:
	int3
	ret
	.cfi_endproc
	.size ukp_optprobe_go_fallback, .-ukp_optprobe_go_fallback

	.p2align 4
	.globl ukp_optprobe_common_go
	.hidden ukp_optprobe_common_go
	.type ukp_optprobe_common_go, @function
ukp_optprobe_common_go:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, GO_DETOUR
	.cfi_undefined %rip
	movq %rax, -8(%rsp)
	lahf
	seto %al
	movq %rcx, -16(%rsp)
	/* the stack's top in the thread's block, found as TB_CTL finds
	 * the block */
	TB_GO_TOP %rcx, .Lgo_not_mine
	/* rcx = the top: the frame below it, written before the move */
	movq %r15, (PT_R15 - GO_FRAME)(%rcx)
	movq %r14, (PT_R14 - GO_FRAME)(%rcx)
	movq %r13, (PT_R13 - GO_FRAME)(%rcx)
	movq %r12, (PT_R12 - GO_FRAME)(%rcx)
	movq %rbp, (PT_BP - GO_FRAME)(%rcx)
	movq %rbx, (PT_BX - GO_FRAME)(%rcx)
	movq %r11, (PT_R11 - GO_FRAME)(%rcx)
	movq %r10, (PT_R10 - GO_FRAME)(%rcx)
	movq %r9, (PT_R9 - GO_FRAME)(%rcx)
	movq %r8, (PT_R8 - GO_FRAME)(%rcx)
	movq %rdx, (PT_DX - GO_FRAME)(%rcx)
	movq %rsi, (PT_SI - GO_FRAME)(%rcx)
	movq %rdi, (PT_DI - GO_FRAME)(%rcx)
	/* regs->flags (ENTRY_FLAGS, with rdx) */
	movzbl %al, %edx
	shll $11, %edx			/* OF */
	movzbl %ah, %eax
	orl %edx, %eax
	orl $0x202, %eax
	movq %rax, (PT_FLAGS - GO_FRAME)(%rcx)
	movq -8(%rsp), %rax
	movq %rax, (PT_AX - GO_FRAME)(%rcx)
	movq -16(%rsp), %rax
	movq %rax, (PT_CX - GO_FRAME)(%rcx)
	movq 8(%rsp), %r15		/* the site, the detour pushed it (FAST_HIT's) */
	movq %r15, (SITE_SLOT - GO_FRAME)(%rcx)
	leaq GO_DETOUR(%rsp), %rax
	movq %rax, (PT_SP - GO_FRAME)(%rcx)	/* the probed code's */
	movq $-1, (PT_ORIG_AX - GO_FRAME)(%rcx)
	movq $USER_CS, (PT_CS - GO_FRAME)(%rcx)
	movq $USER_DS, (PT_SS - GO_FRAME)(%rcx)
	movq %rsp, -8(%rcx)		/* GO_SAVE: the goroutine's */
	leaq -GO_FRAME(%rcx), %rsp
	.cfi_def_cfa %rsp, GO_FRAME
	movq %rsp, %rbx
	.cfi_def_cfa_register %rbx
	cmpl $0, ukp_vec_lazy(%rip)
	je .Lgo_eager
	/* (the block at the GS base is the thread's: found above) */
	FAST_HIT .Lgo_slow, .Lgo_regs, 1
.Lgo_slow:
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	movl $1, %edx
	call ukp_optprobe_hit
	jmp .Lgo_regs
.Lgo_eager:
	subq ukp_krp_xsave_size(%rip), %rsp
	andq $-64, %rsp
	VEC_SAVE
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	xorl %edx, %edx
	call ukp_optprobe_hit
	VEC_RESTORE
.Lgo_regs:
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	RESTORE_GPRS_BUT_AX
	movq PT_AX(%rsp), %rax
	movq GO_SAVE(%rsp), %rsp
	.cfi_def_cfa %rsp, GO_DETOUR
	ret				/* (the detour drops the site) */
	.cfi_endproc
	.size ukp_optprobe_common_go, .-ukp_optprobe_common_go

	/*
	 * The template of a Go leaf's entry (a function without a stack
	 * check, at its first instruction: doc/go_rust.md, "Leaves"). The
	 * leaf may have no byte of the goroutine's stack to spare, so its
	 * detour (arch_opt_go_leaf, go_leaf.h) has taken two words of the
	 * thread's own FS-based memory instead, without a register: R (busy,
	 * bts) and AX (the probed code's rax); rax is the detour. Here: R
	 * becomes the way back (the detour's TAIL: odd, still busy), rax
	 * finds the thread's stack (TB_GO_TOP), the frame is the Go
	 * template's, written below its top from every register the probed
	 * code had, and the handlers run as there. Back: every register
	 * from pt_regs, the goroutine's stack pointer, then a jump through R
	 * to TAIL, which frees R (a signal handler's hit of this thread in
	 * between finds R busy and takes the breakpoint path: BUSY), and
	 * runs the copy. A thread without its stack, or whose GS base is not
	 * its block's yet (a clone()d thread's is its creator's: no block's
	 * word is written before the owner check), gets rax back and traps
	 * at ukp_optprobe_goleaf_trap: trap.c makes it a breakpoint hit of
	 * the site (read through R, which it then frees) and gives the
	 * thread its stack.
	 *
	 * The flags: bts wrote CF, so regs->flags is IF alone (no flag is
	 * live at a Go function's entry: Go's ABIs pass none; they are not
	 * written back either). DF is clear (Go's ABI).
	 *
	 * Two copies, for the two places of the words (go_leaf.h): Go's own
	 * threads' m.tls, and glibc's TCB.
	 */
	.macro GOLEAF_TEMPLATE name, fs_ax, fs_r
	.p2align 4
	.globl \name
	.hidden \name
	.type \name, @function
\name:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, 0
	.cfi_undefined %rip
	addq $GOLEAF_TAIL, %rax
	movq %rax, %fs:\fs_r
	TB_GO_TOP %rax, .L\name\()_not_mine
	/* rax = the top: the frame below it, written before the move */
	movq %r15, (PT_R15 - GO_FRAME)(%rax)
	movq %r14, (PT_R14 - GO_FRAME)(%rax)
	movq %r13, (PT_R13 - GO_FRAME)(%rax)
	movq %r12, (PT_R12 - GO_FRAME)(%rax)
	movq %rbp, (PT_BP - GO_FRAME)(%rax)
	movq %rbx, (PT_BX - GO_FRAME)(%rax)
	movq %r11, (PT_R11 - GO_FRAME)(%rax)
	movq %r10, (PT_R10 - GO_FRAME)(%rax)
	movq %r9, (PT_R9 - GO_FRAME)(%rax)
	movq %r8, (PT_R8 - GO_FRAME)(%rax)
	movq %rcx, (PT_CX - GO_FRAME)(%rax)
	movq %rdx, (PT_DX - GO_FRAME)(%rax)
	movq %rsi, (PT_SI - GO_FRAME)(%rax)
	movq %rdi, (PT_DI - GO_FRAME)(%rax)
	movq %fs:\fs_ax, %rcx
	movq %rcx, (PT_AX - GO_FRAME)(%rax)
	movq %fs:\fs_r, %rcx
	movq (GOLEAF_SITE - GOLEAF_TAIL)(%rcx), %r15	/* the site (FAST_HIT's) */
	movq %r15, (SITE_SLOT - GO_FRAME)(%rax)
	movq $0x202, (PT_FLAGS - GO_FRAME)(%rax)
	movq %rsp, (PT_SP - GO_FRAME)(%rax)	/* the probed code's */
	movq $-1, (PT_ORIG_AX - GO_FRAME)(%rax)
	movq $USER_CS, (PT_CS - GO_FRAME)(%rax)
	movq $USER_DS, (PT_SS - GO_FRAME)(%rax)
	movq %rsp, -8(%rax)		/* GO_SAVE: the goroutine's */
	leaq -GO_FRAME(%rax), %rsp
	.cfi_def_cfa %rsp, GO_FRAME
	movq %rsp, %rbx
	.cfi_def_cfa_register %rbx
	cmpl $0, ukp_vec_lazy(%rip)
	je .L\name\()_eager
	/* (the block at the GS base is the thread's: found above) */
	FAST_HIT .L\name\()_slow, .L\name\()_regs, 1
.L\name\()_slow:
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	movl $1, %edx
	call ukp_optprobe_hit
	jmp .L\name\()_regs
.L\name\()_eager:
	subq ukp_krp_xsave_size(%rip), %rsp
	andq $-64, %rsp
	VEC_SAVE
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	xorl %edx, %edx
	call ukp_optprobe_hit
	VEC_RESTORE
.L\name\()_regs:
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	RESTORE_GPRS_BUT_AX
	movq PT_AX(%rsp), %rax
	movq GO_SAVE(%rsp), %rsp
	.cfi_def_cfa %rsp, 0
	jmp *%fs:\fs_r			/* TAIL: frees R, runs the copy */
.L\name\()_not_mine:
	movq %fs:\fs_ax, %rax
	jmp ukp_optprobe_goleaf_trap
	.cfi_endproc
	.size \name, .-\name
	.endm

	GOLEAF_TEMPLATE ukp_optprobe_goleaf_go, GOLEAF_GO_FS_AX, GOLEAF_GO_FS_R
	GOLEAF_TEMPLATE ukp_optprobe_goleaf_glibc, GOLEAF_GLIBC_FS_AX, GOLEAF_GLIBC_FS_R

	/* A leaf's fallback: every register the probed code's, R still
	 * busy with the way back into the detour (trap.c,
	 * arch_go_leaf_trap); never comes back here. */
	.globl ukp_optprobe_goleaf_trap
	.hidden ukp_optprobe_goleaf_trap
	.type ukp_optprobe_goleaf_trap, @function
ukp_optprobe_goleaf_trap:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, 0
	.cfi_undefined %rip
	int3
	ud2
	.cfi_endproc
	.size ukp_optprobe_goleaf_trap, .-ukp_optprobe_goleaf_trap

	.globl ukp_optprobe_common_end
	.hidden ukp_optprobe_common_end
ukp_optprobe_common_end:

	.section .note.GNU-stack, "", @progbits

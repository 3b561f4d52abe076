/* SPDX-License-Identifier: MIT */
/*
 * fastpath_ops_x86_64.S - each macro of src/arch/x86_64/fastpath_ops.h
 * wrapped as a C function (SysV ABI), for test_fastpath_ops.c, which runs
 * it and its C twin of src/fastpath.h on the same inputs. A macro's
 * fail/found label becomes the return value.
 */
#include "fastpath_ops.h"

	.text
	.macro FN name
	.globl \name
	.type \name, @function
\name:
	.endm

/* bool ukt_asm_kprobe_ok(const struct kprobe *kp, const void *pre) */
FN ukt_asm_kprobe_ok
	KPROBE_OK %rdi, %rsi, 1f
	movl $1, %eax
	ret
1:	xorl %eax, %eax
	ret

/* struct kretprobe_holder *ukt_asm_krp_holder(const struct kretprobe *rp) */
FN ukt_asm_krp_holder
	KRP_HOLDER %rdi, %rax, 1f
	ret
1:	xorl %eax, %eax
	ret

/* bool ukt_asm_rstack_room(struct krp_thread *t, uintptr_t slot, unsigned int *d) */
FN ukt_asm_rstack_room
	movq %rdx, %r8
	xorl %ecx, %ecx
	RSTACK_ROOM %rdi, %rsi, %rcx, %ecx, %r9, 1f
	movl %ecx, (%r8)
	movl $1, %eax
	ret
1:	xorl %eax, %eax
	ret

/* struct kretprobe_instance *ukt_asm_spare_take(struct krp_thread *t,
 *                                               struct kretprobe_holder *h) */
FN ukt_asm_spare_take
	SPARE_TAKE %rdi, %rsi, 1f
	xorl %eax, %eax
1:	ret

/* struct kretprobe_instance *ukt_asm_pool_pop(struct kretprobe_holder *h) */
FN ukt_asm_pool_pop
	pushq %rbx
	pushq %r12
	POOL_POP %rdi, 1f
	popq %r12
	popq %rbx
	ret
1:	xorl %eax, %eax
	popq %r12
	popq %rbx
	ret

/* void ukt_asm_inst_init(struct kretprobe_instance *ri, uintptr_t ret,
 *                        struct kretprobe *rp, const struct krp_thread *t) */
FN ukt_asm_inst_init
	INST_INIT %rdi, %rsi, %rdx, %rcx, %rax
	ret

/* void ukt_asm_rstack_push(struct krp_thread *t, unsigned int d, uintptr_t slot,
 *                          uintptr_t ret, struct kretprobe_instance *ri) */
FN ukt_asm_rstack_push
	movl %esi, %esi
	RSTACK_PUSH %rdi, %rsi, %esi, %rdx, %rcx, %r8, %rax
	ret

/* struct krp_entry *ukt_asm_rstack_top(struct krp_thread *t, uintptr_t slot,
 *                                      unsigned int *d) */
FN ukt_asm_rstack_top
	movq %rdx, %r8
	RSTACK_TOP %rdi, %rsi, %r9, 1f
	movl %eax, (%r8)
	movq %r9, %rax
	ret
1:	movl %eax, (%r8)
	xorl %eax, %eax
	ret

/* struct kretprobe_instance *ukt_asm_rstack_top_ri(struct krp_entry *e) */
FN ukt_asm_rstack_top_ri
	RSTACK_TOP_RI %rdi, %rax, 1f
	ret
1:	xorl %eax, %eax
	ret

/* kretprobe_handler_t ukt_asm_ret_handler(struct kretprobe_instance *ri, bool *proven) */
FN ukt_asm_ret_handler
	movq %rsi, %r8
	RET_HANDLER %rdi, %rdx, %rax, %eax, %rcx, 1f
	movb $1, (%r8)
	ret
1:	movb $0, (%r8)
	ret

/* uintptr_t ukt_asm_rstack_pop(struct krp_thread *t, unsigned int d, uintptr_t *slot):
 * e = &t->e[d - 1], eax = d, as RSTACK_TOP leaves them */
FN ukt_asm_rstack_pop
	movl %esi, %eax
	leal -1(%rsi), %ecx
	leaq (%rcx, %rcx, 2), %rcx
	leaq P_KT_E(%rdi, %rcx, 8), %rcx
	RSTACK_POP %rdi, %rcx, %rdx, %r8
	movq %r8, %rax
	ret

/* bool ukt_asm_spare_put(struct krp_thread *t, struct kretprobe_instance *ri) */
FN ukt_asm_spare_put
	SPARE_PUT %rdi, %rsi, 1f
	movl $1, %eax
	ret
1:	xorl %eax, %eax
	ret

/* bool ukt_asm_idle_or(void): this thread's block */
FN ukt_asm_idle_or
	IDLE_OR %rcx, %rdx, %rax, 1f
	movl $1, %eax
	ret
1:	xorl %eax, %eax
	ret

/* void ukt_asm_read_enter(uint64_t *rec), ukt_asm_read_leave(uint64_t *rec) */
FN ukt_asm_read_enter
	READ_ENTER %rdi
	ret
FN ukt_asm_read_leave
	READ_LEAVE %rdi
	ret

/* void ukt_asm_leave_held(uint64_t *rec): this thread's block */
FN ukt_asm_leave_held
	subq $8, %rsp
	TB_CTL_AGAIN %rcx
	LEAVE_HELD %rcx, %rdi
	addq $8, %rsp
	ret

	.section .note.GNU-stack, "", @progbits

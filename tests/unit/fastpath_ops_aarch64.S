/* SPDX-License-Identifier: MIT */
/*
 * fastpath_ops_aarch64.S - each macro of src/arch/aarch64/fastpath_ops.h
 * wrapped as a C function (AAPCS64), for test_fastpath_ops.c, which runs
 * it and its C twin of src/fastpath.h on the same inputs. A macro's
 * fail/found label becomes the return value.
 */
#include "fastpath_ops.h"

	.text
	.macro FN name
	.globl \name
	.type \name, %function
	.p2align 2
\name:
	.endm

/* bool ukt_asm_kprobe_ok(const struct kprobe *kp, const void *pre) */
FN ukt_asm_kprobe_ok
	KPROBE_OK x0, x1, x9, w9, 1f
	mov w0, #1
	ret
1:	mov w0, #0
	ret

/* struct kretprobe_holder *ukt_asm_krp_holder(const struct kretprobe *rp) */
FN ukt_asm_krp_holder
	KRP_HOLDER x0, x10, x9, 1f
	mov x0, x10
	ret
1:	mov x0, #0
	ret

/* bool ukt_asm_rstack_room(struct krp_thread *t, uintptr_t slot, unsigned int *d) */
FN ukt_asm_rstack_room
	mov x10, #0
	RSTACK_ROOM x0, x1, x10, w10, x9, w9, 1f
	str w10, [x2]
	mov w0, #1
	ret
1:	mov w0, #0
	ret

/* struct kretprobe_instance *ukt_asm_spare_take(struct krp_thread *t,
 *                                               struct kretprobe_holder *h) */
FN ukt_asm_spare_take
	SPARE_TAKE x0, x1, x10, x9, w11, 1f
	mov x0, #0
	ret
1:	mov x0, x10
	ret

/* struct kretprobe_instance *ukt_asm_pool_pop(struct kretprobe_holder *h) */
FN ukt_asm_pool_pop
	POOL_POP x0, x10, x11, x12, x13, w13, x14, w15, 1f
	mov x0, x10
	ret
1:	mov x0, #0
	ret

/* void ukt_asm_inst_init(struct kretprobe_instance *ri, uintptr_t ret,
 *                        struct kretprobe *rp, const struct krp_thread *t) */
FN ukt_asm_inst_init
	INST_INIT x0, x1, x2, x3, x9
	ret

/* void ukt_asm_rstack_push(struct krp_thread *t, unsigned int d, uintptr_t slot,
 *                          uintptr_t ret, struct kretprobe_instance *ri) */
FN ukt_asm_rstack_push
	mov w1, w1
	RSTACK_PUSH x0, x1, w1, x2, x3, x4, x9
	ret

/* struct krp_entry *ukt_asm_rstack_top(struct krp_thread *t, uintptr_t slot,
 *                                      unsigned int *d) */
FN ukt_asm_rstack_top
	mov x11, #0
	RSTACK_TOP x0, x1, x10, x11, w11, x9, 1f
	str w11, [x2]
	mov x0, x10
	ret
1:	str w11, [x2]
	mov x0, #0
	ret

/* struct kretprobe_instance *ukt_asm_rstack_top_ri(struct krp_entry *e) */
FN ukt_asm_rstack_top_ri
	RSTACK_TOP_RI x0, x10, 1f
	mov x0, x10
	ret
1:	mov x0, #0
	ret

/* kretprobe_handler_t ukt_asm_ret_handler(struct kretprobe_instance *ri, bool *proven) */
FN ukt_asm_ret_handler
	RET_HANDLER x0, x10, x11, x9, 1f
	mov w12, #1
	strb w12, [x1]
	mov x0, x11
	ret
1:	strb wzr, [x1]
	mov x0, x11
	ret

/* uintptr_t ukt_asm_rstack_pop(struct krp_thread *t, unsigned int d, uintptr_t *slot):
 * e = &t->e[d - 1], as RSTACK_TOP leaves it */
FN ukt_asm_rstack_pop
	mov w1, w1
	sub x10, x1, #1
	mov x9, #P_E_SIZE
	madd x10, x10, x9, x0
	add x10, x10, #P_KT_E
	RSTACK_POP x0, x10, w1, x2, x11
	mov x0, x11
	ret

/* bool ukt_asm_spare_put(struct krp_thread *t, struct kretprobe_instance *ri) */
FN ukt_asm_spare_put
	SPARE_PUT x0, x1, x9, 1f
	mov w0, #1
	ret
1:	mov w0, #0
	ret

/* bool ukt_asm_idle_or(void): this thread's block */
FN ukt_asm_idle_or
	IDLE_OR x10, x11, x9, w9, x12, 1f
	mov w0, #1
	ret
1:	mov w0, #0
	ret

/* void ukt_asm_read_enter(uint64_t *rec), ukt_asm_read_leave(uint64_t *rec) */
FN ukt_asm_read_enter
	READ_ENTER x0, x9
	ret
FN ukt_asm_read_leave
	READ_LEAVE x0, x9
	ret

/* void ukt_asm_leave_held(uint64_t *rec): this thread's block */
FN ukt_asm_leave_held
	stp x29, x30, [sp, #-32]!
	mov x29, sp
	stp x19, x20, [sp, #16]
	mov x20, x0
	THREAD_BLOCK_AGAIN x19, x9, x10
	LEAVE_HELD x19, x20, x9
	ldp x19, x20, [sp, #16]
	ldp x29, x30, [sp], #32
	ret

	.section .note.GNU-stack, "", %progbits

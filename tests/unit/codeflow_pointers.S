/* SPDX-License-Identifier: MIT */
/*
 * codeflow_pointers.S - indirect jumps through pointers loaded from
 * memory, for test_codeflow.c. A tail call through a function pointer
 * (from a global, a struct field) leaves the function and is accepted;
 * indexed loads (tables), loads from the stack, a jump landing between
 * the load and the jump, and functions whose code addresses are taken
 * (labels as values: a lea, or a relocated pointer in data) are refused;
 * and an address inside the region that is taken refuses the region
 * whatever jumps the function has. Judged, never run.
 */
	.text

/* sqlite3BeginBenignMalloc's shape: mov g(%rip); test; je; jmp *%rax
 * (accepted). */
	.globl ukt_flow_ptr_global
	.type ukt_flow_ptr_global, @function
	.p2align 4
ukt_flow_ptr_global:
	.cfi_startproc
	movq ukt_flow_fp(%rip), %rax	/* 7 bytes */
	testq %rax, %rax
	je 1f
	jmp *%rax
1:	ret
	.cfi_endproc
	.size ukt_flow_ptr_global, . - ukt_flow_ptr_global

/* jmp *0x38(%rdi): a method call through a struct (accepted). */
	.globl ukt_flow_ptr_field
	.type ukt_flow_ptr_field, @function
	.p2align 4
ukt_flow_ptr_field:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	jmp *0x38(%rdi)
	.cfi_endproc
	.size ukt_flow_ptr_field, . - ukt_flow_ptr_field

/* The pointer comes from an indexed load: a table without a known base
 * (refused: unknown targets). */
	.globl ukt_flow_ptr_indexed
	.type ukt_flow_ptr_indexed, @function
	.p2align 4
ukt_flow_ptr_indexed:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	movq (%rdi,%rsi,8), %rax
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_ptr_indexed, . - ukt_flow_ptr_indexed

/* The pointer comes from the stack (refused: unknown targets). */
	.globl ukt_flow_ptr_stack
	.type ukt_flow_ptr_stack, @function
	.p2align 4
ukt_flow_ptr_stack:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	movq 8(%rsp), %rax
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_ptr_stack, . - ukt_flow_ptr_stack

/* A jump lands between the load and the jump, with another %rax,
 * computed (refused: unknown targets). */
	.globl ukt_flow_ptr_between
	.type ukt_flow_ptr_between, @function
	.p2align 4
ukt_flow_ptr_between:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	testl %esi, %esi
	jne 1f
	movq 8(%rdi), %rax
.Lpb_jmp:
	jmp *%rax
1:	leaq 8(%rdx), %rax
	jmp .Lpb_jmp
	.cfi_endproc
	.size ukt_flow_ptr_between, . - ukt_flow_ptr_between

/* It takes the address of a label of its own (GNU C's &&label: a lea),
 * the pointer could be that (refused). */
	.globl ukt_flow_ptr_lea_label
	.type ukt_flow_ptr_lea_label, @function
	.p2align 4
ukt_flow_ptr_lea_label:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	leaq .Lpl_in(%rip), %rcx
	movq %rcx, (%rdi)
	jmp *8(%rdi)
.Lpl_in:
	ret
	.cfi_endproc
	.size ukt_flow_ptr_lea_label, . - ukt_flow_ptr_lea_label

/* A static table of its own labels in data (R_X86_64_RELATIVE in a PIE,
 * static void *t[] = { &&l }; refused). */
	.globl ukt_flow_ptr_data_label
	.type ukt_flow_ptr_data_label, @function
	.p2align 4
ukt_flow_ptr_data_label:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	jmp *8(%rdi)
.Lpd_in:
	ret
	.cfi_endproc
	.size ukt_flow_ptr_data_label, . - ukt_flow_ptr_data_label

/* The same through a global (goto *p with p = &&label; refused). */
	.globl ukt_flow_ptr_global_label
	.type ukt_flow_ptr_global_label, @function
	.p2align 4
ukt_flow_ptr_global_label:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	leaq .Lgl_in(%rip), %rcx
	movq %rcx, ukt_flow_fp+24(%rip)
	jmp *ukt_flow_fp+24(%rip)
.Lgl_in:
	ret
	.cfi_endproc
	.size ukt_flow_ptr_global_label, . - ukt_flow_ptr_global_label

/* Plain code, but entry + 2 is stored in data (refused: -EBUSY). */
	.globl ukt_flow_taken_data
	.type ukt_flow_taken_data, @function
	.p2align 4
ukt_flow_taken_data:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	addl $1, %eax			/* 3 bytes, entry + 2 */
	ret
	.cfi_endproc
	.size ukt_flow_taken_data, . - ukt_flow_taken_data

/* Plain code, but a lea computes entry + 2 (refused: -EBUSY). */
	.globl ukt_flow_taken_lea
	.type ukt_flow_taken_lea, @function
	.p2align 4
ukt_flow_taken_lea:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
.Ltl_in:
	addl $1, %eax			/* 3 bytes, entry + 2 */
	leaq .Ltl_in(%rip), %rdx
	ret
	.cfi_endproc
	.size ukt_flow_taken_lea, . - ukt_flow_taken_lea

	.data
	.p2align 3
	.globl ukt_flow_fp
ukt_flow_fp:
	.quad ukt_flow_ptr_field	/* a function's start: fine */
	.quad .Lpd_in
	.quad ukt_flow_taken_data + 2
	.quad 0

	.section .note.GNU-stack, "", @progbits

/* SPDX-License-Identifier: MIT */
/*
 * codeflow_paths.S - jumps through registers whose pointer comes in
 * along several paths, for test_codeflow.c (branches.c, pointer_paths):
 * the shapes of CPython's hottest entries (PyMem_RawFree: the load, a
 * compare against the default, a branch to the block that jumps;
 * PyObject_Hash: two loads joining before the jump), copies, callee-saved
 * registers across a call, arguments, fields at a variable offset -
 * accepted; a caller-saved register across a call, a register that is no
 * argument, a frame slot, a join that code outside any symbol enters -
 * refused. Each entry region (the first 5 bytes) holds whole
 * instructions. Judged, never run.
 */
	.data
	.p2align 3
ukt_flow_path_fp:
	.quad 0
	.text

/* PyMem_RawFree's shape: the load, then a branch over a tail call to the
 * block that jumps (accepted). */
	.globl ukt_flow_path_branch
	.type ukt_flow_path_branch, @function
	.p2align 4
ukt_flow_path_branch:
	.cfi_startproc
	movq ukt_flow_path_fp(%rip), %rax	/* 7 bytes */
	cmpq $0, %rax
	jne 1f
	ret
1:	movq %rdi, %rsi
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_path_branch, . - ukt_flow_path_branch

/* PyObject_Hash's shape: two loads of %rax join before the jump
 * (accepted). */
	.globl ukt_flow_path_join
	.type ukt_flow_path_join, @function
	.p2align 4
ukt_flow_path_join:
	.cfi_startproc
	movq 8(%rdi), %rax		/* 4 bytes */
	testq %rax, %rax		/* 3 bytes */
	jne 2f
	movq 16(%rdi), %rax
	testq %rax, %rax
	je 3f
2:	movq %rsi, %rdi
	jmp *%rax
3:	ret
	.cfi_endproc
	.size ukt_flow_path_join, . - ukt_flow_path_join

	.type ukt_flow_path_callee, @function
	.p2align 4
ukt_flow_path_callee:
	.cfi_startproc
	xorl %ecx, %ecx
	ret
	.cfi_endproc
	.size ukt_flow_path_callee, . - ukt_flow_path_callee

/* The pointer waits in %rbx across a call, then is copied (accepted:
 * the callee keeps %rbx). */
	.globl ukt_flow_path_saved
	.type ukt_flow_path_saved, @function
	.p2align 4
ukt_flow_path_saved:
	.cfi_startproc
	pushq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	movq 8(%rdi), %rbx		/* 4 bytes */
	call ukt_flow_path_callee
	movq %rbx, %rax
	popq %rbx
	.cfi_adjust_cfa_offset -8
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_path_saved, . - ukt_flow_path_saved

/* The same in %rcx, which the callee may change (refused). */
	.globl ukt_flow_path_clobbered
	.type ukt_flow_path_clobbered, @function
	.p2align 4
ukt_flow_path_clobbered:
	.cfi_startproc
	pushq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	movq 8(%rdi), %rcx		/* 4 bytes */
	call ukt_flow_path_callee
	popq %rbx
	.cfi_adjust_cfa_offset -8
	jmp *%rcx
	.cfi_endproc
	.size ukt_flow_path_clobbered, . - ukt_flow_path_clobbered

/* A function pointer passed as an argument (accepted). */
	.globl ukt_flow_path_argument
	.type ukt_flow_path_argument, @function
	.p2align 4
ukt_flow_path_argument:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	jmp *%rsi
	.cfi_endproc
	.size ukt_flow_path_argument, . - ukt_flow_path_argument

/* %r11 at the entry is no argument: whatever the caller left (refused). */
	.globl ukt_flow_path_not_argument
	.type ukt_flow_path_not_argument, @function
	.p2align 4
ukt_flow_path_not_argument:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	jmp *%r11
	.cfi_endproc
	.size ukt_flow_path_not_argument, . - ukt_flow_path_not_argument

/* PyObject_Call's vectorcall: a field at an offset read from the type,
 * (%rdi,%rcx,1) (accepted). */
	.globl ukt_flow_path_field
	.type ukt_flow_path_field, @function
	.p2align 4
ukt_flow_path_field:
	.cfi_startproc
	movq 8(%rdi), %rcx		/* 4 bytes */
	movq (%rdi,%rcx,1), %rax	/* 4 bytes */
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_path_field, . - ukt_flow_path_field

/* A slot of the frame: a spilled register (refused). */
	.globl ukt_flow_path_frame
	.type ukt_flow_path_frame, @function
	.p2align 4
ukt_flow_path_frame:
	.cfi_startproc
	pushq %rbp			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	movq %rsp, %rbp			/* 3 bytes */
	movq -8(%rbp), %rax
	popq %rbp
	.cfi_adjust_cfa_offset -8
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_path_frame, . - ukt_flow_path_frame

/* The join of ukt_flow_path_join, entered by code that no symbol covers
 * (a stripped cold part) with its own %rax (refused). */
	.globl ukt_flow_path_uncovered
	.type ukt_flow_path_uncovered, @function
	.p2align 4
ukt_flow_path_uncovered:
	.cfi_startproc
	movq 8(%rdi), %rax		/* 4 bytes */
	testq %rax, %rax		/* 3 bytes */
	jne .Lpu_join
	movq 16(%rdi), %rax
	testq %rax, %rax
	je 3f
.Lpu_join:
	movq %rsi, %rdi
	jmp *%rax
3:	ret
	.cfi_endproc
	.size ukt_flow_path_uncovered, . - ukt_flow_path_uncovered
	.cfi_startproc
	leaq 8(%rsi), %rax
	jmp .Lpu_join
	.cfi_endproc

/* A jmp to the very next instruction brings a computed %rax to the
 * jump; the branch around it brings the loaded one (refused: one path is
 * no pointer). */
	.globl ukt_flow_path_jmp_next
	.type ukt_flow_path_jmp_next, @function
	.p2align 4
ukt_flow_path_jmp_next:
	.cfi_startproc
	movq 8(%rdi), %rax		/* 4 bytes */
	testq %rsi, %rsi		/* 3 bytes */
	jne 2f
	leaq 8(%rdx), %rax
	.byte 0xeb, 0x00		/* jmp 2f: the next instruction */
2:	jmp *%rax
	.cfi_endproc
	.size ukt_flow_path_jmp_next, . - ukt_flow_path_jmp_next

	.section .note.GNU-stack, "", @progbits

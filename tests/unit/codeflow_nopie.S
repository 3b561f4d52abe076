/* SPDX-License-Identifier: MIT */
/*
 * codeflow_nopie.S - targets for test_codeflow_nopie.c, linked into a
 * non-PIE executable (ET_EXEC), which holds the addresses of its code as
 * plain literals: 8-byte words in data, immediates in code, no
 * relocation. A tail call through a pointer (CPython's _Py_Dealloc) is
 * accepted; a region whose inside address some word of data or some
 * immediate holds, and a pointer jump in a function whose label is
 * stored in data, are refused. Judged, never run.
 */
	.text

/* _Py_Dealloc: mov 0x8(%rdi),%rax; jmp *0x30(%rax) (accepted). */
	.globl ukt_np_dealloc
	.type ukt_np_dealloc, @function
	.p2align 4
ukt_np_dealloc:
	.cfi_startproc
	movq 8(%rdi), %rax		/* 4 bytes */
	jmp *0x30(%rax)			/* 3 bytes */
	.cfi_endproc
	.size ukt_np_dealloc, . - ukt_np_dealloc

/* The same shape, its entry + 2 held by an 8-byte word of .data
 * (refused: taken). */
	.globl ukt_np_taken_data
	.type ukt_np_taken_data, @function
	.p2align 4
ukt_np_taken_data:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	addl $3, %eax			/* 3 bytes, entry + 2 */
	jmp *0x30(%rsi)
	.cfi_endproc
	.size ukt_np_taken_data, . - ukt_np_taken_data

/* ... by an 8-byte word at an address 4 mod 8 (refused: taken). */
	.globl ukt_np_taken_data4
	.type ukt_np_taken_data4, @function
	.p2align 4
ukt_np_taken_data4:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	addl $3, %eax			/* 3 bytes, entry + 2 */
	ret
	.cfi_endproc
	.size ukt_np_taken_data4, . - ukt_np_taken_data4

/* ... by an immediate of another function (refused: taken). */
	.globl ukt_np_taken_imm
	.type ukt_np_taken_imm, @function
	.p2align 4
ukt_np_taken_imm:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	addl $3, %eax			/* 3 bytes, entry + 2 */
	ret
	.cfi_endproc
	.size ukt_np_taken_imm, . - ukt_np_taken_imm

	.globl ukt_np_materialize
	.type ukt_np_materialize, @function
	.p2align 4
ukt_np_materialize:
	.cfi_startproc
	movl $ukt_np_taken_imm + 2, %eax
	ret
	.cfi_endproc
	.size ukt_np_materialize, . - ukt_np_materialize

/* A pointer jump in a function whose label past the region is a word
 * of .data: static void *t[] = { &&l } (refused: its own code). */
	.globl ukt_np_labels
	.type ukt_np_labels, @function
	.p2align 4
ukt_np_labels:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	jmp *8(%rdi)
.Lnp_label:
	ret
	.cfi_endproc
	.size ukt_np_labels, . - ukt_np_labels

/* The same, but the word of .data points into the middle of its movabs
 * (entry + 7): no instruction starts there, so it is no label - a string
 * or a number that looks like a code address (accepted). */
	.globl ukt_np_not_label
	.type ukt_np_not_label, @function
	.p2align 4
ukt_np_not_label:
	.cfi_startproc
	movl $1, %eax			/* 5 bytes */
	movabsq $0x1122334455667788, %rcx	/* 10 bytes, entry + 5 */
	jmp *8(%rdi)
	.cfi_endproc
	.size ukt_np_not_label, . - ukt_np_not_label

/* A plain function (accepted): the base line. */
	.globl ukt_np_plain
	.type ukt_np_plain, @function
	.p2align 4
ukt_np_plain:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	addl $3, %eax			/* 3 bytes */
	ret
	.cfi_endproc
	.size ukt_np_plain, . - ukt_np_plain

	.data
	.globl ukt_np_words
	.p2align 3
ukt_np_words:
	.quad ukt_np_taken_data + 2
	.long 0
	.quad ukt_np_taken_data4 + 2	/* at 4 mod 8 */
	.long 0
	.quad .Lnp_label
	.quad ukt_np_not_label + 7

	.section .note.GNU-stack, "", @progbits

/* SPDX-License-Identifier: MIT */
/*
 * codeflow_targets.S - hand-written functions for test_codeflow.c, one
 * per control-flow shape the jump-optimization check must judge. None of
 * them is meant to run; each is laid out so that the region probed by the
 * test, [entry, entry + 5), holds exactly whole instructions and, where
 * the test expects a refusal, some jump lands at entry + 2.
 */
	.text

/* A loop whose back edge lands at entry + 2 (refused: -EBUSY). */
	.globl ukt_flow_loop_into_entry
	.type ukt_flow_loop_into_entry, @function
	.p2align 4
ukt_flow_loop_into_entry:
	.cfi_startproc
	xorl %eax, %eax			/* 2 bytes */
1:	addl $1, %eax			/* 3 bytes, entry + 2 */
	cmpl %edi, %eax
	jl 1b
	ret
	.cfi_endproc
	.size ukt_flow_loop_into_entry, . - ukt_flow_loop_into_entry

/* Straight-line start, a forward branch past the region (accepted). */
	.globl ukt_flow_plain
	.type ukt_flow_plain, @function
	.p2align 4
ukt_flow_plain:
	.cfi_startproc
	leal (%rdi,%rdi,2), %eax	/* 3 bytes */
	addl %esi, %eax			/* 2 bytes */
	testl %eax, %eax
	js 1f
	ret
1:	negl %eax
	ret
	.cfi_endproc
	.size ukt_flow_plain, . - ukt_flow_plain

/*
 * A PIC jump table (GCC's shape, notrack as with -fcf-protection) whose
 * entry 2 is entry + 2 (refused: -EBUSY). The first entries point
 * elsewhere in the function, so the reader must go on past them.
 */
	.globl ukt_flow_table_into_region
	.type ukt_flow_table_into_region, @function
	.p2align 4
ukt_flow_table_into_region:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
.Ltir_in:
	addl $1, %eax			/* 3 bytes, entry + 2 */
	cmpl $3, %edi
	ja .Ltir_out
	movl %edi, %edi
	leaq .Ltir_table(%rip), %rdx
	movslq (%rdx,%rdi,4), %rcx
	addq %rdx, %rcx
	notrack jmp *%rcx
.Ltir_c0:
	movl $10, %eax
	ret
.Ltir_c3:
	movl $13, %eax
	ret
.Ltir_out:
	ret
	.cfi_endproc
	.size ukt_flow_table_into_region, . - ukt_flow_table_into_region

	.section .rodata
	.p2align 2
.Ltir_table:
	.long .Ltir_c0 - .Ltir_table
	.long .Ltir_c0 - .Ltir_table
	.long .Ltir_in - .Ltir_table
	.long .Ltir_c3 - .Ltir_table
	.text

/*
 * The same dispatch with the table base spilled to the stack and reloaded
 * into another register (what register pressure does to big switches);
 * every entry avoids the region (accepted: the table is resolved).
 */
	.globl ukt_flow_table_spilled
	.type ukt_flow_table_spilled, @function
	.p2align 4
ukt_flow_table_spilled:
	.cfi_startproc
	subq $24, %rsp			/* 4 bytes */
	.cfi_def_cfa_offset 32
	movl %edi, %eax			/* 2 bytes */
	leaq .Lts_table(%rip), %rcx
	movq %rcx, 8(%rsp)
	cmpl $2, %edi
	ja .Lts_out
	movq 8(%rsp), %rsi
	movslq (%rsi,%rax,4), %rdx
	addq %rsi, %rdx
	jmp *%rdx
.Lts_c0:
	movl $20, %eax
	addq $24, %rsp
	.cfi_remember_state
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
.Lts_c1:
	movl $21, %eax
.Lts_out:
	addq $24, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ukt_flow_table_spilled, . - ukt_flow_table_spilled

	.section .rodata
	.p2align 2
.Lts_table:
	.long .Lts_c0 - .Lts_table
	.long .Lts_c1 - .Lts_table
	.long .Lts_out - .Lts_table
	.text

/* jmp *%rax with nothing to say where %rax points: computed from an
 * argument (refused: -EOPNOTSUPP). */
	.globl ukt_flow_indirect_unknown
	.type ukt_flow_indirect_unknown, @function
	.p2align 4
ukt_flow_indirect_unknown:
	.cfi_startproc
	leaq 8(%rdi), %rax		/* 4 bytes */
	nop				/* 1 byte */
	jmp *%rax
	.cfi_endproc
	.size ukt_flow_indirect_unknown, . - ukt_flow_indirect_unknown

/* A tail call through the GOT (accepted: it leaves the function). */
	.globl ukt_flow_got_tail
	.type ukt_flow_got_tail, @function
	.p2align 4
ukt_flow_got_tail:
	.cfi_startproc
	pushq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	popq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset -8
	movq %rdi, %rax			/* 3 bytes */
	jmp *getpid@GOTPCREL(%rip)
	.cfi_endproc
	.size ukt_flow_got_tail, . - ukt_flow_got_tail

/*
 * A function split the way GCC splits one around an unlikely branch: the
 * cold part (a local NAME.cold symbol in .text.unlikely) jumps back to
 * entry + 2 (refused: -EBUSY). The hot part has no jump into the region.
 */
	.type ukt_flow_hot, @function
	.globl ukt_flow_hot
	.p2align 4
ukt_flow_hot:
	.cfi_startproc
	testl %edi, %edi		/* 2 bytes */
.Lhot_resume:
	movl $1, %eax			/* 5 bytes, entry + 2 */
	jne ukt_flow_hot.cold
	ret
	.cfi_endproc
	.size ukt_flow_hot, . - ukt_flow_hot

/* The same with an older GCC's numbered name (NAME.cold.N). */
	.type ukt_flow_hot_numbered, @function
	.globl ukt_flow_hot_numbered
	.p2align 4
ukt_flow_hot_numbered:
	.cfi_startproc
	testl %edi, %edi		/* 2 bytes */
.Lhotn_resume:
	movl $1, %eax			/* 5 bytes, entry + 2 */
	jne ukt_flow_hot_numbered.cold.7
	ret
	.cfi_endproc
	.size ukt_flow_hot_numbered, . - ukt_flow_hot_numbered

/* A split function whose cold part returns past the region (accepted). */
	.type ukt_flow_hot_ok, @function
	.globl ukt_flow_hot_ok
	.p2align 4
ukt_flow_hot_ok:
	.cfi_startproc
	testl %edi, %edi		/* 2 bytes */
	movl $1, %eax			/* 5 bytes */
	jne ukt_flow_hot_ok.cold
.Lhot_ok_resume:
	ret
	.cfi_endproc
	.size ukt_flow_hot_ok, . - ukt_flow_hot_ok

	.section .text.unlikely, "ax", @progbits
	.type ukt_flow_hot.cold, @function
ukt_flow_hot.cold:
	.cfi_startproc
	xorl %edi, %edi
	jmp .Lhot_resume
	.cfi_endproc
	.size ukt_flow_hot.cold, . - ukt_flow_hot.cold

	.type ukt_flow_hot_numbered.cold.7, @function
ukt_flow_hot_numbered.cold.7:
	.cfi_startproc
	xorl %edi, %edi
	jmp .Lhotn_resume
	.cfi_endproc
	.size ukt_flow_hot_numbered.cold.7, . - ukt_flow_hot_numbered.cold.7

	.type ukt_flow_hot_ok.cold, @function
ukt_flow_hot_ok.cold:
	.cfi_startproc
	movl $2, %eax
	jmp .Lhot_ok_resume
	.cfi_endproc
	.size ukt_flow_hot_ok.cold, . - ukt_flow_hot_ok.cold
	.text

/*
 * A function, then code right after it that no symbol covers but unwind
 * information does - a cold part as a stripped library shows it - which
 * jumps to the function's entry + 2 (refused: -EBUSY).
 */
	.globl ukt_flow_victim
	.type ukt_flow_victim, @function
	.p2align 4
ukt_flow_victim:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
.Lvictim_mid:
	addl %esi, %eax			/* 2 bytes, entry + 2 */
	addl $3, %eax			/* 3 bytes */
	ret
	.cfi_endproc
	.size ukt_flow_victim, . - ukt_flow_victim
	.cfi_startproc
	xorl %esi, %esi
	jmp .Lvictim_mid
	.cfi_endproc

/* Two entry points: a second symbol at entry + 2 (refused: -EBUSY). */
	.globl ukt_flow_two_entries
	.type ukt_flow_two_entries, @function
	.p2align 4
ukt_flow_two_entries:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	.globl ukt_flow_second_entry
	.type ukt_flow_second_entry, @function
ukt_flow_second_entry:
	addl $1, %eax			/* 3 bytes */
	ret
	.size ukt_flow_second_entry, . - ukt_flow_second_entry
	.cfi_endproc
	.size ukt_flow_two_entries, . - ukt_flow_two_entries

/* A personality routine that lets every exception pass (never called:
 * nothing throws through the functions below). */
	.type ukt_flow_personality, @function
	.p2align 4
ukt_flow_personality:
	movl $8, %eax			/* _URC_CONTINUE_UNWIND */
	ret
	.size ukt_flow_personality, . - ukt_flow_personality

/* An exception landing pad at entry + 2 (refused: -EBUSY). */
	.globl ukt_flow_pad_in_region
	.type ukt_flow_pad_in_region, @function
	.p2align 4
ukt_flow_pad_in_region:
	.cfi_startproc
	.cfi_personality 0x1b, ukt_flow_personality
	.cfi_lsda 0x1b, .Llsda_in
	movl %edi, %eax			/* 2 bytes */
.Lpad_in:
	addl $1, %eax			/* 3 bytes, entry + 2: the landing pad */
	call getpid@PLT
.Lcall_in_end:
	ret
	.cfi_endproc
	.size ukt_flow_pad_in_region, . - ukt_flow_pad_in_region

/* The same with the landing pad past the region (accepted). */
	.globl ukt_flow_pad_elsewhere
	.type ukt_flow_pad_elsewhere, @function
	.p2align 4
ukt_flow_pad_elsewhere:
	.cfi_startproc
	.cfi_personality 0x1b, ukt_flow_personality
	.cfi_lsda 0x1b, .Llsda_else
	movl %edi, %eax			/* 2 bytes */
	addl $1, %eax			/* 3 bytes */
	call getpid@PLT
.Lcall_else_end:
	ret
.Lpad_else:
	movl $-1, %eax
	ret
	.cfi_endproc
	.size ukt_flow_pad_elsewhere, . - ukt_flow_pad_elsewhere

	.section .gcc_except_table, "a", @progbits
.Llsda_in:
	.byte 0xff			/* landing pads relative to the function */
	.byte 0xff			/* no type table */
	.byte 0x01			/* call sites in uleb128 */
	.uleb128 .Lcs_in_end - .Lcs_in
.Lcs_in:
	.uleb128 0				/* start */
	.uleb128 .Lcall_in_end - ukt_flow_pad_in_region /* length */
	.uleb128 .Lpad_in - ukt_flow_pad_in_region	/* landing pad */
	.uleb128 0				/* cleanup */
.Lcs_in_end:
.Llsda_else:
	.byte 0xff
	.byte 0xff
	.byte 0x01
	.uleb128 .Lcs_else_end - .Lcs_else
.Lcs_else:
	.uleb128 0
	.uleb128 .Lcall_else_end - ukt_flow_pad_elsewhere
	.uleb128 .Lpad_else - ukt_flow_pad_elsewhere
	.uleb128 0
.Lcs_else_end:

	.section .note.GNU-stack, "", @progbits

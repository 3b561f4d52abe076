/* SPDX-License-Identifier: MIT */
/*
 * watch_probe.S - may the program write a byte now? (the watchpoints'
 * access check, src/watch.c mem_check, for pages that are not watched).
 *
 * long ukp_watch_probe_write(void *addr)
 *   an atomic no-op write of the byte at addr (load-exclusive, then the
 *   same byte stored back exclusively, again if another write came
 *   between): 0, or -EFAULT (-14) when it faults. Only the two accesses
 *   at ukp_watch_probe_ld/_st may fault; the library's handler resumes
 *   at ukp_watch_probe_fixup (arch_watch_fixup, watch.c).
 * [trap] async-signal-safe; clobbers only x0-x2.
 */
	.section ukprobes_text, "ax", %progbits
	.globl ukp_watch_probe_write
	.hidden ukp_watch_probe_write
	.type ukp_watch_probe_write, %function
	.p2align 4
ukp_watch_probe_write:
	.cfi_startproc
	.globl ukp_watch_probe_ld
	.hidden ukp_watch_probe_ld
ukp_watch_probe_ld:
	ldxrb w1, [x0]
	.globl ukp_watch_probe_st
	.hidden ukp_watch_probe_st
ukp_watch_probe_st:
	stxrb w2, w1, [x0]
	cbnz w2, ukp_watch_probe_ld
	mov x0, #0
	ret
	.globl ukp_watch_probe_fixup
	.hidden ukp_watch_probe_fixup
ukp_watch_probe_fixup:
	mov x0, #-14
	ret
	.cfi_endproc
	.size ukp_watch_probe_write, .-ukp_watch_probe_write

	.section .note.GNU-stack, "", %progbits

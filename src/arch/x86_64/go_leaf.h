/* SPDX-License-Identifier: MIT */
/*
 * go_leaf.h - the layout shared by a Go leaf's detour (optprobe.c,
 * arch_opt_go_leaf) and its template (optprobe_tramp.S,
 * ukp_optprobe_goleaf_*): constants only, for C and the assembler.
 *
 * A leaf (a Go function without a stack check) may have no byte of its
 * goroutine's stack to spare, so its detour keeps what it must, until it
 * is on the thread's own stack, in two words of the thread's own FS-based
 * memory, reached %fs-relative without a register:
 *   GOLEAF_FS_AX  the probed code's rax;
 *   GOLEAF_FS_R   0 when free; else busy (bit 0, set by bts), then the
 *                 way back into the detour (an odd offset: still busy),
 *                 cleared by the detour or the trap handler at the end.
 * Which words: in Go's own threads (a static Go program: ukp_tb_go), FS
 * points one word into the runtime's m.tls (-8(%fs) is g), whose words
 * after the thread key (%fs:0, arch_tb_tp) and the errno word (%fs:8,
 * sys.c) Go never uses on linux/amd64: m.tls[3] and m.tls[4]. In a
 * program on glibc (cgo), FS points to glibc's TCB, whose __private_tm
 * words are reserved for GCC's transactional memory runtime (libitm),
 * which no Go program runs.
 */
#ifndef UKP_X86_GO_LEAF_H
#define UKP_X86_GO_LEAF_H

#define GOLEAF_GO_FS_AX    16  /* m.tls[3] */
#define GOLEAF_GO_FS_R     24  /* m.tls[4] */
#define GOLEAF_GLIBC_FS_AX 0x50 /* tcbhead_t.__private_tm[0] */
#define GOLEAF_GLIBC_FS_R  0x58 /* tcbhead_t.__private_tm[1] */

/* The detour (UKP_DETOUR_SIZE bytes, the copy at UKP_OPT_COPY_OFFSET):
 *   0   btsl $0,%fs:R; jc BUSY; movq %rax,%fs:AX; jmp ENTER
 *   23  BUSY: int3 (another hit of this thread holds the words: a
 *       breakpoint hit, trap.c)
 *   25  the copy, and its jmp back (up to ENTER)
 *   46  ENTER: leaq 0(%rip) of the detour, %rax; jmp *common(%rip)
 *   59  TAIL (odd): movl $0,%fs:R; jmp 25 (the template comes back here
 *       with every register the probed code's, on its stack)
 *   80  the literals: the site, the template */
#define GOLEAF_BUSY  23
#define GOLEAF_ENTER 46
#define GOLEAF_TAIL  59
#define GOLEAF_SITE  80  /* LIT_SITE */

#endif

/* SPDX-License-Identifier: MIT */
/*
 * syscall_fn.c - -f with the freestanding agent in a static program: the
 * children its code makes by a raw fork system call through its C
 * library's syscall() (syscall(SYS_fork), syscall(SYS_clone, SIGCHLD,
 * 0), clone3 without CLONE_VM or CLONE_THREAD), each an image of its own
 * as fork_sites.c makes those of fork().
 *
 * syscall()'s own system call instruction is not probed: every call
 * through it (Rust's std makes its futex calls so) would then take the
 * breakpoint's cost, and a jump-optimized probe cannot send the thread
 * elsewhere (its handlers' change of the instruction pointer is
 * ignored). The probes are on the calls of syscall() in the program's
 * code instead (arch/ARCH/syscall_site.h: a direct call, or tail jump,
 * to it), and only on those that may ask for a fork: a call whose number
 * is loaded as a constant within reach before it (mov $nr, %edi) and is
 * no fork, clone or clone3 is left alone, and costs nothing. A hit whose
 * call forks is sent to the fork trampoline as if it were at syscall()'s
 * instruction (the return address pushed, the arguments moved as
 * syscall() moves them): the thread goes on after that instruction, in
 * syscall() itself, which sets errno and returns. Any other call at a
 * probed site runs as the probe's instruction.
 *
 * Not followed: calls of syscall() through a pointer, a syscall() that
 * is not glibc's (musl's keeps a frame of its own around its
 * instruction), a dynamic program's (attached: libc.so.6's syscall()
 * called through the PLT; launched, the dynamic agent's own syscall()
 * follows them: agent/raw_fork.c), and more than MAX_CALLS such sites.
 *
 * Context: [init] under probes.c's lock, but the handler ([hit]).
 */
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "agent.h"
#include "syscall_site.h"

#define MAX_CALLS 32
#define MAX_RANGES 8

/* (arch/ARCH/fork_tramp.S) */
void ukpa_fork_tramp(void);

static struct kprobe call_kps[MAX_CALLS];
static bool call_on[MAX_CALLS];
static bool call_jumps[MAX_CALLS]; /* a tail jump, not a call */
static int ncalls;
static uintptr_t fn_insn; /* syscall()'s system call instruction */

struct range {
	const unsigned char *p, *end;
	bool dynamic; /* (the first one's) the program has a PT_INTERP */
};

/* [hit] never called: its presence keeps the probe a breakpoint (a
 * jump-optimized hit ignores a changed instruction pointer) */
static void call_post(struct kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
	(void)kp;
	(void)regs;
	(void)flags;
}

/* [hit] At a call of syscall(): a fork goes to the trampoline as from
 * syscall()'s instruction; anything else runs as the probe's
 * instruction (the call). */
static int call_pre(struct kprobe *kp, struct pt_regs *regs)
{
	uintptr_t addr = (uintptr_t)kp->addr;
	unsigned long a0, a1;
	long nr;

	ukpa_site_call_args(regs, &nr, &a0, &a1);
	/* (the site's first byte is the breakpoint now: what it was, kept) */
	if (!ukpa_call_forks(nr, a0, a1) ||
	    !ukpa_site_call_enter(regs, addr, !call_jumps[kp - call_kps]))
		return 0;
	atomic_fetch_add(&ukpa_forks_running, 1);
	ukpa_site_divert(regs, fn_insn, (uintptr_t)ukpa_fork_tramp);
	return 1; /* resumes at the trampoline */
}

static int program_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct range *r = arg;
	int i, n = 0;

	(void)size;
	for (i = 0; i < info->dlpi_phnum && n < MAX_RANGES - 1; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_INTERP)
			r[0].dynamic = true;
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		r[n].p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		r[n].end = r[n].p + ph->p_filesz;
		n++;
	}
	return 1; /* the program only (the first object) */
}

/* May the call of syscall() at q ask for a fork? Not when a constant
 * other than fork's, clone's or clone3's is loaded as its number within
 * reach before it (the nearest such load). */
static bool may_fork(const unsigned char *q, const unsigned char *lo)
{
	const unsigned char *p;
	long nr;

	for (p = q - UKPA_SITE_LOAD_LEN; p >= lo && p + UKPA_ARG0_REACH >= q; p--)
		if (ukpa_site_loads_arg0(p, &nr))
			return nr == UKPA_NR_FORK || nr == UKPA_NR_CLONE || nr == UKPA_NR_CLONE3;
	return true; /* (a number from elsewhere) */
}

/* [init] With -f in a static program: the calls of syscall() that may
 * fork, probed. Returns how many. */
int ukpa_syscall_calls_watch(void)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[KSYM_NAME_LEN + 256];
	struct range r[MAX_RANGES];
	int i, k = 0;

	if (ncalls || fn_insn)
		return 0;
	memset(r, 0, sizeof(r));
	/* (a dynamic program's syscall() is libc.so.6's: not followed) */
	dl_iterate_phdr(program_ranges, r);
	if (r[0].dynamic ||
	    kallsyms_lookup_name_info("syscall", &info, buf, sizeof(buf)) ||
	    !(info.flags & KSYM_MAIN) ||
	    !ukpa_syscall_fn_is_glibc((const unsigned char *)info.addr))
		return 0;
	fn_insn = info.addr + UKPA_SYSCALL_FN_INSN;
	for (i = 0; i < MAX_RANGES && r[i].p; i++) {
		const unsigned char *q;

		for (q = r[i].p; q + UKPA_CALL_LEN <= r[i].end && ncalls < MAX_CALLS; q++)
			if (ukpa_site_calls(q, info.addr) && may_fork(q, r[i].p)) {
				call_jumps[ncalls] = ukpa_site_calls(q, info.addr) == 2;
				call_kps[ncalls++].addr = (kprobe_opcode_t *)q;
			}
	}
	for (i = 0; i < ncalls; i++) {
		call_kps[i].pre_handler = call_pre;
		call_kps[i].post_handler = call_post;
		call_on[i] = !register_kprobe(&call_kps[i]);
		k += call_on[i];
	}
	return k;
}

void ukpa_syscall_calls_unwatch(void)
{
	int i;

	for (i = 0; i < ncalls; i++)
		if (call_on[i])
			unregister_kprobe(&call_kps[i]);
	memset(call_kps, 0, sizeof(call_kps));
	memset(call_on, 0, sizeof(call_on));
	memset(call_jumps, 0, sizeof(call_jumps));
	ncalls = 0;
	fn_insn = 0;
}

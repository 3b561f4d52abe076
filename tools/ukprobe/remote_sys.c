/* SPDX-License-Identifier: MIT */
/*
 * remote_sys.c - a system call made by a thread ukprobe holds stopped
 * under ptrace, with no code of the process run for it and no byte of
 * its stack used: the registers are set to make the call at a system
 * call instruction found in the process, and the thread runs to the
 * call's exit stop. The loader (load.c) maps the agent so; the injector
 * (inject.c) maps the stack its calls run on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace_arch.h"
#include "target.h"

#define SCAN_MAX (4UL << 20)   /* bytes of an executable mapping searched */
#define RESTARTS 16            /* a call of ours the kernel asks to restart */

int ukp_find_syscall_insn(pid_t pid, int mem, uintptr_t *insn)
{
	char path[64], line[4096 + 256];
	int pass;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	for (pass = 0; pass < 2; pass++) {
		FILE *f = fopen(path, "re");

		if (!f)
			return -ESRCH;
		while (fgets(line, sizeof(line), f)) {
			unsigned long lo, hi;
			char perms[8];
			size_t len, i, n = ukp_arch_syscall_insn_len;
			unsigned char *buf;

			/* the vDSO's first: it is in every process */
			if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x' ||
			    (pass == 0) != (strstr(line, "[vdso]") != NULL))
				continue;
			len = hi - lo < SCAN_MAX ? hi - lo : SCAN_MAX;
			buf = malloc(len);
			if (!buf || pread(mem, buf, len, (off_t)lo) != (ssize_t)len) {
				free(buf);
				continue;
			}
			for (i = 0; i + n <= len; i += ukp_arch_insn_align) {
				if (!memcmp(buf + i, ukp_arch_syscall_insn, n)) {
					*insn = lo + i;
					free(buf);
					fclose(f);
					return 0;
				}
			}
			free(buf);
		}
		fclose(f);
	}
	return -ENOENT;
}

/* Run tid to its next system call stop of the kind op
 * (PTRACE_SYSCALL_INFO_ENTRY or _EXIT). A signal it stops for meanwhile
 * goes into *sig (the first one) for the caller to give back. */
static int to_syscall_stop(pid_t tid, int op, int *sig)
{
	struct __ptrace_syscall_info si;
	int status;

	for (;;) {
		pid_t r;

		if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL))
			return -ESRCH;
		do
			r = waitpid(tid, &status, __WALL);
		while (r < 0 && errno == EINTR);
		if (r != tid || WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) < 0)
				return -ESRCH;
			if (si.op == op)
				return 0;
		} else if (!(status >> 16) && !*sig) {
			*sig = WSTOPSIG(status);
		}
	}
}

int ukp_remote_syscall(pid_t tid, const struct ukp_regs *base, uintptr_t insn, long nr,
		       const unsigned long a[6], int *sig, long *res)
{
	struct ukp_regs r = *base;
	int tries, ret;

	for (tries = 0; tries < RESTARTS; tries++) {
		ukp_arch_set_syscall(&r, insn, nr, a);
		if (ukp_arch_set_regs(tid, &r))
			return -ESRCH;
		ret = to_syscall_stop(tid, PTRACE_SYSCALL_INFO_ENTRY, sig);
		if (!ret)
			ret = to_syscall_stop(tid, PTRACE_SYSCALL_INFO_EXIT, sig);
		if (!ret)
			ret = ukp_arch_get_regs(tid, &r);
		if (ret)
			return -ESRCH;
		*res = ukp_arch_result(&r);
		if (*res < -511 && *res > -517)
			continue; /* -ERESTART*: the kernel would run it again */
		return 0;
	}
	return 0;
}

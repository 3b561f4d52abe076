// SPDX-License-Identifier: MIT
/*
 * program_name_prog.c - run by test_program_name.c through a symlink and
 * with an argv[0] of its own (Criterion's workers are re-executed under
 * the real path, so the check cannot run in one). Each argument is
 * "NAME=WANT": a kprobe at NAME:ukt_named_target must register with
 * WANT (0 or an errno value) and, when it does, be hit. Prints what
 * went wrong; exits 0 when everything was as wanted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ukprobes.h"

static int hits;

__attribute__((noipa, used)) int ukt_named_target(int v)
{
	return v * 9;
}

static int (*volatile named_target)(int) = ukt_named_target;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	hits++;
	return 0;
}

int main(int argc, char **argv)
{
	int i, bad = 0;

	for (i = 1; i < argc; i++) {
		char spec[4200], *eq = strrchr(argv[i], '=');
		struct kprobe k = { .pre_handler = count_pre };
		int want, ret, before = hits;

		if (!eq)
			return 2;
		want = -atoi(eq + 1);
		snprintf(spec, sizeof(spec), "%.*s:ukt_named_target", (int)(eq - argv[i]), argv[i]);
		k.symbol_name = spec;
		ret = register_kprobe(&k);
		if (ret != want) {
			printf("%s: %d, want %d\n", spec, ret, want);
			bad = 1;
			continue;
		}
		if (ret)
			continue;
		if (named_target(2) != 18 || hits != before + 1) {
			printf("%s: not hit\n", spec);
			bad = 1;
		}
		unregister_kprobe(&k);
	}
	return bad;
}

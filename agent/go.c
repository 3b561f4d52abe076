/* SPDX-License-Identifier: MIT */
/*
 * go.c - probes on Go functions (ABIInternal, the register ABI of Go
 * 1.17 and later), where the C rules mislead:
 *
 *  - A Go function starts with a check of its goroutine's stack; when
 *    the stack must grow, the runtime copies it and runs the function's
 *    start again. An entry probe goes past the check, where it runs once
 *    per call.
 *  - $argN are in Go's argument registers (arch/ARCH/go_abi.h), not C's.
 *  - A return probe cannot swap the return address: Go's runtime walks
 *    and copies goroutine stacks by their return addresses ("unexpected
 *    return pc"). An r event is a probe on each of the function's return
 *    instructions (ukprobes_func_returns), nothing on the stack changes;
 *    its entry's registers and time come from a per-goroutine stack of
 *    entry records (handlers.c), keyed by g, not by the thread, since
 *    goroutines move between threads.
 *
 * Go code is what lies between runtime.text and runtime.etext in an
 * object (the runtime's own bounds of its code, in every Go binary's
 * symbol table, in a -linkmode=external one too; cgo's C code is
 * outside).
 *
 * Context: [init], under probes.c's lock.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "go_abi.h"

/* The last object asked about: its path and its Go code's bounds (0, 0:
 * none). */
static struct {
	char path[PATH_MAX];
	uintptr_t text, etext;
} last;

bool ukpa_go_code(uintptr_t addr)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN], name[PATH_MAX + 32];

	int ret = kallsyms_lookup_info(addr, &info, buf, sizeof(buf));

	if ((ret && ret != -ENOENT) || !info.modpath)
		return false;
	if (strcmp(last.path, info.modpath)) {
		snprintf(last.path, sizeof(last.path), "%s", info.modpath);
		snprintf(name, sizeof(name), "%s:runtime.text", info.modpath);
		last.text = kallsyms_lookup_name(name);
		snprintf(name, sizeof(name), "%s:runtime.etext", info.modpath);
		last.etext = last.text ? kallsyms_lookup_name(name) : 0;
	}
	return last.text && addr >= last.text && addr < last.etext;
}

uintptr_t ukpa_go_body(uintptr_t func)
{
	uint8_t code[32];
	size_t n;

	/* (the bytes as they are: a probe of another SPEC put on the
	 * function's very start, +0, hides the check, and this one stays
	 * at the start too) */
	if (copy_from_user_nofault(code, (const void *)func, sizeof(code)))
		return func;
	n = ukpa_go_prologue_len(code, sizeof(code));
	return func + n;
}

int ukpa_go_compile(const struct ukp_spec *spec, struct ukp_spec **out, uint32_t *argi,
		    char *why, size_t len)
{
	const size_t nregs = sizeof(ukpa_go_arg_words) / sizeof(ukpa_go_arg_words[0]);
	struct ukp_spec *c;
	int i;

	*out = NULL;
	for (i = 0; i < spec->nargs && spec->args[i].base != UKP_FA_ARG; i++)
		;
	if (i == spec->nargs)
		return 0;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* (a shallow copy: the fetch reads its arguments only) */
	memcpy(c, spec, sizeof(*c));
	for (i = 0; i < c->nargs; i++) {
		struct ukp_fetcharg *fa = &c->args[i];

		if (fa->base != UKP_FA_ARG)
			continue;
		if (fa->param > nregs) {
			*argi = (uint32_t)i;
			snprintf(why, len, "$arg%lu: a Go function gets its first %zu integer "
				 "arguments in registers, the others on the stack",
				 (unsigned long)fa->param, nregs);
			free(c);
			return -EINVAL;
		}
		fa->base = UKP_FA_ENTRY_REG;
		fa->param = ukpa_go_arg_words[fa->param - 1];
		fa->plain_reg = false;
	}
	*out = c;
	return 0;
}

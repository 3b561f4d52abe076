/* SPDX-License-Identifier: MIT */
/*
 * log.c - the library's diagnostics go to a callback the user sets; the
 * library never writes to stdout/stderr on its own (see ukprobes.h).
 */
#include <stdarg.h>

#include <stdatomic.h>

#include "base/base.h"

static _Atomic(ukprobes_print_fn_t) ukp_print_fn;

/* [any] Not on the hit path. */
ukprobes_print_fn_t ukprobes_set_print(ukprobes_print_fn_t fn)
{
	return atomic_exchange(&ukp_print_fn, fn);
}

/* [reg] */
void ukp_pr(enum ukprobes_print_level level, const char *fmt, ...)
{
	ukprobes_print_fn_t fn = atomic_load(&ukp_print_fn);
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
}

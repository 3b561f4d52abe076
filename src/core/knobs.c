/* SPDX-License-Identifier: MIT */
/*
 * knobs.c - the debugfs "list" file as a function (kprobes.rst,
 * Appendix A), and the handler-fault counter.
 *
 * Format, as the kernel's report_probe(): one line per probe (aggregate
 * children newest first), two-space separators, the object's file name
 * when it is not the main program (a single space otherwise), a space,
 * then the tags:
 *   00007f1c2a4b5010  k  deflate+0x4  libz.so.1 [DISABLED]
 */
#include <errno.h>
#include <stdlib.h>

#include "base/base.h"
#include "core/core.h"
#include "watch/watch.h"
#include "core/kretprobes.h"
#include "core/jprobes.h"
#include "watch/watch.h"


static void report_probe(FILE *out, const struct ukp_site *s, const struct kprobe *kp)
{
	const char *mod = " ";

	if (s->obj && !s->obj->is_main)
		mod = s->obj->name;
	fprintf(out, "%016lx  %s  %s+0x%lx  %s %s%s%s%s\n", (unsigned long)s->addr,
		ukp_is_kretprobe(kp) ? "r" : ukp_is_jprobe(kp) ? "j" : "k",
		s->symname, (unsigned long)s->symoff, mod, kprobe_gone(kp) ? "[GONE]" : "",
		(kprobe_disabled(kp) && !kprobe_gone(kp)) ? "[DISABLED]" : "",
		kprobe_optimized(kp) ? "[OPTIMIZED]" : "", kprobe_ftrace(kp) ? "[FTRACE]" : "");
}

UKPROBES_API int kprobes_show_list(FILE *out)
{
	struct ukp_site *s, **order;
	size_t n = 0, i;

	if (!out)
		return -EINVAL;
	if (ukp_lock_for_show())
		return -EINVAL;
	for (s = ukp_all_sites; s; s = s->all_next)
		n++;
	order = calloc(n ? n : 1, sizeof(*order));
	if (!order) {
		ukp_unlock_for_show();
		return -ENOMEM;
	}
	/* registration order, oldest site first */
	i = n;
	for (s = ukp_all_sites; s; s = s->all_next)
		order[--i] = s;
	for (i = 0; i < n; i++) {
		struct ukp_child *ch;

		for (ch = atomic_load(&order[i]->children); ch; ch = atomic_load(&ch->next))
			report_probe(out, order[i], ch->kp);
	}
	free(order);
	/* data watchpoints: "ADDR  w  LEN  TYPE  [PAGE|DEBUGREG]..." */
	ukp_watch_show(out);
	ukp_unlock_for_show();
	return 0;
}

UKPROBES_API unsigned long kprobes_handler_faults(void)
{
	return atomic_load(&ukp_handler_fault_count);
}

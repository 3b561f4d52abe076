/* SPDX-License-Identifier: MIT */
/*
 * entry.c - the freestanding agent's start (libukprobe-agent.bin): the
 * thread ukprobe's ptrace loader (tools/ukprobe/load.c) starts in the
 * process, with the load block (common/load_block.h) as its argument.
 * No dynamic loader ran for the object: its constructors run here, in
 * link order (the library's first, as in the dynamic agent), then the
 * session the parameters name runs on this thread, as the dynamic
 * agent's attach thread does; the thread ends with exit (not
 * exit_group) once ukprobe has detached, and the loader unmaps it.
 *
 * params: "NAME\0KEY\0FLAGS\0" (the abstract socket ukprobe listens on,
 * the secret to present there, and letters: 'g', the program's threads
 * are Go's own, ukp_tb_go): attached. NAME empty: launched (ukprobe started
 * the program and holds it at its entry point until this thread ends);
 * the constructors then set up tracing from the environment ukprobe gave
 * the program (agent.c's ukpa_init, as in a preloaded agent) and the
 * thread ends.
 */
#include <stddef.h>
#include <stdint.h>

#include "load_block.h"

typedef void (*init_fn)(void);
extern init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern init_fn __init_array_end[] __attribute__((visibility("hidden")));

int ukpa_free_session(const char *name, char *key);
extern int ukp_tb_go; /* common/thread_block.h */
long syscall(long n, ...);
/* the library's blacklist of the agent's own text (src/core/blacklist.c) */
extern uintptr_t ukp_self_text_lo, ukp_self_text_hi;

/* The thread's end: exit, not exit_group (the loader unmaps its stack
 * after it, once the kernel cleared ctid). */
static __attribute__((noreturn)) void ukpa_free_exit(int code)
{
	(void)code;
	for (;;)
		syscall(60 /* __NR_exit, x86-64: the only architecture of this build */, 0);
}

__attribute__((visibility("default"), noreturn)) void ukpa_free_entry(struct ukp_load_block *b)
{
	const char *name = (const char *)b->params;
	char *key;
	size_t i, n = b->params_len;

	for (i = 0; i < n && name[i]; i++)
		;
	key = i + 1 < n ? (char *)b->params + i + 1 : NULL;
	if (key) {
		const char *flags = key;

		while (flags < name + n && *flags)
			flags++;
		for (flags++; flags < name + n && *flags; flags++)
			if (*flags == 'g')
				ukp_tb_go = 1;
	}
	/* the image (and the loader's clone trampoline after it): never
	 * probed, as the dynamic agent's object is not */
	ukp_self_text_lo = (uintptr_t)b->area;
	ukp_self_text_hi = (uintptr_t)(b->area + b->area_len);
	for (init_fn *f = __init_array_start; f < __init_array_end; f++)
		(*f)();
	if (!n || !name[0])
		ukpa_free_exit(0); /* launched: set up by the constructors */
	ukpa_free_exit(ukpa_free_session(name, key));
}

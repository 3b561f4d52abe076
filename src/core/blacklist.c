/* SPDX-License-Identifier: MIT */
/*
 * blacklist.c - addresses that cannot be probed (the kernel's
 * kprobe_blacklist): the library itself, the code the trap path runs
 * through (glibc's signal return trampoline), the glibc functions that run
 * with every signal blocked, and every function a loaded object marks
 * with NOKPROBE_SYMBOL().
 *
 * [reg] everything here runs under ukp_mutex.
 */
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "arch/arch_branches.h"
#include "base/base.h"
#include "base/sys.h"
#include "core/core.h"
#include "process/process.h"
#include "symbols/symbols.h"
#include "symbols/maps_objects.h"

struct bl_range {
	uintptr_t start, end;
	char *name;
};

static struct bl_range *ranges;
static size_t nranges, cap;
static uint64_t built_gen = (uint64_t)-1;
static bool libc_added; /* the C library's ranges are in (add_libc_parts) */

/* The trap path's own section (see UKP_TRAP_TEXT). */
extern char __start_ukprobes_text[] __attribute__((weak, visibility("hidden")));
extern char __stop_ukprobes_text[] __attribute__((weak, visibility("hidden")));

/* The object the C library's functions are in: libc.so.6, or in a
 * static program (the freestanding agent's) the program itself. */
#ifdef UKP_FREE
static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (strcmp(base, "libc.so.6"))
		return 0;
	*(bool *)arg = true;
	return 1;
}
#endif

static const char *libc_object(void)
{
#ifdef UKP_FREE
	/* (the freestanding agent serves dynamic programs too: their C
	 * library is libc.so.6, loaded before anything could attach) */
	static char name[256];

	if (!name[0]) {
		char path[256];
		long n;
		const char *base;
		bool dynamic = false;

		ukp_iterate_objects(find_libc, &dynamic);
		if (dynamic) {
			snprintf(name, sizeof(name), "libc.so.6");
			return name;
		}
		n = ukp_sys_readlink("/proc/self/exe", path, sizeof(path) - 1);
		path[n > 0 ? n : 0] = 0;
		base = strrchr(path, '/');
		snprintf(name, sizeof(name), "%s", base ? base + 1 : path);
	}
	return name;
#else
	return "libc.so.6";
#endif
}

static void add_range(uintptr_t start, uintptr_t end, const char *name, void *arg)
{
	struct bl_range *r;

	(void)arg;
	if (end <= start)
		return;
	if (nranges == cap) {
		size_t ncap = cap ? cap * 2 : 32;
		struct bl_range *n = realloc(ranges, ncap * sizeof(*n));

		if (!n)
			return;
		ranges = n;
		cap = ncap;
	}
	r = &ranges[nranges];
	r->name = strdup(name ? name : "?");
	if (!r->name)
		return;
	r->start = start;
	r->end = end;
	nranges++;
}

struct self_search {
	uintptr_t probe;
};

/* When the library is a shared object, all of its code is off limits. */
static int self_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_search *ss = arg;
	bool mine = false;
	const char *name;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && ss->probe >= a && ss->probe < a + ph->p_memsz)
			mine = true;
	}
	if (!mine || !info->dlpi_name || !info->dlpi_name[0])
		return 0; /* linked statically into the main program */
	name = strrchr(info->dlpi_name, '/');
	name = name ? name + 1 : info->dlpi_name;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			add_range(a, a + ph->p_memsz, name, NULL);
	}
	return 1;
}

/*
 * glibc functions that glibc itself runs with every signal blocked (raw
 * rt_sigprocmask, which the library cannot interpose): a new thread
 * before its mask is restored (__ctype_init, _setjmp, __sigsetjmp), a
 * thread on its way out (getpagesize, madvise, munmap: freeing its
 * stack), and the child of posix_spawn/system (__libc_sigaction,
 * sigprocmask, pthread_sigmask, execve). A breakpoint there would raise
 * a blocked SIGTRAP, which the kernel makes fatal.
 */
static const char *const libc_masked[] = {
	"__ctype_init", "_setjmp", "__sigsetjmp", "getpagesize", "madvise", "munmap",
	"__libc_sigaction", "sigprocmask", "pthread_sigmask", "execve",
};

/*
 * glibc functions whose body, not their entry, runs with every signal
 * blocked: pthread_create blocks them all (raw rt_sigprocmask) around
 * the clone of the new thread, so that it starts with them blocked. A
 * breakpoint inside it killed Python's threads (found by the torture
 * tier: a random probe on pthread_create+0x7ac). The entry (past an
 * endbr64) stays probe-able: pthread_create is worth tracing, and the
 * mask is only set further in.
 */
static const char *const libc_masked_body[] = { "pthread_create" };

static void add_libc_masked_bodies(void)
{
	char spec[320];
	size_t i;

	for (i = 0; i < sizeof(libc_masked_body) / sizeof(libc_masked_body[0]); i++) {
		struct ukp_symres sym;
		uint8_t b[UKP_MAX_INSN_SIZE];
		uintptr_t a, entry;

		snprintf(spec, sizeof(spec), "%s:%s", libc_object(), libc_masked_body[i]);
		if (ukp_sym_lookup_name(spec, &a) || ukp_sym_lookup_addr(a, &sym) || sym.size < 2)
			continue;
		/* the entry past an endbr64 (arch_entry_skip) stays probe-able */
		entry = sym.start + arch_entry_skip(b, ukp_read_original(sym.start, b, sizeof(b)));
		add_range(entry + 1, sym.start + sym.size, libc_masked_body[i], NULL);
	}
}

static void add_libc_masked(void)
{
	char spec[320];
	size_t i;

	for (i = 0; i < sizeof(libc_masked) / sizeof(libc_masked[0]); i++) {
		struct ukp_symres sym;
		uintptr_t a;

		snprintf(spec, sizeof(spec), "%s:%s", libc_object(), libc_masked[i]);
		if (ukp_sym_lookup_name(spec, &a) || ukp_sym_lookup_addr(a, &sym))
			continue;
		add_range(sym.start, sym.start + (sym.size ? sym.size : 1), libc_masked[i], NULL);
	}
}

/*
 * The roots of the code a thread runs with every signal blocked, whose
 * callees are masked too (masked_closure): what start_thread calls after
 * it blocks every signal on its way out (freeing the thread's
 * descriptor and stack under the stack cache's lock: __nptl_free_tcb,
 * the private lock's slow paths), what the new thread runs before its
 * mask is restored, what the child of posix_spawn runs before its exec
 * (__spawni_child, as a whole; the functions it reaches, such as
 * close, dup2, fcntl, ioctl, chdir for the file actions it was given,
 * past their first instruction only: users probe their entries, which
 * are jump-optimized, and a random probe inside __close_nocancel killed
 * a posix_spawn child in the torture tier), and clone. A random breakpoint in
 * __lll_lock_wait_private killed an exiting Python thread in the torture
 * tier (open bug 5, doc/torture.md). The new thread's setjmp
 * (_setjmp, __sigsetjmp) ends in a tail jump to the local
 * __sigjmp_save: a probe there killed the library's optimizer thread as
 * it started, while the register benchmark's probes on every libc entry
 * were armed (bench_register, 1 run in 7). Local names come from the debug
 * file (libc6-dbg); an object without it keeps only its exported roots.
 * start_thread is taken as a whole but its callees are not followed:
 * its unmasked part calls the thread's function, exit and the
 * destructors, which must stay probe-able; its masked callees are named
 * instead.
 */
static const char *const libc_masked_whole[] = { "start_thread", "__spawni_child" };
static const char *const libc_masked_roots[] = {
	"__nptl_free_tcb", "__nptl_deallocate_stack", "__lll_lock_wait_private",
	"__lll_lock_wake_private", "__nptl_death_event", "__clone_internal", "__clone3",
	"__clone", "_setjmp", "__sigsetjmp",
};

/*
 * Functions that end the process (a failed assertion, a fatal libc
 * message): masked code may call them, but following them would take in
 * the whole of abort() and backtrace(); a breakpoint there ends a process
 * that was ending anyway.
 */
static const char *const libc_fatal[] = {
	"__libc_fatal", "__libc_message", "__assert_fail", "__fortify_fail", "abort",
	"__stack_chk_fail", "__chk_fail",
};

#define MASKED_MAX 128

struct masked_walk {
	const struct ukp_object *libc;
	uintptr_t start[MASKED_MAX];    /* functions taken, by entry */
	size_t size[MASKED_MAX];
	const char *name[MASKED_MAX];
	size_t n;
	uintptr_t stop[sizeof(libc_fatal) / sizeof(libc_fatal[0])];
	const struct ukp_symres *cur;
};

static void masked_take(struct masked_walk *w, const struct ukp_symres *sym)
{
	size_t i;

	if (!sym->size || w->n == MASKED_MAX)
		return;
	for (i = 0; i < w->n; i++)
		if (w->start[i] == sym->start)
			return;
	for (i = 0; i < sizeof(w->stop) / sizeof(w->stop[0]); i++)
		if (w->stop[i] == sym->start)
			return;
	w->start[w->n] = sym->start;
	w->size[w->n] = sym->size;
	w->name[w->n] = sym->name;
	w->n++;
}

/* A direct call or jump out of the function being scanned: its callee. */
static int masked_flow(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct masked_walk *w = arg;
	struct ukp_symres sym;

	(void)from;
	if (kind != ARCH_FLOW_DIRECT ||
	    (target >= w->cur->start && target < w->cur->start + w->cur->size))
		return 0;
	/* (calls into other objects go through the PLT: not followed) */
	if (!ukp_sym_lookup_addr(target, &sym) && sym.start == target && sym.obj == w->libc)
		masked_take(w, &sym);
	return 0;
}

/*
 * The closure from roots; bodies_only: each function found but the roots
 * is refused past its first instruction only (its entry stays
 * probe-able), for code that users probe at the entry and that a masked
 * context reaches only in some paths (the posix_spawn child's file
 * actions: close, dup2, fcntl, ...).
 */
static void masked_closure(const char *const *roots, size_t nroots, bool bodies_only)
{
	struct masked_walk *w = calloc(1, sizeof(*w));
	char spec[320];
	uintptr_t a;
	size_t i, done;

	if (!w)
		return;
	for (i = 0; i < sizeof(libc_fatal) / sizeof(libc_fatal[0]); i++) {
		snprintf(spec, sizeof(spec), "%s:%s", libc_object(), libc_fatal[i]);
		if (!ukp_sym_lookup_name(spec, &a))
			w->stop[i] = a;
	}
	for (i = 0; i < nroots; i++) {
		struct ukp_symres sym;

		snprintf(spec, sizeof(spec), "%s:%s", libc_object(), roots[i]);
		if (ukp_sym_lookup_name(spec, &a) || ukp_sym_lookup_addr(a, &sym))
			continue;
		w->libc = sym.obj;
		masked_take(w, &sym);
	}
	/* breadth first over direct calls and tail jumps */
	for (done = 0; done < w->n; done++) {
		struct ukp_symres sym;
		struct arch_code_part part;
		uint8_t *code = malloc(w->size[done]);

		if (!code)
			break;
		if (ukp_sym_lookup_addr(w->start[done], &sym) ||
		    ukp_read_original(w->start[done], code, w->size[done]) != w->size[done]) {
			free(code);
			continue;
		}
		part = (struct arch_code_part){ w->start[done], code, w->size[done] };
		w->cur = &sym;
		arch_scan_flow(&part, 1, 0, 0, ARCH_FLOW_DIRECT_ONLY, masked_flow, w);
		free(code);
	}
	for (i = 0; i < w->n; i++) {
		uintptr_t from = w->start[i];

		if (bodies_only && i >= nroots) {
			uint8_t b[UKP_MAX_INSN_SIZE];
			size_t n = ukp_read_original(from, b, sizeof(b)), skip = arch_entry_skip(b, n);

			/* past the entry's first instruction */
			from += skip + (arch_insn_length(b + skip, n - skip) ?: 1);
		}
		add_range(from, w->start[i] + w->size[i], w->name[i], NULL);
	}
	free(w);
}

static void add_libc_masked_closure(void)
{
	static const char *const spawn_child[] = { "__spawni_child" };
	char spec[320];
	uintptr_t a;
	size_t i;

	masked_closure(libc_masked_roots, sizeof(libc_masked_roots) / sizeof(libc_masked_roots[0]),
		       false);
	masked_closure(spawn_child, 1, true);
	for (i = 0; i < sizeof(libc_masked_whole) / sizeof(libc_masked_whole[0]); i++) {
		struct ukp_symres sym;

		snprintf(spec, sizeof(spec), "%s:%s", libc_object(), libc_masked_whole[i]);
		if (!ukp_sym_lookup_name(spec, &a) && !ukp_sym_lookup_addr(a, &sym))
			add_range(sym.start, sym.start + (sym.size ? sym.size : 1), libc_masked_whole[i],
				  NULL);
	}
}

/*
 * libc's memory functions, in a build whose own hit path may call them:
 * clang and unoptimized builds lower structure initialisation and copies
 * to memset/memcpy calls, and the sanitizers' __asan_mem* forward to
 * libc's. A breakpoint there would trap again inside the trap. The names
 * are IFUNCs: the lookup gives the implementations this process runs.
 * (GCC's optimized build of the hit path calls none of them, so there
 * they stay probe-able.)
 */
#if defined(__clang__) || !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__)
#define UKP_HIT_PATH_CALLS_MEMFUNCS 1
#else
#define UKP_HIT_PATH_CALLS_MEMFUNCS 0
#endif
static const char *const libc_hit_path[] = { "memset", "memcpy", "memmove" };

static void add_libc_hit_path(void)
{
	char spec[320];
	size_t i;

	for (i = 0; UKP_HIT_PATH_CALLS_MEMFUNCS && i < sizeof(libc_hit_path) / sizeof(libc_hit_path[0]);
	     i++) {
		struct ukp_symres sym;
		uintptr_t a;

		snprintf(spec, sizeof(spec), "%s:%s", libc_object(), libc_hit_path[i]);
		if (ukp_sym_lookup_name(spec, &a) || ukp_sym_lookup_addr(a, &sym))
			continue;
		add_range(sym.start, sym.start + (sym.size ? sym.size : 1), libc_hit_path[i], NULL);
	}
}

static void rebuild(void)
{
	struct self_search ss = { (uintptr_t)&register_kprobe };
	uintptr_t restorer;
	size_t i;

	for (i = 0; i < nranges; i++)
		free(ranges[i].name);
	nranges = 0;
	if (__start_ukprobes_text && __stop_ukprobes_text)
		add_range((uintptr_t)__start_ukprobes_text, (uintptr_t)__stop_ukprobes_text,
			  "ukprobes_text", NULL);
	ukp_iterate_objects(self_segments, &ss);
	if (ukp_self_text_hi > ukp_self_text_lo)
		add_range(ukp_self_text_lo, ukp_self_text_hi, "ukprobe-agent", NULL);
	restorer = ukp_libc_restorer();
	if (restorer)
		add_range(restorer, restorer + 16, "__restore_rt", NULL);
	ukp_for_each_nokprobe(add_range, NULL);
	libc_added = false;
	built_gen = ukp_objects_generation();
}

/*
 * [reg] The C library's ranges (every one of them lies in its object):
 * their names are looked up in its symbols, which reads its debug file
 * and walks the masked functions' calls. Added when an address in the
 * C library is asked about (or the whole list shown), or when the
 * object is not found (the look-ups then find what they can): a
 * program probed elsewhere never pays for them.
 */
static void add_libc_parts(void)
{
	if (libc_added)
		return;
	add_libc_masked();
	add_libc_hit_path();
	add_libc_masked_bodies();
	add_libc_masked_closure();
	libc_added = true;
}

static void libc_parts_for(uintptr_t addr)
{
	const struct ukp_object *libc;

	if (libc_added)
		return;
	libc = ukp_object_named(libc_object());
	if (!libc || ukp_object_of(addr) == libc)
		add_libc_parts();
}

/* [reg] Build the list the first time and whenever objects changed (the
 * C library's part when it is wanted: ukp_blacklisted). */
int ukp_blacklist_init(void)
{
	if (built_gen != ukp_objects_generation())
		rebuild();
	return 0;
}

void ukp_blacklist_refresh(void)
{
	built_gen = (uint64_t)-1;
}

#ifdef UKP_FREE
/* Addresses that stay probe-able in the blacklist's ranges: the
 * freestanding agent's probes on a static program's own rt_sigaction and
 * rt_sigprocmask system calls (agent/free/signal_sites.c), which are in
 * the C library's signal-masked functions by nature and are what keeps
 * SIGTRAP unblocked there. */
static uintptr_t exempt[64];
static size_t nexempt;

int ukp_blacklist_exempt(uintptr_t addr)
{
	if (nexempt == sizeof(exempt) / sizeof(exempt[0]))
		return -ENOSPC;
	exempt[nexempt++] = addr;
	return 0;
}
#endif

/* [reg] */
bool ukp_blacklisted(uintptr_t addr)
{
	size_t i;

#ifdef UKP_FREE
	for (i = 0; i < nexempt; i++)
		if (exempt[i] == addr)
			return false;
#endif
	ukp_blacklist_init();
	libc_parts_for(addr);
	for (i = 0; i < nranges; i++)
		if (addr >= ranges[i].start && addr < ranges[i].end)
			return true;
	return false;
}

UKPROBES_API int kprobes_show_blacklist(FILE *out)
{
	size_t i;

	if (!out)
		return -EINVAL;
	if (ukp_lock_for_show())
		return -EINVAL;
	ukp_blacklist_init();
	add_libc_parts();
	for (i = 0; i < nranges; i++)
		fprintf(out, "0x%016lx-0x%016lx\t%s\n", (unsigned long)ranges[i].start,
			(unsigned long)ranges[i].end, ranges[i].name);
	ukp_unlock_for_show();
	return 0;
}

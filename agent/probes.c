/* SPDX-License-Identifier: MIT */
/*
 * probes.c - from SPECs to registered probes (their handlers are
 * handlers.c's, their names names.c's).
 *
 * A SPEC becomes one probe, or (a glob) one probe per matching function,
 * named after it as perf probe names them. A SPEC whose object is not
 * loaded yet waits ("pending") and is registered when the program loads
 * the object: the loader stops the loading thread for it, after the
 * object is mapped and before it can be called (loader.c,
 * ukpa_probes_loader_event); interpose.c calls ukpa_probes_refresh()
 * after dlopen() and the reader thread polls the loader's counters, for
 * when that probe could not be placed. When the object is unloaded, its
 * probes are forgotten (the loader stops again, after the unmap) and
 * registered again, under the same ids, when it comes back. No
 * registration overlaps an unmap: from the loader's RT_DELETE to the
 * RT_CONSISTENT after it, registrations wait (loader_wait_locked).
 *
 * Every probe is announced to ukprobe (a PROBE message) before its hits
 * are recorded: its live flag is set after the message went out.
 *
 * Context: [init] (and the reader thread, for ukpa_probes_refresh()),
 * under probes_lock.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sort.h" /* ukp_sort(), not libc qsort */
#include "agent.h"
#include "filter.h"
#include "objects_changed.h"
#include "spec_wire.h"

static struct ukpa_spec *specs;
static int nspecs;
static pthread_mutex_t probes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ukpa_probe *probes_head, **probes_tail = &probes_head;
static uint32_t nprobes;

/* id -> probe for the reader: chunks published with a release store */
#define CHUNK 1024
#define NCHUNKS 4096
_Static_assert(CHUNK * NCHUNKS <= UKP_PROBES_MAX, "ukprobe takes ids below UKP_PROBES_MAX");
static struct ukpa_probe **_Atomic chunks[NCHUNKS];

/* Between the loader's RT_DELETE and the RT_CONSISTENT after it: objects
 * are being unmapped, nothing is registered or unregistered. */
static _Atomic bool loader_deleting;
static pthread_cond_t loader_cond = PTHREAD_COND_INITIALIZER;
/* the loader's stop is placed (loader.c); read by the reader */
static _Atomic bool loader_watched;
/* an attach's setup is under way: it may need the loader's lock (the
 * library starts its optimizer thread, its scans' helpers), so a loader
 * stop must not wait for it; a SPEC whose object goes away under the
 * setup's registration waits again (spec_resolve) */
static _Atomic bool setup_busy;
/* The setup registers its probes disabled and enables them all at its
 * end: an armed breakpoint in a function the agent calls (libc's string
 * and lock functions, with every libc function probed) would make each
 * of its calls a trap for the rest of the setup. */
static bool staging;

/* [init] Under probes_lock: wait for the unmap under way to end. Bounded:
 * a loader that never comes back (its thread killed) must not stop
 * tracing for good. */
static void loader_wait_locked(void)
{
	struct timespec until, end;

	if (!loader_deleting)
		return;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 10;
	while (loader_deleting) {
		/* in slices: the flag may be cleared without the lock */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 5000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (until.tv_sec > end.tv_sec ||
		    (until.tv_sec == end.tv_sec && until.tv_nsec > end.tv_nsec)) {
			loader_deleting = false;
			break;
		}
		pthread_cond_timedwait(&loader_cond, &probes_lock, &until);
	}
}

/* --------------------------------------------------------- [reader] */

const struct ukpa_probe *ukpa_probe_by_id(uint32_t id)
{
	struct ukpa_probe **chunk;

	if (id / CHUNK >= NCHUNKS)
		return NULL;
	chunk = atomic_load_explicit(&chunks[id / CHUNK], memory_order_acquire);
	return chunk ? chunk[id % CHUNK] : NULL;
}

uint32_t ukpa_probes_count(void)
{
	return __atomic_load_n(&nprobes, __ATOMIC_ACQUIRE);
}

/* ----------------------------------------------------- event names */

static int names_add_specs(void);

/* The names in use again, without those of probes that are gone (an
 * object loaded again gets its probes back under the same names). */
static void names_rebuild(void)
{
	char key[2 * UKP_SPEC_NAME_MAX + 2];
	struct ukpa_probe *pr;

	ukpa_names_clear();
	names_add_specs();
	for (pr = probes_head; pr; pr = pr->next) {
		if (!(pr->flags & UKP_PROBE_GLOB) || !atomic_load(&pr->live))
			continue;
		snprintf(key, sizeof(key), "%s/%s", pr->spec->spec.group, pr->event);
		ukpa_name_add(key);
	}
}

/* --------------------------------------------------------- messages */

/* A glob's PROBE messages, and the setup's, go out together, many to a
 * packet (the reader takes whole messages from a packet), instead of one
 * system call and one wake-up of ukprobe per probe. on counts the
 * batches open (a glob's inside the setup's); the outermost one's end
 * sends what is left. The setup's probes are staged (disabled) until
 * after it: no event of theirs comes before their PROBE message. */
static struct {
	int on;
	size_t len;
	union {
		char buf[UKP_PACKET_MAX - sizeof(struct ukp_msg_from)];
		uint64_t align;
	} u;
} outq;

static void msg_flush(void)
{
	if (outq.len)
		ukpa_send(outq.u.buf, outq.len);
	outq.len = 0;
}

static void msg_batch_begin(void)
{
	outq.on++;
}

static void msg_batch_end(void)
{
	if (--outq.on == 0)
		msg_flush();
}

static void msg_out(const void *m, size_t len)
{
	if (!outq.on) {
		ukpa_send(m, len);
		return;
	}
	if (outq.len + len > sizeof(outq.u.buf))
		msg_flush();
	memcpy(outq.u.buf + outq.len, m, len);
	outq.len += len;
}

/* A PROBE message. texts: event, where, object path, why. */
static void send_probe_msg(const struct ukpa_spec *s, uint32_t id, int err, uint32_t what,
			   uint32_t argi, uint16_t flags, int opt, uint64_t addr, uint64_t func,
			   uint64_t base, const char *event, const char *where,
			   const char *object, const char *why)
{
	union {
		struct ukp_msg_probe m;
		char buf[UKP_MSG_MAX];
	} u;
	const char *texts[4] = { event, where, object, why };
	size_t pos = 0, room = sizeof(u.buf) - sizeof(u.m) - 8, i;

	memset(&u.m, 0, sizeof(u.m));
	for (i = 0; i < 4; i++) {
		const char *t = texts[i] ? texts[i] : "";
		size_t tl = strlen(t);

		if (tl > room / 4 - 1)
			tl = room / 4 - 1;
		memcpy(u.m.text + pos, t, tl);
		u.m.text[pos + tl] = '\0';
		pos += tl + 1;
	}
	u.m.h.type = UKPM_PROBE;
	u.m.h.len = (uint32_t)((sizeof(u.m) + pos + 7) & ~(size_t)7);
	memset(u.m.text + pos, 0, u.m.h.len - sizeof(u.m) - pos);
	u.m.id = id;
	u.m.spec = s->index;
	u.m.err = err;
	u.m.what = (uint16_t)what;
	u.m.flags = flags;
	u.m.opt = opt;
	u.m.argi = argi;
	u.m.addr = addr;
	u.m.func = func;
	u.m.base = base;
	msg_out(&u, u.m.h.len);
}

/* Is pr a kretprobe (an r event's, but on a Go function's return
 * instructions: go.c)? */
static bool uses_rp(const struct ukpa_probe *pr)
{
	return pr->spec->spec.is_return && !pr->go_ret;
}

/* pr's kprobe: its kretprobe's for an r event. */
static struct kprobe *probe_kprobe(struct ukpa_probe *pr)
{
	return uses_rp(pr) ? &pr->rp.kp : &pr->kp;
}

static void send_probe(const struct ukpa_probe *pr)
{
	const struct kprobe *kp = uses_rp(pr) ? &pr->rp.kp : &pr->kp;

	send_probe_msg(pr->spec, pr->id, 0, 0, 0, pr->flags, pr->opt,
		       pr->spec->spec.is_watch ? pr->waddr : (uintptr_t)kp->addr,
		       pr->func, pr->base, pr->event, pr->where, pr->object, pr->why);
}

/* ------------------------------------------------------ registering */

/* The library's diagnostics while one probe registers: why it failed. */
static char lib_msg[256];

static int capture_print(enum ukprobes_print_level level, const char *fmt, va_list ap)
{
	char buf[sizeof(lib_msg)];
	const char *why;
	size_t n;

	/* UKPROBE_DEBUG=1: the library's debug messages about our probes
	 * (whether a handler was proven vector-free, ...) on stderr */
	if (level == UKPROBES_DEBUG && getenv("UKPROBE_DEBUG") &&
	    !strcmp(getenv("UKPROBE_DEBUG"), "1")) {
		/* one write (the agent's dprintf: src/base/libc.h), no stdio */
		char line[480];

		vsnprintf(line, sizeof(line), fmt, ap);
		dprintf(2, "ukprobe-agent: %s", line);
		return 0;
	}
	if (level != UKPROBES_WARN)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* "kprobes: cannot probe foo+0x3: REASON\n": keep the reason */
	why = strstr(buf, ": ");
	why = why && strstr(why + 2, ": ") ? strstr(why + 2, ": ") + 2 : why ? why + 2 : buf;
	snprintf(lib_msg, sizeof(lib_msg), "%s", why);
	n = strlen(lib_msg);
	if (n && lib_msg[n - 1] == '\n')
		lib_msg[n - 1] = '\0';
	return 0;
}

/* What a hit reads of a probe shares one line (struct ukpa_probe). */
#define UKPA_LINE_OF(f) (offsetof(struct ukpa_probe, f) / UKPA_PROBE_ALIGN)
_Static_assert(UKPA_LINE_OF(kp.pre_handler) == UKPA_LINE_OF(kp.flags) &&
		       UKPA_LINE_OF(kp.flags) == UKPA_LINE_OF(id) &&
		       UKPA_LINE_OF(id) == UKPA_LINE_OF(live) &&
		       UKPA_LINE_OF(live) == UKPA_LINE_OF(spec) &&
		       UKPA_LINE_OF(spec) == UKPA_LINE_OF(fspec) &&
		       UKPA_LINE_OF(spec) == UKPA_LINE_OF(hist_regs) &&
		       UKPA_LINE_OF(spec) == UKPA_LINE_OF(fb_regs),
	       "the fields a hit reads of a probe are on one cache line");

static void probe_free(struct ukpa_probe *pr)
{
	if (pr->spec && pr->fspec != &pr->spec->spec)
		free((void *)pr->fspec);
	free(pr->symbol_name);
	free(pr->where);
	free(pr->object);
	free(pr);
}

static struct ukpa_probe *probe_new(struct ukpa_spec *s, const char *event, uint16_t flags)
{
	struct ukpa_probe *pr;

	if (posix_memalign((void **)&pr, UKPA_PROBE_ALIGN, sizeof(*pr)))
		return NULL;
	memset(pr, 0, sizeof(*pr));
	pr->spec = s;
	pr->fspec = &s->spec;
	pr->flags = flags | (s->again ? UKP_PROBE_AGAIN : 0);
	pr->opt = -1;
	snprintf(pr->event, sizeof(pr->event), "%s", event);
	return pr;
}

/* Give pr an id, publish it for the reader and keep it in the list. */
static int probe_publish(struct ukpa_probe *pr)
{
	uint32_t id = nprobes;
	struct ukpa_probe **chunk;

	if (id / CHUNK >= NCHUNKS)
		return -E2BIG;
	chunk = atomic_load_explicit(&chunks[id / CHUNK], memory_order_relaxed);
	if (!chunk) {
		chunk = calloc(CHUNK, sizeof(*chunk));
		if (!chunk)
			return -ENOMEM;
		atomic_store_explicit(&chunks[id / CHUNK], chunk, memory_order_release);
	}
	pr->id = id;
	chunk[id % CHUNK] = pr;
	__atomic_store_n(&nprobes, id + 1, __ATOMIC_RELEASE);
	*probes_tail = pr;
	probes_tail = &pr->next;
	return 0;
}

/* [init] The object addr is in (its path and load base) into pr, for its
 * PROBE message; nothing when none is. */
static void object_of(uintptr_t addr, struct ukpa_probe *pr)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];

	kallsyms_lookup_info(addr, &info, buf, sizeof(buf));
	if (info.modpath) {
		pr->base = info.modbase;
		pr->object = strdup(info.modpath);
	}
}

/* Does a return probe of spec read anything of its call's entry: $argN,
 * $duration (ukpa_rp_entry keeps the registers and the clock)? */
static bool reads_entry(const struct ukp_spec *spec)
{
	int i;

	for (i = 0; i < spec->nargs; i++)
		if (spec->args[i].base == UKP_FA_ARG || spec->args[i].base == UKP_FA_ENTRY_REG ||
		    spec->args[i].base == UKP_FA_DURATION)
			return true;
	return false;
}

/* pr's kprobe (or kretprobe) at symbol_name (+ the SPEC's offset) or at
 * addr, with its handlers; not registered. 0 or -ENOMEM. */
static int probe_setup(struct ukpa_probe *pr, const char *symbol_name, uintptr_t addr)
{
	const struct ukp_spec *spec = &pr->spec->spec;
	struct kprobe *kp = uses_rp(pr) ? &pr->rp.kp : &pr->kp;

	if (symbol_name) {
		pr->symbol_name = strdup(symbol_name);
		if (!pr->symbol_name)
			return -ENOMEM;
		kp->symbol_name = pr->symbol_name;
		kp->offset = (unsigned int)spec->offset;
	} else {
		kp->addr = (kprobe_opcode_t *)addr;
	}
	if (staging) {
		kp->flags |= KPROBE_FLAG_DISABLED;
		pr->staged = true;
	}
	if (pr->go_ret) {
		kp->pre_handler = ukpa_go_ret_pre;
	} else if (ukpa_script_loaded()) {
		/* a script's probe runs the script's code (script.c) */
		if (spec->is_return) {
			pr->rp.handler = ukpa_script_rp(pr->spec->index);
			pr->rp.maxactive = spec->maxactive;
		} else {
			kp->pre_handler = ukpa_script_kp(pr->spec->index);
		}
	} else if (spec->is_return && ukpa_mode == UKP_MODE_STAT && !pr->spec->checked) {
		pr->rp.handler = ukpa_rp_count;
		pr->rp.maxactive = spec->maxactive;
	} else if (spec->is_return && !reads_entry(pr->fspec) && !pr->spec->checked) {
		/* nothing read of the entry ($retval, registers and memory
		 * at the return are): no entry handler (the fast entry
		 * template); a --filter or trigger may read it */
		pr->rp.handler = ukpa_rp_ret_plain;
		pr->rp.maxactive = spec->maxactive;
	} else if (spec->is_return) {
		pr->rp.handler = ukpa_rp_ret;
		pr->rp.entry_handler = ukpa_rp_entry;
		pr->rp.data_size = sizeof(struct ukpa_entry);
		pr->rp.maxactive = spec->maxactive;
	} else if (pr->sdt_pair) {
		kp->pre_handler = ukpa_kp_sdt_ret;
	} else if (ukpa_mode == UKP_MODE_TRACE) {
		/* stat without a filter or trigger only counts; a hist read
		 * from the registers has its own; the others need the full
		 * handler */
		kp->pre_handler = ukpa_kp_pre;
	} else if (pr->spec->hist_regs) {
		pr->hist_regs = pr->spec->hist;
		kp->pre_handler = ukpa_kp_hist;
	} else if (pr->spec->checked && pr->spec->fb_regs) {
		/* a filter on the registers is all it checks */
		pr->fb_regs = pr->spec->fb;
		kp->pre_handler = ukpa_kp_count_regs;
	} else if (pr->spec->checked && pr->spec->fb_args) {
		/* a filter on registers and chains from them is all it checks */
		kp->pre_handler = ukpa_kp_count_direct;
	} else {
		kp->pre_handler = pr->spec->checked ? ukpa_kp_pre : ukpa_kp_count;
	}
	return 0;
}

/* pr at addr, a function's entry or not, with what the optimizer will
 * make of it (ukprobes_optimizable: our probes have no post_handler) and
 * why not a jump: where it is, its object; then its id. 0 or the negative
 * errno. */
static int probe_describe(struct ukpa_probe *pr, uintptr_t addr, bool on_entry, int opt,
			  const char *why, const char *prefer)
{
	char where[512];

	if (on_entry)
		pr->flags |= UKP_PROBE_ENTRY;
	pr->opt = opt < 0 ? -1 : opt;
	snprintf(pr->why, sizeof(pr->why), "%s", why && pr->opt == 0 ? why : "");
	ukpa_symbolize(addr, where, sizeof(where), &pr->func, prefer);
	object_of(addr, pr);
	if (!pr->where) /* (an SDT probe's says which note it is) */
		pr->where = strdup(where);
	if (pr->retired) { /* back: its id stays */
		pr->retired = false;
		return 0;
	}
	return probe_publish(pr);
}

/* A retired probe of s (a p event's, its object unloaded) made ready to
 * be registered again, or NULL. Its id, event name and counts stay. */
static struct ukpa_probe *probe_revive(struct ukpa_spec *s)
{
	struct ukpa_probe *pr;

	for (pr = probes_head; pr; pr = pr->next)
		if (pr->spec == s && pr->retired)
			break;
	if (!pr)
		return NULL;
	free(pr->symbol_name);
	free(pr->where);
	free(pr->object);
	pr->symbol_name = pr->where = pr->object = NULL;
	pr->retired_addr = (uintptr_t)pr->kp.addr;
	memset(&pr->kp, 0, sizeof(pr->kp));
	pr->flags = UKP_PROBE_AGAIN;
	pr->opt = -1;
	return pr;
}

/*
 * Register pr at symbol_name (+ the SPEC's offset) or at addr. On
 * success it is announced and goes live. Returns 0 or the negative errno
 * (the caller reports it; lib_msg says why when the library said).
 */
/* [init] $goid reads the goroutine from Go's g register, which only Go
 * code keeps: refused at addr elsewhere (lib_msg; -ENOEXEC, which
 * ukprobe says as $goid's error). 0 or -ENOEXEC. */
static int goid_check(const struct ukpa_probe *pr, uintptr_t addr)
{
	const struct ukp_spec *spec = &pr->spec->spec;

	for (int i = 0; i < spec->nargs; i++)
		if (spec->args[i].base == UKP_FA_GOID && !ukpa_go_code(addr)) {
			snprintf(lib_msg, sizeof(lib_msg), "$goid: 0x%lx is not in Go code "
				 "(only Go code keeps its goroutine in a register)",
				 (unsigned long)addr);
			return -ENOEXEC;
		}
	return 0;
}

static int probe_register(struct ukpa_probe *pr, const char *symbol_name, uintptr_t addr,
			  const char *prefer)
{
	struct kprobe *kp = uses_rp(pr) ? &pr->rp.kp : &pr->kp;
	int ret;

	bool revived = pr->retired;

	ret = probe_setup(pr, symbol_name, addr);
	if (ret)
		return ret;
	lib_msg[0] = '\0';
	ukprobes_set_print(capture_print);
	ret = uses_rp(pr) ? register_kretprobe(&pr->rp) : register_kprobe(kp);
	ukprobes_set_print(NULL);
	if (ret)
		return ret;
	ret = goid_check(pr, (uintptr_t)kp->addr);
	if (!ret) {
		const char *why = NULL;
		int opt = ukprobes_optimizable(kp->addr, &why);

		ret = probe_describe(pr, (uintptr_t)kp->addr, kp->flags & KPROBE_FLAG_ON_FUNC_ENTRY,
				     opt, why, prefer ? prefer : symbol_name);
	}
	if (ret) {
		if (uses_rp(pr))
			unregister_kretprobe(&pr->rp);
		else
			unregister_kprobe(&pr->kp);
		return ret;
	}
	pr->spec->nprobes++;
	/* a probe back at the same address is not announced again: an
	 * object loaded and unloaded in a loop would flood ukprobe */
	if (!revived || (uintptr_t)kp->addr != pr->retired_addr)
		send_probe(pr);
	atomic_store_explicit(&pr->live, true, memory_order_release);
	return 0;
}

/* ------------------------------------------------------------- Go */

/* The entry probes of Go functions' r events (go.c), and their pairs'
 * numbers. */
static struct ukpa_go_enter *go_enters;
static uint16_t go_npairs;

/* [init] trace: a hidden probe on the runtime.exit of the Go object of
 * func (ukpa_go_exit_pre), once per object. */
static void go_exit_probe(uintptr_t func)
{
	static char done[PATH_MAX];
	static const char *const names[] = { "runtime.exit.abi0", "runtime.exit" };
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN], name[PATH_MAX + 32];
	struct kprobe *kp;
	uintptr_t at = 0;

	if (ukpa_mode != UKP_MODE_TRACE ||
	    kallsyms_lookup_info(func, &info, buf, sizeof(buf)) || !info.modpath ||
	    !strcmp(done, info.modpath))
		return;
	snprintf(done, sizeof(done), "%s", info.modpath);
	/* (Go's linker names the assembly function's symbol with its ABI;
	 * the runtime's own table, a stripped program's, does not) */
	for (size_t i = 0; i < 2 && !at; i++) {
		snprintf(name, sizeof(name), "%s:%s", info.modpath, names[i]);
		at = kallsyms_lookup_name(name);
	}
	if (!at || !ukpa_go_code(at) || !(kp = calloc(1, sizeof(*kp))))
		return;
	kp->addr = (kprobe_opcode_t *)at;
	kp->pre_handler = ukpa_go_exit_pre;
	if (register_kprobe(kp))
		free(kp);
}

/* [init] pr's fetch arguments with $argN from Go's registers. 0, or the
 * negative errno (lib_msg, *argi). */
static int go_fspec(struct ukpa_probe *pr, uint32_t *argi)
{
	struct ukp_spec *fs = NULL;
	int ret = ukpa_go_compile(&pr->spec->spec, &fs, argi, lib_msg, sizeof(lib_msg));

	if (!ret && fs)
		pr->fspec = fs; /* (probe_free's now) */
	return ret;
}

/*
 * [init] An r event on the Go function at func: a probe on each of its
 * exits (a return instruction, or the epilogue that runs straight into
 * it: ukprobes_func_exits), named event, and, when its hits need the entry
 * (trace, a filter or trigger, $duration), one entry probe past its
 * stack check whose goroutine records they pop (handlers.c). 0, or the
 * negative errno (lib_msg says why; *argi: the argument, with *what).
 * Returns registered before a failure stay (announced).
 */
static int go_register_returns(struct ukpa_spec *s, uintptr_t func, const char *event,
			       uint16_t flags, const char *prefer, uint32_t *argi, uint32_t *what)
{
	static struct ukprobes_func_exit rets[256]; /* ([init], under the lock) */
	const char *why = NULL;
	uint16_t pair = 0;
	int n, i, ret;

	if (ukpa_script_loaded()) {
		snprintf(lib_msg, sizeof(lib_msg), "a Go function: ukprobe run takes no uretprobe "
			 "on Go code (ukprobe trace and stat do)");
		return -EOPNOTSUPP;
	}
	go_exit_probe(func);
	n = ukprobes_func_exits((void *)func, rets, sizeof(rets) / sizeof(rets[0]), &why);
	if (n < 0) {
		snprintf(lib_msg, sizeof(lib_msg), "a Go function, probed at its returns: %s",
			 why ? why : "they cannot be found");
		return n;
	}
	if (ukpa_mode == UKP_MODE_TRACE || s->checked || s->spec.uses_duration) {
		struct ukpa_go_enter *e;

		if (go_npairs == UINT16_MAX)
			return -ENOSPC;
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->pair = pair = ++go_npairs;
		e->kp.addr = (kprobe_opcode_t *)ukpa_go_body(func);
		e->kp.pre_handler = ukpa_go_enter_pre;
		ret = register_kprobe(&e->kp);
		if (ret) {
			free(e);
			return ret;
		}
		e->next = go_enters;
		go_enters = e;
	}
	for (i = 0; i < n; i++) {
		/* (its events' ip: func, the PROBE message's) */
		struct ukpa_probe *pr = probe_new(s, event, flags | UKP_PROBE_AT_FUNC);

		if (!pr)
			return -ENOMEM;
		pr->go_ret = true;
		pr->go_pair = pair;
		pr->go_func = func;
		pr->go_exit = rets[i];
		ret = go_fspec(pr, argi);
		if (ret == -EINVAL)
			*what = UKP_WHAT_SDT_ARG;
		if (!ret)
			ret = probe_register(pr, NULL, rets[i].addr, prefer);
		if (ret) {
			probe_free(pr);
			return ret;
		}
	}
	return 0;
}

/* [init] A p event on the Go function at func: past its stack check,
 * $argN from Go's registers. 0 or the negative errno (as above). */
static int go_register_entry(struct ukpa_probe *pr, uintptr_t func, const char *prefer,
			     uint32_t *argi, uint32_t *what)
{
	int ret = go_fspec(pr, argi);

	if (ret == -EINVAL)
		*what = UKP_WHAT_SDT_ARG;
	go_exit_probe(func);
	return ret ? ret : probe_register(pr, NULL, ukpa_go_body(func), prefer);
}

/* ----------------------------------------------------------- globs */

struct match {
	uintptr_t start;          /* an IFUNC's: its implementation's */
	char *name;               /* without a version suffix */
	char *prefer;             /* "path:name" */
	bool dup;                 /* the same code as an earlier match */
	bool ifunc;               /* an IFUNC's implementation */
};

struct matches {
	const char *pattern;
	const char *skip_path;    /* the agent's own object */
	struct match *m;
	size_t n, cap;
	bool nomem;
	bool everything;          /* the pattern is only '*'s */
};

/* [init] inside the library's walk (module_kallsyms_on_each_symbol_info,
 * under its lock): collect, register later. Aliases come together (the
 * best name first): the first one that matches names the function. An
 * IFUNC comes at its resolver: ifunc_impls() puts the implementation
 * its resolver chose in this process in its place after the walk. */
static int match_cb(void *arg, const struct ksym_info *sym)
{
	struct matches *ms = arg;
	size_t len = strcspn(sym->name, "@");
	uintptr_t start = sym->addr;

	if (ms->nomem || (ms->skip_path && sym->modpath && !strcmp(sym->modpath, ms->skip_path)))
		return 0;
	if (sym->flags & KSYM_DATA) /* a glob names functions */
		return 0;
	if (ms->n && ms->m[ms->n - 1].start == start)
		return 0;
	/* every function (a glob of only wildcards): the object's own
	 * symbol table, not the internals only its debug file names, some
	 * of which glibc runs with every signal blocked */
	if ((sym->flags & KSYM_DEBUG) && ms->everything)
		return 0;
	if (!ukpa_glob_matches(ms->pattern, sym->name))
		return 0;
	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? ms->cap * 2 : 64;
		struct match *m = realloc(ms->m, cap * sizeof(*m));

		if (!m) {
			ms->nomem = true;
			return 0;
		}
		ms->m = m;
		ms->cap = cap;
	}
	ms->m[ms->n].start = start;
	ms->m[ms->n].dup = false;
	ms->m[ms->n].ifunc = (sym->flags & KSYM_IFUNC) != 0;
	ms->m[ms->n].name = strndup(sym->name, len);
	ms->m[ms->n].prefer = malloc(strlen(sym->modpath) + len + 2);
	if (!ms->m[ms->n].name || !ms->m[ms->n].prefer) {
		free(ms->m[ms->n].name);
		free(ms->m[ms->n].prefer);
		ms->nomem = true;
		return 0;
	}
	sprintf(ms->m[ms->n].prefer, "%s:%s", sym->modpath, ms->m[ms->n].name);
	ms->n++;
	return 0;
}

struct match_key {
	uintptr_t start;
	size_t i;
};

static int match_key_cmp(const void *pa, const void *pb)
{
	const struct match_key *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/* [init] After the walk: each IFUNC match's implementation in place of
 * its resolver; one that cannot be found is nothing to probe for that
 * name (its resolver runs once, at load). */
static void ifunc_impls(struct matches *ms)
{
	size_t i, k;

	for (i = k = 0; i < ms->n; i++) {
		unsigned long impl;

		if (ms->m[i].ifunc && kallsyms_lookup_ifunc(ms->m[i].start, ms->m[i].name, &impl)) {
			free(ms->m[i].name);
			free(ms->m[i].prefer);
			continue;
		}
		if (ms->m[i].ifunc)
			ms->m[i].start = impl;
		ms->m[k++] = ms->m[i];
	}
	ms->n = k;
}

/* One probe per piece of code: a later match at the same address (two
 * IFUNCs whose resolvers chose one implementation, memmove and memcpy;
 * an IFUNC and its implementation's own name) is dropped, the first
 * name in walk order kept. */
static int matches_dedup(struct matches *ms)
{
	struct match_key *k;
	size_t i;

	if (ms->n < 2)
		return 0;
	k = malloc(ms->n * sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (i = 0; i < ms->n; i++)
		k[i] = (struct match_key){ ms->m[i].start, i };
	ukp_sort(k, ms->n, sizeof(*k), match_key_cmp);
	for (i = 1; i < ms->n; i++)
		if (k[i].start == k[i - 1].start)
			ms->m[k[i].i].dup = true;
	free(k);
	return 0;
}

static const char *agent_path(void)
{
	static char path[4096];
	struct ukpa_obj_at self;

	if (!path[0] && !ukpa_obj_at((void *)agent_path, &self))
		snprintf(path, sizeof(path), "%s", self.obj.path);
	return path[0] ? path : NULL;
}

/* A match's event name: from its demangled name for C++ and Rust
 * (shapes::scale(int) gives shapes__scale; overloads get _1, _2...). */
static void glob_event_name(const struct ukp_spec *spec, const char *name, char *event, size_t len)
{
	char base[256];
	char *d = ukpa_demangle(name);

	if (d) {
		ukpa_demangled_base(d, base, sizeof(base));
		free(d);
		if (base[0])
			name = base;
	}
	ukpa_glob_event_name(spec, name, event, len);
}

/* A glob's probes that passed the checks, announced, to be registered
 * together (a glob's probes are all return probes or none). */
struct glob_batch {
	struct ukpa_probe **pr;
	struct kprobe **kp;       /* p events: their kprobes */
	struct kretprobe **rp;    /* r events: their kretprobes */
	int n;
	/* those that failed a check: registered alone, ahead of the batch
	 * (match indices) */
	struct ukpa_probe **alone;
	size_t *alone_i, nalone;
};

/* This function cannot be probed: say which. */
static void glob_match_failed(struct ukpa_spec *s, const struct match *m, struct ukpa_probe *pr,
			      int err)
{
	send_probe_msg(s, ~0u, err, UKP_WHAT_NONE, 0, pr->flags, -1, m->start + s->spec.offset,
		       m->start, 0, pr->event, m->name, "", lib_msg);
	probe_free(pr);
}

/*
 * [init] pr, set up at a glob's match: checked as register_kprobe (or
 * register_kretprobe) checks it (where it goes, whether an instruction
 * there can be probed, and for a return probe whether calls reach it),
 * described, published and announced, not registered yet (so not live).
 * 1 when it goes in the batch; 0 when a check failed (the caller
 * registers it alone, which says why it fails); or the negative errno.
 */
static int probe_stage(struct ukpa_probe *pr, const char *prefer)
{
	struct kprobe *kp = probe_kprobe(pr);
	const char *why = NULL;
	bool entry = false;
	void *a;
	int opt, ret;

	if (ukprobes_probe_addr(kp, &a, &entry))
		return 0;
	if (uses_rp(pr) && ukprobes_kretprobe_check(kp, NULL))
		return 0;
	opt = ukprobes_optimizable(a, &why);
	if (opt < 0)
		return 0;
	ret = goid_check(pr, (uintptr_t)a);
	if (ret)
		return ret;
	ret = probe_describe(pr, (uintptr_t)a, entry, opt, why, prefer);
	if (ret)
		return ret;
	/* where it goes (past an endbr64), as its PROBE message says:
	 * registering there is registering at the function's start */
	kp->addr = a;
	send_probe(pr);
	return 1;
}

/*
 * [init] Register a glob's staged probes in one batch (register_kprobes
 * or register_kretprobes: one write per page and one thread
 * synchronization for all of them, and no probe of the batch armed while
 * the library works for the others), then let them record. The batch is
 * all or nothing: should it fail (a check the staging cannot make, as
 * running out of slots), each probe is registered alone; one that fails
 * then was announced already and never records, and its failure is
 * reported as a match's.
 */
static void glob_commit(struct ukpa_spec *s, struct glob_batch *b)
{
	bool ret_probes = s->spec.is_return;
	int i, ret;

	msg_flush();
	if (!b->n)
		return;
	lib_msg[0] = '\0';
	ukprobes_set_print(capture_print);
	ret = ret_probes ? register_kretprobes(b->rp, b->n) : register_kprobes(b->kp, b->n);
	ukprobes_set_print(NULL);
	for (i = 0; i < b->n; i++) {
		struct ukpa_probe *pr = b->pr[i];

		if (ret) {
			int err;

			lib_msg[0] = '\0';
			ukprobes_set_print(capture_print);
			err = ret_probes ? register_kretprobe(&pr->rp) : register_kprobe(&pr->kp);
			ukprobes_set_print(NULL);
			if (err) {
				send_probe_msg(s, ~0u, err, UKP_WHAT_NONE, 0, pr->flags, -1,
					       (uintptr_t)probe_kprobe(pr)->addr, pr->func, 0,
					       pr->event, pr->where, "", lib_msg);
				continue;
			}
		}
		s->nprobes++;
		atomic_store_explicit(&pr->live, true, memory_order_release);
	}
	b->n = 0;
}

/* One probe per function matching the glob. 0, or -ENOENT when nothing
 * matched. Functions that cannot be probed are reported one by one. */
static int register_glob(struct ukpa_spec *s)
{
	struct matches ms = { .pattern = s->spec.symbol };
	struct glob_batch b = { 0 };
	size_t i, k;
	int ret, pass;

	ms.everything = strspn(ms.pattern, "*") == strlen(ms.pattern);
	if (!s->spec.object)
		ms.skip_path = agent_path();
	ret = module_kallsyms_on_each_symbol_info(s->spec.object, match_cb, &ms);
	if (ret)
		return ret;
	if (!ms.nomem)
		ifunc_impls(&ms);
	ret = ms.nomem ? -ENOMEM : ms.n ? matches_dedup(&ms) : -ENOENT;
	if (!ret) {
		b.pr = malloc(ms.n * sizeof(*b.pr));
		if (s->spec.is_return)
			b.rp = malloc(ms.n * sizeof(*b.rp));
		else
			b.kp = malloc(ms.n * sizeof(*b.kp));
		b.alone = malloc(ms.n * sizeof(*b.alone));
		b.alone_i = malloc(ms.n * sizeof(*b.alone_i));
		if (!b.pr || (!b.kp && !b.rp) || !b.alone || !b.alone_i)
			ret = -ENOMEM;
	}
	msg_batch_begin();
	/* IFUNC implementations last: they are libc's string and memory
	 * functions, which registering (the decoder's memset on every
	 * instruction) calls all the time; a probe registered alone is armed
	 * at once, and each of those calls would hit it */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < ms.n; i++) {
			char event[UKP_SPEC_NAME_MAX + 1];
			struct ukpa_probe *pr;
			int err;

			if (ret || ms.m[i].dup || ms.m[i].ifunc != (pass == 1))
				continue;
			glob_event_name(&s->spec, ms.m[i].name, event, sizeof(event));
			if (!s->spec.offset && ukpa_go_code(ms.m[i].start)) {
				/* a Go function: alone (go.c) */
				uint32_t argi = 0, what = UKP_WHAT_NONE;

				lib_msg[0] = '\0';
				if (s->spec.is_return) {
					err = go_register_returns(s, ms.m[i].start, event, UKP_PROBE_GLOB,
								  ms.m[i].prefer, &argi, &what);
					pr = err ? probe_new(s, event, UKP_PROBE_GLOB) : NULL;
				} else {
					pr = probe_new(s, event, UKP_PROBE_GLOB);
					err = pr ? go_register_entry(pr, ms.m[i].start, ms.m[i].prefer,
								     &argi, &what)
						 : -ENOMEM;
				}
				if (err && pr)
					glob_match_failed(s, &ms.m[i], pr, err);
				continue;
			}
			pr = probe_new(s, event, UKP_PROBE_GLOB);
			if (!pr) {
				ret = -ENOMEM;
				continue;
			}
			err = probe_setup(pr, NULL, ms.m[i].start + s->spec.offset);
			err = err ? err : probe_stage(pr, ms.m[i].prefer);
			if (err == 1 && b.rp) {
				b.pr[b.n] = pr;
				b.rp[b.n++] = &pr->rp;
			} else if (err == 1) {
				b.pr[b.n] = pr;
				b.kp[b.n++] = &pr->kp;
			} else if (err == 0) {
				/* alone (which says why it fails) */
				b.alone[b.nalone] = pr;
				b.alone_i[b.nalone++] = i;
			} else {
				lib_msg[0] = '\0';
				glob_match_failed(s, &ms.m[i], pr, err);
			}
		}
	}
	for (k = 0; k < b.nalone; k++) {
		struct match *m = &ms.m[b.alone_i[k]];
		int err = probe_register(b.alone[k], NULL, m->start + s->spec.offset, m->prefer);

		if (err)
			glob_match_failed(s, m, b.alone[k], err);
	}
	for (i = 0; i < ms.n; i++) {
		free(ms.m[i].name);
		free(ms.m[i].prefer);
	}
	free(ms.m);
	free(b.alone);
	free(b.alone_i);
	/* last: after it, each call into a function the batch probes (free,
	 * here) is a hit */
	glob_commit(s, &b);
	msg_batch_end();
	free(b.pr);
	free(b.kp);
	free(b.rp);
	return ret;
}

/* ------------------------------------------------------------ SPECs */

/* @SYM arguments: their addresses in this image. -1 with *argi. */
static int resolve_args(struct ukpa_spec *s, uint32_t *argi)
{
	int i;

	if (s->args_ready)
		return 0;
	for (i = 0; i < s->spec.nargs; i++) {
		struct ukp_fetcharg *fa = &s->spec.args[i];
		uintptr_t a;

		if (fa->base != UKP_FA_SYM)
			continue;
		if (ukpa_datasym_lookup(s->spec.object, fa->symbol, &a)) {
			*argi = (uint32_t)i;
			return -1;
		}
		fa->param = a + (unsigned long)fa->symoff;
	}
	s->args_ready = true;
	return 0;
}

/* A SPEC failed: say so. */
static void spec_failed(struct ukpa_spec *s, int err, uint32_t what, uint32_t argi,
			uint64_t addr, const char *object)
{
	send_probe_msg(s, ~0u, err, what, argi, 0, -1, addr, 0, 0,
		       s->spec.event, "", object, lib_msg);
}

/* The SPEC's object is not loaded: wait for it when its file has the
 * probe point. */
static int spec_wait(struct ukpa_spec *s)
{
	uint32_t what = UKP_WHAT_OBJECT;
	char *file = ukpa_obj_file(s->spec.object);
	uint64_t addr = 0;

	if (!file || !ukpa_file_has_point(file, &s->spec, &what, &addr)) {
		spec_failed(s, -ENOENT, what, 0, addr, file);
		free(file);
		s->done = true;
		return -1;
	}
	s->pending = true;
	send_probe_msg(s, ~0u, 0, 0, 0, UKP_PROBE_PENDING | (s->spec.is_glob ? UKP_PROBE_GLOB : 0),
		       -1, addr, 0, 0, s->spec.event, "", file, "");
	free(file);
	return 0;
}

/*
 * A w SPEC: a watchpoint on every thread at the data symbol (+ offset)
 * or address, watch_len bytes (default: the symbol's size, or 8). 0, or
 * the negative errno (*what says what was not found).
 */
static int watch_register(struct ukpa_probe *pr, const struct ukpa_obj *obj, uint32_t *what)
	__attribute__((nonnull(1, 3)));
static int watch_register(struct ukpa_probe *pr, const struct ukpa_obj *obj, uint32_t *what)
{
	const struct ukp_spec *spec = &pr->spec->spec;
	struct perf_event_attr attr;
	uint64_t size = 0;
	uintptr_t a;
	char where[512];
	int ret;

	if (spec->is_addr) {
		a = spec->addr + (obj ? obj->base : 0);
	} else if (ukpa_datasym_lookup_size(spec->object, spec->symbol, &a, &size)) {
		*what = UKP_WHAT_SYMBOL;
		return -ENOENT;
	}
	a += spec->offset;
	hw_breakpoint_init(&attr);
	attr.bp_addr = a;
	attr.bp_len = spec->watch_len ? spec->watch_len
				      : size && !spec->offset && !spec->is_addr ? size : 8;
	attr.bp_type = spec->watch_type;
	pr->waddr = a;
	pr->wbp = register_wide_hw_breakpoint(&attr, ukpa_watch_hit, pr);
	if (IS_ERR(pr->wbp)) {
		ret = (int)PTR_ERR(pr->wbp);
		pr->wbp = NULL;
		return ret;
	}
	if (!ukpa_datasym_symbolize(a, where, sizeof(where)))
		snprintf(where, sizeof(where), "0x%lx", (unsigned long)a);
	snprintf(where + strlen(where), sizeof(where) - strlen(where), " len=%llu %s",
		 (unsigned long long)attr.bp_len,
		 attr.bp_type == 1 ? "r" : attr.bp_type == 2 ? "w" : "rw");
	pr->where = strdup(where);
	snprintf(pr->why, sizeof(pr->why), "%s",
		 pr->wbp[0]->mechanism == UKP_HW_BREAKPOINT_DEBUGREG ? "debug register"
								    : "page protection");
	object_of(a, pr);
	ret = probe_publish(pr);
	if (ret) {
		unregister_wide_hw_breakpoint(pr->wbp);
		pr->wbp = NULL;
		return ret;
	}
	pr->spec->nprobes++;
	send_probe(pr);
	atomic_store_explicit(&pr->live, true, memory_order_release);
	return 0;
}

/* SDT $duration: each NAME__entry probe, registered for its pair (the
 * NAME__return probes pop what they push). */
static struct ukpa_sdt_enter *sdt_enters;
static char sdt_pairs[UKPA_SDT_PAIRS][512]; /* "OBJPATH:%PROVIDER:NAME__entry" */

/*
 * [init] The pair of SDT NAME__return note m (spec has $duration): its
 * NAME__entry notes in m's object probed, each once, with
 * ukpa_sdt_enter_pre. Returns the pair's number (1..), or -EINVAL with
 * lib_msg (*argi: the $duration argument), or another negative errno.
 */
static int sdt_pair(struct ukpa_spec *s, const struct ukpa_sdt *m, uint32_t *argi)
{
	const struct ukp_spec *spec = &s->spec;
	size_t n = strlen(m->name), na = 0, i;
	char entry[256], key[512];
	unsigned long *addrs = NULL;
	int pair, k, ret;

	for (k = 0; k < spec->nargs; k++)
		if (spec->args[k].base == UKP_FA_DURATION)
			*argi = (uint32_t)k;
	if (n < 8 || strcmp(m->name + n - 8, "__return")) {
		snprintf(lib_msg, sizeof(lib_msg), "$duration: SDT probe %.60s:%.60s is no "
			 "NAME__return probe", m->provider, m->name);
		return -EINVAL;
	}
	snprintf(entry, sizeof(entry), "%.*s__entry", (int)(n - 8), m->name);
	snprintf(key, sizeof(key), "%s:%%%s:%s", m->modpath ? m->modpath : "", m->provider, entry);
	for (pair = 0; pair < UKPA_SDT_PAIRS && sdt_pairs[pair][0] && strcmp(sdt_pairs[pair], key);
	     pair++)
		;
	if (pair == UKPA_SDT_PAIRS) {
		snprintf(lib_msg, sizeof(lib_msg), "$duration: at most %d SDT entry/return pairs",
			 UKPA_SDT_PAIRS);
		return -EINVAL;
	}
	ret = ukpa_usdt_addrs(m->modpath, m->provider, entry, &addrs, &na);
	if (ret == -ENOENT)
		snprintf(lib_msg, sizeof(lib_msg), "$duration: no SDT probe %.40s:%.40s to pair %.40s:%.40s with",
			 m->provider, entry, m->provider, m->name);
	if (ret)
		return ret == -ENOENT ? -EINVAL : ret;
	snprintf(sdt_pairs[pair], sizeof(sdt_pairs[pair]), "%s", key);
	for (i = 0; i < na && !ret; i++) {
		struct ukpa_sdt_enter *e;

		for (e = sdt_enters; e; e = e->next)
			if (e->pair == pair + 1 && (unsigned long)e->kp.addr == addrs[i] &&
			    !kprobe_gone(&e->kp))
				break;
		if (e)
			continue;
		e = calloc(1, sizeof(*e));
		if (!e) {
			ret = -ENOMEM;
			break;
		}
		e->pair = (uint8_t)(pair + 1);
		e->kp.addr = (kprobe_opcode_t *)addrs[i];
		e->kp.pre_handler = ukpa_sdt_enter_pre;
		ret = register_kprobe(&e->kp);
		if (ret) {
			free(e);
			break;
		}
		e->next = sdt_enters;
		sdt_enters = e;
	}
	free(addrs);
	return ret ? ret : pair + 1;
}

/*
 * An SDT SPEC: one probe per matching note (several notes of one name,
 * as a probe inlined in several places, share the SPEC's event), at the
 * note's address, each with its own fetch arguments (usdt.c). 0 when
 * one probe or more are registered; -1 when none is (each failure
 * reported).
 */
static int register_sdt(struct ukpa_spec *s, const char *objpath)
{
	const struct ukp_spec *spec = &s->spec;
	struct sdt_fail {
		int err;
		uint32_t what, argi;
		uint64_t addr;
	} last = { 0 };
	struct ukpa_sdt *m;
	size_t n, i;
	int ret, nok = 0;

	ret = ukpa_usdt_matches(spec, &m, &n);
	if (ret) {
		spec_failed(s, ret, ret != -ENOENT ? UKP_WHAT_NONE
				    : spec->is_glob ? UKP_WHAT_NOMATCH : UKP_WHAT_SYMBOL,
			    0, 0, objpath);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char event[UKP_SPEC_NAME_MAX + 1], where[768];
		struct ukp_spec *fs = NULL;
		struct ukpa_probe *pr = NULL;
		uint32_t argi = 0, what = UKP_WHAT_NONE;

		if (spec->is_glob)
			ukpa_glob_event_name(spec, m[i].name, event, sizeof(event));
		else
			snprintf(event, sizeof(event), "%s", spec->event);
		/* what "ukprobe probes --usdt" shows: the note, its
		 * argument specs, its semaphore's ELF address */
		snprintf(where, sizeof(where), "%%%s:%s%s%.512s", m[i].provider, m[i].name,
			 m[i].args[0] ? " args=" : "", m[i].args);
		if (m[i].p.semaphore)
			snprintf(where + strlen(where), sizeof(where) - strlen(where),
				 " semaphore=0x%lx", m[i].p.semaphore - m[i].p.modbase);
		/* the arguments the library left undecoded (the CLI says why) */
		for (int k = 0, first = 1; k < m[i].p.nargs; k++)
			if (!m[i].p.arg[k].kind) {
				snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%d",
					 first ? " refused=" : ",", k + 1);
				first = 0;
			}
		lib_msg[0] = '\0';
		ret = ukpa_usdt_compile(spec, &m[i].p, &fs, &argi, lib_msg, sizeof(lib_msg));
		if (ret == -EINVAL)
			what = UKP_WHAT_SDT_ARG;
		if (!ret) {
			pr = probe_new(s, event, spec->is_glob ? UKP_PROBE_GLOB : 0);
			ret = pr ? 0 : -ENOMEM;
		}
		if (!ret && fs) {
			pr->fspec = fs; /* (probe_free's now) */
			fs = NULL;
		}
		if (!ret && spec->uses_duration) {
			ret = sdt_pair(s, &m[i], &argi);
			if (ret > 0) {
				pr->sdt_pair = (uint8_t)ret;
				ret = 0;
			} else if (ret == -EINVAL) {
				what = UKP_WHAT_SDT_ARG;
			}
		}
		if (!ret) {
			pr->where = strdup(where);
			ret = pr->where ? probe_register(pr, NULL, m[i].p.addr, NULL) : -ENOMEM;
		}
		if (ret) {
			/* a glob's match that failed; the SPEC's failure when
			 * none is left (below) */
			if (spec->is_glob)
				send_probe_msg(s, ~0u, ret, what, argi, UKP_PROBE_GLOB, -1,
					       m[i].p.addr, 0, 0, event, where, objpath, lib_msg);
			else
				spec_failed(s, ret, what, argi, m[i].p.addr, objpath);
			last = (struct sdt_fail){ ret, what, argi, m[i].p.addr };
			free(fs);
			if (pr)
				probe_free(pr);
			continue;
		}
		nok++;
	}
	ukpa_usdt_matches_free(m, n);
	if (!nok && spec->is_glob)
		spec_failed(s, last.err, last.what, last.argi, last.addr, objpath);
	return nok ? 0 : -1;
}

/* Resolve and register one SPEC. -1 when it failed (reported). */
static int spec_resolve(struct ukpa_spec *s)
{
	const struct ukp_spec *spec = &s->spec;
	struct ukpa_obj obj;
	bool have_obj = false;
	uint32_t argi = 0;
	struct ukpa_probe *pr;
	unsigned long loader_calls = ukpa_loader_calls();
	int ret;

	lib_msg[0] = '\0';
	if (spec->object) {
		if (ukpa_obj_find(spec->object, &obj))
			return spec_wait(s);
		have_obj = true;
	}
	s->pending = false;
	s->done = true;
	if (resolve_args(s, &argi)) {
		spec_failed(s, -ENOENT, UKP_WHAT_DATASYM, argi, 0, NULL);
		return -1;
	}
	if (spec->is_watch) {
		uint32_t what = UKP_WHAT_NONE;

		pr = probe_new(s, spec->event, 0);
		ret = pr ? watch_register(pr, have_obj ? &obj : NULL, &what) : -ENOMEM;
		if (ret) {
			spec_failed(s, ret, what, 0, pr ? pr->waddr : 0, have_obj ? obj.path : NULL);
			if (pr)
				probe_free(pr);
			return -1;
		}
		return 0;
	}
	if (spec->is_sdt)
		return register_sdt(s, have_obj ? obj.path : NULL);
	if (spec->is_glob) {
		ret = register_glob(s);
		if (ret)
			spec_failed(s, ret, ret == -ENOENT ? UKP_WHAT_NOMATCH : UKP_WHAT_NONE, 0,
				    0, have_obj ? obj.path : NULL);
		return ret ? -1 : 0;
	}
	if (spec->is_addr && (have_obj ? !ukpa_obj_is_code(&obj, spec->addr)
				       : !ukpa_addr_is_code(spec->addr))) {
		spec_failed(s, -EINVAL, UKP_WHAT_ADDR, 0, spec->addr, have_obj ? obj.path : NULL);
		return -1;
	}
	/* a p event back in an object loaded again: its probe, id and counts */
	pr = spec->is_return ? NULL : probe_revive(s);
	if (!pr)
		pr = probe_new(s, spec->event, 0);
	if (!pr) {
		spec_failed(s, -ENOMEM, UKP_WHAT_NONE, 0, 0, NULL);
		return -1;
	}
	if (spec->is_addr) {
		ret = probe_register(pr, NULL, spec->addr + (have_obj ? obj.base : 0), NULL);
	} else {
		char *name = ukp_spec_symbol_name(spec);
		/* a Go function's start (go.c) */
		uintptr_t go = name && !spec->offset ? kallsyms_lookup_name(name) : 0;
		uint32_t what = UKP_WHAT_NONE;

		if (go && (!ukpa_go_code(go) || pr->retired))
			go = 0;
		if (go && spec->is_return) {
			probe_free(pr);
			ret = go_register_returns(s, go, spec->event, 0, name, &argi, &what);
			free(name);
			if (ret)
				spec_failed(s, ret, what, argi, go, have_obj ? obj.path : NULL);
			return ret ? -1 : 0;
		}
		if (go) {
			ret = go_register_entry(pr, go, name, &argi, &what);
			if (ret) {
				spec_failed(s, ret, what, argi, go, have_obj ? obj.path : NULL);
				probe_free(pr);
			}
			free(name);
			return ret ? -1 : 0;
		}
		ret = name ? probe_register(pr, name, 0, NULL) : -ENOMEM;
		free(name);
	}
	if (ret && have_obj) {
		uintptr_t base = obj.base;

		/* the objects read again, not the snapshot the registration
		 * used (the freestanding agent's, from /proc/self/maps: the
		 * object may have been unloaded, or half mapped again, since;
		 * iterate_objects.c) */
		ukp_objects_changed();
		if (ukpa_obj_find(spec->object, &obj)) {
			/* its object was unloaded under this registration (a
			 * loader stop that gave up waiting for it): it waits
			 * again */
			if (!pr->retired)
				probe_free(pr);
			s->done = false;
			return spec_wait(s);
		}
		if (s->retries < 5 && (obj.base != base || ret == -EINVAL || ret == -ENOENT ||
				       ret == -EFAULT)) {
			/* unloaded and loaded again under it (a program that
			 * loads and unloads the object all the time): the
			 * object as it is now, a few times at most, after a
			 * moment from the second on (a load under way shows
			 * in /proc/self/maps before all of it is mapped) */
			if (!pr->retired)
				probe_free(pr);
			if (s->retries) {
				struct timespec moment = { 0, 1000000 };

				nanosleep(&moment, NULL);
			}
			s->retries++;
			ret = spec_resolve(s);
			s->retries = 0;
			return ret;
		}
		if (loader_watched && !ukpa_loader_settled(loader_calls) &&
		    (ret == -EINVAL || ret == -ENOENT || ret == -EFAULT)) {
			/* the loader mapped or unmapped objects all through
			 * the tries (an attach's setup, whose registrations
			 * the loader's stops do not wait for, on a program
			 * that reloads the object all the time: 'symbol crc32
			 * not found in libz.so.1' in cli_attach_reload with the
			 * machine busy): it waits for the next stop, which
			 * registers it with the object whole (spec_wait still
			 * says so if the object's file lacks the point) */
			if (!pr->retired)
				probe_free(pr);
			s->done = false;
			return spec_wait(s);
		}
	}
	if (ret) {
		/* -ENOENT for a symbol: the object is loaded, the symbol is not */
		spec_failed(s, ret, ret == -ENOENT && !spec->is_addr ? UKP_WHAT_SYMBOL : UKP_WHAT_NONE,
			    0, (uintptr_t)(spec->is_return ? pr->rp.kp.addr : pr->kp.addr),
			    have_obj ? obj.path : NULL);
		if (!pr->retired) /* (a retired one stays in the list) */
			probe_free(pr);
		return -1;
	}
	return 0;
}

/*
 * The form in the memfd fd (spec_wire.h), decoded. Sealed against
 * writing and resizing by ukprobe: anything else at that descriptor (the
 * program closed it and opened another file there) is not taken.
 */
/* ukp_specs_decode_into's room: the agent's SPECs, and one more (the
 * array ends with a zeroed one). */
static void *specs_alloc(size_t n, void *arg)
{
	(void)arg;
	specs = calloc(n + 1, sizeof(*specs));
	return specs;
}

static enum ukp_specs_error specs_read(int fd, int *n, uint32_t *version, uint32_t *claimed)
{
	const int need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
	struct ukp_specs_header h;
	enum ukp_specs_error ret;
	struct stat st;
	void *map;
	int seals = fcntl(fd, F_GET_SEALS);

	*version = *claimed = 0;
	if (seals < 0 || (seals & need) != need || fstat(fd, &st) ||
	    st.st_size < (off_t)sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return UKP_SPECS_NOT_SPECS;
	if (!memcmp(h.magic, UKP_SPECS_MAGIC, sizeof(h.magic)))
		*claimed = h.nspecs;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return UKP_SPECS_NOMEM;
	/* each SPEC decoded in its place (its struct is kilobytes: an array
	 * to copy from would fault in as many pages again) */
	ret = ukp_specs_decode_into(map, (size_t)st.st_size,
				    (unsigned int)(sizeof(struct pt_regs) / sizeof(unsigned long)),
				    specs_alloc, NULL, sizeof(struct ukpa_spec),
				    offsetof(struct ukpa_spec, spec), n, version);
	if (ret != UKP_SPECS_OK) {
		free(specs);
		specs = NULL;
	}
	munmap(map, (size_t)st.st_size);
	return ret;
}

int ukpa_specs_load(int fd, uint32_t *claimed)
{
	uint32_t version;
	int n, i;

	/* what the SPECs own is freed by ukpa_probes_unregister_all */
	if (specs_read(fd, &n, &version, claimed) != UKP_SPECS_OK)
		return -1;
	nspecs = n;
	for (i = 0; i < n; i++) {
		struct ukpa_spec *s = &specs[i];

		s->index = (uint32_t)i;
		s->stack_left = (long)s->spec.stack_count;
		s->onoff_left = s->spec.onoff_count ? (long)s->spec.onoff_count : -1;
		s->checked = s->spec.filter || s->spec.hist || s->spec.onoff;
		if (s->spec.hist) {
			s->hist = ukpa_hist_new(&s->spec, s->index);
			if (!s->hist)
				return -1;
			s->hist_regs = !s->spec.filter && !s->spec.onoff &&
				       ukpa_hist_regs_only(s->hist);
		}
		ukpa_filter_prepare(s);
	}
	return names_add_specs();
}

/* The names globs must not take: those of the other SPECs. */
static int names_add_specs(void)
{
	char key[2 * UKP_SPEC_NAME_MAX + 2];
	int i;

	for (i = 0; i < nspecs; i++) {
		if (specs[i].spec.is_glob)
			continue;
		snprintf(key, sizeof(key), "%s/%s", specs[i].spec.group, specs[i].spec.event);
		if (ukpa_name_add(key))
			return -1;
	}
	return 0;
}

int ukpa_specs_count(void)
{
	return nspecs;
}

size_t ukpa_spec_payload(int i)
{
	return ukp_spec_record_payload(&specs[i].spec);
}

bool ukpa_specs_use_duration(void)
{
	int i;

	for (i = 0; i < nspecs; i++)
		if (specs[i].spec.uses_duration)
			return true;
	return false;
}

uint32_t ukpa_specs_compact(void)
{
	bool ret = false;
	int i;

	for (i = 0; i < nspecs; i++) {
		const struct ukp_spec *sp = &specs[i].spec;

		/* a watchpoint's ip (the accessing instruction), a payload:
		 * what a compact record has not; a return's caller: what
		 * only the larger one has */
		if (sp->is_watch || sp->stacktrace || ukp_spec_record_payload(sp))
			return 0;
		ret |= sp->is_return;
	}
	if (!nspecs)
		return 0;
	return ret ? UKP_REGION_REC_CALLER : UKP_REGION_REC_COMPACT;
}

uintptr_t ukpa_probe_event_ip(const struct ukpa_probe *pr)
{
	if (pr->flags & UKP_PROBE_AT_FUNC)
		return pr->func;
	return (uintptr_t)(uses_rp(pr) ? pr->rp.kp.addr : pr->kp.addr);
}

bool ukpa_specs_name_addresses(void)
{
	int i, k;

	for (i = 0; i < nspecs; i++) {
		const struct ukp_spec *sp = &specs[i].spec;

		if (sp->is_return || sp->stacktrace)
			return true;
		for (k = 0; k < sp->nargs; k++)
			if (sp->args[k].type == UKP_TY_SYMBOL)
				return true;
	}
	return false;
}

/* [init] Under probes_lock: the setup's probes, armed at last. */
static void enable_staged(void)
{
	struct ukpa_probe *pr;

	for (pr = probes_head; pr; pr = pr->next) {
		if (!pr->staged)
			continue;
		pr->staged = false;
		if (!atomic_load(&pr->live))
			continue;
		if (uses_rp(pr))
			enable_kretprobe(&pr->rp);
		else
			enable_kprobe(&pr->kp);
	}
}

int ukpa_probes_setup(void)
{
	int i, failed = 0;

	atomic_store(&setup_busy, true);
	pthread_mutex_lock(&probes_lock);
	if (ukpa_probes_pending() && !loader_watched) {
		int state;

		/* the loader's stops first: the loads and unloads after the
		 * setup are seen */
		loader_watched = ukpa_loader_watch(&state) == 0;
	}
	/* what is loaded from here on, the reader looks for */
	ukpa_reader_objects_seen();
#ifdef UKP_FREE
	/* before the program can take the library's signals again */
	ukpa_signal_sites_watch();
#endif
	staging = true;
	msg_batch_begin();
	for (i = 0; i < nspecs; i++)
		if (spec_resolve(&specs[i]))
			failed = 1;
	msg_batch_end();
	staging = false;
	enable_staged();
	pthread_mutex_unlock(&probes_lock);
	atomic_store(&setup_busy, false);
	return failed ? -1 : 0;
}

void ukpa_probes_fail_all(uint32_t what, const char *why)
{
	int i;

	snprintf(lib_msg, sizeof(lib_msg), "%s", why);
	for (i = 0; i < nspecs; i++)
		spec_failed(&specs[i], -ENOENT, what, 0, 0, specs[i].spec.object);
}

/* Probes whose object was unloaded: unregister them, and let the SPEC
 * wait for the object again. Their memory is kept (a pending return may
 * still name the kretprobe). */
static void spec_rearm_if_gone(struct ukpa_spec *s)
{
	struct ukpa_probe *pr;
	bool any = false, all_gone = true;

	for (pr = probes_head; pr; pr = pr->next) {
		const struct kprobe *kp;

		if (pr->spec != s || !atomic_load(&pr->live))
			continue;
		kp = uses_rp(pr) ? &pr->rp.kp : &pr->kp;
		any = true;
		if (!kprobe_gone(kp))
			all_gone = false;
	}
	if (!any || !all_gone)
		return;
	for (pr = probes_head; pr; pr = pr->next) {
		if (pr->spec != s || !atomic_load(&pr->live))
			continue;
		atomic_store(&pr->live, false);
		if (uses_rp(pr)) {
			unregister_kretprobe(&pr->rp);
		} else {
			unregister_kprobe(&pr->kp);
			pr->retired = !pr->go_ret && !pr->sdt_pair;
		}
	}
	s->nprobes = 0;
	s->done = false;
	s->pending = true;
	s->args_ready = false;
	s->again = true;
	names_rebuild();
}

/* [init] Under probes_lock: forget the probes of unloaded objects and
 * register the SPECs whose objects are loaded now. Any registered? */
static bool refresh_locked(void)
{
	bool registered = false;
	int i;

	loader_wait_locked();
	/* the library notices unloaded objects when it is next entered: a
	 * look-up (of nothing) enters it */
	{
		struct ksym_info none = { .size = sizeof(none) };
		char buf[1];

		kallsyms_lookup_info(0, &none, buf, sizeof(buf));
	}
	for (i = 0; i < nspecs; i++) {
		struct ukpa_spec *s = &specs[i];
		struct ukpa_obj obj;

		if (!s->spec.object)
			continue;
		if (s->done && s->nprobes)
			spec_rearm_if_gone(s);
		if (s->pending && ukpa_obj_find(s->spec.object, &obj) == 0 && !spec_resolve(s))
			registered = true;
	}
	return registered;
}

void ukpa_probes_refresh(void)
{
	bool registered;

	pthread_mutex_lock(&probes_lock);
	registered = refresh_locked();
	pthread_mutex_unlock(&probes_lock);
	/* optimized before the program uses the object (see agent.c) */
	if (registered)
		ukprobes_wait_optimizer();
}

void ukpa_probes_loader_event(int state)
{
	struct timespec until, end;
	bool registered = false;

	if (!ukpa_active())
		return;
	if (atomic_load(&setup_busy)) {
		/* (an unmap that began before the setup ends here, unlocked:
		 * its waiters wake within a slice of loader_wait_locked) */
		if (state == RT_CONSISTENT)
			atomic_store(&loader_deleting, false);
		return;
	}
	/* bounded: a holder of the lock waiting for the loader's lock (which
	 * this thread holds: the library starting a thread) must not hang
	 * the program; the probes then come a little late. In slices, and
	 * setup_busy looked at again between them: a setup that began just
	 * after the look above holds the lock and may start threads (glibc's
	 * pthread_create waits for the TLS lock dlopen() holds here), which
	 * stalled the program for the whole bound (an attach that counted
	 * nothing in its second). */
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 2;
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (pthread_mutex_timedlock(&probes_lock, &until) == 0)
			break;
		if (atomic_load(&setup_busy)) {
			if (state == RT_CONSISTENT)
				atomic_store(&loader_deleting, false);
			return;
		}
		if (until.tv_sec > end.tv_sec ||
		    (until.tv_sec == end.tv_sec && until.tv_nsec >= end.tv_nsec))
			return;
	}
	if (state == RT_DELETE) {
		/* any registration under way has ended (the lock); none
		 * starts until the objects are gone */
		loader_deleting = true;
	} else if (state == RT_CONSISTENT) {
		loader_deleting = false;
		pthread_cond_broadcast(&loader_cond);
		if (nspecs)
			registered = refresh_locked();
	}
	pthread_mutex_unlock(&probes_lock);
	if (registered)
		ukprobes_wait_optimizer();
}

/* [reader] The loader's stops register what is loaded, before the
 * program can call it: the reader need not look. */
bool ukpa_probes_loader_watched(void)
{
	return atomic_load(&loader_watched);
}

bool ukpa_probes_pending(void)
{
	int i;

	for (i = 0; i < nspecs; i++)
		if (specs[i].spec.object)
			return true; /* may wait, or come back after a dlclose */
	return false;
}

void ukpa_probes_lock(void)
{
	pthread_mutex_lock(&probes_lock);
}

void ukpa_probes_unlock(void)
{
	pthread_mutex_unlock(&probes_lock);
}

void ukpa_probes_place_hists(void)
{
	for (int i = 0; i < nspecs; i++)
		ukpa_hist_place(specs[i].hist);
}

void ukpa_probes_after_fork(void)
{
	pthread_mutex_init(&probes_lock, NULL);
}

void ukpa_probes_restart(void)
{
	struct ukpa_probe *pr;
	int i;

	pthread_mutex_lock(&probes_lock);
	for (pr = probes_head; pr; pr = pr->next) {
		if (!atomic_load(&pr->live))
			continue;
		pr->kp.nmissed = 0;
		pr->rp.kp.nmissed = 0;
		pr->rp.nmissed = 0;
		send_probe(pr);
	}
	for (i = 0; i < nspecs; i++) {
		/* a new image: its own hists */
		ukpa_hist_reset(specs[i].hist);
		if (specs[i].pending)
			send_probe_msg(&specs[i], ~0u, 0, 0, 0, UKP_PROBE_PENDING, -1, 0, 0, 0,
				       specs[i].spec.event, "", specs[i].spec.object, "");
	}
	pthread_mutex_unlock(&probes_lock);
}

static void send_stats_locked(void);

void ukpa_probes_send_stats(void)
{
	pthread_mutex_lock(&probes_lock);
	ukpa_counts_lock();
	send_stats_locked();
	ukpa_counts_unlock();
	pthread_mutex_unlock(&probes_lock);
}

int ukpa_probes_send_stats_nowait(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec++;
	if (pthread_mutex_timedlock(&probes_lock, &until))
		return -1;
	if (ukpa_counts_timedlock(&until)) {
		pthread_mutex_unlock(&probes_lock);
		return -1;
	}
	send_stats_locked();
	ukpa_counts_unlock();
	pthread_mutex_unlock(&probes_lock);
	return 0;
}

static void send_stats_locked(void)
{
	struct ukp_msg_stat batch[256];
	struct ukpa_probe *pr;
	size_t n = 0;
	int i;

	for (pr = probes_head; pr; pr = pr->next) {
		batch[n++] = (struct ukp_msg_stat){
			.h = { UKPM_STAT, sizeof(struct ukp_msg_stat) },
			.id = pr->id,
			.hits = ukpa_count_of(pr),
			.missed = uses_rp(pr) ? (uint64_t)pr->rp.nmissed + pr->rp.kp.nmissed
				  : pr->wbp ? pr->wbp[0]->nmissed
				  : pr->kp.nmissed + atomic_load(&pr->go_missed),
		};
		if (n == sizeof(batch) / sizeof(batch[0]) || !pr->next) {
			ukpa_send(batch, n * sizeof(batch[0]));
			n = 0;
		}
	}
	for (i = 0; i < nspecs; i++)
		if (specs[i].hist)
			ukpa_hist_send(specs[i].hist, specs[i].index);
}

/*
 * [init] Detach (ukprobe -p): every probe unregistered (its text back as
 * it was), and the SPECs, names and ids forgotten, for the next attach.
 * The reader is stopped. A kretprobe's memory is kept: a thread that is
 * inside its function returns through the trampoline later, which still
 * reads it (its handler is no longer called).
 */
void ukpa_probes_unregister_all(void)
{
	struct ukpa_probe *pr, *next;
	struct kprobe **kps;
	struct kretprobe **rps;
	int nk = 0, nr = 0, i;

	pthread_mutex_lock(&probes_lock);
	loader_wait_locked();
	if (loader_watched) {
		ukpa_loader_unwatch();
		loader_watched = false;
	}
#ifdef UKP_FREE
	ukpa_signal_sites_unwatch();
#endif
	kps = calloc(nprobes + 1, sizeof(*kps));
	rps = calloc(nprobes + 1, sizeof(*rps));
	for (pr = probes_head; pr; pr = pr->next) {
		if (!atomic_load(&pr->live))
			continue;
		atomic_store(&pr->live, false);
		if (uses_rp(pr)) {
			if (rps)
				rps[nr++] = &pr->rp;
			else
				unregister_kretprobe(&pr->rp);
		} else {
			if (kps)
				kps[nk++] = &pr->kp;
			else
				unregister_kprobe(&pr->kp);
		}
	}
	/* one grace period for all of them */
	if (nk)
		unregister_kprobes(kps, nk);
	while (sdt_enters) {
		struct ukpa_sdt_enter *e = sdt_enters;

		sdt_enters = e->next;
		unregister_kprobe(&e->kp);
		free(e);
	}
	memset(sdt_pairs, 0, sizeof(sdt_pairs));
	while (go_enters) {
		struct ukpa_go_enter *e = go_enters;

		go_enters = e->next;
		unregister_kprobe(&e->kp);
		free(e);
	}
	if (nr)
		unregister_kretprobes(rps, nr);
	free(kps);
	free(rps);
	for (pr = probes_head; pr; pr = next) {
		next = pr->next;
		if (!uses_rp(pr))
			probe_free(pr);
		else
			pr->spec = NULL;
	}
	for (i = 0; i < NCHUNKS; i++) {
		struct ukpa_probe **chunk = atomic_load(&chunks[i]);

		if (chunk)
			memset(chunk, 0, CHUNK * sizeof(*chunk));
	}
	probes_head = NULL;
	probes_tail = &probes_head;
	nprobes = 0;
	for (i = 0; i < nspecs; i++) {
		ukpa_hist_free(specs[i].hist);
		free(specs[i].fb);
		ukp_spec_free(&specs[i].spec);
	}
	free(specs);
	specs = NULL;
	nspecs = 0;
	ukpa_names_clear();
	pthread_mutex_unlock(&probes_lock);
}

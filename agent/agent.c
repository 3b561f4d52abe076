/* SPDX-License-Identifier: MIT */
/*
 * agent.c - start-up and exit of libukprobe-agent.so, and the probe
 * handlers.
 *
 * The constructor runs after every object of the program's initial link
 * map is loaded and relocated (the dynamic loader maps all DT_NEEDED
 * objects before it runs any initializer), so SPECs can name the
 * program's libraries. Objects the program dlopen()s later are not
 * searched yet. libukprobes' own constructors run before this one: its
 * sources come first in this shared object (.init_array runs in link
 * order).
 *
 * If a probe cannot be registered, the agent reports why and ends the
 * program before its main() runs: nothing of it runs with a partial set
 * of probes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#include "agent.h"
#include "symbols.h"
#include "internal.h"


#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

_Atomic bool ukpa_tracing;
bool ukpa_stat_mode;
UKPA_TLS int ukpa_busy;

static int out_fd = -1;
static dev_t out_dev;
static ino_t out_ino;
static bool out_broken;
static pid_t agent_pid;
static struct ukpa_event *events;
static int nevents;

/* ----------------------------------------------------------- output */

/* [init][reader] The socket may have been closed by the program (some
 * close every descriptor they do not know) and its number reused: never
 * write into someone else's file. */
int ukpa_send(const void *buf, size_t len)
{
	const char *p = buf;
	struct stat st;

	if (out_fd < 0 || out_broken)
		return -1;
	if (fstat(out_fd, &st) || st.st_dev != out_dev || st.st_ino != out_ino) {
		out_broken = true;
		return -1;
	}
	while (len) {
		ssize_t n = send(out_fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			out_broken = true;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* --------------------------------------------------------- handlers */

static int kp_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_event *ev = container_of(kp, struct ukpa_event, kp);

	if (ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	atomic_fetch_add_explicit(&ev->hits, 1, memory_order_relaxed);
	if (!ukpa_stat_mode)
		ukpa_record(ev, regs, regs, (uintptr_t)kp->addr, 0);
	return 0;
}

/* Return probes: the registers at the entry are kept for $argN. */
static int rp_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 1; /* no return handler for this call */
	memcpy(ri->data, regs, sizeof(*regs));
	return 0;
}

static int rp_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_event *ev;

	if (!rp || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	ev = container_of(rp, struct ukpa_event, rp);
	atomic_fetch_add_explicit(&ev->hits, 1, memory_order_relaxed);
	if (!ukpa_stat_mode)
		ukpa_record(ev, regs, (const struct pt_regs *)ri->data, (uintptr_t)rp->kp.addr,
			    (uintptr_t)ri->ret_addr);
	return 0;
}

/* ----------------------------------------------------- registration */

static void count_sym(const struct ukp_symres *sym, void *arg)
{
	(void)sym;
	(*(size_t *)arg)++;
}

/* Is an object of that name loaded (by the library's rules)? */
static bool object_loaded(const char *name)
{
	size_t n = 0;

	if (ukp_lock_for_show())
		return false;
	ukp_for_each_symbol(name, count_sym, &n);
	ukp_unlock_for_show();
	return n > 0;
}

static void send_probe(const struct ukpa_event *ev, int err, uint32_t what)
{
	union {
		struct ukp_msg_probe m;
		char buf[640];
	} u;
	const struct kprobe *kp = ev->spec.is_return ? &ev->rp.kp : &ev->kp;
	uintptr_t func = 0;
	size_t tlen;

	memset(&u, 0, sizeof(u));
	if (!err)
		ukpa_symbolize((uintptr_t)kp->addr, u.m.text, sizeof(u.buf) - sizeof(u.m), &func,
			       ev->symbol_name);
	tlen = strlen(u.m.text) + 1;
	u.m.h.type = UKPM_PROBE;
	u.m.h.len = (uint32_t)((sizeof(u.m) + tlen + 7) & ~(size_t)7);
	u.m.id = ev->id;
	u.m.err = err;
	u.m.what = what;
	u.m.addr = err ? 0 : (uint64_t)(uintptr_t)kp->addr;
	u.m.func = func;
	ukpa_send(&u, u.m.h.len);
}

static int register_event(struct ukpa_event *ev)
{
	uint32_t what = UKP_WHAT_NONE;
	int ret;

	ev->symbol_name = ukp_spec_symbol_name(&ev->spec);
	if (!ev->symbol_name) {
		ret = -ENOMEM;
	} else if (ev->spec.is_return) {
		ev->rp.kp.symbol_name = ev->symbol_name;
		ev->rp.handler = rp_ret;
		ev->rp.entry_handler = rp_entry;
		ev->rp.data_size = sizeof(struct pt_regs);
		ev->rp.maxactive = ev->spec.maxactive;
		ret = register_kretprobe(&ev->rp);
	} else {
		ev->kp.symbol_name = ev->symbol_name;
		ev->kp.offset = (unsigned int)ev->spec.offset;
		ev->kp.pre_handler = kp_pre;
		ret = register_kprobe(&ev->kp);
	}
	if (ret == -ENOENT)
		what = ev->spec.object && !object_loaded(ev->spec.object) ? UKP_WHAT_OBJECT
									   : UKP_WHAT_SYMBOL;
	send_probe(ev, ret, what);
	return ret;
}

/* Parse and register every SPEC (one per line of defs). 0 or -1. */
static int setup_events(char *defs)
{
	char *line, *save = NULL;
	int n = 1, failed = 0;
	char *c;

	for (c = defs; *c; c++)
		if (*c == '\n')
			n++;
	events = calloc((size_t)n, sizeof(*events));
	if (!events)
		return -1;
	for (line = strtok_r(defs, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct ukpa_event *ev = &events[nevents];
		struct ukp_spec_error err;

		if (ukp_spec_parse(line, &ev->spec, &err))
			return -1; /* ukprobe checked them: not ours */
		ev->id = (uint16_t)nevents++;
	}
	{
		struct ukp_msg_hello h = {
			.h = { UKPM_HELLO, sizeof(h) },
			.pid = (int32_t)getpid(),
			.version = UKP_PROTO_VERSION,
			.nevents = (uint32_t)nevents,
			.mode = ukpa_stat_mode ? UKP_MODE_STAT : UKP_MODE_TRACE,
		};

		ukpa_send(&h, sizeof(h));
	}
	for (n = 0; n < nevents; n++)
		if (register_event(&events[n]))
			failed = 1;
	return failed ? -1 : 0;
}

/* ------------------------------------------------------ environment */

/* Programs the traced program runs are not traced: take the agent out
 * of LD_PRELOAD and drop our variables. */
static void clean_environment(void)
{
	const char *pre = getenv("LD_PRELOAD");
	Dl_info info;
	char self[PATH_MAX], ent[PATH_MAX];
	char *copy, *tok, *save = NULL, *out;
	size_t olen = 0;

	unsetenv(UKP_ENV_FD);
	unsetenv(UKP_ENV_EVENTS);
	unsetenv(UKP_ENV_MODE);
	if (!pre || !dladdr((void *)clean_environment, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, self))
		return;
	copy = strdup(pre);
	out = calloc(1, strlen(pre) + 1);
	if (!copy || !out)
		goto done;
	for (tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
		if (realpath(tok, ent) && !strcmp(ent, self))
			continue;
		if (olen)
			out[olen++] = ':';
		strcpy(out + olen, tok);
		olen += strlen(tok);
	}
	if (olen)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
done:
	free(copy);
	free(out);
}

/* ------------------------------------------------------ life cycle */

static void atfork_child(void)
{
	/* Forks are not followed (yet): the child runs untraced. */
	atomic_store(&ukpa_tracing, false);
	ukpa_rings_after_fork();
	if (out_fd >= 0)
		close(out_fd);
	out_fd = -1;
}

static void send_end(uint64_t lost, bool setup_failed)
{
	struct ukp_msg_end e = {
		.h = { UKPM_END, sizeof(e) },
		.lost = lost,
		.setup_failed = setup_failed,
	};

	ukpa_send(&e, sizeof(e));
}

__attribute__((constructor)) static void ukpa_init(void)
{
	const char *fds = getenv(UKP_ENV_FD), *defs = getenv(UKP_ENV_EVENTS);
	const char *mode = getenv(UKP_ENV_MODE);
	int saved_errno = errno;
	struct stat st;
	char *copy, *end;
	long fd;

	if (!fds || !defs)
		return; /* not started by ukprobe */
	ukpa_busy++;
	fd = strtol(fds, &end, 10);
	if (*end || fd < 0 || fd > INT_MAX || fstat((int)fd, &st) || !S_ISSOCK(st.st_mode))
		goto out;
	out_fd = (int)fd;
	out_dev = st.st_dev;
	out_ino = st.st_ino;
	fcntl(out_fd, F_SETFD, FD_CLOEXEC);
	agent_pid = getpid();
	ukpa_stat_mode = mode && !strcmp(mode, "stat");
	copy = strdup(defs);
	clean_environment();
	if (!copy || setup_events(copy)) {
		send_end(0, true);
		_exit(UKP_EXIT_SETUP);
	}
	free(copy);
	if (!ukpa_stat_mode && ukpa_rings_init(events, nevents)) {
		send_end(0, true);
		_exit(UKP_EXIT_SETUP);
	}
	pthread_atfork(NULL, NULL, atfork_child);
	atomic_store(&ukpa_tracing, true);
	if (!ukpa_stat_mode && ukpa_reader_start()) {
		send_end(0, true);
		_exit(UKP_EXIT_SETUP);
	}
out:
	ukpa_busy--;
	errno = saved_errno;
}

/*
 * After the program's own destructors and atexit handlers (the
 * executable's fini runs before those of the objects it was linked
 * with). Probes stay registered: threads still running, and libc's own
 * clean-up, hit them and record nothing.
 */
__attribute__((destructor)) static void ukpa_fini(void)
{
	int saved_errno = errno;
	uint64_t lost = 0;
	int i;

	if (out_fd < 0 || getpid() != agent_pid)
		return;
	ukpa_busy++;
	if (ukpa_stat_mode)
		atomic_store(&ukpa_tracing, false);
	else
		lost = ukpa_reader_stop();
	for (i = 0; i < nevents; i++) {
		const struct ukpa_event *ev = &events[i];
		struct ukp_msg_stat s = {
			.h = { UKPM_STAT, sizeof(s) },
			.id = ev->id,
			.hits = atomic_load(&ev->hits),
			.missed = ev->spec.is_return ? (uint64_t)ev->rp.nmissed + ev->rp.kp.nmissed
						     : ev->kp.nmissed,
		};

		ukpa_send(&s, sizeof(s));
	}
	send_end(lost, false);
	close(out_fd);
	out_fd = -1;
	ukpa_busy--;
	errno = saved_errno;
}

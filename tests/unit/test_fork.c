// SPDX-License-Identifier: MIT
/*
 * test_fork.c - probes across fork(): the child inherits working probes
 * and runs their handlers itself, may register and unregister probes of
 * its own, and nothing it does reaches the parent (code, counts,
 * registry), nor the other way round. Forks also come from a thread
 * while other threads are hitting probes.
 *
 * Children report through a pipe (a fixed-size record) and exit with
 * _exit(); an alarm bounds each child's life.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ukprobes.h"
#include "ukp_test.h"

UKP_TARGET int fork_target(int x)
{
	return x + 1;
}

UKP_TARGET int fork_target2(int x)
{
	return x * 2;
}

static int (*volatile target_fp)(int) = fork_target;
static int (*volatile target2_fp)(int) = fork_target2;

static _Atomic unsigned long pre_hits, post_hits, pre2_hits;
static _Atomic int pre_pid, pre2_pid;

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&pre_hits, 1);
	atomic_store(&pre_pid, (int)getpid());
	return 0;
}

static void post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&post_hits, 1);
}

static int pre2(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&pre2_hits, 1);
	atomic_store(&pre2_pid, (int)getpid());
	return 0;
}

static struct kprobe kp = {
	.symbol_name = "fork_target",
	.pre_handler = pre,
	.post_handler = post,
};

static struct kprobe kp2 = {
	.symbol_name = "fork_target2",
	.pre_handler = pre2,
};

/* What a child reports. */
struct report {
	long v[16];
	int nv;
	int errors;        /* failed checks inside the child */
	char what[160];    /* the first failed check */
};

static void child_check(struct report *r, bool ok, const char *what)
{
	if (!ok && !r->errors++)
		snprintf(r->what, sizeof(r->what), "%s", what);
}

static void child_put(struct report *r, long v)
{
	if (r->nv < 16)
		r->v[r->nv++] = v;
}

/* Run fn in a child; the parent gets its report. Returns the child's pid. */
static pid_t run_child(void (*fn)(struct report *, int), int arg, struct report *out)
{
	int fds[2];
	pid_t pid;
	ssize_t n;
	int status;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct report r;

		memset(&r, 0, sizeof(r));
		close(fds[0]);
		alarm(10);
		fn(&r, arg);
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	memset(out, 0, sizeof(*out));
	n = read(fds[0], out, sizeof(*out));
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child died: %s %d", WIFSIGNALED(status) ? "signal" : "exit",
		  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	cr_assert_eq(n, (ssize_t)sizeof(*out), "no report from the child");
	cr_expect_eq(out->errors, 0, "child: %d failed checks, first: %s", out->errors, out->what);
	return pid;
}

static int count_list_lines(void)
{
	char *buf = NULL;
	size_t len = 0;
	int lines = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -1;
	kprobes_show_list(f);
	fclose(f);
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	free(buf);
	return lines;
}

/* ------------------------------------------------------------- tests */

static void child_calls_inherited(struct report *r, int arg)
{
	for (int i = 0; i < 5; i++)
		child_check(r, target_fp(i) == i + 1, "wrong result in the child");
	child_put(r, (long)atomic_load(&pre_hits));
	child_put(r, (long)atomic_load(&post_hits));
	child_put(r, atomic_load(&pre_pid));
	child_put(r, getpid());
}

/* The child inherits the probe: its handlers run in the child, on the
 * child's copy of the counters; the parent's counts do not move. */
Test(fork, child_keeps_probe_and_runs_its_handlers, .timeout = 30)
{
	struct report r;
	pid_t child;

	cr_assert_eq(register_kprobe(&kp), 0);
	for (int i = 0; i < 3; i++)
		target_fp(i);
	cr_assert_eq(atomic_load(&pre_hits), 3);
	child = run_child(child_calls_inherited, 0, &r);
	cr_expect_eq(r.v[0], 8, "child pre hits %ld", r.v[0]);
	cr_expect_eq(r.v[1], 8, "child post hits %ld", r.v[1]);
	cr_expect_eq(r.v[2], child, "the handler ran in pid %ld, not the child", r.v[2]);
	cr_expect_eq(r.v[3], child);
	cr_expect_eq(atomic_load(&pre_hits), 3, "the child's hits reached the parent");
	cr_expect_eq(atomic_load(&post_hits), 3);
	target_fp(0);
	target_fp(1);
	cr_expect_eq(atomic_load(&pre_hits), 5);
	cr_expect_eq(atomic_load(&post_hits), 5);
	cr_expect_eq(atomic_load(&pre_pid), getpid());
	unregister_kprobe(&kp);
}

static void child_own_probes(struct report *r, int arg)
{
	const uint8_t *t2 = (const uint8_t *)fork_target2;
	uint8_t first = t2[0];
	unsigned long base = atomic_load(&pre_hits);

	child_check(r, register_kprobe(&kp2) == 0, "register in the child");
	child_check(r, ukt_breakpoint_at(t2), "no breakpoint in the child's code");
	for (int i = 0; i < 4; i++)
		child_check(r, target2_fp(i) == 2 * i, "wrong result (probed)");
	child_put(r, (long)atomic_load(&pre2_hits));
	child_put(r, atomic_load(&pre2_pid));
	unregister_kprobe(&kp2);
	child_check(r, t2[0] == first, "the child's code was not restored");
	for (int i = 0; i < 2; i++)
		child_check(r, target2_fp(i) == 2 * i, "wrong result (unprobed)");
	child_put(r, (long)atomic_load(&pre2_hits));

	/* the inherited probe goes too, and comes back */
	target_fp(1);
	child_put(r, (long)(atomic_load(&pre_hits) - base));
	unregister_kprobe(&kp);
	target_fp(1);
	child_put(r, (long)(atomic_load(&pre_hits) - base));
	child_put(r, count_list_lines());
	kp.addr = NULL;
	kp.flags = 0;
	child_check(r, register_kprobe(&kp) == 0, "re-register in the child");
	target_fp(1);
	child_put(r, (long)(atomic_load(&pre_hits) - base));
	unregister_kprobe(&kp);
}

/* The child registers and unregisters probes of its own, and removes
 * the inherited one: none of its code changes reach the parent. */
Test(fork, child_registers_and_unregisters, .timeout = 30)
{
	uint8_t before[16], after[16];
	struct report r;
	pid_t child;

	cr_assert_eq(register_kprobe(&kp), 0);
	memcpy(before, (const void *)fork_target2, sizeof(before));
	target_fp(0);
	child = run_child(child_own_probes, 0, &r);
	cr_expect_eq(r.v[0], 4, "child's own probe counted %ld", r.v[0]);
	cr_expect_eq(r.v[1], child);
	cr_expect_eq(r.v[2], 4, "child's probe counted after unregistration");
	cr_expect_eq(r.v[3], 1);
	cr_expect_eq(r.v[4], 1, "inherited probe counted after the child unregistered it");
	cr_expect_eq(r.v[5], 0, "child's list not empty");
	cr_expect_eq(r.v[6], 2, "re-registered probe in the child did not count");

	/* The parent: untouched code, its probe still there and working. */
	memcpy(after, (const void *)fork_target2, sizeof(after));
	cr_expect_eq(memcmp(before, after, sizeof(before)), 0,
		     "the child's breakpoint showed up in the parent's code");
	cr_expect(ukt_breakpoint_at((const void *)fork_target),
		     "the child's unregistration removed the parent's breakpoint");
	cr_expect_eq(target2_fp(3), 6);
	cr_expect_eq(atomic_load(&pre2_hits), 0);
	cr_expect_eq(atomic_load(&pre_hits), 1);
	target_fp(0);
	cr_expect_eq(atomic_load(&pre_hits), 2);
	cr_expect_eq(count_list_lines(), 1);
	unregister_kprobe(&kp);
	cr_expect_eq(count_list_lines(), 0);
}

static int go_pipe[2];

static void child_waits_for_parent(struct report *r, int arg)
{
	char c;
	unsigned long base = atomic_load(&pre_hits);

	close(go_pipe[1]);
	child_check(r, read(go_pipe[0], &c, 1) == 1, "no go from the parent");
	for (int i = 0; i < 3; i++)
		target_fp(i);
	child_put(r, (long)(atomic_load(&pre_hits) - base));
	child_put(r, count_list_lines());
	unregister_kprobe(&kp);
	target_fp(0);
	child_put(r, (long)(atomic_load(&pre_hits) - base));
}

/* The parent unregisters while the child lives: the child keeps its
 * probe (its code and registry are its own). */
Test(fork, parent_unregisters_child_keeps, .timeout = 30)
{
	struct report r;
	pid_t pid;
	int status;
	int fds[2];
	ssize_t n;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(pipe(go_pipe), 0);
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		memset(&r, 0, sizeof(r));
		close(fds[0]);
		alarm(10);
		child_waits_for_parent(&r, 0);
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	close(go_pipe[0]);
	unregister_kprobe(&kp);
	target_fp(0);
	cr_expect_eq(atomic_load(&pre_hits), 0);
	cr_expect_eq(write(go_pipe[1], "g", 1), 1);
	close(go_pipe[1]);
	n = read(fds[0], &r, sizeof(r));
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child died (status %#x)",
		  status);
	cr_assert_eq(n, (ssize_t)sizeof(r));
	cr_expect_eq(r.errors, 0, "%s", r.what);
	cr_expect_eq(r.v[0], 3, "child's inherited probe counted %ld of 3", r.v[0]);
	cr_expect_eq(r.v[1], 1);
	cr_expect_eq(r.v[2], 3);
	cr_expect_eq(atomic_load(&pre_hits), 0);
}

/* ------------------------------------------- fork while threads hit */

#define NHITTERS 3
#define NFORKS 60
#define CHILD_CALLS 50

static _Atomic bool hitters_run;
static _Atomic unsigned long hitter_calls, hitter_bad;

static void *hitter(void *arg)
{
	(void)arg;
	while (atomic_load_explicit(&hitters_run, memory_order_relaxed)) {
		if (target_fp(41) != 42)
			atomic_fetch_add(&hitter_bad, 1);
		atomic_fetch_add(&hitter_calls, 1);
	}
	return NULL;
}

static void child_after_threaded_fork(struct report *r, int arg)
{
	unsigned long b_pre = atomic_load(&pre_hits), b_post = atomic_load(&post_hits);

	for (int i = 0; i < CHILD_CALLS; i++)
		child_check(r, target_fp(i) == i + 1, "wrong result in the child");
	child_put(r, (long)(atomic_load(&pre_hits) - b_pre));
	child_put(r, (long)(atomic_load(&post_hits) - b_post));
	child_put(r, atomic_load(&pre_pid) == getpid());
	/* registration and unregistration must not wait for the parent's
	 * threads, which do not exist here */
	child_check(r, register_kprobe(&kp2) == 0, "register in the child");
	for (int i = 0; i < 3; i++)
		target2_fp(i);
	unregister_kprobe(&kp2);
	child_put(r, (long)atomic_load(&pre2_hits));
	unregister_kprobe(&kp);
	b_pre = atomic_load(&pre_hits);
	target_fp(0);
	child_put(r, (long)(atomic_load(&pre_hits) - b_pre));
	child_put(r, count_list_lines());
}

struct forker_result {
	int forks, bad;
	char first[400];
};

static void *forker(void *arg)
{
	struct forker_result *fr = arg;

	for (int i = 0; i < NFORKS; i++) {
		struct report r;
		int fds[2], status;
		pid_t pid;
		ssize_t n;
		bool ok;

		if (pipe(fds))
			break;
		pid = fork();
		if (pid == 0) {
			memset(&r, 0, sizeof(r));
			close(fds[0]);
			alarm(10);
			child_after_threaded_fork(&r, i);
			if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
				_exit(3);
			_exit(0);
		}
		close(fds[1]);
		memset(&r, 0, sizeof(r));
		n = pid > 0 ? read(fds[0], &r, sizeof(r)) : -1;
		close(fds[0]);
		status = -1;
		if (pid > 0)
			waitpid(pid, &status, 0);
		ok = n == (ssize_t)sizeof(r) && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		     r.errors == 0 && r.v[0] == CHILD_CALLS && r.v[1] == CHILD_CALLS &&
		     r.v[2] == 1 && r.v[3] == 3 && r.v[4] == 0 && r.v[5] == 0;
		fr->forks++;
		if (!ok && !fr->bad++)
			snprintf(fr->first, sizeof(fr->first),
				 "fork %d: status %#x, report %zd bytes, errors %d (%s), "
				 "v = %ld %ld %ld %ld %ld %ld",
				 i, status, n, r.errors, r.what, r.v[0], r.v[1], r.v[2], r.v[3],
				 r.v[4], r.v[5]);
	}
	return NULL;
}

/*
 * A thread forks over and over while three others hit a probe with pre
 * and post handlers. Each child (one thread: the forker) counts its own
 * calls exactly, registers and unregisters without waiting for threads
 * it does not have, and removes the inherited probe. The parent counts
 * exactly its own threads' calls.
 */
Test(fork, fork_from_thread_while_threads_hit, .timeout = 60)
{
	pthread_t th[NHITTERS], ft;
	struct forker_result fr = { 0, 0, "" };
	int i;

	cr_assert_eq(register_kprobe(&kp), 0);
	atomic_store(&hitters_run, true);
	for (i = 0; i < NHITTERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, hitter, NULL), 0);
	while (atomic_load(&hitter_calls) < 1000)
		usleep(1000);
	cr_assert_eq(pthread_create(&ft, NULL, forker, &fr), 0);
	pthread_join(ft, NULL);
	atomic_store(&hitters_run, false);
	for (i = 0; i < NHITTERS; i++)
		pthread_join(th[i], NULL);

	cr_expect_eq(fr.forks, NFORKS);
	cr_expect_eq(fr.bad, 0, "%d bad children; first: %s", fr.bad, fr.first);
	cr_expect_eq(atomic_load(&hitter_bad), 0);
	cr_expect_eq(atomic_load(&pre_hits), atomic_load(&hitter_calls),
		     "parent: %lu pre hits for %lu calls", atomic_load(&pre_hits),
		     atomic_load(&hitter_calls));
	cr_expect_eq(atomic_load(&post_hits), atomic_load(&hitter_calls));
	cr_expect_eq(atomic_load(&pre2_hits), 0);
	cr_expect_eq(count_list_lines(), 1);
	unregister_kprobe(&kp);
}

/* ------------------------------------------- a daemon closes every fd */

/* The descriptor number of /proc/<pid>/mem in this process, or -1. */
static int find_mem_fd(void)
{
	char want[64], link[256], path[300];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	snprintf(want, sizeof(want), "/proc/%d/mem", (int)getpid());
	while ((e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, want))
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static int report_fd;

static void child_daemon(struct report *r, int arg)
{
	unsigned long base;
	struct stat st;
	int memfd, file;

	child_check(r, register_kprobe(&kp2) == 0, "register kp2");
	target2_fp(1);
	memfd = find_mem_fd();
	child_check(r, memfd >= 0, "the library keeps no /proc/self/mem descriptor");
	/* the daemon idiom: close everything but our report pipe... */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != report_fd)
			close(fd);
	/* ...and the number comes back as one of the program's files */
	file = memfd_create("daemon-log", 0);
	child_check(r, file >= 0, "memfd_create");
	if (memfd >= 0 && file != memfd) {
		child_check(r, dup2(file, memfd) == memfd, "dup2");
		close(file);
		file = memfd;
	}
	unregister_kprobe(&kp2);
	child_check(r, !ukt_breakpoint_at((const void *)fork_target2),
		    "unregistration did not restore the code");
	child_check(r, fstat(file, &st) == 0 && st.st_size == 0,
		    "the library wrote into the program's file");
	base = atomic_load(&pre_hits);
	child_check(r, register_kprobe(&kp) == 0, "register kp after the close");
	target_fp(2);
	child_put(r, (long)(atomic_load(&pre_hits) - base));
	child_put(r, (long)atomic_load(&pre2_hits));
	child_check(r, fstat(file, &st) == 0 && st.st_size == 0,
		    "the library wrote into the program's file");
	unregister_kprobe(&kp);
	child_check(r, target2_fp(4) == 8, "wrong result");
}

/*
 * A forked daemon closes every descriptor it does not know, including
 * the library's /proc/self/mem, and the number is reused for one of its
 * own files: the library must notice, write its code changes where they
 * belong and never into the program's file.
 */
Test(fork, daemon_closes_library_descriptor, .timeout = 30)
{
	struct report r;
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		memset(&r, 0, sizeof(r));
		close(fds[0]);
		report_fd = fds[1];
		alarm(10);
		child_daemon(&r, 0);
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], &r, sizeof(r));
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child died (status %#x)",
		  status);
	cr_assert_eq(n, (ssize_t)sizeof(r));
	cr_expect_eq(r.errors, 0, "child: %d failed checks, first: %s", r.errors, r.what);
	cr_expect_eq(r.v[0], 1, "probe registered after the close counted %ld", r.v[0]);
	cr_expect_eq(r.v[1], 1);
}

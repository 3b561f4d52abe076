/* SPDX-License-Identifier: MIT */
/*
 * test_loader.c - ukprobe's ptrace loader (tools/ukprobe/load.c) on real
 * programs: the agent stub (stub.c, a freestanding static PIE) loaded
 * into loadee (dynamic and static C, in each of its modes) and a Go
 * program, attached and launched (stopped at the entry point), then
 * unloaded. Each case checks that the stub ran inside the target (its
 * process id, its /proc/self/exe, a global of the target's read by
 * address, every signal blocked, its block), that the target's output and
 * exit status are those of a run without the loader, and that after the
 * unload /proc/PID/maps and /proc/PID/task are exactly as before.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "stub.h"

#define TIMEOUT_MS 20000

struct proc {
	pid_t pid;
	int in, out, err;       /* its stdin (ours to write), stdout, stderr */
	char ready[256];        /* its first line */
	uint64_t marker;        /* the address the ready line gives */
};

static char dir[1024];

static void paths_init(void)
{
	const char *d = getenv("UKP_LOADER_DIR");

	cr_assert(d, "UKP_LOADER_DIR is not set (run under meson test)");
	snprintf(dir, sizeof(dir), "%s", d);
}

static char *path_of(const char *name)
{
	static char p[4][1200];
	static int k;
	char *s = p[k++ % 4];

	snprintf(s, sizeof(p[0]), "%s/%s", dir, name);
	return s;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Start argv with pipes; traceme: stopped at its execve's SIGTRAP. */
static void spawn(struct proc *p, char *const argv[], bool traceme)
{
	int in[2], out[2], err[2];

	cr_assert(!pipe2(in, O_CLOEXEC) && !pipe2(out, O_CLOEXEC) && !pipe2(err, O_CLOEXEC));
	p->pid = fork();
	cr_assert(p->pid >= 0);
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (traceme)
			ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(argv[0], argv);
		_exit(126);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	p->in = in[1];
	p->out = out[0];
	p->err = err[0];
	p->ready[0] = '\0';
	if (traceme) {
		int st;

		cr_assert_eq(waitpid(p->pid, &st, 0), p->pid);
		cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "not stopped at its execve");
	}
}

/* One line of fd (up to the newline), within the timeout. */
static bool read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	long until = now_ms() + TIMEOUT_MS;

	while (n + 1 < len && now_ms() < until) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		char c;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(fd, &c, 1) != 1)
			break;
		if (c == '\n') {
			buf[n] = '\0';
			return true;
		}
		buf[n++] = c;
	}
	buf[n] = '\0';
	return false;
}

static void wait_ready(struct proc *p)
{
	char *m;

	cr_assert(read_line(p->out, p->ready, sizeof(p->ready)), "no ready line: '%s'", p->ready);
	m = strstr(p->ready, "marker=");
	cr_assert(m, "%s", p->ready);
	p->marker = strtoull(m + 7, NULL, 16);
}

/* Close its stdin, read the rest of its stdout (stderr drained), wait
 * for it: the rest in out, its wait status returned. */
static int finish(struct proc *p, char *out, size_t len)
{
	size_t n = 0;
	long until = now_ms() + TIMEOUT_MS;
	bool out_open = true, err_open = true;
	int st = -1;

	close(p->in);
	while ((out_open || err_open) && now_ms() < until) {
		struct pollfd pfd[2] = { { out_open ? p->out : -1, POLLIN, 0 },
					 { err_open ? p->err : -1, POLLIN, 0 } };
		char buf[4096];
		ssize_t r;

		if (poll(pfd, 2, 100) <= 0)
			continue;
		if (pfd[0].revents) {
			r = read(p->out, buf, sizeof(buf));
			if (r <= 0)
				out_open = false;
			else if (n + (size_t)r < len) {
				memcpy(out + n, buf, (size_t)r);
				n += (size_t)r;
			}
		}
		if (pfd[1].revents && read(p->err, buf, sizeof(buf)) <= 0)
			err_open = false;
	}
	out[n] = '\0';
	cr_assert(!out_open && !err_open, "the target did not end");
	cr_assert_eq(waitpid(p->pid, &st, 0), p->pid);
	close(p->out);
	close(p->err);
	return st;
}

/* What a run without the loader prints after its ready line, and how it ends. */
static int baseline(char *const argv[], char *out, size_t len)
{
	struct proc p;

	spawn(&p, argv, false);
	wait_ready(&p);
	return finish(&p, out, len);
}

static char *slurp(const char *path)
{
	static char bufs[4][65536];
	static int k;
	char *b = bufs[k++ % 4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	while ((n = read(fd, b + got, sizeof(bufs[0]) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	b[got] = '\0';
	return b;
}

/* /proc/PID/maps and the list of /proc/PID/task, as text. */
static void snapshot(pid_t pid, char *maps, size_t mlen, char *tasks, size_t tlen)
{
	char path[64], cmd[128];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	snprintf(maps, mlen, "%s", slurp(path));
	snprintf(cmd, sizeof(cmd), "ls /proc/%d/task | sort -n", pid);
	f = popen(cmd, "r");
	cr_assert(f);
	n = fread(tasks, 1, tlen - 1, f);
	tasks[n] = '\0';
	pclose(f);
}

static int listen_on(char *name, size_t len)
{
	static int k;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(name, len, "ukp-loader-test-%d-%d", (int)getpid(), k++);
	memcpy(sa.sun_path + 1, name, strlen(name));
	cr_assert(fd >= 0);
	cr_assert(!bind(fd, (struct sockaddr *)&sa,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))));
	cr_assert(!listen(fd, 1));
	return fd;
}

static int accept_within(int lfd)
{
	struct pollfd pfd = { lfd, POLLIN, 0 };

	cr_assert_eq(poll(&pfd, 1, TIMEOUT_MS), 1, "the stub never connected");
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

/* The stub's report: it ran in pid, as exe, read marker's value there,
 * with every signal blocked, on a block of its own. */
static pid_t check_report_line(int conn, pid_t pid, const char *exe, uint64_t marker,
				char *line, size_t len)
{
	char want[1024], path[64], real[512];
	unsigned long tid = 0, peek = 0;
	ssize_t n;
	char *s;

	cr_assert(read_line(conn, line, len), "no report: '%s'", line);
	cr_log_info("stub: %s", line);
	n = readlink(exe, real, sizeof(real) - 1);
	cr_assert(n > 0);
	real[n] = '\0';
	snprintf(want, sizeof(want), "ran pid=%d tid=", (int)pid);
	cr_assert(!strncmp(line, want, strlen(want)), "%s", line);
	tid = strtoul(line + strlen(want), NULL, 10);
	cr_assert(tid && tid != (unsigned long)pid, "%s", line);
	snprintf(path, sizeof(path), "/proc/%d/task/%lu", (int)pid, tid);
	cr_assert(!access(path, F_OK), "the stub's thread %lu is not a thread of %d", tid, (int)pid);
	snprintf(want, sizeof(want), " exe=%s peek=", real);
	s = strstr(line, want);
	cr_assert(s, "%s (exe %s)", line, real);
	peek = strtoul(s + strlen(want), &s, 16);
	cr_assert_eq(peek, 0x5eed1234abcdUL, "peek at %#lx: %lx", (unsigned long)marker, peek);
	/* every signal but SIGKILL and SIGSTOP */
	cr_assert(strstr(line, " sigblk=fffffffffffbfeff "), "%s", line);
	cr_assert(strstr(line, " block=ok"), "%s", line);
	return (pid_t)tid;
}

static pid_t check_report(int conn, pid_t pid, const char *exe, uint64_t marker)
{
	char line[1024];

	return check_report_line(conn, pid, exe, marker, line, sizeof(line));
}

/* Tell the stub to end and unload it; its area, stack and thread gone
 * from /proc (whatever else the target did meanwhile). */
static void stop_stub(struct ukp_loaded *l, int conn, pid_t tid)
{
	uintptr_t area = l->area, stack = l->stack;
	char path[64], want[64], *maps;

	long t0;

	cr_assert_eq(write(conn, "q", 1), 1);
	close(conn);
	t0 = now_us();
	cr_assert_eq(ukp_unload(l, TIMEOUT_MS), 0, "%s", l->err);
	cr_log_info("unload %ld us (the stub's end awaited)", now_us() - t0);
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)l->pid, (int)tid);
	cr_assert(access(path, F_OK), "the stub's thread %d is still there", (int)tid);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)l->pid);
	maps = slurp(path);
	snprintf(want, sizeof(want), "%lx-", (unsigned long)area);
	cr_assert(!strstr(maps, want), "the object's area %s is still mapped", want);
	snprintf(want, sizeof(want), "%lx-", (unsigned long)stack);
	cr_assert(!strstr(maps, want), "the stub's stack %s is still mapped", want);
}

/* The program's start-up done: its maps and threads (into maps0, 65536
 * bytes, and tasks0, 4096) the same for 200 ms (Go starts threads after
 * its ready line). */
static void settle(pid_t pid, char *maps0, char *tasks0)
{
	char *maps1 = malloc(65536), *tasks1 = malloc(4096);
	int r;

	snapshot(pid, maps0, 65536, tasks0, 4096);
	for (r = 0; r < 100; r++) {
		usleep(200 * 1000);
		snapshot(pid, maps1, 65536, tasks1, 4096);
		if (!strcmp(maps0, maps1) && !strcmp(tasks0, tasks1))
			break;
		snapshot(pid, maps0, 65536, tasks0, 4096);
	}
	free(maps1);
	free(tasks1);
}

/* Attach to a running argv, load, unload, rounds times; exact: the maps
 * and threads after each unload are exactly those before the first. */
static void attach_case(char *const argv[], int rounds, bool exact, void (*premise)(const struct proc *))
{
	char base[4096], out[4096], name[64], *maps0, *tasks0, *maps1, *tasks1;
	struct stub_params sp = { 0 };
	struct proc p;
	int st0, st, r;
	char prog[64];

	paths_init();
	snprintf(prog, sizeof(prog), "%s %.20s", strrchr(argv[0], '/') + 1, argv[1] ? argv[1] : "");
	st0 = baseline(argv, base, sizeof(base));
	spawn(&p, argv, false);
	wait_ready(&p);
	if (premise)
		premise(&p);
	maps0 = malloc(65536);
	maps1 = malloc(65536);
	tasks0 = malloc(4096);
	tasks1 = malloc(4096);
	if (exact)
		settle(p.pid, maps0, tasks0);
	else
		snapshot(p.pid, maps0, 65536, tasks0, 4096);
	for (r = 0; r < rounds; r++) {
		struct ukp_loaded l;
		char exe[64];
		int lfd = listen_on(name, sizeof(name)), conn, ret;
		pid_t tid;

		long t0, t1;

		snprintf(sp.sock, sizeof(sp.sock), "%s", name);
		sp.peek = p.marker;
		t0 = now_us();
		ret = ukp_load_attach(p.pid, path_of("ukp_agent_stub"), &sp, sizeof(sp), &l);
		cr_assert_eq(ret, 0, "%s", l.err);
		ukp_load_release(&l);
		t1 = now_us();
		conn = accept_within(lfd);
		close(lfd);
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p.pid);
		tid = check_report(conn, p.pid, exe, p.marker);
		cr_assert_eq(tid, l.tid);
		stop_stub(&l, conn, tid);
		cr_log_info("%s: load %ld us", prog, t1 - t0);
		if (exact) {
			snapshot(p.pid, maps1, 65536, tasks1, 4096);
			cr_assert_str_eq(maps1, maps0, "the maps changed (round %d)", r);
			cr_assert_str_eq(tasks1, tasks0, "the threads changed (round %d)", r);
		}
	}
	st = finish(&p, out, sizeof(out));
	cr_assert_str_eq(out, base, "the output changed: \"%s\", was \"%s\"", out, base);
	cr_assert_eq(st, st0, "the exit status changed: %#x, was %#x", st, st0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7, "%#x", st);
	free(maps0);
	free(maps1);
	free(tasks0);
	free(tasks1);
}

/* Launch argv stopped at its execve, load at its entry point, let it
 * run, unload once it is ready. */
static void launch_case(char *const argv[])
{
	char base[4096], out[4096], name[64], exe[64];
	struct stub_params sp = { 0 };
	struct ukp_loaded l;
	struct proc p;
	int st0, st, lfd, conn, ret;
	pid_t tid;

	paths_init();
	st0 = baseline(argv, base, sizeof(base));
	lfd = listen_on(name, sizeof(name));
	snprintf(sp.sock, sizeof(sp.sock), "%s", name);
	spawn(&p, argv, true);
	/* the marker's address is not known yet: the stub reads its block */
	ret = ukp_load_at_entry(p.pid, path_of("ukp_agent_stub"), &sp, sizeof(sp), &l);
	cr_assert_eq(ret, 0, "%s", l.err);
	/* the stub runs while the program is still held at its entry */
	conn = accept_within(lfd);
	close(lfd);
	{
		char line[1024];

		cr_assert(read_line(conn, line, sizeof(line)));
		cr_log_info("stub (at entry): %s", line);
		snprintf(exe, sizeof(exe), "ran pid=%d tid=", (int)p.pid);
		cr_assert(!strncmp(line, exe, strlen(exe)), "%s", line);
		cr_assert(strstr(line, " sigblk=fffffffffffbfeff "), "%s", line);
		cr_assert(strstr(line, " block=ok"), "%s", line);
		tid = (pid_t)strtol(line + strlen(exe), NULL, 10);
		cr_assert_eq(tid, l.tid);
	}
	ukp_load_release(&l);
	wait_ready(&p);
	stop_stub(&l, conn, tid);
	/* and loaded again into the running program, its marker read */
	lfd = listen_on(name, sizeof(name));
	snprintf(sp.sock, sizeof(sp.sock), "%s", name);
	sp.peek = p.marker;
	ret = ukp_load_attach(p.pid, path_of("ukp_agent_stub"), &sp, sizeof(sp), &l);
	cr_assert_eq(ret, 0, "%s", l.err);
	ukp_load_release(&l);
	conn = accept_within(lfd);
	close(lfd);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p.pid);
	tid = check_report(conn, p.pid, exe, p.marker);
	stop_stub(&l, conn, tid);
	st = finish(&p, out, sizeof(out));
	cr_assert_str_eq(out, base, "the output changed: \"%s\", was \"%s\"", out, base);
	cr_assert_eq(st, st0, "the exit status changed: %#x, was %#x", st, st0);
}

/* ------------------------------------------------------- premises */

/* Is a thread of pid (only that one, if only) waiting in the system
 * call nr (with the first argument arg, or any when arg < 0)? */
static bool thread_in(pid_t pid, pid_t only, long nr, long arg)
{
	char cmd[128], line[256];
	bool found = false;
	FILE *f;

	if (only)
		snprintf(cmd, sizeof(cmd), "cat /proc/%d/task/%d/syscall 2>/dev/null", (int)pid,
			 (int)only);
	else
		snprintf(cmd, sizeof(cmd), "cat /proc/%d/task/*/syscall 2>/dev/null", (int)pid);
	f = popen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		char *e;
		long n = strtol(line, &e, 10), a = (long)strtoul(e, NULL, 16);

		if (n == nr && (arg < 0 || a == arg))
			found = true;
	}
	pclose(f);
	return found;
}

static void wait_for(bool (*cond)(const struct proc *), const struct proc *p, const char *what)
{
	long until = now_ms() + TIMEOUT_MS;

	while (!cond(p)) {
		cr_assert(now_ms() < until, "never saw %s", what);
		usleep(2000);
	}
}

static bool malloc_held(const struct proc *p)
{
	/* a thread in write(2, ...) inside malloc_stats(), the main thread
	 * in futex (the main arena's lock) */
	return thread_in(p->pid, 0, SYS_write, 2) && thread_in(p->pid, p->pid, SYS_futex, -1);
}

static void premise_malloc(const struct proc *p)
{
	wait_for(malloc_held, p, "the malloc lock held and waited for");
}

static bool in_read(const struct proc *p)
{
	/* a thread other than main blocked in read(): in the atfork handler,
	 * or in the constructor */
	char cmd[160], line[256];
	bool found = false;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do [ ${t##*/} = %d ] || cat $t/syscall; done 2>/dev/null",
		 (int)p->pid, (int)p->pid);
	f = popen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (strtol(line, NULL, 10) == SYS_read)
			found = true;
	pclose(f);
	return found;
}

static void premise_blocked(const struct proc *p)
{
	wait_for(in_read, p, "a thread blocked in fork() or dlopen()");
}

/* ------------------------------------------------------- cases */

Test(loader, attach_threads_in_syscalls, .timeout = 120)
{
	char *argv[] = { NULL, "threads", NULL };

	paths_init();
	argv[0] = path_of("loadee");
	attach_case(argv, 3, true, NULL);
}

/* the thread the loader works in (the main thread) in poll() with a
 * timeout (restarted through restart_syscall) and in epoll_wait() (an
 * EINTR undone by the loader) */
Test(loader, attach_worker_in_poll, .timeout = 120)
{
	char *argv[] = { NULL, "threads", "poll", NULL };

	paths_init();
	argv[0] = path_of("loadee");
	attach_case(argv, 3, true, NULL);
}

Test(loader, attach_worker_in_epoll, .timeout = 120)
{
	char *argv[] = { NULL, "threads", "epoll", NULL };

	paths_init();
	argv[0] = path_of("loadee");
	attach_case(argv, 3, true, NULL);
}

Test(loader, attach_static, .timeout = 120)
{
	char *argv[] = { NULL, "threads", NULL };

	paths_init();
	argv[0] = path_of("loadee_static");
	attach_case(argv, 2, true, NULL);
}

Test(loader, attach_malloc_lock_held, .timeout = 120)
{
	char *argv[] = { NULL, "malloc", NULL };

	paths_init();
	argv[0] = path_of("loadee");
	attach_case(argv, 1, true, premise_malloc);
}

Test(loader, attach_static_malloc_lock_held, .timeout = 120)
{
	char *argv[] = { NULL, "malloc", NULL };

	paths_init();
	argv[0] = path_of("loadee_static");
	attach_case(argv, 1, true, premise_malloc);
}

Test(loader, attach_inside_fork, .timeout = 120)
{
	char *argv[] = { NULL, "fork", NULL };

	paths_init();
	argv[0] = path_of("loadee");
	attach_case(argv, 1, true, premise_blocked);
}

Test(loader, attach_inside_dlopen, .timeout = 120)
{
	char *argv[] = { NULL, "dlopen", NULL, NULL };

	paths_init();
	argv[0] = path_of("loadee");
	argv[2] = path_of("libukp_blockctor.so");
	attach_case(argv, 1, true, premise_blocked);
}

Test(loader, attach_while_forking, .timeout = 180)
{
	char *argv[] = { NULL, "forkloop", NULL };

	paths_init();
	argv[0] = path_of("loadee");
	attach_case(argv, 10, false, NULL);
}

Test(loader, attach_go, .timeout = 120)
{
	char *argv[] = { NULL, NULL };

	paths_init();
	argv[0] = path_of("loadee_go");
	if (access(argv[0], X_OK))
		cr_skip_test("no Go toolchain: loadee_go was not built");
	attach_case(argv, 2, true, NULL);
}

/* run(argv) on one of the loadees: "loadee" and "loadee_static" with
 * their threads, "loadee_go" (skipped without a Go toolchain). */
static void on_loadee(const char *name, void (*run)(char *const argv[]))
{
	char *argv[] = { NULL, NULL, NULL };
	bool go = !strcmp(name, "loadee_go");

	paths_init();
	argv[0] = path_of(name);
	argv[1] = go ? NULL : "threads";
	if (go && access(argv[0], X_OK))
		cr_skip_test("no Go toolchain: loadee_go was not built");
	run(argv);
}

Test(loader, launch_dynamic, .timeout = 120)
{
	on_loadee("loadee", launch_case);
}

Test(loader, launch_static, .timeout = 120)
{
	on_loadee("loadee_static", launch_case);
}

Test(loader, launch_go, .timeout = 120)
{
	on_loadee("loadee_go", launch_case);
}

/* Debian's python3.11: threads sleeping in time.sleep(), the main one
 * reading stdin; the marker a ctypes integer it prints the address of */
Test(loader, attach_python, .timeout = 120)
{
	char *argv[] = { "/usr/bin/python3.11", "-c",
			 "import ctypes, os, sys, threading, time\n"
			 "m = ctypes.c_uint64(0x5eed1234abcd)\n"
			 "stop = threading.Event()\n"
			 "def sleeper():\n"
			 "    while not stop.is_set():\n"
			 "        time.sleep(0.02)\n"
			 "ts = [threading.Thread(target=sleeper) for i in range(3)]\n"
			 "for t in ts: t.start()\n"
			 "print('ready pid=%d marker=%#x' % (os.getpid(), ctypes.addressof(m)), flush=True)\n"
			 "sys.stdin.read()\n"
			 "stop.set()\n"
			 "for t in ts: t.join()\n"
			 "print('done marker=%x' % m.value)\n"
			 "sys.exit(7)\n",
			 NULL };

	if (access(argv[0], X_OK))
		cr_skip_test("no %s", argv[0]);
	attach_case(argv, 2, true, NULL);
}

#if defined(__x86_64__)
#include <elf.h>
#include <Zydis/Zydis.h>

/* The program's entry point (AT_ENTRY of /proc/PID/auxv). */
static uint64_t entry_of(pid_t pid)
{
	char path[64];
	uint64_t av[2];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	while (read(fd, av, sizeof(av)) == (ssize_t)sizeof(av) && av[0] != AT_NULL)
		if (av[0] == AT_ENTRY) {
			close(fd);
			return av[1];
		}
	close(fd);
	cr_assert_fail("no AT_ENTRY in %s", path);
	return 0;
}

/* The lengths of STUB_INSNS instructions at addr in pid, as the stub
 * reports them, decoded here with the same library. */
static void insns_at(pid_t pid, uint64_t addr, char *out, size_t len)
{
	unsigned char code[STUB_INSNS * 15 + 15];
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	char path[64];
	size_t at = 0, n = 0;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, code, sizeof(code), (off_t)addr), (ssize_t)sizeof(code));
	close(fd);
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (i = 0; i < STUB_INSNS; i++) {
		cr_assert(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + at, 15, &in, ops)));
		n += (size_t)snprintf(out + n, len - n, "%s%u", i ? "," : "", in.length);
		at += in.length;
	}
}

/* The stub linked with libZydis, attached to argv: the loader maps
 * libZydis beside it and binds the two; the stub decodes the program's
 * first instructions (libZydis' stack protector reads the guard of the
 * thread pointer the loader gave it) as this process does; after the
 * unload the maps and threads are as before. */
static void zydis_case(char *const argv[])
{
	char base[4096], out[4096], name[64], exe[64], line[1024], want[512];
	char *maps0 = malloc(65536), *tasks0 = malloc(4096), *maps1 = malloc(65536),
	     *tasks1 = malloc(4096);
	struct stub_params sp = { 0 };
	struct ukp_loaded l;
	struct proc p;
	int st0, st, lfd, conn, ret;
	pid_t tid;

	paths_init();
	if (access(path_of("ukp_agent_stub_zydis"), R_OK))
		cr_skip_test("no libZydis: the stub was not built");
	st0 = baseline(argv, base, sizeof(base));
	spawn(&p, argv, false);
	wait_ready(&p);
	settle(p.pid, maps0, tasks0);
	lfd = listen_on(name, sizeof(name));
	snprintf(sp.sock, sizeof(sp.sock), "%s", name);
	sp.peek = p.marker;
	sp.code = entry_of(p.pid);
	ret = ukp_load_attach(p.pid, path_of("ukp_agent_stub_zydis"), &sp, sizeof(sp), &l);
	cr_assert_eq(ret, 0, "%s", l.err);
	ukp_load_release(&l);
	conn = accept_within(lfd);
	close(lfd);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p.pid);
	tid = check_report_line(conn, p.pid, exe, p.marker, line, sizeof(line));
	insns_at(p.pid, sp.code, want, sizeof(want));
	cr_assert(strstr(line, " insns=") && !strcmp(strstr(line, " insns=") + 7, want),
		  "the stub decoded '%s', this process '%s'", line, want);
	stop_stub(&l, conn, tid);
	snapshot(p.pid, maps1, 65536, tasks1, 4096);
	cr_assert_str_eq(maps1, maps0, "the maps changed");
	cr_assert_str_eq(tasks1, tasks0, "the threads changed");
	st = finish(&p, out, sizeof(out));
	cr_assert_str_eq(out, base, "the output changed: \"%s\", was \"%s\"", out, base);
	cr_assert_eq(st, st0);
	free(maps0);
	free(tasks0);
	free(maps1);
	free(tasks1);
}

Test(loader, zydis_beside_dynamic, .timeout = 120)
{
	on_loadee("loadee", zydis_case);
}

Test(loader, zydis_beside_static, .timeout = 120)
{
	on_loadee("loadee_static", zydis_case);
}

Test(loader, zydis_beside_go, .timeout = 120)
{
	on_loadee("loadee_go", zydis_case);
}
#endif

/* What is not a freestanding PIE (and the libraries it may need) is
 * refused with one line, before any stop. */
Test(loader, refuses_non_static_pie)
{
	struct ukp_loaded l;

	paths_init();
	cr_assert_eq(ukp_load_attach(getpid(), path_of("loadee"), NULL, 0, &l), -ENOEXEC);
	cr_assert(strstr(l.err, "loadee: has an interpreter: not a freestanding static PIE"), "%s", l.err);
	cr_assert_eq(ukp_load_attach(getpid(), "/nonexistent", NULL, 0, &l), -ENOEXEC);
	cr_assert(strstr(l.err, "/nonexistent: cannot be read: No such file or directory"), "%s", l.err);
	/* a shared library of the C library's world: its references name
	 * what only the C library defines, which is never loaded */
	cr_assert_eq(ukp_load_attach(getpid(), path_of("libukp_blockctor.so"), NULL, 0, &l),
		     -ENOEXEC);
	cr_assert(strstr(l.err, "libukp_blockctor.so: needs ") &&
		  strstr(l.err, ", which no object of the set defines (the C library is not "
			 "loaded: the loaded object must define and export it)"), "%s", l.err);
}

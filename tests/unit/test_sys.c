/* SPDX-License-Identifier: MIT */
/*
 * The library's system layer (src/base/sys.h, sys.c; doc/static_agent.md,
 * slice 1) against libc's own answers: /proc/self/maps read with read()
 * (an overlong line included), directories by getdents64, the real path
 * of a file, the library's raw-clone threads (signals blocked, joined,
 * stack gone), the sort that replaces qsort; and none of it touches
 * errno.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sort.h"
#include "base/sys.h"

#define MAXE 4096

struct ent {
	unsigned long start, end, offset, inode;
	char perms[5];
	char path[64]; /* the path's first bytes */
};

static struct ent ref[MAXE], ours[MAXE];
static char raw[1 << 20];

/* libc's reading of a snapshot of the maps: sscanf per line */
static size_t ref_parse(const char *text)
{
	size_t n = 0;

	for (const char *l = text; *l && n < MAXE;) {
		const char *nl = strchr(l, '\n');
		char line[8192] = "";
		int pos = 0;

		memcpy(line, l, nl ? (size_t)(nl - l) : strlen(l));
		cr_assert(sscanf(line, "%lx-%lx %4s %lx %*s %lu %n", &ref[n].start, &ref[n].end,
				 ref[n].perms, &ref[n].offset, &ref[n].inode, &pos) >= 5, "%s", line);
		snprintf(ref[n].path, sizeof(ref[n].path), "%s", pos ? line + pos : "");
		n++;
		l = nl ? nl + 1 : l + strlen(l);
	}
	return n;
}

static size_t read_all(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	size_t len = 0;
	ssize_t r;

	cr_assert(fd >= 0);
	while ((r = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = 0;
	return len;
}

static size_t ours_read(void)
{
	struct ukp_map_ent e;
	struct ukp_maps m;
	size_t n = 0;
	int got;

	cr_assert_eq(ukp_maps_open(&m), 0);
	while ((got = ukp_maps_next(&m, &e)) > 0 && n < MAXE) {
		ours[n].start = e.start;
		ours[n].end = e.end;
		ours[n].offset = e.offset;
		ours[n].inode = e.inode;
		memcpy(ours[n].perms, e.perms, 5);
		snprintf(ours[n].path, sizeof(ours[n].path), "%s", e.path);
		n++;
	}
	cr_assert_eq(got, 0);
	ukp_maps_close(&m);
	return n;
}

/* The two readings agree (the maps may not change between them: no
 * allocation in between). */
static void compare_maps(void)
{
	size_t nr, no;

	read_all("/proc/self/maps", raw, sizeof(raw));
	no = ours_read();
	nr = ref_parse(raw);
	cr_assert_eq(no, nr, "%zu entries, libc read %zu", no, nr);
	for (size_t i = 0; i < nr; i++) {
		cr_assert_eq(ours[i].start, ref[i].start);
		cr_assert_eq(ours[i].end, ref[i].end);
		cr_assert_eq(ours[i].offset, ref[i].offset);
		cr_assert_eq(ours[i].inode, ref[i].inode);
		cr_assert_str_eq(ours[i].perms, ref[i].perms);
		cr_assert_str_eq(ours[i].path, ref[i].path);
	}
}

/* a fresh directory for one test, whatever earlier runs left under /tmp
 * (a pid is reused soon, under qemu-user too) */
static void make_tmpdir(char *dir, size_t size, const char *prefix)
{
	snprintf(dir, size, "/tmp/%s_XXXXXX", prefix);
	cr_assert_not_null(mkdtemp(dir), "%s", strerror(errno));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

Test(sys, maps_as_libc_reads_them)
{
	uintptr_t code = (uintptr_t)compare_maps;
	bool found = false;
	char exe[PATH_MAX];
	ssize_t n;

	compare_maps();
	/* this function's mapping: executable, this file's */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert(n > 0);
	exe[n] = 0;
	for (size_t i = 0; i < MAXE && ours[i].end; i++)
		if (code >= ours[i].start && code < ours[i].end) {
			cr_assert_eq(ours[i].perms[2], 'x');
			cr_assert(!strncmp(exe, ours[i].path, strlen(ours[i].path)));
			found = true;
		}
	cr_assert(found);
}

/* A mapped file whose path makes its line longer than the reader's
 * buffer: the entry comes with its path cut, the next ones whole. */
Test(sys, maps_overlong_line)
{
	char dir[PATH_MAX], comp[201];
	struct ukp_map_ent e;
	struct ukp_maps m;
	bool seen = false;
	void *p;
	int fd, got, after = 0;

	memset(comp, 'd', 200);
	comp[200] = 0;
	make_tmpdir(dir, sizeof(dir), "ukp_sys");
	while (strlen(dir) + 201 < 4090) {
		strcat(dir, "/");
		strcat(dir, comp);
		cr_assert_eq(mkdir(dir, 0700), 0, "%s", strerror(errno));
	}
	strcat(dir, "/f");
	fd = open(dir, O_RDWR | O_CREAT, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert(p != MAP_FAILED);
	close(fd);

	cr_assert_eq(ukp_maps_open(&m), 0);
	while ((got = ukp_maps_next(&m, &e)) > 0) {
		if (seen)
			after++;
		if (e.start == (uintptr_t)p) {
			cr_assert_eq(e.end, (uintptr_t)p + 4096);
			cr_assert_str_eq(e.perms, "r--s");
			cr_assert(!strncmp(e.path, "/tmp/ukp_sys_", 13));
			cr_assert(strlen(e.path) < strlen(dir), "the line was longer than the buffer");
			seen = true;
		}
		/* every entry parsed: a line's rest is never taken for one */
		cr_assert(e.end > e.start);
	}
	cr_assert_eq(got, 0);
	ukp_maps_close(&m);
	cr_assert(seen);
	cr_assert(after > 0, "the entries after the long one");
	/* and the whole list still agrees with libc's reading */
	compare_maps();
	munmap(p, 4096);
	unlink(dir);
	for (char *slash; (slash = strrchr(dir, '/')) && slash != dir + 4;) {
		*slash = 0;
		rmdir(dir);
	}
}

Test(sys, dir_entries_as_readdir)
{
	char dir[64], path[128];
	struct ukp_dir d;
	const char *name;
	size_t n = 0, nref = 0;
	struct dirent *de;
	DIR *ref_d;
	static char seen[400];

	make_tmpdir(dir, sizeof(dir), "ukp_sysdir");
	/* more entries than one getdents64 buffer holds */
	for (int i = 0; i < 400; i++) {
		snprintf(path, sizeof(path), "%s/entry_with_a_long_name_%03d", dir, i);
		close(open(path, O_CREAT | O_WRONLY, 0600));
	}
	cr_assert_eq(ukp_dir_open(&d, dir), 0);
	while ((name = ukp_dir_next(&d))) {
		int i;

		cr_assert_eq(sscanf(name, "entry_with_a_long_name_%d", &i), 1, "%s", name);
		cr_assert(!seen[i]++, "%s twice", name);
		n++;
	}
	ukp_dir_close(&d);
	ref_d = opendir(dir);
	while ((de = readdir(ref_d)))
		nref += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(ref_d);
	cr_assert_eq(n, 400);
	cr_assert_eq(nref, n);
	cr_assert_eq(ukp_dir_open(&d, "/nonexistent_dir"), -ENOENT);
	rm_tree(dir);
}

Test(sys, realpath_as_libc)
{
	char dir[64], a[PATH_MAX], b[PATH_MAX], ours_p[PATH_MAX];
	const char *cases[8];
	char *dup;

	make_tmpdir(dir, sizeof(dir), "ukp_sysrp");
	snprintf(a, sizeof(a), "%s/sub", dir);
	cr_assert_eq(mkdir(a, 0700), 0);
	snprintf(a, sizeof(a), "%s/sub/file", dir);
	close(open(a, O_CREAT | O_WRONLY, 0600));
	snprintf(b, sizeof(b), "%s/link1", dir);
	cr_assert_eq(symlink("sub/file", b), 0);
	snprintf(b, sizeof(b), "%s/link2", dir);
	cr_assert_eq(symlink("link1", b), 0);
	snprintf(b, sizeof(b), "%s/dirlink", dir);
	cr_assert_eq(symlink("sub", b), 0);
	cr_assert_eq(chdir(dir), 0);

	cases[0] = "link2";
	cases[1] = "./sub/../link1";
	cases[2] = "dirlink/file";
	cases[3] = "/proc/self/exe";
	cases[4] = "dirlink";
	cases[5] = "/usr/lib/x86_64-linux-gnu/../../bin/sh";
	cases[6] = ".";
	for (int i = 0; i < 7; i++) {
		char *want = realpath(cases[i], NULL);

		if (!want)
			continue; /* not on this machine */
		cr_assert_eq(ukp_sys_realpath(cases[i], ours_p, sizeof(ours_p)), 0, "%s", cases[i]);
		cr_assert_str_eq(ours_p, want, "%s", cases[i]);
		dup = ukp_realpath_dup(cases[i]);
		cr_assert_str_eq(dup, want);
		free(dup);
		free(want);
	}
	cr_assert_eq(ukp_sys_realpath("sub/missing", ours_p, sizeof(ours_p)), -ENOENT);
	cr_assert_eq(ukp_sys_realpath("link2/x", ours_p, sizeof(ours_p)), -ENOTDIR);
	cr_assert_eq(ukp_sys_realpath("link2", ours_p, 8), -ENAMETOOLONG);
	cr_assert_null(ukp_realpath_dup("sub/missing"));
	cr_assert_eq(chdir("/"), 0);
	rm_tree(dir);
}

Test(sys, errno_untouched)
{
	void *p;
	char buf[8];

	errno = 4242;
	cr_assert_eq(ukp_sys_open("/nonexistent/file", O_RDONLY), -ENOENT);
	cr_assert_eq(ukp_sys_read(-1, buf, 1), -EBADF);
	cr_assert_eq(ukp_sys_close(-1), -EBADF);
	cr_assert_eq(ukp_sys_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0, &p), -EBADF);
	cr_assert_eq(ukp_sys_realpath("/nonexistent/file", buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(errno, 4242);
}

Test(sys, mmap_mprotect_munmap)
{
	unsigned char vec;
	char *p = NULL;

	cr_assert_eq(ukp_sys_mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0, (void **)&p), 0);
	p[0] = 1;
	p[8191] = 2;
	cr_assert_eq(ukp_sys_mprotect(p, 4096, PROT_READ), 0);
	cr_assert_eq(p[0], 1);
	cr_assert_eq(ukp_sys_munmap(p, 8192), 0);
	cr_assert_eq(mincore(p, 4096, &vec), -1);
	cr_assert_eq(errno, ENOMEM);
}

/* the raw thread: no libc, no TLS; what it saw goes through shared memory */
struct tshared {
	_Atomic uint32_t started, go;
	uint64_t mask;
	int tid;
};

#if defined(__clang__)
#define RAW_THREAD __attribute__((no_sanitize("address", "undefined"), noinline))
#else
#define RAW_THREAD __attribute__((no_sanitize_address, no_sanitize_undefined, noinline))
#endif

RAW_THREAD static int raw_thread(void *arg)
{
	struct tshared *s = arg;

	arch_syscall4(__NR_rt_sigprocmask, SIG_BLOCK, 0, (long)&s->mask, 8);
	s->tid = (int)arch_syscall3(__NR_gettid, 0, 0, 0);
	atomic_store(&s->started, 1);
	ukp_sys_futex_wake((uint32_t *)&s->started, 1);
	while (!atomic_load(&s->go))
		ukp_sys_futex_wait((uint32_t *)&s->go, 0, NULL);
	return 0;
}

static int count_tasks(void)
{
	struct ukp_dir d;
	int n = 0;

	cr_assert_eq(ukp_dir_open(&d, "/proc/self/task"), 0);
	while (ukp_dir_next(&d))
		n++;
	ukp_dir_close(&d);
	return n;
}

Test(sys, raw_thread_started_blocked_joined)
{
	static struct tshared s;
	struct ukp_sys_thread t;
	char path[64];
	int before = count_tasks();

	cr_assert_eq(ukp_sys_thread_start(&t, 64 * 1024, raw_thread, &s), 0);
	while (!atomic_load(&s.started))
		ukp_sys_futex_wait((uint32_t *)&s.started, 0, NULL);
	cr_assert_eq(s.tid, t.tid);
	cr_assert_eq(count_tasks(), before + 1);
	snprintf(path, sizeof(path), "/proc/self/task/%d", t.tid);
	cr_assert_eq(access(path, F_OK), 0, "a thread of this process");
	/* every signal a thread may block here (the kernel keeps SIGKILL and
	 * SIGSTOP, qemu-user its own two real-time signals) */
	{
		uint64_t all = ~0ULL, old, blockable;

		arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
		arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&old, (long)&blockable, 8);
		cr_assert_eq(s.mask, blockable, "mask %llx, blockable %llx",
			     (unsigned long long)s.mask, (unsigned long long)blockable);
		cr_assert(blockable & (1ULL << (SIGTERM - 1)));
	}
	atomic_store(&s.go, 1);
	ukp_sys_futex_wake((uint32_t *)&s.go, 1);
	ukp_sys_thread_join(&t);
	cr_assert_eq(atomic_load(&t.ctid), 0);
	cr_assert_null(t.stack);
	/* ctid is cleared when the thread leaves its memory, a little before
	 * the kernel (or qemu-user's host thread) removes the task: wait for
	 * that, bounded */
	{
		int n, tries = 0;

		while ((n = count_tasks()) != before && tries++ < 2000)
			usleep(1000);
		cr_assert_eq(n, before, "nothing left of the thread (%d tasks, %d before)", n,
			     before);
	}
}

Test(sys, thread_stack_unmapped)
{
	static struct tshared s;
	struct ukp_sys_thread t;
	unsigned char vec;
	void *stack;

	atomic_store(&s.go, 1);
	cr_assert_eq(ukp_sys_thread_start(&t, 16 * 1024, raw_thread, &s), 0);
	stack = t.stack;
	cr_assert_eq(mincore(stack, 4096, &vec), 0);
	ukp_sys_thread_join(&t);
	cr_assert_eq(mincore(stack, 4096, &vec), -1);
	cr_assert_eq(errno, ENOMEM);
}

struct rec {
	int key, seq;
	char pad[300]; /* larger than the insertion sort's swap buffer */
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

static int rec_cmp_r(const void *a, const void *b, void *dir)
{
	return *(int *)dir * rec_cmp(a, b);
}

Test(sys, sort_stable_as_qsort)
{
	static struct rec v[5000], w[5000];
	int down = -1;

	srand(28);
	for (int n = 0; n <= 5000; n = n ? n * 3 : 1) {
		for (int i = 0; i < n; i++) {
			v[i].key = rand() % 97;
			v[i].seq = i;
			memset(v[i].pad, i & 0xff, sizeof(v[i].pad));
		}
		memcpy(w, v, sizeof(v[0]) * (size_t)n);
		ukp_sort(v, (size_t)n, sizeof(v[0]), rec_cmp);
		qsort(w, (size_t)n, sizeof(w[0]), rec_cmp);
		for (int i = 0; i < n; i++) {
			cr_assert_eq(v[i].key, w[i].key);
			if (i)
				cr_assert(v[i - 1].key < v[i].key ||
					  (v[i - 1].key == v[i].key && v[i - 1].seq < v[i].seq),
					  "stable at %d", i);
			cr_assert_eq((unsigned char)v[i].pad[299], v[i].seq & 0xff);
		}
		ukp_sort_r(v, (size_t)n, sizeof(v[0]), rec_cmp_r, &down);
		for (int i = 1; i < n; i++)
			cr_assert(v[i - 1].key >= v[i].key);
	}
}

/* Elements the size of a pointer (tables of pointers: copied without a
 * call) and small ones (insertion by holding one aside), every length
 * around the insertion runs: sorted and stable, as the large ones. */
struct pair {
	int key, seq;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

static int pairp_cmp(const void *a, const void *b)
{
	return pair_cmp(*(const struct pair *const *)a, *(const struct pair *const *)b);
}

Test(sys, sort_small_elements_stable)
{
	static struct pair v[3000];
	static const struct pair *p[3000];

	cr_assert_eq(sizeof(struct pair), sizeof(void *));
	srand(31);
	for (int n = 0; n <= 3000; n = n < 40 ? n + 1 : n * 2) {
		for (int i = 0; i < n; i++) {
			v[i] = (struct pair){ rand() % 13, i };
			p[i] = &v[i];
		}
		ukp_sort(p, (size_t)n, sizeof(p[0]), pairp_cmp);
		for (int i = 1; i < n; i++)
			cr_assert(p[i - 1]->key < p[i]->key ||
				  (p[i - 1]->key == p[i]->key && p[i - 1]->seq < p[i]->seq),
				  "n %d: pointers stable at %d", n, i);
		ukp_sort(v, (size_t)n, sizeof(v[0]), pair_cmp);
		for (int i = 1; i < n; i++)
			cr_assert(v[i - 1].key < v[i].key ||
				  (v[i - 1].key == v[i].key && v[i - 1].seq < v[i].seq),
				  "n %d: stable at %d", n, i);
	}
}

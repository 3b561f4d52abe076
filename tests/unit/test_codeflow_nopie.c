// SPDX-License-Identifier: MIT
/*
 * test_codeflow_nopie.c - jump optimization in a non-PIE executable
 * (this test is linked -no-pie: ET_EXEC, loaded at its link address),
 * where code addresses are literals that need no relocation
 * (code_refs.c, literal_refs): the targets of codeflow_nopie.S.
 *
 * Proves: the index of jump targets and the literals built in one pass
 * (an executable's code decoded once for both) are those of two passes,
 * here and in CPython (with libc and libsqlite3 alongside); the literal
 * index holds the code addresses of data words (8
 * bytes at any 4-byte aligned address) and of immediates; a tail call
 * through a pointer (CPython's _Py_Dealloc) is accepted, and optimized
 * for real, with every hit counted; a region whose inside address is
 * held by data or an immediate, and a pointer jump in a function whose
 * label is stored in data, are refused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "flow/code_refs.h"
#include "flow/codeflow.h"
#include "codeflow_index_check.h"
#include "symbols/eh_frame.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "ukprobes.h"

extern char ukt_np_dealloc[], ukt_np_taken_data[], ukt_np_taken_data4[], ukt_np_taken_imm[],
	ukt_np_labels[], ukt_np_plain[], ukt_np_materialize[], ukt_np_not_label[];

static void np_init(void)
{
	cr_assert_eq(ukp_init(), 0);
}

TestSuite(nopie, .init = np_init);

/* The check on the function's first len bytes. */
static int check_entry(const void *fn, size_t len, const char **why)
{
	struct ukp_symres sym;
	int ret;

	cr_assert_eq(ukp_lock_for_show(), 0);
	ret = ukp_sym_lookup_addr((uintptr_t)fn, &sym);
	cr_assert_eq(ret, 0, "no symbol at %p", fn);
	ret = ukp_codeflow_check(&sym, (uintptr_t)fn, len, why);
	ukp_unlock_for_show();
	return ret;
}

#define expect_verdict(fn, len, want, why_part)                                          \
	do {                                                                             \
		const char *why_ = NULL;                                                 \
		int ret_ = check_entry((fn), (len), &why_);                              \
		cr_expect_eq(ret_, (want), "%s: %d (%s), expected %d", #fn, ret_,        \
			     why_ ? why_ : "-", (want));                                     \
		if ((want))                                                              \
			cr_expect(why_ && strstr(why_, (why_part)),                      \
				  "%s: why \"%s\" lacks \"%s\"", #fn, why_ ? why_ : "-", \
				  (why_part));                                           \
	} while (0)

Test(nopie, is_an_executable)
{
	/* the ELF header at the start of the first segment */
	cr_assert_eq(((const ElfW(Ehdr) *)0x400000)->e_type, ET_EXEC,
		     "the test must be linked -no-pie");
}

Test(nopie, literals_of_data_and_code)
{
	const struct ukp_object *obj;
	struct ukp_eh_frame eh = { 0 };
	uintptr_t *v = NULL, want[3] = { (uintptr_t)ukt_np_taken_data + 2,
					 (uintptr_t)ukt_np_taken_data4 + 2,
					 (uintptr_t)ukt_np_taken_imm + 2 };
	size_t n = 0, i, k;

	cr_assert_eq(ukp_lock_for_show(), 0);
	obj = ukp_object_of((uintptr_t)ukt_np_plain);
	cr_assert_not_null(obj);
	ukp_eh_frame_load(obj, &eh);
	cr_expect_eq(ukp_code_refs_load(obj, eh.segs, eh.nsegs, NULL, 0, NULL,
					 UKP_REFS_RELOCS | UKP_REFS_LITERALS, &v, &n), 0);
	for (k = 0; k < 3; k++) {
		bool found = false;

		for (i = 0; i < n; i++)
			found |= v[i] == want[k];
		cr_expect(found, "%#lx is not among the %zu code addresses", (unsigned long)want[k],
			  n);
	}
	for (i = 1; i < n; i++)
		cr_expect_lt(v[i - 1], v[i], "sorted, unique");
	free(v);
	ukp_eh_frame_free(&eh);
	ukp_unlock_for_show();
}

Test(nopie, index_one_pass_is_two_passes)
{
	const struct ukp_object *obj = ukp_object_of((uintptr_t)ukt_np_plain);
	struct ukp_codeflow_index one;
	char msg[256];

	cr_assert_not_null(obj);
	cr_expect_eq(ukt_index_same(obj, &one, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(one.refs_err, 0);
	cr_expect(one.nranges > 0 && one.nalone < one.nranges,
		  "one pass decoded %zu of %zu ranges alone", one.nalone, one.nranges);
}

/* The same in CPython's executable (when installed), libc and libsqlite3;
 * and the same through the cache (flow_cache.h), its entries damaged, and
 * not used while a byte of the object's code is changed in memory; and
 * a cache directory kept to its bound. */
Test(nopie, index_one_pass_is_two_passes_cpython)
{
	static const char python[] = "/usr/bin/python3.11";
	const char *preload = getenv("UKT_INDEX_PRELOAD");
	char out[8192] = "", *line, *save = NULL, cache[] = "/tmp/ukt-flowcache-XXXXXX", rm[64];
	size_t len = 0, same = 0, cached = 0, bounded = 0;
	int fds[2], status;
	ssize_t r;
	pid_t pid;

	cr_assert_not_null(preload, "UKT_INDEX_PRELOAD unset");
	if (access(python, X_OK))
		cr_skip_test("no %s", python);
	cr_assert_not_null(mkdtemp(cache));
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		setenv("UKT_INDEX_CACHE", cache, 1);
		setenv("LD_PRELOAD", preload, 1);
		setenv("UKT_INDEX_SYMS", "Py_BytesMain,gnu_get_libc_version,sqlite3_open", 1);
		setenv("UKT_INDEX_LOAD", "libsqlite3.so.0", 1);
		execl(python, python, "-c", "pass", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (len + 1 < sizeof(out) && (r = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)r;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	snprintf(rm, sizeof(rm), "rm -rf %s", cache);
	cr_expect_eq(system(rm), 0);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t ranges, alone, splits;
		const char *p = strstr(line, "): "), *q = strstr(line, "), ");

		if (!strncmp(line, "cache: ", 7)) {
			cached += strstr(line, "damages: the same") &&
				  strstr(line, "a text byte written: not used; put back: read") &&
				  strstr(line, "all compared: read");
			continue;
		}
		if (!strncmp(line, "bounded: ", 9)) {
			bounded += !strcmp(line, "bounded: 3 stored, 2 kept: bounded");
			continue;
		}
		if (!strstr(line, "the same") || !p || sscanf(p, "): %zu ranges (%zu", &ranges,
							      &alone) != 2)
			continue;
		same++;
		/* the executable's ranges are decoded with its literals */
		if (strstr(line, "(Py_BytesMain)"))
			cr_expect(ranges > 1000 && alone < ranges / 100, "%s", line);
		/* CPython's 5 MB of code, and the index's ranges of the
		 * libraries, shared with the helper: found the same */
		while (q && strstr(q + 3, "), "))
			q = strstr(q + 3, "), ");
		cr_expect(q && sscanf(q, "), %zu scans split", &splits) == 1 && splits >= 2, "%s",
			  line);
	}
	cr_expect_eq(same, 3, "%s", out);
	cr_expect_eq(cached, 3, "%s", out);
	cr_expect_eq(bounded, 1, "%s", out);
}

Test(nopie, pointer_tail_call_accepted)
{
	expect_verdict(ukt_np_dealloc, 7, 0, "");
	expect_verdict(ukt_np_plain, 5, 0, "");
}

Test(nopie, literal_inside_region_refused)
{
	expect_verdict(ukt_np_taken_data, 5, -EBUSY, "is taken");
	expect_verdict(ukt_np_taken_data4, 5, -EBUSY, "is taken");
	expect_verdict(ukt_np_taken_imm, 5, -EBUSY, "is taken");
	/* the immediate's function itself is fine */
	expect_verdict(ukt_np_materialize, 5, 0, "");
}

Test(nopie, label_in_data_refuses_pointer_jumps)
{
	expect_verdict(ukt_np_labels, 5, -EOPNOTSUPP, "address of its own code");
	/* a word that points between the bytes of one instruction is no
	 * label (strings do: "sIO\0\0\0\0\0") */
	expect_verdict(ukt_np_not_label, 5, 0, "");
}

/* ---- for real: the _Py_Dealloc shape, optimized, every hit counted ---- */

struct np_obj;
struct np_type {
	char pad[0x30];
	void (*dealloc)(struct np_obj *);
};
struct np_obj {
	long refcnt;
	const struct np_type *type;
};

static unsigned long deallocs;

static void count_dealloc(struct np_obj *o)
{
	deallocs++;
	o->refcnt = 0;
}

static unsigned long hits;

static int count_hit(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	hits++;
	return 0;
}

Test(nopie, pointer_tail_call_optimized_and_counted)
{
	static const struct np_type type = { .dealloc = count_dealloc };
	struct np_obj obj = { .refcnt = 1, .type = &type };
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_np_dealloc, .pre_handler = count_hit };
	void (*dealloc)(struct np_obj *) = (void (*)(struct np_obj *))(uintptr_t)ukt_np_dealloc;
	const char *why = NULL;
	int i;

	cr_assert_eq(ukprobes_optimizable(ukt_np_dealloc, &why), UKPROBES_OPT_JUMP, "%s",
		     why ? why : "-");
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp), "not [OPTIMIZED]");
	for (i = 0; i < 1000; i++) {
		obj.refcnt = 1;
		dealloc(&obj);
	}
	cr_expect_eq(hits, 1000);
	cr_expect_eq(deallocs, 1000);
	cr_expect_eq(obj.refcnt, 0);
	unregister_kprobe(&kp);
}

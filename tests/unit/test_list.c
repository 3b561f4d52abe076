/* SPDX-License-Identifier: MIT */
/*
 * The debugfs analogs: kprobes_show_list and kprobes_show_blacklist
 * formats (kernel-behaviour.md §8).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <dlfcn.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ukprobes.h"
#include "ukp_test.h"

UKP_TARGET int list_target(int v)
{
	return v + 1;
}

UKP_TARGET int list_nokprobe(int v)
{
	return v + 2;
}
NOKPROBE_SYMBOL(list_nokprobe);

static char *capture(int (*show)(FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(show(f), 0);
	fclose(f);
	return buf;
}

static void expect_match(const char *text, const char *pattern)
{
	regex_t re;

	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0, "%s", pattern);
	cr_expect_eq(regexec(&re, text, 0, NULL, 0), 0, "no line matches /%s/ in:\n%s", pattern,
		     text);
	regfree(&re);
}

Test(list, empty_when_nothing_registered)
{
	char *s = capture(kprobes_show_list);

	cr_expect_str_eq(s, "");
	free(s);
}

Test(list, main_program_and_library_lines)
{
	struct kprobe a = { .symbol_name = "list_target" };
	struct kprobe b = { .symbol_name = "libz.so.1:crc32", .offset = 0 };
	char *s, line[128];

	(void)zlibVersion();
	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	s = capture(kprobes_show_list);
	/* main program: two-space separators, a " " module field, 4 trailing spaces */
	snprintf(line, sizeof(line), "^%016lx  k  list_target\\+0x0    $", (unsigned long)a.addr);
	expect_match(s, line);
	snprintf(line, sizeof(line), "^%016lx  k  crc32\\+0x[0-9a-f]+  libz\\.so\\.1 $",
		 (unsigned long)b.addr);
	expect_match(s, line);
	free(s);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
}

Test(list, tags_and_aggregate_children)
{
	struct kprobe a = { .symbol_name = "list_target" };
	struct kprobe b = { .symbol_name = "list_target" };
	char *s;
	int lines = 0;

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_assert_eq(disable_kprobe(&a), 0);
	s = capture(kprobes_show_list);
	for (char *p = s; *p; p++)
		lines += *p == '\n';
	cr_expect_eq(lines, 2, "one line per aggregate child:\n%s", s);
	/* newest child first, then the disabled one */
	expect_match(s, "^[0-9a-f]{16}  k  list_target\\+0x0    \n[0-9a-f]{16}  k  list_target\\+0x0    \\[DISABLED\\]$");
	free(s);
	/* the global knob does not add tags */
	cr_assert_eq(kprobes_set_enabled(false), 0);
	s = capture(kprobes_show_list);
	expect_match(s, "^[0-9a-f]{16}  k  list_target\\+0x0    $");
	free(s);
	cr_assert_eq(kprobes_set_enabled(true), 0);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
	s = capture(kprobes_show_list);
	cr_expect_str_eq(s, "");
	free(s);
}

Test(list, blacklist_format_and_entries)
{
	struct kprobe kp = { .symbol_name = "list_target" };
	char *s, pat[160];

	/* the library starts on first use */
	cr_assert_eq(register_kprobe(&kp), 0);
	s = capture(kprobes_show_blacklist);
	expect_match(s, "^0x[0-9a-f]{16}-0x[0-9a-f]{16}\t[^\n]+$");
	expect_match(s, "\tukprobes_text$");
#if defined(__x86_64__)
	/* glibc's signal restorer (AArch64 has none: the vDSO's is used) */
	expect_match(s, "\t__restore_rt$");
#endif
	snprintf(pat, sizeof(pat), "^0x%016lx-0x[0-9a-f]{16}\tlist_nokprobe$",
		 (unsigned long)list_nokprobe);
	expect_match(s, pat);
	free(s);
	unregister_kprobe(&kp);
}

Test(list, null_stream_is_einval)
{
	cr_expect_lt(kprobes_show_list(NULL), 0);
	cr_expect_lt(kprobes_show_blacklist(NULL), 0);
}

static int nop_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	return 0;
}

static void *thread_fn(void *arg)
{
	return arg;
}

/* glibc runs these with every signal blocked (thread start and exit, the
 * posix_spawn child): a breakpoint there would be a fatal SIGTRAP. */
Test(list, glibc_functions_run_with_signals_blocked_are_refused)
{
	static const char *const names[] = { "libc.so.6:__ctype_init", "libc.so.6:_setjmp",
					     "libc.so.6:madvise", "libc.so.6:execve" };
	pthread_t t;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct kprobe kp = { .symbol_name = names[i], .pre_handler = nop_pre };

		cr_expect_eq(register_kprobe(&kp), -EINVAL, "%s", names[i]);
	}
	cr_assert_eq(pthread_create(&t, NULL, thread_fn, NULL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_expect_eq(system("true"), 0);
}

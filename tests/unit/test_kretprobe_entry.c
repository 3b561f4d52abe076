// SPDX-License-Identifier: MIT
/*
 * test_kretprobe_entry.c - register_kretprobe() refuses function entries
 * that calls do not reach (-EINVAL, as the kernel refuses a kretprobe
 * that is not on a function entry), and keeps accepting the others:
 *  - the ELF entry point: the program's _start (the kernel enters it with
 *    argc on top of the stack), and the entry of a shared object;
 *  - GCC's cold parts (ukt_flow_split_back.cold, compiled at -O2 in
 *    codeflow_compiled.c);
 *  - a FUNC symbol whose start the unwind table shows after a push, and
 *    an outermost frame (krp_entry_targets.S);
 * while a kprobe on each of them still registers. ukprobes_kretprobe_check
 * gives the same answers without registering anything.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "symbols/symbols.h"
#include "ukp_test.h"

extern char ukt_krp_pushed_outer[], ukt_krp_after_push[], ukt_krp_outermost[],
	ukt_krp_nocfi[];
int ukt_krp_fall_outer(int v);
int ukt_krp_fall_inner(int v);
int ukt_flow_split_back(const int *p, int n);

static int ret_calls;
static int last_ret;
static char last_warn[256];

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	ret_calls++;
	last_ret = (int)regs_return_value(regs);
	return 0;
}

static int pre_nop(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	return 0;
}

static int keep_warning(enum ukprobes_print_level level, const char *fmt, va_list ap)
{
	if (level == UKPROBES_WARN)
		vsnprintf(last_warn, sizeof(last_warn), fmt, ap);
	return 0;
}

static void entry_init(void)
{
	cr_assert_eq(ukp_init(), 0);
	ukprobes_set_print(keep_warning);
}

TestSuite(kretprobe_entry, .init = entry_init);

/* A kretprobe at sym (or addr) is refused with -EINVAL and the reason
 * names what (ukprobes_kretprobe_check says so first, registering
 * nothing); the struct is left as it was; a kprobe there registers. */
static void expect_refused(const char *sym, void *addr, const char *reason)
{
	struct kretprobe r = { .handler = count_ret };
	struct kprobe k = { .pre_handler = pre_nop };
	const char *why = NULL;

	last_warn[0] = '\0';
	r.kp.symbol_name = sym;
	r.kp.addr = addr;
	cr_expect_eq(ukprobes_kretprobe_check(&r.kp, &why), -EINVAL, "check of %s",
		     sym ? sym : "an address");
	cr_expect(why && strstr(why, reason), "check's reason for %s: want \"%s\", got \"%s\"",
		  sym ? sym : "an address", reason, why ? why : "(none)");
	cr_expect_eq(r.kp.addr, addr, "the check leaves addr alone");
	cr_expect_eq(register_kretprobe(&r), -EINVAL, "kretprobe on %s", sym ? sym : "an address");
	cr_expect(strstr(last_warn, reason) != NULL, "reason for %s: want \"%s\", got \"%s\"",
		  sym ? sym : "an address", reason, last_warn);
	cr_expect_eq(r.kp.addr, addr, "addr left alone");
	cr_expect_eq(r.kp.flags, 0);
	cr_expect_null(r.rph);

	k.symbol_name = sym;
	k.addr = addr;
	cr_expect_eq(register_kprobe(&k), 0, "a kprobe on %s is fine", sym ? sym : "an address");
	unregister_kprobe(&k);
}

Test(kretprobe_entry, program_entry_point)
{
	expect_refused("_start", NULL, "ELF entry point");
	expect_refused(NULL, (void *)getauxval(AT_ENTRY), "ELF entry point");
}

Test(kretprobe_entry, shared_object_entry_point)
{
	const char *path = getenv("UKT_KRP_ENTRY_SO");
	struct kretprobe r = { .handler = count_ret };
	int (*other)(int);
	void *h;

	cr_assert(path, "UKT_KRP_ENTRY_SO (tests/meson.build)");
	h = dlopen(path, RTLD_NOW);
	cr_assert(h, "%s", dlerror());
	expect_refused("libukpkrpentry.so:ukt_so_entry", NULL, "ELF entry point");
	/* its ordinary functions are not affected */
	other = (int (*)(int))dlsym(h, "ukt_so_other");
	cr_assert(other);
	r.kp.symbol_name = "libukpkrpentry.so:ukt_so_other";
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(other(7), 21);
	cr_expect_eq(ret_calls, 1);
	cr_expect_eq(last_ret, 21);
	unregister_kretprobe(&r);
}

Test(kretprobe_entry, gcc_cold_part)
{
	struct kretprobe r = { .handler = count_ret };
	int v[] = { 1, -2, 3, -4 };
	uintptr_t cold;

	cr_assert_eq(ukp_lock_for_show(), 0);
	if (ukp_sym_lookup_name("ukt_flow_split_back.cold", &cold)) {
		ukp_unlock_for_show();
		cr_skip_test("the compiler made no .cold part (not GCC)");
	}
	ukp_unlock_for_show();
	expect_refused("ukt_flow_split_back.cold", NULL, ".cold part");
	/* the hot part is an ordinary function: its return is seen once
	 * per call, also when the call went through the cold part */
	r.kp.symbol_name = "ukt_flow_split_back";
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(ukt_flow_split_back(v, 4), -2);
	cr_expect_eq(ret_calls, 1);
	cr_expect_eq(last_ret, -2);
	unregister_kretprobe(&r);
}

Test(kretprobe_entry, unwind_table_return_address_not_on_top)
{
	expect_refused("ukt_krp_after_push", NULL, "return address is not on top of the stack");
	expect_refused(NULL, ukt_krp_after_push, "return address is not on top of the stack");
	expect_refused("ukt_krp_outermost", NULL, "outermost frame");
}

Test(kretprobe_entry, entries_calls_reach)
{
	struct kretprobe outer = { .handler = count_ret }, inner = { .handler = count_ret },
			 nocfi = { .handler = count_ret };
	int (*volatile call_outer)(int) = ukt_krp_fall_outer;
	int (*volatile call_inner)(int) = ukt_krp_fall_inner;

	/* a function that pushes, and a nested entry with the return
	 * address on top of the stack */
	outer.kp.addr = (kprobe_opcode_t *)ukt_krp_pushed_outer;
	cr_expect_eq(ukprobes_kretprobe_check(&outer.kp, NULL), 0);
	cr_expect_eq(register_kretprobe(&outer), 0);
	unregister_kretprobe(&outer);
	outer.kp.addr = NULL;
	outer.kp.flags = 0;
	outer.kp.symbol_name = "ukt_krp_fall_outer";
	inner.kp.symbol_name = "ukt_krp_fall_inner";
	cr_expect_eq(ukprobes_kretprobe_check(&inner.kp, NULL), 0);
	cr_assert_eq(register_kretprobe(&inner), 0);
	cr_expect_eq(call_inner(4), 8);
	cr_expect_eq(ret_calls, 1);
	/* through the outer entry: one frame, one return */
	cr_expect_eq(call_outer(1), 202);
	cr_expect_eq(ret_calls, 2);
	cr_expect_eq(last_ret, 202);
	cr_assert_eq(register_kretprobe(&outer), 0);
	cr_expect_eq(call_outer(2), 204);
	cr_expect_eq(ret_calls, 4);
	unregister_kretprobe(&inner);
	unregister_kretprobe(&outer);
	/* no unwind information: nothing says no */
	nocfi.kp.addr = (kprobe_opcode_t *)ukt_krp_nocfi;
	cr_expect_eq(ukprobes_kretprobe_check(&nocfi.kp, NULL), 0);
	cr_expect_eq(register_kretprobe(&nocfi), 0);
	unregister_kretprobe(&nocfi);
}

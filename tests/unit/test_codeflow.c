// SPDX-License-Identifier: MIT
/*
 * test_codeflow.c - the control-flow safety check of jump optimization
 * (src/codeflow.c) and what it stands on: the x86-64 branch scanner with
 * its jump-table resolution (src/arch/x86_64/branches.c) and the
 * .eh_frame / LSDA reader (src/eh_frame.c).
 *
 * Targets: hand-written assembly (codeflow_targets.S), one function per
 * shape, laid out so that the probed entry region holds whole
 * instructions and, where a refusal is expected, something lands at
 * entry + 2; a dense switch and a GCC-split function compiled at -O2
 * (codeflow_compiled.c); and the
 * exported functions of the system's stripped libz and libc, whose pass
 * rates and refusal reasons are printed.
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
#include <sys/mman.h>
#include <time.h>
#include <zlib.h>

#include <criterion/criterion.h>

#include "arch/arch_branches.h"
#include "flow/code_refs.h"
#include "flow/codeflow.h"
#include "symbols/eh_frame.h"
#include "decoder.h"
#include "base/grow_array.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

extern char ukt_flow_loop_into_entry[], ukt_flow_plain[], ukt_flow_table_into_region[],
	ukt_flow_table_spilled[], ukt_flow_indirect_unknown[], ukt_flow_got_tail[],
	ukt_flow_hot[], ukt_flow_hot_numbered[], ukt_flow_hot_ok[], ukt_flow_victim[],
	ukt_flow_two_entries[], ukt_flow_pad_in_region[], ukt_flow_pad_elsewhere[];
extern char ukt_flow_short_ret[], ukt_flow_short_target[], ukt_flow_short_sym[],
	ukt_flow_short_fde[], ukt_flow_short_code[], ukt_flow_call_last[], ukt_flow_call_reg[],
	ukt_flow_call_reg_last[], ukt_flow_call_stack[];
extern char ukt_flow_ptr_global[], ukt_flow_ptr_field[], ukt_flow_ptr_indexed[],
	ukt_flow_ptr_stack[], ukt_flow_ptr_between[], ukt_flow_ptr_lea_label[],
	ukt_flow_ptr_data_label[], ukt_flow_ptr_global_label[], ukt_flow_taken_data[],
	ukt_flow_taken_lea[];
extern char ukt_flow_path_branch[], ukt_flow_path_join[], ukt_flow_path_saved[],
	ukt_flow_path_clobbered[], ukt_flow_path_argument[], ukt_flow_path_not_argument[],
	ukt_flow_path_field[], ukt_flow_path_frame[], ukt_flow_path_uncovered[],
	ukt_flow_path_jmp_next[];
extern int ukp_shstk_force;
int ukt_flow_switch(int op, int a);
int ukt_flow_split_back(const int *p, int n);

static void flow_init(void)
{
	cr_assert_eq(ukp_init(), 0);
}

TestSuite(codeflow, .init = flow_init);

/* ---- helpers ------------------------------------------------------------ */

static bool starts_with_endbr64(uintptr_t a)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t b[4];

	return ukp_read_original(a, b, 4) == 4 && !memcmp(b, endbr64, 4);
}

/* Length of the whole instructions at entry that cover >= 5 bytes, or 0. */
static size_t entry_region(uintptr_t entry)
{
	uint8_t code[32];
	size_t avail = ukp_read_original(entry, code, sizeof(code)), off;

	for (off = 5; off < 5 + UKP_MAX_INSN_SIZE && off < avail; off++)
		if (arch_check_boundary(code, off, avail) == 0)
			return off;
	return 0;
}

/* The check on [addr, addr + len) of the function containing addr. */
static int check_at(uintptr_t addr, size_t len, const char **why)
{
	struct ukp_symres sym;
	int ret;

	cr_assert_eq(ukp_lock_for_show(), 0);
	ret = ukp_sym_lookup_addr(addr, &sym);
	cr_assert_eq(ret, 0, "no symbol at %#lx", (unsigned long)addr);
	ret = ukp_codeflow_check(&sym, addr, len, why);
	ukp_unlock_for_show();
	return ret;
}

/* The check on a function's entry region (after an endbr64). */
static int check_entry(const void *fn, const char **why)
{
	uintptr_t entry = (uintptr_t)fn;
	size_t len;

	if (starts_with_endbr64(entry))
		entry += 4;
	len = entry_region(entry);
	cr_assert_geq(len, 5, "no 5-byte region at %p", fn);
	return check_at(entry, len, why);
}

#define expect_verdict(fn, want, why_part)                                              \
	do {                                                                                \
		const char *why_ = NULL;                                                    \
		int ret_ = check_entry((fn), &why_);                                        \
		cr_expect_eq(ret_, (want), "%s: %d (%s), expected %d", #fn, ret_,           \
			     why_ ? why_ : "-", (want));                                        \
		if ((want) == 0)                                                            \
			cr_expect_null(why_, "%s: why set on success", #fn);                \
		else                                                                        \
			cr_expect(why_ && strstr(why_, (why_part)),                         \
				  "%s: why \"%s\" lacks \"%s\"", #fn, why_ ? why_ : "-",    \
				  (why_part));                                              \
	} while (0)

/* ---- the check on hand-written shapes ----------------------------------- */

Test(codeflow, loop_back_into_region_refused)
{
	expect_verdict(ukt_flow_loop_into_entry, -EBUSY, "jump in the function");
}

Test(codeflow, plain_function_accepted)
{
	expect_verdict(ukt_flow_plain, 0, "");
}

Test(codeflow, jump_table_into_region_refused)
{
	expect_verdict(ukt_flow_table_into_region, -EBUSY, "jump table");
}

Test(codeflow, spilled_table_base_resolved)
{
	expect_verdict(ukt_flow_table_spilled, 0, "");
}

Test(codeflow, unresolvable_indirect_jump_refused)
{
	expect_verdict(ukt_flow_indirect_unknown, -EOPNOTSUPP, "unknown targets");
}

Test(codeflow, got_tail_call_accepted)
{
	uint8_t code[6];
	uintptr_t jmp = (uintptr_t)ukt_flow_got_tail + 5;

	/* The linker kept the memory-indirect jump (no relaxation). */
	cr_assert_eq(ukp_read_original(jmp, code, sizeof(code)), sizeof(code));
	cr_assert(code[0] == 0xff && code[1] == 0x25, "not jmp *disp(%%rip): %02x %02x",
		  code[0], code[1]);
	expect_verdict(ukt_flow_got_tail, 0, "");
}

Test(codeflow, cold_part_jumping_back_refused)
{
	expect_verdict(ukt_flow_hot, -EBUSY, ".cold part");
	expect_verdict(ukt_flow_hot_numbered, -EBUSY, ".cold part");
	/* A cold part that comes back after the region is fine. */
	expect_verdict(ukt_flow_hot_ok, 0, "");
}

Test(codeflow, uncovered_code_jumping_in_refused)
{
	expect_verdict(ukt_flow_victim, -EBUSY, "outside any symbol");
}

Test(codeflow, second_entry_point_refused)
{
	expect_verdict(ukt_flow_two_entries, -EBUSY, "another symbol");
}

Test(codeflow, landing_pad_in_region_refused)
{
	expect_verdict(ukt_flow_pad_in_region, -EBUSY, "landing pad");
	expect_verdict(ukt_flow_pad_elsewhere, 0, "");
}

Test(codeflow, region_leaving_function_refused)
{
	struct ukp_symres sym;
	const char *why = NULL;
	uintptr_t fn = (uintptr_t)ukt_flow_plain;

	cr_assert_eq(ukp_sym_lookup_addr(fn, &sym), 0);
	cr_assert_eq(sym.start, fn);
	/* the last 3 bytes plus 2 of whatever follows */
	cr_expect_eq(ukp_codeflow_check(&sym, fn + sym.size - 3, 5, &why), -EINVAL);
	cr_expect(why && strstr(why, "leaves the function"), "why: %s", why ? why : "-");
	/* starting before the function */
	cr_expect_eq(ukp_codeflow_check(&sym, fn - 1, 5, &why), -EINVAL);
	/* longer than the function */
	cr_expect_eq(ukp_codeflow_check(&sym, fn, sym.size + 1, &why), -EINVAL);
	cr_expect_eq(ukp_codeflow_check(&sym, fn, 0, &why), -EINVAL);
	/* exactly a function's last bytes are fine (the GOT jump, 6 bytes) */
	fn = (uintptr_t)ukt_flow_got_tail;
	cr_assert_eq(ukp_sym_lookup_addr(fn, &sym), 0);
	cr_expect_eq(ukp_codeflow_check(&sym, fn + sym.size - 6, 6, &why), 0,
		     "%s", why ? why : "-");
}

/* ---- regions that end the copy early (codeflow_exits.S) ----------------- */

/* What registration would do at fn: the whole analysis, relocation
 * included (the region's extent depends on where the copy ends). */
#define expect_opt(fn, want, why_part)                                                  \
	do {                                                                                \
		const char *why_ = NULL;                                                    \
		int got_ = ukprobes_optimizable((void *)(fn), &why_);                       \
		cr_expect_eq(got_, (want), "%s: %d (%s), expected %d", #fn, got_,           \
			     why_ ? why_ : "-", (want));                                        \
		if ((want) != UKPROBES_OPT_JUMP)                                            \
			cr_expect(why_ && strstr(why_, (why_part)),                         \
				  "%s: why \"%s\" lacks \"%s\"", #fn, why_ ? why_ : "-",    \
				  (why_part));                                              \
	} while (0)

Test(codeflow, short_function_into_padding_accepted)
{
	expect_opt(ukt_flow_short_ret, UKPROBES_OPT_JUMP, "");
	/* the check itself: 3 bytes of code, 2 of them past the end */
	cr_expect_eq(check_at((uintptr_t)ukt_flow_short_ret, 5, NULL), -EINVAL,
		     "without an exit the region may not leave the function");
	cr_assert_eq(ukp_lock_for_show(), 0);
	{
		struct ukp_symres sym;
		const char *why = NULL;

		cr_assert_eq(ukp_sym_lookup_addr((uintptr_t)ukt_flow_short_ret, &sym), 0);
		cr_expect_eq(ukp_codeflow_check_exit(&sym, sym.start, 5, 3, &why), 0, "%s",
			     why ? why : "-");
		/* the exit itself past the end */
		cr_expect_eq(ukp_codeflow_check_exit(&sym, sym.start, 5, 4, &why), -EINVAL);
	}
	ukp_unlock_for_show();
}

/* (a punned jump over the first instruction writes no padding) */
Test(codeflow, padding_that_is_reached_refused)
{
	ukp_opt_pun = false;
	expect_opt(ukt_flow_short_target, UKPROBES_OPT_NONE, "jump in the function");
	expect_opt(ukt_flow_short_sym, UKPROBES_OPT_NONE, "another symbol");
	expect_opt(ukt_flow_short_fde, UKPROBES_OPT_NONE, "unwind information");
	expect_opt(ukt_flow_short_code, UKPROBES_OPT_NONE, "not padding");
	ukp_opt_pun = true;
}

Test(codeflow, padding_without_unwind_tables_refused)
{
	const char *path = getenv("UKT_FLOW_NOHDR");
	void *h, *fn;

	cr_assert_not_null(path, "UKT_FLOW_NOHDR is not set");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	fn = dlsym(h, "ukt_nohdr_short");
	cr_assert_not_null(fn);
	ukp_opt_pun = false;
	expect_opt(fn, UKPROBES_OPT_NONE, "no unwind tables");
	ukp_opt_pun = true;
	dlclose(h);
}

Test(codeflow, call_ending_the_region_accepted)
{
	ukp_opt_pun = false; /* whole regions */
	expect_opt(ukt_flow_call_last, UKPROBES_OPT_JUMP, "");
	expect_opt(ukt_flow_call_reg, UKPROBES_OPT_NONE, "not its last instruction");
	expect_opt(ukt_flow_call_reg_last, UKPROBES_OPT_JUMP, "");
	expect_opt(ukt_flow_call_stack, UKPROBES_OPT_NONE, "call in the region is not relocatable");
	/* under a shadow stack the callee's ret would find no return address */
	ukp_shstk_force = 1;
	expect_opt(ukt_flow_call_last, UKPROBES_OPT_NONE, "shadow stack");
	ukp_shstk_force = -1;
	/* a punned jump over the first instruction alone (the mov; a
	 * window of 256 bytes: the push's one address may be taken) */
	ukp_opt_pun = true;
	expect_opt(ukt_flow_call_reg, UKPROBES_OPT_JUMP, "");
}

/* ---- jumps through pointers (codeflow_pointers.S) ----------------------- */

Test(codeflow, pointer_tail_calls_accepted)
{
	expect_verdict(ukt_flow_ptr_global, 0, "");
	expect_verdict(ukt_flow_ptr_field, 0, "");
}

Test(codeflow, pointers_that_may_be_tables_refused)
{
	expect_verdict(ukt_flow_ptr_indexed, -EOPNOTSUPP, "unknown targets");
	expect_verdict(ukt_flow_ptr_stack, -EOPNOTSUPP, "unknown targets");
	/* the other path brings a computed %rax, not a loaded pointer */
	expect_verdict(ukt_flow_ptr_between, -EOPNOTSUPP, "unknown targets");
}

Test(codeflow, pointers_in_functions_taking_their_labels_refused)
{
	expect_verdict(ukt_flow_ptr_lea_label, -EOPNOTSUPP, "address of its own code");
	expect_verdict(ukt_flow_ptr_data_label, -EOPNOTSUPP, "address of its own code");
	/* a global is no GOT slot when the function stores its label there */
	expect_verdict(ukt_flow_ptr_global_label, -EOPNOTSUPP, "address of its own code");
}

/* Jumps through registers: the pointer's paths (codeflow_paths.S). */
Test(codeflow, pointer_paths_accepted)
{
	expect_verdict(ukt_flow_path_branch, 0, "");
	expect_verdict(ukt_flow_path_join, 0, "");
	expect_verdict(ukt_flow_path_saved, 0, "");
	expect_verdict(ukt_flow_path_argument, 0, "");
	expect_verdict(ukt_flow_path_field, 0, "");
}

Test(codeflow, pointer_paths_refused)
{
	expect_verdict(ukt_flow_path_clobbered, -EOPNOTSUPP, "unknown targets");
	expect_verdict(ukt_flow_path_not_argument, -EOPNOTSUPP, "unknown targets");
	expect_verdict(ukt_flow_path_frame, -EOPNOTSUPP, "unknown targets");
	expect_verdict(ukt_flow_path_uncovered, -EOPNOTSUPP, "outside any symbol jumps between");
	expect_verdict(ukt_flow_path_jmp_next, -EOPNOTSUPP, "unknown targets");
}

/* The code addresses stored by relocations of this PIE: the function
 * pointer and the inside address of codeflow_pointers.S's data. */
Test(codeflow, code_refs_of_relocations)
{
	const struct ukp_object *obj;
	struct ukp_eh_frame eh = { 0 };
	uintptr_t *v = NULL, want[2] = { (uintptr_t)ukt_flow_ptr_field,
					 (uintptr_t)ukt_flow_taken_data + 2 };
	size_t n = 0, i, k;

	cr_assert_eq(ukp_lock_for_show(), 0);
	obj = ukp_object_of((uintptr_t)ukt_flow_ptr_field);
	cr_assert_not_null(obj);
	ukp_eh_frame_load(obj, &eh);
	cr_expect_eq(ukp_code_refs_load(obj, eh.segs, eh.nsegs, NULL, 0, NULL,
					 UKP_REFS_RELOCS | UKP_REFS_LITERALS, &v, &n), 0);
	for (k = 0; k < 2; k++) {
		bool found = false;

		for (i = 0; i < n; i++)
			found |= v[i] == want[k];
		cr_expect(found, "%#lx is not among the %zu code addresses", (unsigned long)want[k],
			  n);
	}
	for (i = 1; i < n; i++)
		cr_expect_lt(v[i - 1], v[i], "sorted, unique");
	/* without the segments nothing matches the file */
	free(v);
	cr_expect_eq(ukp_code_refs_load(obj, eh.segs, 0, NULL, 0, NULL,
					 UKP_REFS_RELOCS | UKP_REFS_LITERALS, &v, &n), -ENOENT);
	ukp_eh_frame_free(&eh);
	ukp_unlock_for_show();
}

Test(codeflow, taken_address_inside_region_refused)
{
	expect_verdict(ukt_flow_taken_data, -EBUSY, "address of an instruction inside");
	expect_verdict(ukt_flow_taken_lea, -EBUSY, "address of an instruction inside");
}

/* Our own breakpoints must not hide the jump into the region. */
static int pre_nop(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

Test(codeflow, probes_do_not_hide_jumps)
{
	/* the loop's jl, 7 bytes in, and the entry itself */
	struct kprobe on_jl = { .addr = (kprobe_opcode_t *)(ukt_flow_loop_into_entry + 7),
				.pre_handler = pre_nop };
	struct kprobe on_entry = { .addr = (kprobe_opcode_t *)ukt_flow_loop_into_entry,
				   .pre_handler = pre_nop };
	uint8_t live;

	cr_assert_eq(register_kprobe(&on_jl), 0);
	cr_assert_eq(register_kprobe(&on_entry), 0);
	memcpy(&live, ukt_flow_loop_into_entry + 7, 1);
	cr_assert_eq(live, UKP_BREAKPOINT_INSN, "the probe did not patch the jl");
	expect_verdict(ukt_flow_loop_into_entry, -EBUSY, "jump in the function");
	unregister_kprobe(&on_jl);
	unregister_kprobe(&on_entry);
}

/* ---- a compiler's switch ------------------------------------------------ */

struct flow_log {
	size_t direct, table, unknown, undecodable, pointer, global, address, path;
	uintptr_t targets[256], froms[256];
	enum arch_flow_kind kinds[256];
	size_t n;
};

static int log_flow(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct flow_log *l = arg;

	if (l->n < 256)
		l->froms[l->n] = from;
	switch (kind) {
	case ARCH_FLOW_DIRECT: l->direct++; break;
	case ARCH_FLOW_TABLE: l->table++; break;
	case ARCH_FLOW_UNKNOWN: l->unknown++; break;
	case ARCH_FLOW_UNDECODABLE: l->undecodable++; break;
	case ARCH_FLOW_POINTER: l->pointer++; break;
	case ARCH_FLOW_GLOBAL_POINTER: l->global++; break;
	case ARCH_FLOW_ADDRESS: l->address++; break;
	case ARCH_FLOW_POINTER_PATH: l->path++; break;
	}
	if (l->n < 256) {
		l->kinds[l->n] = kind;
		l->targets[l->n++] = target;
	}
	return 0;
}

Test(codeflow, compiled_switch_table_resolved)
{
	struct ukp_symres sym;
	struct arch_code_part part;
	struct flow_log log = { 0 };
	uint8_t code[4096];

	cr_assert_eq(ukt_flow_switch(3, 1), 0x54);	/* real, reachable code */
	cr_assert_eq(ukp_sym_lookup_addr((uintptr_t)ukt_flow_switch, &sym), 0);
	cr_assert_leq(sym.size, sizeof(code));
	part.addr = sym.start;
	part.code = code;
	part.len = ukp_read_original(sym.start, code, sym.size);
	cr_assert_eq(part.len, sym.size);
	cr_assert_eq(arch_scan_flow(&part, 1, 0, 0, 0, log_flow, &log), 0);
	/* 12 cases: at least 12 entries read, all resolved */
	cr_expect_geq(log.table, 12, "%zu table targets", log.table);
	cr_expect_eq(log.unknown, 0);
	cr_expect_eq(log.undecodable, 0);

	expect_verdict(ukt_flow_switch, 0, "");
}

/*
 * GCC's own NAME.cold (in .text.unlikely, a local symbol) jumps back into
 * the loop; a region around that landing point is refused because of it.
 */
Test(codeflow, gcc_cold_part_found)
{
	static const int data[3] = { 1, 2, 3 };
	uintptr_t hot = (uintptr_t)ukt_flow_split_back, cold, land = 0, b = 0;
	struct ukp_symres hs, cs;
	struct arch_code_part part;
	struct flow_log log;
	uint8_t code[512], cold_code[256];
	size_t off, len, i;
	bool hot_jumps_there = false;
	const char *why = NULL;
	int ret;

	cr_assert_eq(ukt_flow_split_back(data, 3), 6);
	if (ukp_sym_lookup_name("ukt_flow_split_back.cold", &cold))
		cr_skip_test("the compiler made no .cold part (not GCC)");
	cr_assert_eq(ukp_sym_lookup_addr(hot, &hs), 0);
	cr_assert_eq(ukp_sym_lookup_addr(cold, &cs), 0);
	cr_assert_leq(hs.size, sizeof(code));
	cr_assert_leq(cs.size, sizeof(cold_code));

	/* where the cold part lands in the hot one */
	part.addr = cs.start;
	part.code = cold_code;
	part.len = ukp_read_original(cs.start, cold_code, cs.size);
	memset(&log, 0, sizeof(log));
	cr_assert_eq(arch_scan_flow(&part, 1, 0, 0, 0, log_flow, &log), 0);
	for (i = 0; i < log.n; i++)
		if (log.kinds[i] == ARCH_FLOW_DIRECT && log.targets[i] > hot &&
		    log.targets[i] < hot + hs.size)
			land = log.targets[i];
	cr_assert_neq(land, 0, "the cold part does not jump back");

	/* the instruction before the landing point, and a region of whole
	 * instructions from it that covers the landing point */
	cr_assert_eq(ukp_read_original(hot, code, hs.size), hs.size);
	for (off = 1; hot + off < land; off++)
		if (arch_check_boundary(code, off, hs.size) == 0)
			b = hot + off;
	cr_assert_neq(b, 0);
	for (len = 5; b + len < hot + hs.size; len++)
		if (b + len > land && arch_check_boundary(code, b + len - hot, hs.size) == 0)
			break;
	cr_assert_lt(b + len, hot + hs.size);

	part.addr = hot;
	part.code = code;
	part.len = hs.size;
	cr_assert_eq(arch_scan_flow(&part, 1, 0, 0, 0, log_flow, &log), 0);
	for (i = 0; i < log.n; i++)
		hot_jumps_there |= log.kinds[i] == ARCH_FLOW_DIRECT && log.targets[i] == land;

	ret = check_at(b, len, &why);
	cr_expect_eq(ret, -EBUSY, "%d (%s)", ret, why ? why : "-");
	if (!hot_jumps_there)
		cr_expect(why && strstr(why, ".cold part"), "why: %s", why ? why : "-");
}

/* ---- the branch scanner on crafted bytes -------------------------------- */

#define FAKE 0x400000UL

static void scan_bytes(const uint8_t *code, size_t len, uintptr_t addr, unsigned int flags,
		       struct flow_log *log)
{
	struct arch_code_part part = { .addr = addr, .code = code, .len = len };

	memset(log, 0, sizeof(*log));
	cr_assert_eq(arch_scan_flow(&part, 1, 0, 0, flags, log_flow, log), 0);
}

Test(codeflow, arch_direct_targets)
{
	static const uint8_t code[] = {
		0xeb, 0x02,				/* 0:  jmp .+4 -> 4 */
		0x74, 0xfc,				/* 2:  je -> 0 */
		0x0f, 0x85, 0x10, 0x00, 0x00, 0x00,	/* 4:  jne -> 0x1a */
		0xe8, 0xf1, 0xff, 0xff, 0xff,		/* 10: call -> 0 */
		0xe2, 0x00,				/* 15: loop -> 17 */
		0xe3, 0xfe,				/* 17: jrcxz -> 17 */
		0xc7, 0xf8, 0x01, 0x00, 0x00, 0x00,	/* 19: xbegin -> 26 */
		0xff, 0xd0,				/* 25: call *%rax (not reported) */
		0xff, 0x25, 0x00, 0x00, 0x00, 0x00,	/* 27: jmp *0(%rip) (GOT: not reported) */
		0xc3,					/* 33: ret */
	};
	static const uintptr_t want[] = { 4, 0, 0x1a, 0, 17, 17, 26 };
	struct flow_log log;
	unsigned int pass, i;

	for (pass = 0; pass < 2; pass++) {
		scan_bytes(code, sizeof(code), FAKE, pass ? ARCH_FLOW_DIRECT_ONLY : 0, &log);
		cr_assert_eq(log.direct, 7, "pass %u: %zu direct", pass, log.direct);
		cr_expect_eq(log.table + log.unknown + log.undecodable, 0);
		for (i = 0; i < 7; i++)
			cr_expect_eq(log.targets[i], FAKE + want[i], "pass %u: #%u -> %#lx", pass, i,
				     (unsigned long)log.targets[i]);
	}
}

Test(codeflow, arch_unknown_and_undecodable)
{
	/* lea 8(%rdi),%rax; jmp *%rax: a computed target */
	static const uint8_t jmp_rax[] = { 0x48, 0x8d, 0x47, 0x08, 0xff, 0xe0 };
	static const uint8_t jmp_mem[] = { 0xff, 0x60, 0x10 };		/* jmp *0x10(%rax) */
	static const uint8_t far_jmp[] = { 0xff, 0x28 };			/* ljmp *(%rax) */
	static const uint8_t bad[] = { 0x06, 0xc3 };			/* push es: invalid */
	/* movslq/add/jmp with no lea anywhere: no table base known */
	static const uint8_t no_base[] = { 0x48, 0x63, 0x04, 0x82, 0x48, 0x01, 0xd0, 0xff, 0xe0 };
	struct flow_log log;

	scan_bytes(jmp_rax, sizeof(jmp_rax), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1);
	scan_bytes(jmp_mem, sizeof(jmp_mem), FAKE, 0, &log);
	cr_expect_eq(log.pointer, 1, "jmp *0x10(%%rax) is a pointer");
	cr_expect_eq(log.unknown, 0);
	scan_bytes(far_jmp, sizeof(far_jmp), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1);
	scan_bytes(no_base, sizeof(no_base), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1);
	cr_expect_eq(log.table, 0);
	scan_bytes(bad, sizeof(bad), FAKE, 0, &log);
	cr_expect_eq(log.undecodable, 1);
	cr_expect_eq(log.targets[0], 0);
	/* the fast mode steps over it silently */
	scan_bytes(bad, sizeof(bad), FAKE, ARCH_FLOW_DIRECT_ONLY, &log);
	cr_expect_eq(log.n, 0);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#define NCASES 40

/* GCC's PIC dispatch over a 40-entry table: every entry is read. */
Test(codeflow, arch_pic_table_every_entry)
{
	uint8_t *buf = calloc(1, 4096), *p;
	uintptr_t base = (uintptr_t)buf, table;
	size_t code_len, i;
	struct flow_log log;

	cr_assert_not_null(buf);
	p = buf;
	*p++ = 0x48; *p++ = 0x8d; *p++ = 0x15; p += 4;		/* lea T(%rip),%rdx */
	*p++ = 0x48; *p++ = 0x63; *p++ = 0x04; *p++ = 0x82;	/* movslq (%rdx,%rax,4),%rax */
	*p++ = 0x48; *p++ = 0x01; *p++ = 0xd0;			/* add %rdx,%rax */
	*p++ = 0x3e; *p++ = 0xff; *p++ = 0xe0;			/* notrack jmp *%rax */
	for (i = 0; i < NCASES; i++)
		*p++ = 0xc3;					/* the cases: ret */
	code_len = (size_t)(p - buf);
	table = (base + code_len + 15) & ~(uintptr_t)15;
	put32(buf + 3, (uint32_t)(table - (base + 7)));
	for (i = 0; i < NCASES; i++)	/* backwards, so order does not matter */
		put32((uint8_t *)table + 4 * i, (uint32_t)(base + 17 + (NCASES - 1 - i) - table));
	put32((uint8_t *)table + 4 * NCASES, 0x40000000);		/* far away: the end */

	scan_bytes(buf, code_len, base, 0, &log);
	cr_expect_eq(log.unknown, 0);
	cr_expect_eq(log.table, NCASES, "%zu table targets", log.table);
	for (i = 0; i < log.n && i < NCASES; i++)
		cr_expect_eq(log.targets[i], base + 17 + (NCASES - 1 - i));
	free(buf);
}

/* The non-PIC dispatches: jmp *T(,%rax,8) and mov T(,%rax,8),%rax; jmp *%rax. */
Test(codeflow, arch_absolute_tables)
{
	uint8_t *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	uintptr_t base = (uintptr_t)buf, table = base + 2048;
	uint64_t *entries = (uint64_t *)(buf + 2048);
	struct flow_log log;
	size_t i;

	cr_assert_neq(buf, MAP_FAILED);
	cr_assert_lt(base, 0x7fff0000UL);
	/* 0: jmp *T(,%rax,8); 7: mov T(,%rax,8),%rax; 15: jmp *%rax; 17..: ret */
	buf[0] = 0xff; buf[1] = 0x24; buf[2] = 0xc5; put32(buf + 3, (uint32_t)table);
	buf[7] = 0x48; buf[8] = 0x8b; buf[9] = 0x04; buf[10] = 0xc5; put32(buf + 11, (uint32_t)table);
	buf[15] = 0xff; buf[16] = 0xe0;
	for (i = 0; i < 8; i++)
		buf[17 + i] = 0xc3;
	for (i = 0; i < 8; i++)
		entries[i] = base + 17 + i;
	entries[8] = 0;

	scan_bytes(buf, 25, base, 0, &log);
	cr_expect_eq(log.unknown, 0);
	/* both dispatches read the same table: its entries reported once */
	cr_expect_eq(log.table, 8, "%zu table targets (8, the table's, once)", log.table);
	for (i = 0; i < 8 && i < log.n; i++)
		cr_expect_eq(log.targets[i], base + 17 + i);
	munmap(buf, 4096);
}

/*
 * Two dispatches through one table (or the second through the end of the
 * first's: switches laid out one after the other) lead to a jmp *%rcx;
 * the entries are read once, but each dispatch stays a way into its
 * cases for the pointer's paths: through the first, %rcx is a loaded
 * pointer; through the second (whose entries are the first's, not read
 * again), an immediate, so the jump stays unknown.
 */
Test(codeflow, arch_shared_table_paths)
{
	uint8_t *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	uintptr_t base = (uintptr_t)buf, table = base + 2048;
	uint64_t *entries = (uint64_t *)(buf + 2048);
	static const unsigned int skip[] = { 0, 1, 5 };
	struct flow_log log;
	size_t i, k;

	cr_assert_neq(buf, MAP_FAILED);
	cr_assert_lt(base, 0x7fff0000UL);
	for (i = 0; i < 12; i++)
		entries[i] = base + 23;
	entries[12] = 0;
	for (k = 0; k < sizeof(skip) / sizeof(skip[0]); k++) {
		uint32_t second = (uint32_t)(table + 8 * skip[k]);

		/* 0: mov 8(%rdi),%rcx; 4: jmp *T(,%rax,8); 11: mov $1,%ecx;
		 * 16: jmp *T2(,%rax,8); 23: jmp *%rcx */
		buf[0] = 0x48; buf[1] = 0x8b; buf[2] = 0x4f; buf[3] = 0x08;
		buf[4] = 0xff; buf[5] = 0x24; buf[6] = 0xc5; put32(buf + 7, (uint32_t)table);
		buf[11] = 0xb9; put32(buf + 12, 1);
		buf[16] = 0xff; buf[17] = 0x24; buf[18] = 0xc5; put32(buf + 19, second);
		buf[23] = 0xff; buf[24] = 0xe1;

		scan_bytes(buf, 25, base, 0, &log);
		cr_expect_eq(log.table, 12, "%zu table targets (skip %u)", log.table, skip[k]);
		cr_expect_eq(log.pointer, 0, "the second dispatch's path brings an immediate");
		cr_expect_eq(log.unknown, 1);

		/* without the second path (a nop over its mov): the pointer */
		memset(buf + 11, 0x90, 5);
		scan_bytes(buf, 25, base, 0, &log);
		cr_expect_eq(log.unknown, 0, "skip %u", skip[k]);
		cr_expect_eq(log.pointer, 1);
	}
	munmap(buf, 4096);
}

/* A table whose first case is in other code of the object (a cold part
 * that no symbol names, as CPython's opcode table): read on past it,
 * every later entry reported; with the parts alone it stops there, and
 * the dispatch is unknown. */
Test(codeflow, arch_table_with_cases_in_other_code)
{
	uint8_t *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	uintptr_t base = (uintptr_t)buf, table = base + 2048;
	uint64_t *entries = (uint64_t *)(buf + 2048);
	struct arch_code_part part = { .addr = base, .code = buf, .len = 17 };
	struct flow_log log;
	size_t i;

	cr_assert_neq(buf, MAP_FAILED);
	/* 0: mov T(,%rax,8),%rax; 8: jmp *%rax; 10..17: ret; the "cold"
	 * code at 1024 */
	buf[0] = 0x48; buf[1] = 0x8b; buf[2] = 0x04; buf[3] = 0xc5; put32(buf + 4, (uint32_t)table);
	buf[8] = 0xff; buf[9] = 0xe0;
	for (i = 0; i < 7; i++)
		buf[10 + i] = 0xc3;
	entries[0] = base + 1024;
	for (i = 1; i < 8; i++)
		entries[i] = base + 9 + i;
	entries[8] = 0;

	memset(&log, 0, sizeof(log));
	cr_assert_eq(arch_scan_flow(&part, 1, base, base + 4096, 0, log_flow, &log), 0);
	cr_expect_eq(log.unknown, 0);
	cr_expect_eq(log.table, 7, "%zu table targets", log.table);
	for (i = 0; i < 7 && i < log.n; i++)
		cr_expect_eq(log.targets[i], base + 10 + i);
	memset(&log, 0, sizeof(log));
	cr_assert_eq(arch_scan_flow(&part, 1, 0, 0, 0, log_flow, &log), 0);
	cr_expect_eq(log.unknown, 1, "without the object's code range");
	munmap(buf, 4096);
}

/* ---- unwind tables ------------------------------------------------------ */

static int note_pad(uintptr_t pad, void *arg)
{
	uintptr_t *pads = arg;

	pads[pads[0] + 1] = pad;
	pads[0]++;
	return 0;
}

Test(codeflow, eh_frame_fdes_and_landing_pads)
{
	struct ukp_eh_frame eh;
	const struct ukp_object *obj;
	uintptr_t fn = (uintptr_t)ukt_flow_pad_in_region, pads[8] = { 0 };
	size_t i;
	bool found = false;

	obj = ukp_object_of(fn);
	cr_assert_not_null(obj);
	cr_assert_eq(ukp_eh_frame_load(obj, &eh), 0);
	cr_assert(eh.has_hdr);
	cr_assert_gt(eh.nfdes, 10);
	for (i = 0; i < eh.nfdes; i++) {
		if (i)
			cr_expect_leq(eh.fdes[i - 1].end, eh.fdes[i].start, "FDEs overlap");
		if (eh.fdes[i].start == fn) {
			found = true;
			cr_expect_neq(eh.fdes[i].lsda, 0);
			cr_assert_eq(ukp_eh_landing_pads(&eh, &eh.fdes[i], note_pad, pads), 0);
		}
	}
	cr_assert(found, "no FDE for ukt_flow_pad_in_region");
	cr_expect_eq(pads[0], 1, "%lu landing pads", (unsigned long)pads[0]);
	cr_expect_eq(pads[1], fn + 2);
	ukp_eh_frame_free(&eh);
}

Test(codeflow, eh_frame_of_stripped_libc)
{
	struct ukp_eh_frame eh;
	const struct ukp_object *obj = ukp_object_of((uintptr_t)&strlen);
	uintptr_t fn = (uintptr_t)dlsym(RTLD_DEFAULT, "qsort");
	size_t i, in_exec = 0;
	bool found = false;

	cr_assert_not_null(obj);
	cr_assert_eq(ukp_eh_frame_load(obj, &eh), 0);
	cr_expect_gt(eh.nfdes, 1000, "%zu FDEs in libc", eh.nfdes);
	for (i = 0; i < eh.nfdes; i++) {
		size_t s;

		for (s = 0; s < eh.nsegs; s++)
			if (eh.segs[s].exec && eh.fdes[i].start >= eh.segs[s].start &&
			    eh.fdes[i].end <= eh.segs[s].end)
				in_exec++;
		found |= eh.fdes[i].start == fn;
	}
	cr_expect_eq(in_exec, eh.nfdes, "FDEs outside the code");
	cr_expect(found, "no FDE starts at qsort");
	ukp_eh_frame_free(&eh);
}

/* ---- the per-object index ----------------------------------------------- */

Test(codeflow, arch_pointer_loads)
{
	/* mov (%rdi),%rax; test; je +2; jmp *%rax; ret: the load reaches the
	 * jump along the fall-through of the je */
	static const uint8_t global[] = { 0x48, 0x8b, 0x07, 0x48, 0x85, 0xc0, 0x74, 0x02,
					  0xff, 0xe0, 0xc3 };
	static const uint8_t stack[] = { 0x48, 0x8b, 0x44, 0x24, 0x08, 0xff, 0xe0 };
	static const uint8_t after_call[] = { 0x48, 0x8b, 0x07, 0xe8, 0, 0, 0, 0, 0xff, 0xe0 };
	static const uint8_t rsp_mem[] = { 0xff, 0x64, 0x24, 0x08 };	/* jmp *8(%rsp) */
	static const uint8_t scaled4[] = { 0xff, 0x24, 0xb7 };		/* jmp *(%rdi,%rsi,4) */
	static const uint8_t lea_in[] = { 0x48, 0x8d, 0x05, 0x01, 0, 0, 0, 0xc3, 0xc3 };
	/* mov g(%rip),%rax; jmp *%rax and jmp *g(%rip) */
	static const uint8_t rip_reg[] = { 0x48, 0x8b, 0x05, 0, 0, 0, 0, 0xff, 0xe0 };
	static const uint8_t rip_mem[] = { 0xff, 0x25, 0, 0, 0, 0 };
	struct flow_log log;

	scan_bytes(global, sizeof(global), FAKE, 0, &log);
	cr_assert_eq(log.pointer, 1);
	cr_expect_eq(log.froms[log.n - 1], FAKE + 8);
	cr_expect_eq(log.targets[log.n - 1], FAKE, "the load's address");
	cr_expect_eq(log.unknown, 0);
	scan_bytes(stack, sizeof(stack), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1, "a pointer from the stack");
	scan_bytes(after_call, sizeof(after_call), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1, "a call in between ends the straight line");
	scan_bytes(rsp_mem, sizeof(rsp_mem), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1);
	scan_bytes(scaled4, sizeof(scaled4), FAKE, 0, &log);
	cr_expect_eq(log.unknown, 1, "an index register");
	scan_bytes(rip_reg, sizeof(rip_reg), FAKE, 0, &log);
	cr_expect_eq(log.global, 1);
	cr_expect_eq(log.targets[log.n - 1], FAKE);
	scan_bytes(rip_mem, sizeof(rip_mem), FAKE, 0, &log);
	cr_expect_eq(log.global, 1);
	cr_expect_eq(log.targets[log.n - 1], FAKE, "the jump is its own load");
	/* lea 1(%rip) -> FAKE + 8: an address inside the part */
	scan_bytes(lea_in, sizeof(lea_in), FAKE, 0, &log);
	cr_expect_eq(log.address, 1);
	cr_expect_eq(log.targets[0], FAKE + 8);
}

Test(codeflow, arch_padding)
{
	static const uint8_t nopw[] = { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 };
	static const uint8_t mixed[] = { 0xcc, 0x00, 0x90, 0x66, 0x90, 0x0f, 0x1f, 0x40, 0x00 };
	static const uint8_t code[] = { 0x90, 0x48, 0x89, 0xf8 };

	cr_expect(arch_is_padding(nopw, sizeof(nopw), sizeof(nopw)));
	cr_expect(arch_is_padding(nopw, sizeof(nopw), 2), "the NOP may go on past len");
	cr_expect(!arch_is_padding(nopw, 2, 2), "a NOP cut short is no NOP");
	cr_expect(arch_is_padding(mixed, sizeof(mixed), sizeof(mixed)));
	cr_expect(arch_is_padding(code, sizeof(code), 1));
	cr_expect(!arch_is_padding(code, sizeof(code), 2));
}

static size_t builds;
static char last_build[512];

static int catch_build(enum ukprobes_print_level level, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!strncmp(msg, "codeflow: ", 10)) {
		builds++;
		memcpy(last_build, msg, sizeof(msg));
	}
	return 0;
}

Test(codeflow, index_built_once_per_object)
{
	const char *why;

	ukprobes_set_print(catch_build);
	builds = 0;
	cr_assert_not_null(zlibVersion());
	check_entry((void *)&crc32, &why);
	check_entry((void *)&adler32, &why);
	cr_expect_eq(builds, 1, "%zu index builds for libz", builds);
	cr_expect(strstr(last_build, "libz"), "%s", last_build);

	/* Forgetting a live object keeps it; after a reset all are gone. */
	ukp_codeflow_forget_dead();
	check_entry((void *)&crc32, &why);
	cr_expect_eq(builds, 1);
	ukp_symbols_reset();
	ukp_codeflow_forget_dead();
	check_entry((void *)&crc32, &why);
	cr_expect_eq(builds, 2, "%zu index builds after a reset", builds);
	ukprobes_set_print(NULL);
}

Test(codeflow, unloaded_object_forgotten)
{
	const char *dir = getenv("UKP_TEST_PROGS"), *why;
	char path[4096];
	void *h, *fn;

	cr_assert_not_null(dir);
	snprintf(path, sizeof(path), "%s/libukptarget.so", dir);
	ukprobes_set_print(catch_build);
	builds = 0;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	/* a function of at least 5 bytes (ukptarget_add has 4) */
	fn = dlsym(h, "ukptarget_forbidden");
	cr_assert_not_null(fn);
	cr_expect_eq(check_entry(fn, &why), 0, "%s", why ? why : "-");
	cr_assert_eq(dlclose(h), 0);
	cr_assert_eq(ukp_lock_for_show(), 0);
	ukp_codeflow_forget_dead();
	ukp_unlock_for_show();

	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	fn = dlsym(h, "ukptarget_forbidden");
	cr_assert_not_null(fn);
	cr_expect_eq(check_entry(fn, &why), 0, "%s", why ? why : "-");
	cr_expect_eq(builds, 2, "%zu index builds", builds);
	dlclose(h);
	ukprobes_set_print(NULL);
}

/* Without PT_GNU_EH_FRAME, uncovered code is found between the symbols. */
Test(codeflow, object_without_unwind_tables)
{
	const char *path = getenv("UKT_FLOW_NOHDR");
	void *h, *victim, *plain, *entered;

	cr_assert_not_null(path, "UKT_FLOW_NOHDR is not set");
	ukprobes_set_print(catch_build);
	builds = 0;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	victim = dlsym(h, "ukt_nohdr_victim");
	plain = dlsym(h, "ukt_nohdr_plain");
	cr_assert(victim && plain);
	expect_verdict(victim, -EBUSY, "outside any symbol");
	expect_verdict(plain, 0, "");
	/* a function's own jump past another's first instruction */
	entered = dlsym(h, "ukt_nohdr_entered");
	cr_assert_not_null(entered);
	expect_verdict(entered, -EBUSY, "jumps into the region");
	cr_expect_eq(builds, 1);
	cr_expect(strstr(last_build, "no unwind tables"), "%s", last_build);
	ukprobes_set_print(NULL);
	dlclose(h);
}

/* ---- every exported function of stripped system libraries -------------- */

#define MAX_REASONS 16

struct survey {
	uintptr_t last_start;
	size_t total, passed, short_fn;
	struct {
		const char *why;
		int err;
		size_t n;
	} reasons[MAX_REASONS];
	size_t nreasons;
};

static void survey_fn(const struct ukp_symres *sym, void *arg)
{
	struct survey *sv = arg;
	uintptr_t entry = sym->start;
	const char *why = NULL;
	size_t len, i;
	int ret;

	if (sym->start == sv->last_start)
		return;		/* an alias */
	sv->last_start = sym->start;
	sv->total++;
	if (starts_with_endbr64(entry))
		entry += 4;
	len = entry_region(entry);
	if (!len) {
		ret = -EINVAL;
		why = "no whole instructions covering 5 bytes";
	} else {
		ret = ukp_codeflow_check(sym, entry, len, &why);
	}
	if (ret == 0) {
		sv->passed++;
		return;
	}
	if (getenv("UKT_FLOW_VERBOSE"))
		fprintf(stderr, "    %s+%#lx len %zu: %d %s\n", sym->name,
			(unsigned long)(entry - sym->start), len, ret, why);
	for (i = 0; i < sv->nreasons; i++)
		if (sv->reasons[i].why == why)
			break;
	if (i == sv->nreasons && i < MAX_REASONS) {
		sv->reasons[i].why = why;
		sv->reasons[i].err = ret;
		sv->nreasons++;
	}
	if (i < sv->nreasons)
		sv->reasons[i].n++;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Survey one object; returns the pass rate in percent. */
static double survey_object(const char *object)
{
	struct survey sv = { 0 };
	double t0, t_all;
	size_t i;

	builds = 0;
	ukprobes_set_print(catch_build);
	cr_assert_eq(ukp_lock_for_show(), 0);
	t0 = now_ms();
	ukp_for_each_symbol(object, survey_fn, &sv);
	t_all = now_ms() - t0;
	ukp_unlock_for_show();
	ukprobes_set_print(NULL);

	cr_assert_gt(sv.total, 0, "no functions in %s", object);
	cr_expect_eq(builds, 1, "%zu index builds for %s", builds, object);
	fprintf(stderr, "%s: %zu of %zu exported function entries pass (%.1f%%); %.1f ms in all\n",
		object, sv.passed, sv.total, 100.0 * (double)sv.passed / (double)sv.total, t_all);
	fprintf(stderr, "  index: %s", last_build);
	for (i = 0; i < sv.nreasons; i++)
		fprintf(stderr, "  %5zu  %-12s %s\n", sv.reasons[i].n,
			sv.reasons[i].err == -EBUSY ? "-EBUSY" :
			sv.reasons[i].err == -EOPNOTSUPP ? "-EOPNOTSUPP" :
			sv.reasons[i].err == -EINVAL ? "-EINVAL" : "other",
			sv.reasons[i].why ? sv.reasons[i].why : "(none)");
	return 100.0 * (double)sv.passed / (double)sv.total;
}

Test(codeflow, exported_entries_of_libz, .timeout = 120)
{
	cr_assert_not_null(zlibVersion());
	cr_expect_gt(survey_object("libz.so.1"), 80.0);
}

Test(codeflow, exported_entries_of_libc, .timeout = 120)
{
	cr_expect_gt(survey_object("libc.so.6"), 50.0);
}

/* ---- the index's ranges decoded with the literals (one pass) ---- */

struct found {
	uintptr_t *v;
	size_t n, cap;
};

static int found_add(struct found *f, uintptr_t a, uintptr_t b)
{
	if (f->n + 2 > f->cap) {
		f->cap = f->cap ? 2 * f->cap : 1024;
		f->v = realloc(f->v, f->cap * sizeof(*f->v));
		cr_assert_not_null(f->v);
	}
	f->v[f->n++] = a;
	f->v[f->n++] = b;
	return 0;
}

static int lit_cb(void *arg, uintptr_t v)
{
	return found_add(arg, v, 0);
}

static int range_cb(void *arg, size_t range, uintptr_t from, uintptr_t target)
{
	struct found *per = arg;

	return found_add(&per[range], from, target);
}

static int alone_cb(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	cr_assert_eq(kind, ARCH_FLOW_DIRECT);
	return found_add(arg, from, target);
}

/*
 * Random bytes (desynchronised decodings everywhere, instructions
 * running over range ends) and real code (this test's own text): each
 * range's findings in the literal scan are arch_scan_flow's, in order,
 * and the literals are those of a scan without ranges; ranges longer
 * than the scan's memory of decodings, ranges out of the code, a range
 * done already, symbol starts inside ranges included.
 */
static void one_pass_case(const uint8_t *code, size_t len, uintptr_t addr, unsigned int seed)
{
	enum { NRANGES = 64, NSYNC = 400 };
	struct arch_flow_range ranges[NRANGES];
	struct found per[NRANGES] = { 0 }, lits = { 0 }, lits_alone = { 0 };
	uintptr_t sync[NSYNC];
	struct arch_literal_scan sc = {
		.code = code, .len = len, .addr = addr, .sync = sync, .nsync = NSYNC,
		.lo = addr, .hi = addr + len, .fn = lit_cb, .arg = &lits,
		.ranges = ranges, .nranges = NRANGES, .range_fn = range_cb, .range_arg = per,
	};
	uintptr_t pos = addr;
	size_t i, done = 0;

	srand(seed);
	for (i = 0; i < NSYNC; i++)
		sync[i] = addr + (size_t)rand() % len;
	qsort(sync, NSYNC, sizeof(sync[0]), ukp_addr_cmp);
	for (i = 0; i < NRANGES; i++) {
		/* mostly short, a few longer than 64 KiB, gaps and touching ends */
		size_t rlen = i % 16 == 5 ? 70000 + (size_t)rand() % 30000 : 1 + (size_t)rand() % 3000;

		pos += i % 3 ? 0 : (size_t)rand() % 200;
		ranges[i].start = pos;
		ranges[i].end = pos + rlen;
		ranges[i].done = i == 7;	/* done already: left alone */
		pos += rlen;
	}
	cr_assert_eq(arch_scan_literals(&sc), 0);
	sc.ranges = NULL;
	sc.nranges = 0;
	sc.range_fn = NULL;
	sc.arg = &lits_alone;
	cr_assert_eq(arch_scan_literals(&sc), 0);
	cr_expect_eq(lits.n, lits_alone.n);
	cr_expect(!memcmp(lits.v, lits_alone.v, lits.n * sizeof(*lits.v)), "literals differ");
	for (i = 0; i < NRANGES; i++) {
		bool inside = ranges[i].end <= addr + len;
		struct found alone = { 0 };
		struct arch_code_part part = {
			.addr = ranges[i].start, .code = code + (ranges[i].start - addr),
			.len = ranges[i].end - ranges[i].start,
		};

		if (i == 7) {
			cr_expect_eq(per[i].n, 0);
			continue;
		}
		cr_expect_eq(ranges[i].done, inside, "range %zu", i);
		if (!inside) {
			cr_expect_eq(per[i].n, 0);
			continue;
		}
		done++;
		cr_assert_eq(arch_scan_flow(&part, 1, 0, 0, ARCH_FLOW_DIRECT_ONLY, alone_cb, &alone),
			     0);
		cr_expect_eq(per[i].n, alone.n, "range %zu: %zu findings, alone %zu", i, per[i].n / 2,
			     alone.n / 2);
		cr_expect(!memcmp(per[i].v, alone.v, alone.n * sizeof(*alone.v)),
			  "range %zu: findings differ", i);
		free(alone.v);
		free(per[i].v);
	}
	cr_expect_gt(done, NRANGES / 2);
	free(lits.v);
	free(lits_alone.v);
}

Test(codeflow, one_pass_ranges_random_bytes)
{
	size_t len = 1u << 20, i;
	uint8_t *code = malloc(len);

	cr_assert_not_null(code);
	srand(14);
	for (i = 0; i < len; i++)
		code[i] = (uint8_t)rand();
	one_pass_case(code, len, 0x400000, 1);
	one_pass_case(code, len, 0x400000, 2);
	free(code);
}

/* fn on a copy of each executable segment of this test's own code. */
static void for_each_own_code(void (*fn)(const uint8_t *code, size_t len, uintptr_t start,
					 void *arg),
			      void *arg)
{
	const struct ukp_object *obj = ukp_object_of((uintptr_t)ukt_flow_plain);
	struct ukp_eh_frame eh = { 0 };
	size_t i;

	cr_assert_not_null(obj);
	cr_assert_eq(ukp_eh_frame_load(obj, &eh), 0);
	for (i = 0; i < eh.nsegs; i++) {
		size_t len = eh.segs[i].end - eh.segs[i].start;
		uint8_t *code;

		if (!eh.segs[i].exec)
			continue;
		code = malloc(len);
		cr_assert_not_null(code);
		cr_assert_eq(ukp_read_original(eh.segs[i].start, code, len), len);
		fn(code, len, eh.segs[i].start, arg);
		free(code);
	}
	ukp_eh_frame_free(&eh);
}

static void one_pass_segment(const uint8_t *code, size_t len, uintptr_t start, void *arg)
{
	(void)arg;
	one_pass_case(code, len, start, 3);
}

Test(codeflow, one_pass_ranges_real_code)
{
	/* this test's own code, from the start of its text segment */
	for_each_own_code(one_pass_segment, NULL);
}

/* The sorted sets of the index: what qsort and dropping repeats give. */
Test(codeflow, addrs_sort_unique)
{
	static const size_t sizes[] = { 1, 2, 31, 32, 33, 1000, 100000 };
	size_t s, i, n, k;

	srand(7);
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (unsigned int shape = 0; shape < 5; shape++) {
			uintptr_t *a = malloc(sizes[s] * sizeof(*a)), *b = malloc(sizes[s] * sizeof(*b));

			cr_assert(a && b);
			n = sizes[s];
			for (i = 0; i < n; i++) {
				uintptr_t r = ((uintptr_t)rand() << 33) ^ ((uintptr_t)rand() << 11) ^
					      (uintptr_t)rand();

				a[i] = shape == 0 ? 0x400000 + r % 0x600000 :	/* code-like */
				       shape == 1 ? r :				/* 64 bits */
				       shape == 2 ? 0x7f0000000000 + r % 64 :	/* repeats */
				       shape == 3 ? 0x1000 + i * 8 :		/* sorted */
						    UINTPTR_MAX - i % 5;	/* top, reversed */
			}
			memcpy(b, a, n * sizeof(*a));
			qsort(b, n, sizeof(*b), ukp_addr_cmp);
			for (i = 0, k = 0; i < n; i++)
				if (!k || b[k - 1] != b[i])
					b[k++] = b[i];
			cr_assert_eq(ukp_addrs_sort_unique(a, n), k, "size %zu shape %u", n, shape);
			cr_assert(!memcmp(a, b, k * sizeof(*a)), "size %zu shape %u", n, shape);
			free(a);
			free(b);
		}
	}
}

/* ---- the table decoder of whole-object scans against Zydis ---- */

/* Zydis's minimal decoding of p, as struct x86_lite, or false. */
static bool zydis_lite(const uint8_t *p, size_t avail, struct x86_lite *out)
{
	ZydisDecodedInstruction insn;
	unsigned int i;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(ukp_x86_decoder(true), NULL, p, avail,
							&insn)))
		return false;
	memset(out, 0, sizeof(*out));
	out->len = insn.length;
	out->has_modrm = insn.attributes & ZYDIS_ATTRIB_HAS_MODRM;
	out->mod = out->has_modrm ? insn.raw.modrm.mod : 0;
	out->rm = out->has_modrm ? insn.raw.modrm.rm : 0;
	for (i = 0; i < 2; i++) {
		out->imm[i].size = insn.raw.imm[i].size;
		out->imm[i].rel = insn.raw.imm[i].is_relative;
		out->imm[i].value = insn.raw.imm[i].value.u;
	}
	out->disp_size = insn.raw.disp.size;
	out->disp = insn.raw.disp.value;
	/* (the table decodes no lea but those with a 64-bit address) */
	if (insn.mnemonic == ZYDIS_MNEMONIC_JMP && !insn.raw.imm[0].is_relative)
		out->flow = LITE_FLOW_FULL;
	else if (insn.mnemonic == ZYDIS_MNEMONIC_LEA && out->has_modrm && out->mod == 0 &&
		 out->rm == 5)
		out->flow = LITE_FLOW_LEA_RIP;
	return true;
}

/* The fields the scans read, the same? (Non-relative immediates: their
 * low size bits.) */
static bool lite_same(const struct x86_lite *a, const struct x86_lite *b)
{
	unsigned int i;

	if (a->len != b->len || a->has_modrm != b->has_modrm || a->disp_size != b->disp_size ||
	    (a->disp_size && a->disp != b->disp) || a->flow != b->flow)
		return false;
	if (a->has_modrm && (a->mod != b->mod || a->rm != b->rm))
		return false;
	for (i = 0; i < 2; i++) {
		uint64_t mask = a->imm[i].size >= 64 ? ~0ULL : (1ULL << a->imm[i].size) - 1;

		if (a->imm[i].size != b->imm[i].size || a->imm[i].rel != b->imm[i].rel)
			return false;
		if (a->imm[i].rel ? a->imm[i].value != b->imm[i].value :
				    ((a->imm[i].value ^ b->imm[i].value) & mask))
			return false;
	}
	return true;
}

/* The table against Zydis on a segment of real code; counts[0] the
 * instructions the table decoded, counts[1] all. */
static void lite_segment(const uint8_t *code, size_t len, uintptr_t start, void *arg)
{
	size_t *counts = arg, pos = 0;

	while (pos < len) {
		struct x86_lite f, z;
		bool zok = zydis_lite(code + pos, len - pos, &z);

		if (ukp_x86_lite_fast(code + pos, len - pos, &f)) {
			counts[0]++;
			cr_assert(zok && lite_same(&f, &z), "at %#lx", (unsigned long)(start + pos));
		}
		counts[1]++;
		pos += zok ? z.len : 1;
	}
}

/*
 * Every opcode (one byte and 0F xx), without and with each REX prefix,
 * with every ModRM byte and, where it has one, every SIB byte, followed
 * by bytes whose sign bits are set: where the table decodes, Zydis
 * decodes the same; cut one byte short, the table leaves it to Zydis.
 * And the table decodes most of this test's own code.
 */
Test(codeflow, lite_decoder_is_zydis)
{
	uint8_t b[32];
	size_t handled = 0, i, fast, total, counts[2] = { 0, 0 };

	cr_assert_not_null(ukp_x86_decoder(true));
	for (unsigned int rex = 0; rex <= 0x10; rex++) {
		for (unsigned int op = 0; op < 512; op++) {
			size_t n = 0, at;

			if (rex)
				b[n++] = (uint8_t)(0x3f + rex);
			if (op >= 256)
				b[n++] = 0x0f;
			b[n++] = (uint8_t)op;
			at = n;
			for (unsigned int modrm = 0; modrm < 256; modrm++) {
				for (unsigned int sib = 0; sib < 256; sib++) {
					struct x86_lite f, z;
					bool zok;

					b[at] = (uint8_t)modrm;
					b[at + 1] = (uint8_t)sib;
					for (i = at + 2; i < sizeof(b); i++)
						b[i] = (uint8_t)(0x80 + 3 * i);
					if (!ukp_x86_lite_fast(b, sizeof(b), &f))
						break;	/* nor with another SIB */
					handled++;
					zok = zydis_lite(b, sizeof(b), &z);
					cr_assert(zok && lite_same(&f, &z),
						  "%02x %02x %02x %02x %02x: table len %u, zydis %s len %u",
						  b[0], b[1], b[2], b[3], b[4], f.len,
						  zok ? "ok" : "fails", zok ? z.len : 0);
					cr_assert(!ukp_x86_lite_fast(b, f.len - 1u, &z));
					/* the SIB matters only where there is one */
					if (!f.has_modrm || f.mod == 3 || f.rm != 4)
						break;
				}
			}
		}
	}
	cr_expect_gt(handled, 100000);
	for_each_own_code(lite_segment, counts);
	fast = counts[0];
	total = counts[1];
	cr_expect_gt(fast, total / 2, "the table decoded %zu of %zu instructions", fast, total);
}

/* ----------------------------------- the table decoder's flow scans */

#define FLOW_REPORTS_MAX 4096

struct flow_report {
	int kind;
	uintptr_t from, target;
};

struct flow_reports {
	struct flow_report v[FLOW_REPORTS_MAX];
	size_t n;
	bool overflow;
};

static int collect_report(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct flow_reports *r = arg;

	if (r->n == FLOW_REPORTS_MAX) {
		r->overflow = true;
		return 0;
	}
	r->v[r->n++] = (struct flow_report){ (int)kind, from, target };
	return 0;
}

struct flow_cmp {
	size_t functions, differ;
	char first[160];
	struct flow_reports a, b;
};

/* One function both ways: the scan that takes the table decoder where
 * it can and the full decoder's must report the same, in order. */
static void compare_flow(const struct ukp_symres *sym, void *arg)
{
	struct flow_cmp *c = arg;
	struct arch_code_part part;
	uint8_t *code;

	if (!sym->func || !sym->size || sym->size > (1u << 20))
		return;
	code = malloc(sym->size);
	cr_assert_not_null(code);
	if (ukp_read_original(sym->start, code, sym->size) != sym->size) {
		free(code);
		return;
	}
	part = (struct arch_code_part){ sym->start, code, sym->size };
	c->a.n = c->b.n = 0;
	c->a.overflow = c->b.overflow = false;
	cr_assert_eq(arch_scan_flow(&part, 1, sym->start, sym->start + sym->size, 0,
				    collect_report, &c->a), 0);
	cr_assert_eq(arch_scan_flow(&part, 1, sym->start, sym->start + sym->size, ARCH_FLOW_FULL,
				    collect_report, &c->b), 0);
	c->functions++;
	bool same = c->a.n == c->b.n && c->a.overflow == c->b.overflow;

	/* field by field: the structs' padding is not theirs to compare */
	for (size_t k = 0; same && k < c->a.n; k++)
		same = c->a.v[k].kind == c->b.v[k].kind && c->a.v[k].from == c->b.v[k].from &&
		       c->a.v[k].target == c->b.v[k].target;
	if (!same) {
		if (!c->differ++)
			snprintf(c->first, sizeof(c->first), "%s: %zu reports, full decoder %zu",
				 sym->name, c->a.n, c->b.n);
	}
	free(code);
}

Test(codeflow, table_decoder_scans_report_as_the_full_decoder, .timeout = 240)
{
	static const char *const objs[] = { "libz.so.1", "libc.so.6", "libsqlite3.so.0",
					    "libpython3.11.so.1.0", "libstdc++.so.6" };
	struct flow_cmp *c = calloc(1, sizeof(*c));

	cr_assert_not_null(c);
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		size_t before = c->functions;

		/* loaded for the look-ups (kept: the symbols stay valid) */
		cr_assert_not_null(dlopen(objs[i], RTLD_NOW | RTLD_GLOBAL), "%s: %s", objs[i],
				   dlerror());
		cr_assert_eq(ukp_lock_for_show(), 0);
		ukp_for_each_symbol(objs[i], compare_flow, c);
		ukp_unlock_for_show();
		cr_expect_gt(c->functions, before + 50, "%s: %zu functions scanned", objs[i],
			     c->functions - before);
	}
	cr_expect_eq(c->differ, 0, "%zu of %zu functions scanned differently; first: %s",
		     c->differ, c->functions, c->first);
	fprintf(stderr, "flow scans: %zu functions, both ways the same\n", c->functions);
	free(c);
}

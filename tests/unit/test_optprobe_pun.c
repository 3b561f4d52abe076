// SPDX-License-Identifier: MIT
/*
 * test_optprobe_pun.c - punned jumps (optimizer.c, "instruction
 * punning"): a probe whose 5-byte region a jump of the function targets
 * gets a jump over its first instruction alone, whose rel32 ends in the
 * next instructions' unchanged bytes. It fires, the loop that jumps right
 * after it still runs, a probe registered in those bytes unoptimizes it
 * first, no punned jump is made over another probe, unregistration gives
 * the bytes back; and on real libsqlite3 code the old jump refused, the
 * punned probes count what breakpoints count, with the same results.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <sqlite3.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "symbols/symbols.h"
#include "ukprobes.h"
#include "ukp_test.h"

__asm__(
	".text\n"
	/* The loop jumps right after the probed xor: a 5-byte jump at
	 * pun_loop would cut the loop's target in two. Returns max(n, 1). */
	".globl pun_loop\n .type pun_loop,@function\n .p2align 4\n"
	"pun_loop:\n"
	"	xorl %eax, %eax\n"			/* 31 c0: the punned jump's 2 bytes */
	"1:	addl $1, %eax\n"			/* 83 c0 01: its rel32's last 3 */
	"	cmpl %edi, %eax\n"
	"	jl 1b\n"
	"	ret\n"
	".size pun_loop, .-pun_loop\n");

int pun_loop(int n);
#define pun_loop_body ((const char *)pun_loop + 2)

static atomic_long hits, body_hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p, (void)regs;
	atomic_fetch_add(&hits, 1);
	return 0;
}

static int body_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p, (void)regs;
	atomic_fetch_add(&body_hits, 1);
	return 0;
}

static void reg(struct kprobe *kp)
{
	cr_assert_eq(register_kprobe(kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
}

/* Where the jump at a lands (prefixes, e9, rel32). */
static uintptr_t jump_target(const uint8_t *a)
{
	size_t k = 0;
	int32_t rel;

	while (a[k] == 0x26 && k < 3)
		k++;
	cr_assert_eq(a[k], 0xe9, "no jump at %p: %02x", (void *)a, a[k]);
	memcpy(&rel, a + k + 1, 4);
	return (uintptr_t)a + k + 5 + (uintptr_t)(intptr_t)rel;
}

Test(pun, a_punned_jump_fires_and_the_loop_behind_it_runs)
{
	struct kprobe kp = { .addr = (void *)pun_loop, .pre_handler = count_pre };
	const uint8_t *code = (const uint8_t *)pun_loop;
	uint8_t before[16];
	const char *why = NULL;
	static const uint8_t detour_entry[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };
	long want = 0;
	int i;

	memcpy(before, code, sizeof(before));
	ukp_opt_pun = false;
	cr_expect_eq(ukprobes_optimizable((void *)pun_loop, &why), UKPROBES_OPT_NONE);
	cr_expect(why && strstr(why, "jump in the function targets the region"), "%s",
		  why ? why : "-");
	ukp_opt_pun = true;
	cr_expect_eq(ukprobes_optimizable((void *)pun_loop, &why), UKPROBES_OPT_JUMP, "%s",
		     why ? why : "-");
	reg(&kp);
	cr_assert(kprobe_optimized(&kp));
	/* the jump wrote the xor's 2 bytes only, and lands on the detour */
	cr_expect(code[0] == 0xe9 || code[0] == 0x26, "%02x", code[0]);
	cr_expect_eq(memcmp(code + 2, before + 2, sizeof(before) - 2), 0);
	cr_expect_eq(memcmp((const void *)jump_target(code), detour_entry, sizeof(detour_entry)),
		     0);
	for (i = 1; i <= 200; i++) {
		cr_expect_eq(pun_loop(i), i);
		want++;
	}
	cr_expect_eq(atomic_load(&hits), want);
	cr_expect(kprobe_optimized(&kp));
	unregister_kprobe(&kp);
	cr_expect_eq(memcmp(code, before, sizeof(before)), 0, "the bytes are not given back");
	cr_expect_eq(pun_loop(7), 7);
	cr_expect_eq(atomic_load(&hits), want);
}

Test(pun, a_probe_in_the_jumps_last_bytes_unoptimizes_it_first)
{
	struct kprobe kp = { .addr = (void *)pun_loop, .pre_handler = count_pre };
	struct kprobe body = { .addr = (void *)pun_loop_body, .pre_handler = body_pre };
	const uint8_t *code = (const uint8_t *)pun_loop;
	uint8_t before[16];
	const char *why = NULL;

	memcpy(before, code, sizeof(before));
	reg(&kp);
	cr_assert(kprobe_optimized(&kp));
	/* pun_loop_body is in the jump's rel32: the jump goes before the
	 * breakpoint is written there */
	reg(&body);
	cr_expect(!kprobe_optimized(&kp));
	cr_expect(ukt_breakpoint_at(code), "%02x", code[0]);
	cr_expect_eq(code[1], before[1]);
	cr_expect_eq(ukprobes_optimizable((void *)pun_loop, &why), UKPROBES_OPT_NONE);
	cr_expect(why && strstr(why, "another probe"), "%s", why ? why : "-");
	cr_expect_eq(pun_loop(10), 10);
	cr_expect_eq(atomic_load(&hits), 1);
	cr_expect_eq(atomic_load(&body_hits), 10);
	/* the neighbour gone, the punned jump comes back */
	unregister_kprobe(&body);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_expect(kprobe_optimized(&kp));
	cr_expect_eq(memcmp(code + 2, before + 2, sizeof(before) - 2), 0);
	cr_expect_eq(pun_loop(5), 5);
	cr_expect_eq(atomic_load(&hits), 2);
	cr_expect_eq(atomic_load(&body_hits), 10);
	unregister_kprobe(&kp);
	cr_expect_eq(memcmp(code, before, sizeof(before)), 0, "the bytes are not given back");
}

Test(pun, no_punned_jump_over_another_probe)
{
	struct kprobe kp = { .addr = (void *)pun_loop, .pre_handler = count_pre };
	struct kprobe body = { .addr = (void *)pun_loop_body, .pre_handler = body_pre };

	reg(&body);
	reg(&kp);
	cr_expect(!kprobe_optimized(&kp));
	cr_expect(ukt_breakpoint_at((const void *)pun_loop));
	cr_expect_eq(pun_loop(3), 3);
	cr_expect_eq(atomic_load(&hits), 1);
	cr_expect_eq(atomic_load(&body_hits), 3);
	unregister_kprobe(&kp);
	unregister_kprobe(&body);
}

/* ------------------------------------------------------ libsqlite3 */

/* Functions a small workload runs through (exported or named by the
 * library's MiniDebugInfo). */
static const char *const sql_funcs[] = {
	"sqlite3VdbeExec", "sqlite3_step", "sqlite3BtreeInsert", "sqlite3VdbeRecordCompare",
	"sqlite3_prepare_v2", "sqlite3BtreeNext", "sqlite3VdbeSerialPut", "sqlite3_exec",
	"sqlite3GetToken", "sqlite3VdbeMemRelease", "sqlite3_finalize", "sqlite3_bind_text",
};

#define MAX_SITES 64

struct site_probe {
	struct kprobe kp;
	atomic_long n;
	long first;
};

static struct site_probe sites[MAX_SITES];

static int site_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)regs;
	atomic_fetch_add(&((struct site_probe *)p)->n, 1);
	return 0;
}

/* An in-memory table, 300 rows, queries; what they return, as text. */
static void sql_workload(char *out, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t pos = 0;
	int i;

	cr_assert_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, g INT);"
				  "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1, ?2, ?3)", -1, &st, NULL),
		     SQLITE_OK);
	for (i = 0; i < 300; i++) {
		char name[32];

		snprintf(name, sizeof(name), "n%05d", (i * 7919) % 300);
		sqlite3_bind_int(st, 1, i + 1);
		sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 3, i % 9);
		cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT g, count(*), sum(id), max(name) FROM t "
				       "GROUP BY g ORDER BY g", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && pos < len)
		pos += (size_t)snprintf(out + pos, len - pos, "%d %d %lld %s;",
					sqlite3_column_int(st, 0), sqlite3_column_int(st, 1),
					sqlite3_column_int64(st, 2), sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Instruction boundaries of the functions where the jump over whole
 * instructions is refused because a jump lands in its 5 bytes and a
 * punned jump is not, at least 16 bytes apart. */
static int find_sites(void)
{
	int n = 0;
	size_t f;

	for (f = 0; f < sizeof(sql_funcs) / sizeof(sql_funcs[0]) && n < MAX_SITES; f++) {
		struct ukp_symres sym;
		uintptr_t start, last = 0;
		uint8_t *code;
		size_t off, avail;

		cr_assert_eq(ukp_lock_for_show(), 0);
		if (ukp_sym_lookup_name(sql_funcs[f], &start) || ukp_sym_lookup_addr(start, &sym)) {
			ukp_unlock_for_show();
			continue;
		}
		code = malloc(sym.size + 16);
		cr_assert_not_null(code);
		avail = ukp_read_original(sym.start, code, sym.size + 16);
		ukp_unlock_for_show();
		/* a few per function: sites of several functions */
		for (off = 0; off < sym.size && n < MAX_SITES && n < 6 * (int)(f + 1);) {
			size_t l = arch_insn_length(code + off, avail - off);
			const char *why = NULL;
			void *a = (void *)(sym.start + off);

			if (!l)
				break;
			if (off && sym.start + off >= last + 16) {
				ukp_opt_pun = false;
				if (ukprobes_optimizable(a, &why) == UKPROBES_OPT_NONE && why &&
				    strstr(why, "jump") && strstr(why, "targets the region")) {
					ukp_opt_pun = true;
					if (ukprobes_optimizable(a, &why) == UKPROBES_OPT_JUMP) {
						sites[n].kp.addr = a;
						sites[n].kp.pre_handler = site_pre;
						n++;
						last = sym.start + off;
					}
				}
				ukp_opt_pun = true;
			}
			off += l;
		}
		free(code);
	}
	return n;
}

/* Is a punned jump's window at a still free for a detour? Predictions
 * are made before the registration: meanwhile a mapping (a thread's
 * malloc arena, 64 MiB, with ASLR off right below the libraries) may
 * have taken a one-address window. */
static bool pun_window_free(uintptr_t a)
{
	uint8_t code[32];
	uintptr_t lo, hi;
	unsigned int pad;
	bool free_ = false;
	size_t n;

	cr_assert_eq(ukp_lock_for_show(), 0);
	n = ukp_read_original(a, code, sizeof(code));
	for (pad = 0; !free_ && arch_opt_pun_window(code, n, a, pad, &lo, &hi); pad++)
		free_ = hi >= lo && ukp_slot_alloc_window(lo, hi, UKP_DETOUR_SIZE, false);
	ukp_unlock_for_show();
	return free_;
}

Test(pun, libsqlite3_sites_the_old_jump_refused_count_what_breakpoints_count)
{
	static char plain[4096], punned[4096], bps[4096];
	struct kprobe *kps[MAX_SITES];
	long total = 0;
	int n, i, fired = 0, taken = 0;

	sql_workload(plain, sizeof(plain));
	n = find_sites();
	cr_log_info("%d sites\n", n);
	cr_assert_geq(n, 8, "only %d punnable sites", n);
	for (i = 0; i < n; i++)
		kps[i] = &sites[i].kp;
	cr_assert_eq(register_kprobes(kps, n), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	/* every one, unless its window was taken since (then it is not
	 * free now, and most are still made) */
	for (i = 0; i < n; i++) {
		if (kprobe_optimized(kps[i]))
			continue;
		cr_expect(!pun_window_free((uintptr_t)kps[i]->addr),
			  "%p not optimized, its punned jump's window is free", kps[i]->addr);
		taken++;
	}
	cr_expect_leq(taken, n / 4, "%d of %d not optimized", taken, n);
	sql_workload(punned, sizeof(punned));
	cr_expect_str_eq(punned, plain);
	for (i = 0; i < n; i++) {
		sites[i].first = atomic_load(&sites[i].n);
		total += sites[i].first;
		fired += sites[i].first > 0 && kprobe_optimized(kps[i]);
		atomic_store(&sites[i].n, 0);
	}
	cr_log_info("%ld hits, %d optimized probes hit\n", total, fired);
	cr_expect_gt(fired, 0, "no punned probe was hit");
	/* the same on the breakpoint path */
	cr_assert_eq(kprobes_set_optimization(false), 0);
	sql_workload(bps, sizeof(bps));
	cr_expect_str_eq(bps, plain);
	for (i = 0; i < n; i++)
		cr_expect_eq(atomic_load(&sites[i].n), sites[i].first, "%p: %ld vs %ld",
			     kps[i]->addr, atomic_load(&sites[i].n), sites[i].first);
	cr_assert_eq(kprobes_set_optimization(true), 0);
	unregister_kprobes(kps, n);
}

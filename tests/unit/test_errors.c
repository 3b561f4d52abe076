/* SPDX-License-Identifier: MIT */
/*
 * Registration semantics and every error path of register_kprobe(), as
 * the kernel gives them (kernel-behaviour.md §2, §14).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ukprobes.h"
#include "ukp_test.h"

/* Functions with known instruction layouts. */
__asm__(".text\n"
	".globl t_movabs\n.type t_movabs,@function\n"
	"t_movabs:\n"
	"	movabsq $0x1122334455667788, %rax\n" /* 10 bytes */
	"	ret\n"
	".size t_movabs, .-t_movabs\n"

	".globl t_ud2\n.type t_ud2,@function\n"
	"t_ud2:\n"
	"	nop\n"
	"	ud2\n"
	"	ret\n"
	".size t_ud2, .-t_ud2\n"

	".globl t_int3\n.type t_int3,@function\n"
	"t_int3:\n"
	"	nop\n"
	"	int3\n"
	"	ret\n"
	".size t_int3, .-t_int3\n"

	".globl t_far\n.type t_far,@function\n"
	"t_far:\n"
	"	nop\n"
	"	.byte 0xff, 0x28\n" /* ljmp *(%rax) */
	"	iretq\n"
	"	ret\n"
	".size t_far, .-t_far\n"

	".globl t_short\n.type t_short,@function\n"
	"t_short:\n"
	"	ret\n"
	".size t_short, .-t_short\n"
	".p2align 5, 0xcc\n"

	".globl t_riprel\n.type t_riprel,@function\n"
	"t_riprel:\n"
	"	movl t_riprel_data(%rip), %eax\n"
	"	addl $1, %eax\n"
	"	ret\n"
	".size t_riprel, .-t_riprel\n"

	".globl t_syscall\n.type t_syscall,@function\n"
	"t_syscall:\n" /* returns rcx as the syscall left it */
	"	movl $39, %eax\n" /* getpid */
	".globl t_syscall_insn\n"
	"t_syscall_insn:\n"
	"	syscall\n"
	".globl t_syscall_next\n"
	"t_syscall_next:\n"
	"	movq %rcx, %rax\n"
	"	ret\n"
	".size t_syscall, .-t_syscall\n"

	".globl t_endbr\n.type t_endbr,@function\n"
	"t_endbr:\n"
	"	endbr64\n"
	"	leal 1(%rdi), %eax\n"
	"	ret\n"
	".size t_endbr, .-t_endbr\n"

	".data\n"
	".globl t_riprel_data\n"
	"t_riprel_data: .long 41\n"
	".text\n");

extern char t_movabs[], t_ud2[], t_int3[], t_far[], t_short[], t_riprel[];
extern char t_syscall[], t_syscall_insn[], t_syscall_next[], t_endbr[];
long t_syscall_fn(void) __asm__("t_syscall");
int t_riprel_fn(void) __asm__("t_riprel");
int t_endbr_fn(int) __asm__("t_endbr");

UKP_TARGET int err_target(int v)
{
	return v * 3 + 1;
}

UKP_TARGET int forbidden_target(int v)
{
	return v - 1;
}
NOKPROBE_SYMBOL(forbidden_target);

static int hits;
static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	hits++;
	return 0;
}

static int data_object = 5;

Test(errors, addr_and_symbol_both_or_neither)
{
	struct kprobe both = { .symbol_name = "err_target", .addr = (void *)err_target };
	struct kprobe neither = { .pre_handler = count_pre };

	cr_expect_eq(register_kprobe(&both), -EINVAL);
	cr_expect_eq(register_kprobe(&neither), -EINVAL);
	cr_expect_eq(register_kprobe(NULL), -EINVAL);
}

Test(errors, unknown_symbol_and_object)
{
	struct kprobe a = { .symbol_name = "no_such_function_anywhere" };
	struct kprobe b = { .symbol_name = "libnosuch.so.9:deflate" };
	struct kprobe c = { .symbol_name = "libc.so.6:err_target" };

	cr_expect_eq(register_kprobe(&a), -ENOENT);
	cr_expect_eq(register_kprobe(&b), -ENOENT);
	cr_expect_eq(register_kprobe(&c), -ENOENT);
}

Test(errors, same_struct_twice)
{
	struct kprobe kp = { .symbol_name = "err_target", .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	kp.addr = NULL; /* even with the reuse idiom, it is still registered */
	cr_expect_eq(register_kprobe(&kp), -EINVAL);
	unregister_kprobe(&kp);
}

Test(errors, not_on_instruction_boundary)
{
	struct kprobe kp = { .addr = (void *)(t_movabs + 1) };
	struct kprobe kp2 = { .symbol_name = "t_movabs", .offset = 5 };
	struct kprobe ok = { .symbol_name = "t_movabs", .offset = 10 };

	cr_expect_eq(register_kprobe(&kp), -EILSEQ);
	cr_expect_eq(register_kprobe(&kp2), -EILSEQ);
	cr_expect_eq(register_kprobe(&ok), 0, "the ret after movabs is a boundary");
	unregister_kprobe(&ok);
}

Test(errors, exception_instructions)
{
	struct kprobe a = { .addr = (void *)(t_ud2 + 1) };
	struct kprobe b = { .addr = (void *)(t_int3 + 1) };

	cr_expect_eq(register_kprobe(&a), -EILSEQ);
	cr_expect_eq(register_kprobe(&b), -EILSEQ);
}

Test(errors, neither_executable_nor_emulatable)
{
	struct kprobe ljmp = { .addr = (void *)(t_far + 1) };
	struct kprobe iret = { .addr = (void *)(t_far + 3) };

	cr_expect_eq(register_kprobe(&ljmp), -EOPNOTSUPP);
	cr_expect_eq(register_kprobe(&iret), -EOPNOTSUPP);
}

Test(errors, not_executable_code)
{
	int on_stack = 1;
	void *heap = malloc(64);
	struct kprobe a = { .addr = (void *)&data_object };
	struct kprobe b = { .addr = (void *)&on_stack };
	struct kprobe c = { .addr = heap };

	cr_expect_eq(register_kprobe(&a), -EINVAL);
	cr_expect_eq(register_kprobe(&b), -EINVAL);
	cr_expect_eq(register_kprobe(&c), -EINVAL);
	free(heap);
}

Test(errors, address_inside_no_symbol)
{
	/* t_short is one byte; the padding after it belongs to no symbol */
	struct kprobe kp = { .addr = (void *)(t_short + 1) };

	cr_expect_eq(register_kprobe(&kp), -ENOENT);
}

Test(errors, blacklisted)
{
	struct kprobe lib = { .addr = (void *)register_kprobe };
	struct kprobe user = { .symbol_name = "forbidden_target" };
	struct kprobe inside = { .addr = (void *)forbidden_target, .offset = 1 };

	cr_expect_eq(register_kprobe(&lib), -EINVAL, "the library's own code");
	cr_expect_eq(register_kprobe(&user), -EINVAL, "NOKPROBE_SYMBOL");
	/* any address inside the function, even mid-instruction: blacklist first */
	cr_expect_eq(register_kprobe(&inside), -EINVAL);
}

Test(errors, addr_written_even_on_failure)
{
	struct kprobe kp = { .symbol_name = "t_movabs", .offset = 3 };

	cr_expect_eq(register_kprobe(&kp), -EILSEQ);
	cr_expect_eq((void *)kp.addr, (void *)(t_movabs + 3));
}

Test(errors, unregister_unregistered_clears_addr)
{
	struct kprobe kp = { .addr = (void *)err_target };

	unregister_kprobe(&kp);
	cr_expect_null(kp.addr);
}

Test(errors, successful_unregister_leaves_addr_and_disabled)
{
	struct kprobe kp = { .symbol_name = "err_target", .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)err_target);
	unregister_kprobe(&kp);
	cr_expect_eq((void *)kp.addr, (void *)err_target);
	cr_expect(kp.flags & KPROBE_FLAG_DISABLED);
	/* reuse without flags = 0 registers a disabled probe (kernel pitfall) */
	kp.addr = NULL;
	hits = 0;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(err_target(1), 4);
	cr_expect_eq(hits, 0);
	cr_expect_eq(enable_kprobe(&kp), 0);
	cr_expect_eq(err_target(1), 4);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&kp);
}

Test(errors, only_disabled_flag_is_kept)
{
	struct kprobe kp = { .addr = (void *)err_target, .pre_handler = count_pre,
			     .flags = KPROBE_FLAG_DISABLED | KPROBE_FLAG_GONE | KPROBE_FLAG_OPTIMIZED,
			     .nmissed = 77 };

	hits = 0;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(kp.flags & ~KPROBE_FLAG_ON_FUNC_ENTRY, KPROBE_FLAG_DISABLED);
	cr_expect(kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	cr_expect_eq(kp.nmissed, 0);
	err_target(2);
	cr_expect_eq(hits, 0, "registered disabled: no hit");
	cr_expect_eq(enable_kprobe(&kp), 0);
	err_target(2);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&kp);
}

Test(errors, register_kprobes_rolls_back)
{
	struct kprobe good1 = { .symbol_name = "err_target", .pre_handler = count_pre };
	struct kprobe good2 = { .symbol_name = "t_riprel", .pre_handler = count_pre };
	struct kprobe bad = { .symbol_name = "no_such_function_anywhere" };
	struct kprobe *kps[3] = { &good1, &good2, &bad };

	hits = 0;
	cr_expect_eq(register_kprobes(kps, 3), -ENOENT);
	err_target(1);
	t_riprel_fn();
	cr_expect_eq(hits, 0, "the registered prefix was unregistered");
	cr_expect_eq(register_kprobes(kps, 0), -EINVAL);
	unregister_kprobes(kps, 0); /* no-op */
	unregister_kprobes(kps, -1);
	/* and they can be registered again with the reuse idiom */
	good1.addr = NULL;
	good1.flags = 0;
	cr_expect_eq(register_kprobe(&good1), 0);
	err_target(1);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&good1);
}

Test(errors, symbol_plus_offset)
{
	struct kprobe kp = { .symbol_name = "t_movabs", .offset = 10, .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)(t_movabs + 10));
	cr_expect_eq(kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY, 0);
	unregister_kprobe(&kp);
}

/* A rip-relative load runs out of line with its displacement re-based. */
Test(errors, riprel_instruction_out_of_line)
{
	struct kprobe kp = { .addr = (void *)t_riprel, .pre_handler = count_pre };

	hits = 0;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(kp.opcode, 0x8b);
	cr_expect_eq(t_riprel_fn(), 42);
	cr_expect_eq(t_riprel_fn(), 42);
	cr_expect_eq(hits, 2);
	unregister_kprobe(&kp);
	cr_expect_eq(t_riprel_fn(), 42);
	cr_expect_eq(hits, 2);
}

/* A system call copied out of line leaves rcx as it would at home. */
Test(errors, syscall_out_of_line_fixes_rcx)
{
	struct kprobe kp = { .addr = (void *)t_syscall_insn, .pre_handler = count_pre };

	cr_expect_eq(t_syscall_fn(), (long)t_syscall_next);
	hits = 0;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(t_syscall_fn(), (long)t_syscall_next);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&kp);
}

/* On a function that starts with endbr64, an entry probe moves past it. */
Test(errors, endbr64_entry_is_stepped_over)
{
	struct kprobe kp = { .symbol_name = "t_endbr", .pre_handler = count_pre };

	hits = 0;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)(t_endbr + 4));
	cr_expect(kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	cr_expect_eq(t_endbr_fn(1), 2);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&kp);
}

/* ukprobes_probe_addr says where registration puts a probe, registering
 * nothing: past the endbr64, on the entry or not, the same errors. */
Test(errors, probe_addr_before_registering)
{
	struct kprobe by_name = { .symbol_name = "t_endbr" };
	struct kprobe by_addr = { .addr = (void *)t_endbr };
	struct kprobe inside = { .symbol_name = "t_movabs", .offset = 10 };
	struct kprobe bad[] = {
		{ .symbol_name = "no_such_function_anywhere" },
		{ .symbol_name = "err_target", .addr = (void *)err_target },
		{ .addr = (void *)&data_object },
	};
	int want[] = { -ENOENT, -EINVAL, -EINVAL };
	void *a = NULL;
	bool entry = false;
	size_t i;

	cr_assert_eq(ukprobes_probe_addr(&by_name, &a, &entry), 0);
	cr_expect_eq(a, (void *)(t_endbr + 4));
	cr_expect(entry);
	cr_expect_null(by_name.addr, "the kprobe is left as it was");
	a = NULL;
	entry = false;
	cr_assert_eq(ukprobes_probe_addr(&by_addr, &a, &entry), 0);
	cr_expect_eq(a, (void *)(t_endbr + 4));
	cr_expect(entry);
	cr_assert_eq(ukprobes_probe_addr(&inside, &a, &entry), 0);
	cr_expect_eq(a, (void *)(t_movabs + 10));
	cr_expect_not(entry);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(ukprobes_probe_addr(&bad[i], &a, NULL), want[i], "case %zu", i);
	cr_expect_eq(ukprobes_probe_addr(NULL, &a, NULL), -EINVAL);
	/* nothing was written: the function runs unprobed */
	cr_expect_eq(t_endbr_fn(1), 2);
	by_name.pre_handler = count_pre;
	hits = 0;
	cr_assert_eq(register_kprobe(&by_name), 0);
	cr_expect_eq((void *)by_name.addr, (void *)(t_endbr + 4));
	cr_expect_eq(t_endbr_fn(1), 2);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&by_name);
}

/* ukprobes_kretprobe_check says whether register_kretprobe takes a
 * return probe there, registering nothing: a function's entry (past its
 * endbr64 too), not inside one; the look-up's errors. */
Test(errors, kretprobe_check_before_registering)
{
	struct kprobe by_name = { .symbol_name = "t_endbr" };
	struct kprobe by_addr = { .addr = (void *)t_endbr };
	struct kprobe past_endbr = { .addr = (void *)(t_endbr + 4) };
	struct kprobe inside = { .symbol_name = "t_movabs", .offset = 10 };
	struct kprobe bad[] = {
		{ .symbol_name = "no_such_function_anywhere" },
		{ .symbol_name = "err_target", .addr = (void *)err_target },
		{ .addr = (void *)&data_object },
	};
	int want[] = { -ENOENT, -EINVAL, -EINVAL };
	const char *why = "unset";
	size_t i;

	cr_expect_eq(ukprobes_kretprobe_check(&by_name, &why), 0);
	cr_expect_null(why);
	cr_expect_null(by_name.addr, "the kprobe is left as it was");
	cr_expect_eq(ukprobes_kretprobe_check(&by_addr, NULL), 0);
	cr_expect_eq(ukprobes_kretprobe_check(&past_endbr, NULL), 0);
	cr_expect_eq(ukprobes_kretprobe_check(&inside, &why), -EINVAL);
	cr_expect(why && strstr(why, "not on a function entry"), "why: %s", why ? why : "(none)");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(ukprobes_kretprobe_check(&bad[i], NULL), want[i], "case %zu", i);
	cr_expect_eq(ukprobes_kretprobe_check(NULL, NULL), -EINVAL);
	/* nothing was written: the function runs unprobed */
	hits = 0;
	cr_expect_eq(t_endbr_fn(1), 2);
	cr_expect_eq(hits, 0);
}

static int rereg_result = 1;
static struct kprobe inner = { .symbol_name = "t_riprel" };
static int registering_pre(struct kprobe *p, struct pt_regs *regs)
{
	rereg_result = register_kprobe(&inner);
	return 0;
}

Test(errors, register_from_handler_is_busy)
{
	struct kprobe kp = { .symbol_name = "err_target", .pre_handler = registering_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	err_target(0);
	cr_expect_eq(rereg_result, -EBUSY);
	unregister_kprobe(&kp);
}

/*
 * Probes on the libc functions a trap handler would naturally use
 * (__errno_location, pthread_self, syscall): the hit path reads errno and
 * the thread through the thread pointer instead, so these are ordinary
 * probe points and hitting them does not recurse.
 */
static int libc_hits;
static int libc_pre(struct kprobe *p, struct pt_regs *regs)
{
	libc_hits++;
	return 0;
}

Test(errors, probes_on_libc_helpers_do_not_recurse)
{
	struct kprobe e = { .symbol_name = "libc.so.6:__errno_location", .pre_handler = libc_pre };
	struct kprobe t = { .symbol_name = "libc.so.6:pthread_self", .pre_handler = libc_pre };
	struct kprobe k = { .symbol_name = "err_target", .pre_handler = count_pre };
	int *(*volatile errno_fn)(void) = __errno_location;
	pthread_t (*volatile self_fn)(void) = pthread_self;

	cr_assert_eq(register_kprobe(&e), 0);
	cr_assert_eq(register_kprobe(&t), 0);
	cr_assert_eq(register_kprobe(&k), 0);
	hits = 0;
	libc_hits = 0;
	errno = 1234;
	cr_expect_eq(err_target(2), 7);
	cr_expect_eq(hits, 1);
	cr_expect_eq(errno_fn(), &errno);
	cr_expect_eq(errno, 1234, "errno survives a hit");
	cr_expect_eq(self_fn(), pthread_self());
	cr_expect_geq(libc_hits, 2);
	unregister_kprobe(&k);
	unregister_kprobe(&t);
	unregister_kprobe(&e);
}

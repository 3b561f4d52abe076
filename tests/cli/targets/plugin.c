/* SPDX-License-Identifier: MIT */
/* libukp_plugin.so: a library tgt_dlopen loads, unloads and loads again. */
int plugin_calls;

__attribute__((noinline)) int plugin_work(int i)
{
	plugin_calls++;
	return i * 10;
}

__attribute__((noinline)) int plugin_other(int i)
{
	return plugin_work(i) + 1;
}

/* A function that cannot be probed: its only instruction is ud2 (udf on
 * AArch64: the library refuses exception instructions, as the kernel
 * does). */
#if defined(__aarch64__)
#define TRAP_INSN "udf #0"
#else
#define TRAP_INSN "ud2"
#endif
__asm__(".text\n"
	".globl plugin_trap\n"
	".type plugin_trap, @function\n"
	"plugin_trap:\n"
	"\t" TRAP_INSN "\n"
	".size plugin_trap, .-plugin_trap\n");

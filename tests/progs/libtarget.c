/* A small shared object for tests that need code in a separate,
 * unloadable ELF object (dlclose -> [GONE], NOKPROBE in another object). */
#include "ukprobes.h"

__attribute__((noinline)) int ukptarget_add(int a, int b)
{
	return a + b;
}

__attribute__((noinline)) int ukptarget_forbidden(int a)
{
	return a * 7;
}
NOKPROBE_SYMBOL(ukptarget_forbidden);

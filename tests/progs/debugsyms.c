/* SPDX-License-Identifier: MIT */
/*
 * A shared object whose static function and static variable only its
 * debug symbols name (a MiniDebugInfo section keeps the function's):
 * built, then stripped of .symtab by mkdebug.sh, which gives its symbols
 * back through a debug file (by build-id or .gnu_debuglink) or a
 * MiniDebugInfo section (.gnu_debugdata). UKPDS_SEED makes variants with
 * other build-ids.
 */
#ifndef UKPDS_SEED
#define UKPDS_SEED 3
#endif

__attribute__((noinline, used)) static int ukpds_local(int x)
{
	int i, acc = UKPDS_SEED;

	for (i = 0; i < x; i++)
		acc = acc * 7 + i;
	return acc;
}

__attribute__((used)) static int ukpds_tally[4];

/* Exported: calls the static function, and says where it is. */
int ukpds_call(int x)
{
	return ukpds_local(x) + 1;
}

void *ukpds_local_addr(void)
{
	return (void *)ukpds_local;
}

void *ukpds_tally_addr(void)
{
	return ukpds_tally;
}

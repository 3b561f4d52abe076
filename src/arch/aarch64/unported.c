// SPDX-License-Identifier: MIT
/*
 * unported.c - the arch entry point of the feature this AArch64 port
 * does not have yet: the vector-use proof (doc/arch.md).
 */
#include "internal.h"

/* --- the vector-use proof: not ported, so no code is proven
 * vector-free and every handler runs through arch_vecsafe_call */
int arch_code_vector_free(uintptr_t fn, unsigned int flags, const uintptr_t *safe, size_t nsafe,
			  size_t (*read)(uintptr_t addr, uint8_t *buf, size_t len),
			  const char **why, uintptr_t *where)
{
	(void)flags, (void)safe, (void)nsafe, (void)read;
	*why = "the vector-use proof is not ported to aarch64 yet";
	*where = fn;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * ifunc.c - calling an IFUNC resolver the way glibc's dynamic linker
 * does on AArch64: resolver(hwcap | _IFUNC_ARG_HWCAP, &arg), where arg
 * carries its own size, AT_HWCAP and AT_HWCAP2 (glibc's
 * __ifunc_arg_t). [reg] context.
 */
#include <stdint.h>
#include <sys/auxv.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

#define IFUNC_ARG_HWCAP (1ULL << 62)

struct ifunc_arg {
	unsigned long size;
	unsigned long hwcap;
	unsigned long hwcap2;
};

uintptr_t arch_ifunc_resolve(uintptr_t resolver)
{
	struct ifunc_arg arg = {
		.size = sizeof(arg),
		.hwcap = ukp_getauxval(AT_HWCAP),
		.hwcap2 = ukp_getauxval(AT_HWCAP2),
	};
	uintptr_t (*fn)(uint64_t, const struct ifunc_arg *) =
		(uintptr_t (*)(uint64_t, const struct ifunc_arg *))resolver;

	return fn(arg.hwcap | IFUNC_ARG_HWCAP, &arg);
}

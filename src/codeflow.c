/* TEMPORARY (dev only, replaced by the flow branch) */
#include <errno.h>
#include "internal.h"
#include "codeflow.h"
int ukp_codeflow_check(const struct ukp_symres *sym, uintptr_t addr, size_t len, const char **why)
{
	if (addr + len > sym->start + sym->size) { *why = "region leaves the function"; return -EINVAL; }
	return 0;
}
void ukp_codeflow_forget_dead(void) {}

/* TEMPORARY (dev only, replaced by the flow branch) */
#ifndef UKP_CODEFLOW_H
#define UKP_CODEFLOW_H
#include "symbols.h"
int ukp_codeflow_check(const struct ukp_symres *sym, uintptr_t addr, size_t len, const char **why);
void ukp_codeflow_forget_dead(void);
#endif

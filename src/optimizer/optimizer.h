/* SPDX-License-Identifier: MIT */
/*
 * optimizer/optimizer.h - jump optimization (src/optimizer/): the queue,
 * the optimizer thread, the detours and their patching. Part of the
 * engine (with src/core/, src/process/, src/watch/); the layers below it
 * (base, text, symbols, flow) never call it.
 */
#ifndef UKP_OPTIMIZER_H
#define UKP_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/symbols.h"

struct ukp_site;
struct pt_regs;
struct ukp_ctlblk;

/* optimizer.c: jump optimization (see there). [reg] unless said. */
void ukp_opt_init(void);
void ukp_opt_after_fork(void);
void ukp_opt_stop(void);                      /* [reg] teardown.c */
void ukp_opt_site_new(struct ukp_site *s, bool on_entry, bool abi_entry);
/* [reg] s is an SDT probe's nop in the function sym: its detour takes
 * the template of function entries when arch_opt_entry_template_ok says
 * the function allows it (optimizer.c). */
void ukp_opt_site_sdt(struct ukp_site *s, const struct ukp_symres *sym);
void ukp_opt_site_changed(struct ukp_site *s);
/* Hold back waking the optimizer thread while a batch queues its sites
 * (on), then wake it once if anything was queued (off). */
void ukp_opt_defer_kick(bool on);
/* [reg] The detours of a batch's new sites, before they are armed. */
void ukp_opt_batch_prepare(struct ukp_site **v, size_t n);
void ukp_opt_site_dead(struct ukp_site *s);
void ukp_opt_sites_dead(struct ukp_site **v, size_t n);
/* The site's region (s->opt.rgn) back to the pool, as the site is freed. */
void ukp_opt_site_free(struct ukp_site *s);
void ukp_opt_unoptimize(struct ukp_site *s);
void ukp_opt_neighbour(uintptr_t addr, bool appears);
void ukp_opt_unpatch(uintptr_t addr, uint8_t *buf, size_t len);
int ukp_opt_would(uintptr_t a, const struct ukp_symres *sym, bool on_entry, const char **why);
const char *ukp_opt_why(const struct ukp_site *s);  /* [reg] */
extern bool ukp_opt_pun;                      /* punned jumps (tests turn them off) */

#endif /* UKP_OPTIMIZER_H */

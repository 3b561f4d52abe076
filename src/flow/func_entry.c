// SPDX-License-Identifier: MIT
/*
 * func_entry.c - is a function entry reached by calls (see func_entry.h)?
 *
 * The kernel refuses a kretprobe that is not on a function entry
 * (kprobe_on_func_entry); in the kernel every function entry is called.
 * In a user-space object some are not: the ELF entry point, which the
 * kernel enters with argc on top of the stack, GCC's cold parts, which
 * their function jumps to with its frame set up, and hand-written code
 * placed under a FUNC symbol that only jumps reach. Swapping the top of
 * the stack there corrupts argc or a saved register. The sound rule is
 * the one the unwinder itself uses: the call frame information says,
 * for every address, where the return address is; a kretprobe needs it
 * on top of the stack. Names and the entry point cover code without
 * unwind tables.
 *
 * Context: [reg].
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

#include "arch/arch.h"
#include "flow/codeflow.h"
#include "symbols/eh_frame.h"
#include "flow/func_entry.h"
#include "base/base.h"
#include "symbols/symbols.h"
#include "symbols/maps_objects.h"

struct entry_match {
	const struct ukp_object *obj;
	unsigned int index;
	uintptr_t entry;        /* absolute, 0 when unknown */
};

/* [reg] Called inside a walk (ukp_iterate_objects): find obj, read its e_entry. */
static int entry_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct entry_match *em = arg;
	bool first = em->index++ == 0;
	ElfW(Ehdr) eh;

	(void)size;
	if (info->dlpi_addr != em->obj->base || first != em->obj->is_main)
		return 0;
	if (!em->obj->is_main && (!info->dlpi_name || strcmp(info->dlpi_name, em->obj->path)))
		return 0;
	/* The ELF header is mapped right before the program headers in
	 * every object a linker makes; trust it only when it says so. */
	if (!arch_copy_nofault(&eh, (const char *)info->dlpi_phdr - sizeof(eh), sizeof(eh)) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_phoff == sizeof(eh) &&
	    eh.e_phnum == info->dlpi_phnum) {
		if (eh.e_entry)
			em->entry = info->dlpi_addr + (uintptr_t)eh.e_entry;
	} else if (em->obj->is_main &&
		   (uintptr_t)info->dlpi_phdr == (uintptr_t)ukp_getauxval(AT_PHDR)) {
		/* the program the kernel loaded: it said where it entered */
		em->entry = (uintptr_t)ukp_getauxval(AT_ENTRY);
	}
	return 1;
}

/* [reg] The absolute ELF entry point of obj, 0 when it has none. */
static uintptr_t object_entry(const struct ukp_object *obj)
{
	struct entry_match em = { .obj = obj };

	ukp_iterate_objects(entry_cb, &em);
	return em.entry;
}

int ukp_func_entry_called(const struct ukp_symres *sym, uintptr_t addr, const char **why)
{
	struct ukp_cfi_row ra;
	uintptr_t entry;
	int ret;

	entry = object_entry(sym->obj);
	if (entry && (entry == sym->start || entry == addr)) {
		*why = "the ELF entry point: the kernel enters it with argc where a return "
		       "address would be";
		return -EINVAL;
	}
	if (ukp_cold_base_len(sym->name, strcspn(sym->name, "@"))) {
		*why = "a .cold part of a function: reached by jumps, never called";
		return -EINVAL;
	}
	ret = ukp_eh_ra_rule(sym->obj, addr, &ra);
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return 0;       /* no unwind information here: no opinion */
	if (ra.rule == UKP_CFI_UNDEFINED) {
		*why = "the unwind table marks it the outermost frame: no return address";
		return -EINVAL;
	}
	if (ra.cfa_expr || ra.cfa_reg != UKP_DWARF_SP || ra.cfa_off != UKP_ENTRY_CFA_OFF ||
	    (UKP_KRP_RET_IN_SLOT ? ra.rule != UKP_CFI_AT_CFA || ra.ra_off != -UKP_RET_ADDR_SIZE
				 : ra.rule != UKP_CFI_SAME)) {
		*why = UKP_KRP_RET_IN_SLOT
			       ? "the unwind table says the return address is not on top of the "
				 "stack here (code reached by a jump)"
			       : "the unwind table says the return address is not in the link "
				 "register here (code reached by a jump)";
		return -EINVAL;
	}
	return 0;
}

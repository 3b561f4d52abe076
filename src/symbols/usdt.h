/* SPDX-License-Identifier: MIT */
/*
 * usdt.h - SDT probes (SystemTap's <sys/sdt.h>, DTrace's USDT): the
 * .note.stapsdt notes of an object, where their probes go and the
 * is-enabled counters ("semaphores") the library raises while a probe
 * is registered on them (usdt.c), as the kernel does with a uprobe's
 * ref_ctr_offset.
 *
 * Context: [reg] registration time, under the registry mutex; none of
 * it is on the hit path.
 */
#ifndef UKP_USDT_H
#define UKP_USDT_H

#include "symbols/elf_read.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/symbols.h"

struct kprobe;

/* One note: addresses are absolute for a loaded object, the file's for a
 * file's record (ukp_file_object); both after the .stapsdt.base
 * adjustment. */
struct ukp_usdt_note {
	uintptr_t addr;         /* the probe's nop */
	uintptr_t sem;          /* its semaphore (unsigned short), 0: none */
	const char *provider, *name, *args;
};

/* An object's notes, sorted by address. */
struct ukp_usdt_notes {
	struct ukp_usdt_note *v;
	size_t n;
	char *strs;             /* the strings the notes point into */
};

/* [reg] obj's notes, read from its file on the first call (an object
 * without any has n == 0); NULL when out of memory. */
const struct ukp_usdt_notes *ukp_usdt_notes(const struct ukp_object *obj);
/* [reg] The note whose probe is at addr in a loaded object, or NULL;
 * *obj its object. */
const struct ukp_usdt_note *ukp_usdt_note_at(uintptr_t addr, const struct ukp_object **obj);
/* [any] Does symbol_name name an SDT probe ("[OBJ:]%PROVIDER:NAME")? */
bool ukp_usdt_is_name(const char *spec);
/* [reg] The address of the SDT probe "[OBJ:]%PROVIDER:NAME" (the first
 * in load order without OBJ): 0 or -ENOENT, -ENOMEM. */
int ukp_usdt_lookup(const char *spec, uintptr_t *addr);
/* [reg] p was registered at addr / is being unregistered: the semaphore
 * of the note at addr goes up / down (kprobes.c). */
void ukp_usdt_probe_added(const struct kprobe *p, uintptr_t addr);
void ukp_usdt_probe_removed(const struct kprobe *p);
/* symbols.c's: the records' slot for their notes, freed with them */
struct ukp_usdt_notes **ukp_object_usdt(const struct ukp_object *obj);
void ukp_usdt_notes_free(struct ukp_usdt_notes *notes);
/* symbols.c's: obj's ELF file opened with the library's reader
 * (elf_read.h; ukp_elf_close after): 0, or -ENOENT. */
int ukp_object_elf(const struct ukp_object *obj, struct ukp_elf *elf);

/*
 * One argument's operand as the arch writes it in a note (after the
 * "SIZE@"), decoded by arch_usdt_operand (src/arch/ARCH/usdt_arg.c).
 * kind: USDT_ARG_* of <ukprobes.h>; USDT_ARG_ADDR with sym (symlen
 * bytes) for a symbol's address + off, which usdt.c resolves (and
 * USDT_ARG_INDEX with sym: a symbol's address + off as displacement).
 */
struct ukp_usdt_op {
	int kind;
	unsigned int reg;       /* word index in struct pt_regs; USDT_ARG_INDEX:
				 * USDT_ARG_NOREG when there is no base */
	unsigned int index, scale; /* USDT_ARG_INDEX */
	long off;
	const char *sym;
	size_t symlen;
};
/* [any] 0, or -EINVAL for a form the decoder does not know. */
int arch_usdt_operand(const char *s, size_t len, struct ukp_usdt_op *op);

#endif /* UKP_USDT_H */

/* SPDX-License-Identifier: MIT */
/*
 * eh_frame.h - the exception-handling tables of a loaded object, as far
 * as control flow is concerned: which address ranges have unwind
 * information (the FDEs of .eh_frame, found through PT_GNU_EH_FRAME) and
 * where the unwinder may land in them (landing pads of an FDE's LSDA).
 *
 * Arch-independent: the formats are the DWARF call frame information as
 * GCC, clang and binutils emit it for every ELF target.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 * Memory of the object is read without faulting, so a corrupt table gives
 * an error, never a crash.
 */
#ifndef UKP_EH_FRAME_H
#define UKP_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/cfi.h"
#include "symbols/symbols.h"

/* The code range one FDE describes, absolute addresses. */
struct ukp_fde {
	uintptr_t start;        /* pc_begin */
	uintptr_t end;          /* pc_begin + pc_range */
	uintptr_t lsda;         /* its LSDA (.gcc_except_table), 0 when none */
};

/* One PT_LOAD segment of the object, absolute addresses. */
struct ukp_eh_seg {
	uintptr_t start, end;
	bool exec;
	bool write;             /* PF_W: the program may write it */
};

struct ukp_eh_frame {
	struct ukp_fde *fdes;   /* sorted by start */
	size_t nfdes;
	struct ukp_eh_seg *segs; /* the object's PT_LOAD segments, in header order */
	size_t nsegs;
	bool has_hdr;           /* the object has a PT_GNU_EH_FRAME */
	bool file_only;         /* the tables were read from segments without
				 * PF_W, and no pointer in them was absolute:
				 * the FDEs' offsets from the load bias are the
				 * file's bytes' and layout's alone (a cache may
				 * keep them: flow_cache.h) */
};

/*
 * [reg] Read the object's program headers (ukp_iterate_objects, matched on
 * obj->base and obj->path) and enumerate its FDEs, from the binary
 * search table of .eh_frame_hdr.
 * Fills *eh (free it with ukp_eh_frame_free, also after an error).
 * Returns 0, or:
 *   -ENOENT  the object is not loaded, or has no PT_GNU_EH_FRAME (then
 *            eh->segs is still filled and eh->has_hdr is false)
 *   -EILSEQ  the tables are malformed, have no search table, or use an
 *            encoding not handled (eh->fdes then holds the FDEs read
 *            before the error)
 *   -ENOMEM
 */
int ukp_eh_frame_load(const struct ukp_object *obj, struct ukp_eh_frame *eh);

/* [reg] Only eh->segs and eh->has_hdr (no FDE read): 0, -ENOENT (the
 * object is not loaded) or -ENOMEM. */
int ukp_eh_segs_load(const struct ukp_object *obj, struct ukp_eh_frame *eh);
void ukp_eh_frame_free(struct ukp_eh_frame *eh);

/*
 * [reg] Call fn(pad, arg) for every landing pad of fde's LSDA (none when
 * fde->lsda is 0); stop early when fn returns non-zero and return that.
 * Returns 0, or -EILSEQ when the LSDA cannot be read or parsed.
 */
typedef int (*ukp_eh_pad_fn)(uintptr_t pad, void *arg);
int ukp_eh_landing_pads(const struct ukp_eh_frame *eh, const struct ukp_fde *fde,
			ukp_eh_pad_fn fn, void *arg);

/*
 * [reg] Run the call frame instructions of the FDE covering addr in obj
 * (found through .eh_frame_hdr's search table) up to addr, and give the
 * row there (cfi.h; the frame pointer column not followed). Returns 0, or:
 *   -ENOENT  no FDE covers addr (or the object has no PT_GNU_EH_FRAME)
 *   -EILSEQ  the tables are malformed or use an opcode or encoding not
 *            handled
 *   -ENOMEM
 */
int ukp_eh_ra_rule(const struct ukp_object *obj, uintptr_t addr, struct ukp_cfi_row *out);

#endif /* UKP_EH_FRAME_H */

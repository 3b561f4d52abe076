// SPDX-License-Identifier: MIT
/*
 * eh_frame.c - FDE ranges and landing pads of a loaded object (see
 * eh_frame.h).
 *
 * Why the flow analysis wants this: in a stripped library the only record
 * of code that no exported symbol covers (static functions, and GCC's
 * "foo.cold" parts that jump back into foo) is its unwind information,
 * which every x86-64 object carries for backtraces and exceptions. And
 * where an exception lands (a landing pad) is a jump target that no
 * instruction shows.
 *
 * Formats (LSB / DWARF call frame information, as GCC and clang emit
 * them):
 *  .eh_frame_hdr: u8 version (1), u8 eh_frame_ptr_enc, u8 fde_count_enc,
 *                 u8 table_enc, eh_frame_ptr, fde_count, then fde_count
 *                 pairs (initial_loc, fde_address); datarel means
 *                 relative to the start of .eh_frame_hdr.
 *  CIE/FDE:       u32 length (0xffffffff: a u64 length follows), u32 CIE
 *                 id (0) or CIE pointer (back from this field); a CIE's
 *                 augmentation string says, after 'z', where the FDE
 *                 pointer encoding ('R') and LSDA encoding ('L') are.
 *  LSDA:          u8 lpstart_enc [lpstart], u8 ttype_enc [uleb offset],
 *                 u8 call_site_enc, uleb table length, entries (start,
 *                 length, landing pad, uleb action); pad 0 means none.
 *
 * All of it runs at registration time ([reg]). Memory is read in 4 KiB
 * chunks with arch_copy_nofault and only inside one of the object's
 * PT_LOAD segments: an object unloaded under us or a corrupt table gives
 * -EILSEQ, never a fault.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/grow_array.h"
#include "symbols/cfi.h"
#include "symbols/eh_frame.h"
#include "symbols/symbols.h"
#include "symbols/maps_objects.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */

#define EH_CHUNK 4096u

/* A window onto one segment of the object (cfi.h), read a chunk at a time. */
struct eh_mem {
	struct ukp_cfi_mem m;
	uint8_t buf[EH_CHUNK];
};

/* ------------------------------------------------------------------ */
/* Program headers                                                    */
/* ------------------------------------------------------------------ */

struct phdr_match {
	const struct ukp_object *obj;
	struct ukp_eh_frame *eh;
	unsigned int index;
	uintptr_t hdr;          /* PT_GNU_EH_FRAME, absolute; 0 when none */
	size_t hdr_len;
	bool found;
	int err;
};

/* [reg] Called inside a walk (the loader's lock held, or a snapshot's
 * copies: iterate_objects.c): copy and return. */
static int match_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_match *pm = arg;
	const struct ukp_object *obj = pm->obj;
	bool first = pm->index++ == 0;
	size_t i, n = 0;

	(void)size;
	if (info->dlpi_addr != obj->base || first != obj->is_main)
		return 0;
	/* The main program's name is empty here (its path came from
	 * /proc/self/exe); every other object is known by its name, the
	 * vdso by "[vdso]" when the loader gives it none (symbols.c). */
	if (!obj->is_main) {
		const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "[vdso]";

		if (strcmp(name, obj->path))
			return 0;
	}

	for (i = 0; i < info->dlpi_phnum; i++)
		n += info->dlpi_phdr[i].p_type == PT_LOAD;
	pm->eh->segs = calloc(n ? n : 1, sizeof(*pm->eh->segs));
	if (!pm->eh->segs) {
		pm->err = -ENOMEM;
		return 1;
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_EH_FRAME) {
			pm->hdr = info->dlpi_addr + ph->p_vaddr;
			pm->hdr_len = ph->p_memsz;
		} else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R)) {
			struct ukp_eh_seg *s = &pm->eh->segs[pm->eh->nsegs++];

			s->start = info->dlpi_addr + ph->p_vaddr;
			s->end = s->start + ph->p_memsz;
			s->exec = ph->p_flags & PF_X;
			s->write = ph->p_flags & PF_W;
		}
	}
	pm->found = true;
	return 1;
}

static const struct ukp_eh_seg *seg_of(const struct ukp_eh_frame *eh, uintptr_t addr)
{
	size_t i;

	for (i = 0; i < eh->nsegs; i++)
		if (addr >= eh->segs[i].start && addr < eh->segs[i].end)
			return &eh->segs[i];
	return NULL;
}

/* Point a window at the segment holding addr; false when none does. */
static bool mem_at(struct eh_mem *m, const struct ukp_eh_frame *eh, uintptr_t addr)
{
	const struct ukp_eh_seg *s = seg_of(eh, addr);

	if (!s)
		return false;
	ukp_cfi_mem_init(&m->m, m->buf, EH_CHUNK, s->start, s->end);
	return true;
}

static void cur_init(struct ukp_cfi_cur *c, struct eh_mem *m, uintptr_t pos, uintptr_t end)
{
	ukp_cfi_cur_init(c, &m->m, pos, end);
}

/* ------------------------------------------------------------------ */
/* CIEs and FDEs                                                      */
/* ------------------------------------------------------------------ */

/* Parsing state of one object. */
struct eh_walk {
	struct ukp_eh_frame *eh;
	struct eh_mem frame;    /* FDEs */
	struct eh_mem cie_mem;  /* CIEs (apart, so that FDE reads stay in their chunk) */
	struct ukp_cfi_cie *cies; /* parsed CIEs (a handful per object) */
	size_t ncies, cap_cies;
	size_t cap_fdes;
	bool abs;               /* an FDE held an absolute pointer */
};

static int cie_get(struct eh_walk *w, uintptr_t addr, const struct ukp_cfi_cie **out)
{
	struct ukp_cfi_cie *cies;
	size_t i;
	int ret;

	for (i = 0; i < w->ncies; i++) {
		if (w->cies[i].addr == addr) {
			*out = &w->cies[i];
			return 0;
		}
	}
	cies = ukp_grow(w->cies, &w->cap_cies, w->ncies, sizeof(*cies));
	if (!cies)
		return -ENOMEM;
	w->cies = cies;
	ret = ukp_cfi_parse_cie(&w->cie_mem.m, addr, &w->cies[w->ncies]);
	if (ret)
		return ret;
	*out = &w->cies[w->ncies++];
	return 0;
}

static int fde_add(struct eh_walk *w, const struct ukp_fde *f)
{
	struct ukp_eh_frame *eh = w->eh;
	struct ukp_fde *fdes = ukp_grow(eh->fdes, &w->cap_fdes, eh->nfdes, sizeof(*fdes));

	if (!fdes)
		return -ENOMEM;
	eh->fdes = fdes;
	eh->fdes[eh->nfdes++] = *f;
	return 0;
}

/*
 * [reg] Read the FDE at addr: its range (f->start 0 for an FDE of
 * discarded code), CIE and call frame instructions [*insns, *insns_end).
 */
static int read_fde(struct eh_walk *w, uintptr_t addr, struct ukp_fde *f,
		    const struct ukp_cfi_cie **ciep, struct ukp_cfi_fde *cf)
{
	struct ukp_cfi_cur c;
	const struct ukp_cfi_cie *cie;
	uintptr_t cie_addr;
	int ret;

	memset(f, 0, sizeof(*f));
	ret = ukp_cfi_fde_head(&c, &w->frame.m, addr, &cie_addr);
	if (ret)
		return ret;
	ret = cie_get(w, cie_addr, &cie);
	if (ret)
		return ret;
	ret = ukp_cfi_fde_body(&c, cie, cf);
	if (ret)
		return ret;
	w->abs |= c.abs;
	f->start = cf->start;
	f->end = cf->end;
	f->lsda = cf->lsda;
	*ciep = cie;
	return 0;
}

/*
 * [reg] The FDE at addr (a search table entry): add it to the list.
 * Returns 0 (also for an FDE of discarded code, not added) or -errno.
 */
static int parse_fde(struct eh_walk *w, uintptr_t addr)
{
	const struct ukp_cfi_cie *cie;
	struct ukp_fde f;
	struct ukp_cfi_fde cf;
	int ret = read_fde(w, addr, &f, &cie, &cf);

	if (ret || !f.start)
		return ret;
	return fde_add(w, &f);
}

/*
 * [reg] The head of the object's .eh_frame_hdr (pm->hdr): c is left at
 * the FDE count, *count_enc and *table_enc are the count's and the search
 * table's encodings, and the windows w->frame and w->cie_mem point at
 * .eh_frame's segment. 0, or -EILSEQ when malformed.
 */
static int hdr_open(struct eh_walk *w, struct eh_mem *hdr_mem, const struct phdr_match *pm,
		    struct ukp_cfi_cur *c, uint8_t *count_enc, uint8_t *table_enc)
{
	const struct ukp_eh_frame *eh = w->eh;
	uint8_t version, frame_enc;
	uintptr_t frame;

	if (!mem_at(hdr_mem, eh, pm->hdr))
		return -EILSEQ;
	cur_init(c, hdr_mem, pm->hdr, pm->hdr + pm->hdr_len);
	version = ukp_cfi_u8(c);
	frame_enc = ukp_cfi_u8(c);
	*count_enc = ukp_cfi_u8(c);
	*table_enc = ukp_cfi_u8(c);
	frame = ukp_cfi_encoded(c, frame_enc, pm->hdr);
	if (c->bad || version != 1 || !frame)
		return -EILSEQ;
	if (!mem_at(&w->frame, eh, frame) || !mem_at(&w->cie_mem, eh, frame))
		return -EILSEQ;
	return 0;
}

/* [reg] The FDEs listed in .eh_frame_hdr's search table. */
static int walk_table(struct eh_walk *w, struct ukp_cfi_cur *c, uint8_t table_enc, uint64_t count,
		      uintptr_t hdr)
{
	uint64_t i;
	int ret;

	for (i = 0; i < count; i++) {
		uintptr_t fde;

		(void)ukp_cfi_encoded(c, table_enc, hdr);	/* initial_loc, re-read from the FDE */
		fde = ukp_cfi_encoded(c, table_enc, hdr);
		if (c->bad)
			return -EILSEQ;
		ret = parse_fde(w, fde);
		if (ret)
			return ret;
	}
	return 0;
}

static int fde_cmp(const void *pa, const void *pb)
{
	const struct ukp_fde *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->end > b->end) - (a->end < b->end);
}

/* [reg] obj's segments into eh (zeroed first), its headers' places into
 * *pm: 0, -ENOENT when obj is none or its headers are not found, or
 * the walk's error. */
static int match_phdrs(const struct ukp_object *obj, struct ukp_eh_frame *eh,
		       struct phdr_match *pm)
{
	memset(eh, 0, sizeof(*eh));
	if (!obj)
		return -ENOENT;
	ukp_iterate_objects(match_cb, pm);
	if (pm->err)
		return pm->err;
	return pm->found ? 0 : -ENOENT;
}

/* [reg] */
int ukp_eh_frame_load(const struct ukp_object *obj, struct ukp_eh_frame *eh)
{
	struct phdr_match pm = { .obj = obj, .eh = eh };
	struct eh_walk *w;
	struct eh_mem *hdr_mem;
	struct ukp_cfi_cur c;
	uint8_t count_enc, table_enc;
	uint64_t count = 0;
	int ret;

	ret = match_phdrs(obj, eh, &pm);
	if (ret)
		return ret;
	if (!pm.hdr) {
		eh->file_only = true;	/* (the program headers alone said so) */
		return -ENOENT;
	}
	eh->has_hdr = true;

	w = calloc(1, sizeof(*w));
	hdr_mem = calloc(1, sizeof(*hdr_mem));
	if (!w || !hdr_mem) {
		ret = -ENOMEM;
		goto out;
	}
	w->eh = eh;
	ret = hdr_open(w, hdr_mem, &pm, &c, &count_enc, &table_enc);
	if (ret)
		goto out;
	ret = -EILSEQ;
	/*
	 * Every linker writes the search table; it is missing only when the
	 * linker could not make sense of .eh_frame itself, and neither could
	 * we. (.eh_frame has no end marker we could trust without it: its
	 * size is in the section headers, which need not be mapped.)
	 */
	if (count_enc == PE_OMIT || table_enc == PE_OMIT)
		goto out;
	count = ukp_cfi_value(&c, count_enc);
	/* each entry takes at least two bytes of the header */
	if (c.bad || count > pm.hdr_len / 2)
		goto out;
	/* room for all of them at once: the list is not copied as it grows */
	if (count && !(eh->fdes = malloc((size_t)count * sizeof(*eh->fdes)))) {
		ret = -ENOMEM;
		goto out;
	}
	w->cap_fdes = (size_t)count;
	ret = walk_table(w, &c, table_enc, count, pm.hdr);
	if (eh->nfdes)
		ukp_sort(eh->fdes, eh->nfdes, sizeof(*eh->fdes), fde_cmp);
	/* .eh_frame_hdr, and .eh_frame's segment (the FDEs' and CIEs' window) */
	eh->file_only = !ret && !c.abs && !w->abs && seg_of(eh, pm.hdr) &&
			!seg_of(eh, pm.hdr)->write && seg_of(eh, w->frame.m.lo) &&
			!seg_of(eh, w->frame.m.lo)->write;
out:
	if (w)
		free(w->cies);
	free(w);
	free(hdr_mem);
	return ret;
}

/* [reg] */
int ukp_eh_segs_load(const struct ukp_object *obj, struct ukp_eh_frame *eh)
{
	struct phdr_match pm = { .obj = obj, .eh = eh };
	int ret = match_phdrs(obj, eh, &pm);

	if (ret)
		return ret;
	eh->has_hdr = pm.hdr != 0;
	return 0;
}

void ukp_eh_frame_free(struct ukp_eh_frame *eh)
{
	free(eh->fdes);
	free(eh->segs);
	memset(eh, 0, sizeof(*eh));
}

/* ------------------------------------------------------------------ */
/* Landing pads                                                       */
/* ------------------------------------------------------------------ */

/* A call-site field: a plain value (an application would make no sense). */
static uint64_t cur_cs_value(struct ukp_cfi_cur *c, uint8_t enc)
{
	if (enc & (PE_APP_MASK | PE_INDIRECT)) {
		c->bad = true;
		return 0;
	}
	return ukp_cfi_value(c, enc);
}

/* [reg] */
int ukp_eh_landing_pads(const struct ukp_eh_frame *eh, const struct ukp_fde *fde,
			ukp_eh_pad_fn fn, void *arg)
{
	struct eh_mem *m;
	struct ukp_cfi_cur c;
	uintptr_t lpstart, cs_end;
	uint8_t lp_enc, ttype_enc, cs_enc;
	uint64_t cs_len;
	int ret = -EILSEQ;

	if (!fde->lsda)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (!mem_at(m, eh, fde->lsda))
		goto out;
	cur_init(&c, m, fde->lsda, m->m.hi);

	lpstart = fde->start;
	lp_enc = ukp_cfi_u8(&c);
	if (lp_enc != PE_OMIT)
		lpstart = ukp_cfi_encoded(&c, lp_enc, 0);
	ttype_enc = ukp_cfi_u8(&c);
	if (ttype_enc != PE_OMIT)
		(void)ukp_cfi_uleb(&c);	/* offset of the type table */
	cs_enc = ukp_cfi_u8(&c);
	cs_len = ukp_cfi_uleb(&c);
	if (c.bad || cs_len > c.end - c.pos)
		goto out;
	cs_end = c.pos + (uintptr_t)cs_len;
	c.end = cs_end;

	ret = 0;
	while (c.pos < cs_end && !ret) {
		uint64_t lp;

		(void)cur_cs_value(&c, cs_enc);	/* start */
		(void)cur_cs_value(&c, cs_enc);	/* length */
		lp = cur_cs_value(&c, cs_enc);
		(void)ukp_cfi_uleb(&c);		/* action */
		if (c.bad) {
			ret = -EILSEQ;
			break;
		}
		if (lp)
			ret = fn(lpstart + (uintptr_t)lp, arg);
	}
out:
	free(m);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The return address rule at one address                             */
/* ------------------------------------------------------------------ */

/* Bytes of one search table field: the fixed-size encodings only. */
static unsigned int table_field_size(uint8_t enc)
{
	switch (enc & PE_FMT_MASK) {
	case PE_UDATA4:
	case PE_SDATA4:
		return 4;
	case PE_UDATA8:
	case PE_SDATA8:
		return 8;
	default:
		return 0;
	}
}

/* [reg] */
int ukp_eh_ra_rule(const struct ukp_object *obj, uintptr_t addr, struct ukp_cfi_row *out)
{
	struct ukp_eh_frame eh = { 0 };
	struct phdr_match pm = { .obj = obj, .eh = &eh };
	struct eh_walk *w = NULL;
	struct eh_mem *hdr_mem = NULL;
	const struct ukp_cfi_cie *cie;
	struct ukp_fde f;
	struct ukp_cfi_fde cf;
	struct ukp_cfi_cur c;
	uint8_t count_enc, table_enc;
	uintptr_t table, fde = 0;
	uint64_t count, lo, hi;
	unsigned int fsz;
	int ret;

	if (!obj)
		return -ENOENT;
	ukp_iterate_objects(match_cb, &pm);
	ret = pm.err ? pm.err : -ENOENT;
	if (pm.err || !pm.found || !pm.hdr)
		goto out;
	w = calloc(1, sizeof(*w));
	hdr_mem = calloc(1, sizeof(*hdr_mem));
	ret = -ENOMEM;
	if (!w || !hdr_mem)
		goto out;
	w->eh = &eh;
	ret = hdr_open(w, hdr_mem, &pm, &c, &count_enc, &table_enc);
	if (ret)
		goto out;
	ret = -EILSEQ;
	fsz = table_field_size(table_enc);
	if (count_enc == PE_OMIT || !fsz)
		goto out;
	count = ukp_cfi_value(&c, count_enc);
	table = c.pos;
	if (c.bad || count > pm.hdr_len / (2 * fsz) || table + count * 2 * fsz > c.end)
		goto out;

	/* the last entry starting at or below addr (the table is sorted) */
	for (lo = 0, hi = count; lo < hi;) {
		uint64_t mid = lo + (hi - lo) / 2;
		uintptr_t loc;

		cur_init(&c, hdr_mem, table + (uintptr_t)mid * 2 * fsz, pm.hdr + pm.hdr_len);
		loc = ukp_cfi_encoded(&c, table_enc, pm.hdr);
		if (c.bad)
			goto out;
		if (loc <= addr) {
			lo = mid + 1;
			fde = ukp_cfi_encoded(&c, table_enc, pm.hdr);
			if (c.bad)
				goto out;
		} else {
			hi = mid;
		}
	}
	ret = -ENOENT;
	if (!lo || !fde)
		goto out;
	ret = read_fde(w, fde, &f, &cie, &cf);
	if (ret)
		goto out;
	ret = -ENOENT;
	if (!f.start || addr < f.start || addr >= f.end)
		goto out;

	/* no frame pointer column followed (UINT64_MAX: none) */
	ret = ukp_cfi_row_at(&w->cie_mem.m, cie, &w->frame.m, &cf, addr, UINT64_MAX, out);
out:
	if (w)
		free(w->cies);
	free(w);
	free(hdr_mem);
	ukp_eh_frame_free(&eh);
	return ret;
}

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

#include "eh_frame.h"
#include "grow_array.h"
#include "internal.h"

/* Pointer encodings (DW_EH_PE_*). */
#define PE_OMIT     0xff
#define PE_FMT_MASK 0x0f
#define PE_ABSPTR   0x00
#define PE_ULEB128  0x01
#define PE_UDATA2   0x02
#define PE_UDATA4   0x03
#define PE_UDATA8   0x04
#define PE_SLEB128  0x09
#define PE_SDATA2   0x0a
#define PE_SDATA4   0x0b
#define PE_SDATA8   0x0c
#define PE_APP_MASK 0x70
#define PE_PCREL    0x10
#define PE_DATAREL  0x30
#define PE_INDIRECT 0x80

#define EH_CHUNK 4096u

/* A window onto one segment of the object, read a chunk at a time. */
struct eh_mem {
	uintptr_t lo, hi;       /* readable bytes: [lo, hi) */
	uintptr_t chunk;        /* address of buf (EH_CHUNK aligned) */
	bool valid;
	uint8_t buf[EH_CHUNK];
};

/* A read position; any failed read sets bad and every later read fails. */
struct eh_cur {
	struct eh_mem *m;
	uintptr_t pos;
	uintptr_t end;          /* end of the structure being read */
	bool bad;
};

/* [reg] One byte at a, or false when a is outside the window or unmapped. */
static bool mem_byte(struct eh_mem *m, uintptr_t a, uint8_t *b)
{
	uintptr_t chunk = a & ~(uintptr_t)(EH_CHUNK - 1);

	if (a < m->lo || a >= m->hi)
		return false;
	if (!m->valid || chunk != m->chunk) {
		/* Segments are mapped in whole pages: the chunk holding a
		 * byte of one is all readable or all gone. */
		m->valid = false;
		if (arch_copy_nofault(m->buf, (const void *)chunk, EH_CHUNK))
			return false;
		m->chunk = chunk;
		m->valid = true;
	}
	*b = m->buf[a - chunk];
	return true;
}

static void cur_init(struct eh_cur *c, struct eh_mem *m, uintptr_t pos, uintptr_t end)
{
	c->m = m;
	c->pos = pos;
	c->end = end < m->hi ? end : m->hi;
	c->bad = pos < m->lo || pos > c->end;
}

static uint8_t cur_u8(struct eh_cur *c)
{
	uint8_t b = 0;

	if (c->bad || c->pos >= c->end || !mem_byte(c->m, c->pos, &b)) {
		c->bad = true;
		return 0;
	}
	c->pos++;
	return b;
}

/* Little-endian unsigned of n bytes. */
static uint64_t cur_uint(struct eh_cur *c, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)cur_u8(c) << (8 * i);
	return v;
}

/* LEB128, unsigned or sign-extended from its last byte's bit 6. */
static uint64_t cur_leb(struct eh_cur *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = cur_u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return v;
}

static uint64_t cur_uleb(struct eh_cur *c)
{
	return cur_leb(c, false);
}

static int64_t cur_sleb(struct eh_cur *c)
{
	return (int64_t)cur_leb(c, true);
}

/* The value part of an encoded pointer (enc's low nibble). */
static uint64_t cur_value(struct eh_cur *c, uint8_t enc)
{
	switch (enc & PE_FMT_MASK) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return cur_uint(c, 8);
	case PE_ULEB128:
		return cur_uleb(c);
	case PE_UDATA2:
		return cur_uint(c, 2);
	case PE_UDATA4:
		return cur_uint(c, 4);
	case PE_SLEB128:
		return (uint64_t)cur_sleb(c);
	case PE_SDATA2:
		return (uint64_t)(int64_t)(int16_t)cur_uint(c, 2);
	case PE_SDATA4:
		return (uint64_t)(int64_t)(int32_t)cur_uint(c, 4);
	default:
		c->bad = true;
		return 0;
	}
}

/*
 * An encoded pointer. datarel is the base of DW_EH_PE_datarel (the start
 * of .eh_frame_hdr), 0 where that application is meaningless. As in
 * libgcc, a raw value of 0 stays 0 ("none") whatever the application.
 * Indirect pointers are refused (they appear only for personality
 * routines, which we skip with cur_skip_encoded).
 */
static uintptr_t cur_encoded(struct eh_cur *c, uint8_t enc, uintptr_t datarel)
{
	uintptr_t field = c->pos;
	uint64_t v = cur_value(c, enc);

	if (c->bad || v == 0)
		return 0;
	if (enc & PE_INDIRECT) {
		c->bad = true;
		return 0;
	}
	switch (enc & PE_APP_MASK) {
	case 0:
		return (uintptr_t)v;
	case PE_PCREL:
		return field + (uintptr_t)v;
	case PE_DATAREL:
		if (datarel)
			return datarel + (uintptr_t)v;
		/* fall through */
	default:
		c->bad = true;
		return 0;
	}
}

static void cur_skip_encoded(struct eh_cur *c, uint8_t enc)
{
	(void)cur_value(c, enc);
}

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

/* [reg] Called with the loader's lock held: copy and return. */
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
	m->lo = s->start;
	m->hi = s->end;
	m->valid = false;
	return true;
}

/* ------------------------------------------------------------------ */
/* CIEs and FDEs                                                      */
/* ------------------------------------------------------------------ */

struct eh_cie {
	uintptr_t addr;
	uint8_t fde_enc;        /* 'R', absptr by default */
	uint8_t lsda_enc;       /* 'L', omit by default */
	bool aug_z;             /* FDEs carry an augmentation data length */
};

/* Parsing state of one object. */
struct eh_walk {
	struct ukp_eh_frame *eh;
	struct eh_mem frame;    /* FDEs */
	struct eh_mem cie_mem;  /* CIEs (apart, so that FDE reads stay in their chunk) */
	struct eh_cie *cies;    /* parsed CIEs (a handful per object) */
	size_t ncies, cap_cies;
	size_t cap_fdes;
};

/* Read a CIE/FDE length; returns false at the terminator (length 0). */
static bool cur_length(struct eh_cur *c, uintptr_t *end, bool *dwarf64)
{
	uint64_t len = cur_uint(c, 4);

	*dwarf64 = len == 0xffffffffu;
	if (*dwarf64)
		len = cur_uint(c, 8);
	if (c->bad || len == 0)
		return false;
	if (len > c->end - c->pos) {
		c->bad = true;
		return false;
	}
	*end = c->pos + (uintptr_t)len;
	c->end = *end;
	return true;
}

static int parse_cie(struct eh_walk *w, uintptr_t addr, struct eh_cie *cie)
{
	struct eh_cur c;
	char aug[16];
	uintptr_t end, aug_end = 0;
	bool dwarf64;
	uint64_t id;
	uint8_t version;
	size_t n = 0, i;

	cur_init(&c, &w->cie_mem, addr, w->cie_mem.hi);
	if (!cur_length(&c, &end, &dwarf64))
		return -EILSEQ;
	id = cur_uint(&c, dwarf64 ? 8 : 4);
	version = cur_u8(&c);
	if (c.bad || id != 0 || (version != 1 && version != 3 && version != 4))
		return -EILSEQ;
	do {
		if (n == sizeof(aug))
			return -EILSEQ;
		aug[n] = (char)cur_u8(&c);
	} while (aug[n++] && !c.bad);

	memset(cie, 0, sizeof(*cie));
	cie->addr = addr;
	cie->fde_enc = PE_ABSPTR;
	cie->lsda_enc = PE_OMIT;
	i = 0;
	if (aug[0] == 'e' && aug[1] == 'h') {	/* old GCC: an eh pointer */
		(void)cur_uint(&c, 8);
		i = 2;
	}
	if (version == 4) {
		(void)cur_u8(&c);		/* address_size */
		(void)cur_u8(&c);		/* segment_selector_size */
	}
	(void)cur_uleb(&c);			/* code alignment */
	(void)cur_sleb(&c);			/* data alignment */
	if (version == 1)
		(void)cur_u8(&c);		/* return address register */
	else
		(void)cur_uleb(&c);
	if (aug[i] == 'z') {
		uint64_t alen = cur_uleb(&c);

		if (c.bad || alen > end - c.pos)
			return -EILSEQ;
		aug_end = c.pos + (uintptr_t)alen;
		cie->aug_z = true;
		i++;
	} else if (aug[i]) {
		/* Without 'z' nobody can tell how long the FDE's data is. */
		return -EILSEQ;
	}
	for (; aug[i]; i++) {
		uint8_t penc;

		switch (aug[i]) {
		case 'L':
			cie->lsda_enc = cur_u8(&c);
			break;
		case 'R':
			cie->fde_enc = cur_u8(&c);
			break;
		case 'P':
			penc = cur_u8(&c);
			cur_skip_encoded(&c, penc);
			break;
		case 'S':	/* signal frame */
		case 'B':	/* aarch64 BTI */
		case 'G':	/* MTE tagged frame */
			break;
		default:
			/* An unknown letter may hide 'L' or 'R' after it. */
			return -EILSEQ;
		}
	}
	if (c.bad || (aug_end && c.pos > aug_end))
		return -EILSEQ;
	return 0;
}

static int cie_get(struct eh_walk *w, uintptr_t addr, const struct eh_cie **out)
{
	struct eh_cie *cies;
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
	ret = parse_cie(w, addr, &w->cies[w->ncies]);
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
 * [reg] The FDE at addr (a search table entry): add it to the list.
 * Returns 0 (also for an FDE of discarded code, not added) or -errno.
 */
static int parse_fde(struct eh_walk *w, uintptr_t addr)
{
	struct eh_cur c;
	const struct eh_cie *cie;
	struct ukp_fde f = { 0 };
	uintptr_t end, id_field, range;
	uint64_t id;
	bool dwarf64;
	int ret;

	cur_init(&c, &w->frame, addr, w->frame.hi);
	if (!cur_length(&c, &end, &dwarf64))
		return -EILSEQ;	/* unreadable, or the terminator */
	id_field = c.pos;
	id = cur_uint(&c, dwarf64 ? 8 : 4);
	/* id 0 would be a CIE, which the table never points at */
	if (c.bad || id == 0 || id > id_field)
		return -EILSEQ;
	ret = cie_get(w, id_field - (uintptr_t)id, &cie);
	if (ret)
		return ret;

	f.start = cur_encoded(&c, cie->fde_enc, 0);
	range = (uintptr_t)cur_value(&c, cie->fde_enc & PE_FMT_MASK);
	if (cie->aug_z) {
		uint64_t alen = cur_uleb(&c);
		uintptr_t aug_end = c.pos + (uintptr_t)alen;

		if (!c.bad && alen > end - c.pos)
			return -EILSEQ;
		if (cie->lsda_enc != PE_OMIT)
			f.lsda = cur_encoded(&c, cie->lsda_enc, 0);
		if (!c.bad && c.pos > aug_end)
			return -EILSEQ;
	}
	if (c.bad)
		return -EILSEQ;
	/* An FDE of discarded code keeps pc_begin 0 or an empty range. */
	if (!f.start || !range || f.start + range < f.start)
		return 0;
	f.end = f.start + range;
	return fde_add(w, &f);
}

/* [reg] The FDEs listed in .eh_frame_hdr's search table. */
static int walk_table(struct eh_walk *w, struct eh_cur *c, uint8_t table_enc, uint64_t count,
		      uintptr_t hdr)
{
	uint64_t i;
	int ret;

	for (i = 0; i < count; i++) {
		uintptr_t fde;

		(void)cur_encoded(c, table_enc, hdr);	/* initial_loc, re-read from the FDE */
		fde = cur_encoded(c, table_enc, hdr);
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

/* [reg] */
int ukp_eh_frame_load(const struct ukp_object *obj, struct ukp_eh_frame *eh)
{
	struct phdr_match pm = { .obj = obj, .eh = eh };
	struct eh_walk *w;
	struct eh_mem *hdr_mem;
	struct eh_cur c;
	uint8_t version, frame_enc, count_enc, table_enc;
	uintptr_t frame;
	uint64_t count = 0;
	int ret;

	memset(eh, 0, sizeof(*eh));
	if (!obj)
		return -ENOENT;
	dl_iterate_phdr(match_cb, &pm);
	if (pm.err)
		return pm.err;
	if (!pm.found)
		return -ENOENT;
	if (!pm.hdr)
		return -ENOENT;
	eh->has_hdr = true;

	w = calloc(1, sizeof(*w));
	hdr_mem = calloc(1, sizeof(*hdr_mem));
	if (!w || !hdr_mem) {
		ret = -ENOMEM;
		goto out;
	}
	w->eh = eh;
	ret = -EILSEQ;
	if (!mem_at(hdr_mem, eh, pm.hdr))
		goto out;
	cur_init(&c, hdr_mem, pm.hdr, pm.hdr + pm.hdr_len);
	version = cur_u8(&c);
	frame_enc = cur_u8(&c);
	count_enc = cur_u8(&c);
	table_enc = cur_u8(&c);
	frame = cur_encoded(&c, frame_enc, pm.hdr);
	if (c.bad || version != 1 || !frame)
		goto out;
	if (!mem_at(&w->frame, eh, frame) || !mem_at(&w->cie_mem, eh, frame))
		goto out;
	/*
	 * Every linker writes the search table; it is missing only when the
	 * linker could not make sense of .eh_frame itself, and neither could
	 * we. (.eh_frame has no end marker we could trust without it: its
	 * size is in the section headers, which need not be mapped.)
	 */
	if (count_enc == PE_OMIT || table_enc == PE_OMIT)
		goto out;
	count = cur_value(&c, count_enc);
	/* each entry takes at least two bytes of the header */
	if (c.bad || count > pm.hdr_len / 2)
		goto out;
	ret = walk_table(w, &c, table_enc, count, pm.hdr);
	if (eh->nfdes)
		qsort(eh->fdes, eh->nfdes, sizeof(*eh->fdes), fde_cmp);
out:
	if (w)
		free(w->cies);
	free(w);
	free(hdr_mem);
	return ret;
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
static uint64_t cur_cs_value(struct eh_cur *c, uint8_t enc)
{
	if (enc & (PE_APP_MASK | PE_INDIRECT)) {
		c->bad = true;
		return 0;
	}
	return cur_value(c, enc);
}

/* [reg] */
int ukp_eh_landing_pads(const struct ukp_eh_frame *eh, const struct ukp_fde *fde,
			ukp_eh_pad_fn fn, void *arg)
{
	struct eh_mem *m;
	struct eh_cur c;
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
	cur_init(&c, m, fde->lsda, m->hi);

	lpstart = fde->start;
	lp_enc = cur_u8(&c);
	if (lp_enc != PE_OMIT)
		lpstart = cur_encoded(&c, lp_enc, 0);
	ttype_enc = cur_u8(&c);
	if (ttype_enc != PE_OMIT)
		(void)cur_uleb(&c);	/* offset of the type table */
	cs_enc = cur_u8(&c);
	cs_len = cur_uleb(&c);
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
		(void)cur_uleb(&c);		/* action */
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

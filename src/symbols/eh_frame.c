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

#include "symbols/eh_frame.h"
#include "base/grow_array.h"
#include "base/base.h"
#include "symbols/symbols.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */

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
	uint64_t code_align;    /* DW_CFA_advance_loc factor */
	int64_t data_align;     /* DW_CFA_offset factor */
	uint64_t ra_reg;        /* the return address column */
	uintptr_t insns, insns_end; /* initial instructions */
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
	cie->code_align = cur_uleb(&c);
	cie->data_align = cur_sleb(&c);
	if (version == 1)
		cie->ra_reg = cur_u8(&c);
	else
		cie->ra_reg = cur_uleb(&c);
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
	cie->insns = aug_end ? aug_end : c.pos;
	cie->insns_end = end;
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
 * [reg] Read the FDE at addr: its range (f->start 0 for an FDE of
 * discarded code), CIE and call frame instructions [*insns, *insns_end).
 */
static int read_fde(struct eh_walk *w, uintptr_t addr, struct ukp_fde *f,
		    const struct eh_cie **ciep, uintptr_t *insns, uintptr_t *insns_end)
{
	struct eh_cur c;
	const struct eh_cie *cie;
	uintptr_t end, id_field, range;
	uint64_t id;
	bool dwarf64;
	int ret;

	memset(f, 0, sizeof(*f));
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

	f->start = cur_encoded(&c, cie->fde_enc, 0);
	range = (uintptr_t)cur_value(&c, cie->fde_enc & PE_FMT_MASK);
	if (cie->aug_z) {
		uint64_t alen = cur_uleb(&c);
		uintptr_t aug_end = c.pos + (uintptr_t)alen;

		if (!c.bad && alen > end - c.pos)
			return -EILSEQ;
		if (cie->lsda_enc != PE_OMIT)
			f->lsda = cur_encoded(&c, cie->lsda_enc, 0);
		if (!c.bad && c.pos > aug_end)
			return -EILSEQ;
		c.pos = aug_end;
	}
	if (c.bad)
		return -EILSEQ;
	/* An FDE of discarded code keeps pc_begin 0 or an empty range. */
	if (!f->start || !range || f->start + range < f->start)
		f->start = 0;
	else
		f->end = f->start + range;
	*ciep = cie;
	*insns = c.pos;
	*insns_end = end;
	return 0;
}

/*
 * [reg] The FDE at addr (a search table entry): add it to the list.
 * Returns 0 (also for an FDE of discarded code, not added) or -errno.
 */
static int parse_fde(struct eh_walk *w, uintptr_t addr)
{
	const struct eh_cie *cie;
	struct ukp_fde f;
	uintptr_t insns, insns_end;
	int ret = read_fde(w, addr, &f, &cie, &insns, &insns_end);

	if (ret || !f.start)
		return ret;
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
		ukp_sort(eh->fdes, eh->nfdes, sizeof(*eh->fdes), fde_cmp);
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

/* ------------------------------------------------------------------ */
/* The return address rule at one address                             */
/* ------------------------------------------------------------------ */

/* DW_CFA_* opcodes (DWARF 4, section 6.4.2, and the GNU extensions). */
#define CFA_ADVANCE_LOC        0x40    /* high two bits; low six: delta */
#define CFA_OFFSET             0x80    /* low six: register */
#define CFA_RESTORE            0xc0    /* low six: register */
#define CFA_NOP                0x00
#define CFA_SET_LOC            0x01
#define CFA_ADVANCE_LOC1       0x02
#define CFA_ADVANCE_LOC2       0x03
#define CFA_ADVANCE_LOC4       0x04
#define CFA_OFFSET_EXTENDED    0x05
#define CFA_RESTORE_EXTENDED   0x06
#define CFA_UNDEFINED          0x07
#define CFA_SAME_VALUE         0x08
#define CFA_REGISTER           0x09
#define CFA_REMEMBER_STATE     0x0a
#define CFA_RESTORE_STATE      0x0b
#define CFA_DEF_CFA            0x0c
#define CFA_DEF_CFA_REGISTER   0x0d
#define CFA_DEF_CFA_OFFSET     0x0e
#define CFA_DEF_CFA_EXPRESSION 0x0f
#define CFA_EXPRESSION         0x10
#define CFA_OFFSET_EXTENDED_SF 0x11
#define CFA_DEF_CFA_SF         0x12
#define CFA_DEF_CFA_OFFSET_SF  0x13
#define CFA_VAL_OFFSET         0x14
#define CFA_VAL_OFFSET_SF      0x15
#define CFA_VAL_EXPRESSION     0x16
#define CFA_GNU_ARGS_SIZE      0x2e
#define CFA_GNU_NEG_OFFSET_EXT 0x2f

#define CFA_STACK_DEPTH 8

/* The rows' state: the CFA and the return address column only. */
struct cfa_state {
	struct ukp_eh_ra row;
	struct ukp_eh_ra init;          /* after the CIE's instructions (DW_CFA_restore) */
	struct ukp_eh_ra stack[CFA_STACK_DEPTH];
	unsigned int depth;
	uintptr_t loc;
	uintptr_t target;
};

static void ra_set(struct cfa_state *st, const struct eh_cie *cie, uint64_t reg,
		   enum ukp_eh_ra_rule rule, int64_t off)
{
	if (reg != cie->ra_reg)
		return;
	st->row.rule = rule;
	st->row.ra_off = off;
}

/*
 * [reg] Run call frame instructions [c->pos, c->end) while the location
 * stays at or below st->target. Returns 0 (ran out of instructions or
 * passed the target: st->row is the target's row) or -EILSEQ (malformed,
 * or an opcode not known).
 */
static int cfa_run(struct eh_cur *c, const struct eh_cie *cie, struct cfa_state *st)
{
	while (c->pos < c->end) {
		uint8_t op = cur_u8(c);
		uint64_t reg, delta = 0;
		int64_t off;
		bool advance = false;

		switch (op & 0xc0) {
		case CFA_ADVANCE_LOC:
			delta = op & 0x3f;
			advance = true;
			break;
		case CFA_OFFSET:
			off = (int64_t)cur_uleb(c) * cie->data_align;
			ra_set(st, cie, op & 0x3f, UKP_EH_RA_AT_CFA, off);
			break;
		case CFA_RESTORE:
			ra_set(st, cie, op & 0x3f, st->init.rule, st->init.ra_off);
			break;
		default:
			switch (op) {
			case CFA_NOP:
			case CFA_GNU_ARGS_SIZE:
				if (op == CFA_GNU_ARGS_SIZE)
					(void)cur_uleb(c);
				break;
			case CFA_SET_LOC: {
				uintptr_t loc = cur_encoded(c, cie->fde_enc, 0);

				if (c->bad)
					return -EILSEQ;
				if (loc > st->target)
					return 0;
				st->loc = loc;
				break;
			}
			case CFA_ADVANCE_LOC1:
			case CFA_ADVANCE_LOC2:
			case CFA_ADVANCE_LOC4:
				delta = cur_uint(c, op == CFA_ADVANCE_LOC1 ? 1 : op == CFA_ADVANCE_LOC2 ? 2 : 4);
				advance = true;
				break;
			case CFA_OFFSET_EXTENDED:
				reg = cur_uleb(c);
				off = (int64_t)cur_uleb(c) * cie->data_align;
				ra_set(st, cie, reg, UKP_EH_RA_AT_CFA, off);
				break;
			case CFA_OFFSET_EXTENDED_SF:
				reg = cur_uleb(c);
				off = cur_sleb(c) * cie->data_align;
				ra_set(st, cie, reg, UKP_EH_RA_AT_CFA, off);
				break;
			case CFA_GNU_NEG_OFFSET_EXT:
				reg = cur_uleb(c);
				off = -(int64_t)cur_uleb(c) * cie->data_align;
				ra_set(st, cie, reg, UKP_EH_RA_AT_CFA, off);
				break;
			case CFA_RESTORE_EXTENDED:
				ra_set(st, cie, cur_uleb(c), st->init.rule, st->init.ra_off);
				break;
			case CFA_UNDEFINED:
				ra_set(st, cie, cur_uleb(c), UKP_EH_RA_UNDEFINED, 0);
				break;
			case CFA_SAME_VALUE:
				ra_set(st, cie, cur_uleb(c), UKP_EH_RA_SAME, 0);
				break;
			case CFA_REGISTER:
				reg = cur_uleb(c);
				(void)cur_uleb(c);
				ra_set(st, cie, reg, UKP_EH_RA_OTHER, 0);
				break;
			case CFA_VAL_OFFSET:
			case CFA_VAL_OFFSET_SF:
				reg = cur_uleb(c);
				if (op == CFA_VAL_OFFSET)
					(void)cur_uleb(c);
				else
					(void)cur_sleb(c);
				ra_set(st, cie, reg, UKP_EH_RA_OTHER, 0);
				break;
			case CFA_EXPRESSION:
			case CFA_VAL_EXPRESSION: {
				uint64_t len;

				reg = cur_uleb(c);
				len = cur_uleb(c);
				if (c->bad || len > c->end - c->pos)
					return -EILSEQ;
				c->pos += (uintptr_t)len;
				ra_set(st, cie, reg, UKP_EH_RA_OTHER, 0);
				break;
			}
			case CFA_REMEMBER_STATE:
				if (st->depth == CFA_STACK_DEPTH)
					return -EILSEQ;
				st->stack[st->depth++] = st->row;
				break;
			case CFA_RESTORE_STATE:
				if (!st->depth)
					return -EILSEQ;
				/* the CFA is part of the remembered row too */
				st->row = st->stack[--st->depth];
				break;
			case CFA_DEF_CFA:
				st->row.cfa_reg = cur_uleb(c);
				st->row.cfa_off = (int64_t)cur_uleb(c);
				st->row.cfa_expr = false;
				break;
			case CFA_DEF_CFA_SF:
				st->row.cfa_reg = cur_uleb(c);
				st->row.cfa_off = cur_sleb(c) * cie->data_align;
				st->row.cfa_expr = false;
				break;
			case CFA_DEF_CFA_REGISTER:
				st->row.cfa_reg = cur_uleb(c);
				break;
			case CFA_DEF_CFA_OFFSET:
				st->row.cfa_off = (int64_t)cur_uleb(c);
				break;
			case CFA_DEF_CFA_OFFSET_SF:
				st->row.cfa_off = cur_sleb(c) * cie->data_align;
				break;
			case CFA_DEF_CFA_EXPRESSION: {
				uint64_t len = cur_uleb(c);

				if (c->bad || len > c->end - c->pos)
					return -EILSEQ;
				c->pos += (uintptr_t)len;
				st->row.cfa_expr = true;
				break;
			}
			default:
				return -EILSEQ;
			}
		}
		if (c->bad)
			return -EILSEQ;
		if (advance) {
			uintptr_t loc = st->loc + (uintptr_t)(delta * cie->code_align);

			if (loc > st->target || loc < st->loc)
				return 0;
			st->loc = loc;
		}
	}
	return 0;
}

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
int ukp_eh_ra_rule(const struct ukp_object *obj, uintptr_t addr, struct ukp_eh_ra *out)
{
	struct ukp_eh_frame eh = { 0 };
	struct phdr_match pm = { .obj = obj, .eh = &eh };
	struct eh_walk *w = NULL;
	struct eh_mem *hdr_mem = NULL;
	const struct eh_cie *cie;
	struct cfa_state st;
	struct ukp_fde f;
	struct eh_cur c;
	uint8_t version, frame_enc, count_enc, table_enc;
	uintptr_t frame, table, fde = 0, insns, insns_end;
	uint64_t count, lo, hi;
	unsigned int fsz;
	int ret;

	if (!obj)
		return -ENOENT;
	dl_iterate_phdr(match_cb, &pm);
	ret = pm.err ? pm.err : -ENOENT;
	if (pm.err || !pm.found || !pm.hdr)
		goto out;
	w = calloc(1, sizeof(*w));
	hdr_mem = calloc(1, sizeof(*hdr_mem));
	ret = -ENOMEM;
	if (!w || !hdr_mem)
		goto out;
	w->eh = &eh;
	ret = -EILSEQ;
	if (!mem_at(hdr_mem, &eh, pm.hdr))
		goto out;
	cur_init(&c, hdr_mem, pm.hdr, pm.hdr + pm.hdr_len);
	version = cur_u8(&c);
	frame_enc = cur_u8(&c);
	count_enc = cur_u8(&c);
	table_enc = cur_u8(&c);
	frame = cur_encoded(&c, frame_enc, pm.hdr);
	fsz = table_field_size(table_enc);
	if (c.bad || version != 1 || !frame || count_enc == PE_OMIT || !fsz)
		goto out;
	if (!mem_at(&w->frame, &eh, frame) || !mem_at(&w->cie_mem, &eh, frame))
		goto out;
	count = cur_value(&c, count_enc);
	table = c.pos;
	if (c.bad || count > pm.hdr_len / (2 * fsz) || table + count * 2 * fsz > c.end)
		goto out;

	/* the last entry starting at or below addr (the table is sorted) */
	for (lo = 0, hi = count; lo < hi;) {
		uint64_t mid = lo + (hi - lo) / 2;
		uintptr_t loc;

		cur_init(&c, hdr_mem, table + (uintptr_t)mid * 2 * fsz, pm.hdr + pm.hdr_len);
		loc = cur_encoded(&c, table_enc, pm.hdr);
		if (c.bad)
			goto out;
		if (loc <= addr) {
			lo = mid + 1;
			fde = cur_encoded(&c, table_enc, pm.hdr);
			if (c.bad)
				goto out;
		} else {
			hi = mid;
		}
	}
	ret = -ENOENT;
	if (!lo || !fde)
		goto out;
	ret = read_fde(w, fde, &f, &cie, &insns, &insns_end);
	if (ret)
		goto out;
	ret = -ENOENT;
	if (!f.start || addr < f.start || addr >= f.end)
		goto out;

	memset(&st, 0, sizeof(st));
	st.loc = f.start;
	st.target = addr;
	st.row.rule = UKP_EH_RA_SAME;   /* a column no instruction names */
	cur_init(&c, &w->cie_mem, cie->insns, cie->insns_end);
	ret = cfa_run(&c, cie, &st);
	if (ret)
		goto out;
	if (st.depth || st.loc != f.start) {
		ret = -EILSEQ;  /* a CIE has no business moving on */
		goto out;
	}
	st.init = st.row;
	cur_init(&c, &w->frame, insns, insns_end);
	ret = cfa_run(&c, cie, &st);
	if (!ret)
		*out = st.row;
out:
	if (w)
		free(w->cies);
	free(w);
	free(hdr_mem);
	ukp_eh_frame_free(&eh);
	return ret;
}

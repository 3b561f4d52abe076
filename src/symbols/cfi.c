// SPDX-License-Identifier: MIT
/*
 * cfi.c - DWARF call frame information: cursors, CIEs, FDEs and the
 * call frame instructions' interpreter (see cfi.h).
 *
 * Formats (LSB / DWARF call frame information, as GCC and clang emit
 * them):
 *  CIE/FDE:       u32 length (0xffffffff: a u64 length follows), u32 CIE
 *                 id (0) or CIE pointer (back from this field); a CIE's
 *                 augmentation string says, after 'z', where the FDE
 *                 pointer encoding ('R') and LSDA encoding ('L') are.
 *
 * [any]: no allocation, no lock, no libc string function (the hit's
 * callers stay vector-free: -mgeneral-regs-only, and rows are copied by
 * field, never by a struct assignment a compiler may make a memcpy()
 * call of).
 */
#include <errno.h>

#include "base/base.h"
#include "symbols/cfi.h"

void ukp_cfi_mem_init(struct ukp_cfi_mem *m, uint8_t *buf, unsigned int size, uintptr_t lo,
		      uintptr_t hi)
{
	m->lo = lo;
	m->hi = hi;
	m->chunk = 0;
	m->valid = false;
	m->size = size;
	m->buf = buf;
}

/* One byte at a, or false when a is outside the window or unmapped. */
static bool mem_byte(struct ukp_cfi_mem *m, uintptr_t a, uint8_t *b)
{
	uintptr_t chunk = a & ~(uintptr_t)(m->size - 1);

	if (a < m->lo || a >= m->hi)
		return false;
	if (!m->valid || chunk != m->chunk) {
		/* Segments are mapped in whole pages: a chunk (within a
		 * page) holding a byte of one is all readable or all gone. */
		m->valid = false;
		if (arch_copy_nofault(m->buf, (const void *)chunk, m->size))
			return false;
		m->chunk = chunk;
		m->valid = true;
	}
	*b = m->buf[a - chunk];
	return true;
}

void ukp_cfi_cur_init(struct ukp_cfi_cur *c, struct ukp_cfi_mem *m, uintptr_t pos, uintptr_t end)
{
	c->m = m;
	c->pos = pos;
	c->end = end < m->hi ? end : m->hi;
	c->bad = pos < m->lo || pos > c->end;
	c->abs = false;
}

uint8_t ukp_cfi_u8_slow(struct ukp_cfi_cur *c)
{
	uint8_t b = 0;

	if (c->bad || c->pos >= c->end || !mem_byte(c->m, c->pos, &b)) {
		c->bad = true;
		return 0;
	}
	c->pos++;
	return b;
}

uint64_t ukp_cfi_uint(struct ukp_cfi_cur *c, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)ukp_cfi_u8(c) << (8 * i);
	return v;
}

/* LEB128, unsigned or sign-extended from its last byte's bit 6. */
static uint64_t cur_leb(struct ukp_cfi_cur *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = ukp_cfi_u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return v;
}

uint64_t ukp_cfi_uleb(struct ukp_cfi_cur *c)
{
	return cur_leb(c, false);
}

int64_t ukp_cfi_sleb(struct ukp_cfi_cur *c)
{
	return (int64_t)cur_leb(c, true);
}

uint64_t ukp_cfi_value(struct ukp_cfi_cur *c, uint8_t enc)
{
	switch (enc & PE_FMT_MASK) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return ukp_cfi_uint(c, 8);
	case PE_ULEB128:
		return ukp_cfi_uleb(c);
	case PE_UDATA2:
		return ukp_cfi_uint(c, 2);
	case PE_UDATA4:
		return ukp_cfi_uint(c, 4);
	case PE_SLEB128:
		return (uint64_t)ukp_cfi_sleb(c);
	case PE_SDATA2:
		return (uint64_t)(int64_t)(int16_t)ukp_cfi_uint(c, 2);
	case PE_SDATA4:
		return (uint64_t)(int64_t)(int32_t)ukp_cfi_uint(c, 4);
	default:
		c->bad = true;
		return 0;
	}
}

uintptr_t ukp_cfi_encoded(struct ukp_cfi_cur *c, uint8_t enc, uintptr_t datarel)
{
	uintptr_t field = c->pos;
	uint64_t v = ukp_cfi_value(c, enc);

	if (c->bad || v == 0)
		return 0;
	if (enc & PE_INDIRECT) {
		c->bad = true;
		return 0;
	}
	switch (enc & PE_APP_MASK) {
	case 0:
		c->abs = true;
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

/* ------------------------------------------------------------------ */
/* CIEs and FDEs                                                      */
/* ------------------------------------------------------------------ */

/* Read a CIE/FDE length; returns false at the terminator (length 0). */
static bool cur_length(struct ukp_cfi_cur *c, uintptr_t *end, bool *dwarf64)
{
	uint64_t len = ukp_cfi_uint(c, 4);

	*dwarf64 = len == 0xffffffffu;
	if (*dwarf64)
		len = ukp_cfi_uint(c, 8);
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

int ukp_cfi_parse_cie(struct ukp_cfi_mem *m, uintptr_t addr, struct ukp_cfi_cie *cie)
{
	struct ukp_cfi_cur c;
	char aug[16];
	uintptr_t end, aug_end = 0;
	bool dwarf64;
	uint64_t id;
	uint8_t version;
	size_t n = 0, i;

	ukp_cfi_cur_init(&c, m, addr, m->hi);
	if (!cur_length(&c, &end, &dwarf64))
		return -EILSEQ;
	id = ukp_cfi_uint(&c, dwarf64 ? 8 : 4);
	version = ukp_cfi_u8(&c);
	if (c.bad || id != 0 || (version != 1 && version != 3 && version != 4))
		return -EILSEQ;
	do {
		if (n == sizeof(aug))
			return -EILSEQ;
		aug[n] = (char)ukp_cfi_u8(&c);
	} while (aug[n++] && !c.bad);

	cie->addr = addr;
	cie->fde_enc = PE_ABSPTR;
	cie->lsda_enc = PE_OMIT;
	cie->aug_z = false;
	i = 0;
	if (aug[0] == 'e' && aug[1] == 'h') {	/* old GCC: an eh pointer */
		(void)ukp_cfi_uint(&c, 8);
		i = 2;
	}
	if (version == 4) {
		(void)ukp_cfi_u8(&c);		/* address_size */
		(void)ukp_cfi_u8(&c);		/* segment_selector_size */
	}
	cie->code_align = ukp_cfi_uleb(&c);
	cie->data_align = ukp_cfi_sleb(&c);
	if (version == 1)
		cie->ra_reg = ukp_cfi_u8(&c);
	else
		cie->ra_reg = ukp_cfi_uleb(&c);
	if (aug[i] == 'z') {
		uint64_t alen = ukp_cfi_uleb(&c);

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
			cie->lsda_enc = ukp_cfi_u8(&c);
			break;
		case 'R':
			cie->fde_enc = ukp_cfi_u8(&c);
			break;
		case 'P':
			penc = ukp_cfi_u8(&c);
			(void)ukp_cfi_value(&c, penc);	/* skipped: its size */
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

int ukp_cfi_fde_head(struct ukp_cfi_cur *c, struct ukp_cfi_mem *m, uintptr_t addr,
		     uintptr_t *cie_addr)
{
	uintptr_t end, id_field;
	uint64_t id;
	bool dwarf64;

	ukp_cfi_cur_init(c, m, addr, m->hi);
	if (!cur_length(c, &end, &dwarf64))
		return -EILSEQ;	/* unreadable, or the terminator */
	id_field = c->pos;
	id = ukp_cfi_uint(c, dwarf64 ? 8 : 4);
	/* id 0 would be a CIE, which the table never points at */
	if (c->bad || id == 0 || id > id_field)
		return -EILSEQ;
	*cie_addr = id_field - (uintptr_t)id;
	return 0;
}

int ukp_cfi_fde_body(struct ukp_cfi_cur *c, const struct ukp_cfi_cie *cie, struct ukp_cfi_fde *f)
{
	uintptr_t range;

	f->start = f->end = f->lsda = 0;
	f->start = ukp_cfi_encoded(c, cie->fde_enc, 0);
	range = (uintptr_t)ukp_cfi_value(c, cie->fde_enc & PE_FMT_MASK);
	if (cie->aug_z) {
		uint64_t alen = ukp_cfi_uleb(c);
		uintptr_t aug_end = c->pos + (uintptr_t)alen;

		if (!c->bad && alen > c->end - c->pos)
			return -EILSEQ;
		if (cie->lsda_enc != PE_OMIT)
			f->lsda = ukp_cfi_encoded(c, cie->lsda_enc, 0);
		if (!c->bad && c->pos > aug_end)
			return -EILSEQ;
		c->pos = aug_end;
	}
	if (c->bad)
		return -EILSEQ;
	/* An FDE of discarded code keeps pc_begin 0 or an empty range. */
	if (!f->start || !range || f->start + range < f->start)
		f->start = 0;
	else
		f->end = f->start + range;
	f->insns = c->pos;
	f->insns_end = c->end;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The call frame instructions                                        */
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

/* The rows' state. */
struct cfa_state {
	struct ukp_cfi_row row;
	struct ukp_cfi_row init;        /* after the CIE's instructions (DW_CFA_restore) */
	struct ukp_cfi_row stack[CFA_STACK_DEPTH];
	unsigned int depth;
	uintptr_t loc;
	uintptr_t target;
	uint64_t fp_reg;
};

/* By field: a struct assignment may become a memcpy() call. */
static void row_copy(struct ukp_cfi_row *d, const struct ukp_cfi_row *s)
{
	d->cfa_reg = s->cfa_reg;
	d->cfa_off = s->cfa_off;
	d->cfa_expr = s->cfa_expr;
	d->rule = s->rule;
	d->ra_off = s->ra_off;
	d->fp_rule = s->fp_rule;
	d->fp_off = s->fp_off;
}

/* A rule for reg: followed for the return address and frame pointer. */
static void rule_set(struct cfa_state *st, const struct ukp_cfi_cie *cie, uint64_t reg,
		     enum ukp_cfi_rule rule, int64_t off)
{
	if (reg == cie->ra_reg) {
		st->row.rule = rule;
		st->row.ra_off = off;
	} else if (reg == st->fp_reg) {
		st->row.fp_rule = rule;
		st->row.fp_off = off;
	}
}

/* DW_CFA_restore: reg's rule after the CIE's instructions. */
static void rule_restore(struct cfa_state *st, const struct ukp_cfi_cie *cie, uint64_t reg)
{
	if (reg == cie->ra_reg)
		rule_set(st, cie, reg, st->init.rule, st->init.ra_off);
	else if (reg == st->fp_reg)
		rule_set(st, cie, reg, st->init.fp_rule, st->init.fp_off);
}

/*
 * Run call frame instructions [c->pos, c->end) while the location stays
 * at or below st->target. Returns 0 (ran out of instructions or passed
 * the target: st->row is the target's row) or -EILSEQ (malformed, or an
 * opcode not known).
 */
static int cfa_run(struct ukp_cfi_cur *c, const struct ukp_cfi_cie *cie, struct cfa_state *st)
{
	while (c->pos < c->end) {
		uint8_t op = ukp_cfi_u8(c);
		uint64_t reg, delta = 0;
		int64_t off;
		bool advance = false;

		switch (op & 0xc0) {
		case CFA_ADVANCE_LOC:
			delta = op & 0x3f;
			advance = true;
			break;
		case CFA_OFFSET:
			off = (int64_t)ukp_cfi_uleb(c) * cie->data_align;
			rule_set(st, cie, op & 0x3f, UKP_CFI_AT_CFA, off);
			break;
		case CFA_RESTORE:
			rule_restore(st, cie, op & 0x3f);
			break;
		default:
			switch (op) {
			case CFA_NOP:
			case CFA_GNU_ARGS_SIZE:
				if (op == CFA_GNU_ARGS_SIZE)
					(void)ukp_cfi_uleb(c);
				break;
			case CFA_SET_LOC: {
				uintptr_t loc = ukp_cfi_encoded(c, cie->fde_enc, 0);

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
				delta = ukp_cfi_uint(c, op == CFA_ADVANCE_LOC1 ? 1 : op == CFA_ADVANCE_LOC2 ? 2 : 4);
				advance = true;
				break;
			case CFA_OFFSET_EXTENDED:
				reg = ukp_cfi_uleb(c);
				off = (int64_t)ukp_cfi_uleb(c) * cie->data_align;
				rule_set(st, cie, reg, UKP_CFI_AT_CFA, off);
				break;
			case CFA_OFFSET_EXTENDED_SF:
				reg = ukp_cfi_uleb(c);
				off = ukp_cfi_sleb(c) * cie->data_align;
				rule_set(st, cie, reg, UKP_CFI_AT_CFA, off);
				break;
			case CFA_GNU_NEG_OFFSET_EXT:
				reg = ukp_cfi_uleb(c);
				off = -(int64_t)ukp_cfi_uleb(c) * cie->data_align;
				rule_set(st, cie, reg, UKP_CFI_AT_CFA, off);
				break;
			case CFA_RESTORE_EXTENDED:
				rule_restore(st, cie, ukp_cfi_uleb(c));
				break;
			case CFA_UNDEFINED:
				rule_set(st, cie, ukp_cfi_uleb(c), UKP_CFI_UNDEFINED, 0);
				break;
			case CFA_SAME_VALUE:
				rule_set(st, cie, ukp_cfi_uleb(c), UKP_CFI_SAME, 0);
				break;
			case CFA_REGISTER:
				reg = ukp_cfi_uleb(c);
				(void)ukp_cfi_uleb(c);
				rule_set(st, cie, reg, UKP_CFI_OTHER, 0);
				break;
			case CFA_VAL_OFFSET:
			case CFA_VAL_OFFSET_SF:
				reg = ukp_cfi_uleb(c);
				if (op == CFA_VAL_OFFSET)
					(void)ukp_cfi_uleb(c);
				else
					(void)ukp_cfi_sleb(c);
				rule_set(st, cie, reg, UKP_CFI_OTHER, 0);
				break;
			case CFA_EXPRESSION:
			case CFA_VAL_EXPRESSION: {
				uint64_t len;

				reg = ukp_cfi_uleb(c);
				len = ukp_cfi_uleb(c);
				if (c->bad || len > c->end - c->pos)
					return -EILSEQ;
				c->pos += (uintptr_t)len;
				rule_set(st, cie, reg, UKP_CFI_OTHER, 0);
				break;
			}
			case CFA_REMEMBER_STATE:
				if (st->depth == CFA_STACK_DEPTH)
					return -EILSEQ;
				row_copy(&st->stack[st->depth++], &st->row);
				break;
			case CFA_RESTORE_STATE:
				if (!st->depth)
					return -EILSEQ;
				/* the CFA is part of the remembered row too */
				row_copy(&st->row, &st->stack[--st->depth]);
				break;
			case CFA_DEF_CFA:
				st->row.cfa_reg = ukp_cfi_uleb(c);
				st->row.cfa_off = (int64_t)ukp_cfi_uleb(c);
				st->row.cfa_expr = false;
				break;
			case CFA_DEF_CFA_SF:
				st->row.cfa_reg = ukp_cfi_uleb(c);
				st->row.cfa_off = ukp_cfi_sleb(c) * cie->data_align;
				st->row.cfa_expr = false;
				break;
			case CFA_DEF_CFA_REGISTER:
				st->row.cfa_reg = ukp_cfi_uleb(c);
				break;
			case CFA_DEF_CFA_OFFSET:
				st->row.cfa_off = (int64_t)ukp_cfi_uleb(c);
				break;
			case CFA_DEF_CFA_OFFSET_SF:
				st->row.cfa_off = ukp_cfi_sleb(c) * cie->data_align;
				break;
			case CFA_DEF_CFA_EXPRESSION: {
				uint64_t len = ukp_cfi_uleb(c);

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

int ukp_cfi_row_at(struct ukp_cfi_mem *cm, const struct ukp_cfi_cie *cie, struct ukp_cfi_mem *fm,
		   const struct ukp_cfi_fde *f, uintptr_t addr, uint64_t fp_reg,
		   struct ukp_cfi_row *row)
{
	struct cfa_state st;
	struct ukp_cfi_cur c;
	int ret;

	st.row.cfa_reg = 0;
	st.row.cfa_off = 0;
	st.row.cfa_expr = false;
	/* a column no instruction names */
	st.row.rule = UKP_CFI_SAME;
	st.row.ra_off = 0;
	st.row.fp_rule = UKP_CFI_SAME;
	st.row.fp_off = 0;
	st.depth = 0;
	st.loc = f->start;
	st.target = addr;
	st.fp_reg = fp_reg;
	ukp_cfi_cur_init(&c, cm, cie->insns, cie->insns_end);
	ret = cfa_run(&c, cie, &st);
	if (ret)
		return ret;
	if (st.depth || st.loc != f->start)
		return -EILSEQ;  /* a CIE has no business moving on */
	row_copy(&st.init, &st.row);
	ukp_cfi_cur_init(&c, fm, f->insns, f->insns_end);
	ret = cfa_run(&c, cie, &st);
	if (!ret)
		row_copy(row, &st.row);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * unwind.c - the user stack of a hit, for the stacktrace trigger: the
 * return addresses of the frames above the probed address.
 *
 * Each frame is unwound with the call frame information of its object's
 * .eh_frame (found through .eh_frame_hdr's search table), which every
 * x86-64 and AArch64 object carries, frame pointer or not (x86-64's glibc
 * has none); where an address has no FDE, with the frame pointer chain
 * (or, at a function's first instruction, the return address where the
 * call left it: arch/ARCH/unwind_arch.h).
 *
 * [hit] ukpa_unwind() is async-signal-safe and allocation-free: every
 * read of the program's memory goes through copy_from_user_nofault(), so
 * a corrupt stack, table or an object unloaded under us ends the walk,
 * never the program. Where the objects' code and tables are comes from a
 * table [init] built with dl_iterate_phdr() (ukpa_unwind_refresh(), when
 * objects are loaded or unloaded), published by swapping two copies.
 *
 * Only the CFA (from the stack or frame pointer plus an offset), the
 * return address and the frame pointer are followed: what code needs
 * between calls. In the first frame, a return address that no rule has
 * saved yet (AArch64: a leaf, or before the prologue) is the link
 * register's. A frame whose CFA is a DWARF expression (PLT entries,
 * signal frames) or another register ends the walk unless the frame
 * pointer leads on.
 */
#include <link.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>

#include "agent.h"
#include "unwind_arch.h"

#define UW_MAX_OBJS 1024

struct uw_range {
	uintptr_t lo, hi;         /* an executable segment */
	uintptr_t hdr;            /* its object's .eh_frame_hdr, or 0 */
	uintptr_t hdr_end;
};

static struct uw_range tabs[2][UW_MAX_OBJS];
static int counts[2];
static _Atomic int cur = -1;

struct build {
	struct uw_range *t;
	int n;
};

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build *b = arg;
	uintptr_t hdr = 0, hdr_end = 0;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = info->dlpi_addr + ph->p_vaddr;
			hdr_end = hdr + ph->p_memsz;
		}
	}
	for (i = 0; i < info->dlpi_phnum && b->n < UW_MAX_OBJS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		b->t[b->n].lo = info->dlpi_addr + ph->p_vaddr;
		b->t[b->n].hi = b->t[b->n].lo + ph->p_memsz;
		b->t[b->n].hdr = hdr;
		b->t[b->n].hdr_end = hdr_end;
		b->n++;
	}
	return 0;
}


/* [hit] n words to a record slot (maybe unaligned) without memcpy():
 * libc's uses vector registers (agent.h: the handlers stay vector-free). */
static void words_out(unsigned char *dst, const uint64_t *src, uint64_t n)
{
	uint64_t i;
	unsigned int b;

	for (i = 0; i < n; i++)
		for (b = 0; b < 8; b++) {
			dst[i * 8 + b] = (unsigned char)(src[i] >> (8 * b));
			__asm__ volatile("" ::: "memory");
		}
}

/* [init] (under the probes lock: one builder at a time) */
void ukpa_unwind_refresh(void)
{
	int next = atomic_load(&cur) == 0 ? 1 : 0;
	struct build b = { tabs[next], 0 };

	dl_iterate_phdr(build_cb, &b);
	counts[next] = b.n;
	atomic_store_explicit(&cur, next, memory_order_release);
}

/* ------------------------------------------------------------ [hit] */

static bool rd(uintptr_t addr, void *dst, size_t n)
{
	return copy_from_user_nofault(dst, (const void *)addr, n) == 0;
}

static const struct uw_range *range_of(uintptr_t ip)
{
	int t = atomic_load_explicit(&cur, memory_order_acquire), i, n;

	if (t < 0)
		return NULL;
	n = counts[t];
	for (i = 0; i < n && i < UW_MAX_OBJS; i++)
		if (ip >= tabs[t][i].lo && ip < tabs[t][i].hi)
			return &tabs[t][i];
	return NULL;
}

/* A copy of CFI bytes, read at addr in the program. */
struct cur {
	const uint8_t *p, *end;
	uintptr_t addr;           /* where p[0] is in the program */
	bool bad;
};

static uint8_t c_u8(struct cur *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	c->addr++;
	return *c->p++;
}

static uint64_t c_uint(struct cur *c, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)c_u8(c) << (8 * i);
	return v;
}

static uint64_t c_leb(struct cur *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = c_u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~0ULL << shift;
	return v;
}

/* A DW_EH_PE_* encoded pointer (pcrel and absolute ones; no indirect). */
static uintptr_t c_ptr(struct cur *c, uint8_t enc)
{
	uintptr_t at = c->addr;
	uint64_t v;

	if (enc == 0xff)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: v = c_uint(c, 8); break;
	case 0x01: v = c_leb(c, false); break;
	case 0x02: v = c_uint(c, 2); break;
	case 0x03: v = c_uint(c, 4); break;
	case 0x04: v = c_uint(c, 8); break;
	case 0x09: v = c_leb(c, true); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)c_uint(c, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)c_uint(c, 4); break;
	case 0x0c: v = c_uint(c, 8); break;
	default: c->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += at; break;
	default: c->bad = true; return 0;
	}
	if (enc & 0x80)
		c->bad = true;
	return (uintptr_t)v;
}

/* How one register is found in the caller's frame. */
struct rule {
	uint8_t kind;             /* R_SAME, R_OFF (saved at CFA + off), R_LOST */
	int64_t off;
};
enum { R_SAME, R_OFF, R_LOST };

struct row {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_bad;             /* an expression */
	struct rule ra, bp;
};

/* [hit] Row copies by field: a struct assignment may become a call of
 * libc's memcpy (clang at -O0), which uses vector registers (agent.h:
 * the handlers stay vector-free). */
static void row_copy(struct row *d, const struct row *s)
{
	d->cfa_reg = s->cfa_reg;
	d->cfa_off = s->cfa_off;
	d->cfa_bad = s->cfa_bad;
	d->ra.kind = s->ra.kind;
	d->ra.off = s->ra.off;
	d->bp.kind = s->bp.kind;
	d->bp.off = s->bp.off;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_z;
};

#define CFI_BUF 1024
#define STATE_DEPTH 8

static void set_rule(struct row *r, const struct cie *cie, uint64_t reg, uint8_t kind, int64_t off)
{
	struct rule *x = reg == cie->ra_reg ? &r->ra : reg == UW_DW_FP ? &r->bp : NULL;

	if (x) {
		x->kind = kind;
		x->off = off;
	}
}

/* Run CFI instructions up to the row of target (loc: where they start);
 * init: the row after the CIE's (DW_CFA_restore). False: not handled. */
static bool cfa_run(struct cur *c, const struct cie *cie, struct row *r, const struct row *init,
		    uintptr_t loc, uintptr_t target)
{
	struct row stack[STATE_DEPTH];
	unsigned int depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = c_u8(c);
		uint64_t reg, delta = 0, len;
		bool adv = false;

		switch (op & 0xc0) {
		case 0x40:
			delta = op & 0x3f;
			adv = true;
			break;
		case 0x80:
			set_rule(r, cie, op & 0x3f, R_OFF, (int64_t)c_leb(c, false) * cie->data_align);
			break;
		case 0xc0:
			reg = op & 0x3f;
			set_rule(r, cie, reg, reg == cie->ra_reg ? init->ra.kind : init->bp.kind,
				 reg == cie->ra_reg ? init->ra.off : init->bp.off);
			break;
		default:
			switch (op) {
			case 0x00: /* nop */
				break;
			case 0x02: case 0x03: case 0x04: /* advance_loc1/2/4 */
				delta = c_uint(c, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
				adv = true;
				break;
			case 0x05: /* offset_extended */
				reg = c_leb(c, false);
				set_rule(r, cie, reg, R_OFF, (int64_t)c_leb(c, false) * cie->data_align);
				break;
			case 0x11: /* offset_extended_sf */
				reg = c_leb(c, false);
				set_rule(r, cie, reg, R_OFF, (int64_t)c_leb(c, true) * cie->data_align);
				break;
			case 0x06: /* restore_extended */
				reg = c_leb(c, false);
				set_rule(r, cie, reg, reg == cie->ra_reg ? init->ra.kind : init->bp.kind,
					 reg == cie->ra_reg ? init->ra.off : init->bp.off);
				break;
			case 0x07: /* undefined */
				reg = c_leb(c, false);
				set_rule(r, cie, reg, R_LOST, 0);
				break;
			case 0x08: /* same_value */
				set_rule(r, cie, c_leb(c, false), R_SAME, 0);
				break;
			case 0x09: /* register */
				reg = c_leb(c, false);
				(void)c_leb(c, false);
				set_rule(r, cie, reg, R_LOST, 0);
				break;
			case 0x0a: /* remember_state */
				if (depth == STATE_DEPTH)
					return false;
				row_copy(&stack[depth++], r);
				break;
			case 0x0b: /* restore_state */
				if (!depth)
					return false;
				row_copy(r, &stack[--depth]);
				break;
			case 0x0c: /* def_cfa */
				r->cfa_reg = c_leb(c, false);
				r->cfa_off = (int64_t)c_leb(c, false);
				r->cfa_bad = false;
				break;
			case 0x12: /* def_cfa_sf */
				r->cfa_reg = c_leb(c, false);
				r->cfa_off = (int64_t)c_leb(c, true) * cie->data_align;
				r->cfa_bad = false;
				break;
			case 0x0d: /* def_cfa_register */
				r->cfa_reg = c_leb(c, false);
				break;
			case 0x0e: /* def_cfa_offset */
				r->cfa_off = (int64_t)c_leb(c, false);
				break;
			case 0x13: /* def_cfa_offset_sf */
				r->cfa_off = (int64_t)c_leb(c, true) * cie->data_align;
				break;
			case 0x0f: /* def_cfa_expression */
				len = c_leb(c, false);
				if (len > (uint64_t)(c->end - c->p))
					return false;
				c->p += len;
				c->addr += len;
				r->cfa_bad = true;
				break;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				reg = c_leb(c, false);
				len = c_leb(c, false);
				if (len > (uint64_t)(c->end - c->p))
					return false;
				c->p += len;
				c->addr += len;
				set_rule(r, cie, reg, R_LOST, 0);
				break;
			case 0x14: /* val_offset */
			case 0x15: /* val_offset_sf */
				reg = c_leb(c, false);
				(void)c_leb(c, op == 0x15);
				set_rule(r, cie, reg, R_LOST, 0);
				break;
			case 0x2e: /* GNU_args_size */
				(void)c_leb(c, false);
				break;
			case 0x2f: /* GNU_negative_offset_extended */
				reg = c_leb(c, false);
				set_rule(r, cie, reg, R_OFF, -(int64_t)c_leb(c, false) * cie->data_align);
				break;
			default:
				return false;
			}
		}
		if (adv) {
			loc += (uintptr_t)(delta * cie->code_align);
			if (loc > target)
				return !c->bad;
		}
	}
	return !c->bad;
}

/* Read a CIE or FDE record at addr into buf: its body (after the
 * length), *n bytes. False if it does not fit or cannot be read. */
static bool read_record(uintptr_t addr, uint8_t *buf, size_t *n)
{
	uint32_t len;

	if (!rd(addr, &len, 4) || len == 0 || len == 0xffffffffu || len > CFI_BUF)
		return false;
	if (!rd(addr + 4, buf, len))
		return false;
	*n = len;
	return true;
}

static bool parse_cie(uintptr_t addr, struct cie *cie, struct row *init)
{
	uint8_t buf[CFI_BUF];
	const char *aug;
	struct cur c;
	size_t n, alen;
	uint8_t version;

	if (!read_record(addr, buf, &n) || n < 8)
		return false;
	c.p = buf;
	c.end = buf + n;
	c.addr = addr + 4;
	c.bad = false;
	if (c_uint(&c, 4) != 0)
		return false; /* not a CIE */
	version = c_u8(&c);
	if (version != 1 && version != 3)
		return false;
	aug = (const char *)c.p;
	/* not strnlen() nor memcpy() on the hit path: libc's use vector
	 * registers (agent.h: the handlers stay vector-free) */
	for (alen = 0; alen < (size_t)(c.end - c.p) && aug[alen]; alen++)
		__asm__ volatile("" ::: "memory");
	if (alen == (size_t)(c.end - c.p))
		return false;
	c.p += alen + 1;
	c.addr += alen + 1;
	cie->code_align = c_leb(&c, false);
	cie->data_align = (int64_t)c_leb(&c, true);
	cie->ra_reg = version == 1 ? c_u8(&c) : c_leb(&c, false);
	cie->fde_enc = 0;
	cie->has_z = aug[0] == 'z';
	if (cie->has_z) {
		uint64_t zlen = c_leb(&c, false);
		const uint8_t *zend = c.p + zlen;
		size_t i;

		if (zlen > (uint64_t)(c.end - c.p))
			return false;
		for (i = 1; i < alen && !c.bad; i++) {
			switch (aug[i]) {
			case 'R':
				cie->fde_enc = c_u8(&c);
				break;
			case 'L':
				(void)c_u8(&c);
				break;
			case 'P': {
				uint8_t penc = c_u8(&c);

				(void)c_ptr(&c, penc & 0x0f); /* skipped: its size */
				break;
			}
			case 'S':
			case 'B':
				break;
			default:
				i = alen; /* unknown: the rest is skipped by the length */
				break;
			}
		}
		c.addr += (uintptr_t)(zend - c.p);
		c.p = zend;
	} else if (alen) {
		return false;
	}
	if (c.bad)
		return false;
	init->cfa_reg = 0;
	init->cfa_off = 0;
	init->cfa_bad = false;
	init->ra.kind = init->bp.kind = 0;
	init->ra.off = init->bp.off = 0;
	/* no rule: where it was (x86-64's CIEs give one, AArch64's do not) */
	init->ra.kind = R_SAME;
	return cfa_run(&c, cie, init, init, 0, 0) && !init->cfa_bad;
}

/* The row at ip, from the FDE of the object's .eh_frame_hdr table.
 * False: no FDE covers ip, or it could not be used. */
static bool find_row(const struct uw_range *rg, uintptr_t ip, struct row *row)
{
	uint8_t hdr[4], buf[CFI_BUF];
	uint32_t count;
	int32_t ent[2];
	uint64_t lo, hi;
	uintptr_t fde = 0, table, start, range;
	struct cie cie;
	struct row init;
	struct cur c;
	size_t n;
	int32_t cie_ptr;

	if (!rg->hdr || !rd(rg->hdr, hdr, 4) || hdr[0] != 1)
		return false;
	/* the usual encodings (GNU ld, lld): pcrel sdata4 frame pointer,
	 * udata4 count, datarel sdata4 table */
	if (hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b || !rd(rg->hdr + 8, &count, 4))
		return false;
	table = rg->hdr + 12;
	if (table + (uint64_t)count * 8 > rg->hdr_end)
		return false;
	for (lo = 0, hi = count; lo < hi;) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!rd(table + mid * 8, ent, 8))
			return false;
		if (rg->hdr + (intptr_t)ent[0] <= ip) {
			fde = rg->hdr + (intptr_t)ent[1];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (!fde || !read_record(fde, buf, &n) || n < 8)
		return false;
	cie_ptr = (int32_t)((uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
			    (uint32_t)buf[3] << 24);
	if (!cie_ptr || !parse_cie(fde + 4 - (uintptr_t)(intptr_t)cie_ptr, &cie, &init))
		return false;
	c.p = buf + 4;
	c.end = buf + n;
	c.addr = fde + 8;
	c.bad = false;
	start = c_ptr(&c, cie.fde_enc);
	range = c_ptr(&c, cie.fde_enc & 0x0f);
	if (c.bad || ip < start || ip - start >= range)
		return false;
	if (cie.has_z) {
		uint64_t zlen = c_leb(&c, false);

		if (zlen > (uint64_t)(c.end - c.p))
			return false;
		c.p += zlen;
		c.addr += zlen;
	}
	row_copy(row, &init);
	return cfa_run(&c, &cie, row, &init, start, ip) && !row->cfa_bad;
}

int ukpa_unwind(uintptr_t ip, uintptr_t sp, uintptr_t bp, uintptr_t lr,
		enum ukpa_unwind_from from, uint64_t *frames, int max)
{
	int n = 0;
	bool sp_known = true;     /* false: sp is a lower bound (the frame chain) */
	void *cur = NULL;         /* kretprobe_find_ret_addr's, outwards */

	while (n < max) {
		/* a return address: the frame's row is that of the call */
		uintptr_t at = n || from == UKPA_UNWIND_RET ? ip - 1 : ip;
		const struct uw_range *rg = range_of(at);
		struct row row;
		uintptr_t cfa, ra, nbp = bp;
		bool from_lr = false;     /* ra is the link register's */

		frames[n++] = ip;
		if (!rg)
			break;
		if (find_row(rg, at, &row)) {
			if (row.cfa_reg == UW_DW_SP && sp_known)
				cfa = sp + (uintptr_t)row.cfa_off;
			else if (row.cfa_reg == UW_DW_SP && row.bp.kind == R_OFF)
				/* past its prologue, a function that saves the
				 * frame pointer points it at where it saved it */
				cfa = bp - (uintptr_t)row.bp.off;
			else if (row.cfa_reg == UW_DW_FP)
				cfa = bp + (uintptr_t)row.cfa_off;
			else
				break;
			if (row.ra.kind == R_SAME && n == 1 && lr && from != UKPA_UNWIND_RET) {
				ra = lr;
				from_lr = true;
			} else if (row.ra.kind != R_OFF || !rd(cfa + (uintptr_t)row.ra.off, &ra, 8)) {
				break; /* undefined: the outermost frame */
			}
			if (row.bp.kind == R_OFF && !rd(cfa + (uintptr_t)row.bp.off, &nbp, 8))
				break;
			sp_known = true;
		} else if (n == 1 && from == UKPA_UNWIND_ENTRY) {
			/* a function's first instruction: nothing pushed yet */
			if (!uw_entry_frame(sp, lr, &ra, &cfa))
				break;
			from_lr = lr != 0;
		} else {
			/* the frame pointer chain */
			if (bp < sp || (bp & 7) || bp - sp > (1UL << 24) || !rd(bp, &nbp, 8) ||
			    !rd(bp + 8, &ra, 8))
				break;
			cfa = bp + 16;
			sp_known = UW_FP_CHAIN_SP_EXACT;
		}
		/* a return probe's trampoline for the return address: the
		 * caller it stands for (its instance's return address; the
		 * instance is known by its frame's slot) */
		if (is_kretprobe_trampoline(ra)) {
			unsigned long real = kretprobe_find_ret_addr(0, (void *)uw_krp_slot(cfa), &cur);

			if (real)
				ra = real;
		}
		/* the end, or not going up the stack (a frame that has
		 * pushed nothing is left once, by the link register) */
		if (!ra || cfa < sp || (cfa == sp && !from_lr))
			break;
		ip = ra;
		sp = cfa;
		bp = nbp;
	}
	return n;
}

/* [hit] ukprobe run's ustack (common/script_abi.h): as a stacktrace
 * trigger's stack. */
__attribute__((visibility("default"))) int ukpa_script_ustack(const struct kprobe *kp, int ret,
							      uint64_t retaddr,
							      const struct pt_regs *regs,
							      uint64_t *frames, int max)
{
	const struct ukpa_probe *pr;
	uintptr_t ip = (uintptr_t)kp->addr, sp = user_stack_pointer(regs), fp = frame_pointer(regs);

	if (ret)
		return ukpa_unwind(retaddr, sp, fp, 0, UKPA_UNWIND_RET, frames, max);
	pr = (const struct ukpa_probe *)(const void *)((const char *)kp -
						       offsetof(struct ukpa_probe, kp));
	return ukpa_unwind(ip, sp, fp, uw_link_register(regs),
			   ip == pr->func ? UKPA_UNWIND_ENTRY : UKPA_UNWIND_INSIDE, frames, max);
}

void ukpa_stack_record(const struct ukpa_probe *pr, const struct pt_regs *regs, uintptr_t ip,
		       uintptr_t caller, struct ukp_rec *rec)
{
	const struct ukp_spec *spec = &pr->spec->spec;
	uint64_t frames[UKP_SPEC_PAYLOAD_MAX / 8], n = 0;
	unsigned int max = spec->stack_max;

	if (max > sizeof(frames) / sizeof(frames[0]))
		max = sizeof(frames) / sizeof(frames[0]);
	/* stacktrace:N: the first N hits */
	if (!spec->stack_count ||
	    (atomic_load_explicit(&pr->spec->stack_left, memory_order_relaxed) > 0 &&
	     atomic_fetch_sub_explicit(&pr->spec->stack_left, 1, memory_order_relaxed) > 0)) {
		uintptr_t sp = user_stack_pointer(regs), fp = frame_pointer(regs);
		uintptr_t lr = uw_link_register(regs);

		if (caller)
			n = (uint64_t)ukpa_unwind(caller, sp, fp, 0, UKPA_UNWIND_RET, frames, (int)max);
		else if (spec->is_watch) /* ip is the watched address: the access's next insn */
			n = (uint64_t)ukpa_unwind(instruction_pointer(regs), sp, fp, lr,
						  UKPA_UNWIND_INSIDE, frames, (int)max);
		else
			n = (uint64_t)ukpa_unwind(ip, sp, fp, lr,
						  ip == pr->func ? UKPA_UNWIND_ENTRY : UKPA_UNWIND_INSIDE,
						  frames, (int)max);
	}
	words_out(rec->data + spec->stack_off, &n, 1);
	words_out(rec->data + spec->stack_off + 8, frames, n);
}

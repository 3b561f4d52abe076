// SPDX-License-Identifier: MIT
/*
 * watch.c - AArch64 half of data watchpoints by page protection: decode
 * the load or store that faulted on a protected page, say which bytes it
 * reads and writes, and perform it for the program without unprotecting
 * the page (see src/watch.c for the design, doc/watchpoints.md for the
 * choice).
 *
 * Every AArch64 memory access is one explicit load/store instruction
 * with a base register, and its effect is only data moving between
 * registers and memory: so the instruction is emulated here from its
 * decoded fields, its bytes read and written through the core's
 * mem->read/mem->write (/proc/self/mem), general registers in
 * struct pt_regs, vector registers in the signal frame's FP/SIMD record
 * (and its SVE record when that holds registers: qemu-user restores from
 * it). No code is written or run, so there is no slot to rewrite at
 * every fault (code writes need an mprotect and cache maintenance here,
 * and under an emulator a retranslation), and no register file to load
 * around a copy.
 *
 * Classes: ldr/str (unsigned offset, unscaled, pre/post-index,
 * register offset, unprivileged, literal), ldrs*, ldp/stp/ldnp/stnp/
 * ldpsw (general and FP/SIMD registers), ldar/stlr/ldlar/stllr, ldapr,
 * ldapur/stlur, the exclusives (below), LSE atomics (ldadd, ldclr,
 * ldeor, ldset, ld[su]max, ld[su]min, swp, cas, casp, and their st*
 * aliases), ld1-ld4/st1-st4 (multiple, single, replicate; post-index),
 * dc zva; prfm makes no access. Anything else (SVE and SME loads and
 * stores, memory tagging, ldraa/ldrab, ld64b/st64b, cpy/set) returns
 * -EOPNOTSUPP.
 *
 * Exclusives: a load performed here cannot arm the CPU's exclusive
 * monitor, and a store-exclusive without it may fail without even
 * trying its page (qemu-user's does): the loop would never end. So the
 * CPU does the loads, and the stores are performed here with a monitor
 * of our own: a generation counter per 16-byte granule (hashed), bumped
 * by every write this file makes, and per thread the granule and
 * generation of its reservation. A load-exclusive on a page closed to
 * reads is reported, reserves, and returns ARCH_WATCH_EXCL_OPEN: the
 * core leaves that page readable (not writable) and the CPU loads. The
 * store-exclusive then faults on the read-only page (its monitor is
 * armed), and succeeds here when the thread's reservation is on its
 * granule with an unchanged generation; the core closes the page again.
 * On a page closed to writes only, loads never fault: a store-exclusive
 * without a reservation fails and reserves the granule as it is now, so
 * that the program's retry (which loads again, after that point)
 * succeeds unless a write to the granule came between. Store-exclusives
 * may fail spuriously, a retry succeeds without contention: a watched
 * exclusive loop never livelocks. While the page is open for the
 * load-exclusive, other threads' reads of it are not seen (until the
 * next access run here on it: the store-exclusive, or a write).
 *
 * [reg] arch_watch_init; everything else is [trap]: async-signal-safe,
 * no allocation, no libc call.
 */
#include <asm/sigcontext.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "sigframe.h"

#define MAX_BYTES 64 /* ld4/st4 of four Q registers */
#define SVE_MAX 256   /* the longest SVE vector: 2048 bits */
#define GEN_SHIFT 4   /* the exclusive granule: 16 bytes */
#define NGEN 256
#define PSTATE_BTYPE (UINT64_C(3) << 10)

/* What an instruction does, decoded. */
enum kind {
	K_NONE,     /* no access (prfm) */
	K_SINGLE,   /* one register */
	K_PAIR,     /* two registers at ea, ea + size */
	K_LDX,      /* load-exclusive (one register or a pair) */
	K_STX,      /* store-exclusive */
	K_ATOMIC,   /* ldadd ... swp */
	K_CAS,
	K_CASP,
	K_MULT,     /* ld1-4/st1-4 multiple structures */
	K_SINGLE_ST,/* ld1-4/st1-4 single structure, ldNr */
	K_ZVA,
	K_SVE,      /* SVE contiguous ld1/st1/ldnt1/stnt1 (predicated), ldr/str z and p */
};

struct op {
	enum kind kind;
	bool load, store, vec, pair_x; /* pair_x: exclusive pair */
	unsigned int size;     /* bytes per register (element for structures) */
	unsigned int sext;     /* 0, or the width in bits a load sign-extends to */
	unsigned int rt, rt2, rn, rs;
	bool wback;
	uint64_t ea, new_base;
	unsigned int aop;      /* atomic: o3:opc */
	bool ordered;          /* acquire, release or exclusive: alignment and fences */
	/* structures */
	unsigned int rpt, selem, nelem, index;
	bool q, replicate;
	/* SVE: memory bytes and register bytes per element, elements, the
	 * governing predicate (-1: none), a predicate register's transfer */
	unsigned int msize, esize, nsve;
	int pg;
	bool preg;
	size_t len;            /* bytes accessed */
};

/* The exclusive monitor (top of this file): written under the core's
 * watch lock only. */
static uint32_t gens[NGEN];
struct excl {
	uintptr_t granule;
	uint32_t gen;
	bool valid;
};
UKP_TB_LIB_FITS(struct excl, UKP_TBL_ARCH, UKP_TBL_ARCH_SIZE);
#define excl (*UKP_TB_LIB(struct excl, UKP_TBL_ARCH)) /* the thread's (base/tb_lib.h) */

extern char ukp_watch_probe_ld[], ukp_watch_probe_st[], ukp_watch_probe_fixup[];
long ukp_watch_probe_write(void *addr);

/* Does the CPU allow unaligned acquire/release and atomic accesses
 * within 16 bytes (LSE2: HWCAP_USCAT)? */
static bool lse2;

/* [reg] Nothing to set up but that: no slot, no decoder tables. */
int arch_watch_init(void)
{
	lse2 = ukp_getauxval(AT_HWCAP) & HWCAP_USCAT;
	return 0;
}

/* [trap] The write probe's fault resumes at its fixup. No other code
 * runs for a watched access here. */
UKP_TRAP_TEXT bool arch_watch_fixup(uintptr_t ip, int sig, int code, uintptr_t addr,
				    uintptr_t *fixup_ip)
{
	(void)sig, (void)code, (void)addr;
	if (ip != (uintptr_t)ukp_watch_probe_ld && ip != (uintptr_t)ukp_watch_probe_st)
		return false;
	*fixup_ip = (uintptr_t)ukp_watch_probe_fixup;
	return true;
}

/* [trap] 0 if the program may write the byte at addr now. */
UKP_TRAP_TEXT long arch_watch_probe_write(uintptr_t addr)
{
	return ukp_watch_probe_write((void *)addr);
}

/* [trap] AArch64 user space has no single-step: the core never steps in
 * place here (ARCH_WATCH_STEP_IN_PLACE is 0). */
UKP_TRAP_TEXT void arch_uc_set_single_step(ucontext_t *uc, bool on)
{
	(void)uc, (void)on;
}

/* [trap] Byte copies the compiler cannot turn into memcpy calls. */
static UKP_TRAP_TEXT void bcopy_v(void *d, const void *s, size_t n)
{
	volatile uint8_t *dd = d;
	const volatile uint8_t *ss = s;
	size_t i;

	for (i = 0; i < n; i++)
		dd[i] = ss[i];
}

static UKP_TRAP_TEXT void bzero_v(void *d, size_t n)
{
	volatile uint8_t *dd = d;
	size_t i;

	for (i = 0; i < n; i++)
		dd[i] = 0;
}

static UKP_TRAP_TEXT uint64_t sext(uint64_t v, unsigned int bits)
{
	return bits >= 64 ? v : (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits));
}

static UKP_TRAP_TEXT uint64_t mask_of(unsigned int bytes)
{
	return bytes >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (bytes * 8)) - 1;
}

/* x[n] as a base register (31 is sp) or as a data register (31 is zr). */
static UKP_TRAP_TEXT uint64_t xbase(const struct pt_regs *r, unsigned int n)
{
	return n == 31 ? r->sp : r->regs[n];
}

static UKP_TRAP_TEXT uint64_t xval(const struct pt_regs *r, unsigned int n)
{
	return n == 31 ? 0 : r->regs[n];
}

static UKP_TRAP_TEXT void xset(struct pt_regs *r, unsigned int n, uint64_t v)
{
	if (n != 31)
		r->regs[n] = v;
}

/* ------------------------------------------------ vector registers */

/* The frame's vector registers: the FP/SIMD record, and the SVE
 * record's z and p registers when it holds them. */
struct vregs {
	uint8_t *v;            /* v0..v31, 16 bytes each */
	uint8_t *z;            /* z0, or NULL */
	uint8_t *p;            /* p0 (zsize / 8 bytes each) */
	unsigned int zsize;    /* the vector length in bytes, 0 without z */
};

/* [trap] */
static UKP_TRAP_TEXT bool frame_vregs(const ucontext_t *uc, struct vregs *vr)
{
	struct fpsimd_context *fp = a64_frame_record(uc, FPSIMD_MAGIC, sizeof(*fp));
	struct sve_context *sve = a64_frame_record(uc, SVE_MAGIC, sizeof(*sve));

	if (!fp)
		return false;
	vr->v = (uint8_t *)fp->vregs;
	vr->z = vr->p = NULL;
	vr->zsize = 0;
	if (sve && sve->head.size > sizeof(*sve) && !(sve->flags & SVE_SIG_FLAG_SM)) {
		unsigned int vq = sve_vq_from_vl(sve->vl);

		if (vq && vq * 16 <= SVE_MAX && sve->head.size >= SVE_SIG_PREG_OFFSET(vq, 16)) {
			vr->z = (uint8_t *)sve + SVE_SIG_ZREG_OFFSET(vq, 0);
			vr->p = (uint8_t *)sve + SVE_SIG_PREG_OFFSET(vq, 0);
			vr->zsize = vq * 16;
		}
	}
	return true;
}

/* ------------------------------------------------------- decoding */

/* [trap] The offset of a register-offset address: Xm extended by option
 * (UXTW, LSL, SXTW, SXTX) and shifted. False: not an allowed option. */
static UKP_TRAP_TEXT bool reg_offset(const struct pt_regs *r, uint32_t insn, unsigned int scale,
				     uint64_t *off)
{
	unsigned int option = (insn >> 13) & 7, m = (insn >> 16) & 31;
	uint64_t v = xval(r, m);

	switch (option) {
	case 2: v = (uint32_t)v; break;
	case 3: break;
	case 6: v = sext((uint32_t)v, 32); break;
	case 7: break;
	default: return false;
	}
	*off = v << ((insn & (1u << 12)) ? scale : 0);
	return true;
}

/* [trap] Single register, general or FP/SIMD: size, load/store, sign
 * extension from size:opc. False: unallocated or not a data access
 * (prfm: kind K_NONE). */
static UKP_TRAP_TEXT bool single_fields(uint32_t insn, struct op *o, unsigned int *scale)
{
	unsigned int size = insn >> 30, opc = (insn >> 22) & 3;

	o->vec = insn & (1u << 26);
	o->kind = K_SINGLE;
	if (o->vec) {
		unsigned int s = size | ((opc >> 1) << 2);

		if (s > 4)
			return false;
		o->size = 1u << s;
		o->load = opc & 1;
	} else {
		o->size = 1u << size;
		if (opc == 0) {
			o->load = false;
		} else if (opc == 1) {
			o->load = true;
		} else if (size == 3 && opc == 2) {
			o->kind = K_NONE; /* prfm */
		} else if (opc == 2 && size < 3) {
			o->load = true;
			o->sext = 64;
		} else if (opc == 3 && size < 2) {
			o->load = true;
			o->sext = 32;
		} else {
			return false;
		}
	}
	o->store = !o->load && o->kind != K_NONE;
	*scale = o->vec ? (unsigned int)__builtin_ctz(o->size) : size;
	return true;
}

/* [trap] LSE atomics and ldapr (size:111000:A:R:1:Rs:o3:opc:00). */
static UKP_TRAP_TEXT bool decode_atomic(uint32_t insn, const struct pt_regs *r, struct op *o)
{
	unsigned int o3 = (insn >> 15) & 1, opc = (insn >> 12) & 7;

	o->size = 1u << (insn >> 30);
	o->rs = (insn >> 16) & 31;
	o->ea = xbase(r, o->rn);
	o->ordered = true;
	if (o3 && opc == 4) {
		if (o->rs != 31 || (insn & (3u << 22)) != (2u << 22))
			return false; /* ldapr: A=1 R=0, Rs=11111 */
		o->kind = K_SINGLE;
		o->load = true;
		return true;
	}
	if (o3 && opc != 0)
		return false; /* ld64b, st64b, rcw*: not supported */
	o->kind = K_ATOMIC;
	o->aop = o3 ? 8 : opc;
	o->load = o->store = true;
	return true;
}

/* [trap] The exclusive, ordered and compare-and-swap group
 * (size:001000:o2:L:o1:Rs:o0:Rt2:Rn:Rt). */
static UKP_TRAP_TEXT bool decode_excl(uint32_t insn, const struct pt_regs *r, struct op *o)
{
	unsigned int size = insn >> 30, o2 = (insn >> 23) & 1, l = (insn >> 22) & 1;
	unsigned int o1 = (insn >> 21) & 1;

	o->rs = (insn >> 16) & 31;
	o->rt2 = (insn >> 10) & 31;
	o->ea = xbase(r, o->rn);
	o->ordered = true;
	if (!o2 && !o1) {                      /* ldxr, ldaxr, stxr, stlxr */
		o->size = 1u << size;
		o->kind = l ? K_LDX : K_STX;
	} else if (!o2 && o1 && (size & 2)) { /* ldxp, ldaxp, stxp, stlxp */
		o->size = (size & 1) ? 8 : 4;
		o->pair_x = true;
		o->kind = l ? K_LDX : K_STX;
	} else if (!o2 && o1) {               /* casp */
		if (o->rt2 != 31 || (o->rs & 1) || (o->rt & 1))
			return false;
		o->size = (size & 1) ? 8 : 4;
		o->kind = K_CASP;
	} else if (o2 && o1) {                /* cas */
		if (o->rt2 != 31)
			return false;
		o->size = 1u << size;
		o->kind = K_CAS;
	} else {                              /* ldar, stlr, ldlar, stllr */
		o->size = 1u << size;
		o->kind = K_SINGLE;
	}
	o->load = o->kind == K_LDX || (o->kind == K_SINGLE && l) || o->kind == K_CAS ||
		  o->kind == K_CASP;
	o->store = o->kind == K_STX || (o->kind == K_SINGLE && !l) || o->kind == K_CAS ||
		   o->kind == K_CASP;
	o->len = o->pair_x || o->kind == K_CASP ? 2 * o->size : o->size;
	return true;
}

/* [trap] Advanced SIMD structure loads and stores, multiple or single,
 * with or without post-index. */
static UKP_TRAP_TEXT bool decode_struct(uint32_t insn, const struct pt_regs *r, struct op *o)
{
	bool post = insn & (1u << 23), single = insn & (1u << 24);
	unsigned int m = (insn >> 16) & 31, size = (insn >> 10) & 3, s = (insn >> 12) & 1;
	unsigned int opcode;

	o->vec = true;
	o->q = insn & (1u << 30);
	o->load = insn & (1u << 22);
	o->store = !o->load;
	o->ea = xbase(r, o->rn);
	if (!post && m != 0)
		return false;
	if (!single) {
		static const unsigned char rpt[16] = { 1, 0, 4, 0, 1, 0, 3, 1, 1, 0, 2 };
		static const unsigned char sel[16] = { 4, 0, 1, 0, 3, 0, 1, 1, 2, 0, 1 };

		opcode = (insn >> 12) & 15;
		if ((insn & (1u << 21)) || !rpt[opcode] || (size == 3 && !o->q && sel[opcode] != 1))
			return false;
		o->kind = K_MULT;
		o->rpt = rpt[opcode];
		o->selem = sel[opcode];
		o->size = 1u << size;
		o->nelem = (o->q ? 16u : 8u) / o->size;
		o->len = (size_t)o->rpt * o->selem * o->nelem * o->size;
	} else {
		unsigned int scale;
		bool r21 = insn & (1u << 21);

		opcode = (insn >> 13) & 7;
		scale = opcode >> 1;
		o->kind = K_SINGLE_ST;
		o->selem = (((opcode & 1) << 1) | r21) + 1;
		switch (scale) {
		case 3:
			if (!o->load || s)
				return false;
			o->replicate = true;
			scale = size;
			break;
		case 0:
			o->index = ((unsigned int)o->q << 3) | (s << 2) | size;
			break;
		case 1:
			if (size & 1)
				return false;
			o->index = ((unsigned int)o->q << 2) | (s << 1) | (size >> 1);
			break;
		default:
			if (size & 2)
				return false;
			if (!(size & 1)) {
				o->index = ((unsigned int)o->q << 1) | s;
			} else {
				if (s)
					return false;
				o->index = o->q;
				scale = 3;
			}
			break;
		}
		o->size = 1u << scale;
		o->len = (size_t)o->selem * o->size;
	}
	if (post) {
		o->wback = true;
		o->new_base = o->ea + (m == 31 ? o->len : xval(r, m));
	}
	return true;
}

/* [trap] SVE contiguous loads and stores (scalar plus immediate, scalar
 * plus scalar; ld1*, ld1s*, ldnt1*, st1*, stnt1*) and ldr/str of a z or
 * p register, for the vector length vl (bytes; 0: no SVE state, enough
 * to tell a store). First-fault, non-fault, structure, replicate, gather
 * and scatter forms are not performed. */
static UKP_TRAP_TEXT bool decode_sve(uint32_t insn, const struct pt_regs *r, unsigned int vl,
				     struct op *o)
{
	/* ld1 dtype: log2 of the memory and element sizes */
	static const unsigned char dm[16] = { 0, 0, 0, 0, 2, 1, 1, 1, 1, 1, 2, 2, 0, 0, 0, 3 };
	static const unsigned char de[16] = { 0, 1, 2, 3, 3, 1, 2, 3, 3, 2, 2, 3, 3, 2, 1, 3 };
	unsigned int dtype = (insn >> 21) & 15, msz = (insn >> 23) & 3, m = (insn >> 16) & 31;
	bool imm;
	int64_t off;

	o->vec = true;
	o->kind = K_SVE;
	o->pg = (int)((insn >> 10) & 7);
	/* ldr/str z and p first: their encodings lie inside st1's */
	if ((insn & 0xffc0e000u) == 0x85804000u || (insn & 0xffc0e000u) == 0xe5804000u ||
	    (insn & 0xffc0e010u) == 0x85800000u || (insn & 0xffc0e010u) == 0xe5800000u) {
		/* ldr/str z, p: [xn, #imm, mul vl] */
		o->preg = !(insn & (1u << 14));
		o->load = !(insn & (1u << 30));
		o->store = !o->load;
		o->pg = -1;
		o->msize = o->esize = 1;
		if (!vl)
			return o->store;
		o->nsve = o->preg ? vl / 8 : vl;
		off = (int64_t)sext((((insn >> 16) & 0x3f) << 3) | ((insn >> 10) & 7), 9);
		o->ea = xbase(r, o->rn) + (uint64_t)(off * (int64_t)o->nsve);
		o->len = o->nsve;
		return true;
	}
	if ((insn & 0xfe10e000u) == 0xa400a000u || (insn & 0xfe00e000u) == 0xa4004000u) {
		o->load = true;                       /* ld1*, ld1s* */
		o->msize = 1u << dm[dtype];
		o->esize = 1u << de[dtype];
		o->sext = dtype == 4 || dtype == 8 || dtype == 9 || dtype >= 12 ? 1 : 0;
		imm = insn & (1u << 13);
	} else if ((insn & 0xfe70e000u) == 0xa400e000u || (insn & 0xfe60e000u) == 0xa400c000u) {
		o->load = true;                       /* ldnt1* */
		o->msize = o->esize = 1u << msz;
		imm = insn & (1u << 13);
	} else if ((insn & 0xfe10e000u) == 0xe400e000u || (insn & 0xfe00e000u) == 0xe4004000u) {
		unsigned int esz = (insn >> 21) & 3;  /* st1* */

		if (esz < msz)
			return false;
		o->store = true;
		o->msize = 1u << msz;
		o->esize = 1u << esz;
		imm = insn & (1u << 13);
	} else if ((insn & 0xfe70e000u) == 0xe410e000u || (insn & 0xfe60e000u) == 0xe4006000u) {
		o->store = true;                      /* stnt1* */
		o->msize = o->esize = 1u << msz;
		imm = insn & (1u << 15);
	} else {
		return false;
	}
	if (!vl)
		return o->store;
	o->nsve = vl / o->esize;
	if (imm)
		off = (int64_t)sext((insn >> 16) & 15, 4) * (int64_t)(o->nsve * o->msize);
	else
		off = (int64_t)(xval(r, m) << __builtin_ctz(o->msize));
	o->ea = xbase(r, o->rn) + (uint64_t)off;
	o->len = (size_t)o->nsve * o->msize;
	return true;
}

/*
 * [trap] Decode insn at pc with the registers r: what it accesses, where
 * (o->ea, o->len) and how. False: not a data access this file performs.
 */
static UKP_TRAP_TEXT bool decode(uint32_t insn, const struct pt_regs *r, uint64_t pc,
				 unsigned int vl, struct op *o)
{
	unsigned int scale;

	bzero_v(o, sizeof(*o));
	o->rt = insn & 31;
	o->rn = (insn >> 5) & 31;
	if ((insn & 0x1e000000u) == 0x04000000u)
		return decode_sve(insn, r, vl, o);
	if ((insn & 0xffffffe0u) == 0xd50b7420u) {
		/* dc zva, xt */
		uint64_t dczid;

		__asm__ volatile("mrs %0, dczid_el0" : "=r"(dczid));
		if (dczid & 16)
			return false;
		o->kind = K_ZVA;
		o->store = true;
		o->len = (size_t)4 << (dczid & 15);
		o->ea = xval(r, o->rt) & ~(uint64_t)(o->len - 1);
		return true;
	}
	if ((insn & 0x0a000000u) != 0x08000000u)
		return false; /* not the load/store group */
	if ((insn & 0x3f000000u) == 0x08000000u)
		return decode_excl(insn, r, o);
	if ((insn & 0xbf000000u) == 0x0c000000u || (insn & 0xbf000000u) == 0x0d000000u)
		return decode_struct(insn, r, o);
	if ((insn & 0x3b000000u) == 0x18000000u) {
		/* literal: ldr w/x/s/d/q, ldrsw, prfm */
		unsigned int opc = insn >> 30;

		o->vec = insn & (1u << 26);
		o->ea = pc + (uint64_t)sext(((insn >> 5) & 0x7ffff) << 2, 21);
		if (opc == 3) {
			if (o->vec)
				return false;
			o->kind = K_NONE;
			return true;
		}
		o->kind = K_SINGLE;
		o->load = true;
		o->size = o->vec ? 4u << opc : (opc == 1 ? 8 : 4);
		o->sext = !o->vec && opc == 2 ? 64 : 0;
		o->len = o->size;
		return true;
	}
	if ((insn & 0x3a000000u) == 0x28000000u) {
		/* pairs: no-allocate, post-index, offset, pre-index */
		unsigned int opc = insn >> 30, idx = (insn >> 23) & 3;
		int64_t imm = (int64_t)sext((insn >> 15) & 0x7f, 7);
		uint64_t base;

		o->vec = insn & (1u << 26);
		o->load = insn & (1u << 22);
		o->store = !o->load;
		o->rt2 = (insn >> 10) & 31;
		if (opc == 3 || (idx == 0 && opc == 1 && !o->vec))
			return false;
		if (!o->vec && opc == 1) {
			if (!o->load)
				return false; /* stgp: memory tagging */
			o->sext = 64;   /* ldpsw */
		}
		o->size = o->vec ? 4u << opc : (opc == 2 ? 8 : 4);
		o->kind = K_PAIR;
		base = xbase(r, o->rn);
		imm *= (int64_t)o->size;
		o->ea = idx == 1 ? base : base + (uint64_t)imm;
		o->wback = idx == 1 || idx == 3;
		o->new_base = base + (uint64_t)imm;
		o->len = 2 * o->size;
		return true;
	}
	if ((insn & 0x3b200c00u) == 0x19000000u) {
		/* ldapur*, stlur (RCpc, unscaled) */
		unsigned int size = insn >> 30, opc = (insn >> 22) & 3;

		if (insn & (1u << 26))
			return false; /* FP/SIMD forms: not supported */
		o->kind = K_SINGLE;
		o->ordered = true;
		o->size = 1u << size;
		o->load = opc != 0;
		o->store = opc == 0;
		if (opc == 2 && size < 3)
			o->sext = 64;
		else if (opc == 3 && size < 2)
			o->sext = 32;
		else if (opc >= 2)
			return false;
		o->ea = xbase(r, o->rn) + sext((insn >> 12) & 0x1ff, 9);
		o->len = o->size;
		return true;
	}
	if ((insn & 0x3b000000u) == 0x39000000u) {
		/* unsigned immediate */
		if (!single_fields(insn, o, &scale))
			return false;
		o->ea = xbase(r, o->rn) + ((uint64_t)((insn >> 10) & 0xfff) << scale);
		o->len = o->size;
		return true;
	}
	if ((insn & 0x3b200000u) == 0x38000000u) {
		/* unscaled, post-index, unprivileged, pre-index */
		unsigned int idx = (insn >> 10) & 3;
		uint64_t base = xbase(r, o->rn), imm = sext((insn >> 12) & 0x1ff, 9);

		if (!single_fields(insn, o, &scale))
			return false;
		if (idx == 2 && o->vec)
			return false;
		o->ea = idx == 1 ? base : base + imm;
		o->wback = idx & 1;
		o->new_base = base + imm;
		o->len = o->size;
		return true;
	}
	if ((insn & 0x3b200c00u) == 0x38200800u) {
		/* register offset */
		uint64_t off;

		if (!single_fields(insn, o, &scale) || !reg_offset(r, insn, scale, &off))
			return false;
		o->ea = xbase(r, o->rn) + off;
		o->len = o->size;
		return true;
	}
	if ((insn & 0x3f200c00u) == 0x38200000u) {
		if (!decode_atomic(insn, r, o))
			return false;
		o->len = o->size;
		return true;
	}
	return false; /* ldraa/ldrab, memory tagging, cpy/set, ... */
}

/* [trap] Register n changed in the FP/SIMD record: the SVE record's z
 * register gets it, with the bits above 128 cleared as an FP/SIMD write
 * does. */
static UKP_TRAP_TEXT void vsync(struct vregs *vr, unsigned int n)
{
	if (!vr->z)
		return;
	bcopy_v(vr->z + (size_t)n * vr->zsize, vr->v + n * 16, 16);
	bzero_v(vr->z + (size_t)n * vr->zsize + 16, vr->zsize - 16);
}

/* [trap] A scalar FP/SIMD load into register n: the rest is cleared. */
static UKP_TRAP_TEXT void vload(struct vregs *vr, unsigned int n, const uint8_t *b, size_t len)
{
	bzero_v(vr->v + n * 16, 16);
	bcopy_v(vr->v + n * 16, b, len);
	vsync(vr, n);
}

/* ------------------------------------------------------ execution */

static UKP_TRAP_TEXT void add_acc(struct arch_watch_access *acc, unsigned int *n, uintptr_t addr,
				  size_t len, unsigned int type)
{
	if (*n < ARCH_WATCH_MAX_ACCESS && len && type) {
		acc[*n].addr = addr;
		acc[*n].len = len;
		acc[*n].type = type;
		(*n)++;
	}
}

static UKP_TRAP_TEXT int fault(struct arch_watch_fault *f, int sig, int code, uintptr_t addr)
{
	f->sig = sig;
	f->code = code;
	f->addr = addr;
	return -EFAULT;
}

/* [trap] The bytes of [ea, ea + len) into b after the program's access
 * check (write: it must also be writable). */
static UKP_TRAP_TEXT int mread(const struct arch_watch_mem *m, uint64_t ea, void *b, size_t len,
			       bool write, struct arch_watch_fault *f)
{
	uintptr_t fa;

	if (m->check(ea, len, false, &fa) || (write && m->check(ea, len, true, &fa)))
		return fault(f, SIGSEGV, 0, fa);
	if (m->read(b, ea, len))
		return fault(f, SIGSEGV, 0, ea);
	return 0;
}

/* [trap] Every write bumps the exclusive generations of its granules. */
static UKP_TRAP_TEXT int mwrite(const struct arch_watch_mem *m, uint64_t ea, const void *b,
				size_t len, struct arch_watch_fault *f)
{
	uintptr_t fa, g;
	unsigned int i = 0;

	if (m->check(ea, len, true, &fa))
		return fault(f, SIGSEGV, 0, fa);
	if (m->write(ea, b, len))
		return fault(f, SIGSEGV, 0, ea);
	for (g = ea >> GEN_SHIFT; g <= (ea + len - 1) >> GEN_SHIFT && i < NGEN; g++, i++)
		gens[g % NGEN]++;
	return 0;
}

/* [trap] The value a load gives a general register. */
static UKP_TRAP_TEXT uint64_t loaded(const struct op *o, const uint8_t *b)
{
	uint64_t v = 0;

	bcopy_v(&v, b, o->size);
	if (o->sext) {
		v = sext(v, o->size * 8);
		if (o->sext == 32)
			v = (uint32_t)v;
	}
	return v;
}

/* [trap] K_SINGLE and K_PAIR: one or two registers. */
static UKP_TRAP_TEXT int do_regs(const struct arch_watch_mem *m, const struct op *o,
				 struct pt_regs *r, struct vregs *vr, struct arch_watch_fault *f)
{
	uint8_t b[32];
	unsigned int i, n = o->kind == K_PAIR ? 2 : 1;
	unsigned int rt[2] = { o->rt, o->rt2 };
	int ret;

	if (o->load) {
		ret = mread(m, o->ea, b, o->len, false, f);
		if (ret)
			return ret;
		for (i = 0; i < n; i++) {
			if (o->vec)
				vload(vr, rt[i], b + i * o->size, o->size);
			else
				xset(r, rt[i], loaded(o, b + i * o->size));
		}
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (o->vec) {
			bcopy_v(b + i * o->size, vr->v + rt[i] * 16, o->size);
		} else {
			uint64_t v = xval(r, rt[i]);

			bcopy_v(b + i * o->size, &v, o->size);
		}
	}
	return mwrite(m, o->ea, b, o->len, f);
}

/* [trap] Exclusives, with the monitor of the top of this file. */
static UKP_TRAP_TEXT int do_excl(const struct arch_watch_mem *m, const struct op *o,
				 struct pt_regs *r, struct arch_watch_fault *f, bool *wrote)
{
	uint8_t b[16];
	size_t len = o->pair_x ? 2 * o->size : o->size;
	uintptr_t g = o->ea >> GEN_SHIFT;
	int ret;

	*wrote = false;
	if (o->kind == K_LDX) {
		uintptr_t fa;

		/* the CPU loads (ARCH_WATCH_EXCL_OPEN): reserve now, the
		 * load comes after */
		if (m->check(o->ea, len, false, &fa))
			return fault(f, SIGSEGV, 0, fa);
		excl.granule = g;
		excl.gen = gens[g % NGEN];
		excl.valid = true;
		return ARCH_WATCH_EXCL_OPEN;
	}
	if (excl.valid && excl.granule == g && excl.gen == gens[g % NGEN]) {
		uint64_t v = xval(r, o->rt), v2 = xval(r, o->rt2);
		uintptr_t fa;

		/* a store-exclusive checks its permission first */
		if (m->check(o->ea, len, true, &fa))
			return fault(f, SIGSEGV, 0, fa);
		bcopy_v(b, &v, o->size);
		if (o->pair_x)
			bcopy_v(b + o->size, &v2, o->size);
		ret = mwrite(m, o->ea, b, len, f);
		if (ret)
			return ret;
		excl.valid = false;
		*wrote = true;
		xset(r, o->rs, 0);
		return 0;
	}
	/* fail, and reserve for the retry */
	{
		uintptr_t fa;

		if (m->check(o->ea, len, true, &fa))
			return fault(f, SIGSEGV, 0, fa);
	}
	excl.granule = g;
	excl.gen = gens[g % NGEN];
	excl.valid = true;
	xset(r, o->rs, 1);
	return 0;
}

/* [trap] The new memory value of an LSE atomic. */
static UKP_TRAP_TEXT uint64_t atomic_result(unsigned int aop, uint64_t old, uint64_t s,
					    unsigned int size)
{
	unsigned int bits = size * 8;
	int64_t so = (int64_t)sext(old, bits), ss = (int64_t)sext(s, bits);

	switch (aop) {
	case 0: return old + s;            /* ldadd */
	case 1: return old & ~s;           /* ldclr */
	case 2: return old ^ s;            /* ldeor */
	case 3: return old | s;            /* ldset */
	case 4: return so > ss ? old : s;  /* ldsmax */
	case 5: return so < ss ? old : s;  /* ldsmin */
	case 6: return (old & mask_of(size)) > (s & mask_of(size)) ? old : s; /* ldumax */
	case 7: return (old & mask_of(size)) < (s & mask_of(size)) ? old : s; /* ldumin */
	default: return s;                 /* swp */
	}
}

/* [trap] LSE atomics, cas, casp: read-modify-write under the core's
 * lock, which every other access to the watched page also takes. */
static UKP_TRAP_TEXT int do_rmw(const struct arch_watch_mem *m, const struct op *o,
				struct pt_regs *r, struct arch_watch_fault *f, bool *wrote)
{
	uint8_t b[16];
	size_t len = o->kind == K_CASP ? 2 * o->size : o->size;
	uint64_t msk = mask_of(o->size), old = 0, old2 = 0, nv, nv2 = 0;
	int ret;

	ret = mread(m, o->ea, b, len, true, f);
	if (ret)
		return ret;
	bcopy_v(&old, b, o->size);
	*wrote = true;
	if (o->kind == K_ATOMIC) {
		nv = atomic_result(o->aop, old, xval(r, o->rs), o->size) & msk;
	} else if (o->kind == K_CAS) {
		*wrote = old == (xval(r, o->rs) & msk);
		nv = xval(r, o->rt) & msk;
	} else {
		bcopy_v(&old2, b + o->size, o->size);
		*wrote = old == (xval(r, o->rs) & msk) && old2 == (xval(r, o->rs + 1) & msk);
		nv = xval(r, o->rt) & msk;
		nv2 = xval(r, o->rt + 1) & msk;
	}
	if (*wrote) {
		bcopy_v(b, &nv, o->size);
		if (o->kind == K_CASP)
			bcopy_v(b + o->size, &nv2, o->size);
		ret = mwrite(m, o->ea, b, len, f);
		if (ret)
			return ret;
	}
	if (o->kind == K_ATOMIC)
		xset(r, o->rt, old);
	else
		xset(r, o->rs, old);
	if (o->kind == K_CASP)
		xset(r, o->rs + 1, old2);
	return 0;
}

/* [trap] ld1-4/st1-4: element e of register t + k, in the order the
 * instruction moves them. */
static UKP_TRAP_TEXT int do_struct(const struct arch_watch_mem *m, const struct op *o,
				   struct vregs *vr, struct arch_watch_fault *f)
{
	uint8_t b[MAX_BYTES];
	unsigned int k, e, s, off = 0, bytes = o->q ? 16 : 8;
	int ret;

	if (o->load) {
		ret = mread(m, o->ea, b, o->len, false, f);
		if (ret)
			return ret;
	}
	if (o->kind == K_MULT) {
		for (k = 0; k < o->rpt; k++)
			for (e = 0; e < o->nelem; e++)
				for (s = 0; s < o->selem; s++) {
					uint8_t *v = vr->v + ((o->rt + k + s) % 32) * 16 + e * o->size;

					if (o->load)
						bcopy_v(v, b + off, o->size);
					else
						bcopy_v(b + off, v, o->size);
					off += o->size;
				}
		if (o->load)
			for (k = 0; k < o->rpt * o->selem && k < 32; k++) {
				unsigned int t = (o->rt + k) % 32;

				bzero_v(vr->v + t * 16 + bytes, 16 - bytes);
				vsync(vr, t);
			}
	} else {
		for (s = 0; s < o->selem; s++) {
			unsigned int t = (o->rt + s) % 32;
			uint8_t *v = vr->v + t * 16;

			if (o->replicate) {
				for (e = 0; e < bytes; e += o->size)
					bcopy_v(v + e, b + off, o->size);
				bzero_v(v + bytes, 16 - bytes);
			} else if (o->load) {
				bcopy_v(v + o->index * o->size, b + off, o->size);
			} else {
				bcopy_v(b + off, v + o->index * o->size, o->size);
			}
			if (o->load)
				vsync(vr, t);
			off += o->size;
		}
	}
	return o->store ? mwrite(m, o->ea, b, o->len, f) : 0;
}

/* [trap] dc zva: the block of zeros, written a chunk at a time. */
static UKP_TRAP_TEXT int do_zva(const struct arch_watch_mem *m, const struct op *o,
				struct arch_watch_fault *f)
{
	static const uint8_t zero[256];
	size_t n;
	int ret;

	for (n = 0; n < o->len; n += sizeof(zero)) {
		ret = mwrite(m, o->ea + n, zero, o->len - n < sizeof(zero) ? o->len - n : sizeof(zero),
			     f);
		if (ret)
			return ret;
	}
	return 0;
}

/* [trap] Predicate bit of element e (esize bytes each) of p register
 * n. */
static UKP_TRAP_TEXT bool pbit(const struct vregs *vr, unsigned int n, unsigned int e,
			       unsigned int esize)
{
	unsigned int bit = e * esize;

	return vr->p[(size_t)n * (vr->zsize / 8) + bit / 8] & (1u << (bit % 8));
}

/* [trap] SVE: the span from the first active element to the last is the
 * access (o->ea, o->len narrowed to it; none when no element is
 * active); inactive elements inside it keep their bytes. A load zeroes
 * inactive elements, extends active ones (ld1s*: signed), and gives the
 * FP/SIMD record the low 128 bits too. */
static UKP_TRAP_TEXT int do_sve(const struct arch_watch_mem *m, struct op *o, struct vregs *vr,
				struct arch_watch_fault *f)
{
	uint8_t b[SVE_MAX], reg[SVE_MAX];
	uint8_t *dst = o->preg ? vr->p + (size_t)o->rt * (vr->zsize / 8)
			       : vr->z + (size_t)o->rt * vr->zsize;
	unsigned int e, first = o->nsve, last = 0;
	size_t regbytes = o->preg ? vr->zsize / 8 : vr->zsize;
	int ret;

	for (e = 0; e < o->nsve; e++)
		if (o->pg < 0 || pbit(vr, (unsigned int)o->pg, e, o->esize)) {
			if (first == o->nsve)
				first = e;
			last = e;
		}
	if (first == o->nsve) {
		o->len = 0;
	} else {
		o->ea += (uint64_t)first * o->msize;
		o->len = (size_t)(last - first + 1) * o->msize;
		ret = mread(m, o->ea, b, o->len, false, f);
		if (ret)
			return ret;
	}
	if (o->store) {
		if (!o->len)
			return 0;
		for (e = first; e <= last; e++)
			if (o->pg < 0 || pbit(vr, (unsigned int)o->pg, e, o->esize))
				bcopy_v(b + (e - first) * o->msize, dst + (size_t)e * o->esize,
					o->msize);
		return mwrite(m, o->ea, b, o->len, f);
	}
	bzero_v(reg, regbytes);
	for (e = first; o->len && e <= last; e++) {
		uint64_t v = 0;

		if (o->pg >= 0 && !pbit(vr, (unsigned int)o->pg, e, o->esize))
			continue;
		bcopy_v(&v, b + (e - first) * o->msize, o->msize);
		if (o->sext)
			v = sext(v, o->msize * 8);
		bcopy_v(reg + (size_t)e * o->esize, &v, o->esize);
	}
	bcopy_v(dst, reg, regbytes);
	if (!o->preg)
		bcopy_v(vr->v + o->rt * 16, reg, 16);
	return 0;
}

/* [trap] An alignment fault: exclusives need their whole access
 * aligned; acquire/release accesses and atomics too, or with LSE2 at
 * least not to cross 16 bytes. */
static UKP_TRAP_TEXT bool misaligned(const struct op *o)
{
	if (o->kind == K_LDX || o->kind == K_STX || o->kind == K_CASP || (o->ordered && !lse2))
		return o->ea & (o->len - 1);
	return o->ordered && (o->ea & 15) + o->len > 16;
}

/* [trap] Read the instruction at pc and decode it (with the vector
 * length of the frame's SVE state). */
static UKP_TRAP_TEXT bool decode_at(const struct pt_regs *r, const ucontext_t *uc, struct op *o)
{
	struct vregs vr;
	uint32_t insn;

	if (arch_copy_nofault(&insn, (const void *)r->pc, sizeof(insn)))
		return false;
	if (!frame_vregs(uc, &vr))
		vr.zsize = 0;
	return decode(insn, r, r->pc, vr.zsize, o);
}

/*
 * [trap] Perform the instruction at regs->pc for the program, its memory
 * accesses through m (the caller holds the lock that serializes them).
 * 0: regs (and the frame's vector registers) as after it, pc at the next
 * instruction, acc[] what it read and wrote. -EFAULT: it faults for the
 * program (*f; nothing changed). -EOPNOTSUPP: not an instruction this
 * file performs (acc[] empty).
 */
UKP_TRAP_TEXT int arch_watch_step(const struct arch_watch_mem *m, struct pt_regs *regs,
				  ucontext_t *uc, struct arch_watch_access *acc, unsigned int *nacc,
				  struct arch_watch_fault *f)
{
	struct pt_regs x = *regs;
	struct vregs vr = { 0 };
	struct op o;
	bool wrote = false;
	int ret = 0;

	*nacc = 0;
	if (!decode_at(regs, uc, &o))
		return -EOPNOTSUPP;
	if (o.vec && (!frame_vregs(uc, &vr) || (o.kind == K_SVE && !vr.z)))
		return -EOPNOTSUPP;
	if (misaligned(&o))
		return fault(f, SIGBUS, BUS_ADRALN, o.ea);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	switch (o.kind) {
	case K_NONE:
		break;
	case K_SINGLE:
	case K_PAIR:
		ret = do_regs(m, &o, &x, &vr, f);
		wrote = o.store;
		break;
	case K_LDX:
	case K_STX:
		ret = do_excl(m, &o, &x, f, &wrote);
		if (ret == ARCH_WATCH_EXCL_OPEN) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			add_acc(acc, nacc, o.ea, o.len, ARCH_WATCH_R);
			return ret;
		}
		break;
	case K_ATOMIC:
	case K_CAS:
	case K_CASP:
		ret = do_rmw(m, &o, &x, f, &wrote);
		break;
	case K_MULT:
	case K_SINGLE_ST:
		ret = do_struct(m, &o, &vr, f);
		wrote = o.store;
		break;
	case K_ZVA:
		ret = do_zva(m, &o, f);
		wrote = true;
		break;
	case K_SVE:
		ret = do_sve(m, &o, &vr, f);
		wrote = o.store && o.len;
		break;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ret)
		return ret;
	if (o.wback) {
		if (o.rn == 31)
			x.sp = o.new_base;
		else
			x.regs[o.rn] = o.new_base;
	}
	x.pc = regs->pc + 4;
	x.pstate &= ~PSTATE_BTYPE;
	*regs = x;
	if (o.kind == K_NONE || !o.len)
		return 0;
	add_acc(acc, nacc, o.ea, o.len ? o.len : o.size,
		(o.load ? ARCH_WATCH_R : 0) | (wrote ? ARCH_WATCH_W : 0));
	return 0;
}

/* [trap] Was the fault of uc a write? The instruction says (an emulator
 * may leave the ESR record out of the frame). */
UKP_TRAP_TEXT bool arch_uc_fault_write(const ucontext_t *uc)
{
	struct pt_regs r;
	struct op o;

	arch_regs_from_ucontext(&r, uc);
	return decode_at(&r, uc, &o) && o.store;
}

// SPDX-License-Identifier: MIT
/*
 * codeflow.c - the control-flow half of the jump optimization's safety
 * check (codeflow.h): nothing may jump strictly inside the bytes that one
 * 5-byte jump replaces, or it would land in the middle of that jump.
 *
 * Where jumps come from, and how each source is covered:
 *  - the function itself and its GCC cold parts (NAME.cold, NAME.cold.N
 *    symbols): decoded in full at each check; every direct target is
 *    known, indirect jumps must be resolvable jump tables
 *    (arch_scan_flow) or jumps through pointers (the pointer rule below);
 *  - code that no symbol covers: in a stripped library that is every
 *    static function and every cold part, and nothing tells which
 *    function a cold part belongs to. Its direct targets are collected
 *    once per object, from the .eh_frame FDE ranges that lie inside no
 *    function symbol (or, without unwind tables, from the gaps between
 *    symbols in executable segments), into a sorted array that each check
 *    binary-searches;
 *  - other functions: enter at their own symbol, so no other symbol may
 *    start inside the region; but hand-written assembly also jumps into
 *    another function's body (glibc's __mempcpy_*_erms jumps past the
 *    first instruction of __memmove_*_erms, which a debug file names):
 *    the direct targets outside their own FDE of every covered FDE join
 *    the same index;
 *  - the unwinder: landing pads of the function's and its cold parts'
 *    LSDAs (the user-space counterpart of the kernel's exception-table
 *    check);
 *  - return addresses: a call returns to the byte after it, so a call may
 *    only be the region's last instruction (arch_opt_prepare; the detour
 *    pushes that same address, see insn.c's relocate_call), and signal
 *    frames and threads stopped inside the region are the optimizer's
 *    thread scan's business;
 *  - addresses of code that the program keeps as data (the taken-address
 *    rule).
 *
 * The taken-address rule. Any address strictly inside the region that
 * the object's dynamic relocations store (code_refs.c: function pointer
 * tables, &&label tables of PIC code), that a non-PIE executable holds as
 * a literal (code_refs.c), or that the function computes with a
 * rip-relative lea refuses the region (-EBUSY), whatever the function's
 * jumps look like: something may jump or return there.
 *
 * The pointer rule. An indirect jump whose target is not a resolved jump
 * table is accepted when it goes through a pointer loaded from memory,
 * not from the stack: jmp *d(%reg), jmp *g(%rip), or jmp *%reg whose
 * value, on every path into the jump, comes from such a load or from
 * the function's caller (branches.c, pointer_paths: a backward search
 * over the function's own jumps, falls-through and table entries; copies
 * between registers followed; a call crossed only in a callee-saved
 * register). "Such a load": mov d(%base),%r / g(%rip),%r /
 * d(%base,%index,1),%r (a field at a variable offset), 64-bit, not from
 * %rsp or below %rbp (a spilled register). "From the caller": an
 * argument register at the function's entry. And nothing from outside
 * the function enters the path between the loads and the jump (no
 * target of uncovered code, no landing pad: the POINTER_PATH spans; on a
 * straight path, no target of the function either, in (load, jump]).
 * Why such a jump cannot land strictly inside the function (so not in
 * the region):
 *  - a switch dispatch computes its target (table base + entry) in
 *    registers right before the jump (a computed target is at most
 *    spilled to the stack, never stored elsewhere); the value reaching a
 *    pointer jump is loaded from non-stack memory or made by another
 *    function, and a scaled indexed load - a table of addresses - stays
 *    refused unless resolved as a table;
 *  - an address inside a function exists only where something made it:
 *    a call (its return address: after the call, so inside the region
 *    only for a call in the middle of it, which the relocator refuses),
 *    the unwinder (landing pads, checked), or the code's own labels taken
 *    as values (GNU C &&label, or a hand-written lea) - in position-
 *    independent code a lea in the function's code or a relative
 *    relocation for a table in data, since every absolute address in
 *    data of an ET_DYN object is relocated. Offsets between labels
 *    (&&a - &&b) are only usable from a base label taken the same way.
 *    So the pointer rule also asks that no address inside any part of
 *    the function, other than the start of a symbol (a function
 *    pointer) or a target of its own resolved jump tables (read by the
 *    dispatch, not by a plain load), is computed by its code (lea) or
 *    stored by a relocation at the start of one of its instructions;
 *    a function that takes its own labels keeps its pointer jumps
 *    refused. Labels are local to their function in C, so only the
 *    function's own leas need looking at; other functions (and so the
 *    values they pass as arguments) are trusted to hold no address
 *    inside it but what the taken-address and label checks see, as they
 *    are trusted to enter at symbols.
 * A non-PIE executable (ET_EXEC) holds absolute addresses that need no
 * relocation: a code address is materialized by an immediate (mov $imm,
 * push $imm, movabs), an absolute displacement (lea label(,%reg)), a
 * rip-relative operand, or a word of data (.data, .rodata, .init_array,
 * tables...). For one, the relocations are replaced by the index of
 * every literal of its image that is a code address (code_refs.c,
 * literal_refs: the decoded instructions of its code, the 8-byte words
 * at every 4-byte aligned address of everything else it maps), built
 * once per object, in the same decoding of its code as the index of
 * uncovered code's targets above (a large decoding, there and of the
 * ranges scanned alone, is shared with a helper thread: scan_share.c,
 * the same findings in the same order); the taken-address rule and the
 * label check above then hold as for PIC code, with that index for the
 * relocations. An object whose relocations (or image) cannot be read
 * proves nothing: there, only jumps through rip-relative memory are
 * accepted, as GOT tail calls (what the check did before the pointer
 * rule).
 *
 * The padding rule. A region whose code ends with a ret or jmp (its
 * copy stops there: nothing after it runs from the detour) still needs
 * 5 bytes; in a function shorter than that, the rest lies past the
 * function's end (ukp_codeflow_check_exit). Those bytes are accepted
 * when they are the padding before the next function: fill (NOPs,
 * int3, zeros; arch_is_padding), no symbol covering or starting in them,
 * no FDE covering them (in a stripped object, code with no symbol has
 * FDEs, and an object without unwind tables is refused), and, like the
 * whole region, no known jump, landing pad or taken address in them.
 * Nothing executes padding: the function left before it, and no entry
 * or jump reaches it.
 *
 * Code is read with ukp_read_original(): probes already in place do not
 * hide the instructions they replaced.
 *
 * [reg] everything here: registration time, registry mutex held (which
 * also guards the cache below), may allocate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/arch_branches.h"
#include "flow/code_refs.h"
#include "flow/flow_cache.h"
#include "flow/codeflow.h"
#include "symbols/eh_frame.h"
#include "base/grow_array.h"
#include "symbols/symbols.h"
#include "base/base.h"
#include "base/sys.h"
#include "text/text.h"
#include "flow/scan_share.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */

/* A function-like symbol of the object; name is an offset into names. */
struct flow_sym {
	uintptr_t start, end;
	size_t name;
};

/* A cold part: "<base>.cold[.N]" covering [start, end). */
struct flow_cold {
	size_t base;            /* offset of the symbol's name in names */
	size_t baselen;         /* the part before ".cold" */
	uintptr_t start, end;
};

/* What we know about one loaded object. */
struct flow_obj {
	struct flow_obj *next;
	const struct ukp_object *obj;
	uint64_t gen;           /* obj->gen and obj->base when built: the */
	uintptr_t base;         /* pointer alone could be a new object */
	struct flow_sym *syms;  /* by start */
	uintptr_t *maxend;      /* maxend[i]: largest end of syms[0..i] */
	size_t nsyms;
	char *names;
	struct flow_cold *colds; /* by base name */
	size_t ncolds;
	struct ukp_eh_frame eh;
	int eh_err;             /* ukp_eh_frame_load's result */
	uintptr_t fde_max_len;  /* longest FDE range */
	uintptr_t code_lo, code_hi; /* from the first executable segment's start
				 * to the last one's end */
	uintptr_t *targets;     /* direct targets of uncovered code, sorted, unique */
	size_t ntargets;
	uintptr_t *refs;        /* code addresses the relocations (non-PIE: the
				 * literals) store (code_refs.h) */
	size_t nrefs;
	int refs_err;           /* ukp_code_refs_load's result */
};

static struct flow_obj *flow_objs;

/* ------------------------------------------------------------------ */
/* Symbols and cold parts                                             */
/* ------------------------------------------------------------------ */

struct sym_collect {
	struct flow_obj *fo;
	size_t cap_syms, names_len, cap_names;
	int err;
};

static void collect_sym(const struct ukp_symres *res, void *arg)
{
	struct sym_collect *sc = arg;
	struct flow_obj *fo = sc->fo;
	struct flow_sym *syms;
	size_t len;

	if (sc->err || res->obj != fo->obj || !res->size)
		return;
	len = strlen(res->name) + 1;
	syms = ukp_grow(fo->syms, &sc->cap_syms, fo->nsyms, sizeof(*fo->syms));
	if (!syms)
		goto nomem;
	fo->syms = syms;
	while (sc->names_len + len > sc->cap_names) {
		size_t cap = sc->cap_names ? sc->cap_names * 2 : 4096;
		char *p = realloc(fo->names, cap);

		if (!p)
			goto nomem;
		fo->names = p;
		sc->cap_names = cap;
	}
	memcpy(fo->names + sc->names_len, res->name, len);
	fo->syms[fo->nsyms].start = res->start;
	fo->syms[fo->nsyms].end = res->start + res->size;
	fo->syms[fo->nsyms].name = sc->names_len;
	fo->nsyms++;
	sc->names_len += len;
	return;
nomem:
	sc->err = -ENOMEM;
}

static int sym_cmp(const void *pa, const void *pb)
{
	const struct flow_sym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->end > b->end) - (a->end < b->end);
}

/* Length of the name before a version suffix ("foo@@GLIBC_2.2.5"). */
static size_t name_keylen(const char *name)
{
	const char *at = strchr(name, '@');

	return at ? (size_t)(at - name) : strlen(name);
}

/* If name (keylen bytes) is "<base>.cold" or "<base>.cold.<digits>",
 * the length of <base>; else 0. */
size_t ukp_cold_base_len(const char *name, size_t keylen)
{
	static const char cold[] = ".cold";
	size_t end = keylen, i;

	/* strip ".<digits>" */
	i = end;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i < end && i > 0 && name[i - 1] == '.')
		end = i - 1;
	if (end <= sizeof(cold) - 1 ||
	    memcmp(name + end - (sizeof(cold) - 1), cold, sizeof(cold) - 1))
		return 0;
	return end - (sizeof(cold) - 1);
}

static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return (alen > blen) - (alen < blen);
}

static int cold_cmp(const void *pa, const void *pb, void *names)
{
	const struct flow_cold *a = pa, *b = pb;
	const char *n = names;
	int c = key_cmp(n + a->base, a->baselen, n + b->base, b->baselen);

	if (c)
		return c;
	return (a->start > b->start) - (a->start < b->start);
}

/* [reg] The object's function symbols, by address, and its cold parts. */
static int load_syms(struct flow_obj *fo)
{
	struct sym_collect sc = { .fo = fo };
	struct flow_cold *colds;
	size_t i, cap_colds = 0;

	ukp_for_each_symbol(fo->obj->path, collect_sym, &sc);
	if (sc.err)
		return sc.err;
	if (!fo->nsyms)
		return 0;
	ukp_sort(fo->syms, fo->nsyms, sizeof(*fo->syms), sym_cmp);
	fo->maxend = malloc(fo->nsyms * sizeof(*fo->maxend));
	if (!fo->maxend)
		return -ENOMEM;
	for (i = 0; i < fo->nsyms; i++) {
		const char *name = fo->names + fo->syms[i].name;
		size_t baselen = ukp_cold_base_len(name, name_keylen(name));

		fo->maxend[i] = fo->syms[i].end;
		if (i && fo->maxend[i - 1] > fo->maxend[i])
			fo->maxend[i] = fo->maxend[i - 1];
		if (!baselen)
			continue;
		colds = ukp_grow(fo->colds, &cap_colds, fo->ncolds, sizeof(*fo->colds));
		if (!colds)
			return -ENOMEM;
		fo->colds = colds;
		fo->colds[fo->ncolds].base = fo->syms[i].name;
		fo->colds[fo->ncolds].baselen = baselen;
		fo->colds[fo->ncolds].start = fo->syms[i].start;
		fo->colds[fo->ncolds].end = fo->syms[i].end;
		fo->ncolds++;
	}
	if (fo->ncolds)
		ukp_sort_r(fo->colds, fo->ncolds, sizeof(*fo->colds), cold_cmp, fo->names);
	return 0;
}

/* Index of the first symbol starting above addr. */
static size_t sym_upper(const struct flow_obj *fo, uintptr_t addr)
{
	size_t lo = 0, hi = fo->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fo->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does one symbol contain all of [start, end)? */
static bool covered(const struct flow_obj *fo, uintptr_t start, uintptr_t end)
{
	size_t i = sym_upper(fo, start);

	return i > 0 && fo->maxend[i - 1] >= end;
}

/* ------------------------------------------------------------------ */
/* The index of uncovered code                                        */
/* ------------------------------------------------------------------ */

/*
 * The ranges of code the index is built from: FDE ranges, or gaps between
 * symbols. A non-PIE executable's ranges are scanned in the decoding of
 * its code for literals (code_refs.c, arch_scan_literals), which then
 * marks them done; the rest are scanned alone (index_range).
 */
struct index_build {
	struct flow_obj *fo;
	struct arch_flow_range *ranges; /* by start */
	bool *own;              /* ranges[i] is a function's FDE: targets inside it are
				 * that function's check's business */
	size_t nranges, cap_ranges, cap_own;
	size_t cap_targets;
	uint8_t *buf;
	size_t cap_buf;
	size_t cur;             /* the range index_range scans */
	size_t alone, bytes;    /* ranges scanned alone, and their bytes */
	/* RECENT targets added lately, by a hash (or NULL): the same
	 * target again (calls to one function from everywhere) is not added
	 * again (the index is a set: sorted and unique when built) */
	uintptr_t *recent;
};

#define RECENT_BITS 12

static int add_target(struct index_build *ib, size_t range, uintptr_t target)
{
	struct flow_obj *fo = ib->fo;
	const struct arch_flow_range *r = &ib->ranges[range];
	uintptr_t *targets, *seen = NULL;

	if (ib->own[range] && target >= r->start && target < r->end)
		return 0;
	if (ib->recent) {
		seen = &ib->recent[(target * 0x9E3779B97F4A7C15ULL) >> (64 - RECENT_BITS)];
		if (*seen == target && target)
			return 0;
	}
	targets = ukp_grow(fo->targets, &ib->cap_targets, fo->ntargets, sizeof(*fo->targets));
	if (!targets)
		return -ENOMEM;
	fo->targets = targets;
	fo->targets[fo->ntargets++] = target;
	if (seen)
		*seen = target;
	return 0;
}

static int collect_target(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct index_build *ib = arg;

	(void)from;
	if (kind != ARCH_FLOW_DIRECT)
		return 0;
	return add_target(ib, ib->cur, target);
}

static int range_target(void *arg, size_t range, uintptr_t from, uintptr_t target)
{
	(void)from;
	return add_target(arg, range, target);
}

static bool in_exec_seg(const struct flow_obj *fo, uintptr_t start, uintptr_t end)
{
	size_t i;

	for (i = 0; i < fo->eh.nsegs; i++)
		if (fo->eh.segs[i].exec && start >= fo->eh.segs[i].start && end <= fo->eh.segs[i].end)
			return true;
	return false;
}

/* [reg] Index the code in [start, end) (when it is code). */
static int add_range(struct index_build *ib, uintptr_t start, uintptr_t end, bool own)
{
	struct arch_flow_range *r;
	bool *o;

	if (end <= start || !in_exec_seg(ib->fo, start, end))
		return 0;
	r = ukp_grow(ib->ranges, &ib->cap_ranges, ib->nranges, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ib->ranges = r;
	o = ukp_grow(ib->own, &ib->cap_own, ib->nranges, sizeof(*o));
	if (!o)
		return -ENOMEM;
	ib->own = o;
	ib->ranges[ib->nranges] = (struct arch_flow_range){ .start = start, .end = end };
	ib->own[ib->nranges++] = own;
	return 0;
}

/* [reg] Add the direct targets of ranges[i], read from the process. */
static int index_range(struct index_build *ib, size_t i)
{
	struct arch_code_part part;
	uintptr_t start = ib->ranges[i].start;
	size_t len = ib->ranges[i].end - start;

	if (len > ib->cap_buf) {
		uint8_t *p = realloc(ib->buf, len);

		if (!p)
			return -ENOMEM;
		ib->buf = p;
		ib->cap_buf = len;
	}
	part.addr = start;
	part.code = ib->buf;
	part.len = ukp_read_original(start, ib->buf, len);
	ib->cur = i;
	ib->alone++;
	ib->bytes += part.len;
	return arch_scan_flow(&part, 1, 0, 0, ARCH_FLOW_DIRECT_ONLY, collect_target, ib);
}

/* [reg] Without usable unwind tables: every gap between symbols in the
 * executable segments (linear decoding from each gap's start), and every
 * function symbol's own code, whose targets outside it join the index as
 * a covered FDE's do (a static non-PIE executable has no .eh_frame_hdr:
 * glibc's __mempcpy_*_erms, linked in, jumps past the first instruction
 * of __memmove_*_erms). */
static int index_gaps(struct index_build *ib)
{
	const struct flow_obj *fo = ib->fo;
	size_t i, k;
	int ret;

	for (i = 0; i < fo->eh.nsegs; i++) {
		uintptr_t pos = fo->eh.segs[i].start, end = fo->eh.segs[i].end;

		if (!fo->eh.segs[i].exec)
			continue;
		for (k = 0; k < fo->nsyms && pos < end; k++) {
			const struct flow_sym *s = &fo->syms[k];

			if (s->end <= pos)
				continue;
			if (s->start >= end)
				break;
			if (s->start > pos) {
				ret = add_range(ib, pos, s->start, false);
				if (ret)
					return ret;
				pos = s->start;
			}
			if (s->end > pos) {
				/* (an alias, or a symbol inside another: its part
				 * past what is indexed) */
				ret = add_range(ib, pos, s->end < end ? s->end : end, true);
				if (ret)
					return ret;
				pos = s->end;
			}
		}
		if (pos < end) {
			ret = add_range(ib, pos, end, false);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* [reg] The ranges to index. */
static int index_ranges(struct index_build *ib)
{
	const struct flow_obj *fo = ib->fo;
	size_t i;
	int ret = 0;

	if (fo->eh_err)
		return index_gaps(ib);
	/* one range an FDE at most: room for all at once, not copied as it grows */
	if (fo->eh.nfdes && (!(ib->ranges = malloc(fo->eh.nfdes * sizeof(*ib->ranges))) ||
			     !(ib->own = malloc(fo->eh.nfdes * sizeof(*ib->own)))))
		return -ENOMEM;
	ib->cap_ranges = ib->cap_own = fo->eh.nfdes;
	for (i = 0; i < fo->eh.nfdes && !ret; i++) {
		const struct ukp_fde *f = &fo->eh.fdes[i];

		/* a function's own targets are its check's business; those
		 * that leave it, and all of uncovered code's, are everyone's */
		ret = add_range(ib, f->start, f->end, covered(fo, f->start, f->end));
	}
	return ret;
}

/* The ranges build_index scans, read: parts[k] is ranges[which[k]]. */
struct alone {
	struct index_build *ib;
	const size_t *which;
};

static int alone_target(void *arg, size_t k, uintptr_t from, uintptr_t target)
{
	const struct alone *a = arg;

	(void)from;
	return add_target(a->ib, a->which[k], target);
}

/* [reg] The ranges the literal scan did not do, each as index_range does
 * it, read first and scanned by ukp_scan_ranges (shared with a helper
 * thread: a stripped library's every function); 1 when there is no
 * memory for that. */
static int index_alone(struct index_build *ib)
{
	struct arch_code_part *parts = malloc(ib->nranges * sizeof(*parts));
	size_t *which = malloc(ib->nranges * sizeof(*which));
	size_t i, n = 0, total = 0, off = 0;
	uint8_t *buf = NULL;
	int ret = 1;

	for (i = 0; i < ib->nranges; i++)
		if (!ib->ranges[i].done)
			total += ib->ranges[i].end - ib->ranges[i].start;
	if (!total) {
		ret = 0;
		goto out;
	}
	if (parts && which)
		buf = malloc(total);
	if (buf) {
		for (i = 0; i < ib->nranges; i++) {
			const struct arch_flow_range *r = &ib->ranges[i];

			if (r->done)
				continue;
			parts[n].addr = r->start;
			parts[n].code = buf + off;
			parts[n].len = ukp_read_original(r->start, buf + off, r->end - r->start);
			off += r->end - r->start;
			ib->alone++;
			ib->bytes += parts[n].len;
			which[n++] = i;
		}
		ret = ukp_scan_ranges(parts, n, alone_target,
				      &(struct alone){ .ib = ib, .which = which });
	}
out:
	free(buf);
	free(parts);
	free(which);
	return ret;
}

/* [reg] The ranges the literal scan did not do, then the index sorted. */
static int build_index(struct index_build *ib)
{
	struct flow_obj *fo = ib->fo;
	size_t i;
	int ret;

	ret = index_alone(ib);
	if (ret == 1) {
		for (i = 0; i < ib->nranges; i++) {
			if (ib->ranges[i].done)
				continue;
			ret = index_range(ib, i);
			if (ret)
				return ret;
		}
		ret = 0;
	}
	if (ret)
		return ret;
	fo->ntargets = ukp_addrs_sort_unique(fo->targets, fo->ntargets);
	return 0;
}

/* integers only: the library is built with -mgeneral-regs-only */
static long elapsed_us(const struct timespec *t0)
{
	struct timespec t1;

	ukp_sys_clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000000L + (t1.tv_nsec - t0->tv_nsec) / 1000;
}

/* ------------------------------------------------------------------ */
/* The cache                                                          */
/* ------------------------------------------------------------------ */

static void flow_obj_free(struct flow_obj *fo)
{
	free(fo->syms);
	free(fo->maxend);
	free(fo->names);
	free(fo->colds);
	free(fo->targets);
	free(fo->refs);
	ukp_eh_frame_free(&fo->eh);
	free(fo);
}

/*
 * [reg] The code addresses the object holds (code_refs.h), what: which
 * of them; the starts of its symbols and FDEs are the instruction
 * boundaries that decoding a non-PIE executable's code for literals
 * resynchronises on. That decoding also scans the index's ranges when
 * one_pass.
 */
static int load_refs(struct flow_obj *fo, struct index_build *ib, bool one_pass,
		     unsigned int what, uintptr_t **out, size_t *nout)
{
	uintptr_t *sync;
	struct ukp_code_refs_flow flow = {
		.ranges = ib->ranges, .n = ib->nranges, .fn = range_target, .arg = ib,
	};
	size_t i, n = 0;
	int ret;

	if (!(what & UKP_REFS_LITERALS)) /* (no decoding: no boundaries) */
		return ukp_code_refs_load(fo->obj, fo->eh.segs, fo->eh.nsegs, NULL, 0, NULL, what,
					  out, nout);
	sync = malloc((fo->nsyms + fo->eh.nfdes + 1) * sizeof(*sync));
	if (!sync)
		return -ENOMEM;
	for (i = 0; i < fo->nsyms; i++)
		sync[n++] = fo->syms[i].start;
	for (i = 0; i < fo->eh.nfdes; i++)
		sync[n++] = fo->eh.fdes[i].start;
	n = ukp_addrs_sort_unique(sync, n);
	ret = ukp_code_refs_load(fo->obj, fo->eh.segs, fo->eh.nsegs, sync, n,
				 one_pass ? &flow : NULL, what, out, nout);
	free(sync);
	return ret;
}

/* [reg] fo->refs: the relocations' addresses, and lits (freed). */
static int join_refs(struct flow_obj *fo, uintptr_t *lits, size_t nlits)
{
	uintptr_t *v;

	if (!nlits) {
		free(lits);
		return 0;
	}
	if (!fo->nrefs) {	/* (no copy) */
		free(fo->refs);
		fo->refs = lits;
		fo->nrefs = ukp_addrs_sort_unique(lits, nlits);
		return 0;
	}
	v = realloc(fo->refs, (fo->nrefs + nlits) * sizeof(*v));
	if (!v) {
		free(lits);
		return -ENOMEM;
	}
	memcpy(v + fo->nrefs, lits, nlits * sizeof(*v));
	free(lits);
	fo->refs = v;
	fo->nrefs = ukp_addrs_sort_unique(v, fo->nrefs + nlits);
	return 0;
}

/* A hash of what the build takes besides the file's bytes, relative to
 * the load bias (flow_cache.h's inputs): the segments and the symbols.
 * The FDEs (the file's: flow_cache.h) and the ranges follow from them. */
static uint64_t build_inputs(const struct flow_obj *fo)
{
	const uintptr_t b = fo->base;
	uint64_t h = ukp_disk_cache_mix(0x1f11, (uint64_t)fo->eh.nsegs);
	size_t i;

	for (i = 0; i < fo->eh.nsegs; i++) {
		h = ukp_disk_cache_mix(h, fo->eh.segs[i].start - b);
		h = ukp_disk_cache_mix(h, (fo->eh.segs[i].end - b) << 2 |
					  (uint64_t)fo->eh.segs[i].write << 1 | fo->eh.segs[i].exec);
	}
	h = ukp_disk_cache_mix(h, fo->nsyms);
	for (i = 0; i < fo->nsyms; i++) {
		h = ukp_disk_cache_mix(h, fo->syms[i].start - b);
		h = ukp_disk_cache_mix(h, fo->syms[i].end - b);
	}
	return h;
}

/*
 * [reg] The references and the index: from the cache's entry (hit, when
 * *use is UKP_FLOW_CACHE_HIT: its arrays taken), or built (one_pass: see
 * load_refs) and, on a miss, kept with the FDEs when they are the
 * file's; *use says which. The relocations' addresses are read every
 * time; the literals and the targets are the file's.
 */
static int refs_and_index(struct flow_obj *fo, struct index_build *ib, bool one_pass,
			  struct ukp_flow_cached *hit, uint64_t inputs, int *use)
{
	uintptr_t *lits = NULL;
	size_t nlits = 0;
	int ret;

	fo->refs_err = load_refs(fo, ib, one_pass, UKP_REFS_RELOCS, &fo->refs, &fo->nrefs);
	if (*use == UKP_FLOW_CACHE_HIT) {
		fo->targets = hit->targets;
		fo->ntargets = hit->ntargets;
		hit->targets = NULL;
		if (fo->refs_err)	/* (the literals are not read then) */
			return fo->refs_err == -ENOMEM ? -ENOMEM : 0;
		lits = hit->lits;
		hit->lits = NULL;
		return join_refs(fo, lits, hit->nlits);
	}
	if (!fo->refs_err) {
		fo->refs_err = load_refs(fo, ib, one_pass, UKP_REFS_LITERALS, &lits, &nlits);
		if (fo->refs_err) {
			free(fo->refs);
			fo->refs = NULL;
			fo->nrefs = 0;
		}
	}
	if (fo->refs_err == -ENOMEM)
		return -ENOMEM;
	ret = build_index(ib);
	if (ret) {
		free(lits);
		return ret;
	}
	if (*use == UKP_FLOW_CACHE_MISS) {
		const struct ukp_flow_cached keep = {
			.lits = lits, .nlits = nlits, .targets = fo->targets,
			.ntargets = fo->ntargets, .fdes = fo->eh.fdes, .nfdes = fo->eh.nfdes,
			.eh_err = fo->eh_err, .has_hdr = fo->eh.has_hdr,
		};

		*use = !fo->refs_err && fo->eh.file_only ?
			ukp_flow_cache_store(fo->obj, fo->eh.segs, fo->eh.nsegs, inputs, &keep) :
			UKP_FLOW_CACHE_OFF;
	}
	return join_refs(fo, lits, nlits);
}

/*
 * [reg] The object's FDEs: from the cache's entry when cached and it has
 * one (*use UKP_FLOW_CACHE_HIT, the rest of the entry in *hit), else read
 * (ukp_eh_frame_load). The entry is looked up before the FDEs are read:
 * its key is the file's and the segments' and symbols' (build_inputs).
 */
static int load_fdes(struct flow_obj *fo, bool cached, struct ukp_flow_cached *hit,
		     uint64_t *inputs, int *use)
{
	int ret;

	*use = UKP_FLOW_CACHE_OFF;
	if (cached) {
		ret = ukp_eh_segs_load(fo->obj, &fo->eh);
		if (ret == -ENOMEM)
			return ret;
		if (!ret) {
			*inputs = build_inputs(fo);
			*use = ukp_flow_cache_load(fo->obj, fo->eh.segs, fo->eh.nsegs, *inputs, hit);
			if (*use < 0)
				return *use;
		}
		if (*use == UKP_FLOW_CACHE_HIT) {
			fo->eh.fdes = hit->fdes;
			fo->eh.nfdes = hit->nfdes;
			fo->eh.file_only = true;
			fo->eh.has_hdr = hit->has_hdr;
			fo->eh_err = hit->eh_err;
			hit->fdes = NULL;
			return 0;
		}
		ukp_eh_frame_free(&fo->eh);
	}
	fo->eh_err = ukp_eh_frame_load(fo->obj, &fo->eh);
	return fo->eh_err == -ENOMEM ? -ENOMEM : 0;
}

/* [reg] The record of obj, built (one_pass: see load_refs); how many
 * ranges it indexed, and how many of them alone. */
static int flow_obj_build(const struct ukp_object *obj, bool one_pass, bool cached,
			  struct flow_obj **out, size_t *nranges, size_t *nalone, int *use)
{
	struct index_build ib = { 0 };
	struct ukp_flow_cached hit = { 0 };
	uint64_t inputs = 0;
	struct timespec t0;
	struct flow_obj *fo;
	size_t i;
	int ret;

	fo = calloc(1, sizeof(*fo));
	if (!fo)
		return -ENOMEM;
	fo->obj = obj;
	fo->gen = obj->gen;
	fo->base = obj->base;
	ret = load_syms(fo);
	if (ret)
		goto fail;
	ret = load_fdes(fo, cached, &hit, &inputs, use);
	if (ret)
		goto fail;
	fo->code_lo = UINTPTR_MAX;
	for (i = 0; i < fo->eh.nsegs; i++) {
		if (!fo->eh.segs[i].exec)
			continue;
		if (fo->eh.segs[i].start < fo->code_lo)
			fo->code_lo = fo->eh.segs[i].start;
		if (fo->eh.segs[i].end > fo->code_hi)
			fo->code_hi = fo->eh.segs[i].end;
	}
	if (fo->code_lo > fo->code_hi)
		fo->code_lo = fo->code_hi = 0;
	for (i = 0; i < fo->eh.nfdes; i++)
		if (fo->eh.fdes[i].end - fo->eh.fdes[i].start > fo->fde_max_len)
			fo->fde_max_len = fo->eh.fdes[i].end - fo->eh.fdes[i].start;

	ukp_sys_clock_gettime(CLOCK_MONOTONIC, &t0);
	ib.fo = fo;
	ib.recent = calloc(1u << RECENT_BITS, sizeof(*ib.recent));
	ret = index_ranges(&ib);
	if (ret)
		goto fail;
	ret = refs_and_index(fo, &ib, one_pass, &hit, inputs, use);
	if (ret)
		goto fail;
	pr_debug("codeflow: %s: %zu symbols, %zu cold parts, %zu FDEs%s, %zu uncovered ranges "
		 "(%zu decoded alone: %zu bytes), %zu jump targets, %zu code references (%d); "
		 "built in %ld us%s\n",
		 fo->obj->name, fo->nsyms, fo->ncolds, fo->eh.nfdes,
		 fo->eh_err == -ENOENT ? " (no unwind tables: gaps between symbols instead)" :
		 fo->eh_err ? " (unusable: gaps between symbols instead)" : "", ib.nranges,
		 ib.alone, ib.bytes, fo->ntargets, fo->nrefs, fo->refs_err, elapsed_us(&t0),
		 *use == UKP_FLOW_CACHE_HIT ? " (from the cache)" :
		 *use == UKP_FLOW_CACHE_STORED ? " (kept in the cache)" : "");
	*out = fo;
	*nranges = ib.nranges;
	*nalone = ib.alone;
	ret = 0;
	goto out;
fail:
	flow_obj_free(fo);
out:
	free(ib.ranges);
	free(ib.own);
	free(ib.buf);
	free(ib.recent);
	ukp_flow_cached_free(&hit);
	return ret;
}

/* [reg] The record of a live object, built on first use. */
static int flow_obj_get(const struct ukp_object *obj, struct flow_obj **out)
{
	struct flow_obj *fo, **pp;
	size_t nranges, nalone;
	int ret, use;

	for (pp = &flow_objs; (fo = *pp); pp = &fo->next) {
		if (fo->obj != obj)
			continue;
		if (fo->gen == obj->gen && fo->base == obj->base) {
			*out = fo;
			return 0;
		}
		/* a new object where a forgotten one was */
		*pp = fo->next;
		flow_obj_free(fo);
		break;
	}
	ret = flow_obj_build(obj, true, true, &fo, &nranges, &nalone, &use);
	if (ret)
		return ret;
	fo->next = flow_objs;
	flow_objs = fo;
	*out = fo;
	return 0;
}

/* [reg] */
int ukp_codeflow_index(const struct ukp_object *obj, bool one_pass,
		       struct ukp_codeflow_index *out)
{
	struct flow_obj *fo;
	int ret = flow_obj_build(obj, one_pass || out->cached, out->cached, &fo, &out->nranges,
				 &out->nalone, &out->cache_use);

	if (ret)
		return ret;
	out->targets = fo->targets;
	out->ntargets = fo->ntargets;
	out->refs = fo->refs;
	out->nrefs = fo->nrefs;
	out->refs_err = fo->refs_err;
	out->nfdes = fo->eh.nfdes;
	out->eh_err = fo->eh_err;
	out->fdes_hash = 0;
	for (size_t i = 0; i < fo->eh.nfdes; i++) {
		const struct ukp_fde *f = &fo->eh.fdes[i];

		out->fdes_hash = ukp_disk_cache_mix(out->fdes_hash, f->start - fo->base);
		out->fdes_hash = ukp_disk_cache_mix(out->fdes_hash, f->end - fo->base);
		out->fdes_hash = ukp_disk_cache_mix(out->fdes_hash, f->lsda ? f->lsda - fo->base + 1 : 0);
	}
	fo->targets = fo->refs = NULL;
	flow_obj_free(fo);
	return 0;
}

/* [reg] */
void ukp_codeflow_forget_dead(void)
{
	struct flow_obj *fo, **pp = &flow_objs;

	ukp_codeflow_memo_forget();

	while ((fo = *pp)) {
		/* ukp_object_alive() only compares the pointer: safe on a
		 * record whose object was freed by ukp_symbols_reset(). */
		if (ukp_object_alive(fo->obj) && fo->obj->gen == fo->gen) {
			pp = &fo->next;
			continue;
		}
		*pp = fo->next;
		flow_obj_free(fo);
	}
}

/* ------------------------------------------------------------------ */
/* The check                                                          */
/* ------------------------------------------------------------------ */

#define MAX_PARTS 16    /* the function and its cold parts */

/* A jump through a loaded pointer: the load at def reaches the jump at
 * from when nothing jumps into (def, from]. */
struct ptr_jump {
	uintptr_t def, from;
	bool global;            /* from rip-relative memory (a GOT slot?) */
};

struct check {
	uintptr_t addr, end;            /* the region */
	const struct arch_code_part *parts;
	size_t nparts;
	const char *why;
	uintptr_t *targets;             /* every direct and table target */
	size_t ntargets, cap_targets;
	uintptr_t *tables;              /* the table targets alone */
	size_t ntables, cap_tables;
	uintptr_t *taken;               /* addresses of the parts' code the code computes */
	size_t ntaken, cap_taken;
	struct ptr_jump *ptrs;
	size_t nptrs, cap_ptrs;
	uintptr_t *spans;               /* POINTER_PATH: [spans[2k], spans[2k + 1]] */
	size_t nspans, cap_spans;       /* (counts addresses, two per span) */
};

static int push_addr(uintptr_t **v, size_t *cap, size_t *n, uintptr_t a)
{
	uintptr_t *p = ukp_grow(*v, cap, *n, sizeof(**v));

	if (!p)
		return -ENOMEM;
	*v = p;
	p[(*n)++] = a;
	return 0;
}

static bool in_region(const struct check *ck, uintptr_t a)
{
	return a > ck->addr && a < ck->end;
}

static int check_flow(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct check *ck = arg;
	bool in_func = from >= ck->parts[0].addr && from - ck->parts[0].addr < ck->parts[0].len;
	struct ptr_jump *p;

	switch (kind) {
	case ARCH_FLOW_DIRECT:
		if (!in_region(ck, target))
			return push_addr(&ck->targets, &ck->cap_targets, &ck->ntargets, target);
		ck->why = in_func ? "a jump in the function targets the region" :
				    "a jump in its .cold part targets the region";
		return -EBUSY;
	case ARCH_FLOW_TABLE:
		if (!in_region(ck, target))
			return push_addr(&ck->targets, &ck->cap_targets, &ck->ntargets, target) ?:
			       push_addr(&ck->tables, &ck->cap_tables, &ck->ntables, target);
		ck->why = "a jump table entry targets the region";
		return -EBUSY;
	case ARCH_FLOW_POINTER:
	case ARCH_FLOW_GLOBAL_POINTER:
		p = ukp_grow(ck->ptrs, &ck->cap_ptrs, ck->nptrs, sizeof(*p));
		if (!p)
			return -ENOMEM;
		ck->ptrs = p;
		p[ck->nptrs].def = target;
		p[ck->nptrs].from = from;
		p[ck->nptrs++].global = kind == ARCH_FLOW_GLOBAL_POINTER;
		return 0;
	case ARCH_FLOW_POINTER_PATH:
		return push_addr(&ck->spans, &ck->cap_spans, &ck->nspans, from) ?:
		       push_addr(&ck->spans, &ck->cap_spans, &ck->nspans, target);
	case ARCH_FLOW_ADDRESS:
		return push_addr(&ck->taken, &ck->cap_taken, &ck->ntaken, target);
	case ARCH_FLOW_UNKNOWN:
		ck->why = in_func ? "indirect jump with unknown targets" :
				    "indirect jump with unknown targets in its .cold part";
		return -EOPNOTSUPP;
	case ARCH_FLOW_UNDECODABLE:
		ck->why = "undecodable bytes in the function";
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Is some element of the sorted v in (lo, hi]? */
static bool any_in(const uintptr_t *v, size_t n, uintptr_t lo, uintptr_t hi)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (v[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && v[a] <= hi;
}

/* Does a symbol start at a? */
static bool sym_starts_at(const struct flow_obj *fo, uintptr_t a)
{
	size_t i = sym_upper(fo, a);

	return i > 0 && fo->syms[i - 1].start == a;
}

/*
 * [reg] The taken-address rule (at the top): an address strictly inside
 * the region that the object stores (dynamic relocations) or the
 * function computes (lea) is a way into the region that no jump
 * instruction shows.
 */
static int check_taken_in_region(const struct flow_obj *fo, struct check *ck)
{
	size_t i;

	for (i = 0; i < ck->ntaken; i++)
		if (in_region(ck, ck->taken[i]))
			goto taken;
	if (!fo->refs_err && any_in(fo->refs, fo->nrefs, ck->addr, ck->end - 1))
		goto taken;
	return 0;
taken:
	ck->why = "the address of an instruction inside the region is taken";
	return -EBUSY;
}

/*
 * [reg] Does an instruction of the part start at a? A label is the start
 * of an instruction; a code address held elsewhere is none of the
 * function's labels (in a non-PIE executable: a string or a number that
 * looks like one, "N\0N\0" or "sIO\0").
 */
static bool on_boundary(const struct arch_code_part *part, uintptr_t a)
{
	return arch_check_boundary(part->code, a - part->addr, part->len) == 0;
}

/*
 * [reg] The pointer rule (at the top): the function's jumps through
 * loaded pointers leave it, or go to one of the addresses the object
 * materializes, none of which is inside the function but at a symbol's
 * start; and the load reaches the jump.
 */
static int check_pointers(const struct flow_obj *fo, struct check *ck)
{
	size_t i, k;
	bool all_global = true;

	for (i = 0; i < ck->nptrs; i++)
		all_global &= ck->ptrs[i].global;
	if (fo->refs_err && !all_global) {
		ck->why = fo->refs_err == -ENOTSUP ?
			"indirect jump through a pointer in an object without relocations "
			"(non-PIC code can hold any code address)" :
			"indirect jump through a pointer (the object's relocations cannot be read)";
		return -EOPNOTSUPP;
	}
	/* Without the relocations, jumps through globals are taken for
	 * what they nearly always are: tail calls through the GOT. */
	ck->ntables = ukp_addrs_sort_unique(ck->tables, ck->ntables);
	for (i = 0; i < ck->nparts && !fo->refs_err; i++) {
		uintptr_t ps = ck->parts[i].addr, pe = ps + ck->parts[i].len;
		size_t lo = 0, hi = fo->nrefs;

		for (k = 0; k < ck->ntaken; k++)
			if (ck->taken[k] > ps && ck->taken[k] < pe &&
			    !sym_starts_at(fo, ck->taken[k]) &&
			    on_boundary(&ck->parts[i], ck->taken[k]))
				goto labels;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (fo->refs[mid] <= ps)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (k = lo; k < fo->nrefs && fo->refs[k] < pe; k++)
			if (!sym_starts_at(fo, fo->refs[k]) &&
			    !any_in(ck->tables, ck->ntables, fo->refs[k] - 1, fo->refs[k]) &&
			    on_boundary(&ck->parts[i], fo->refs[k]))
				goto labels;
	}
	ck->ntargets = ukp_addrs_sort_unique(ck->targets, ck->ntargets);
	for (i = 0; i < ck->nptrs; i++) {
		const struct ptr_jump *p = &ck->ptrs[i];

		if (p->def != p->from &&
		    (any_in(ck->targets, ck->ntargets, p->def, p->from) ||
		     any_in(fo->targets, fo->ntargets, p->def, p->from))) {
			ck->why = "indirect jump with unknown targets (a jump lands between the "
				  "pointer's load and the jump)";
			return -EOPNOTSUPP;
		}
	}
	/* the paths of the value that the arch traced through the
	 * function's own jumps: no other code may enter them */
	for (i = 0; i + 1 < ck->nspans; i += 2) {
		if (any_in(fo->targets, fo->ntargets, ck->spans[i] - 1, ck->spans[i + 1])) {
			ck->why = "indirect jump with unknown targets (code outside any symbol "
				  "jumps between the pointer's load and the jump)";
			return -EOPNOTSUPP;
		}
	}
	return 0;
labels:
	ck->why = "indirect jump through a pointer in a function that takes the address of its "
		  "own code (labels as values?)";
	return -EOPNOTSUPP;
}

static int check_pad(uintptr_t pad, void *arg)
{
	struct check *ck = arg;
	size_t i;

	if (in_region(ck, pad)) {
		ck->why = "an exception landing pad is inside the region";
		return -EBUSY;
	}
	for (i = 0; i < ck->nptrs; i++)
		if (pad > ck->ptrs[i].def && pad <= ck->ptrs[i].from)
			goto between;
	for (i = 0; i + 1 < ck->nspans; i += 2)
		if (pad >= ck->spans[i] && pad <= ck->spans[i + 1])
			goto between;
	return 0;
between:
	ck->why = "indirect jump with unknown targets (a landing pad lies between "
		  "the pointer's load and the jump)";
	return -EOPNOTSUPP;
}

/* Index of the first FDE that may reach addr: none is longer than
 * fde_max_len (linkers refuse overlapping FDEs, but we do not rely on
 * it). */
static size_t fde_lower(const struct flow_obj *fo, uintptr_t addr)
{
	uintptr_t from = addr > fo->fde_max_len ? addr - fo->fde_max_len : 0;
	size_t lo = 0, hi = fo->eh.nfdes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fo->eh.fdes[mid].start < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [reg] Landing pads of every FDE overlapping one of the parts. */
static int check_pads(const struct flow_obj *fo, struct check *ck)
{
	size_t i, k;
	int ret;

	for (i = 0; i < ck->nparts; i++) {
		uintptr_t ps = ck->parts[i].addr, pe = ps + ck->parts[i].len;

		for (k = fde_lower(fo, ps); k < fo->eh.nfdes && fo->eh.fdes[k].start < pe; k++) {
			if (fo->eh.fdes[k].end <= ps)
				continue;
			ret = ukp_eh_landing_pads(&fo->eh, &fo->eh.fdes[k], check_pad, ck);
			if (ret == -EILSEQ) {
				ck->why = "unreadable exception table (LSDA)";
				return -EOPNOTSUPP;
			}
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Does a direct jump of code that no symbol covers land in the region? */
static bool uncovered_jumps_into(const struct flow_obj *fo, const struct check *ck)
{
	size_t lo = 0, hi = fo->ntargets;

	/* lo := first target above the region's first byte */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fo->targets[mid] <= ck->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < fo->ntargets && fo->targets[lo] < ck->end;
}

/* [reg] Add the cold parts of every alias of the function at start to the
 * n parts; returns the new count, or 0 when they do not fit. */
static size_t find_cold_parts(const struct flow_obj *fo, uintptr_t start,
			      struct arch_code_part *parts, size_t n)
{
	size_t i = sym_upper(fo, start);

	while (i-- > 0 && fo->syms[i].start == start) {
		const char *name = fo->names + fo->syms[i].name;
		size_t keylen = name_keylen(name), lo = 0, hi = fo->ncolds, k, j;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct flow_cold *c = &fo->colds[mid];

			if (key_cmp(fo->names + c->base, c->baselen, name, keylen) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (k = lo; k < fo->ncolds; k++) {
			const struct flow_cold *c = &fo->colds[k];
			bool dup = false;

			if (key_cmp(fo->names + c->base, c->baselen, name, keylen))
				break;
			for (j = 0; j < n; j++)
				dup |= parts[j].addr == c->start;
			if (!dup) {
				if (n == MAX_PARTS)
					return 0;
				parts[n].addr = c->start;
				parts[n].len = c->end - c->start;
				n++;
			}
		}
	}
	return n;
}

/*
 * [reg] The bytes [start, end) after the function's end that a region
 * whose code ends inside the function (with a ret or jmp) also covers:
 * they must be the alignment padding between two functions, which no
 * thread ever runs. The padding rule (at the top).
 */
static int check_padding(const struct flow_obj *fo, uintptr_t start, uintptr_t end,
			 const char **why)
{
	uint8_t buf[64];
	size_t i = sym_upper(fo, start), k;

	if (fo->eh_err) {
		/* without FDEs, code that no symbol covers could start here */
		*why = "the region leaves the function (no unwind tables to check the padding)";
		return -EINVAL;
	}
	/* a function symbol that covers the bytes (the next one starting
	 * inside the region is refused with the other symbols) */
	if (i > 0 && fo->maxend[i - 1] > start) {
		*why = "the region leaves the function into another symbol";
		return -EINVAL;
	}
	for (k = fde_lower(fo, start); k < fo->eh.nfdes && fo->eh.fdes[k].start < end; k++) {
		if (fo->eh.fdes[k].end > start) {
			*why = "the region leaves the function into code with unwind information";
			return -EINVAL;
		}
	}
	if (end - start > sizeof(buf) / 2 ||
	    !arch_is_padding(buf, ukp_read_original(start, buf, sizeof(buf)), end - start)) {
		*why = "the region leaves the function into bytes that are not padding";
		return -EINVAL;
	}
	return 0;
}

/* [reg] */
int ukp_codeflow_check(const struct ukp_symres *sym, uintptr_t addr, size_t len, const char **why)
{
	return ukp_codeflow_check_exit(sym, addr, len, len, why);
}

/*
 * The answers given since the last ukp_codeflow_memo_forget(): the same
 * region is asked about again before long (ukprobes_optimizable, then the
 * detour of a batch's site, or the optimizer's next round), and the answer
 * depends on the object's code alone, read unpatched. By the region and
 * its object (the pointer and the load generation: an object loaded again
 * at the same address is not the same); forgotten with the objects that
 * went (ukp_codeflow_forget_dead). Out of memory is not an answer.
 */
struct memo_ent {
	uintptr_t addr, fstart;
	const struct ukp_object *obj;
	uint64_t gen;
	size_t fsize, len, code_len;
	int ret;
	const char *why;
};
static struct memo_ent *memo;
static size_t memo_mask, memo_n;

static struct memo_ent *memo_slot(struct memo_ent *tab, size_t mask, uintptr_t addr,
				  size_t len, size_t code_len)
{
	size_t h = (size_t)((addr * 0x9E3779B97F4A7C15ULL) >> 24) & mask;

	while (tab[h].addr && (tab[h].addr != addr || tab[h].len != len ||
			       tab[h].code_len != code_len))
		h = (h + 1) & mask;
	return &tab[h];
}

static const struct memo_ent *memo_find(const struct ukp_symres *sym, uintptr_t addr, size_t len,
					size_t code_len)
{
	const struct memo_ent *e;

	if (!memo)
		return NULL;
	e = memo_slot(memo, memo_mask, addr, len, code_len);
	if (!e->addr || e->obj != sym->obj || e->gen != sym->obj->gen || e->fstart != sym->start ||
	    e->fsize != sym->size)
		return NULL;
	return e;
}

static void memo_add(const struct ukp_symres *sym, uintptr_t addr, size_t len, size_t code_len,
		     int ret, const char *why)
{
	struct memo_ent *e;

	if (ret == -ENOMEM || !addr)
		return;
	if (2 * (memo_n + 1) > memo_mask + 1) {
		size_t mask = memo_mask ? 2 * memo_mask + 1 : 255, i;
		struct memo_ent *tab = calloc(mask + 1, sizeof(*tab));

		if (!tab)
			return;
		for (i = 0; memo && i <= memo_mask; i++)
			if (memo[i].addr)
				*memo_slot(tab, mask, memo[i].addr, memo[i].len, memo[i].code_len) =
					memo[i];
		free(memo);
		memo = tab;
		memo_mask = mask;
	}
	e = memo_slot(memo, memo_mask, addr, len, code_len);
	if (!e->addr)
		memo_n++;
	*e = (struct memo_ent){ addr, sym->start, sym->obj, sym->obj->gen, sym->size, len,
				code_len, ret, why };
}

/* [reg] */
void ukp_codeflow_memo_forget(void)
{
	free(memo);
	memo = NULL;
	memo_mask = memo_n = 0;
}

static int check_exit(const struct ukp_symres *sym, uintptr_t addr, size_t len,
		      size_t code_len, const char **why);

/* [reg] */
int ukp_codeflow_check_exit(const struct ukp_symres *sym, uintptr_t addr, size_t len,
			    size_t code_len, const char **why)
{
	const struct memo_ent *e;
	const char *dummy;
	int ret;

	if (!why)
		why = &dummy;
	if (sym && sym->obj && ukp_object_alive(sym->obj)) {
		e = memo_find(sym, addr, len, code_len);
		if (e) {
			*why = e->why;
			return e->ret;
		}
		ret = check_exit(sym, addr, len, code_len, why);
		memo_add(sym, addr, len, code_len, ret, *why);
		return ret;
	}
	return check_exit(sym, addr, len, code_len, why);
}

static int check_exit(const struct ukp_symres *sym, uintptr_t addr, size_t len,
		      size_t code_len, const char **why)
{
	struct arch_code_part parts[MAX_PARTS];
	uintptr_t fn_end;
	struct check ck = { .addr = addr, .end = addr + len, .parts = parts };
	const char *dummy;
	struct flow_obj *fo;
	size_t i, n;
	int ret;

	if (!why)
		why = &dummy;
	*why = NULL;
	memset(parts, 0, sizeof(parts));
	if (!sym || !sym->obj || !len || code_len > len) {
		*why = "empty region";
		return -EINVAL;
	}
	fn_end = sym->start + sym->size;
	if (addr < sym->start || addr >= fn_end || addr + code_len > fn_end ||
	    (addr + len > fn_end && code_len == len)) {
		*why = "the region leaves the function";
		return -EINVAL;
	}
	if (!ukp_object_alive(sym->obj)) {
		*why = "the object is no longer loaded";
		return -ENOENT;
	}
	ret = flow_obj_get(sym->obj, &fo);
	if (ret) {
		*why = "out of memory";
		return ret;
	}
	if (addr + len > fn_end) {
		ret = check_padding(fo, fn_end, addr + len, why);
		if (ret)
			return ret;
	}

	/* Another entry point inside the region. */
	i = sym_upper(fo, addr);
	if (i < fo->nsyms && fo->syms[i].start < ck.end) {
		*why = "another symbol starts inside the region";
		return -EBUSY;
	}

	/* The function and its cold parts. */
	parts[0].addr = sym->start;
	parts[0].len = sym->size;
	n = find_cold_parts(fo, sym->start, parts, 1);
	if (!n) {
		*why = "too many .cold parts to analyse";
		return -EOPNOTSUPP;
	}
	for (i = 0; i < n; i++) {
		uint8_t *code = malloc(parts[i].len);

		if (!code) {
			ret = -ENOMEM;
			*why = "out of memory";
			goto out;
		}
		parts[i].code = code;
		if (ukp_read_original(parts[i].addr, code, parts[i].len) != parts[i].len) {
			ret = -EOPNOTSUPP;
			*why = "the function's code cannot be read";
			goto out;
		}
	}
	ck.nparts = n;
	ret = arch_scan_flow(parts, n, fo->code_lo, fo->code_hi, 0, check_flow, &ck);
	if (!ret && fo->eh_err && fo->eh_err != -ENOENT) {
		ck.why = "unreadable unwind tables (.eh_frame)";
		ret = -EOPNOTSUPP;
	}
	if (!ret && !fo->eh_err)
		ret = check_pads(fo, &ck);
	if (!ret)
		ret = check_taken_in_region(fo, &ck);
	if (!ret && ck.nptrs)
		ret = check_pointers(fo, &ck);
	/* after the function's own jumps, which say more precisely why */
	if (!ret && uncovered_jumps_into(fo, &ck)) {
		ck.why = "code outside any symbol (a stripped .cold part?) or in another function "
			 "jumps into the region";
		ret = -EBUSY;
	}
	if (ret == -ENOMEM) {
		ck.why = "out of memory";
	} else if (ret && !ck.why) {
		ck.why = "the function cannot be decoded";	/* no decoder */
		ret = -EOPNOTSUPP;
	}
	*why = ck.why;
out:
	for (i = 0; i < MAX_PARTS; i++)
		free((void *)parts[i].code);
	free(ck.targets);
	free(ck.tables);
	free(ck.spans);
	free(ck.taken);
	free(ck.ptrs);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * arch_branches.h - what the architecture code tells the core about the
 * control transfers in a piece of code (src/arch/<arch>/branches.c), for
 * the jump-optimization safety check (codeflow.c). Kept apart from arch.h
 * because only the flow analysis needs it.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_ARCH_BRANCHES_H
#define UKP_ARCH_BRANCHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Original code bytes of one contiguous piece of a function. */
struct arch_code_part {
	uintptr_t addr;         /* where the bytes are in the process */
	const uint8_t *code;    /* a copy of them (no breakpoints of ours) */
	size_t len;
};

enum arch_flow_kind {
	ARCH_FLOW_DIRECT,       /* relative jmp/jcc/loop/jrcxz/call/xbegin to target */
	ARCH_FLOW_TABLE,        /* an indirect jump through a jump table: one
				 * possible target (reported once per entry
				 * read: a table that several dispatches
				 * read, or that lies inside one read before,
				 * at the first read) */
	ARCH_FLOW_UNKNOWN,      /* an indirect jump whose targets are unknown */
	ARCH_FLOW_POINTER,      /* an indirect jump through a pointer loaded from
				 * memory (no index register, not from the
				 * stack): from the jump; target is the load:
				 * the jump itself for jmp *d(%reg) or after
				 * POINTER_PATH spans, else a mov before it
				 * whose value reaches the jump when nothing
				 * jumps into (target, from] */
	ARCH_FLOW_GLOBAL_POINTER, /* the same from rip-relative memory: a global
				 * variable or a GOT slot (tail calls of
				 * -fno-plt code) */
	ARCH_FLOW_POINTER_PATH, /* before a POINTER or GLOBAL_POINTER whose
				 * target is the jump itself: the pointer
				 * passes through the instructions in [from,
				 * target], which nothing outside the parts
				 * may enter */
	ARCH_FLOW_ADDRESS,      /* the code takes the address target, which is
				 * inside the parts (a rip-relative lea); from 0 */
	ARCH_FLOW_UNDECODABLE,  /* the bytes at from do not decode */
};

/*
 * Called for each finding; from is the address of the instruction, target
 * its destination (0 for UNKNOWN and UNDECODABLE). A non-zero return stops
 * the scan, which then returns that value.
 */
typedef int (*arch_flow_fn)(void *arg, enum arch_flow_kind kind, uintptr_t from,
			    uintptr_t target);

/* Flags of arch_scan_flow. */
#define ARCH_FLOW_DIRECT_ONLY 0x1u /* only DIRECT findings, decoding lengths and
				    * immediates alone (fast); undecodable
				    * bytes are stepped over one at a time */
#define ARCH_FLOW_FULL 0x2u /* x86: every instruction through the full
				  * decoder, as when a function needs it (tests
				  * compare both ways) */

/*
 * [reg] Decode every part from its first byte to its end and report the
 * control transfers in it. Indirect jumps (jmp *reg, jmp *mem, notrack
 * or not) are resolved as jump tables when the code has a recognisable
 * table dispatch, the table's location is known from the code of the
 * parts, and the entries read as targets inside the parts; the entries
 * are read (without faulting) for as long as their targets lie inside
 * one of the parts or, between code_lo and code_hi (the object's code;
 * both 0: the parts only), in other code (a case in a stripped cold
 * part, not reported), so the reported set may be larger than the real
 * one but not smaller. Indirect jumps through a pointer loaded without an
 * index register (not from the stack) are reported as POINTER, or
 * GLOBAL_POINTER from rip-relative memory (GOT tail calls), for the
 * caller to judge where such a pointer may lead: jmp *mem at once,
 * jmp *%reg after the tables, when a backward search over the parts'
 * instructions finds such a load on every path into the jump
 * (branches.c, pointer_paths); the rest are UNKNOWN. Indirect calls and
 * returns are not reported. After the parts, ADDRESS for every address inside
 * them that the code computes with a rip-relative lea, then the TABLE
 * entries.
 * Returns 0 after a full scan, the callback's non-zero value, or
 * -ENOMEM / -EILSEQ (no decoder).
 */
int arch_scan_flow(const struct arch_code_part *parts, size_t nparts, uintptr_t code_lo,
		   uintptr_t code_hi, unsigned int flags, arch_flow_fn fn, void *arg);

/*
 * A range of code whose direct transfers a literal scan reports too (see
 * struct arch_literal_scan): what arch_scan_flow(ARCH_FLOW_DIRECT_ONLY)
 * would find in it, from the same bytes.
 */
struct arch_flow_range {
	uintptr_t start, end;
	bool done;              /* set once every finding of the range is reported */
};

/* A DIRECT finding of ranges[range]: from the instruction, target its
 * destination. A non-zero return stops the scan. */
typedef int (*arch_range_fn)(void *arg, size_t range, uintptr_t from, uintptr_t target);
typedef int (*arch_literal_fn)(void *arg, uintptr_t value);

/* What arch_scan_literals decodes and reports. */
struct arch_literal_scan {
	const uint8_t *code;    /* len bytes, at addr in the process */
	size_t len;
	uintptr_t addr;
	const uintptr_t *sync;  /* sorted: instruction boundaries the object vouches for */
	size_t nsync;
	uintptr_t lo, hi;       /* the literals wanted: in [lo, hi) */
	arch_literal_fn fn;
	void *arg;
	/* optional, sorted by start: the ranges whose direct transfers to
	 * report while the code is decoded anyway. Those inside [addr, addr
	 * + len) and not done yet are scanned (and marked done), each with
	 * exactly arch_scan_flow's DIRECT_ONLY decoding of code's bytes
	 * (from the range's start, linear, to its end as the limit, one
	 * byte on at undecodable bytes), reusing the decodings of the
	 * literal scan where they coincide; the rest are left alone. */
	struct arch_flow_range *ranges;
	size_t nranges;
	arch_range_fn range_fn;
	void *range_arg;
	/* optional: a piece of the scan. Only the instructions that start
	 * in [from, to) are decoded (to 0: len; their bytes may go on past
	 * to, up to len), and only the ranges inside [from, to) scanned. A
	 * piece from an offset where the whole scan decodes an instruction
	 * (0, or a piece's *stopped) decodes there what the whole scan
	 * does. */
	size_t from, to;
	size_t *stopped;        /* (or NULL) the offset of the first instruction
				 * the piece did not decode: to or past it */
	/* optional: where the arch keeps the decodings it caches for the
	 * ranges, for the next piece of the same whole scan on the same
	 * thread (NULL at first; the caller free()s it after the last) */
	void **cache;
};

/*
 * [reg] The absolute addresses that the instructions of the code hold as
 * literals: 32-bit immediates (zero- and sign-extended), 64-bit
 * immediates, absolute displacements of memory operands (32- and 64-bit,
 * moffs included) and the effective address of every rip-relative
 * operand; relative branch targets are not reported (they are control
 * flow, arch_scan_flow, and the ranges above). fn(arg, value) is called
 * for each one in [lo, hi); a non-zero return (of it or range_fn) stops
 * the scan and is returned. Decoding is linear from code's first byte
 * and restarts at every address of sync (symbol and FDE starts) that it
 * would otherwise step over, and one byte on at undecodable bytes.
 * Returns 0, the callback's value, or -EILSEQ (no decoder).
 * Reads nothing but its arguments, writes nothing but the done flags of
 * the ranges it scans: pieces of one scan may run at the same time.
 */
int arch_scan_literals(const struct arch_literal_scan *scan);

/*
 * [reg] Are the len bytes at code alignment padding: a run of the fill
 * that assemblers and linkers put between functions (NOP instructions of
 * any length, int3, zero bytes)? avail >= len bytes are readable at
 * code: the last NOP may go on past len.
 */
bool arch_is_padding(const uint8_t *code, size_t avail, size_t len);

#endif /* UKP_ARCH_BRANCHES_H */

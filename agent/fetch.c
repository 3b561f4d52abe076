/* SPDX-License-Identifier: MIT */
/*
 * fetch.c - [hit] the values of an event's fetch arguments (the kernel's
 * process_fetch_insn, for struct ukp_fetcharg). Memory is read with
 * ukprobes_fetch_nofault() (a dereference chain in one call) and
 * copy_from_user_nofault(): a bad pointer marks the argument as faulted,
 * never crashes the program.
 *
 * Vector-free, as the handlers (handlers.c): no libc string functions
 * (they use vector registers), hand-written byte loops instead; the
 * empty asm in them keeps the compiler from turning a loop back into a
 * call of memset/memcpy.
 */
#include "agent.h"
#include "go_abi.h" /* $goid: the g register */

#define PAGE_SZ 4096UL

static void zero(unsigned char *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		d[i] = 0;
		__asm__ volatile("" ::: "memory");
	}
}

static bool has_nul(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!s[i])
			return true;
	return false;
}

static bool read_word(uintptr_t addr, unsigned long *v, unsigned int size)
{
	unsigned long w = 0;

	if (copy_from_user_nofault(&w, (const void *)addr, size))
		return false;
	*v = w; /* little-endian: the low size bytes */
	return true;
}

/*
 * The string at addr into dst (max bytes). A string that does not end
 * within max bytes fills dst without a NUL (the reader shows it as cut).
 * Reads page by page, so that a string that ends just before an
 * unreadable page is still read. False if nothing could be read.
 */
static bool read_string(char *dst, uintptr_t addr, size_t max)
{
	size_t n = 0;

	while (n < max) {
		size_t chunk = PAGE_SZ - ((addr + n) & (PAGE_SZ - 1));

		if (chunk > max - n)
			chunk = max - n;
		if (copy_from_user_nofault(dst + n, (const void *)(addr + n), chunk)) {
			if (!n)
				return false;
			dst[n] = '\0'; /* n < max here */
			return true;
		}
		if (has_nul(dst + n, chunk))
			return true;
		n += chunk;
	}
	return true;
}

/* The kernel's FETCH_OP_MOD_BF: the field's bits of the container,
 * shifted down. */
static unsigned long bitfield(const struct ukp_fetcharg *fa, unsigned long v)
{
	unsigned int bits = fa->size * 8;

	v <<= 64 - bits + (bits - fa->bf_width - fa->bf_offset);
	return v >> (64 - fa->bf_width);
}

static void fetch(const struct ukp_spec *spec, const struct pt_regs *regs,
		  const struct pt_regs *entry, unsigned char *data, uint32_t *faults,
		  const char *comm, uint32_t mask)
{
	int i;

	for (i = 0; i < spec->nargs; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (spec->args[i].plain_reg) {
			const struct ukp_fetcharg *fa = &spec->args[i];
			unsigned long v = ((const unsigned long *)regs)[fa->param];

			if (fa->size < 8)
				v &= (1UL << (fa->size * 8)) - 1;
			*(unsigned long *)(void *)(data + fa->off) = v;
			continue;
		}
		const struct ukp_fetcharg *fa = &spec->args[i];
		unsigned char *slot = data + fa->off;
		unsigned long v = 0;
		bool ok = true;
		int d;

		switch (fa->base) {
		case UKP_FA_REG:
			v = ((const unsigned long *)regs)[fa->param];
			break;
		case UKP_FA_ARG:
			/* the architecture's calling convention, as the
			 * kernel's FETCH_OP_ARG: an unreadable stack
			 * argument reads as 0 there too */
			v = regs_get_kernel_argument(entry, fa->param - 1);
			break;
		case UKP_FA_ENTRY_REG:
			v = ((const unsigned long *)entry)[fa->param];
			break;
		case UKP_FA_STACK:
			ok = read_word(user_stack_pointer(regs) + 8 * fa->param, &v, 8);
			break;
		case UKP_FA_STACKP:
			v = user_stack_pointer(regs);
			break;
		case UKP_FA_RETVAL:
			v = regs_return_value(regs);
			break;
		case UKP_FA_IMM:
		case UKP_FA_SYM: /* resolved to an address at registration */
			v = fa->param;
			break;
		case UKP_FA_DURATION:
			/* only on return probes (the parser says so): entry is
			 * the instance's struct ukpa_entry */
			v = ukpa_clock_span_ns(ukpa_clock_now() -
					       ((const struct ukpa_entry *)(const void *)entry)->clock);
			break;
		case UKP_FA_GOID:
			/* (a probe in Go code only: probes.c's goid_check) */
			ok = read_word(ukpa_go_g(regs) + fa->param, &v, 8);
			break;
		case UKP_FA_UNAVAIL:
		case UKP_FA_VAR: /* (resolved by the CLI: never sent) */
			ok = false;
			break;
		case UKP_FA_COMM:
			zero(slot, UKP_SPEC_STR_SLOT);
			for (d = 0; d < UKP_COMM_LEN - 1; d++)
				slot[d] = (unsigned char)comm[d];
			continue;
		}

		/* an indexed address: base + index * scale, then the
		 * displacement as the first dereference's offset */
		if (fa->index_scale)
			v += ((const unsigned long *)regs)[fa->index_reg] * fa->index_scale;
		/* the chain in one call of the library (one fault window for
		 * all its loads); a string's last step reads page by page */
		if (ok && fa->nderef && fa->type == UKP_TY_STRING) {
			if (fa->nderef > 1)
				ok = !ukprobes_fetch_nofault(&v, fa->deref, (unsigned int)fa->nderef - 1, 8);
			if (ok)
				ok = read_string((char *)slot, v + (unsigned long)fa->deref[fa->nderef - 1],
						 UKP_SPEC_STR_SLOT);
		} else if (ok && fa->nderef) {
			ok = !ukprobes_fetch_nofault(&v, fa->deref, (unsigned int)fa->nderef, fa->size);
		}
		if (!ok) {
			*faults |= 1u << i;
			zero(slot, fa->type == UKP_TY_STRING ? UKP_SPEC_STR_SLOT : 8);
			continue;
		}
		if (fa->type != UKP_TY_STRING) {
			v += (unsigned long)fa->add;
			if (fa->size < 8) {
				v &= (1UL << (fa->size * 8)) - 1;
				/* an SDT argument's sign, from its note
				 * (usdt.c) */
				if (fa->sext && (v >> (fa->size * 8 - 1)))
					v |= ~0UL << (fa->size * 8);
			}
			if (fa->bf_width)
				v = bitfield(fa, v);
			*(unsigned long *)(void *)slot = v; /* slots are 8-aligned */
		}
	}
}

void ukpa_fetch_into(const struct ukp_spec *spec, const struct pt_regs *regs,
		     const struct pt_regs *entry, unsigned char *data, uint32_t *faults,
		     const char *comm)
{
	fetch(spec, regs, entry, data, faults, comm, ~0u);
}

void ukpa_fetch_some(const struct ukp_spec *spec, const struct pt_regs *regs,
		     const struct pt_regs *entry, struct ukp_rec *rec, uint32_t mask)
{
	fetch(spec, regs, entry, rec->data, &rec->faults, rec->comm, mask);
}

/* SPDX-License-Identifier: MIT */
/*
 * cfi.h - the library's one reader of DWARF call frame information (the
 * .eh_frame and .eh_frame_hdr of loaded objects): byte cursors over the
 * program's memory, encoded pointers, CIEs, FDEs and the interpreter of
 * their call frame instructions, which gives the row at an address (the
 * CFA, the return address column and the frame pointer's column).
 *
 * Its users: eh_frame.c (FDE ranges, landing pads, the return address
 * rule at a function's entry, [reg]) and stacktrace.c (the stack of a
 * hit, [hit]).
 *
 * Context: [any]. Nothing here allocates or takes a lock; memory is read
 * with arch_copy_nofault through a window whose buffer the caller gives
 * (4 KiB on the heap at registration, a small one on the stack in a hit),
 * so a corrupt table or an object unloaded under us gives an error,
 * never a fault. Built without jump tables (src/meson.build): a hit's
 * handler that calls stack_trace_save_regs() stays provably vector-free.
 */
#ifndef UKP_CFI_H
#define UKP_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* A window onto [lo, hi) of the program's memory, read a chunk at a
 * time into buf (size: a power of two that divides the page size, so
 * that a chunk is all readable or all gone). */
struct ukp_cfi_mem {
	uintptr_t lo, hi;
	uintptr_t chunk;        /* address of buf's bytes (size aligned) */
	bool valid;
	unsigned int size;
	uint8_t *buf;
};

/* A read position; any failed read sets bad and every later read fails. */
struct ukp_cfi_cur {
	struct ukp_cfi_mem *m;
	uintptr_t pos;
	uintptr_t end;          /* end of the structure being read */
	bool bad;
	bool abs;               /* an absolute pointer was read (ukp_cfi_encoded):
				 * its offset from the load bias depends on it */
};

void ukp_cfi_mem_init(struct ukp_cfi_mem *m, uint8_t *buf, unsigned int size, uintptr_t lo,
		      uintptr_t hi);
void ukp_cfi_cur_init(struct ukp_cfi_cur *c, struct ukp_cfi_mem *m, uintptr_t pos, uintptr_t end);
uint8_t ukp_cfi_u8_slow(struct ukp_cfi_cur *c);

/* The next byte: from the window's chunk when it holds it (the common
 * case: a hit walks CIEs and FDEs a byte at a time), else read. pos is
 * at or above the window's start (ukp_cfi_cur_init) and end within it. */
static inline uint8_t ukp_cfi_u8(struct ukp_cfi_cur *c)
{
	struct ukp_cfi_mem *m = c->m;

	if (__builtin_expect(!c->bad && c->pos < c->end && m->valid &&
			     c->pos - m->chunk < m->size, 1))
		return m->buf[c->pos++ - m->chunk];
	return ukp_cfi_u8_slow(c);
}
/* Little-endian unsigned of n bytes. */
uint64_t ukp_cfi_uint(struct ukp_cfi_cur *c, unsigned int n);
uint64_t ukp_cfi_uleb(struct ukp_cfi_cur *c);
int64_t ukp_cfi_sleb(struct ukp_cfi_cur *c);
/* The value part of an encoded pointer (enc's low nibble). */
uint64_t ukp_cfi_value(struct ukp_cfi_cur *c, uint8_t enc);
/*
 * An encoded pointer. datarel is the base of DW_EH_PE_datarel (the start
 * of .eh_frame_hdr), 0 where that application is meaningless. As in
 * libgcc, a raw value of 0 stays 0 ("none") whatever the application.
 * Indirect pointers are refused (they appear only for personality
 * routines, which CIEs skip).
 */
uintptr_t ukp_cfi_encoded(struct ukp_cfi_cur *c, uint8_t enc, uintptr_t datarel);

struct ukp_cfi_cie {
	uintptr_t addr;
	uint8_t fde_enc;        /* 'R', absptr by default */
	uint8_t lsda_enc;       /* 'L', omit by default */
	bool aug_z;             /* FDEs carry an augmentation data length */
	uint64_t code_align;    /* DW_CFA_advance_loc factor */
	int64_t data_align;     /* DW_CFA_offset factor */
	uint64_t ra_reg;        /* the return address column */
	uintptr_t insns, insns_end; /* initial instructions */
};

/* The CIE at addr (read through m). Returns 0 or -EILSEQ. */
int ukp_cfi_parse_cie(struct ukp_cfi_mem *m, uintptr_t addr, struct ukp_cfi_cie *cie);

/* The FDE at addr, first part: its end and the address of its CIE;
 * c is left at its body (ukp_cfi_fde_body). Returns 0 or -EILSEQ (also
 * for the terminator, or a CIE). */
int ukp_cfi_fde_head(struct ukp_cfi_cur *c, struct ukp_cfi_mem *m, uintptr_t addr,
		     uintptr_t *cie_addr);

/* The code range and LSDA of one FDE, and its instructions. */
struct ukp_cfi_fde {
	uintptr_t start;        /* pc_begin; 0 for an FDE of discarded code */
	uintptr_t end;          /* pc_begin + pc_range */
	uintptr_t lsda;         /* its LSDA (.gcc_except_table), 0 when none */
	uintptr_t insns, insns_end;
};

/* The FDE's body after ukp_cfi_fde_head, with its CIE. 0 or -EILSEQ. */
int ukp_cfi_fde_body(struct ukp_cfi_cur *c, const struct ukp_cfi_cie *cie, struct ukp_cfi_fde *f);

/* How a register of the caller's frame is found. */
enum ukp_cfi_rule {
	UKP_CFI_AT_CFA,         /* saved at CFA + off */
	UKP_CFI_UNDEFINED,      /* none: the outermost frame (_start) */
	UKP_CFI_SAME,           /* not described */
	UKP_CFI_OTHER,          /* in a register, or an expression */
};

/* The row at one address: the CFA, the return address column and the
 * frame pointer's. */
struct ukp_cfi_row {
	uint64_t cfa_reg;       /* DWARF register number */
	int64_t cfa_off;
	bool cfa_expr;          /* the CFA is an expression (cfa_reg/off unused) */
	enum ukp_cfi_rule rule; /* the return address */
	int64_t ra_off;         /* UKP_CFI_AT_CFA: the offset from the CFA */
	enum ukp_cfi_rule fp_rule;
	int64_t fp_off;
};

/*
 * The row at addr of the FDE f (with its CIE, both read through m and
 * fm): the CIE's instructions, then the FDE's up to addr. fp_reg is the
 * arch's DWARF number of the frame pointer. Returns 0 (*row filled), or
 * -EILSEQ (malformed, or an opcode not known).
 */
int ukp_cfi_row_at(struct ukp_cfi_mem *cm, const struct ukp_cfi_cie *cie, struct ukp_cfi_mem *fm,
		   const struct ukp_cfi_fde *f, uintptr_t addr, uint64_t fp_reg,
		   struct ukp_cfi_row *row);

#endif /* UKP_CFI_H */

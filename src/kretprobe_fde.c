// SPDX-License-Identifier: MIT
/*
 * kretprobe_fde.c - the unwinder's frame information for the return
 * trampoline's address (kretprobe_unwind.c): one CIE and one FDE in
 * .eh_frame format for a zero-size frame at the byte before the
 * trampoline, CFA = sp. Where the return address is, per arch
 * (arch_kretprobe.h): at CFA - 8 when it stays in memory at its slot
 * (x86-64: the unwinder interposer has put the real one back there);
 * else its column gets no rule, so that an unwinder takes the register
 * from where the frame it just left saved it (AArch64: the saved x30
 * the interposer has put the real return address back into).
 *
 * Built once at load time, with absolute addresses (no relocation); a
 * reader sees it complete through the release store of pseudo_fde.
 */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "kretprobes.h"

#define DW_EH_PE_absptr 0x00
#define DW_CFA_def_cfa  0x0c
#define DW_CFA_offset   0x80
#define DW_CFA_nop      0x00

static _Alignas(8) unsigned char eh_buf[64];
static const void *_Atomic pseudo_fde;
static uintptr_t pseudo_func;

static size_t put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return 8;
}

static void build_pseudo_fde(void)
{
	unsigned char *p = eh_buf, *cie = eh_buf, *fde;
	size_t n = 4;

	/* CIE: "zR", data alignment -8, pointers absolute */
	n += put_u32(p + n, 0);         /* CIE id */
	p[n++] = 1;                     /* version */
	p[n++] = 'z';
	p[n++] = 'R';
	p[n++] = 0;
	p[n++] = UKP_DWARF_CODE_ALIGN;  /* uleb128 */
	p[n++] = 0x78;                  /* data alignment -8 (sleb128) */
	p[n++] = UKP_DWARF_RA_COLUMN;
	p[n++] = 1;                     /* augmentation data length */
	p[n++] = DW_EH_PE_absptr;
	p[n++] = DW_CFA_def_cfa;
	p[n++] = UKP_DWARF_SP;
	p[n++] = 0;
	if (UKP_KRP_RET_IN_SLOT) {
		p[n++] = DW_CFA_offset | UKP_DWARF_RA_COLUMN;
		p[n++] = 1;             /* factored: 1 * -8 */
	}
	while (n % 8)
		p[n++] = DW_CFA_nop;
	put_u32(p, (uint32_t)(n - 4));

	fde = p + n;
	pseudo_func = (uintptr_t)ukp_kretprobe_trampoline - 1;
	n = 4;
	n += put_u32(fde + n, (uint32_t)((fde + 4) - cie)); /* CIE pointer */
	n += put_u64(fde + n, pseudo_func);                  /* pc begin */
	n += put_u64(fde + n, 2);                            /* pc range */
	fde[n++] = 0;                                        /* augmentation length */
	while (n % 8)
		fde[n++] = DW_CFA_nop;
	put_u32(fde, (uint32_t)(n - 4));
	put_u32(fde + n, 0); /* terminator */
	atomic_store_explicit(&pseudo_fde, fde, memory_order_release);
}

/* [any] (kretprobes.h) */
const void *ukp_krp_pseudo_fde(uintptr_t *func)
{
	const void *f = atomic_load_explicit(&pseudo_fde, memory_order_acquire);

	if (f)
		*func = pseudo_func;
	return f;
}

/* Built at load time: the unwinder may ask before any registration. */
__attribute__((constructor)) static void kretprobe_fde_ctor(void)
{
	build_pseudo_fde();
}

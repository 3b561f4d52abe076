// SPDX-License-Identifier: MIT
/*
 * gopclntab.c - a Go executable's own function table (gopclntab.h).
 *
 * The layout (Go 1.18 and later; 1.20 changed the magic, not these
 * fields), all in the byte order of the target, words of ptrSize bytes:
 *
 *   header   magic u32, two zero bytes, minLC (the pc quantum) u8,
 *            ptrSize u8, then words: nfunc, nfiles, textStart, and the
 *            offsets from the header of funcnametab, cutab, filetab,
 *            pctab and the function table (pclntab proper).
 *   functab  nfunc + 1 pairs of u32: a function's entry as an offset
 *            from textStart and the offset of its _func record from the
 *            function table; the last pair's entry is the end of the
 *            last function.
 *   _func    entryoff u32, nameoff i32 (into funcnametab, NUL-ended),
 *            args i32, deferreturn u32, pcsp u32 (into pctab), ...
 *   pcsp     a pc-value table: pairs of varints (a zig-zag value delta,
 *            a pc delta in quanta) from the entry; a zero value delta
 *            other than the first ends it, at the function's end.
 *
 * Context: [reg], no allocation (the file's bytes are read in place).
 */
#include <errno.h>
#include <string.h>

#include "symbols/gopclntab.h"

#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u
#define NT_GO_BUILDID 4
#define GO_HDR_SIZE (8 + 8 * 8)
/* textStart's offset in the header (magic, pads, minLC, ptrSize, nfunc,
 * nfiles) */
#define GO_TEXTSTART_OFF 24
/* no Go program has this many functions: a bound for a damaged count */
#define GO_MAX_FUNCS (1u << 24)

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Does one of elf's note segments (or note sections) hold Go's build
 * id? Only a Go object is searched for the table's magic. */
static bool go_built(const struct ukp_elf *elf)
{
	for (size_t i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr *ph = ukp_elf_phdr(elf, i);
		const void *data, *desc;
		const char *name;
		Elf64_Nhdr nh;
		size_t off = 0;

		if (ph->p_type != PT_NOTE ||
		    !(data = ukp_elf_chunk(elf, ph->p_offset, ph->p_filesz)))
			continue;
		while (ukp_elf_next_note(data, ph->p_filesz, ph->p_align, &off, &nh, &name, &desc))
			/* (its owner "Go", padded by Go's linker: "Go\0\0") */
			if (nh.n_type == NT_GO_BUILDID && (nh.n_namesz == 3 || nh.n_namesz == 4) &&
			    !memcmp(name, "Go", 3))
				return true;
	}
	return false;
}

/* The link-time word at vaddr of an ET_DYN file whose linker left it 0
 * for the dynamic linker to fill: the addend of its RELA entry, or 0. */
static uint64_t rela_word(const struct ukp_elf *elf, uint64_t vaddr)
{
	const Elf64_Shdr *scn = NULL;

	while ((scn = ukp_elf_next_of_type(elf, scn, SHT_RELA))) {
		const uint8_t *data;
		size_t size;

		if (!(data = ukp_elf_data(elf, scn, &size)))
			continue;
		for (size_t off = 0; size - off >= sizeof(Elf64_Rela); off += sizeof(Elf64_Rela)) {
			Elf64_Rela r;

			memcpy(&r, data + off, sizeof(r));
			if (r.r_offset == vaddr)
				return (uint64_t)r.r_addend;
		}
	}
	return 0;
}

/* Is [a, b) inside one loaded segment with code? */
static bool in_code(const struct ukp_elf *elf, uint64_t a, uint64_t b)
{
	for (size_t i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr *ph = ukp_elf_phdr(elf, i);

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && a >= ph->p_vaddr && a <= b &&
		    b <= ph->p_vaddr + ph->p_memsz)
			return true;
	}
	return false;
}

/*
 * Is the header at hdr (size bytes to the end of its data, at link-time
 * address vaddr) a whole, consistent table? Fills *p.
 */
static bool check_table(const struct ukp_elf *elf, const uint8_t *hdr, size_t size,
			uint64_t vaddr, struct ukp_gopcln *p)
{
	uint32_t magic, prev = 0;
	uint64_t nfunc, tab;

	if (size < GO_HDR_SIZE)
		return false;
	magic = rd32(hdr);
	if ((magic != GO_MAGIC_118 && magic != GO_MAGIC_120) || hdr[4] || hdr[5] ||
	    (hdr[6] != 1 && hdr[6] != 2 && hdr[6] != 4) || hdr[7] != 8)
		return false;
	memset(p, 0, sizeof(*p));
	nfunc = rd64(hdr + 8);
	p->text = rd64(hdr + GO_TEXTSTART_OFF);
	if (!p->text && elf->ehdr->e_type == ET_DYN)
		p->text = rela_word(elf, vaddr + GO_TEXTSTART_OFF);
	p->funcname = rd64(hdr + 32);
	p->pctab = rd64(hdr + 56);
	p->pcln = rd64(hdr + 64);
	if (!nfunc || nfunc > GO_MAX_FUNCS || p->funcname >= size || p->pctab >= size ||
	    p->pcln >= size || (size - p->pcln) / 8 < nfunc + 1)
		return false;
	tab = p->pcln;
	for (uint64_t i = 0; i <= nfunc; i++) {
		uint32_t entry = rd32(hdr + tab + 8 * i), func = rd32(hdr + tab + 8 * i + 4);

		if (entry < prev || (i < nfunc && func >= size - tab))
			return false;
		prev = entry;
	}
	p->hdr = hdr;
	p->size = size;
	p->nfunc = (size_t)nfunc;
	p->etext = p->text + prev;
	p->quantum = hdr[6];
	return p->text && in_code(elf, p->text, p->etext);
}

/* The header found by its magic in the loaded segments without code. */
static int scan_segments(const struct ukp_elf *elf, struct ukp_gopcln *p)
{
	for (size_t i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr *ph = ukp_elf_phdr(elf, i);
		const uint8_t *data;
		uint64_t off;

		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) ||
		    !(data = ukp_elf_chunk(elf, ph->p_offset, ph->p_filesz)))
			continue;
		/* (the header is word-aligned in memory: vaddr % 8 == 0) */
		for (off = (8 - ph->p_vaddr % 8) % 8; off + GO_HDR_SIZE <= ph->p_filesz; off += 8) {
			uint32_t m = rd32(data + off);

			if ((m == GO_MAGIC_118 || m == GO_MAGIC_120) &&
			    check_table(elf, data + off, ph->p_filesz - off, ph->p_vaddr + off, p))
				return 0;
		}
	}
	return -ENOENT;
}

int ukp_gopclntab_find(const struct ukp_elf *elf, struct ukp_gopcln *p)
{
	const Elf64_Shdr *sh = ukp_elf_section_named(elf, ".gopclntab");
	const uint8_t *data;
	size_t size;

	if (sh && (data = ukp_elf_data(elf, sh, &size)))
		return check_table(elf, data, size, sh->sh_addr, p) ? 0 : -ENOENT;
	if (!go_built(elf))
		return -ENOENT;
	return scan_segments(elf, p);
}

/* A varint of the pc-value tables at *pos of [t, t + n): false past
 * the end. */
static bool uvarint(const uint8_t *t, size_t n, size_t *pos, uint32_t *v)
{
	uint32_t r = 0;

	for (unsigned int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*pos >= n)
			return false;
		b = t[(*pos)++];
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/* The end of the code the pc-value table at off of pctab covers, from
 * entry; 0 when it cannot be read. */
static uint64_t pcsp_end(const struct ukp_gopcln *p, uint32_t off, uint64_t entry)
{
	const uint8_t *t = p->hdr + p->pctab;
	size_t n = p->size - p->pctab, pos = off;
	uint64_t pc = entry;
	bool first = true;

	for (;;) {
		uint32_t vdelta, pcdelta;

		if (!uvarint(t, n, &pos, &vdelta))
			return 0;
		if (!vdelta && !first)
			return pc;
		if (!uvarint(t, n, &pos, &pcdelta))
			return 0;
		pc += (uint64_t)pcdelta * p->quantum;
		first = false;
	}
}

bool ukp_gopclntab_func(const struct ukp_gopcln *p, size_t i, uint64_t *entry, uint64_t *size,
			const char **name)
{
	const uint8_t *ft = p->hdr + p->pcln + 8 * i, *fn;
	uint32_t eoff = rd32(ft), next = rd32(ft + 8), func = rd32(ft + 4);
	uint64_t end, nameoff, names = p->size - p->funcname;
	const char *s;

	if (i >= p->nfunc || p->size - p->pcln - func < 20)
		return false;
	fn = p->hdr + p->pcln + func;
	if (rd32(fn) != eoff)
		return false;
	nameoff = (uint64_t)(int64_t)(int32_t)rd32(fn + 4);
	if (nameoff >= names)
		return false;
	s = (const char *)p->hdr + p->funcname + nameoff;
	if (!*s || !memchr(s, 0, names - nameoff))
		return false;
	*entry = p->text + eoff;
	*name = s;
	/* (the code ends before the next function's padding: its
	 * stack-pointer table says where) */
	end = rd32(fn + 16) ? pcsp_end(p, rd32(fn + 16), *entry) : 0;
	if (end <= *entry || end > p->text + next)
		end = p->text + next;
	*size = end - *entry;
	return true;
}

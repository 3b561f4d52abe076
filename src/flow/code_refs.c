// SPDX-License-Identifier: MIT
/*
 * code_refs.c - the code addresses an object's dynamic relocations store
 * (see code_refs.h).
 *
 * Formats (System V gABI, x86-64 psABI): SHT_RELA entries (offset, info =
 * symbol << 32 | type, addend) in the allocated .rela.dyn and .rela.plt
 * sections; SHT_RELR (.relr.dyn, binutils -z pack-relative-relocs): a
 * word with bit 0 clear is the address of a relative relocation, a word
 * with bit 0 set is a bitmap (bits 1..63) of the 63 words after the last
 * address; a relative relocation's addend is the word stored at its
 * address in the file.
 *
 * [reg] everything here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch_branches.h"
#include "flow/code_refs.h"
#include "base/grow_array.h"
#include "base/base.h"
#include "text/text.h"
#include "flow/scan_share.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */
#include "base/sys.h"
#include "symbols/elf_read.h"

#ifndef SHT_RELR
#define SHT_RELR 19
#endif
#ifndef R_X86_64_RELATIVE64
#define R_X86_64_RELATIVE64 38
#endif

struct refs {
	const struct ukp_object *obj;
	const struct ukp_eh_seg *segs;
	size_t nsegs;
	uintptr_t *v;
	size_t n, cap;
	struct ukp_elf elf; /* the library's reader (elf_read.h) */
};

static int add_ref(void *arg, uintptr_t a)
{
	struct refs *r = arg;
	uintptr_t *v;
	size_t i;

	for (i = 0; i < r->nsegs; i++)
		if (r->segs[i].exec && a >= r->segs[i].start && a < r->segs[i].end)
			break;
	if (i == r->nsegs)
		return 0;
	v = ukp_grow(r->v, &r->cap, r->n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->v = v;
	r->v[r->n++] = a;
	return 0;
}

/* The PT_LOAD layout of the file must be the one in memory (the file was
 * not replaced since it was loaded). */
static bool matches_image(struct refs *r)
{
	size_t i, j, nload = 0;

	for (i = 0; i < r->elf.phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(&r->elf, i);
		bool found = false;

		if (ph.p_type != PT_LOAD)
			continue;
		nload++;
		for (j = 0; j < r->nsegs; j++)
			found |= r->segs[j].start == r->obj->base + ph.p_vaddr &&
				 r->segs[j].end == r->obj->base + ph.p_vaddr + ph.p_memsz;
		if (!found)
			return false;
	}
	return nload == r->nsegs;
}

/* The 8 bytes at virtual address va in the file's allocated sections. */
static bool file_word(struct refs *r, uint64_t va, uint64_t *w)
{
	for (size_t i = 1; i < r->elf.shnum; i++) {
		const Elf64_Shdr *scn = ukp_elf_shdr(&r->elf, i), sh = *scn;
		const char *d;
		size_t size;

		if (!(sh.sh_flags & SHF_ALLOC) || va < sh.sh_addr || va - sh.sh_addr >= sh.sh_size)
			continue;
		if (sh.sh_type == SHT_NOBITS) {
			*w = 0;
			return true;
		}
		d = ukp_elf_data(&r->elf, scn, &size);
		if (!d || va - sh.sh_addr + 8 > size)
			return false;
		memcpy(w, d + (va - sh.sh_addr), 8);
		return true;
	}
	return false;
}

/* [reg] One SHT_RELA section. */
static int rela_section(struct refs *r, const Elf64_Shdr *sh)
{
	const Elf64_Shdr *symscn = sh->sh_link ? ukp_elf_shdr(&r->elf, sh->sh_link) : NULL;
	size_t i, cnt, size = 0, symsize = 0;
	const uint8_t *d = ukp_elf_data(&r->elf, sh, &size), *symd = NULL;
	int ret;

	if (!d)
		return -ENOENT;
	if (symscn)
		symd = ukp_elf_data(&r->elf, symscn, &symsize);
	cnt = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (i = 0; i < cnt; i++) {
		Elf64_Rela rel;
		Elf64_Sym sym;
		size_t si;
		uintptr_t v;

		if ((i + 1) * sizeof(rel) > size)
			return -ENOENT;
		memcpy(&rel, d + i * sizeof(rel), sizeof(rel));
		switch (ELF64_R_TYPE(rel.r_info)) {
		case R_X86_64_RELATIVE:
		case R_X86_64_RELATIVE64:
		case R_X86_64_IRELATIVE:
			v = r->obj->base + (uintptr_t)rel.r_addend;
			break;
		case R_X86_64_64:
		case R_X86_64_32:
		case R_X86_64_32S:
		case R_X86_64_GLOB_DAT:
		case R_X86_64_JUMP_SLOT:
			si = ELF64_R_SYM(rel.r_info);
			if (symd && (si + 1) * sizeof(sym) <= symsize &&
			    memcpy(&sym, symd + si * sizeof(sym), sizeof(sym)) &&
			    sym.st_shndx != SHN_UNDEF) {
				v = r->obj->base + (uintptr_t)sym.st_value + (uintptr_t)rel.r_addend;
			} else if (arch_copy_nofault(&v, (const void *)(r->obj->base + rel.r_offset),
						     sizeof(v))) {
				continue;	/* not mapped: nothing was stored */
			}
			break;
		default:
			continue;
		}
		ret = add_ref(r, v);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] One SHT_RELR section. */
static int relr_section(struct refs *r, const Elf64_Shdr *sh)
{
	const uint8_t *d;
	uint64_t where = 0, addend, w[1];
	size_t i, cnt, size;
	int ret;

	if (!(d = ukp_elf_data(&r->elf, sh, &size)))
		return -ENOENT;
	cnt = size / 8;
	for (i = 0; i < cnt; i++) {
		memcpy(&w[0], d + i * 8, 8);
		if (!(w[0] & 1)) {
			where = w[0];
			if (!file_word(r, where, &addend))
				return -ENOENT;
			ret = add_ref(r, r->obj->base + (uintptr_t)addend);
			if (ret)
				return ret;
			where += 8;
			continue;
		}
		for (unsigned int b = 1; b < 64; b++) {
			uint64_t at = where + (uint64_t)(b - 1) * 8;

			if (!((w[0] >> b) & 1))
				continue;
			if (!file_word(r, at, &addend))
				return -ENOENT;
			ret = add_ref(r, r->obj->base + (uintptr_t)addend);
			if (ret)
				return ret;
		}
		where += 63 * 8;
	}
	return 0;
}

#ifndef DT_RELRSZ
#define DT_RELRSZ 35
#endif

/*
 * [reg] The bytes of relocations the dynamic section announces (DT_RELASZ
 * + DT_PLTRELSZ + DT_RELRSZ), or -1 when it announces REL relocations
 * or cannot be read. The sections read must add up to it: a file whose
 * section headers were stripped, or that hides relocations elsewhere,
 * must not pass for one without relocations.
 */
static long long announced_bytes(const struct ukp_elf *elf)
{
	long long total = 0;

	for (size_t i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(elf, i);
		const uint8_t *d;
		Elf64_Dyn dyn;

		if (ph.p_type != PT_DYNAMIC)
			continue;
		d = ukp_elf_chunk(elf, ph.p_offset, ph.p_filesz);
		if (!d)
			return -1;
		for (size_t k = 0; (k + 1) * sizeof(dyn) <= ph.p_filesz &&
				   memcpy(&dyn, d + k * sizeof(dyn), sizeof(dyn)) && dyn.d_tag != DT_NULL;
		     k++) {
			switch (dyn.d_tag) {
			case DT_RELASZ:
			case DT_PLTRELSZ:
			case DT_RELRSZ:
				total += (long long)dyn.d_un.d_val;
				break;
			case DT_REL:
			case DT_RELSZ:
				return -1;
			case DT_PLTREL:
				if (dyn.d_un.d_val != DT_RELA)
					return -1;
				break;
			}
		}
	}
	return total;
}

/*
 * [reg] A non-PIE executable (ET_EXEC) needs no relocation to hold the
 * address of its code: every code address in its image is a literal.
 * Collect every one of them, from the file (which no probe has touched):
 * in its executable sections, the literals of the decoded instructions
 * (arch_scan_literals: immediates, absolute displacements, rip-relative
 * operands; decoding restarts at every symbol and FDE start); in every
 * other byte that a PT_LOAD segment maps from the file (data, read-only
 * data, tables, and any part of a segment no section describes), the
 * 8-byte word at every 4-byte aligned address. Without section headers,
 * executable segments are both decoded and read as data.
 * Why that is enough: C stores a code address in a pointer, 8 bytes,
 * which the psABI aligns to 8 (a packed structure after an int: 4); GCC
 * and clang emit non-PIC switch and &&label tables as 8-byte words. A
 * 4-byte word holding a code address needs a truncating cast or
 * hand-written data (.long label); it is read back by a 32-bit load,
 * which the pointer rule never takes for a pointer (codeflow.c), and a
 * dispatch through it elsewhere is hand-written code jumping into
 * another function, which the check trusts not to happen as it does for
 * direct jumps. Reading 4-byte words too would refuse regions for every
 * string ending in "?IO" (0x004f49xx) and the like. A false candidate
 * can only refuse a region, never accept one.
 */
#define MAX_EXEC_SECTIONS 64

struct range {
	uintptr_t start, end;
};

static int range_cmp(const void *pa, const void *pb)
{
	const struct range *a = pa, *b = pb;

	return (a->start > b->start) - (a->start < b->start);
}

/*
 * [reg] The literals of the code at va (len bytes of the file at code),
 * and the direct transfers of flow's ranges inside it. Those are read
 * from the process's original bytes (ukp_read_original) when scanned
 * alone: the file's stand for them only where the two are the same.
 */
static int scan_code(struct refs *r, const uint8_t *code, size_t len, uintptr_t va,
		     const uintptr_t *sync, size_t nsync, uintptr_t lo, uintptr_t hi,
		     struct ukp_code_refs_flow *flow)
{
	struct arch_literal_scan sc = {
		.code = code, .len = len, .addr = va, .sync = sync, .nsync = nsync,
		.lo = lo, .hi = hi, .fn = add_ref, .arg = r,
	};
	size_t chunk = 65536, off = 0;
	uint8_t *mem = NULL;

	if (flow && flow->n)
		mem = malloc(chunk);
	/* a piece at a time: the code can be megabytes */
	for (; mem && off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		if (ukp_read_original(va + off, mem, n) != n || memcmp(mem, code + off, n))
			break;
	}
	if (mem && off >= len) {
		sc.ranges = flow->ranges;
		sc.nranges = flow->n;
		sc.range_fn = flow->fn;
		sc.range_arg = flow->arg;
	}
	free(mem);
	return ukp_scan_literals(&sc);
}

static int literal_refs(struct refs *r, const uintptr_t *sync, size_t nsync,
			struct ukp_code_refs_flow *flow)
{
	struct range code[MAX_EXEC_SECTIONS];
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t i, ncode = 0, phnum = r->elf.phnum, fsize = r->elf.size;
	const uint8_t *file = r->elf.base;
	int ret = 0;

	for (i = 0; i < r->nsegs; i++) {
		if (!r->segs[i].exec)
			continue;
		lo = r->segs[i].start < lo ? r->segs[i].start : lo;
		hi = r->segs[i].end > hi ? r->segs[i].end : hi;
	}
	if (lo >= hi)
		return 0;
	/* the code: decoded */
	for (size_t idx = 1; !ret && idx < r->elf.shnum; idx++) {
		const Elf64_Shdr sh = *ukp_elf_shdr(&r->elf, idx);

		if (!(sh.sh_flags & SHF_ALLOC) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		if (ncode == MAX_EXEC_SECTIONS || sh.sh_offset > fsize ||
		    sh.sh_size > fsize - sh.sh_offset)
			return -ENOENT;
		code[ncode].start = r->obj->base + (uintptr_t)sh.sh_addr;
		code[ncode].end = code[ncode].start + (uintptr_t)sh.sh_size;
		ncode++;
		ret = scan_code(r, file + sh.sh_offset, sh.sh_size,
				r->obj->base + (uintptr_t)sh.sh_addr, sync, nsync, lo, hi, flow);
	}
	ukp_sort(code, ncode, sizeof(code[0]), range_cmp);
	/* the rest of the image: words */
	for (i = 0; !ret && i < phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(&r->elf, i);
		uintptr_t va, end;
		size_t k = 0;

		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset)
			return -ENOENT;
		if (!ncode && (ph.p_flags & PF_X))
			ret = scan_code(r, file + ph.p_offset, ph.p_filesz,
					r->obj->base + (uintptr_t)ph.p_vaddr, sync, nsync, lo, hi,
					flow);
		va = r->obj->base + (uintptr_t)ph.p_vaddr;
		end = va + (uintptr_t)ph.p_filesz;
		for (va = (va + 3) & ~(uintptr_t)3; !ret && va + 4 <= end; va += 4) {
			const uint8_t *w = file + ph.p_offset + (va - r->obj->base - ph.p_vaddr);
			uint64_t w64;

			while (k < ncode && code[k].end <= va)
				k++;
			if (k < ncode && code[k].start <= va) {
				va = ((code[k].end + 3) & ~(uintptr_t)3) - 4;
				continue;
			}
			if (va + 8 > end)
				break;
			memcpy(&w64, w, 8);
			if (w64 >= lo && w64 < hi)
				ret = add_ref(r, (uintptr_t)w64);
		}
	}
	if (ret == -EILSEQ)
		ret = -ENOENT;	/* no decoder: nothing proven */
	return ret;
}

/* [reg] */
int ukp_code_refs_load(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
		       size_t nsegs, const uintptr_t *sync, size_t nsync,
		       struct ukp_code_refs_flow *flow, unsigned int what, uintptr_t **out,
		       size_t *n)
{
	struct refs r = { .obj = obj, .segs = segs, .nsegs = nsegs };
	long long announced, found = 0;
	Elf64_Ehdr eh;
	int fd, ret = 0;

	*out = NULL;
	*n = 0;
	if (!obj->path || !obj->path[0])
		return -ENOENT;
	fd = ukp_sys_open(obj->path, O_RDONLY);
	if (fd < 0)
		return -ENOENT;
	ret = ukp_elf_open_fd(&r.elf, fd); /* (the mapping outlives the descriptor) */
	ukp_sys_close(fd);
	if (ret)
		return -ENOENT;
	eh = *r.elf.ehdr;
	if (!matches_image(&r)) {
		ret = -ENOENT;
		goto out;
	}
	if ((eh.e_type != ET_DYN && eh.e_type != ET_EXEC) || eh.e_machine != EM_X86_64) {
		ret = -ENOTSUP;
		goto out;
	}
	announced = announced_bytes(&r.elf);
	if (announced < 0) {
		ret = -ENOTSUP;
		goto out;
	}
	for (size_t idx = 1; !ret && (what & UKP_REFS_RELOCS) && idx < r.elf.shnum; idx++) {
		const Elf64_Shdr *scn = ukp_elf_shdr(&r.elf, idx), sh = *scn;

		if (!(sh.sh_flags & SHF_ALLOC))
			continue;
		if (sh.sh_type == SHT_RELA) {
			ret = rela_section(&r, scn);
			found += (long long)sh.sh_size;
		} else if (sh.sh_type == SHT_RELR) {
			ret = relr_section(&r, scn);
			found += (long long)sh.sh_size;
		} else if (sh.sh_type == SHT_REL) {
			ret = -ENOTSUP;
		}
	}
	/* .rela.plt may lie inside .rela.dyn's range in some layouts (GNU ld
	 * counts IRELATIVE ones in both): at least what is announced */
	if (!ret && (what & UKP_REFS_RELOCS) && found < announced)
		ret = -ENOENT;
	if (!ret && (what & UKP_REFS_LITERALS) && eh.e_type == ET_EXEC)
		ret = literal_refs(&r, sync, nsync, flow);
out:
	ukp_elf_close(&r.elf);
	if (ret) {
		free(r.v);
		return ret;
	}
	*n = ukp_addrs_sort_unique(r.v, r.n);
	*out = r.v;
	return 0;
}

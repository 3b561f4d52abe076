// SPDX-License-Identifier: MIT
/*
 * symbols.c - loaded ELF objects and their function symbols (kallsyms and
 * the module list, for one process).
 *
 * Objects come from ukp_iterate_objects() (the loader's list, or in the
 * agent the table from /proc/self/maps: iterate_objects.c); symbols are read with the
 * library's ELF reader (elf_read.c, no libelf) from each object's file,
 * lazily, the first time something needs them; for a
 * file without .symtab, its debug file or MiniDebugInfo (debuginfo.c)
 * joins them the first time a lookup misses. An IFUNC name stands for the
 * implementation its resolver chose in this process. The
 * loader's adds/subs counters tell us cheaply whether the object list may
 * have changed, so every query first brings the cache up to date: nobody
 * gets an answer about a library that was dlclose()d under them.
 * Files that are not loaded (yet) are read by the same code, as records
 * of objects loaded at 0 (ukp_file_object), kept apart from the list.
 *
 * Context: every function runs at registration time ([reg]): ordinary
 * (non-signal) context, registry mutex held by the caller, so the module
 * state below needs no locking of its own. Nothing here prints; errors are
 * returned.
 *
 * Lifetime: a struct ukp_object handed out stays allocated until
 * ukp_symbols_reset(), even after its object is unloaded (callers keep
 * pointers in their probes and ask ukp_object_alive()). Symbol tables and
 * names of an unloaded object are freed when the unload is noticed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/arch.h"         /* UKP_ARCH_R_IRELATIVE, arch_ifunc_resolve */
#include "symbols/debuginfo.h"
#include "symbols/eh_frame.h"
#include "symbols/gopclntab.h"
#include "symbols/stack_objects.h"
#include "base/base.h"
#include "base/lower_bound.h"
#include "symbols/symbols.h"
#include "symbols/sym_cache.h"
#include "symbols/sym_table.h"
#include "symbols/maps_objects.h"
#include "symbols/usdt.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */
#include "base/sys.h"

#define UKP_BLACKLIST_SECTION "ukprobes_blacklist"

#define ukp_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* One PT_LOAD segment, absolute addresses. */
struct ukp_seg {
	uintptr_t start;
	uintptr_t end;
	bool exec;
	bool write;
};

/* An IRELATIVE relocation: the word the dynamic linker set to what the
 * resolver returned. Absolute addresses. */
struct ukp_irel {
	uintptr_t resolver;
	uintptr_t slot;
};

/* An IFUNC resolved in this process: resolver -> implementation. */
struct ukp_ifunc {
	uintptr_t resolver;
	uintptr_t impl;
};

enum ukp_syms_state {
	UKP_SYMS_UNREAD,        /* not parsed yet */
	UKP_SYMS_READ,          /* parsed (possibly no symbols: no file, stripped, ...) */
};

/* Our private object record; the public part is handed out. */
struct ukp_objent {
	struct ukp_object pub;
	char *realpath;         /* realpath(path), or NULL when it failed */
	const char *realname;   /* basename of realpath (or pub.name) */
	const char *file;       /* file to read symbols from, NULL for none (vdso) */
	struct ukp_seg *segs;
	size_t nsegs;
	bool alive;
	bool seen;              /* found by the current rescan */

	enum ukp_syms_state syms_state;
	struct ukp_sym *syms;   /* sorted by start, best alias first */
	size_t nsyms;
	const struct ukp_sym **by_name; /* sorted by version-less name (names_of) */
	char **strbufs;         /* every kept symbol name: the file's, the debug file's */
	size_t nstrbufs;
	bool has_symtab;        /* the file has .symtab: no debug file is needed */
	bool full;              /* the debug file's symbols were looked for */
	unsigned int walking;   /* for_each walks on syms: do not replace them */
	struct ukp_irel *irel;  /* sorted by resolver */
	size_t nirel, cap_irel;
	struct ukp_ifunc *ifuncs;       /* resolved so far */
	size_t nifuncs, cap_ifuncs;
	struct ukp_sym *impls;  /* IFUNC implementations no symbol names ("NAME.impl") */
	size_t nimpls;
	struct ukp_eh_frame *eh;        /* FDEs, to size those (read once) */
	struct ukp_usdt_notes *usdt;    /* its SDT notes (usdt.c), read once */
	size_t max_size;        /* largest effective size: bounds address search */
	/* data symbols (OBJECT, or NOTYPE outside code), for @SYM fetch
	 * arguments and watchpoints: apart, so function look-ups and walks
	 * never see them. Size is st_size (0: names an address only). */
	struct ukp_sym *dsyms;  /* sorted by start, best alias first */
	size_t ndsyms;
	const struct ukp_sym **dby_name;
	size_t max_dsize;
	uintptr_t bl_addr;      /* "ukprobes_blacklist" in memory, 0 when none */
	size_t bl_size;
	bool bl_looked;         /* bl_addr found from the section headers alone */
	/* Go-compiled code: [runtime.text, runtime.etext), 0, 0 when none
	 * (ukp_sym_go_code) */
	bool go_checked;
	uintptr_t go_text, go_etext;

	struct ukp_objent *next_all;    /* every object ever seen, dead ones too */
	/* a file read without loading it (ukp_file_object): base 0, never
	 * in the live list; the file as it was read, to notice a new one */
	struct ukp_objent *next_file;
	dev_t dev;
	ino_t ino;
	off_t fsize;
	struct timespec mtime;
};

static struct {
	bool scanned;           /* the object list was built at least once */
	unsigned long long adds;        /* dl_iterate_phdr counters at that scan */
	unsigned long long subs;
	uint64_t gen;           /* bumped on every change of the object list */
	bool removed_pending;   /* an object went away since ukp_objects_refresh() */
	unsigned int iter_depth;        /* inside a for_each walk: do not rescan */
	struct ukp_objent **live;       /* loaded objects, in load order */
	size_t nlive;
	struct ukp_objent *all; /* every record, for freeing and alive checks */
	struct ukp_objent *files;       /* files read without loading them */
} ukp_syms;

/* ukp_symbols_set_names_hook's: names are about to go (kprobes.c keeps
 * pointers to them in its sites) */
static void (*names_hook)(const struct ukp_object *obj);

static inline struct ukp_objent *to_ent(const struct ukp_object *obj)
{
	return ukp_container_of(obj, struct ukp_objent, pub);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ------------------------------------------------------------------ */
/* Symbol tables                                                      */
/* ------------------------------------------------------------------ */

static void obj_free_syms(struct ukp_objent *o)
{
	size_t i;

	free(o->syms);
	free(o->by_name);
	free(o->dsyms);
	free(o->dby_name);
	for (i = 0; i < o->nstrbufs; i++)
		free(o->strbufs[i]);
	free(o->strbufs);
	for (i = 0; i < o->nimpls; i++)
		free((char *)o->impls[i].name);
	free(o->impls);
	free(o->irel);
	free(o->ifuncs);
	if (o->eh) {
		ukp_eh_frame_free(o->eh);
		free(o->eh);
	}
	o->syms = NULL;
	o->by_name = NULL;
	o->dsyms = NULL;
	o->dby_name = NULL;
	o->ndsyms = 0;
	o->max_dsize = 0;
	o->strbufs = NULL;
	o->nstrbufs = 0;
	o->impls = NULL;
	o->nimpls = 0;
	o->irel = NULL;
	o->nirel = o->cap_irel = 0;
	o->ifuncs = NULL;
	o->nifuncs = o->cap_ifuncs = 0;
	o->eh = NULL;
	o->has_symtab = false;
	o->full = false;
	o->nsyms = 0;
	o->max_size = 0;
	o->bl_addr = 0;
	o->bl_size = 0;
	o->bl_looked = false;
}

static bool sym_nondefault_version(const struct ukp_sym *s)
{
	const char *at = s->name + s->keylen;

	/* "foo@V" is an old version kept for old binaries; "foo@@V" and
	 * plain "foo" are what a new link would bind to. */
	return at[0] == '@' && at[1] != '@';
}

static unsigned int sym_leading_underscores(const struct ukp_sym *s)
{
	unsigned int n = 0;

	while (s->name[n] == '_')
		n++;
	return n;
}

/*
 * Which of several symbols at one address names it best: a sized global
 * function beats a local, an unsized label or a NOTYPE alias; among equals
 * the public-looking name ("open" over "__open") and then the name itself
 * keep the choice stable. Negative when a is better.
 */
static int sym_alias_cmp(const struct ukp_sym *a, const struct ukp_sym *b)
{
	unsigned int ua, ub;

	if (a->sized != b->sized)
		return a->sized ? -1 : 1;
	if ((a->bind != STB_LOCAL) != (b->bind != STB_LOCAL))
		return a->bind != STB_LOCAL ? -1 : 1;
	if ((a->type != STT_NOTYPE) != (b->type != STT_NOTYPE))
		return a->type != STT_NOTYPE ? -1 : 1;
	if (sym_nondefault_version(a) != sym_nondefault_version(b))
		return sym_nondefault_version(a) ? 1 : -1;
	ua = sym_leading_underscores(a);
	ub = sym_leading_underscores(b);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int sym_addr_qcmp(const void *pa, const void *pb)
{
	const struct ukp_sym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return sym_alias_cmp(a, b);
}

static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return (alen > blen) - (alen < blen);
}

static int sym_name_qcmp(const void *pa, const void *pb)
{
	const struct ukp_sym *a = *(const struct ukp_sym *const *)pa;
	const struct ukp_sym *b = *(const struct ukp_sym *const *)pb;
	int c = key_cmp(a->name, a->keylen, b->name, b->keylen);

	if (c)
		return c;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Per-section facts needed to judge a symbol. */
struct ukp_secinfo {
	uint64_t addr;
	uint64_t size;
	bool exec;              /* allocated, executable, with file contents
				 * (in a debug file: inside an executable segment) */
	bool data;              /* allocated, not executable, not TLS (in a
				 * debug file: inside a loaded segment) */
};

enum ukp_symkind { UKP_SK_NONE, UKP_SK_FUNC, UKP_SK_DATA };

/* Is a symbol table entry one we keep, and in which table? Fills
 * *sec_idx. */
static enum ukp_symkind sym_wanted(const Elf64_Sym *sym, uint32_t xndx, size_t shnum,
				   const struct ukp_secinfo *secs, size_t *sec_idx, bool go_etext)
{
	unsigned char type = ELF64_ST_TYPE(sym->st_info);
	size_t idx;

	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE &&
	    type != STT_OBJECT)
		return UKP_SK_NONE;
	if (sym->st_name == 0)
		return UKP_SK_NONE;
	if (sym->st_shndx == SHN_XINDEX)
		idx = xndx;
	else if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE)
		return UKP_SK_NONE;   /* undefined, absolute or common */
	else
		idx = sym->st_shndx;
	if (idx == 0 || idx >= shnum)
		return UKP_SK_NONE;
	*sec_idx = idx;
	/* data: its end marker (_edata, _end) names an address too */
	if (secs[idx].data && (type == STT_OBJECT || type == STT_NOTYPE))
		return sym->st_value >= secs[idx].addr &&
		       sym->st_value <= secs[idx].addr + secs[idx].size ? UKP_SK_DATA
									: UKP_SK_NONE;
	if (!secs[idx].exec || type == STT_OBJECT)
		return UKP_SK_NONE;
	/* A zero-length marker at the very end of a section (etext and
	 * friends) names no code; but Go's runtime.etext, the end of its
	 * code (ukp_sym_go_code), is kept: unsized there, it holds no
	 * address (an internally linked Go program's .text ends with it). */
	if (sym->st_value < secs[idx].addr ||
	    sym->st_value >= secs[idx].addr + secs[idx].size)
		return sym->st_value == secs[idx].addr + secs[idx].size && !sym->st_size &&
		       go_etext ? UKP_SK_FUNC : UKP_SK_NONE;
	return UKP_SK_FUNC;
}

/*
 * The loaded image and the file must describe the same PT_LOAD layout;
 * otherwise the file was replaced after loading (package upgrade) and its
 * symbol values would point at the wrong bytes.
 */
static bool file_matches_image(const struct ukp_elf *elf, const struct ukp_objent *o)
{
	size_t i, j, nload = 0;

	for (i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(elf, i);
		uintptr_t start;
		bool found = false;

		if (ph.p_type != PT_LOAD)
			continue;
		nload++;
		start = o->pub.base + ph.p_vaddr;
		for (j = 0; j < o->nsegs; j++) {
			if (o->segs[j].start == start &&
			    o->segs[j].end == start + ph.p_memsz &&
			    o->segs[j].exec == !!(ph.p_flags & PF_X)) {
				found = true;
				break;
			}
		}
		if (!found)
			return false;
	}
	return nload == o->nsegs;
}

/* [addr, addr+len) inside one segment of o (an executable one if exec). */
static bool obj_range_in_seg(const struct ukp_objent *o, uintptr_t addr, size_t len, bool exec)
{
	size_t i;

	for (i = 0; i < o->nsegs; i++)
		if (addr >= o->segs[i].start && len <= o->segs[i].end - addr &&
		    addr < o->segs[i].end && (!exec || o->segs[i].exec))
			return true;
	return false;
}

static bool obj_range_mapped(const struct ukp_objent *o, uintptr_t addr, size_t len)
{
	return obj_range_in_seg(o, addr, len, false);
}

/*
 * Fill in the effective sizes: an unsized symbol (hand-written assembly,
 * labels) runs to the next symbol's start or to its section's end.
 */
static void syms_finish(struct ukp_objent *o)
{
	size_t i, next = 0;

	o->max_size = 0;
	for (i = 0; i < o->nsyms; i++) {
		struct ukp_sym *s = &o->syms[i];

		if (!s->sized) {
			uintptr_t end = s->sec_end;

			if (next <= i)
				next = i + 1;
			while (next < o->nsyms && o->syms[next].start == s->start)
				next++;
			if (next < o->nsyms && o->syms[next].start < end)
				end = o->syms[next].start;
			s->size = end - s->start;
		}
		if (s->size > o->max_size)
			o->max_size = s->size;
	}
}

/* [reg] scn of o's own file, when it is the blacklist section: noted. */
static void blacklist_section(struct ukp_objent *o, const struct ukp_elf *elf,
			      const Elf64_Shdr *scn)
{
	const Elf64_Shdr sh = *scn;
	const char *name = ukp_elf_shname(elf, scn);

	if (name && !strcmp(name, UKP_BLACKLIST_SECTION) && (sh.sh_flags & SHF_ALLOC) &&
	    sh.sh_type == SHT_PROGBITS && obj_range_mapped(o, o->pub.base + sh.sh_addr, sh.sh_size)) {
		o->bl_addr = o->pub.base + sh.sh_addr;
		o->bl_size = sh.sh_size;
	}
}

/*
 * [reg] The sections of elf, judged (*secsp, calloc'ed), and its symbol
 * tables. debug: elf is o's debug file or MiniDebugInfo, whose code
 * sections are NOBITS; they count when they lie in an executable segment
 * of the loaded object. For o's own file the blacklist section is noted.
 */
static int read_sections(struct ukp_objent *o, const struct ukp_elf *elf, bool debug,
			 struct ukp_secinfo **secsp, size_t *shnump, const Elf64_Shdr **symscn,
			 const Elf64_Shdr **dynscn, const Elf64_Shdr **xndxscn)
{
	struct ukp_secinfo *secs;
	size_t shnum = elf->shnum;

	*symscn = *dynscn = *xndxscn = NULL;
	*secsp = NULL;
	secs = calloc(shnum ? shnum : 1, sizeof(*secs));
	if (!secs)
		return -ENOMEM;
	for (size_t idx = 1; idx < shnum; idx++) {
		const Elf64_Shdr *scn = ukp_elf_shdr(elf, idx), sh = *scn;
		bool code;

		code = (sh.sh_flags & SHF_ALLOC) && (sh.sh_flags & SHF_EXECINSTR);
		secs[idx].addr = sh.sh_addr;
		secs[idx].size = sh.sh_size;
		if (debug)
			secs[idx].exec = code && sh.sh_size &&
					 obj_range_in_seg(o, o->pub.base + sh.sh_addr, sh.sh_size, true);
		else
			secs[idx].exec = code && sh.sh_type != SHT_NOBITS;
		/* a TLS section's addresses are offsets in each thread's block */
		secs[idx].data = (sh.sh_flags & SHF_ALLOC) &&
				 !(sh.sh_flags & (SHF_EXECINSTR | SHF_TLS)) &&
				 (!debug || obj_range_mapped(o, o->pub.base + sh.sh_addr,
							     sh.sh_size ? sh.sh_size : 1));
		if (sh.sh_type == SHT_SYMTAB)
			*symscn = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			*dynscn = scn;
		else if (sh.sh_type == SHT_SYMTAB_SHNDX)
			*xndxscn = scn;
		if (debug)
			continue;
		blacklist_section(o, elf, scn);
	}
	*secsp = secs;
	*shnump = shnum;
	return 0;
}

/*
 * [reg] The wanted symbols of the symbol table symscn of elf (xndxscn:
 * its SHT_SYMTAB_SHNDX, or NULL) into *rd. Only -ENOMEM is an error.
 */
static int read_symtab(const struct ukp_objent *o, const struct ukp_elf *elf,
		       const Elf64_Shdr *symscn, const Elf64_Shdr *xndxscn,
		       const struct ukp_secinfo *secs, size_t shnum, bool debug,
		       struct ukp_symread *rd)
{
	const Elf64_Shdr symshdr = *symscn;
	size_t nent, i, n, dn, strbytes;
	char *sp;

	memset(rd, 0, sizeof(*rd));
	if (!symshdr.sh_entsize)
		return 0;
	nent = ukp_elf_nsyms(elf, symscn);

	/* First pass: count and size the names, to allocate once. */
	n = dn = 0;
	strbytes = 0;
	for (i = 0; i < nent; i++) {
		Elf64_Sym sym;
		uint32_t xndx = 0;
		size_t idx;
		const char *name;
		enum ukp_symkind kind;

		if (!ukp_elf_sym(elf, symscn, xndxscn, i, &sym, &xndx))
			continue;
		name = ukp_elf_strptr(elf, symshdr.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		kind = sym_wanted(&sym, xndx, shnum, secs, &idx, !strcmp(name, "runtime.etext"));
		if (kind == UKP_SK_NONE)
			continue;
		if (kind == UKP_SK_FUNC)
			n++;
		else
			dn++;
		strbytes += strlen(name) + 1;
	}
	if (!n && !dn)
		return 0;

	rd->syms = calloc(n ? n : 1, sizeof(*rd->syms));
	rd->dsyms = calloc(dn ? dn : 1, sizeof(*rd->dsyms));
	rd->strings = malloc(strbytes);
	rd->strbytes = strbytes;
	if (!rd->syms || !rd->dsyms || !rd->strings) {
		free(rd->syms);
		free(rd->dsyms);
		free(rd->strings);
		memset(rd, 0, sizeof(*rd));
		return -ENOMEM;
	}

	/* Second pass: keep them. */
	sp = rd->strings;
	for (i = 0; i < nent && (rd->n < n || rd->dn < dn); i++) {
		struct ukp_sym *s;
		Elf64_Sym sym;
		uint32_t xndx = 0;
		size_t idx, len;
		const char *name, *at;
		enum ukp_symkind kind;

		if (!ukp_elf_sym(elf, symscn, xndxscn, i, &sym, &xndx))
			continue;
		name = ukp_elf_strptr(elf, symshdr.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		kind = sym_wanted(&sym, xndx, shnum, secs, &idx, !strcmp(name, "runtime.etext"));
		if (kind == UKP_SK_NONE)
			continue;
		if (kind == UKP_SK_FUNC ? rd->n == n : rd->dn == dn)
			continue;
		s = kind == UKP_SK_FUNC ? &rd->syms[rd->n++] : &rd->dsyms[rd->dn++];
		len = strlen(name) + 1;
		memcpy(sp, name, len);
		s->name = sp;
		sp += len;
		at = strchr(s->name, '@');
		s->keylen = at ? (size_t)(at - s->name) : len - 1;
		s->start = o->pub.base + sym.st_value;
		s->sec_end = o->pub.base + secs[idx].addr + secs[idx].size;
		s->sized = sym.st_size != 0;
		s->size = sym.st_size;
		s->bind = ELF64_ST_BIND(sym.st_info);
		s->type = ELF64_ST_TYPE(sym.st_info);
		s->debug = debug;
	}
	return 0;
}

static int irel_qcmp(const void *pa, const void *pb)
{
	const struct ukp_irel *a = pa, *b = pb;

	return (a->resolver > b->resolver) - (a->resolver < b->resolver);
}

/*
 * [reg] The IRELATIVE relocations of o's file: for each, the resolver
 * and the word where the dynamic linker stored what it returned (the
 * implementation it chose for this process).
 */
static int read_irelative(struct ukp_objent *o, const struct ukp_elf *elf)
{
	const Elf64_Shdr *scn = NULL;

	while ((scn = ukp_elf_next_of_type(elf, scn, SHT_RELA))) {
		const Elf64_Shdr sh = *scn;
		const unsigned char *data;
		size_t i, n, size;

		if (!sh.sh_entsize || !(sh.sh_flags & SHF_ALLOC))
			continue;
		data = ukp_elf_data(elf, scn, &size);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		if (n > size / sizeof(Elf64_Rela))
			n = size / sizeof(Elf64_Rela);
		for (i = 0; i < n; i++) {
			Elf64_Rela r;

			memcpy(&r, data + i * sizeof(r), sizeof(r));
			if (ELF64_R_TYPE(r.r_info) != UKP_ARCH_R_IRELATIVE)
				continue;
			if (o->nirel == o->cap_irel) {
				size_t cap = o->cap_irel ? o->cap_irel * 2 : 64;
				struct ukp_irel *ir = realloc(o->irel, cap * sizeof(*ir));

				if (!ir)
					return -ENOMEM;
				o->irel = ir;
				o->cap_irel = cap;
			}
			o->irel[o->nirel].resolver = o->pub.base + (uintptr_t)r.r_addend;
			o->irel[o->nirel].slot = o->pub.base + r.r_offset;
			o->nirel++;
		}
	}
	if (o->nirel)
		ukp_sort(o->irel, o->nirel, sizeof(*o->irel), irel_qcmp);
	return 0;
}

/* Same name (without version) and binding class: one symbol read twice. */
static bool sym_same(const struct ukp_sym *a, const struct ukp_sym *b)
{
	return a->start == b->start && (a->bind != STB_LOCAL) == (b->bind != STB_LOCAL) &&
	       !key_cmp(a->name, a->keylen, b->name, b->keylen);
}

/* sym_addr_qcmp's order, on a table of pointers to the symbols. */
static int sym_addr_pqcmp(const void *pa, const void *pb)
{
	return sym_addr_qcmp(*(const struct ukp_sym *const *)pa, *(const struct ukp_sym *const *)pb);
}

/*
 * [reg] The merged table syms[n] without the debug symbols that repeat
 * one of the object's own (same address, name and binding class: the
 * object's carries the version). Returns how many are kept.
 */
static size_t table_dedup(struct ukp_sym *syms, size_t n)
{
	size_t i, j, k, kept = 0;

	for (i = 0; i < n; i = j) {
		for (j = i; j < n && syms[j].start == syms[i].start; j++)
			;
		for (k = i; k < j; k++) {
			size_t m;
			bool dup = false;

			for (m = i; syms[k].debug && m < j && !dup; m++)
				dup = !syms[m].debug && sym_same(&syms[k], &syms[m]);
			if (!dup)
				syms[kept++] = syms[k];
		}
	}
	return kept;
}

/*
 * [reg] old (sorted by sym_addr_qcmp: an earlier table_merge's) and add
 * (one kind of symbol, in any order) as one table in *out, sorted by
 * address (best alias first), deduplicated (table_dedup). 0 or -ENOMEM
 * (old kept).
 *
 * Only add is sorted (pointers to it, not the symbols: less to move),
 * then merged with old, old's first where the order ties: the table a
 * stable sort of old and add together would make, at the cost of add
 * alone (a debug file's symbols join a library's own).
 */
static int table_merge(const struct ukp_sym *old, size_t nold, const struct ukp_sym *add,
		       size_t nadd, struct ukp_sym **out, size_t *nout)
{
	size_t n = nold + nadd, i, j, k;
	struct ukp_sym *syms = malloc((n ? n : 1) * sizeof(*syms));
	const struct ukp_sym **ord = malloc((nadd ? nadd : 1) * sizeof(*ord));

	if (!syms || !ord) {
		free(syms);
		free(ord);
		return -ENOMEM;
	}
	for (j = 0; j < nadd; j++)
		ord[j] = &add[j];
	ukp_sort(ord, nadd, sizeof(*ord), sym_addr_pqcmp);
	for (i = j = k = 0; k < n; k++) {
		if (j < nadd && (i == nold || sym_addr_qcmp(ord[j], &old[i]) < 0))
			syms[k] = *ord[j++];
		else
			syms[k] = old[i++];
	}
	free(ord);
	*out = syms;
	*nout = table_dedup(syms, n);
	return 0;
}

/*
 * [reg] The name-sorted view of tab[n] (pointers into it) in *by_name,
 * made at the first look-up by name: naming addresses (the agent's
 * reader, a return's caller in libc6-dbg's symbols) never needs it.
 * NULL when there is no memory for it (the name is then not found).
 */
static const struct ukp_sym *const *names_of(const struct ukp_sym *tab, size_t n,
					     const struct ukp_sym ***by_name)
{
	const struct ukp_sym **names;
	size_t i;

	if (*by_name || !n)
		return *by_name;
	names = malloc(n * sizeof(*names));
	if (!names)
		return NULL;
	for (i = 0; i < n; i++)
		names[i] = &tab[i];
	ukp_sort(names, n, sizeof(*names), sym_name_qcmp);
	*by_name = names;
	return names;
}

/* [reg] The merged tables in place of o's, with rd's strings (moved to
 * o: the names handed out before stay valid). */
static void syms_install(struct ukp_objent *o, struct ukp_sym *syms, size_t n,
			 struct ukp_sym *dsyms, size_t dn, struct ukp_symread *rd)
{
	size_t i;

	free(o->syms);
	free(o->by_name);
	free(o->dsyms);
	free(o->dby_name);
	o->syms = syms;
	o->by_name = NULL; /* (names_of) */
	o->nsyms = n;
	o->dsyms = dsyms;
	o->dby_name = NULL;
	o->ndsyms = dn;
	if (rd->strings)
		o->strbufs[o->nstrbufs++] = rd->strings;
	rd->strings = NULL;
	syms_finish(o);
	o->max_dsize = 0;
	for (i = 0; i < o->ndsyms; i++)
		if (o->dsyms[i].size > o->max_dsize)
			o->max_dsize = o->dsyms[i].size;
}

/* [reg] Room in o->strbufs for one more. */
static int strbufs_room(struct ukp_objent *o)
{
	char **strbufs = realloc(o->strbufs, (o->nstrbufs + 1) * sizeof(*strbufs));

	if (!strbufs)
		return -ENOMEM;
	o->strbufs = strbufs;
	return 0;
}

/*
 * [reg] Join rd's symbols to o's tables (functions and data apart); rd's
 * strings move to o.
 */
static int syms_join(struct ukp_objent *o, struct ukp_symread *rd)
{
	struct ukp_sym *syms, *dsyms;
	size_t n, dn;

	if (strbufs_room(o))
		return -ENOMEM;
	if (table_merge(o->syms, o->nsyms, rd->syms, rd->n, &syms, &n))
		return -ENOMEM;
	if (table_merge(o->dsyms, o->ndsyms, rd->dsyms, rd->dn, &dsyms, &dn)) {
		free(syms);
		return -ENOMEM;
	}
	syms_install(o, syms, n, dsyms, dn, rd);
	return 0;
}

static void symread_free(struct ukp_symread *rd)
{
	free(rd->syms);
	free(rd->dsyms);
	free(rd->strings);
	memset(rd, 0, sizeof(*rd));
}

/* [reg] Open o's file with the library's reader (o->file must be set),
 * and with st, stat() it: 0, or -ENOENT when it cannot be read or is
 * not the loaded image's. */
static int obj_open_elf(const struct ukp_objent *o, struct ukp_elf *elf, struct stat *st)
{
	int fd, err;

	if (!o->file)
		return -ENOENT; /* (the vDSO, an object known by its memory only) */
	fd = ukp_sys_open(o->file, O_RDONLY);
	if (fd < 0)
		return -ENOENT;
	err = ukp_elf_open_fd(elf, fd); /* (the mapping outlives the descriptor) */
	if (!err && st && ukp_sys_fstat(fd, st)) {
		ukp_elf_close(elf);
		err = -ENOENT;
	}
	ukp_sys_close(fd);
	if (err)
		return -ENOENT;
	if (!file_matches_image(elf, o)) {
		ukp_elf_close(elf);
		return -ENOENT;
	}
	return 0;
}

/* [reg] One function of a Go table into s (its name at *sp, moved on). */
static void go_sym(const struct ukp_objent *o, struct ukp_sym *s, uint64_t entry, uint64_t size,
		   const char *name, char **sp)
{
	size_t len = strlen(name) + 1;

	memcpy(*sp, name, len);
	s->name = *sp;
	*sp += len;
	s->keylen = len - 1;
	s->start = o->pub.base + entry;
	s->size = size;
	s->sized = size != 0;
	s->sec_end = s->start + size;
	s->bind = STB_LOCAL;    /* (as Go's linker binds them in .symtab) */
	s->type = STT_FUNC;
	s->debug = false;
}

/*
 * [reg] A Go executable without .symtab (-ldflags=-s): its Go functions
 * from the runtime's own table (gopclntab.c), as local functions named
 * as its symbol table would name them, with the bounds of its Go code,
 * runtime.text and runtime.etext (unsized markers, as Go's linker makes
 * them: what tells Go code apart). Only -ENOMEM is an error.
 */
static int read_gopclntab(const struct ukp_objent *o, const struct ukp_elf *elf,
			  struct ukp_symread *rd)
{
	static const char *const marks[] = { "runtime.text", "runtime.etext" };
	struct ukp_gopcln p;
	size_t i, n = 0, strbytes = 0;
	uint64_t entry, size;
	const char *name;
	char *sp;

	memset(rd, 0, sizeof(*rd));
	if (ukp_gopclntab_find(elf, &p))
		return 0;
	for (i = 0; i < p.nfunc; i++)
		if (ukp_gopclntab_func(&p, i, &entry, &size, &name)) {
			n++;
			strbytes += strlen(name) + 1;
		}
	for (i = 0; i < 2; i++)
		strbytes += strlen(marks[i]) + 1;
	rd->syms = calloc(n + 2, sizeof(*rd->syms));
	rd->strings = malloc(strbytes);
	rd->strbytes = strbytes;
	if (!rd->syms || !rd->strings) {
		symread_free(rd);
		return -ENOMEM;
	}
	sp = rd->strings;
	for (i = 0; i < p.nfunc && rd->n < n; i++)
		if (ukp_gopclntab_func(&p, i, &entry, &size, &name))
			go_sym(o, &rd->syms[rd->n++], entry, size, name, &sp);
	for (i = 0; i < 2; i++) {
		struct ukp_sym *s = &rd->syms[rd->n++];

		go_sym(o, s, i ? p.etext : p.text, 0, marks[i], &sp);
		s->sec_end = o->pub.base + p.etext;
	}
	return 0;
}

/*
 * [reg] Read the object's own symbol table (.symtab, else .dynsym), its
 * IRELATIVE relocations and the location of its blacklist section. A
 * file that cannot be read leaves the object without symbols; only
 * -ENOMEM is an error, and then nothing is cached so the next call tries
 * again. The debug file is not read here (obj_load_full).
 */
static int obj_load_syms(struct ukp_objent *o)
{
	struct ukp_secinfo *secs = NULL;
	const Elf64_Shdr *symscn, *dynscn, *xndxscn;
	struct ukp_symread rd = { 0 };
	struct ukp_elf elf = { 0 };
	size_t shnum = 0;
	int err = 0;

	if (o->syms_state == UKP_SYMS_READ)
		return 0;
	if (!o->file || !o->alive)
		goto done;
	if (obj_open_elf(o, &elf, NULL))
		goto done;
	err = read_sections(o, &elf, false, &secs, &shnum, &symscn, &dynscn, &xndxscn);
	if (!err)
		err = read_irelative(o, &elf);
	if (err)
		goto out;
	o->has_symtab = symscn != NULL;
	/* SHT_SYMTAB_SHNDX only belongs to .symtab; .dynsym never uses it. */
	if (!symscn) {
		symscn = dynscn;
		xndxscn = NULL;
	}
	if (symscn) {
		err = read_symtab(o, &elf, symscn, xndxscn, secs, shnum, false, &rd);
		if (!err)
			err = syms_join(o, &rd);
		if (err)
			goto out;
	}
	if (!o->has_symtab) {
		symread_free(&rd);
		err = read_gopclntab(o, &elf, &rd);
		if (!err && rd.n)
			err = syms_join(o, &rd);
		if (err)
			goto out;
	}

done:
	o->syms_state = UKP_SYMS_READ;
out:
	if (err)
		obj_free_syms(o);
	symread_free(&rd);
	free(secs);
	ukp_elf_close(&elf);
	return err;
}

/*
 * [reg] Read src's symbols into o's tables, and keep them in the sym
 * cache under k (when have_key). Only -ENOMEM is an error.
 */
static int debug_syms_read(struct ukp_objent *o, struct ukp_debugsrc *src,
			   const struct ukp_sym_cache_key *k, bool have_key)
{
	const Elf64_Shdr *symscn, *dynscn, *xndxscn;
	struct ukp_secinfo *secs = NULL;
	struct ukp_symread rd = { 0 };
	size_t shnum = 0, strbytes;
	const char *strings;
	int err;

	err = read_sections(o, &src->elf, true, &secs, &shnum, &symscn, &dynscn, &xndxscn);
	if (!err && symscn)
		err = read_symtab(o, &src->elf, symscn, xndxscn, secs, shnum, true, &rd);
	strings = rd.strings;
	strbytes = rd.strbytes;
	if (!err && (rd.n || rd.dn)) {
		err = syms_join(o, &rd);
		/* (the names are o's now: still there) */
		if (!err && have_key)
			ukp_sym_cache_store(k, o->pub.base, o->syms, o->nsyms, o->dsyms, o->ndsyms,
					    strings, strbytes);
	}
	symread_free(&rd);
	free(secs);
	return err;
}

/* [reg] Join the entry of key k to o's tables, when the sym cache has
 * one: 1, 0 (none), -ENOMEM. */
static int cached_debug_syms(struct ukp_objent *o, const struct ukp_sym_cache_key *k)
{
	struct ukp_symread rd;
	int err;

	if (strbufs_room(o))
		return -ENOMEM;
	err = ukp_sym_cache_load(k, o->pub.base, o->syms, o->nsyms, o->dsyms, o->ndsyms, &rd);
	if (err == 1) {
		syms_install(o, rd.syms, rd.n, rd.dsyms, rd.dn, &rd);
		rd.syms = rd.dsyms = NULL;
	}
	symread_free(&rd);
	return err;
}

/*
 * [reg] Also the symbols of o's debug file or MiniDebugInfo, when o's
 * file has no .symtab: read the first time a lookup misses in the
 * object's own table (or a walk wants every function), never again;
 * from the sym cache (sym_cache.h) when it holds them, each with its
 * place in the joined table (a debug file found by build-id is not
 * even opened then: its stat() is its key). Only -ENOMEM is an error (and then the next call
 * tries again).
 */
static int obj_load_full(struct ukp_objent *o)
{
	struct ukp_sym_cache_key key, tried;
	struct ukp_debugsrc src;
	struct ukp_elf elf;
	struct stat st, dst;
	bool have_key, have_tried;
	int err;

	err = obj_load_syms(o);
	if (err || o->full || o->walking)
		return err;
	o->full = true;
	if (o->has_symtab || !o->file || !o->alive)
		return 0;
	if (obj_open_elf(o, &elf, &st))
		return 0;
	have_tried = ukp_debuginfo_by_build_id(&elf, &dst) &&
		     ukp_sym_cache_key(&elf, &st, "build-id", &dst, &tried);
	err = have_tried ? cached_debug_syms(o, &tried) : 0;
	if (err)
		goto out;
	err = ukp_debuginfo_open(&elf, o->realpath ? o->realpath : o->pub.path, &src);
	if (err == -ENOENT) {
		err = 0;
		goto out;
	}
	if (err)
		goto out;
	have_key = (src.fd < 0 || !ukp_sys_fstat(src.fd, &dst)) &&
		   ukp_sym_cache_key(&elf, &st, src.kind, src.fd >= 0 ? &dst : NULL, &key);
	/* (another source than the one tried, or the file changed since) */
	if (have_key && !(have_tried && !memcmp(&key, &tried, sizeof(key))))
		err = cached_debug_syms(o, &key);
	if (!err)
		err = debug_syms_read(o, &src, &key, have_key);
	ukp_debuginfo_close(&src);
out:
	ukp_elf_close(&elf);
	if (err < 0)
		o->full = false;
	return err < 0 ? err : 0;
}

/*
 * [reg] The best symbol of the address-sorted table tab[n] containing
 * addr: the nearest start at or below addr whose extent covers it (a
 * label inside a function wins over the function, as in kallsyms), and
 * at one start the best alias (sorted first). No symbol containing addr
 * starts max_size or more below it.
 */
static const struct ukp_sym *table_sym_at(const struct ukp_sym *tab, size_t n, size_t max_size,
					  uintptr_t addr)
{
	const struct ukp_sym *best = NULL;
	size_t lo = 0, hi = n;

	/* hi := first symbol starting above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tab[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (hi-- > 0) {
		const struct ukp_sym *s = &tab[hi];

		if (addr - s->start >= max_size || (best && s->start < best->start))
			break;
		if (addr - s->start < s->size)
			best = s;       /* walking down: ends on the best alias */
	}
	return best;
}

/* [reg] The same among o's functions. */
static const struct ukp_sym *obj_sym_at(const struct ukp_objent *o, uintptr_t addr)
{
	const struct ukp_sym *best = table_sym_at(o->syms, o->nsyms, o->max_size, addr);

	/* An IFUNC implementation named after its IFUNC, when no real
	 * symbol names it (obj_sym_at never picks it over one that does). */
	if (!best || !best->sized) {
		size_t i;

		for (i = 0; i < o->nimpls; i++) {
			const struct ukp_sym *s = &o->impls[i];

			if (addr - s->start < s->size && (!best || s->start > best->start))
				best = s;
		}
	}
	return best;
}

/*
 * [reg] The best definition of name in the name-sorted table by_name[n]
 * with the wanted binding class (global: GLOBAL/WEAK/UNIQUE, or local).
 * "foo" also matches "foo@V" and "foo@@V" (the default version
 * preferred); "foo@V" matches only itself.
 */
static const struct ukp_sym *table_sym_named(const struct ukp_sym *const *by_name, size_t n,
					     const char *name, bool global)
{
	const struct ukp_sym *best = NULL;
	const char *at = strchr(name, '@');
	size_t keylen = at ? (size_t)(at - name) : strlen(name);
	size_t lo = 0, hi = n, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ukp_sym *s = by_name[mid];

		if (key_cmp(s->name, s->keylen, name, keylen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < n; i++) {
		const struct ukp_sym *s = by_name[i];

		if (key_cmp(s->name, s->keylen, name, keylen) != 0)
			break;
		if ((s->bind != STB_LOCAL) != global)
			continue;
		if (at && strcmp(s->name, name) != 0)
			continue;
		/* by_name is in address order within a name: keep the
		 * first unless a later one has a better version. */
		if (!best || (sym_nondefault_version(best) && !sym_nondefault_version(s)))
			best = s;
	}
	return best;
}

/* [reg] The same among o's functions. */
static const struct ukp_sym *obj_sym_named(struct ukp_objent *o, const char *name, bool global)
{
	const struct ukp_sym *const *by_name = names_of(o->syms, o->nsyms, &o->by_name);

	return by_name ? table_sym_named(by_name, o->nsyms, name, global) : NULL;
}

/* [reg] The same among o's data symbols. */
static const struct ukp_sym *obj_data_named(struct ukp_objent *o, const char *name, bool global)
{
	const struct ukp_sym *const *by_name = names_of(o->dsyms, o->ndsyms, &o->dby_name);

	return by_name ? table_sym_named(by_name, o->ndsyms, name, global) : NULL;
}

/* [reg] The data symbol of o whose st_size bytes hold addr (the nearest
 * start at or below it, best alias first), or NULL. */
static const struct ukp_sym *obj_dsym_at(const struct ukp_objent *o, uintptr_t addr)
{
	return table_sym_at(o->dsyms, o->ndsyms, o->max_dsize, addr);
}

static void fill_res(const struct ukp_objent *o, const struct ukp_sym *s,
		     struct ukp_symres *res)
{
	res->obj = &o->pub;
	res->name = s->name;
	res->start = s->start;
	res->size = s->size;
	res->func = s->sized && (s->type == STT_FUNC || s->type == STT_GNU_IFUNC);
	res->ifunc = s->type == STT_GNU_IFUNC;
	res->global = s->bind != STB_LOCAL;
	res->debug = s->debug;
	res->data = false;
}

static void fill_dres(const struct ukp_objent *o, const struct ukp_sym *s,
		      struct ukp_symres *res)
{
	fill_res(o, s, res);
	res->func = res->ifunc = false;
	res->data = true;
}

/* ------------------------------------------------------------------ */
/* Object list                                                        */
/* ------------------------------------------------------------------ */

/* What one dl_iterate_phdr() entry told us. */
struct ukp_scan_ent {
	char *path;
	uintptr_t base;
	bool is_main;
	bool has_file;
	bool via_exe;           /* path came from /proc/self/exe */
	struct ukp_seg *segs;
	size_t nsegs;
};

struct ukp_scan {
	struct ukp_scan_ent *ents;
	size_t n;
	size_t cap;
	unsigned long long adds;
	unsigned long long subs;
	bool have_counters;
	int err;
};

static bool info_has_counters(size_t size)
{
	return size >= offsetof(struct dl_phdr_info, dlpi_subs) +
		       sizeof(((struct dl_phdr_info *)0)->dlpi_subs);
}

static int peek_counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ukp_scan *sc = arg;

	if (info_has_counters(size)) {
		sc->adds = info->dlpi_adds;
		sc->subs = info->dlpi_subs;
		sc->have_counters = true;
	}
	return 1;       /* the counters are the same in every entry */
}

/* The vdso has no file: recognise it by its ELF header address. */
static bool is_vdso(const struct dl_phdr_info *info)
{
	uintptr_t ehdr = (uintptr_t)ukp_getauxval(AT_SYSINFO_EHDR);
	size_t i;

	/* (by where its ELF header is loaded: a walk may give a copy of
	 * the program headers, src/symbols/iterate_objects.c) */
	for (i = 0; ehdr && i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && !info->dlpi_phdr[i].p_offset)
			return info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == ehdr;
	return false;
}

static char *main_exe_path(void)
{
	char buf[PATH_MAX];
	long len = ukp_sys_readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (len <= 0)
		return strdup("");
	buf[len] = '\0';
	return strdup(buf);
}

/*
 * [reg] Called inside a walk (the loader's lock held, or a snapshot's
 * copies: iterate_objects.c): copy what we need (the
 * name may go away with a later dlclose()) and nothing more.
 */
static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ukp_scan *sc = arg;
	struct ukp_scan_ent *e;
	size_t i, nload = 0;

	if (sc->n == 0 && info_has_counters(size)) {
		sc->adds = info->dlpi_adds;
		sc->subs = info->dlpi_subs;
		sc->have_counters = true;
	}
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 32;
		struct ukp_scan_ent *ents = realloc(sc->ents, cap * sizeof(*ents));

		if (!ents)
			goto nomem;
		sc->ents = ents;
		sc->cap = cap;
	}
	e = &sc->ents[sc->n];
	memset(e, 0, sizeof(*e));
	e->base = info->dlpi_addr;
	e->is_main = sc->n == 0;
	e->has_file = true;
	if (e->is_main && (!info->dlpi_name || !info->dlpi_name[0])) {
		e->path = main_exe_path();
		e->via_exe = true;
	} else if (is_vdso(info)) {
		e->has_file = false;
		e->path = strdup(info->dlpi_name && info->dlpi_name[0] ?
				 info->dlpi_name : "[vdso]");
	} else {
		e->path = strdup(info->dlpi_name ? info->dlpi_name : "");
		e->has_file = e->path && e->path[0];
	}
	if (!e->path)
		goto nomem;

	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD)
			nload++;
	e->segs = calloc(nload ? nload : 1, sizeof(*e->segs));
	if (!e->segs) {
		free(e->path);
		goto nomem;
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct ukp_seg *sg;

		if (ph->p_type != PT_LOAD)
			continue;
		sg = &e->segs[e->nsegs++];
		sg->start = info->dlpi_addr + ph->p_vaddr;
		sg->end = sg->start + ph->p_memsz;
		sg->exec = ph->p_flags & PF_X;
		sg->write = ph->p_flags & PF_W;
	}
	sc->n++;
	return 0;

nomem:
	sc->err = -ENOMEM;
	return 1;
}

static void scan_free(struct ukp_scan *sc)
{
	size_t i;

	for (i = 0; i < sc->n; i++) {
		free(sc->ents[i].path);
		free(sc->ents[i].segs);
	}
	free(sc->ents);
}

static void obj_free(struct ukp_objent *o)
{
	ukp_usdt_notes_free(o->usdt);
	obj_free_syms(o);
	free(o->segs);
	free(o->realpath);
	free(o->pub.path);
	free(o);
}

/* [reg] A new record for a scan entry; takes its path and segments. */
static struct ukp_objent *obj_new(struct ukp_scan_ent *e)
{
	struct ukp_objent *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->pub.path = e->path;
	o->pub.name = base_name(e->path);
	o->pub.base = e->base;
	o->pub.is_main = e->is_main;
	o->segs = e->segs;
	o->nsegs = e->nsegs;
	o->alive = true;
	o->syms_state = UKP_SYMS_UNREAD;
	if (e->has_file) {
		/* The main program is read through /proc/self/exe: that
		 * still works when the file was renamed or deleted, and
		 * its link target is already a resolved path. */
		o->file = e->via_exe ? "/proc/self/exe" : o->pub.path;
		o->realpath = e->via_exe ? NULL : ukp_realpath_dup(o->pub.path);
	}
	o->realname = o->realpath ? base_name(o->realpath) : o->pub.name;
	e->path = NULL;
	e->segs = NULL;
	return o;
}

static struct ukp_objent *live_find(const struct ukp_scan_ent *e)
{
	size_t i;

	for (i = 0; i < ukp_syms.nlive; i++) {
		struct ukp_objent *o = ukp_syms.live[i];

		if (o->seen || o->pub.base != e->base || o->pub.is_main != e->is_main)
			continue;
		/* The main program never goes away; its /proc/self/exe
		 * name does change when the file is deleted. */
		if (e->is_main || !strcmp(o->pub.path, e->path))
			return o;
	}
	return NULL;
}

/*
 * [reg] Rebuild the live list from the loader. New (path, base) pairs get
 * new records; live records not reported any more die: they keep their
 * struct ukp_object but lose their symbols. All or nothing on -ENOMEM.
 */
static int objects_rescan(void)
{
	struct ukp_scan sc = { 0 };
	struct ukp_objent **live = NULL, *created = NULL;
	bool changed = false, removed = false;
	size_t i;
	int err = 0;

	ukp_iterate_objects(scan_cb, &sc);
	if (sc.err) {
		err = sc.err;
		goto out;
	}
	live = calloc(sc.n ? sc.n : 1, sizeof(*live));
	if (!live) {
		err = -ENOMEM;
		goto out;
	}

	for (i = 0; i < ukp_syms.nlive; i++)
		ukp_syms.live[i]->seen = false;
	for (i = 0; i < sc.n; i++) {
		struct ukp_objent *o = live_find(&sc.ents[i]);

		if (!o) {
			o = obj_new(&sc.ents[i]);
			if (!o) {
				err = -ENOMEM;
				goto undo;
			}
			/* chained through next_all until committed */
			o->next_all = created;
			created = o;
			changed = true;
		}
		o->seen = true;
		live[i] = o;
	}

	/* Commit: nothing below can fail. */
	for (i = 0; i < ukp_syms.nlive; i++) {
		struct ukp_objent *o = ukp_syms.live[i];

		if (o->seen)
			continue;
		o->alive = false;
		if (names_hook)
			names_hook(&o->pub);
		obj_free_syms(o);
		o->syms_state = UKP_SYMS_READ;
		removed = true;
	}
	if (changed || removed)
		ukp_syms.gen++;
	while (created) {
		struct ukp_objent *o = created;

		created = o->next_all;
		o->pub.gen = ukp_syms.gen;
		o->next_all = ukp_syms.all;
		ukp_syms.all = o;
	}
	free(ukp_syms.live);
	ukp_syms.live = live;
	ukp_syms.nlive = sc.n;
	live = NULL;
	if (removed)
		ukp_syms.removed_pending = true;
	ukp_syms.scanned = true;
	/* Without counters (never on glibc) every query rescans. */
	ukp_syms.adds = sc.have_counters ? sc.adds : 0;
	ukp_syms.subs = sc.have_counters ? sc.subs : ~0ULL;
	/* the hit's unwinder follows the loader too */
	ukp_stacktrace_objects_changed();
	goto out;

undo:
	/* obj_new() took path and segs from the entries: give them back
	 * to nobody, the records own them and are freed here. */
	while (created) {
		struct ukp_objent *o = created;

		created = o->next_all;
		obj_free(o);
	}
out:
	free(live);
	scan_free(&sc);
	return err;
}

/*
 * [reg] Make the cache match the loader. Cheap when the loader's
 * counters did not move. Skipped inside a for_each walk, whose callback
 * must not see the arrays it walks freed.
 */
static int objects_sync(void)
{
	struct ukp_scan sc = { 0 };

	if (ukp_syms.iter_depth)
		return 0;
	if (ukp_syms.scanned) {
		ukp_iterate_objects(peek_counters_cb, &sc);
		if (sc.have_counters && sc.adds == ukp_syms.adds && sc.subs == ukp_syms.subs)
			return 0;
	}
	return objects_rescan();
}

/* [reg] The live object containing addr in one of its PT_LOAD segments. */
static struct ukp_objent *live_of(uintptr_t addr, const struct ukp_seg **segp)
{
	size_t i, j;

	for (i = 0; i < ukp_syms.nlive; i++) {
		struct ukp_objent *o = ukp_syms.live[i];

		for (j = 0; j < o->nsegs; j++) {
			if (addr >= o->segs[j].start && addr < o->segs[j].end) {
				if (segp)
					*segp = &o->segs[j];
				return o;
			}
		}
	}
	return NULL;
}

/* Does an "object" part of a spec name o? */
static bool obj_matches(const struct ukp_objent *o, const char *name)
{
	const char *real = o->realpath ? o->realpath : o->pub.is_main ? o->pub.path : NULL;
	char named[PATH_MAX];

	if (!strcmp(o->pub.name, name) || !strcmp(o->pub.path, name) ||
	    !strcmp(o->realname, name) || (o->realpath && !strcmp(o->realpath, name)))
		return true;
	if (o->pub.is_main && ukp_main_answers_to(name))
		return true;
	/* another path to the same file: relative, or through a symlink */
	if (!strchr(name, '/') || !real)
		return false;
	return !ukp_sys_realpath(name, named, sizeof(named)) && !strcmp(named, real);
}

/* ------------------------------------------------------------------ */
/* IFUNC symbols                                                      */
/* ------------------------------------------------------------------ */

/* [reg] The live object with addr in an executable segment, or NULL. */
static struct ukp_objent *text_owner(uintptr_t addr)
{
	const struct ukp_seg *seg;
	struct ukp_objent *o = live_of(addr, &seg);

	return o && seg->exec ? o : NULL;
}

/* [reg] The FDE of t's unwind tables that starts at addr, or NULL. */
static const struct ukp_fde *fde_at(struct ukp_objent *t, uintptr_t addr)
{
	size_t lo = 0, hi;

	if (!t->eh) {
		t->eh = calloc(1, sizeof(*t->eh));
		if (!t->eh)
			return NULL;
		/* on -EILSEQ the FDEs read before the error still count */
		ukp_eh_frame_load(&t->pub, t->eh);
	}
	hi = t->eh->nfdes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->eh->fdes[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->eh->nfdes && t->eh->fdes[lo].start == addr ? &t->eh->fdes[lo] : NULL;
}

/*
 * [reg] Make sure a symbol names the implementation at impl, so that it
 * can be probed and shown: when neither the object's symbols nor its
 * debug file's do (a stripped library without its debug package), add
 * "NAME.impl" (NAME: the IFUNC's), sized by the FDE that starts there
 * (else running to the next symbol or the end of its segment, unsized).
 */
static int impl_symbol(uintptr_t impl, const char *ifunc_name)
{
	size_t keylen = strcspn(ifunc_name, "@"), lo = 0, hi;
	const struct ukp_seg *seg;
	struct ukp_objent *t = live_of(impl, &seg);
	const struct ukp_sym *s;
	const struct ukp_fde *fde;
	struct ukp_sym *impls, *n;
	uintptr_t end;
	char *name;
	int err;

	if (!t)
		return -ENOENT;
	err = obj_load_full(t);
	if (err)
		return err;
	s = obj_sym_at(t, impl);
	if (s && (s->start == impl || s->sized))
		return 0;
	end = seg->end;
	hi = t->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= impl)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->nsyms && t->syms[lo].start < end)
		end = t->syms[lo].start;
	fde = fde_at(t, impl);
	name = malloc(keylen + sizeof(".impl"));
	impls = realloc(t->impls, (t->nimpls + 1) * sizeof(*impls));
	if (impls)
		t->impls = impls;
	if (!name || !impls) {
		free(name);
		return -ENOMEM;
	}
	memcpy(name, ifunc_name, keylen);
	strcpy(name + keylen, ".impl");
	n = &t->impls[t->nimpls++];
	memset(n, 0, sizeof(*n));
	n->start = impl;
	n->sized = fde && fde->end > impl;
	n->size = n->sized ? fde->end - impl : end - impl;
	n->sec_end = impl + n->size;
	n->name = name;
	n->keylen = keylen + sizeof(".impl") - 1;
	n->bind = STB_LOCAL;
	n->type = STT_FUNC;
	return 0;
}

/*
 * [reg] The implementation the IFUNC whose resolver is at resolver (in
 * o, named name) stands for in this process, as gdb finds it. First the
 * word the dynamic linker itself set from the resolver (an IRELATIVE
 * relocation of o's: no code runs); else, for an exported IFUNC (global),
 * the resolver is called as the dynamic linker calls it to bind other
 * objects' references (dlsym() would do the same). A local IFUNC with no
 * IRELATIVE relocation is never called through: its resolver is not run
 * (glibc's __x86_cacheinfo is a resolver run for its side effects) and
 * the answer is -ENOENT. The answer is kept: a resolver's choice does not
 * change in a process.
 */
static int ifunc_resolve(struct ukp_objent *o, uintptr_t resolver, const char *name,
			 bool global, uintptr_t *impl)
{
	size_t lo, i;
	uintptr_t v = 0;
	int err;

	for (i = 0; i < o->nifuncs; i++) {
		if (o->ifuncs[i].resolver == resolver) {
			v = o->ifuncs[i].impl;
			goto found;
		}
	}
	lo = UKP_LOWER_BOUND(o->irel, o->nirel, resolver, resolver);
	if (lo < o->nirel && o->irel[lo].resolver == resolver &&
	    obj_range_mapped(o, o->irel[lo].slot, sizeof(v)))
		memcpy(&v, (const void *)o->irel[lo].slot, sizeof(v));
	if (!text_owner(v) && global)
		v = arch_ifunc_resolve(resolver);
	if (!text_owner(v))
		return -ENOENT;
	if (o->nifuncs == o->cap_ifuncs) {
		size_t cap = o->cap_ifuncs ? o->cap_ifuncs * 2 : 16;
		struct ukp_ifunc *f = realloc(o->ifuncs, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		o->ifuncs = f;
		o->cap_ifuncs = cap;
	}
	o->ifuncs[o->nifuncs].resolver = resolver;
	o->ifuncs[o->nifuncs].impl = v;
	o->nifuncs++;
found:
	err = impl_symbol(v, name);
	if (!err)
		*impl = v;
	return err;
}

/* ------------------------------------------------------------------ */
/* Interface                                                          */
/* ------------------------------------------------------------------ */

bool ukp_objects_refresh(void)
{
	bool removed;

	objects_sync();
	removed = ukp_syms.removed_pending;
	ukp_syms.removed_pending = false;
	return removed;
}

uint64_t ukp_objects_generation(void)
{
	objects_sync();
	return ukp_syms.gen;
}

void ukp_objects_pin(void)
{
	objects_sync();
	ukp_syms.iter_depth++;
}

void ukp_objects_unpin(void)
{
	ukp_syms.iter_depth--;
}

/*
 * [reg] "object:sym" or "sym" split: *objname (malloc'ed, NULL without
 * object) and *sym (into spec). -ENOENT when either part is empty or no
 * loaded object is named so, -ENOMEM.
 */
static int spec_split(const char *spec, char **objname, const char **sym)
{
	const char *colon = strrchr(spec, ':');
	size_t i;

	*objname = NULL;
	*sym = colon ? colon + 1 : spec;
	if (!**sym || colon == spec)
		return -ENOENT;
	if (!colon)
		return 0;
	*objname = strndup(spec, (size_t)(colon - spec));
	if (!*objname)
		return -ENOMEM;
	for (i = 0; i < ukp_syms.nlive; i++)
		if (obj_matches(ukp_syms.live[i], *objname))
			return 0;
	free(*objname);
	*objname = NULL;
	return -ENOENT;
}

int ukp_sym_lookup_name_ifunc(const char *spec, uintptr_t *addr, bool *ifunc)
{
	const char *sym;
	char *objname = NULL;
	int round, pass, err;
	size_t i;

	if (ifunc)
		*ifunc = false;
	if (!spec || !addr)
		return -ENOENT;
	err = objects_sync();
	if (err)
		return err;
	err = spec_split(spec, &objname, &sym);
	if (err)
		return err;
	err = -ENOENT;

	/* Globals in load order first (what the dynamic linker would
	 * bind), then statics; the objects' own tables first, their
	 * debug files only when those miss. */
	for (round = 0; round < 2; round++) {
		for (pass = 0; pass < 2; pass++) {
			for (i = 0; i < ukp_syms.nlive; i++) {
				struct ukp_objent *o = ukp_syms.live[i];
				const struct ukp_sym *s;
				int ret;

				if (objname && !obj_matches(o, objname))
					continue;
				ret = round ? obj_load_full(o) : obj_load_syms(o);
				if (ret) {
					err = ret;
					goto out;
				}
				s = obj_sym_named(o, sym, pass == 0);
				if (!s)
					continue;
				if (s->type == STT_GNU_IFUNC) {
					/* the code the process runs, not the resolver */
					err = ifunc_resolve(o, s->start, s->name,
							    s->bind != STB_LOCAL, addr);
					if (!err && ifunc)
						*ifunc = true;
					goto out;
				}
				*addr = s->start;
				err = 0;
				goto out;
			}
		}
	}
out:
	free(objname);
	return err;
}

int ukp_data_lookup_name(const char *spec, struct ukp_symres *res)
{
	const char *sym;
	char *objname;
	int round, pass, err;
	size_t i;

	if (!spec || !res)
		return -ENOENT;
	err = objects_sync();
	if (!err)
		err = spec_split(spec, &objname, &sym);
	if (err)
		return err;
	/* as for functions: globals in load order, then statics; the debug
	 * files only when the objects' own tables miss */
	err = -ENOENT;
	for (round = 0; round < 2 && err == -ENOENT; round++) {
		for (pass = 0; pass < 2 && err == -ENOENT; pass++) {
			for (i = 0; i < ukp_syms.nlive && err == -ENOENT; i++) {
				struct ukp_objent *o = ukp_syms.live[i];
				const struct ukp_sym *s;
				int ret;

				if (objname && !obj_matches(o, objname))
					continue;
				ret = round ? obj_load_full(o) : obj_load_syms(o);
				if (ret) {
					err = ret;
					break;
				}
				s = obj_data_named(o, sym, pass == 0);
				if (s) {
					fill_dres(o, s, res);
					err = 0;
				}
			}
		}
	}
	free(objname);
	return err;
}

/*
 * [reg] The function (data: the variable) of a live object containing
 * addr: from the object's own symbol table, else (a local one of a
 * stripped object, or a function symbol without a size that does not
 * start at addr) from its debug file.
 */
static int lookup_addr(uintptr_t addr, struct ukp_symres *res, bool data)
{
	struct ukp_objent *o;
	const struct ukp_sym *s;
	int err;

	err = objects_sync();
	if (err)
		return err;
	o = live_of(addr, NULL);
	if (!o)
		return -ENOENT;
	err = obj_load_syms(o);
	if (err)
		return err;
	s = data ? obj_dsym_at(o, addr) : obj_sym_at(o, addr);
	if (!s || (!data && !s->sized && s->start != addr)) {
		err = obj_load_full(o);
		if (err)
			return err;
		s = data ? obj_dsym_at(o, addr) : obj_sym_at(o, addr);
	}
	if (!s)
		return -ENOENT;
	if (data)
		fill_dres(o, s, res);
	else
		fill_res(o, s, res);
	return 0;
}

int ukp_data_lookup_addr(uintptr_t addr, struct ukp_symres *res)
{
	return lookup_addr(addr, res, true);
}

bool ukp_sym_go_code(const struct ukp_symres *sym, uintptr_t addr)
{
	struct ukp_objent *o;

	if (!sym || !sym->obj)
		return false;
	o = to_ent(sym->obj);
	if (!o->go_checked && !obj_load_syms(o)) {
		const struct ukp_sym *t = obj_sym_named(o, "runtime.text", false);
		const struct ukp_sym *e = t ? obj_sym_named(o, "runtime.etext", false) : NULL;

		o->go_checked = true;
		if (e && e->start > t->start) {
			o->go_text = t->start;
			o->go_etext = e->start;
		}
	}
	return addr >= o->go_text && addr < o->go_etext;
}

int ukp_sym_lookup_name(const char *spec, uintptr_t *addr)
{
	return ukp_sym_lookup_name_ifunc(spec, addr, NULL);
}

int ukp_sym_ifunc_impl(const struct ukp_symres *sym, uintptr_t *impl)
{
	struct ukp_objent *o;

	if (!sym || !sym->obj || !sym->ifunc || !impl)
		return -EINVAL;
	o = to_ent(sym->obj);
	if (!o->alive)
		return -ENOENT;
	return ifunc_resolve(o, sym->start, sym->name, sym->global, impl);
}

int ukp_sym_ifunc_impl_at(uintptr_t resolver, const char *name, uintptr_t *impl)
{
	const struct ukp_sym *s = NULL;
	struct ukp_objent *o;
	int global;

	if (!name || !impl)
		return -EINVAL;
	objects_sync();
	o = live_of(resolver, NULL);
	if (!o || obj_load_full(o))
		return -ENOENT;
	for (global = 1; global >= 0 && !s; global--) {
		s = obj_sym_named(o, name, global);
		if (s && (s->start != resolver || s->type != STT_GNU_IFUNC))
			s = NULL;
	}
	if (!s)
		return -ENOENT;
	return ifunc_resolve(o, resolver, s->name, s->bind != STB_LOCAL, impl);
}

int ukp_sym_lookup_addr(uintptr_t addr, struct ukp_symres *res)
{
	return lookup_addr(addr, res, false);
}

const struct ukp_object *ukp_object_named(const char *name)
{
	size_t i;

	objects_sync();
	for (i = 0; i < ukp_syms.nlive; i++)
		if (obj_matches(ukp_syms.live[i], name))
			return &ukp_syms.live[i]->pub;
	return NULL;
}

const struct ukp_object *ukp_object_of(uintptr_t addr)
{
	struct ukp_objent *o;

	objects_sync();
	o = live_of(addr, NULL);
	return o ? &o->pub : NULL;
}

bool ukp_addr_is_text(uintptr_t addr, size_t len)
{
	const struct ukp_seg *seg;

	/* (the freestanding agent's image: its hit path's own code, which
	 * the vector-free proof walks) */
	if (addr >= ukp_self_text_lo && addr < ukp_self_text_hi)
		return (len ? len : 1) <= ukp_self_text_hi - addr;
	objects_sync();
	if (!live_of(addr, &seg))
		return false;
	if (!len)
		len = 1;
	return seg->exec && len <= seg->end - addr;
}

bool ukp_object_alive(const struct ukp_object *obj)
{
	struct ukp_objent *o;

	if (!obj)
		return false;
	objects_sync();
	/* Only trust pointers we handed out (and still own). */
	for (o = ukp_syms.all; o; o = o->next_all)
		if (&o->pub == obj)
			return o->alive;
	return false;
}

/*
 * [reg] o's blacklist section (bl_addr, bl_size) from its file's section
 * headers, as obj_load_syms notes it, without reading its symbols: only
 * an object with one needs them for the list (most have none).
 */
static void obj_find_blacklist(struct ukp_objent *o)
{
	struct ukp_elf elf = { 0 };
	size_t idx;

	if (o->syms_state == UKP_SYMS_READ || o->bl_looked)
		return;
	o->bl_looked = true;
	if (!o->file || !o->alive || obj_open_elf(o, &elf, NULL))
		return;
	for (idx = 1; idx < elf.shnum; idx++)
		blacklist_section(o, &elf, ukp_elf_shdr(&elf, idx));
	ukp_elf_close(&elf);
}

size_t ukp_for_each_nokprobe(ukp_range_fn fn, void *arg)
{
	size_t i, count = 0;

	ukp_objects_pin();
	for (i = 0; i < ukp_syms.nlive; i++) {
		struct ukp_objent *o = ukp_syms.live[i];
		size_t k;

		obj_find_blacklist(o);
		if (!o->bl_addr || obj_load_syms(o) || !o->bl_addr)
			continue;
		for (k = 0; k + sizeof(uintptr_t) <= o->bl_size; k += sizeof(uintptr_t)) {
			struct ukp_objent *target;
			const struct ukp_sym *s;
			uintptr_t fnaddr;

			/* Relocated by the loader: read memory, not the file. */
			memcpy(&fnaddr, (const void *)(o->bl_addr + k), sizeof(fnaddr));
			/* The entry may point into another object (an
			 * interposed definition): resolve it where it is. */
			target = live_of(fnaddr, NULL);
			if (!target || obj_load_syms(target))
				continue;
			s = obj_sym_at(target, fnaddr);
			if (!s)
				continue;
			if (fn)
				fn(s->start, s->start + s->size, s->name, arg);
			count++;
		}
	}
	ukp_objects_unpin();
	return count;
}

void ukp_for_each_symbol(const char *object, ukp_sym_fn fn, void *arg)
{
	ukp_for_each_symbol_kind(object, false, fn, arg);
}

/* [reg] Every function of o (the debug file's too), then with data its
 * data symbols. */
static void obj_walk(struct ukp_objent *o, bool data, ukp_sym_fn fn, void *arg)
{
	size_t k;

	if (obj_load_full(o))
		return;
	o->walking++;
	for (k = 0; k < o->nsyms; k++) {
		struct ukp_symres res;

		fill_res(o, &o->syms[k], &res);
		fn(&res, arg);
	}
	for (k = 0; data && k < o->ndsyms; k++) {
		struct ukp_symres res;

		fill_dres(o, &o->dsyms[k], &res);
		fn(&res, arg);
	}
	o->walking--;
}

void ukp_for_each_symbol_kind(const char *object, bool data, ukp_sym_fn fn, void *arg)
{
	size_t i;

	if (!fn)
		return;
	ukp_objects_pin();
	for (i = 0; i < ukp_syms.nlive; i++) {
		struct ukp_objent *o = ukp_syms.live[i];

		if (!object || obj_matches(o, object))
			obj_walk(o, data, fn, arg);
	}
	ukp_objects_unpin();
}

/* ------------------------------------------------------------------ */
/* Files not loaded                                                   */
/* ------------------------------------------------------------------ */

/* The ELF header of the object the library is linked into (the linker
 * defines it): the machine a file must be for. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

/*
 * [reg] A record for the ELF file at path (a real path) as if it were
 * loaded at 0: its PT_LOAD segments from its program headers, so that
 * everything above (file_matches_image, the debug file's sections judged
 * by the segments) works on it unchanged. -ENOEXEC when it is not a
 * 64-bit ELF object for this machine with segments, -ENOENT, -ENOMEM.
 */
static int file_new(const char *path, const struct stat *st, struct ukp_objent **out)
{
	struct ukp_objent *o;
	struct ukp_elf elf = { 0 };
	size_t phnum = 0, i, nload = 0;
	bool is_elf;
	int fd, err = -ENOEXEC;

	fd = ukp_sys_open(path, O_RDONLY);
	if (fd < 0)
		return fd;
	is_elf = !ukp_elf_open_fd(&elf, fd);
	ukp_sys_close(fd);
	o = calloc(1, sizeof(*o));
	if (!o) {
		err = -ENOMEM;
		goto out;
	}
	if (!is_elf || elf.ehdr->e_machine != __ehdr_start.e_machine)
		goto out;
	phnum = elf.phnum;
	o->segs = calloc(phnum ? phnum : 1, sizeof(*o->segs));
	o->pub.path = strdup(path);
	o->realpath = strdup(path);
	if (!o->segs || !o->pub.path || !o->realpath) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(&elf, i);

		if (ph.p_type != PT_LOAD)
			continue;
		o->segs[nload].start = ph.p_vaddr;
		o->segs[nload].end = ph.p_vaddr + ph.p_memsz;
		o->segs[nload].exec = ph.p_flags & PF_X;
		o->segs[nload].write = ph.p_flags & PF_W;
		nload++;
	}
	if (!nload)
		goto out;
	o->nsegs = nload;
	o->pub.name = base_name(o->pub.path);
	o->realname = base_name(o->realpath);
	o->file = o->pub.path;
	o->alive = true;
	o->syms_state = UKP_SYMS_UNREAD;
	o->dev = st->st_dev;
	o->ino = st->st_ino;
	o->fsize = st->st_size;
	o->mtime = st->st_mtim;
	*out = o;
	o = NULL;
	err = 0;
out:
	if (o)
		obj_free(o);
	ukp_elf_close(&elf);
	return err;
}

const struct ukp_object *ukp_file_object(const char *path, int *err)
{
	struct ukp_objent *o, **pp;
	struct stat st;

	*err = ukp_sys_stat(path, &st);
	if (*err)
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		*err = -ENOEXEC;
		return NULL;
	}
	for (pp = &ukp_syms.files; (o = *pp) != NULL; pp = &o->next_file) {
		if (strcmp(o->pub.path, path))
			continue;
		if (o->dev == st.st_dev && o->ino == st.st_ino && o->fsize == st.st_size &&
		    o->mtime.tv_sec == st.st_mtim.tv_sec && o->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			*err = 0;
			return &o->pub;
		}
		/* another file now (a rebuilt plugin): read it again */
		*pp = o->next_file;
		obj_free(o);
		break;
	}
	*err = file_new(path, &st, &o);
	if (*err)
		return NULL;
	o->next_file = ukp_syms.files;
	ukp_syms.files = o;
	return &o->pub;
}

int ukp_file_sym_named(const struct ukp_object *obj, const char *name, bool data,
		       struct ukp_symres *res)
{
	struct ukp_objent *o = to_ent(obj);
	const struct ukp_sym *s = NULL;
	int round, pass, err;

	/* as ukp_sym_lookup_name() in one object: globals, then locals;
	 * the file's own table, then its debug file's */
	for (round = 0; round < 2 && !s; round++) {
		err = round ? obj_load_full(o) : obj_load_syms(o);
		if (err)
			return err;
		for (pass = 0; pass < 2 && !s; pass++)
			s = data ? obj_data_named(o, name, pass == 0)
				 : obj_sym_named(o, name, pass == 0);
	}
	if (!s)
		return -ENOENT;
	if (data)
		fill_dres(o, s, res);
	else
		fill_res(o, s, res);
	return 0;
}

void ukp_file_for_each_symbol(const struct ukp_object *obj, bool data, ukp_sym_fn fn, void *arg)
{
	if (fn)
		obj_walk(to_ent(obj), data, fn, arg);
}

bool ukp_object_seg(const struct ukp_object *obj, size_t i, uintptr_t *start, uintptr_t *end,
		    bool *exec)
{
	const struct ukp_objent *o = to_ent(obj);

	if (i >= o->nsegs)
		return false;
	*start = o->segs[i].start;
	*end = o->segs[i].end;
	*exec = o->segs[i].exec;
	return true;
}

void ukp_symbols_set_names_hook(void (*fn)(const struct ukp_object *obj))
{
	names_hook = fn;
}

void ukp_symbols_reset(void)
{
	struct ukp_objent *o = ukp_syms.all;

	if (names_hook)
		names_hook(NULL);
	while (o) {
		struct ukp_objent *next = o->next_all;

		obj_free(o);
		o = next;
	}
	for (o = ukp_syms.files; o;) {
		struct ukp_objent *next = o->next_file;

		obj_free(o);
		o = next;
	}
	ukp_syms.files = NULL;
	free(ukp_syms.live);
	ukp_syms.live = NULL;
	ukp_syms.nlive = 0;
	ukp_syms.all = NULL;
	ukp_syms.scanned = false;
	ukp_syms.removed_pending = false;
	/* Keep the generation moving: cached generations must not match a
	 * list rebuilt from scratch. */
	ukp_syms.gen++;
}

/* ------------------------------------------------ for usdt.c */

struct ukp_usdt_notes **ukp_object_usdt(const struct ukp_object *obj)
{
	return &to_ent(obj)->usdt;
}

int ukp_object_elf(const struct ukp_object *obj, struct ukp_elf *elf)
{
	return obj_open_elf(to_ent(obj), elf, NULL);
}

const struct ukp_object *ukp_object_nth(size_t i)
{
	if (i == 0)
		objects_sync();
	return i < ukp_syms.nlive ? &ukp_syms.live[i]->pub : NULL;
}

bool ukp_object_matches(const struct ukp_object *obj, const char *name)
{
	return obj_matches(to_ent(obj), name);
}

bool ukp_object_data(const struct ukp_object *obj, uintptr_t addr, size_t len)
{
	const struct ukp_objent *o = to_ent(obj);
	size_t i;

	for (i = 0; i < o->nsegs; i++)
		if (!o->segs[i].exec && addr >= o->segs[i].start && addr + len <= o->segs[i].end)
			return true;
	return false;
}

int ukp_sym_lookup_code(uintptr_t addr, struct ukp_symres *res)
{
	struct ukp_objent *t;
	size_t lo = 0, hi;
	int err = ukp_sym_lookup_addr(addr, res);

	if (err != -ENOENT)
		return err;
	t = text_owner(addr);
	if (!t)
		return -ENOENT;
	if (!t->eh) {
		t->eh = calloc(1, sizeof(*t->eh));
		if (!t->eh)
			return -ENOMEM;
		ukp_eh_frame_load(&t->pub, t->eh);
	}
	/* the last FDE that starts at or before addr */
	hi = t->eh->nfdes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->eh->fdes[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || t->eh->fdes[lo - 1].end <= addr)
		return -ENOENT;
	*res = (struct ukp_symres){ .obj = &t->pub, .name = "",
				    .start = t->eh->fdes[lo - 1].start,
				    .size = t->eh->fdes[lo - 1].end - t->eh->fdes[lo - 1].start };
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * script_map.c - `ukprobe run`'s compiled script in a static program
 * (the freestanding agent only): the shared object mapped from its file
 * and bound to the agent here, as dlopen() does it in a dynamic program
 * (script.c), with no loader and nothing of the program's C library.
 *
 * The object is small and made by ukprobe (tools/ukprobe/script/build.c:
 * -fPIC -shared -z now): its segments are mapped from the file (so that
 * the maps name it, as a dlopen()ed one's do), its relocations applied
 * at once (relative ones, and symbol addresses: GLOB_DAT, JUMP_SLOT,
 * ABS64), PT_GNU_RELRO made read-only. A symbol it needs is its own, or
 * one of the agent's below (the script ABI, common/script_abi.h, and the
 * few C library functions the generated code calls, the agent's own
 * copies); any other is refused by name. Its DT_NEEDED C library is
 * never loaded, no constructor runs (those of the compiler's start files
 * only register what is absent here), no TLS, no IFUNC.
 *
 * Context: [init] (the session's thread, or the constructors' at a
 * launch); one script at a time.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"
#include "elf_reloc.h"
#include "objects_changed.h"
#include "script_abi.h"

#define MAX_PH 16

#ifndef DT_RELR
#define DT_RELRSZ 35
#define DT_RELR 36
#endif

/* what the generated code may call besides the script ABI (runtime.h,
 * gen.c: syscall(), getpid(), sysconf(), madvise(); the compiler may
 * emit the memory functions) */
long syscall(long n, ...);

static const struct {
	const char *name;
	void *addr;
} agent_syms[] = {
	{ "ukpa_script_thread", (void *)ukpa_script_thread },
	{ "ukpa_script_emit", (void *)ukpa_script_emit },
	{ "ukpa_script_send", (void *)ukpa_script_send },
	{ "ukpa_script_block", (void *)ukpa_script_block },
	{ "ukpa_script_ustack", (void *)ukpa_script_ustack },
	{ "ukpa_script_sym", (void *)ukpa_script_sym },
	{ "ukpa_script_arg", (void *)ukpa_script_arg },
	{ "ukpa_script_exit", (void *)ukpa_script_exit },
	/* the library's, as the dynamic agent exports them */
	{ "copy_from_user_nofault", (void *)copy_from_user_nofault },
	{ "get_kretprobe", (void *)get_kretprobe },
	{ "syscall", (void *)syscall },
	{ "getpid", (void *)getpid },
	{ "sysconf", (void *)sysconf },
	{ "madvise", (void *)madvise },
	{ "memcpy", (void *)memcpy },
	{ "memmove", (void *)memmove },
	{ "memset", (void *)memset },
	{ "memcmp", (void *)memcmp },
	{ "strlen", (void *)strlen },
	{ "strcmp", (void *)strcmp },
	{ "strncmp", (void *)strncmp },
};

static struct {
	unsigned char *base;      /* the reservation */
	size_t len;
} cur;

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

struct obj {
	uintptr_t bias;           /* the load address minus the lowest vaddr page */
	const Elf64_Phdr *ph;
	int nph;
	const Elf64_Sym *sym;
	size_t nsyms;
	const char *str;
	size_t strsz;
};

/* Is [v, v + n) inside a PT_LOAD segment (writable: a writable one)? */
static bool in_seg(const struct obj *o, uint64_t v, uint64_t n, bool writable)
{
	int i;

	for (i = 0; i < o->nph; i++)
		if (o->ph[i].p_type == PT_LOAD && v >= o->ph[i].p_vaddr &&
		    n <= o->ph[i].p_memsz && v - o->ph[i].p_vaddr <= o->ph[i].p_memsz - n &&
		    (!writable || (o->ph[i].p_flags & PF_W)))
			return true;
	return false;
}

static const char *sym_name(const struct obj *o, const Elf64_Sym *s)
{
	return s->st_name < o->strsz ? o->str + s->st_name : NULL;
}

/* The address symbol si stands for: the object's own definition, else
 * the agent's; 0 with *ok for an absent weak one. */
static int bind_sym(const struct obj *o, uint32_t si, uint64_t *v, char *err, size_t errlen)
{
	const Elf64_Sym *s;
	const char *name;
	size_t i;

	if (!si || si >= o->nsyms)
		return fail(err, errlen, "a relocation names symbol %u, which it does not have", si);
	s = &o->sym[si];
	name = sym_name(o, s);
	if (!name)
		return fail(err, errlen, "symbol %u's name is outside its strings", si);
	if (ELF64_ST_TYPE(s->st_info) == STT_TLS || ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC)
		return fail(err, errlen, "%s is %s: not for this loader", name,
			    ELF64_ST_TYPE(s->st_info) == STT_TLS ? "thread-local" : "an IFUNC");
	if (s->st_shndx != SHN_UNDEF) {
		*v = s->st_shndx == SHN_ABS ? s->st_value : o->bias + s->st_value;
		return 0;
	}
	for (i = 0; i < sizeof(agent_syms) / sizeof(agent_syms[0]); i++)
		if (!strcmp(agent_syms[i].name, name)) {
			*v = (uint64_t)(uintptr_t)agent_syms[i].addr;
			return 0;
		}
	if (ELF64_ST_BIND(s->st_info) == STB_WEAK) {
		*v = 0;
		return 0;
	}
	return fail(err, errlen, "it needs %s, which the freestanding agent does not give a "
		    "script", name);
}

static int relocate(const struct obj *o, const Elf64_Rela *r, size_t n, char *err,
		    size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t type = ELF64_R_TYPE(r[i].r_info);
		uint64_t v = 0;

		if (!type)
			continue;
		if (!in_seg(o, r[i].r_offset, 8, true))
			return fail(err, errlen, "relocation %zu is outside its writable segments", i);
		if (type == UKPA_R_RELATIVE) {
			v = o->bias + (uint64_t)r[i].r_addend;
		} else if (type == UKPA_R_GLOB_DAT || type == UKPA_R_JUMP_SLOT ||
			   type == UKPA_R_ABS64) {
			if (bind_sym(o, ELF64_R_SYM(r[i].r_info), &v, err, errlen))
				return -1;
			if (type == UKPA_R_ABS64 || v)
				v += (uint64_t)r[i].r_addend;
		} else {
			return fail(err, errlen, "relocation %zu is of type %u, which this loader "
				    "does not apply", i, type);
		}
		memcpy((void *)(o->bias + r[i].r_offset), &v, 8);
	}
	return 0;
}

/* RELR: an address, then bitmaps of the 63 words after it */
static int relocate_relr(const struct obj *o, const uint64_t *relr, size_t n, char *err,
			 size_t errlen)
{
	uint64_t where = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t e = relr[i], w;

		if (!(e & 1)) {
			if (!in_seg(o, e, 8, true))
				return fail(err, errlen, "a RELR relocation is outside its segments");
			*(uint64_t *)(o->bias + e) += o->bias;
			where = e + 8;
			continue;
		}
		for (w = where, e >>= 1; e; e >>= 1, w += 8)
			if (e & 1) {
				if (!in_seg(o, w, 8, true))
					return fail(err, errlen,
						    "a RELR relocation is outside its segments");
				*(uint64_t *)(o->bias + w) += o->bias;
			}
		where += 63 * 8;
	}
	return 0;
}

/* Is the needed library the C library or its loader (never loaded: the
 * agent binds what the script takes from it)? */
static bool libc_name(const char *n)
{
	return !strncmp(n, "libc.so", 7) || !strncmp(n, "ld-linux", 8) ||
	       !strncmp(n, "ld64.so", 7);
}

static int link_obj(struct obj *o, uint64_t dyn, uint64_t dynsz, char *err, size_t errlen)
{
	const Elf64_Dyn *d = (const Elf64_Dyn *)(o->bias + dyn);
	uint64_t rela = 0, relasz = 0, jmprel = 0, pltsz = 0, relr = 0, relrsz = 0;
	uint64_t symtab = 0, strtab = 0;
	size_t i;

	if (!in_seg(o, dyn, dynsz, false))
		return fail(err, errlen, "its dynamic section is outside its segments");
	for (i = 0; i < dynsz / sizeof(*d) && d[i].d_tag != DT_NULL; i++)
		switch (d[i].d_tag) {
		case DT_RELA: rela = d[i].d_un.d_ptr; break;
		case DT_RELASZ: relasz = d[i].d_un.d_val; break;
		case DT_JMPREL: jmprel = d[i].d_un.d_ptr; break;
		case DT_PLTRELSZ: pltsz = d[i].d_un.d_val; break;
		case DT_RELR: relr = d[i].d_un.d_ptr; break;
		case DT_RELRSZ: relrsz = d[i].d_un.d_val; break;
		case DT_SYMTAB: symtab = d[i].d_un.d_ptr; break;
		case DT_STRTAB: strtab = d[i].d_un.d_ptr; break;
		case DT_STRSZ: o->strsz = d[i].d_un.d_val; break;
		case DT_PLTREL:
			if (d[i].d_un.d_val != DT_RELA)
				return fail(err, errlen, "it has REL relocations");
			break;
		case DT_REL:
		case DT_RELSZ:
		case DT_TEXTREL:
			return fail(err, errlen, "it has %s", d[i].d_tag == DT_TEXTREL ?
				    "text relocations" : "REL relocations");
		default: break;
		}
	if (!symtab || !strtab || !in_seg(o, strtab, o->strsz, false) ||
	    !in_seg(o, symtab, o->nsyms * sizeof(Elf64_Sym), false))
		return fail(err, errlen, "its dynamic symbol table is malformed");
	o->sym = (const Elf64_Sym *)(o->bias + symtab);
	o->str = (const char *)(o->bias + strtab);
	for (i = 0; i < dynsz / sizeof(*d) && d[i].d_tag != DT_NULL; i++)
		if (d[i].d_tag == DT_NEEDED) {
			const char *n = d[i].d_un.d_val < o->strsz ? o->str + d[i].d_un.d_val : "?";

			if (!libc_name(n))
				return fail(err, errlen, "it needs the library %s: a script may need "
					    "the C library only", n);
		}
	if ((relasz && !in_seg(o, rela, relasz, false)) ||
	    (pltsz && !in_seg(o, jmprel, pltsz, false)) ||
	    (relrsz && !in_seg(o, relr, relrsz, false)))
		return fail(err, errlen, "its relocations are malformed");
	if (relocate(o, (const Elf64_Rela *)(o->bias + rela), relasz / sizeof(Elf64_Rela), err,
		     errlen) ||
	    relocate(o, (const Elf64_Rela *)(o->bias + jmprel), pltsz / sizeof(Elf64_Rela), err,
		     errlen))
		return -1;
	return relocate_relr(o, (const uint64_t *)(o->bias + relr), relrsz / 8, err, errlen);
}

void ukpa_script_unmap(void *h)
{
	if (h != &cur || !cur.base)
		return;
	munmap(cur.base, cur.len);
	ukp_objects_changed();
	cur.base = NULL;
	cur.len = 0;
}

void *ukpa_script_map(const char *path, const void **desc, char *err, size_t errlen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PH];
	Elf64_Shdr sh;
	struct obj o = { .ph = ph };
	uint64_t lo = ~0ULL, hi = 0, dyn = 0, dynsz = 0, relro = 0, relro_end = 0;
	void *base = NULL;
	int fd, i, ret = -1;
	size_t k;

	*desc = NULL;
	if (cur.base)
		return fail(err, errlen, "%s: a script is mapped already", path), NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fail(err, errlen, "%s: cannot be opened: %s", path, strerror(errno));
		return NULL;
	}
	ret = -1;
	if (pread(fd, &eh, sizeof(eh), 0) != (long)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != UKPA_EM || eh.e_type != ET_DYN || eh.e_phentsize != sizeof(ph[0]) ||
	    eh.e_phnum > MAX_PH ||
	    pread(fd, ph, eh.e_phnum * sizeof(ph[0]), eh.e_phoff) !=
		    (long)(eh.e_phnum * sizeof(ph[0]))) {
		fail(err, errlen, "%s: not a shared object of this architecture", path);
		goto out;
	}
	o.nph = eh.e_phnum;
	for (i = 0; i < o.nph; i++) {
		if (ph[i].p_type == PT_INTERP || ph[i].p_type == PT_TLS) {
			fail(err, errlen, "%s: it has %s", path, ph[i].p_type == PT_TLS ?
			     "thread-local storage" : "an interpreter");
			goto out;
		}
		if (ph[i].p_type == PT_DYNAMIC) {
			dyn = ph[i].p_vaddr;
			dynsz = ph[i].p_memsz;
		} else if (ph[i].p_type == PT_GNU_RELRO) {
			relro = ph[i].p_vaddr & ~(uint64_t)(page - 1);
			relro_end = (ph[i].p_vaddr + ph[i].p_memsz) & ~(uint64_t)(page - 1);
		} else if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_filesz > ph[i].p_memsz ||
			    (ph[i].p_vaddr - ph[i].p_offset) % page ||
			    ph[i].p_vaddr + ph[i].p_memsz > (1ULL << 32)) {
				fail(err, errlen, "%s: segment %d is malformed", path, i);
				goto out;
			}
			if (ph[i].p_vaddr < lo)
				lo = ph[i].p_vaddr;
			if (ph[i].p_vaddr + ph[i].p_memsz > hi)
				hi = ph[i].p_vaddr + ph[i].p_memsz;
		}
	}
	if (!hi || !dyn) {
		fail(err, errlen, "%s: no loadable segment or no dynamic section", path);
		goto out;
	}
	/* the dynamic symbols' count, from the section headers */
	for (k = 0; k < eh.e_shnum; k++)
		if (eh.e_shentsize == sizeof(sh) &&
		    pread(fd, &sh, sizeof(sh), eh.e_shoff + k * sizeof(sh)) ==
			    (long)sizeof(sh) &&
		    sh.sh_type == SHT_DYNSYM && sh.sh_entsize == sizeof(Elf64_Sym))
			o.nsyms = sh.sh_size / sizeof(Elf64_Sym);
	if (!o.nsyms) {
		fail(err, errlen, "%s: no dynamic symbol table among its sections", path);
		goto out;
	}
	lo &= ~(uint64_t)(page - 1);
	cur.len = ((hi + page - 1) & ~(uint64_t)(page - 1)) - lo;
	base = mmap(NULL, cur.len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		fail(err, errlen, "%s: no room for it: %s", path, strerror(errno));
		goto out;
	}
	cur.base = base;
	o.bias = (uintptr_t)base - lo;
	ret = -1;
	for (i = 0; i < o.nph; i++) {
		uint64_t start, fend, mend, fpage;
		int prot;

		if (ph[i].p_type != PT_LOAD)
			continue;
		prot = (ph[i].p_flags & PF_R ? PROT_READ : 0) | (ph[i].p_flags & PF_W ? PROT_WRITE : 0) |
		       (ph[i].p_flags & PF_X ? PROT_EXEC : 0);
		start = ph[i].p_vaddr & ~(uint64_t)(page - 1);
		fend = ph[i].p_vaddr + ph[i].p_filesz;
		mend = ph[i].p_vaddr + ph[i].p_memsz;
		fpage = (fend + page - 1) & ~(uint64_t)(page - 1);
		if (ph[i].p_filesz) {
			if (mmap((void *)(o.bias + start), fpage - start, prot, MAP_PRIVATE | MAP_FIXED,
				 fd, (off_t)(ph[i].p_offset - (ph[i].p_vaddr - start))) == MAP_FAILED) {
				fail(err, errlen, "%s: segment %d cannot be mapped: %s", path, i,
				     strerror(errno));
				goto out;
			}
		} else {
			fpage = start;
		}
		/* .bss: the rest of the file's last page, then pages of zeros */
		if (mend > fend && (prot & PROT_WRITE) && fpage > fend)
			memset((void *)(o.bias + fend), 0, fpage - fend);
		if (mend > fpage) {
			if (mmap((void *)(o.bias + fpage),
				 ((mend + page - 1) & ~(uint64_t)(page - 1)) - fpage, prot,
				 MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
				fail(err, errlen, "%s: segment %d cannot be mapped: %s", path, i,
				     strerror(errno));
				goto out;
			}
		}
	}
	{
		char why[200];

		if (link_obj(&o, dyn, dynsz, why, sizeof(why))) {
			fail(err, errlen, "%s: %s", path, why);
			goto out;
		}
	}
	if (relro_end > relro)
		mprotect((void *)(o.bias + relro), relro_end - relro, PROT_READ);
	for (k = 1; k < o.nsyms; k++) {
		const char *n = sym_name(&o, &o.sym[k]);

		if (n && !strcmp(n, "ukp_script") && o.sym[k].st_shndx != SHN_UNDEF &&
		    in_seg(&o, o.sym[k].st_value, sizeof(struct ukp_script_desc), false)) {
			*desc = (const void *)(o.bias + o.sym[k].st_value);
			break;
		}
	}
	if (!*desc) {
		fail(err, errlen, "%s: it has no ukp_script", path);
		goto out;
	}
	ret = 0;
	/* the library reads the objects again at its next look-up: its
	 * snapshot of /proc/self/maps may be from before the mapping, and the
	 * vector-free proof of the handlers looks their code up (a handler
	 * outside every known object is called with the vector state saved) */
	ukp_objects_changed();
out:
	close(fd);
	if (ret) {
		ukpa_script_unmap(&cur);
		return NULL;
	}
	return &cur;
}

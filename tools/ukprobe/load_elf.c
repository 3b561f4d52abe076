/* SPDX-License-Identifier: MIT */
/*
 * load_elf.c - the object ukprobe's ptrace loader maps (load.h): a static
 * PIE read into the image it will have in the process, and relocated
 * there for its load address. A static PIE has relative relocations
 * only (RELA, or RELR's packed form): the loader applies them here, so
 * the object needs no start code of its own for them.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load.h"
#include "ptrace_arch.h"

#ifndef DT_RELR
#define DT_RELRSZ 35
#define DT_RELR 36
#define DT_RELRENT 37
#endif

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s: ", path);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static int read_file(const char *path, unsigned char **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		return -EINVAL;
	}
	*data = malloc((size_t)st.st_size);
	if (!*data) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *data + got, (size_t)st.st_size - got);

		if (n <= 0) {
			free(*data);
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return 0;
}

/* The image offset of the vaddr range [v, v + n), or -1 past its end. */
static long in_image(const struct ukp_image *im, uint64_t v, uint64_t n)
{
	return v <= im->len && n <= im->len - v ? (long)v : -1;
}

static int read_dynamic(struct ukp_image *im, uint64_t dyn, uint64_t dynsz, const char *path,
			char *err, size_t errlen)
{
	uint64_t rela = 0, relasz = 0, relr = 0, relrsz = 0, relent = sizeof(Elf64_Rela);
	const Elf64_Dyn *d;
	size_t i;

	if (in_image(im, dyn, dynsz) < 0)
		return fail(err, errlen, path, "its dynamic section is outside its segments");
	d = (const Elf64_Dyn *)(im->buf + dyn);
	for (i = 0; i < dynsz / sizeof(*d) && d[i].d_tag != DT_NULL; i++) {
		switch (d[i].d_tag) {
		case DT_NEEDED:
			return fail(err, errlen, path,
				    "needs shared libraries (DT_NEEDED): not a static PIE");
		case DT_JMPREL:
		case DT_PLTRELSZ:
			if (d[i].d_un.d_val)
				return fail(err, errlen, path,
					    "has PLT relocations: not a static PIE");
			break;
		case DT_REL:
		case DT_RELSZ:
			if (d[i].d_un.d_val)
				return fail(err, errlen, path,
					    "has REL relocations (this architecture uses RELA)");
			break;
		case DT_RELA: rela = d[i].d_un.d_ptr; break;
		case DT_RELASZ: relasz = d[i].d_un.d_val; break;
		case DT_RELAENT: relent = d[i].d_un.d_val; break;
		case DT_RELR: relr = d[i].d_un.d_ptr; break;
		case DT_RELRSZ: relrsz = d[i].d_un.d_val; break;
		default: break;
		}
	}
	if (relasz) {
		const Elf64_Rela *r;

		if (relent != sizeof(Elf64_Rela) || in_image(im, rela, relasz) < 0)
			return fail(err, errlen, path, "its RELA relocations are malformed");
		r = (const Elf64_Rela *)(im->buf + rela);
		for (i = 0; i < relasz / sizeof(*r); i++) {
			uint32_t type = ELF64_R_TYPE(r[i].r_info);

			if (type == UKP_ARCH_R_RELATIVE) {
				if (in_image(im, r[i].r_offset, 8) < 0)
					return fail(err, errlen, path,
						    "relocation %zu is outside its segments", i);
			} else if (type != 0) {
				return fail(err, errlen, path,
					    "relocation %zu is of type %u: only relative "
					    "relocations can be applied (a static PIE's)",
					    i, type);
			}
		}
		im->rela_off = rela;
		im->rela_n = relasz / sizeof(*r);
	}
	if (relrsz) {
		if (in_image(im, relr, relrsz) < 0 || relrsz % 8)
			return fail(err, errlen, path, "its RELR relocations are malformed");
		im->relr_off = relr;
		im->relr_n = relrsz / 8;
	}
	return 0;
}

int ukp_image_read(const char *path, struct ukp_image *im, char *err, size_t errlen)
{
	unsigned char *data = NULL;
	size_t len = 0, i, page = (size_t)sysconf(_SC_PAGESIZE);
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	uint64_t hi = 0, dyn = 0, dynsz = 0;
	int ret;

	memset(im, 0, sizeof(*im));
	ret = read_file(path, &data, &len);
	if (ret)
		return fail(err, errlen, path, "cannot be read: %s", strerror(-ret));
	eh = (const Elf64_Ehdr *)data;
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		ret = fail(err, errlen, path, "not an ELF file");
		goto out;
	}
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != UKP_ARCH_EM) {
		ret = fail(err, errlen, path, "not an object of this architecture");
		goto out;
	}
	if (eh->e_type != ET_DYN) {
		ret = fail(err, errlen, path, "not position-independent (ET_DYN): link it -static-pie");
		goto out;
	}
	if (eh->e_phentsize != sizeof(*ph) || eh->e_phoff > len ||
	    (size_t)eh->e_phnum * sizeof(*ph) > len - eh->e_phoff) {
		ret = fail(err, errlen, path, "its program headers are malformed");
		goto out;
	}
	ph = (const Elf64_Phdr *)(data + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_INTERP || ph[i].p_type == PT_TLS) {
			ret = fail(err, errlen, path, "has %s: not a freestanding static PIE",
				   ph[i].p_type == PT_INTERP ? "an interpreter" : "thread-local storage");
			goto out;
		}
		if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_filesz > ph[i].p_memsz || ph[i].p_offset > len ||
			    ph[i].p_filesz > len - ph[i].p_offset ||
			    ph[i].p_vaddr + ph[i].p_memsz < ph[i].p_vaddr ||
			    ph[i].p_vaddr + ph[i].p_memsz > (1UL << 32)) {
				ret = fail(err, errlen, path, "segment %zu is malformed", i);
				goto out;
			}
			if (ph[i].p_vaddr + ph[i].p_memsz > hi)
				hi = ph[i].p_vaddr + ph[i].p_memsz;
		}
	}
	im->len = (hi + page - 1) & ~(page - 1);
	if (!im->len) {
		ret = fail(err, errlen, path, "has no loadable segment");
		goto out;
	}
	im->buf = calloc(1, im->len);
	if (!im->buf) {
		ret = fail(err, errlen, path, "out of memory");
		goto out;
	}
	for (i = 0; i < eh->e_phnum; i++) {
		uintptr_t lo;

		if (ph[i].p_type == PT_DYNAMIC) {
			dyn = ph[i].p_vaddr;
			dynsz = ph[i].p_memsz;
		} else if (ph[i].p_type == PT_GNU_RELRO) {
			im->relro_off = ph[i].p_vaddr & ~(page - 1);
			im->relro_len = ((ph[i].p_vaddr + ph[i].p_memsz) & ~(page - 1)) - im->relro_off;
		}
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (im->nseg == UKP_IMAGE_SEGS) {
			ret = fail(err, errlen, path, "has more than %d segments", UKP_IMAGE_SEGS);
			goto out;
		}
		memcpy(im->buf + ph[i].p_vaddr, data + ph[i].p_offset, ph[i].p_filesz);
		lo = ph[i].p_vaddr & ~(page - 1);
		im->seg[im->nseg].off = lo;
		im->seg[im->nseg].len =
			((ph[i].p_vaddr + ph[i].p_memsz + page - 1) & ~(page - 1)) - lo;
		im->seg[im->nseg].prot = (ph[i].p_flags & PF_R ? PROT_READ : 0) |
					 (ph[i].p_flags & PF_W ? PROT_WRITE : 0) |
					 (ph[i].p_flags & PF_X ? PROT_EXEC : 0);
		im->nseg++;
	}
	if (eh->e_entry >= im->len) {
		ret = fail(err, errlen, path, "its entry point is outside its segments");
		goto out;
	}
	im->entry = eh->e_entry;
	ret = dyn ? read_dynamic(im, dyn, dynsz, path, err, errlen) : 0;
out:
	free(data);
	if (ret)
		ukp_image_free(im);
	return ret;
}

void ukp_image_relocate(struct ukp_image *im, uintptr_t base)
{
	const Elf64_Rela *r = (const Elf64_Rela *)(im->buf + im->rela_off);
	const uint64_t *relr = (const uint64_t *)(im->buf + im->relr_off);
	uint64_t *where = NULL;
	size_t i;

	for (i = 0; i < im->rela_n; i++)
		if (ELF64_R_TYPE(r[i].r_info) == UKP_ARCH_R_RELATIVE)
			memcpy(im->buf + r[i].r_offset,
			       &(uint64_t){ base + (uint64_t)r[i].r_addend }, 8);
	/* RELR: an address, then bitmaps of the 63 words after it */
	for (i = 0; i < im->relr_n; i++) {
		uint64_t e = relr[i];

		if (!(e & 1)) {
			if (e + 8 > im->len)
				return;
			where = (uint64_t *)(im->buf + e);
			*where++ += base;
		} else if (where) {
			uint64_t *w = where;

			for (e >>= 1; e; e >>= 1, w++)
				if ((e & 1) && (unsigned char *)(w + 1) <= im->buf + im->len)
					*w += base;
			where += 63;
		}
	}
}

void ukp_image_free(struct ukp_image *im)
{
	free(im->buf);
	im->buf = NULL;
}

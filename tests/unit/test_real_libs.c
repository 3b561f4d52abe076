// SPDX-License-Identifier: MIT
/*
 * test_real_libs.c - probe everything in code nobody here wrote.
 *
 *  (a) a kprobe on every function entry of libz.so.1 during a real zlib
 *      workload (compress/uncompress at several levels, streaming
 *      deflate/inflate with every wrapper, crc32, adler32, gz* on a memfd);
 *  (b) a kprobe on every instruction boundary of crc32_z, adler32_z,
 *      inflate and deflate during the same workload, smaller;
 *  (c) a kprobe on every function entry of libsqlite3.so.0, registered
 *      in batches, during an SQL workload on an in-memory database.
 *
 * Each time: the workload's results are identical to a run without
 * probes; functions whose calls the test makes itself count exactly those
 * calls; after unregistration everything is as before and nothing counts.
 * Refusals are counted per errno and printed to stderr.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <zlib.h>
#include <Zydis/Zydis.h>

#include "ukprobes.h"
#include "arch/arch.h"
#include "symbols/symbols.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

/* The registry lock, for walking the symbol cache (kprobes.c). */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* ------------------------------------------------------------ probes */

struct rprobe {
	struct kprobe kp;
	_Atomic unsigned long hits;
	char *name;
	uintptr_t start;
	size_t size;
	size_t off;        /* (b): offset of the instruction in its function */
	int fn;            /* (b): which function */
	bool prefix;       /* (b): in the function's straight-line entry block */
	bool registered;
};

static int rp_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&((struct rprobe *)p)->hits, 1, memory_order_relaxed);
	return 0;
}

static struct rprobe *probes;
static size_t nprobes;

static void add_probe(const char *name, uintptr_t start, size_t size, size_t off)
{
	struct rprobe *rp;

	probes = realloc(probes, (nprobes + 1) * sizeof(*probes));
	cr_assert(probes);
	rp = &probes[nprobes++];
	memset(rp, 0, sizeof(*rp));
	rp->name = strdup(name);
	rp->start = start;
	rp->size = size;
	rp->off = off;
	rp->kp.addr = (kprobe_opcode_t *)(start + off);
	rp->kp.pre_handler = rp_pre;
}

static void collect_symbol(const struct ukp_symres *sym, void *arg)
{
	(void)arg;
	if (sym->name && sym->size)
		add_probe(sym->name, sym->start, sym->size, 0);
}

/* Every function symbol of one loaded object, one probe each. */
static void collect_functions(const char *object)
{
	cr_assert_eq(ukp_lock_for_show(), 0);
	ukp_for_each_symbol(object, collect_symbol, NULL);
	ukp_unlock_for_show();
	cr_assert_gt(nprobes, 0, "no symbols in %s", object);
}

/* Hits of every probe on the function called name (entry probes). */
static unsigned long hits_of(const char *name)
{
	unsigned long n = 0;

	for (size_t i = 0; i < nprobes; i++)
		if (probes[i].off == 0 && !strcmp(probes[i].name, name))
			n += atomic_load(&probes[i].hits);
	return n;
}

static unsigned long total_hits(void)
{
	unsigned long n = 0;

	for (size_t i = 0; i < nprobes; i++)
		n += atomic_load(&probes[i].hits);
	return n;
}

/* Refusals per errno. */
struct refusals {
	int err[8];
	int count[8];
	char names[8][512];
	int n, total;
};

static void refused(struct refusals *r, const struct rprobe *rp, int err)
{
	int i;

	r->total++;
	for (i = 0; i < r->n; i++)
		if (r->err[i] == err)
			break;
	if (i == r->n) {
		if (r->n == 8)
			return;
		r->err[r->n++] = err;
	}
	r->count[i]++;
	if (strlen(r->names[i]) < sizeof(r->names[i]) - 64) {
		char one[64];

		snprintf(one, sizeof(one), " %s+%#zx", rp->name, rp->off);
		strcat(r->names[i], one);
	}
}

static void print_refusals(const char *what, const struct refusals *r, size_t tried)
{
	fprintf(stderr, "%s: %zu probes tried, %zu registered, %d refused\n", what, tried,
		tried - (size_t)r->total, r->total);
	for (int i = 0; i < r->n; i++)
		fprintf(stderr, "  %s (%d) x%d:%s\n", strerror(-r->err[i]), r->err[i], r->count[i],
			r->names[i]);
}

/* Register every probe one by one, counting refusals. */
static void register_all(struct refusals *r)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < nprobes; i++) {
		int ret = register_kprobe(&probes[i].kp);

		if (ret)
			refused(r, &probes[i], ret);
		else
			probes[i].registered = true;
	}
}

/* Register in batches with register_kprobes(); a batch that fails is
 * rolled back by the library and then registered one by one, to find
 * the refused probes. */
static void register_all_batched(struct refusals *r, size_t batch, int *batches_ok)
{
	struct kprobe **kps = calloc(batch, sizeof(*kps));

	cr_assert(kps);
	memset(r, 0, sizeof(*r));
	*batches_ok = 0;
	for (size_t i = 0; i < nprobes; i += batch) {
		size_t n = nprobes - i < batch ? nprobes - i : batch, k;
		int ret;

		for (k = 0; k < n; k++)
			kps[k] = &probes[i + k].kp;
		ret = register_kprobes(kps, (int)n);
		if (ret == 0) {
			for (k = 0; k < n; k++)
				probes[i + k].registered = true;
			(*batches_ok)++;
			continue;
		}
		/* the reuse idiom, then one by one */
		for (k = 0; k < n; k++) {
			struct rprobe *rp = &probes[i + k];

			rp->kp.addr = (kprobe_opcode_t *)(rp->start + rp->off);
			rp->kp.flags = 0;
			ret = register_kprobe(&rp->kp);
			if (ret)
				refused(r, rp, ret);
			else
				rp->registered = true;
		}
	}
	free(kps);
}

static void unregister_all(void)
{
	struct kprobe **kps = calloc(nprobes + 1, sizeof(*kps));
	size_t n = 0;

	cr_assert(kps);
	for (size_t i = 0; i < nprobes; i++) {
		if (probes[i].registered) {
			kps[n++] = &probes[i].kp;
			probes[i].registered = false;
		}
	}
	if (n)
		unregister_kprobes(kps, (int)n);
	free(kps);
}

/* The first bytes of every probed function, to see them restored. */
static uint64_t *code_snapshot(void)
{
	uint64_t *h = calloc(nprobes + 1, sizeof(*h));

	cr_assert(h);
	for (size_t i = 0; i < nprobes; i++)
		h[i] = fnv((const void *)probes[i].start, probes[i].size);
	return h;
}

/* ---------------------------------------------------------- digests */

#define DIGEST_MAX 1024

struct digest {
	uint64_t v[DIGEST_MAX];
	int n;
	int bad;
	char first_bad[200];
};

static void dg(struct digest *d, uint64_t x)
{
	if (d->n < DIGEST_MAX)
		d->v[d->n++] = x;
}

static void dcheck(struct digest *d, bool ok, const char *what)
{
	if (!ok && !d->bad++)
		snprintf(d->first_bad, sizeof(d->first_bad), "%s", what);
}

static void expect_same_digest(const struct digest *a, const struct digest *b, const char *what)
{
	cr_expect_eq(a->bad, 0, "%s: %d failed checks, first: %s", what, a->bad, a->first_bad);
	cr_expect_eq(a->n, b->n, "%s: %d results, reference %d", what, a->n, b->n);
	for (int i = 0; i < a->n && i < b->n; i++)
		if (a->v[i] != b->v[i]) {
			cr_expect_eq(a->v[i], b->v[i], "%s: result %d differs", what, i);
			break;
		}
}

/* Calls the test makes itself, and the hits they must produce. */
struct exact {
	const char *name;
	unsigned long got, want;
};

#define EXACT_MAX 64

struct exacts {
	struct exact e[EXACT_MAX];
	int n;
	int dropped;
	bool active;
};

static struct exacts exacts;

static void exact_add(const char *name, unsigned long got, unsigned long want)
{
	if (exacts.n == EXACT_MAX) {
		exacts.dropped++;
		return;
	}
	exacts.e[exacts.n++] = (struct exact){ name, got, want };
}

#define BRACKET(fname, want_, stmt)                                               \
	do {                                                                      \
		unsigned long b_ = exacts.active ? hits_of(fname) : 0;           \
		stmt;                                                             \
		if (exacts.active)                                                \
			exact_add(fname, hits_of(fname) - b_, (unsigned long)(want_)); \
	} while (0)

static void expect_exacts(void)
{
	cr_expect_gt(exacts.n, 0);
	cr_expect_eq(exacts.dropped, 0, "%d exact checks did not fit", exacts.dropped);
	fprintf(stderr, "  %d exact call counts checked\n", exacts.n);
	for (int i = 0; i < exacts.n; i++)
		cr_expect_eq(exacts.e[i].got, exacts.e[i].want, "%s: %lu hits for %lu calls",
			     exacts.e[i].name, exacts.e[i].got, exacts.e[i].want);
}

/* ------------------------------------------------------ zlib workload */

#define NBUF 3

static unsigned char *zbuf[NBUF];
static size_t zlen[NBUF];

static void make_data(size_t len)
{
	static const char *const words[] = {
		"deflate", "inflate", "window", "huffman", "literal", "distance", "match",
		"stream", "block", "the", "a", "of", "probe", "kernel", "trap", "\n",
	};
	uint64_t s = 0x243f6a8885a308d3ull;

	for (int b = 0; b < NBUF; b++) {
		free(zbuf[b]);
		zbuf[b] = malloc(len);
		cr_assert(zbuf[b]);
		zlen[b] = len;
	}
	/* text */
	for (size_t i = 0; i < len;) {
		const char *w;

		s = s * 6364136223846793005ull + 1442695040888963407ull;
		w = words[(s >> 33) % 16];
		for (size_t k = 0; w[k] && i < len; k++)
			zbuf[0][i++] = (unsigned char)w[k];
		if (i < len)
			zbuf[0][i++] = ' ';
	}
	/* noise */
	for (size_t i = 0; i < len; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		zbuf[1][i] = (unsigned char)(s >> 56);
	}
	/* sparse */
	for (size_t i = 0; i < len; i++)
		zbuf[2][i] = i % 97 == 0 ? (unsigned char)i : 0;
}

static void z_oneshot(struct digest *d)
{
	static const int levels[] = { 0, 1, 6, 9 };

	for (int b = 0; b < NBUF; b++) {
		for (int l = 0; l < 4; l++) {
			uLongf clen = compressBound(zlen[b]), dlen = zlen[b];
			unsigned char *out = malloc(clen), *back = malloc(zlen[b]);
			int rc;

			rc = compress2(out, &clen, zbuf[b], zlen[b], levels[l]);
			dcheck(d, rc == Z_OK, "compress2");
			dg(d, clen);
			dg(d, fnv(out, clen));
			rc = uncompress(back, &dlen, out, clen);
			dcheck(d, rc == Z_OK && dlen == zlen[b] && !memcmp(back, zbuf[b], dlen),
			       "uncompress round trip");
			free(out);
			free(back);
		}
	}
}

/* One deflate stream and its inflate, in small pieces. */
static void z_one_stream(struct digest *d, int b, int wbits, int level, int strategy,
		     unsigned long *deflate_calls, unsigned long *inflate_calls)
{
	size_t cap = compressBound(zlen[b]) + 1024, outn = 0, pos = 0;
	unsigned char *comp = malloc(cap), *back = malloc(zlen[b] + 1);
	z_stream zs;
	int rc;

	memset(&zs, 0, sizeof(zs));
	BRACKET("deflateInit2_", 1,
		rc = deflateInit2(&zs, level, Z_DEFLATED, wbits, 8, strategy));
	dcheck(d, rc == Z_OK, "deflateInit2");
	do {
		size_t in = zlen[b] - pos < 3000 ? zlen[b] - pos : 3000;
		int flush = pos + in == zlen[b] ? Z_FINISH : Z_NO_FLUSH;

		zs.next_in = zbuf[b] + pos;
		zs.avail_in = (uInt)in;
		do {
			zs.next_out = comp + outn;
			zs.avail_out = (uInt)(cap - outn < 1024 ? cap - outn : 1024);
			rc = deflate(&zs, flush);
			(*deflate_calls)++;
			outn = (size_t)(zs.next_out - comp);
		} while (zs.avail_out == 0 && rc != Z_STREAM_END);
		pos += in;
	} while (pos < zlen[b]);
	dcheck(d, rc == Z_STREAM_END, "deflate end");
	dg(d, outn);
	dg(d, fnv(comp, outn));
	dg(d, zs.adler);
	BRACKET("deflateEnd", 1, rc = deflateEnd(&zs));
	dcheck(d, rc == Z_OK, "deflateEnd");

	memset(&zs, 0, sizeof(zs));
	BRACKET("inflateInit2_", 1, rc = inflateInit2(&zs, wbits));
	dcheck(d, rc == Z_OK, "inflateInit2");
	pos = 0;
	do {
		size_t in = outn - pos < 700 ? outn - pos : 700;

		zs.next_in = comp + pos;
		zs.avail_in = (uInt)in;
		do {
			zs.next_out = back + zs.total_out;
			zs.avail_out = (uInt)(zlen[b] + 1 - zs.total_out < 512 ? zlen[b] + 1 - zs.total_out
									   : 512);
			rc = inflate(&zs, Z_NO_FLUSH);
			(*inflate_calls)++;
		} while (zs.avail_out == 0 && rc == Z_OK);
		pos += in - zs.avail_in;
	} while (rc == Z_OK && pos < outn);
	dcheck(d, rc == Z_STREAM_END, "inflate end");
	dcheck(d, zs.total_out == zlen[b] && !memcmp(back, zbuf[b], zlen[b]), "inflate data");
	dg(d, zs.adler);
	BRACKET("inflateEnd", 1, rc = inflateEnd(&zs));
	free(comp);
	free(back);
}

static void z_streams(struct digest *d)
{
	static const int wbits[] = { 15, 31, -15 };
	static const int strategies[] = { Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE };
	unsigned long dc = 0, ic = 0;
	int k = 0;

	for (int w = 0; w < 3; w++)
		for (int b = 0; b < NBUF; b++, k++)
			z_one_stream(d, b, wbits[w], 1 + (k % 9), strategies[k % 4], &dc, &ic);
	dg(d, dc);
	dg(d, ic);
}

static void z_checksums(struct digest *d)
{
	const size_t chunks = 37;
	uLong c = 0, a = 1, c1, c2, a1, a2;
	size_t step = zlen[0] / chunks, half = zlen[0] / 2;

	BRACKET("crc32", chunks, {
		for (size_t i = 0; i < chunks; i++)
			c = crc32(c, zbuf[0] + i * step, (uInt)step);
	});
	BRACKET("adler32", chunks, {
		for (size_t i = 0; i < chunks; i++)
			a = adler32(a, zbuf[0] + i * step, (uInt)step);
	});
	dg(d, c);
	dg(d, a);
	c1 = crc32(0, zbuf[1], (uInt)half);
	c2 = crc32(0, zbuf[1] + half, (uInt)(zlen[1] - half));
	dcheck(d, crc32_combine(c1, c2, (z_off_t)(zlen[1] - half)) == crc32(0, zbuf[1], (uInt)zlen[1]),
	       "crc32_combine");
	a1 = adler32(1, zbuf[2], (uInt)half);
	a2 = adler32(1, zbuf[2] + half, (uInt)(zlen[2] - half));
	dcheck(d, adler32_combine(a1, a2, (z_off_t)(zlen[2] - half)) ==
			  adler32(1, zbuf[2], (uInt)zlen[2]),
	       "adler32_combine");
	dg(d, crc32_z(0, zbuf[2], zlen[2]));
	dg(d, adler32_z(1, zbuf[1], zlen[1]));
	BRACKET("zlibVersion", 5, {
		for (int i = 0; i < 5; i++)
			dcheck(d, !strcmp(zlibVersion(), ZLIB_VERSION), "zlibVersion");
	});
	BRACKET("compressBound", 7, {
		for (int i = 0; i < 7; i++)
			dg(d, compressBound((uLong)i * 1000));
	});
}

static void z_gzip_memfd(struct digest *d)
{
	int fd = memfd_create("ukp-gz", 0);
	unsigned char *raw, *back;
	char line[128];
	gzFile g;
	off_t size;

	dcheck(d, fd >= 0, "memfd_create");
	if (fd < 0)
		return;
	g = gzdopen(dup(fd), "wb6");
	dcheck(d, g != NULL, "gzdopen w");
	dcheck(d, gzwrite(g, zbuf[0], (unsigned)zlen[0]) == (int)zlen[0], "gzwrite");
	dcheck(d, gzprintf(g, "line %d %s\n", 42, "x") == 10, "gzprintf");
	dcheck(d, gzputs(g, "hello\n") == 6, "gzputs");
	dcheck(d, gzputc(g, 'Z') == 'Z', "gzputc");
	dcheck(d, gzclose(g) == Z_OK, "gzclose w");

	size = lseek(fd, 0, SEEK_END);
	raw = malloc((size_t)size);
	dcheck(d, pread(fd, raw, (size_t)size, 0) == size, "pread");
	dg(d, (uint64_t)size);
	dg(d, fnv(raw, (size_t)size));
	free(raw);

	lseek(fd, 0, SEEK_SET);
	g = gzdopen(dup(fd), "rb");
	dcheck(d, g != NULL, "gzdopen r");
	back = malloc(zlen[0]);
	dcheck(d, gzread(g, back, (unsigned)zlen[0]) == (int)zlen[0] &&
			  !memcmp(back, zbuf[0], zlen[0]),
	       "gzread");
	free(back);
	dcheck(d, gzgets(g, line, sizeof(line)) && !strcmp(line, "line 42 x\n"), "gzgets 1");
	dcheck(d, gzgets(g, line, sizeof(line)) && !strcmp(line, "hello\n"), "gzgets 2");
	dcheck(d, gzgetc(g) == 'Z', "gzgetc");
	dcheck(d, gzgetc(g) == -1 && gzeof(g), "gz eof");
	dcheck(d, gzclose(g) == Z_OK, "gzclose r");
	close(fd);
}

static void zlib_workload(struct digest *d, bool bracket)
{
	memset(d, 0, sizeof(*d));
	exacts.n = 0;
	exacts.dropped = 0;
	exacts.active = bracket;
	z_oneshot(d);
	z_streams(d);
	z_checksums(d);
	z_gzip_memfd(d);
	exacts.active = false;
}

/* ------------------------------------------------------------ (a) zlib */

/*
 * Every function entry of libz.so.1: the workload gives the same results
 * as without probes, the functions the test calls itself count exactly
 * those calls, and after unregistration nothing counts and the code is
 * back.
 */
Test(real_libs, zlib_every_function_entry, .timeout = 120)
{
	struct digest ref, probed, after;
	struct refusals r;
	uint64_t *code0, *code1, t0;
	unsigned long total, total_after;
	size_t hit_fns = 0;

	make_data(48 * 1024);
	zlib_workload(&ref, false);
	cr_assert_eq(ref.bad, 0, "reference run: %s", ref.first_bad);

	collect_functions("libz.so.1");
	code0 = code_snapshot();
	t0 = now_ns();
	register_all(&r);
	print_refusals("libz.so.1 function entries", &r, nprobes);
	cr_expect_leq((size_t)r.total * 20, nprobes, "more than 5%% of libz's functions refused");
	cr_assert_lt((size_t)r.total, nprobes);

	zlib_workload(&probed, true);
	expect_same_digest(&probed, &ref, "probed zlib run");
	expect_exacts();
	total = total_hits();
	for (size_t i = 0; i < nprobes; i++)
		hit_fns += atomic_load(&probes[i].hits) != 0;
	fprintf(stderr, "libz.so.1: %lu hits in %zu functions, %.2f s with probes\n", total,
		hit_fns, (double)(now_ns() - t0) / 1e9);
	cr_expect_gt(total, 0);
	cr_expect_geq(hit_fns, 20, "only %zu functions hit", hit_fns);

	unregister_all();
	code1 = code_snapshot();
	for (size_t i = 0; i < nprobes; i++)
		cr_expect_eq(code0[i], code1[i], "%s: code not restored", probes[i].name);
	zlib_workload(&after, false);
	expect_same_digest(&after, &ref, "zlib run after unregistration");
	total_after = total_hits();
	cr_expect_eq(total_after, total, "%lu hits after unregistration", total_after - total);
	free(code0);
	free(code1);
}

/* ------------------------------------------------ (b) every instruction */

#define NFN 4
static const char *const insn_fns[NFN] = { "crc32_z", "adler32_z", "inflate", "deflate" };

struct fninfo {
	uintptr_t start;
	size_t size;
	size_t first, count;   /* its probes: probes[first .. first+count) */
	int ninsn, nprefix;
};

static struct fninfo fns[NFN];

/*
 * Decode a function: a probe on every instruction boundary; the
 * straight-line entry block (up to and including the first jump, jcc or
 * ret, and stopping before any instruction that some relative branch of
 * the function targets) is marked: those instructions run exactly once
 * per call.
 */
static void probe_every_insn(int f)
{
	struct fninfo *fi = &fns[f];
	const uint8_t *code;
	ZydisDecoder dec;
	bool *target;
	size_t off = 0;
	uintptr_t addr;
	struct ukp_symres sym;
	char spec[64];
	bool in_prefix = true;

	snprintf(spec, sizeof(spec), "libz.so.1:%s", insn_fns[f]);
	cr_assert_eq(ukp_lock_for_show(), 0);
	cr_assert_eq(ukp_sym_lookup_name(spec, &addr), 0, "%s", spec);
	cr_assert_eq(ukp_sym_lookup_addr(addr, &sym), 0);
	ukp_unlock_for_show();
	cr_assert_eq(sym.start, addr);
	fi->start = addr;
	fi->size = sym.size;
	fi->first = nprobes;
	code = (const uint8_t *)addr;
	target = calloc(fi->size + 1, 1);
	cr_assert(target);
	cr_assert(ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
						ZYDIS_STACK_WIDTH_64)));

	/* pass 1: relative branch targets inside the function */
	while (off < fi->size) {
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		ZyanU64 t;

		cr_assert(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, fi->size - off, &insn,
							      ops)),
			  "%s+%#zx does not decode", insn_fns[f], off);
		if ((insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) &&
		    (insn.meta.category == ZYDIS_CATEGORY_COND_BR ||
		     insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR) &&
		    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], addr + off, &t)) &&
		    t >= addr && t < addr + fi->size)
			target[t - addr] = true;
		off += insn.length;
	}
	cr_assert_eq(off, fi->size);

	/* pass 2: one probe per instruction */
	off = 0;
	while (off < fi->size) {
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		struct rprobe *rp;

		ZydisDecoderDecodeFull(&dec, code + off, fi->size - off, &insn, ops);
		/* the library's own decoder agrees on the boundary */
		cr_assert_eq(arch_check_boundary(code, off, fi->size), 0, "%s+%#zx", insn_fns[f], off);
		add_probe(insn_fns[f], addr, fi->size, off);
		rp = &probes[nprobes - 1];
		rp->fn = f;
		if (off && target[off])
			in_prefix = false;
		if (target[0])
			in_prefix = false; /* the entry is a loop head */
		rp->prefix = in_prefix;
		fi->nprefix += in_prefix;
		if (insn.meta.category == ZYDIS_CATEGORY_COND_BR ||
		    insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		    insn.meta.category == ZYDIS_CATEGORY_RET)
			in_prefix = false;
		fi->ninsn++;
		off += insn.length;
	}
	fi->count = nprobes - fi->first;
	free(target);
}

static unsigned long *hits_snapshot(void)
{
	unsigned long *h = calloc(nprobes + 1, sizeof(*h));

	cr_assert(h);
	for (size_t i = 0; i < nprobes; i++)
		h[i] = atomic_load(&probes[i].hits);
	return h;
}

/* Every straight-line entry instruction of fn moved by exactly want
 * between two snapshots. */
static void expect_prefix_delta(int f, const unsigned long *b, const unsigned long *a,
				unsigned long want, const char *what)
{
	for (size_t i = fns[f].first; i < fns[f].first + fns[f].count; i++) {
		if (!probes[i].prefix || !probes[i].registered)
			continue;
		cr_expect_eq(a[i] - b[i], want, "%s: %s+%#zx counted %lu, want %lu", what,
			     insn_fns[f], probes[i].off, a[i] - b[i], want);
	}
}

/*
 * Every instruction of four of zlib's hot functions: the workload's
 * results do not change, every straight-line entry instruction counts
 * exactly as many hits as its function's entry, and the test's own calls
 * count exactly.
 */
Test(real_libs, zlib_every_instruction_of_hot_functions, .timeout = 120)
{
	struct digest ref, probed, after;
	struct refusals r;
	unsigned long *h0, *h1, total;
	uint64_t *code0, *code1, t0;
	unsigned long dc = 0, ic = 0;
	int f;

	make_data(2 * 1024);
	zlib_workload(&ref, false);
	cr_assert_eq(ref.bad, 0, "reference run: %s", ref.first_bad);

	for (f = 0; f < NFN; f++)
		probe_every_insn(f);
	code0 = code_snapshot();
	t0 = now_ns();
	register_all(&r);
	print_refusals("every instruction of crc32_z, adler32_z, inflate, deflate", &r, nprobes);
	for (f = 0; f < NFN; f++)
		fprintf(stderr, "  %s: %d instructions, %d in the entry block\n", insn_fns[f],
			fns[f].ninsn, fns[f].nprefix);
	cr_expect_leq((size_t)r.total * 20, nprobes, "more than 5%% of the instructions refused");
	fprintf(stderr, "  registration took %.2f s\n", (double)(now_ns() - t0) / 1e9);

	t0 = now_ns();
	zlib_workload(&probed, false);
	fprintf(stderr, "  probed workload took %.2f s, %lu hits\n",
		(double)(now_ns() - t0) / 1e9, total_hits());
	expect_same_digest(&probed, &ref, "probed zlib run");

	/* entry block == entry count, for the whole workload */
	for (f = 0; f < NFN; f++) {
		const struct rprobe *entry = &probes[fns[f].first];
		unsigned long calls = atomic_load(&entry->hits);

		cr_expect(entry->registered && entry->off == 0, "%s: entry not probed", insn_fns[f]);
		cr_expect_gt(calls, 0, "%s never called", insn_fns[f]);
		cr_expect_geq(fns[f].nprefix, 2, "%s: entry block of %d", insn_fns[f],
			      fns[f].nprefix);
		for (size_t i = fns[f].first; i < fns[f].first + fns[f].count; i++)
			if (probes[i].prefix && probes[i].registered)
				cr_expect_eq(atomic_load(&probes[i].hits), calls,
					     "%s+%#zx: %lu hits, %lu calls", insn_fns[f],
					     probes[i].off, atomic_load(&probes[i].hits), calls);
	}

	/* the test's own calls */
	h0 = hits_snapshot();
	for (int i = 0; i < 5; i++)
		crc32_z(0, zbuf[0], zlen[0]);
	for (int i = 0; i < 3; i++)
		adler32_z(1, zbuf[1], zlen[1]);
	h1 = hits_snapshot();
	expect_prefix_delta(0, h0, h1, 5, "5 calls of crc32_z");
	expect_prefix_delta(1, h0, h1, 3, "3 calls of adler32_z");
	free(h0);
	free(h1);
	{
		struct digest d;

		memset(&d, 0, sizeof(d));
		h0 = hits_snapshot();
		z_one_stream(&d, 0, 15, 6, Z_DEFAULT_STRATEGY, &dc, &ic);
		h1 = hits_snapshot();
		cr_expect_eq(d.bad, 0, "%s", d.first_bad);
		expect_prefix_delta(2, h0, h1, ic, "the test's inflate calls");
		expect_prefix_delta(3, h0, h1, dc, "the test's deflate calls");
		free(h0);
		free(h1);
	}

	total = total_hits();
	unregister_all();
	code1 = code_snapshot();
	for (size_t i = 0; i < nprobes; i++)
		if (code0[i] != code1[i]) {
			cr_expect_eq(code0[i], code1[i], "%s: code not restored", probes[i].name);
			break;
		}
	zlib_workload(&after, false);
	expect_same_digest(&after, &ref, "zlib run after unregistration");
	cr_expect_eq(total_hits(), total, "hits after unregistration");
	free(code0);
	free(code1);
}

/* ---------------------------------------------------------- (c) sqlite */

#define ROWS 1000

static void sql_workload(struct digest *d, bool bracket)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	int rc;

	memset(d, 0, sizeof(*d));
	exacts.n = 0;
	exacts.dropped = 0;
	exacts.active = bracket;

	BRACKET("sqlite3_libversion_number", 9, {
		for (int i = 0; i < 9; i++)
			dcheck(d, sqlite3_libversion_number() >= 3000000, "libversion");
	});
	BRACKET("sqlite3_open", 1, rc = sqlite3_open(":memory:", &db));
	dcheck(d, rc == SQLITE_OK, "open");
	rc = sqlite3_exec(db,
			  "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL, v REAL, g INTEGER);",
			  NULL, NULL, NULL);
	dcheck(d, rc == SQLITE_OK, "create");
	rc = sqlite3_prepare_v2(db, "INSERT INTO t(id, name, v, g) VALUES(?1, ?2, ?3, ?4)", -1, &st,
				NULL);
	dcheck(d, rc == SQLITE_OK, "prepare insert");
	dcheck(d, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK, "begin");
	{
		unsigned long b_step = exacts.active ? hits_of("sqlite3_step") : 0;
		unsigned long b_i64 = exacts.active ? hits_of("sqlite3_bind_int64") : 0;
		unsigned long b_dbl = exacts.active ? hits_of("sqlite3_bind_double") : 0;
		unsigned long b_txt = exacts.active ? hits_of("sqlite3_bind_text") : 0;

		for (int i = 0; i < ROWS; i++) {
			char name[32];

			snprintf(name, sizeof(name), "row%04d", i);
			sqlite3_bind_int64(st, 1, i + 1);
			sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
			sqlite3_bind_double(st, 3, i * 0.5);
			sqlite3_bind_int64(st, 4, i % 10);
			rc = sqlite3_step(st);
			dcheck(d, rc == SQLITE_DONE, "insert step");
			sqlite3_reset(st);
		}
		if (exacts.active) {
			exact_add("sqlite3_step", hits_of("sqlite3_step") - b_step, ROWS);
			exact_add("sqlite3_bind_int64", hits_of("sqlite3_bind_int64") - b_i64,
				  2 * ROWS);
			exact_add("sqlite3_bind_double", hits_of("sqlite3_bind_double") - b_dbl,
				  ROWS);
			exact_add("sqlite3_bind_text", hits_of("sqlite3_bind_text") - b_txt, ROWS);
		}
	}
	sqlite3_finalize(st);
	dcheck(d, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK, "commit");

	/* aggregates */
	rc = sqlite3_prepare_v2(db,
				"SELECT count(*), sum(v), total(g), min(name), max(name), avg(id) FROM t",
				-1, &st, NULL);
	dcheck(d, rc == SQLITE_OK, "prepare select");
	dcheck(d, sqlite3_step(st) == SQLITE_ROW, "select row");
	dcheck(d, sqlite3_column_int64(st, 0) == ROWS, "count(*)");
	dcheck(d, sqlite3_column_double(st, 1) == 249750.0, "sum(v)");
	dcheck(d, sqlite3_column_double(st, 2) == 4500.0, "total(g)");
	dcheck(d, !strcmp((const char *)sqlite3_column_text(st, 3), "row0000"), "min(name)");
	dcheck(d, !strcmp((const char *)sqlite3_column_text(st, 4), "row0999"), "max(name)");
	dcheck(d, sqlite3_column_double(st, 5) == 500.5, "avg(id)");
	dg(d, (uint64_t)sqlite3_column_int64(st, 0));
	dg(d, fnv(sqlite3_column_text(st, 4), 7));
	dcheck(d, sqlite3_step(st) == SQLITE_DONE, "select done");
	sqlite3_finalize(st);

	/* group by */
	rc = sqlite3_prepare_v2(db, "SELECT g, count(*), sum(id) FROM t GROUP BY g ORDER BY g", -1,
				&st, NULL);
	dcheck(d, rc == SQLITE_OK, "prepare group");
	for (int g = 0; g < 10; g++) {
		dcheck(d, sqlite3_step(st) == SQLITE_ROW, "group row");
		dcheck(d, sqlite3_column_int(st, 0) == g, "group g");
		dcheck(d, sqlite3_column_int(st, 1) == 100, "group count");
		dcheck(d, sqlite3_column_int64(st, 2) == 49500 + 100 * g + 100, "group sum");
		dg(d, (uint64_t)sqlite3_column_int64(st, 2));
	}
	dcheck(d, sqlite3_step(st) == SQLITE_DONE, "group done");
	sqlite3_finalize(st);

	/* index, update, delete, like */
	dcheck(d, sqlite3_exec(db, "CREATE INDEX tg ON t(g, v); "
				   "UPDATE t SET v = v * 2 WHERE g = 3; "
				   "DELETE FROM t WHERE id % 7 = 0;",
			       NULL, NULL, NULL) == SQLITE_OK,
	       "index/update/delete");
	dg(d, (uint64_t)sqlite3_changes(db));
	rc = sqlite3_prepare_v2(db,
				"SELECT count(*), sum(v) FROM t WHERE g = 3 AND name LIKE 'row0%3'", -1,
				&st, NULL);
	dcheck(d, rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW, "like");
	{
		/* rows i = 3, 13, ..., 993 minus ids (i + 1) divisible by 7 */
		long n = 0;
		double s = 0;

		for (int i = 3; i < ROWS; i += 10)
			if ((i + 1) % 7) {
				n++;
				s += i * 0.5 * 2;
			}
		dcheck(d, sqlite3_column_int64(st, 0) == n, "like count");
		dcheck(d, sqlite3_column_double(st, 1) == s, "like sum");
		dg(d, (uint64_t)n);
	}
	sqlite3_finalize(st);
	dcheck(d, sqlite3_close(db) == SQLITE_OK, "close");
	exacts.active = false;
}

/*
 * Every function of libsqlite3.so.0 (its exported symbols: the whole
 * library here), registered with register_kprobes() in batches, during
 * an SQL workload: same results, exact counts for the test's own calls,
 * nothing after unregistration.
 */
Test(real_libs, sqlite_every_function_entry, .timeout = 120)
{
	struct digest ref, probed, after;
	struct refusals r;
	uint64_t *code0, *code1, t0;
	unsigned long total;
	size_t hit_fns = 0;
	int batches_ok;

	sql_workload(&ref, false);
	cr_assert_eq(ref.bad, 0, "reference run: %s", ref.first_bad);

	collect_functions("libsqlite3.so.0");
	code0 = code_snapshot();
	t0 = now_ns();
	register_all_batched(&r, 64, &batches_ok);
	print_refusals("libsqlite3.so.0 function entries", &r, nprobes);
	fprintf(stderr, "  %d batches of 64 registered whole; %.2f s\n", batches_ok,
		(double)(now_ns() - t0) / 1e9);
	cr_expect_leq((size_t)r.total * 20, nprobes, "more than 5%% of sqlite's functions refused");
	cr_expect_gt(batches_ok, 0);

	t0 = now_ns();
	sql_workload(&probed, true);
	expect_same_digest(&probed, &ref, "probed sqlite run");
	expect_exacts();
	total = total_hits();
	for (size_t i = 0; i < nprobes; i++)
		hit_fns += atomic_load(&probes[i].hits) != 0;
	fprintf(stderr, "libsqlite3.so.0: %lu hits in %zu functions, workload %.2f s\n", total,
		hit_fns, (double)(now_ns() - t0) / 1e9);
	cr_expect_gt(total, 0);
	cr_expect_geq(hit_fns, 100, "only %zu functions hit", hit_fns);

	unregister_all();
	code1 = code_snapshot();
	for (size_t i = 0; i < nprobes; i++)
		if (code0[i] != code1[i]) {
			cr_expect_eq(code0[i], code1[i], "%s: code not restored", probes[i].name);
			break;
		}
	sql_workload(&after, false);
	expect_same_digest(&after, &ref, "sqlite run after unregistration");
	cr_expect_eq(total_hits(), total, "hits after unregistration");
	free(code0);
	free(code1);
}

/* SPDX-License-Identifier: MIT */
/*
 * record_dir.c - a recording: what "ukprobe record" leaves for "ukprobe
 * report", which prints from it the bytes "ukprobe trace -o" would have
 * printed. During the run only binary data is written (nothing is
 * formatted): the agent's reader writes its records (proto.h packets of
 * FROM, SYM and RECS messages: its rings' records as they are) into
 * DIR/records, as it does for trace -o; ukprobe writes DIR/session. The report replays the session through
 * the same code as a live trace (images.c), then formats DIR/records.
 *
 * DIR/session, in the writer's byte order:
 *   struct head: magic "UKPRECRD", version, the protocol version of the
 *          messages (UKP_PROTO_VERSION), its size, the SPECs' length;
 *   the parsed SPECs (common/spec_wire.h), padded to 8 bytes;
 *   entries, each struct ent (kind, payload length) and its payload,
 *   padded to 8 bytes:
 *     START   struct ent_start, before the first packet: the session's
 *             settings the handling of packets reads;
 *     PACKET  struct ent_packet and a packet ukprobe handled (ukp_session_packet: the agents'
 *             packets, and those made from the regions of images that
 *             ended abruptly: their counts), in the order handled;
 *     REGION  struct ent_region: an image that ended abruptly, whose
 *             region (common/region.h) was copied to DIR/region-ID
 *             (sparse, but for the counts, which are in the packets):
 *             the events its agent had not written out are read there;
 *     END     struct ent_end: how the program ended.
 * A session cut short (ukprobe itself killed) is read up to its last
 * whole entry, and the report says so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "session.h"
#include "fetch_regs.h"
#include "region.h"
#include "spec_wire.h"
#include "trace_recs.h"

#define RECORD_MAGIC "UKPRECRD"
/* 3: RECS spans (DIR/records) and copied regions may hold compact
 * records (common/region.h), which a reader of 2 would refuse as damaged;
 * 4: DIR/records starts with RECORDS_HEAD (proto.h: where its whole
 * packets end), and spans may hold compact records with their callers
 * (entries and returns, 24 bytes), either of which a reader of 3 would
 * refuse as damaged; a recording of 2 or 3 reads as it did */
#define RECORD_VERSION 4
#define RECORD_VERSION_MIN 2

struct head {
	char magic[8];
	uint32_t version;         /* RECORD_VERSION (the writer's) */
	uint32_t proto;           /* UKP_PROTO_VERSION */
	uint32_t head_size;       /* sizeof(struct head) */
	uint32_t pad;
	uint64_t specs_len;
};

enum { ENT_PACKET = 1, ENT_REGION, ENT_END, ENT_START };

struct ent {
	uint32_t kind;
	uint32_t len;             /* payload bytes, before padding */
};

struct ent_start {
	int32_t pid;              /* the program ukprobe ran, 0 when attached */
	int32_t npids;            /* -p: how many processes */
	uint8_t follow;           /* -f */
	uint8_t pad[7];
};

struct ent_packet {
	int32_t peer_pid;         /* attached: the process it came from */
	uint32_t pad;
};

struct ent_region {
	uint64_t image;
	int32_t pid;
	uint32_t pad;
};

struct ent_end {
	int32_t wstatus;
	int32_t pid;              /* the program ukprobe ran, 0 when attached */
	int32_t npids;            /* -p: how many processes */
	uint32_t pad;
};

struct ukp_record {
	char *dir;
	FILE *session;
	bool started;             /* START is written */
	bool failed;              /* a write failed (errno_saved) */
	int errno_saved;
};

static char *path_in(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

static void put(struct ukp_record *r, const void *p, size_t len)
{
	static const char zeros[8];

	if (r->failed)
		return;
	if (fwrite(p, 1, len, r->session) != len ||
	    ((len & 7) && fwrite(zeros, 1, 8 - (len & 7), r->session) != 8 - (len & 7))) {
		r->failed = true;
		r->errno_saved = errno;
	}
}

static void put_ent(struct ukp_record *r, uint32_t kind, const void *p, size_t len)
{
	struct ent e = { kind, (uint32_t)len };

	put(r, &e, sizeof(e));
	put(r, p, len);
}

/* A directory to record into: made, or one that holds a recording (or
 * nothing) emptied of it. */
static int make_dir(const char *dir)
{
	static const char *const ours[] = { "session", "records" };
	struct dirent *de;
	DIR *d;
	size_t i;

	if (mkdir(dir, 0777) == 0)
		return 0;
	if (errno != EEXIST) {
		ukp_err("cannot make %s: %s", dir, strerror(errno));
		return -1;
	}
	d = opendir(dir);
	if (!d) {
		ukp_err("%s: %s", dir, strerror(errno));
		return -1;
	}
	/* only a recording is replaced: any other file says the directory
	 * is something else */
	while ((de = readdir(d))) {
		bool known = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			     !strncmp(de->d_name, "region-", 7);

		for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			known = known || !strcmp(de->d_name, ours[i]);
		if (!known) {
			ukp_err("%s holds %s, which is not a recording's: not replaced", dir,
				de->d_name);
			closedir(d);
			return -1;
		}
	}
	rewinddir(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	return 0;
}

struct ukp_record *ukp_record_create(const char *dir, const struct ukp_session *s, int *records)
{
	struct ukp_record *r = calloc(1, sizeof(*r));
	struct head h = { .version = RECORD_VERSION, .proto = UKP_PROTO_VERSION,
			  .head_size = sizeof(h) };
	size_t len = 0;
	void *form = NULL;
	char *path = NULL;
	int fd = -1;

	*records = -1;
	if (!r || !(r->dir = strdup(dir))) {
		ukp_err("out of memory");
		free(r);
		return NULL;
	}
	if (make_dir(dir))
		goto fail;
	form = ukp_specs_encode(s->specs, s->nspecs, &len);
	path = path_in(dir, "records");
	if (!form || !path) {
		ukp_err("out of memory");
		goto fail;
	}
	/* written by every image's reader (with -f, several), each packet
	 * at the end its RECORDS_HEAD says (proto.h) */
	/* (inherited by the program: no O_CLOEXEC) */
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		ukp_err("cannot make %s: %s", path, strerror(errno));
		goto fail;
	}
	if (ukp_records_head_write(fd, path))
		goto fail;
	free(path);
	path = path_in(dir, "session");
	r->session = path ? fopen(path, "we") : NULL;
	if (!r->session) {
		ukp_err("cannot make %s/session: %s", dir, strerror(errno));
		goto fail;
	}
	memcpy(h.magic, RECORD_MAGIC, sizeof(h.magic));
	h.specs_len = len;
	put(r, &h, sizeof(h));
	put(r, form, len);
	free(form);
	free(path);
	*records = fd;
	return r;
fail:
	if (fd >= 0)
		close(fd);
	if (r->session)
		fclose(r->session);
	free(form);
	free(path);
	free(r->dir);
	free(r);
	return NULL;
}

void ukp_record_packet(struct ukp_record *r, const struct ukp_session *s, const char *buf,
		       size_t n)
{
	struct ent_packet pk = { .peer_pid = s->peer_pid };
	struct ent e = { ENT_PACKET, (uint32_t)(sizeof(pk) + n) };

	if (!r->started) {
		struct ent_start st = { .pid = s->npids ? 0 : s->pid, .npids = s->npids,
					.follow = s->follow };

		put_ent(r, ENT_START, &st, sizeof(st));
		r->started = true;
	}
	put(r, &e, sizeof(e));
	if (!r->failed && fwrite(&pk, 1, sizeof(pk), r->session) != sizeof(pk)) {
		r->failed = true;
		r->errno_saved = errno;
	}
	put(r, buf, n);
}

/* The region of an image that ended abruptly, into path: what recovery
 * reads (region.c), the file's data but for the counts (recovered
 * already, in the packets), its holes left holes. 0 or -errno. */
static int copy_region(int from, const char *path)
{
	struct stat st;
	off_t pos = 0, end;
	char *buf = malloc(1 << 20);
	int to, ret = 0;

	if (!buf || fstat(from, &st)) {
		free(buf);
		return buf ? -errno : -ENOMEM;
	}
	to = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (to < 0) {
		free(buf);
		return -errno;
	}
	while (!ret && pos < st.st_size) {
		pos = lseek(from, pos, SEEK_DATA);
		if (pos < 0)
			break; /* no data after pos */
		end = lseek(from, pos, SEEK_HOLE);
		if (end < 0)
			end = st.st_size;
		if (pos < (off_t)UKP_REGION_RECS_OFF && end > (off_t)UKP_REGION_COUNTS_OFF) {
			/* (the counts: the part before them only) */
			if (pos >= (off_t)UKP_REGION_COUNTS_OFF) {
				pos = (off_t)UKP_REGION_RECS_OFF;
				continue;
			}
			end = (off_t)UKP_REGION_COUNTS_OFF;
		}
		while (pos < end) {
			size_t chunk = end - pos > (1 << 20) ? (1 << 20) : (size_t)(end - pos);
			ssize_t n = pread(from, buf, chunk, pos);

			if (n <= 0 || pwrite(to, buf, (size_t)n, pos) != n) {
				ret = n < 0 || errno ? -errno : -EIO;
				break;
			}
			pos += n;
		}
	}
	if (!ret && ftruncate(to, st.st_size))
		ret = -errno;
	if (close(to) && !ret)
		ret = -errno;
	free(buf);
	return ret;
}

int ukp_record_finish(struct ukp_record *r, struct ukp_session *s)
{
	struct ent_end e = { .wstatus = s->wstatus, .pid = s->npids ? 0 : s->pid,
			     .npids = s->npids };
	int ret = 0;
	size_t i;

	for (i = 0; i < s->nimages; i++) {
		struct ukp_image *img = s->images[i];
		struct ent_region m = { .image = img->id, .pid = img->pid };
		char name[48], *path;
		int err;

		if (!img->has_region || !img->recovered)
			continue;
		snprintf(name, sizeof(name), "region-%llx", (unsigned long long)img->id);
		path = path_in(r->dir, name);
		err = path ? copy_region(img->region_fd, path) : -ENOMEM;
		if (err) {
			ukp_err("cannot write %s: %s: the events of process %d that its agent "
				"had not written out are not in the recording",
				path ? path : name, strerror(-err), img->pid);
			ret = -1;
		} else {
			put_ent(r, ENT_REGION, &m, sizeof(m));
		}
		free(path);
		ukp_region_drop(img);
	}
	put_ent(r, ENT_END, &e, sizeof(e));
	if (fclose(r->session) && !r->failed) {
		r->failed = true;
		r->errno_saved = errno;
	}
	if (r->failed) {
		ukp_err("cannot write %s/session: %s", r->dir, strerror(r->errno_saved));
		ret = -1;
	}
	free(r->dir);
	free(r);
	return ret;
}

/* ------------------------------------------------------------ report */

static struct ukp_image *image_by_id(struct ukp_session *s, uint64_t id, int32_t pid)
{
	size_t i;

	for (i = 0; i < s->nimages; i++)
		if (s->images[i]->id == id && s->images[i]->pid == pid)
			return s->images[i];
	return NULL;
}

/* ENT_REGION: the image reads its last events from the copy. */
static int take_region(const char *dir, struct ukp_session *s, const struct ent_region *m)
{
	struct ukp_image *img = image_by_id(s, m->image, m->pid);
	char name[48], *path;
	int fd;

	if (!img)
		return -1;
	snprintf(name, sizeof(name), "region-%llx", (unsigned long long)m->image);
	path = path_in(dir, name);
	fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		ukp_warn("%s/%s: %s: the last events of process %d are not shown", dir, name,
			 strerror(errno), m->pid);
		free(path);
		return 0;
	}
	free(path);
	ukp_region_drop(img);
	img->has_region = true;
	img->region_fd = fd;
	img->recovered = true;
	return 0;
}

/* The register words a SPEC of this build may name (the parser's
 * table): what a recording's SPECs are checked against. */
static unsigned int reg_words(void)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < ukp_fetch_nregs; i++)
		if (ukp_fetch_regs[i].index >= 0 && (unsigned int)ukp_fetch_regs[i].index >= n)
			n = (unsigned int)ukp_fetch_regs[i].index + 1;
	return n;
}

int ukp_record_replay(const char *dir, struct ukp_session *s, const struct ukp_session_ops *ops,
		      void *arg, int *records)
{
	char *spath = path_in(dir, "session"), *rpath = path_in(dir, "records");
	const char *p, *why = NULL;
	struct stat st;
	struct head h;
	size_t size, pos;
	void *map = MAP_FAILED;
	uint32_t version;
	int fd = -1, ret = UKP_EXIT_FAIL;
	enum ukp_specs_error err;
	bool ended = false;

	*records = -1;
	if (!spath || !rpath) {
		ukp_err("out of memory");
		goto out;
	}
	fd = open(spath, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		ukp_err("%s: %s (not a recording of ukprobe record?)", spath, strerror(errno));
		goto out;
	}
	size = (size_t)st.st_size;
	if (size >= sizeof(h))
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ukp_err("%s: %s", spath, size < sizeof(h) ? "not a recording (too short)"
							 : strerror(errno));
		goto out;
	}
	p = map;
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, RECORD_MAGIC, sizeof(h.magic))) {
		ukp_err("%s: not a recording of ukprobe record (no UKPRECRD header)", spath);
		goto out;
	}
	if (h.version < RECORD_VERSION_MIN || h.version > RECORD_VERSION ||
	    h.proto != UKP_PROTO_VERSION || h.head_size != sizeof(h)) {
		ukp_err("%s: a recording of another ukprobe version (format %u, protocol %u; this "
			"one reads %u to %u, %u)", spath, h.version, h.proto, RECORD_VERSION_MIN,
			RECORD_VERSION, UKP_PROTO_VERSION);
		goto out;
	}
	if (h.specs_len > size - sizeof(h)) {
		ukp_err("%s: cut short in its SPECs (%zu bytes)", spath, size);
		goto out;
	}
	err = ukp_specs_decode(p + sizeof(h), (size_t)h.specs_len, reg_words(), &s->specs,
			       &s->nspecs, &version);
	if (err) {
		ukp_err("%s: its SPECs are damaged (at byte %zu)", spath, sizeof(h));
		goto out;
	}
	*records = open(rpath, O_RDONLY | O_CLOEXEC);
	if (*records < 0) {
		ukp_err("%s: %s", rpath, strerror(errno));
		goto out;
	}
	ret = 0;
	pos = sizeof(h) + ((h.specs_len + 7) & ~(uint64_t)7);
	while (pos < size && !ended) {
		struct ent e;
		struct ent_end end;
		struct ent_region reg;
		struct ent_start start;
		struct ent_packet pk;

		if (size - pos < sizeof(e)) {
			why = "cut short";
			break;
		}
		memcpy(&e, p + pos, sizeof(e));
		if (e.len > size - pos - sizeof(e)) {
			why = "cut short";
			break;
		}
		pos += sizeof(e);
		switch (e.kind) {
		case ENT_START:
			memcpy(&start, p + pos, e.len < sizeof(start) ? e.len : sizeof(start));
			if (e.len != sizeof(start) || start.npids < 0) {
				why = "damaged (its start)";
				break;
			}
			s->pid = start.pid;
			s->npids = start.npids;
			s->follow = start.follow;
			break;
		case ENT_PACKET:
			if (e.len < sizeof(pk)) {
				why = "damaged (a packet)";
				break;
			}
			memcpy(&pk, p + pos, sizeof(pk));
			s->peer_pid = pk.peer_pid;
			ukp_session_packet(s, p + pos + sizeof(pk), e.len - sizeof(pk), ops, arg);
			s->peer_pid = 0;
			if (s->protocol_error)
				why = "damaged (a packet the agent could not have sent)";
			break;
		case ENT_REGION:
			memcpy(&reg, p + pos, e.len < sizeof(reg) ? e.len : sizeof(reg));
			if (e.len != sizeof(reg) || take_region(dir, s, &reg))
				why = "damaged (a region of no image)";
			break;
		case ENT_END:
			memcpy(&end, p + pos, e.len < sizeof(end) ? e.len : sizeof(end));
			if (e.len != sizeof(end) || end.npids < 0) {
				why = "damaged (its end)";
				break;
			}
			s->wstatus = end.wstatus;
			s->pid = end.pid;
			s->npids = end.npids;
			ended = true;
			break;
		default:
			why = "damaged (an entry of unknown kind)";
			break;
		}
		if (why) {
			pos -= sizeof(e);
			break;
		}
		pos += (e.len + 7) & ~(size_t)7;
	}
	if (!why && !ended)
		why = "cut short (ukprobe record did not finish)";
	if (why) {
		ukp_warn("%s is %s after %zu of %zu bytes: what came before is shown", spath, why,
			 pos, size);
		s->protocol_error = false; /* the events before it are shown */
		ret = -1;
	}
out:
	if (map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	free(spath);
	free(rpath);
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * line_out.c - output that shares its pipe or terminal with the traced
 * program (stdout, a FIFO, /dev/stdout) and must not cut a line in two.
 *
 * stdio flushes a full buffer wherever it ends, so a write of the program
 * between two flushes lands inside one of our lines. This stream writes
 * whole lines only, in pieces of at most PIPE_BUF bytes (which a pipe
 * never interleaves with another writer's), and holds a partial line
 * until its end arrives or the stream is closed.
 * Context: the CLI's one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

struct line_out {
	int fd;
	bool own_fd;            /* closed with the stream (not stdout's) */
	size_t ncarry;          /* a line's start, its end not written yet */
	char carry[PIPE_BUF];
};

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write the carry and then as many whole lines of p as fit in one piece. */
static ssize_t lo_write(void *cookie, const char *buf, size_t size)
{
	struct line_out *lo = cookie;
	size_t done = 0;

	while (done < size) {
		size_t room = sizeof(lo->carry) - lo->ncarry, take = size - done, cut;
		const char *nl;

		if (take > room)
			take = room;
		memcpy(lo->carry + lo->ncarry, buf + done, take);
		lo->ncarry += take;
		done += take;
		/* the piece ends after its last newline; a line longer than a
		 * piece goes out cut, as it must */
		nl = memrchr(lo->carry, '\n', lo->ncarry);
		cut = nl ? (size_t)(nl - lo->carry) + 1 :
			   (lo->ncarry == sizeof(lo->carry) ? lo->ncarry : 0);
		if (!cut)
			continue;
		if (write_all(lo->fd, lo->carry, cut))
			return -1;
		memmove(lo->carry, lo->carry + cut, lo->ncarry - cut);
		lo->ncarry -= cut;
	}
	return (ssize_t)size;
}

static int lo_close(void *cookie)
{
	struct line_out *lo = cookie;
	int ret = lo->ncarry ? write_all(lo->fd, lo->carry, lo->ncarry) : 0;

	if (lo->own_fd && close(lo->fd))
		ret = -1;
	free(lo);
	return ret;
}

/* A stream of whole lines on fd (own_fd: the stream closes it); NULL with
 * errno set. */
static FILE *line_stream(int fd, bool own_fd)
{
	static const cookie_io_functions_t io = { .write = lo_write, .close = lo_close };
	struct line_out *lo = malloc(sizeof(*lo));
	FILE *f;

	if (!lo)
		return NULL;
	lo->fd = fd;
	lo->own_fd = own_fd;
	lo->ncarry = 0;
	f = fopencookie(lo, "w", io);
	if (!f) {
		free(lo);
		return NULL;
	}
	/* stdio's own buffer only batches: the cookie decides where lines end */
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	return f;
}

FILE *ukp_open_output(const char *path)
{
	struct stat st;
	FILE *f = NULL;
	int fd;

	if (!path) {
		fflush(stdout);
		f = line_stream(STDOUT_FILENO, false);
	} else if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			f = line_stream(fd, true);
			if (!f)
				close(fd);
		}
	} else {
		f = fopen(path, "w");
	}
	if (!f)
		ukp_err("cannot open %s: %s", path ? path : "the standard output", strerror(errno));
	else
		__fsetlocking(f, FSETLOCKING_BYCALLER); /* one thread: no lock per call */
	return f;
}

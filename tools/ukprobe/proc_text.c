/* SPDX-License-Identifier: MIT */
/*
 * proc_text.c - reading a small /proc file whole: what target.c (before
 * an attach) and load.c (threads and signal actions while it loads the
 * agent) both ask of /proc. Any context of the tool.
 */
#include <fcntl.h>
#include <unistd.h>

#include "target.h"

bool ukp_read_proc_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

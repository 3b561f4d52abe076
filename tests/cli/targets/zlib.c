/* SPDX-License-Identifier: MIT */
/*
 * A program linked with zlib (a DT_NEEDED library of its own, not one
 * the agent needs): compressBound(1000), then compress() of 1000 bytes,
 * which calls compress2() inside libz.
 */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

int main(void)
{
	unsigned char src[1000], dst[2048];
	uLongf dlen = sizeof(dst);
	uLong bound;
	int ret;

	memset(src, 'u', sizeof(src));
	bound = compressBound(sizeof(src));
	ret = compress(dst, &dlen, src, sizeof(src));
	printf("bound %lu ret %d\n", bound, ret);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* usdt_targets.c's SDT probes (test_usdt.c). */
#ifndef UKT_USDT_TARGETS_H
#define UKT_USDT_TARGETS_H

struct ukt_pair {
	long a;
	int b;
};

extern int ukt_usdt_global;
int ukt_usdt_args(int a, long b, signed char c, short d, unsigned u, const char *s);
long ukt_usdt_mem(long x, int y, const char *s);
int ukt_usdt_ptr(const struct ukt_pair *p);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * SDT probes whose arguments GCC writes with an index register at -O2
 * on x86-64 (<sys/sdt.h>): array elements indexed by the loop variable,
 * "DISP(%B,%I[,S])" for an array through a pointer or on the stack, and
 * "SYM(,%I,S)" for a global array in non-PIC code (the -no-pie build,
 * tgt_sdt_index_nopie); on AArch64, "[xB, xI]" for a byte array. Each
 * hit's values are printed by the program too, for the test to compare
 * with ukprobe's.
 *
 *   tgt_sdt_index N    N rounds: one line per hit, "i=.. a=.. g=.. v=.. k=.. s=.. c=.. p=.."
 *                      (tgt:elem), "x=.. y=.." (tgt:leaf), "t=.." (tgt:tls)
 */
#include <sys/sdt.h>

#include <stdio.h>
#include <stdlib.h>

struct rec {
	long tag;
	int v[8];
};

long garr[8] = { -1, 2, -300000000000L, 4, -5, 6, -7, 8 };
static volatile int bias;

__attribute__((noinline)) long walk(const int *a, const struct rec *r, long n, int k,
				  const signed char *c)
{
	short loc[8];
	long s = 0, i;

	for (i = 0; i < 8; i++)
		loc[i] = (short)(bias - 1000 * (short)i);
	for (i = 0; i < n; i++) {
		STAP_PROBE8(tgt, elem, i, a[i], garr[i], r->v[i], a[i + k], loc[i], c[i],
			    a[i + 8 - 1]);
		printf("i=%ld a=%d g=%ld v=%d k=%d s=%d c=%d p=%d\n", i, a[i], garr[i], r->v[i],
		       a[i + k], loc[i], c[i], a[i + 8 - 1]);
		s += a[i];
	}
	return s;
}

/* A leaf: its array in the red zone below %rsp, "-DISP(%rsp,%I,S)" */
__attribute__((noinline)) int leaf(long i, int m)
{
	int loc[8], j;

	for (j = 0; j < 8; j++)
		loc[j] = (j - 4) * m;
	STAP_PROBE2(tgt, leaf, loc[i], loc[i + 1]);
	return loc[3];
}

/* A thread-local variable: x86-64's GCC writes "%fs:tls_v@tpoff",
 * which ukprobe refuses (the offset is the linker's); AArch64's, the
 * address in a register */
static __thread long tls_v;

__attribute__((noinline)) void tls_probe(void)
{
	STAP_PROBE1(tgt, tls, tls_v);
}

int main(int argc, char **argv)
{
	static const int a[16] = { -10, 11, -12, 13, -14, 15, -16, 17,
				   -2147483647 - 1, 19, -20, 21, -22, 23, -24, 2147483647 };
	static const signed char c[8] = { -128, 127, -1, 0, 1, -2, 3, -4 };
	struct rec r = { 7, { 100, -101, 102, -103, 104, -105, 106, -107 } };
	int rounds = argc > 1 ? atoi(argv[1]) : 1, j;

	for (j = 0; j < rounds; j++) {
		long i;

		walk(a, &r, 8, 8, c);
		for (i = 0; i < 7; i++) {
			leaf(i, 1000 + j);
			printf("x=%ld y=%ld\n", (i - 4) * (1000L + j), (i - 3) * (1000L + j));
		}
		tls_v = 11L * j - 5;
		tls_probe();
		printf("t=%ld\n", tls_v);
	}
	return 0;
}

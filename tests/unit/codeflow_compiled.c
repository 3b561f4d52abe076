// SPDX-License-Identifier: MIT
/*
 * codeflow_compiled.c - compiler-made shapes for test_codeflow.c. Built at
 * -O2 whatever the build type (tests/meson.build): a dense switch, which
 * GCC and clang both compile to a jump table dispatch, and a loop with an
 * unlikely call, which GCC splits into NAME and NAME.cold (the cold part
 * jumps back into the loop).
 */
int ukt_flow_switch(int op, int a);
int ukt_flow_split_back(const int *p, int n);
void ukt_flow_rare(int v);

int ukt_flow_switch(int op, int a)
{
	switch (op) {
	case 0: return a + 11;
	case 1: return a * 3;
	case 2: return a - 7;
	case 3: return a ^ 0x55;
	case 4: return a << 2;
	case 5: return a >> 1;
	case 6: return a | 0x100;
	case 7: return a & 0xff;
	case 8: return -a;
	case 9: return ~a;
	case 10: return a * a;
	case 11: return a + op * 5;
	default: return 0;
	}
}

static volatile int rare_calls;

__attribute__((cold, noinline)) void ukt_flow_rare(int v)
{
	rare_calls += v;
}

int ukt_flow_split_back(const int *p, int n)
{
	int s = 0;

	for (int i = 0; i < n; i++) {
		if (__builtin_expect(p[i] < 0, 0))
			ukt_flow_rare(p[i]);
		s += p[i];
	}
	return s;
}

// SPDX-License-Identifier: MIT
/*
 * codeflow_switch.c - a dense switch for test_codeflow.c. Built at -O2
 * whatever the build type (tests/meson.build), so that GCC and clang both
 * compile it to a jump table dispatch.
 */
int ukt_flow_switch(int op, int a);

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

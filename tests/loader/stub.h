/* SPDX-License-Identifier: MIT */
/* stub.h - the parameters test_loader.c gives the agent stub (stub.c). */
#ifndef UKP_TEST_STUB_H
#define UKP_TEST_STUB_H

#include <stdint.h>

#define STUB_INSNS 16

struct stub_params {
	char sock[64];     /* an abstract unix socket's name to connect to */
	uint64_t peek;     /* an address in the target whose 8 bytes it reports (0: none) */
	uint64_t code;     /* the Zydis stub: where it decodes STUB_INSNS instructions (0: none) */
};

#endif

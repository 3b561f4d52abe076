/* SPDX-License-Identifier: MIT */
/*
 * sigframe.h - the records the kernel writes after the registers of an
 * AArch64 signal frame (uc_mcontext.__reserved: FP/SIMD, ESR, SVE, ...,
 * and the extra space an extra_context record points to), see
 * sigframe.c.
 */
#ifndef UKP_A64_SIGFRAME_H
#define UKP_A64_SIGFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

/* [trap] The record with this magic of the frame, at least min_size
 * bytes long, or NULL. */
void *a64_frame_record(const ucontext_t *uc, uint32_t magic, size_t min_size);

#endif /* UKP_A64_SIGFRAME_H */

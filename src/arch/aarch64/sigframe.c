// SPDX-License-Identifier: MIT
/*
 * sigframe.c - finding a record of an AArch64 signal frame. The kernel
 * (and qemu-user) write a list of records, each a struct _aarch64_ctx
 * header with its magic and size, into uc_mcontext.__reserved, ended by
 * a zero header; when they do not fit (large SVE vector lengths), an
 * extra_context record points to the rest, further up the same frame.
 */
#include <asm/sigcontext.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "sigframe.h"

/* [trap] */
UKP_TRAP_TEXT void *a64_frame_record(const ucontext_t *uc, uint32_t magic, size_t min_size)
{
	unsigned char *p = (unsigned char *)uc->uc_mcontext.__reserved;
	unsigned char *end = p + sizeof(uc->uc_mcontext.__reserved);
	bool extra = false;

	while (p + sizeof(struct _aarch64_ctx) <= end) {
		struct _aarch64_ctx *h = (void *)p;

		if (h->magic == 0 || h->size < sizeof(*h) || h->size > (size_t)(end - p))
			break;
		if (h->magic == magic)
			return h->size >= min_size ? p : NULL;
		if (h->magic == EXTRA_MAGIC && !extra && h->size >= sizeof(struct extra_context)) {
			const struct extra_context *x = (const void *)p;

			/* the list goes on there (once: the kernel's rule) */
			extra = true;
			p = (unsigned char *)(uintptr_t)x->datap;
			end = p + x->size;
			continue;
		}
		p += h->size;
	}
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * teardown.c - the library leaves a process it was injected into
 * (ukprobe -p): once the last probe is unregistered, its optimizer
 * thread ends, the program's signal actions are given back to the
 * kernel, and the library's descriptor on /proc/self/mem is closed. What must outlive it stays: the return trampoline, out-of-line
 * slots and detour buffers (a thread may still be inside one, or return
 * through the trampoline later), and the code of the whole object (the
 * object is never unloaded). The next registration starts it all again.
 */
#include <errno.h>

#include "base/base.h"
#include "core/core.h"
#include "optimizer/optimizer.h"
#include "process/process.h"
#include "text/text.h"

/* [reg-free] Ordinary context, not a handler. */
UKPROBES_API int ukprobes_shutdown(void)
{
	int ret;

	if (ukp_in_probe_context())
		return -EBUSY;
	ret = ukp_lock_for_show();
	if (ret)
		return ret;
	if (ukp_all_sites) {
		ukp_unlock_for_show();
		return -EBUSY;
	}
	ukp_opt_stop();
	/* a thread that hit a breakpoint just before it was removed takes
	 * its SIGTRAP in the library's handler, not in the program's action
	 * (SIG_DFL: the end of the process) */
	if (!ukp_threads_drain())
		pr_warn("ukprobes_shutdown: a thread did not answer; a breakpoint trap may still be pending in it\n");
	/* (and neither that SIGTRAP nor a scan request is still pending:
	 * else the library's actions stay, and it says so) */
	if (!ukp_signals_uninstall())
		ret = -EBUSY;
	/* the descriptor on /proc/self/mem goes too (opened again when
	 * needed), as after a fork */
	ukp_text_release();
	ukp_unlock_for_show();
	return ret;
}

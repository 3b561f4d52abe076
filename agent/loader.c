/* SPDX-License-Identifier: MIT */
/*
 * loader.c - the dynamic loader's map changes, as they happen.
 *
 * The loader calls r_debug's r_brk (_dl_debug_state, an empty function
 * kept for debuggers) with r_state RT_ADD or RT_DELETE before it maps or
 * unmaps objects, and with RT_CONSISTENT once they are mapped (before
 * dlopen() returns, before their initializers run) or unmapped. A probe
 * there sends the calling thread, instead of into the empty function,
 * into ukpa_loader_stop(): an ordinary call on that thread, with the
 * loader's lock held, so that no other thread maps or unmaps anything
 * meanwhile. probes.c then registers the SPECs that wait for an object
 * before the program can call into it, and keeps registrations from
 * overlapping an unmap (ukpa_probes_loader_event). This covers what the
 * dlopen interposer cannot: an attached process (the program's calls are
 * bound to libc's dlopen), the objects libc loads itself, and dlclose().
 *
 * The probe has a post_handler (that never runs) so that it stays a
 * breakpoint: the library ignores a changed instruction pointer on a
 * jump-optimized hit. The agent's own loads (ukpa_busy) pass through.
 *
 * The freestanding agent has no loader of its own to ask: in a dynamic
 * program it finds the loader's r_debug where debuggers do, in the
 * program's DT_DEBUG (the loader writes its address there at the start);
 * a static program has none, and its objects never change.
 */
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <time.h>

#include "agent.h"
#include "objects_changed.h"

static struct kprobe loader_kp;
static bool loader_on;
/* Threads the probe sent to ukpa_loader_stop() that have not left it:
 * counted in the handler, so that once the probe is unregistered none
 * can be on its way there uncounted (ukpa_loader_drain). */
static _Atomic int loader_inside;
/* Calls of r_brk seen (the agent's own loads too): a registration that
 * saw none, with r_state RT_CONSISTENT after it, ran while the objects
 * stood still (ukpa_loader_settled). */
static _Atomic unsigned long loader_calls;

#ifdef UKP_FREE
static struct r_debug *found_rd;

/* [init] the main program's DT_DEBUG (the first object walked) */
static int find_debug(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const ElfW(Dyn) *d;

		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (d = (const void *)(info->dlpi_addr + ph->p_vaddr); d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_DEBUG)
				found_rd = (struct r_debug *)d->d_un.d_ptr;
	}
	return 1; /* the program only */
}

/* [init] the loader's r_debug, or NULL (a static program) */
static struct r_debug *rdebug(void)
{
	if (!found_rd)
		dl_iterate_phdr(find_debug, NULL);
	return found_rd && found_rd->r_version ? found_rd : NULL;
}
#else
static struct r_debug *rdebug(void)
{
	return &_r_debug;
}
#endif

/* [init] on the thread that called the loader's r_brk: what changed.
 * Returns to r_brk's caller, as the empty function would have. */
static __attribute__((noinline)) void ukpa_loader_stop(void)
{
	int saved = errno;

	ukpa_busy++;
	ukp_objects_changed();
	ukpa_probes_loader_event(rdebug()->r_state);
	ukpa_busy--;
	errno = saved;
	atomic_fetch_sub(&loader_inside, 1);
}

/* [hit] */
static int loader_pre(struct kprobe *kp, struct pt_regs *regs)
{
	(void)kp;
	atomic_fetch_add(&loader_calls, 1);
	if (ukpa_busy)
		return 0;
	atomic_fetch_add(&loader_inside, 1);
	instruction_pointer_set(regs, (unsigned long)ukpa_loader_stop);
	return 1; /* resume at the new instruction pointer */
}

/* [hit] never called: pre_handler always stops or the breakpoint is
 * stepped; its presence keeps the probe from being jump-optimized */
static void loader_post(struct kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
	(void)kp;
	(void)regs;
	(void)flags;
}

int ukpa_loader_watch(int *state)
{
	struct r_debug *rd = rdebug();
	int ret;

	*state = rd ? rd->r_state : 0;
	if (loader_on)
		return 0;
	if (!rd || !rd->r_brk)
		return -ENOENT;
	loader_kp = (struct kprobe){ .addr = (kprobe_opcode_t *)rd->r_brk,
				     .pre_handler = loader_pre, .post_handler = loader_post };
	ret = register_kprobe(&loader_kp);
	if (ret)
		return ret;
	loader_on = true;
	/* from here on the stops report every change (an unmap waits in
	 * its stop for a registration under the probes' lock): what the
	 * library's object table read before the watch may be gone, read
	 * it again */
	ukp_objects_changed();
	/* read after the breakpoint is in: a change begun before it was
	 * still shows in r_state */
	*state = __atomic_load_n(&rd->r_state, __ATOMIC_ACQUIRE);
	return 0;
}

unsigned long ukpa_loader_calls(void)
{
	return atomic_load(&loader_calls);
}

bool ukpa_loader_settled(unsigned long since)
{
	struct r_debug *rd = rdebug();

	return !loader_on || (atomic_load(&loader_calls) == since && rd &&
			      __atomic_load_n(&rd->r_state, __ATOMIC_ACQUIRE) == RT_CONSISTENT);
}

void ukpa_loader_unwatch(void)
{
	if (!loader_on)
		return;
	unregister_kprobe(&loader_kp);
	loader_on = false;
}

/* [init] At the detach, not under probes.c's lock (a stop may be waiting
 * for it), after ukpa_loader_unwatch(): wait for the threads still in a
 * stop to leave it. A stop that registered its object's probes just
 * before the detach unregistered them all goes on to wait for the
 * optimizer (ukprobes_wait_optimizer), which enters the library: after
 * ukprobes_shutdown() that entry installed the library's signal actions
 * again, and the freestanding agent could not be unloaded (issue 28).
 * Bounded, as the stop's own wait for the lock is: a thread that never
 * comes back (stopped by a debugger) must not hang the detach; the
 * unload then finds the agent's actions and leaves it loaded. */
void ukpa_loader_drain(void)
{
	for (int i = 0; atomic_load(&loader_inside) > 0 && i < 5000; i++) {
		struct timespec moment = { 0, 1000000 };

		nanosleep(&moment, NULL);
	}
}

void ukpa_loader_after_fork(void)
{
	atomic_store(&loader_inside, 0);
}

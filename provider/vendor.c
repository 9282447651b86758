// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Finding the vendor provider of a device, with no code per vendor.
 *
 * Providers register their verbs_device_ops with libibverbs from their
 * constructors and export nothing; libibverbs keeps the list private. Every
 * provider has loaded (libibverbs dlopens them all before it matches any
 * device), so we look for the ops struct in their memory: in each loaded
 * lib<name>-rdmav34.so other than ours, an ops candidate is a pointer-aligned
 * spot in a non-executable PT_LOAD segment whose name points to a string in
 * that object, whose match_table points into it, whose alloc_device,
 * alloc_context and uninit_device point into its executable segment, and
 * whose ABI range is sane. Among candidates the one named like the library
 * wins (vmw_pvrdma's ops are "pvrdma", so the name is a preference, not a
 * condition). The device goes to the provider whose match table lists its
 * kernel driver id, as libibverbs' own first matching pass does.
 *
 * Why not intercept registration: verbs_register_driver_34 is called inside
 * libibverbs by the vendor's constructor, which ran before we could wrap it
 * unless we were LD_PRELOADed, and the stacking must work for unmodified
 * applications started normally.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include "ibckpt.h"

#define MAX_SEGS 8
#define MAX_MATCH_ENTS 4096

/* The cache of ibckpt_vendor_find(); taken by a fork's prepare, last (fork.c). */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

struct object_map {
	uintptr_t lo[MAX_SEGS], hi[MAX_SEGS];
	bool exec[MAX_SEGS];
	int nseg;
};

static bool in_object(const struct object_map *m, uintptr_t p, size_t len, bool exec)
{
	int i;

	for (i = 0; i < m->nseg; i++)
		if (m->exec[i] == exec && p >= m->lo[i] && p + len <= m->hi[i] && p + len >= p)
			return true;
	return false;
}

static bool string_in_object(const struct object_map *m, const char *s)
{
	size_t n;

	for (n = 0; n < 64; n++) {
		if (!in_object(m, (uintptr_t)s + n, 1, false) &&
		    !in_object(m, (uintptr_t)s + n, 1, true))
			return false;
		if (!s[n])
			return n > 0;
	}
	return false;
}

static bool plausible_ops(const struct object_map *m, const struct verbs_device_ops *ops)
{
	const struct verbs_match_ent *e;
	int n;

	if (!ops->name || !string_in_object(m, ops->name))
		return false;
	if (ops->match_min_abi_version > ops->match_max_abi_version)
		return false;
	if (!ops->alloc_device || !in_object(m, (uintptr_t)ops->alloc_device, 1, true) ||
	    !ops->alloc_context || !in_object(m, (uintptr_t)ops->alloc_context, 1, true) ||
	    !ops->uninit_device || !in_object(m, (uintptr_t)ops->uninit_device, 1, true))
		return false;
	if (ops->match_device && !in_object(m, (uintptr_t)ops->match_device, 1, true))
		return false;
	if (!ops->match_table)
		return true;
	for (e = ops->match_table, n = 0; n < MAX_MATCH_ENTS; e++, n++) {
		if (!in_object(m, (uintptr_t)e, sizeof(*e), false))
			return false;
		if (e->kind == VERBS_MATCH_SENTINEL)
			return true;
		if (e->kind > VERBS_MATCH_DRIVER_ID)
			return false;
	}
	return false;
}

static const struct verbs_match_ent *match_driver_id(const struct verbs_device_ops *ops,
						     uint32_t driver_id)
{
	const struct verbs_match_ent *e;

	for (e = ops->match_table; e && e->kind != VERBS_MATCH_SENTINEL; e++)
		if (e->kind == VERBS_MATCH_DRIVER_ID && e->u.driver_id == driver_id)
			return e;
	return NULL;
}

struct search {
	uint32_t driver_id;
	const void *self;			/* our own object: never a vendor */
	const struct verbs_device_ops *found;
	const struct verbs_match_ent *match;
	char found_in[256];
};

/* The provider name in ".../lib<name>-rdmav34.so", or NULL. */
static bool provider_name(const char *path, char *name, size_t len)
{
	const char *base = strrchr(path, '/'), *end;

	base = base ? base + 1 : path;
	end = strstr(base, "-rdmav34.so");
	if (strncmp(base, "lib", 3) || !end || end[11] || (size_t)(end - base - 3) >= len)
		return false;
	memcpy(name, base + 3, end - base - 3);
	name[end - base - 3] = 0;
	return true;
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
	const struct verbs_device_ops *best = NULL;
	struct search *s = data;
	struct object_map m = { .nseg = 0 };
	char name[64];
	int i;

	(void)size;
	if (!info->dlpi_name || !provider_name(info->dlpi_name, name, sizeof(name)))
		return 0;
	for (i = 0; i < info->dlpi_phnum && m.nseg < MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		m.lo[m.nseg] = info->dlpi_addr + ph->p_vaddr;
		m.hi[m.nseg] = m.lo[m.nseg] + ph->p_memsz;
		m.exec[m.nseg] = ph->p_flags & PF_X;
		m.nseg++;
	}
	if ((uintptr_t)s->self >= m.lo[0] && in_object(&m, (uintptr_t)s->self, 1, false))
		return 0;
	for (i = 0; i < m.nseg; i++) {
		uintptr_t p;

		if (m.exec[i])
			continue;
		for (p = (m.lo[i] + 7) & ~(uintptr_t)7; p + sizeof(struct verbs_device_ops) <= m.hi[i];
		     p += sizeof(void *)) {
			const struct verbs_device_ops *ops = (const void *)p;

			if (!plausible_ops(&m, ops) || !match_driver_id(ops, s->driver_id))
				continue;
			if (!best || !strcmp(ops->name, name))
				best = ops;
		}
	}
	if (best && !s->found) {
		s->found = best;
		s->match = match_driver_id(best, s->driver_id);
		snprintf(s->found_in, sizeof(s->found_in), "%s", info->dlpi_name);
	}
	return 0;
}

/**
 * ibckpt_vendor_find() - the vendor provider that claims a kernel driver id
 * @driver_id: the device's enum rdma_driver_id
 * @match: set to the vendor's match entry for it
 *
 * Return: the vendor's ops, or NULL (no loaded provider claims the id).
 */
const struct verbs_device_ops *ibckpt_vendor_find(uint32_t driver_id,
						  const struct verbs_match_ent **match)
{
	/*
	 * The scan reads every provider's data (millions of instructions):
	 * remember its answer per driver id; libibverbs asks twice per device
	 * (match, then alloc) and again on every rescan of the device list.
	 */
	static struct {			/* under cache_lock */
		uint32_t driver_id;
		const struct verbs_device_ops *ops;
		const struct verbs_match_ent *match;
	} cache[8];
	static unsigned int ncache;
	struct search s = { .driver_id = driver_id, .self = &ibckpt_ctx_ops };
	unsigned int i;

	pthread_mutex_lock(&cache_lock);
	for (i = 0; i < ncache; i++) {
		if (cache[i].driver_id == driver_id) {
			*match = cache[i].match;
			pthread_mutex_unlock(&cache_lock);
			return cache[i].ops;
		}
	}
	dl_iterate_phdr(scan_object, &s);
	if (s.found) {
		ibckpt_dbg("driver id %u: vendor provider \"%s\" in %s", driver_id,
			   s.found->name, s.found_in);
		*match = s.match;
		if (ncache < 8) {
			cache[ncache].driver_id = driver_id;
			cache[ncache].ops = s.found;
			cache[ncache].match = s.match;
			ncache++;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	return s.found;
}

/* The cache is the process's, valid in a child: only its lock is reset. */
void ibckpt_vendor_atfork(enum ibckpt_fork_phase ph)
{
	if (ph == IBCKPT_FORK_PREPARE)
		pthread_mutex_lock(&cache_lock);
	else
		pthread_mutex_unlock(&cache_lock);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* usage_log.c -- the bounded log of a task's readings of the kernel's counts (usage_log.h). */
#include <string.h>

#include "usage_log.h"

bool pdi_usage_after(const struct pdi_usage *a, const struct pdi_usage *b)
{
	return b->at_ns >= a->at_ns && b->cpu_ns >= a->cpu_ns && b->wait_ns >= a->wait_ns;
}

uint64_t pdi_usage_log_gap(const struct pdi_usage_log *l)
{
	return l->gap_ns ? l->gap_ns : PDI_USAGE_LOG_GAP_NS;
}

bool pdi_usage_log_due(const struct pdi_usage_log *l, uint64_t now)
{
	return !l->n || now >= l->v[l->n - 1].at_ns + pdi_usage_log_gap(l);
}

void pdi_usage_log_add(struct pdi_usage_log *l, const struct pdi_usage *u)
{
	if (!u->at_ns || !pdi_usage_log_due(l, u->at_ns) || (l->n && !pdi_usage_after(&l->v[l->n - 1], u)))
		return;
	if (l->n == PDI_USAGE_LOG_MAX) {
		for (uint32_t i = 1; i < PDI_USAGE_LOG_MAX / 2; i++)
			l->v[i] = l->v[2 * i];
		l->n = PDI_USAGE_LOG_MAX / 2;
		l->gap_ns = 2 * pdi_usage_log_gap(l);
		if (!pdi_usage_log_due(l, u->at_ns))
			return;
	}
	l->v[l->n++] = *u;
}

void pdi_usage_recent_add(struct pdi_usage_recent *r, const struct pdi_usage *u)
{
	if (r->n == PDI_USAGE_RECENT)
		memmove(r->v, r->v + 1, --r->n * sizeof(r->v[0]));
	r->v[r->n++] = *u;
}

struct pdi_usage pdi_usage_at(const struct pdi_usage *r, size_t k, uint64_t t)
{
	size_t lo = 0, hi = k - 1;
	double f;

	if (t <= r[0].at_ns)
		return r[0];
	if (t >= r[hi].at_ns)
		return r[hi];
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (r[mid].at_ns <= t)
			lo = mid;
		else
			hi = mid;
	}
	f = (double)(t - r[lo].at_ns) / (double)(r[hi].at_ns - r[lo].at_ns);
	return (struct pdi_usage){t, r[lo].cpu_ns + (uint64_t)(f * (double)(r[hi].cpu_ns - r[lo].cpu_ns)),
				  r[lo].wait_ns + (uint64_t)(f * (double)(r[hi].wait_ns - r[lo].wait_ns)),
				  r[lo].group_ns && r[hi].group_ns >= r[lo].group_ns
					  ? r[lo].group_ns + (uint64_t)(f * (double)(r[hi].group_ns - r[lo].group_ns))
					  : 0};
}

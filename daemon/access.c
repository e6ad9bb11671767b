/* SPDX-License-Identifier: GPL-2.0-only */
/* access.c -- who may read which step: a user reads only their own steps; root, the SlurmUser
 * and the admin group read all. The same answer for every door a question comes in by: the bus
 * (bus/api.c, its signals in bus/subscribe.c) and the other nodes' gather (cluster/gather_step.c). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>

#include "access.h"
#include "daemon.h"
#include "persist.h"

bool pdi_step_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PDI_STEP_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static bool in_group(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);
	gid_t groups[256];
	int n = 256;

	if (!pw)
		return false;
	if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
		n = 256; /* more groups than room: look through those we got */
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

struct pdi_caller pdi_caller_of(struct pdi_daemon *d, uid_t uid)
{
	return (struct pdi_caller){
		.uid = uid,
		.admin = uid == 0 || (d->slurm_uid != (uid_t)-1 && uid == d->slurm_uid) ||
			 (d->admin_gid != (gid_t)-1 && in_group(uid, d->admin_gid)),
	};
}

bool pdi_may_read(const struct pdi_caller *c, const struct pdi_step *s)
{
	return c->admin || c->uid == s->uid;
}

int pdi_find_readable(struct pdi_daemon *d, const struct pdi_caller *c, const char *name, struct pdi_step **ret)
{
	struct pdi_step *s = pdi_registry_find_step(&d->reg, name);
	uid_t owner;
	int r;

	if (!s) {
		if (!pdi_step_name_valid(name))
			return -ENOENT;
		/* whose it is, from the store's row: another user's step is never loaded */
		r = pdi_persist_owner(d, name, &owner);
		if (r < 0)
			return r;
		if (!c->admin && c->uid != owner)
			return -EACCES;
		r = pdi_persist_load(d, name, &s);
		if (r < 0)
			return r;
		d->evict_due = true; /* it joins the cache of ended steps, within its limits */
	} else if (!pdi_may_read(c, s)) {
		return -EACCES;
	}
	pdi_registry_touch(&d->reg, s);
	*ret = s;
	return 0;
}

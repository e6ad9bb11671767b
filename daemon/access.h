/* SPDX-License-Identifier: GPL-2.0-only */
/* access.h -- who may read which step, for every door a question comes in by (access.c). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define PDI_STEP_NAME_MAX 128

struct pdi_daemon;
struct pdi_step;

/* NAME is 1 to PDI_STEP_NAME_MAX of [A-Za-z0-9._-]. */
bool pdi_step_name_valid(const char *name);

struct pdi_caller {
	uid_t uid;
	bool admin; /* root, the SlurmUser or a member of the admin group: reads every step */
};

/* Who UID is to pdimond: an admin (root, the SlurmUser, the admin group) reads every step. */
struct pdi_caller pdi_caller_of(struct pdi_daemon *d, uid_t uid);
bool pdi_may_read(const struct pdi_caller *c, const struct pdi_step *s);
/* The step called NAME that C may read, into *RET: in memory, or brought back from the store
 * into the cache of ended steps, but only after the store's row says that C may read it.
 * -ENOENT (no such step), -EACCES (another user's: tell them -ENOENT), -EBUSY (the database
 * is locked by another process), -ENOMEM, -EIO. */
int pdi_find_readable(struct pdi_daemon *d, const struct pdi_caller *c, const char *name, struct pdi_step **ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* show.h -- what "pdimon status", "steps" and "show" print (show.c): replies are allocated
 * text; NULL on allocation failure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "persist.h"

struct pdi_daemon;
struct pdi_step;

char *pdi_show_status(struct pdi_daemon *d, bool json);
/* The steps OWNER may see ((uid_t)-1: all): those in memory, then MORE (the store's). */
char *pdi_show_steps(struct pdi_daemon *d, bool json, uid_t owner, const struct pdi_step_row *more, size_t nmore);
char *pdi_show_step(struct pdi_daemon *d, const struct pdi_step *s, const char *format);

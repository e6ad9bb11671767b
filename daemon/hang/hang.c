/* SPDX-License-Identifier: GPL-2.0-only */
/* hang.c -- what a site or a step chooses to do about a hung step, by name: the setting
 * on_hang and --pdi-monitor=on-hang= read it alike. */
#include <errno.h>
#include <string.h>

#include "hang.h"

const char *const pdi_on_hang_names[] = {"", "report", "command", "cancel"};

int pdi_on_hang_parse(const char *name, enum pdi_on_hang *ret)
{
	for (unsigned i = PDI_ON_HANG_REPORT; i <= PDI_ON_HANG_CANCEL; i++)
		if (!strcmp(name, pdi_on_hang_names[i])) {
			*ret = (enum pdi_on_hang)i;
			return 0;
		}
	return -EINVAL;
}

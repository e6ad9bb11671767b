/* SPDX-License-Identifier: GPL-2.0-only */
/* upcalls.h -- the calls that run up the floors, wired once (upcalls.c): pdimond.c hands them
 * to the registry and to the daemon (doc/design/layout.md). */
#pragma once

#include "daemon.h"
#include "registry.h"

extern const struct pdi_registry_parts pdi_registry_parts;
extern const struct pdi_upcalls pdi_upcalls;

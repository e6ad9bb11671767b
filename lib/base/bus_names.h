/* SPDX-License-Identifier: GPL-2.0-only */
/* bus_names.h -- where pdimond is on the system bus, for the daemon, the CLI and the SPANK
 * plugin alike (the D-Bus policy in packaging/ and the interface XML spell the same names). */
#ifndef PDI_BUS_NAMES_H
#define PDI_BUS_NAMES_H

#define PDI_BUS_NAME "org.pdimon.Monitor1"  /* the well-known name pdimond owns */
#define PDI_BUS_PATH "/org/pdimon/Monitor1" /* its one object */
#define PDI_BUS_IFACE "org.pdimon.Monitor1" /* the object's interface */

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/* objopen.h -- opening the files that users' processes map, without trusting them: never a
 * FIFO, a device or a symlink of the user's choosing, never another file than the one mapped,
 * never one larger than PDI_OBJECT_MAX_BYTES. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "procmaps.h"

/* The largest object file pdimond reads: big enough for any real executable with its debug
 * information, small enough that a sparse file of a user cannot make it read without end. */
#define PDI_OBJECT_MAX_BYTES (4ull << 30)

/* Errors besides those of open(2): */
#define PDI_EOBJ_NOT_REGULAR (-EMEDIUMTYPE) /* a FIFO, a device, a directory, a socket */
#define PDI_EOBJ_TOO_BIG (-EFBIG)           /* larger than PDI_OBJECT_MAX_BYTES */
#define PDI_EOBJ_REPLACED (-ESTALE)         /* the path names another file than the one mapped */

/* A read-only fd on the file mapping M of process PID maps: /proc/PID/map_files/START-END (the
 * very file mapped, deleted or replaced on disk alike), else, if M's file is not deleted, M->path
 * resolved inside /proc/PID/root without following any symlink. The file must be regular, no
 * larger than PDI_OBJECT_MAX_BYTES, and have M's inode. Never blocks. */
int pdi_objopen_mapped(pid_t pid, const struct pdi_mapping *m, int *ret_fd);

/* The same checks for a path of pdimond's own (a library to trap, a debug file): symlinks are
 * followed (the system's own directories), the file it reaches is checked. WANT_INO 0: any. */
int pdi_objopen_path(const char *path, uint64_t want_ino, int *ret_fd);

/* The reason behind a PDI_EOBJ_* error or an errno, for a log line. */
const char *pdi_objopen_strerror(int r);

/* SPDX-License-Identifier: GPL-2.0-only */
/* ctl.h -- the framing of pdimon's local control socket (CLI <-> pdimond).
 *
 * A request is an argument vector: u32 version, u32 length, then NUL-terminated words.
 * A reply is i32 status (0 or negative errno), u32 length, then the text (JSON, a
 * rendered view, or a one-line error message). Lengths are bounded on both sides. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PDI_CTL_VERSION 1
#define PDI_CTL_MAX_REQUEST (64u * 1024)
#define PDI_CTL_MAX_REPLY (256u * 1024 * 1024)
#define PDI_CTL_MAX_ARGS 4096

int pdi_ctl_send_request(int fd, int argc, char *const *argv);
/* On success *ret_argv is one allocation (free it alone), NULL-terminated. -EBADMSG on a
 * malformed request, -EPROTO on another version, -ECONNRESET if the peer closed early. */
int pdi_ctl_recv_request(int fd, char ***ret_argv, int *ret_argc);

int pdi_ctl_send_reply(int fd, int status, const char *text, size_t len);
/* *ret_text is NUL-terminated and allocated. */
int pdi_ctl_recv_reply(int fd, int *ret_status, char **ret_text, size_t *ret_len);

/* SPDX-License-Identifier: GPL-2.0-only */
/* ctl.c -- encoding and decoding control-socket frames. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pdi_ctl_send_request(int fd, int argc, char *const *argv)
{
	uint32_t hdr[2] = {PDI_CTL_VERSION, 0};
	size_t len = 0;
	char *buf, *p;
	int r;

	if (argc < 0 || argc > PDI_CTL_MAX_ARGS)
		return -E2BIG;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (len > PDI_CTL_MAX_REQUEST)
		return -E2BIG;
	buf = malloc(sizeof(hdr) + len);
	if (!buf)
		return -ENOMEM;
	hdr[1] = (uint32_t)len;
	memcpy(buf, hdr, sizeof(hdr));
	p = buf + sizeof(hdr);
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		memcpy(p, argv[i], n);
		p += n;
	}
	r = write_all(fd, buf, sizeof(hdr) + len);
	free(buf);
	return r;
}

int pdi_ctl_recv_request(int fd, char ***ret_argv, int *ret_argc)
{
	uint32_t hdr[2];
	char **argv, *words;
	int argc = 0, r;

	r = read_all(fd, hdr, sizeof(hdr));
	if (r < 0)
		return r;
	if (hdr[0] != PDI_CTL_VERSION)
		return -EPROTO;
	if (hdr[1] == 0 || hdr[1] > PDI_CTL_MAX_REQUEST)
		return -EBADMSG;
	/* one block: the pointer array, then the words it points into */
	argv = malloc(sizeof(char *) * (PDI_CTL_MAX_ARGS + 1) + hdr[1] + 1);
	if (!argv)
		return -ENOMEM;
	words = (char *)(argv + PDI_CTL_MAX_ARGS + 1);
	r = read_all(fd, words, hdr[1]);
	if (r < 0)
		goto fail;
	r = -EBADMSG;
	if (words[hdr[1] - 1] != '\0')
		goto fail;
	for (char *p = words; p < words + hdr[1]; p += strlen(p) + 1) {
		if (argc == PDI_CTL_MAX_ARGS)
			goto fail;
		argv[argc++] = p;
	}
	argv[argc] = NULL;
	*ret_argv = argv;
	*ret_argc = argc;
	return 0;
fail:
	free(argv);
	return r;
}

int pdi_ctl_send_reply(int fd, int status, const char *text, size_t len)
{
	int32_t hdr[2] = {status, 0};
	int r;

	if (len > PDI_CTL_MAX_REPLY)
		return -E2BIG;
	hdr[1] = (int32_t)len;
	r = write_all(fd, hdr, sizeof(hdr));
	return r < 0 ? r : write_all(fd, text, len);
}

int pdi_ctl_recv_reply(int fd, int *ret_status, char **ret_text, size_t *ret_len)
{
	int32_t hdr[2];
	char *text;
	int r;

	r = read_all(fd, hdr, sizeof(hdr));
	if (r < 0)
		return r;
	if (hdr[1] < 0 || (uint32_t)hdr[1] > PDI_CTL_MAX_REPLY || hdr[0] > 0)
		return -EBADMSG;
	text = malloc((size_t)hdr[1] + 1);
	if (!text)
		return -ENOMEM;
	r = read_all(fd, text, (size_t)hdr[1]);
	if (r < 0) {
		free(text);
		return r;
	}
	text[hdr[1]] = '\0';
	*ret_status = hdr[0];
	*ret_text = text;
	*ret_len = (size_t)hdr[1];
	return 0;
}

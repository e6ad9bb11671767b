/* SPDX-License-Identifier: GPL-2.0-only */
/* test-ctl.c -- control-socket framing over a socketpair: round trips and malformed frames. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"

static int sv[2];

static void open_pair(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	/* a test that would block forever fails instead */
	struct timeval tv = {.tv_sec = 5};
	cr_assert_eq(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	cr_assert_eq(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
}

static void close_pair(void)
{
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
}

TestSuite(ctl, .init = open_pair, .fini = close_pair);

static void write_frame(int fd, uint32_t a, uint32_t b, const void *body, size_t n)
{
	uint32_t hdr[2] = {a, b};

	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	if (n)
		cr_assert_eq(write(fd, body, n), (ssize_t)n);
}

static int recv_request(int fd, char ***argv, int *argc)
{
	*argv = NULL;
	*argc = -1;
	return pdi_ctl_recv_request(fd, argv, argc);
}

Test(ctl, request_round_trip)
{
	char *args[] = {"show", "--json", "", "two words", "caf\xc3\xa9", "x"};
	char **argv;
	int argc;

	cr_assert_eq(pdi_ctl_send_request(sv[0], 6, args), 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), 0);
	cr_assert_eq(argc, 6);
	for (int i = 0; i < 6; i++)
		cr_assert_str_eq(argv[i], args[i], "argument %d", i);
	cr_assert_null(argv[6], "argv is NULL-terminated");
	free(argv);
}

Test(ctl, request_wire_format)
{
	char *args[] = {"ab", "c"};
	unsigned char buf[64];
	uint32_t hdr[2];

	cr_assert_eq(pdi_ctl_send_request(sv[0], 2, args), 0);
	cr_assert_eq(read(sv[1], buf, sizeof(buf)), 8 + 5);
	memcpy(hdr, buf, sizeof(hdr));
	cr_assert_eq(hdr[0], PDI_CTL_VERSION);
	cr_assert_eq(hdr[1], 5);
	cr_assert_eq(memcmp(buf + 8, "ab\0c\0", 5), 0);
}

Test(ctl, several_requests_back_to_back)
{
	char *a[] = {"status"}, *b[] = {"dump", "--rank", "3"};
	char **argv;
	int argc;

	cr_assert_eq(pdi_ctl_send_request(sv[0], 1, a), 0);
	cr_assert_eq(pdi_ctl_send_request(sv[0], 3, b), 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), 0);
	cr_assert_eq(argc, 1);
	cr_assert_str_eq(argv[0], "status");
	cr_assert_null(argv[1]);
	free(argv);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), 0);
	cr_assert_eq(argc, 3);
	cr_assert_str_eq(argv[0], "dump");
	cr_assert_str_eq(argv[1], "--rank");
	cr_assert_str_eq(argv[2], "3");
	cr_assert_null(argv[3]);
	free(argv);
}

Test(ctl, request_argument_bounds)
{
	static char *many[PDI_CTL_MAX_ARGS + 1];
	char *big = malloc(PDI_CTL_MAX_REQUEST + 1), *one[] = {big};
	char **argv;
	int argc;

	for (int i = 0; i <= PDI_CTL_MAX_ARGS; i++)
		many[i] = "a";
	cr_assert_eq(pdi_ctl_send_request(sv[0], PDI_CTL_MAX_ARGS + 1, many), -E2BIG);
	cr_assert_eq(pdi_ctl_send_request(sv[0], -1, many), -E2BIG);

	/* a word as long as the whole request may be, NUL included, is too long */
	cr_assert_not_null(big);
	memset(big, 'x', PDI_CTL_MAX_REQUEST);
	big[PDI_CTL_MAX_REQUEST] = '\0';
	cr_assert_eq(pdi_ctl_send_request(sv[0], 1, one), -E2BIG);
	free(big);

	/* exactly the maximum number of arguments goes through (8 KiB, fits the socket buffer) */
	cr_assert_eq(pdi_ctl_send_request(sv[0], PDI_CTL_MAX_ARGS, many), 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), 0);
	cr_assert_eq(argc, PDI_CTL_MAX_ARGS);
	cr_assert_str_eq(argv[PDI_CTL_MAX_ARGS - 1], "a");
	cr_assert_null(argv[PDI_CTL_MAX_ARGS]);
	free(argv);
}

Test(ctl, too_many_words_in_a_frame)
{
	/* a hand-made frame with one word more than the receiver takes */
	size_t n = 2 * (PDI_CTL_MAX_ARGS + 1);
	char *body = malloc(n);
	char **argv;
	int argc;

	cr_assert_not_null(body);
	for (size_t i = 0; i < n; i += 2)
		body[i] = 'w', body[i + 1] = '\0';
	write_frame(sv[0], PDI_CTL_VERSION, (uint32_t)n, body, n);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -EBADMSG);
	free(body);
}

Test(ctl, reply_round_trip)
{
	const char text[] = "{\"ok\":true}\n";
	char *got = NULL;
	size_t len = 0;
	int status = 1;

	cr_assert_eq(pdi_ctl_send_reply(sv[1], 0, text, strlen(text)), 0);
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &got, &len), 0);
	cr_assert_eq(status, 0);
	cr_assert_eq(len, strlen(text));
	cr_assert_str_eq(got, text);
	free(got);

	/* an error status with a message, then an empty reply */
	cr_assert_eq(pdi_ctl_send_reply(sv[1], -ENOENT, "no such rank", 12), 0);
	cr_assert_eq(pdi_ctl_send_reply(sv[1], -EINVAL, NULL, 0), 0);
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &got, &len), 0);
	cr_assert_eq(status, -ENOENT);
	cr_assert_eq(len, 12);
	cr_assert_str_eq(got, "no such rank");
	free(got);
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &got, &len), 0);
	cr_assert_eq(status, -EINVAL);
	cr_assert_eq(len, 0);
	cr_assert_str_eq(got, "", "an empty reply is still a NUL-terminated string");
	free(got);
}

Test(ctl, reply_keeps_embedded_nul)
{
	char *got;
	size_t len;
	int status;

	cr_assert_eq(pdi_ctl_send_reply(sv[1], 0, "a\0b", 3), 0);
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &got, &len), 0);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(got, "a\0b", 4), 0, "text plus the added NUL");
	free(got);
}

Test(ctl, large_reply_round_trip)
{
	/* bigger than any socket buffer: a child writes while we read */
	size_t n = 3u << 20;
	char *text = malloc(n), *got;
	size_t len;
	int status;
	pid_t pid;
	int ws;

	cr_assert_not_null(text);
	for (size_t i = 0; i < n; i++)
		text[i] = (char)('a' + i % 26);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(pdi_ctl_send_reply(sv[1], 0, text, n) == 0 ? 0 : 1);
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &got, &len), 0);
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	cr_assert_eq(status, 0);
	cr_assert_eq(len, n);
	cr_assert_eq(memcmp(got, text, n), 0);
	cr_assert_eq(got[n], '\0');
	free(got);
	free(text);
}

Test(ctl, bad_version_is_eproto)
{
	char **argv;
	int argc;

	/* the header alone decides: no body needed */
	write_frame(sv[0], PDI_CTL_VERSION + 1, 2, NULL, 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -EPROTO);
	cr_assert_null(argv);
	write_frame(sv[0], 0, 2, NULL, 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -EPROTO);
}

Test(ctl, oversized_request_is_ebadmsg)
{
	char **argv;
	int argc;

	write_frame(sv[0], PDI_CTL_VERSION, PDI_CTL_MAX_REQUEST + 1, NULL, 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -EBADMSG);
	cr_assert_null(argv);
}

Test(ctl, empty_request_is_ebadmsg)
{
	char **argv;
	int argc;

	write_frame(sv[0], PDI_CTL_VERSION, 0, NULL, 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -EBADMSG);
}

Test(ctl, request_at_maximum_length_is_accepted)
{
	char *body = malloc(PDI_CTL_MAX_REQUEST);
	char **argv;
	int argc;
	pid_t pid;
	int ws;

	cr_assert_not_null(body);
	memset(body, 'y', PDI_CTL_MAX_REQUEST - 1);
	body[PDI_CTL_MAX_REQUEST - 1] = '\0';
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		uint32_t hdr[2] = {PDI_CTL_VERSION, PDI_CTL_MAX_REQUEST};
		_exit(write(sv[0], hdr, 8) == 8 &&
				      write(sv[0], body, PDI_CTL_MAX_REQUEST) == PDI_CTL_MAX_REQUEST
			      ? 0
			      : 1);
	}
	cr_assert_eq(recv_request(sv[1], &argv, &argc), 0);
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	cr_assert_eq(argc, 1);
	cr_assert_eq(strlen(argv[0]), PDI_CTL_MAX_REQUEST - 1);
	free(argv);
	free(body);
}

Test(ctl, unterminated_request_is_ebadmsg)
{
	char **argv;
	int argc;

	write_frame(sv[0], PDI_CTL_VERSION, 7, "abc\0def", 7);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -EBADMSG);
	cr_assert_null(argv);
}

Test(ctl, peer_closing_mid_frame_is_econnreset)
{
	char **argv;
	int argc;

	write_frame(sv[0], PDI_CTL_VERSION, 10, "abc", 3);
	close(sv[0]);
	sv[0] = -1;
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -ECONNRESET);
	cr_assert_null(argv);
}

Test(ctl, peer_closing_mid_header_is_econnreset)
{
	uint32_t v = PDI_CTL_VERSION;
	char **argv;
	int argc;

	cr_assert_eq(write(sv[0], &v, 4), 4);
	close(sv[0]);
	sv[0] = -1;
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -ECONNRESET);
}

Test(ctl, peer_closing_before_anything_is_econnreset)
{
	char **argv;
	int argc;
	char *text;
	size_t len;
	int status;

	close(sv[0]);
	sv[0] = -1;
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -ECONNRESET);
	cr_assert_eq(pdi_ctl_recv_reply(sv[1], &status, &text, &len), -ECONNRESET);
}

Test(ctl, reply_truncated_is_econnreset)
{
	char *text = NULL;
	size_t len;
	int status;

	write_frame(sv[1], 0, 100, "only part", 9);
	close(sv[1]);
	sv[1] = -1;
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &text, &len), -ECONNRESET);
	cr_assert_null(text);
}

Test(ctl, malformed_reply_header_is_ebadmsg)
{
	char *text;
	size_t len;
	int status;

	write_frame(sv[1], 1, 0, NULL, 0); /* positive status */
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &text, &len), -EBADMSG);
	write_frame(sv[1], 0, (uint32_t)-1, NULL, 0); /* negative length */
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &text, &len), -EBADMSG);
	write_frame(sv[1], 0, PDI_CTL_MAX_REPLY + 1, NULL, 0);
	cr_assert_eq(pdi_ctl_recv_reply(sv[0], &status, &text, &len), -EBADMSG);
}

Test(ctl, oversized_reply_is_refused_by_sender)
{
	cr_assert_eq(pdi_ctl_send_reply(sv[1], 0, "", (size_t)PDI_CTL_MAX_REPLY + 1), -E2BIG);
}

Test(ctl, receive_timeout_is_etimedout)
{
	struct timeval tv = {.tv_usec = 20000};
	char **argv;
	int argc;

	cr_assert_eq(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	cr_assert_eq(recv_request(sv[1], &argv, &argc), -ETIMEDOUT);
}

Test(ctl, send_to_closed_peer_fails_without_sigpipe)
{
	char *args[] = {"status"};

	close(sv[1]);
	sv[1] = -1;
	cr_assert_eq(pdi_ctl_send_request(sv[0], 1, args), -EPIPE);
}

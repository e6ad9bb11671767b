/* SPDX-License-Identifier: GPL-2.0-only */
/* test-wire.c -- peer protocol frames and body fields: round trips, streams cut anywhere,
 * hostile headers judged on their 16 bytes, reader overruns. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static const char cred1[] = "MUNGE:AwQDAACfake+credential+text:";
static const char body1[] = "gather job 42 step 7";

static uint8_t *frame(uint8_t type, const char *cred, const void *body, uint32_t body_len, size_t *len)
{
	uint8_t *p;

	cr_assert_eq(pdi_wire_encode(type, 0x1234, cred, cred ? (uint32_t)strlen(cred) : 0, body, body_len, &p, len), 0);
	return p;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A 16-byte header with the given fields, as a hostile peer might send it. */
static void header(uint8_t *p, uint32_t magic, uint8_t version, uint8_t type, uint32_t cred_len, uint32_t body_len)
{
	le32(p, magic);
	p[4] = version;
	p[5] = type;
	p[6] = p[7] = 0;
	le32(p + 8, cred_len);
	le32(p + 12, body_len);
}

static void expect_frame1(const struct pdi_wire_frame *f)
{
	cr_assert_eq(f->version, PDI_WIRE_VERSION);
	cr_assert_eq(f->type, PDI_WIRE_GATHER);
	cr_assert_eq(f->flags, 0x1234);
	cr_assert_eq(f->cred_len, strlen(cred1));
	cr_assert_eq(memcmp(f->cred, cred1, f->cred_len), 0);
	cr_assert_eq(f->body_len, strlen(body1));
	cr_assert_eq(memcmp(f->body, body1, f->body_len), 0);
}

/* Feed BUF in two pieces cut at K, draining after each feed; the frames found, in order,
 * must all be frame 1. Returns how many. */
static int feed_split(const uint8_t *buf, size_t n, size_t k)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	int frames = 0, r;

	pdi_wire_decoder_init(&d, 0);
	cr_assert_eq(pdi_wire_decoder_feed(&d, buf, k), 0);
	while ((r = pdi_wire_decoder_next(&d, &f)) == 1) {
		expect_frame1(&f);
		frames++;
	}
	cr_assert_eq(r, 0, "cut at %zu: need more, got %d", k, r);
	cr_assert_eq(pdi_wire_decoder_feed(&d, buf + k, n - k), 0);
	while ((r = pdi_wire_decoder_next(&d, &f)) == 1) {
		expect_frame1(&f);
		frames++;
	}
	cr_assert_eq(r, 0);
	pdi_wire_decoder_done(&d);
	return frames;
}

/* The first verdict next() gives on BUF fed whole. */
static int decode_once(const void *buf, size_t n, uint32_t max_body)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	int r;

	pdi_wire_decoder_init(&d, max_body);
	cr_assert_eq(pdi_wire_decoder_feed(&d, buf, n), 0);
	r = pdi_wire_decoder_next(&d, &f);
	/* sticky: the connection is done for */
	if (r < 0) {
		cr_assert_eq(pdi_wire_decoder_next(&d, &f), r);
		cr_assert_eq(pdi_wire_decoder_feed(&d, "x", 1), r);
	}
	pdi_wire_decoder_done(&d);
	return r;
}

Test(wire, round_trip)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	size_t n;
	uint8_t *p = frame(PDI_WIRE_GATHER, cred1, body1, (uint32_t)strlen(body1), &n);
	char cred[PDI_WIRE_MAX_CRED + 1];

	cr_assert_eq(n, PDI_WIRE_HEADER + strlen(cred1) + strlen(body1));
	cr_assert_eq(memcmp(p, "PDIM", 4), 0, "the magic reads PDIM on the wire");
	pdi_wire_decoder_init(&d, 0);
	cr_assert_eq(d.max_body, PDI_WIRE_DEFAULT_MAX_BODY);
	cr_assert_eq(pdi_wire_decoder_feed(&d, p, n), 0);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 1);
	expect_frame1(&f);
	cr_assert_eq(pdi_wire_frame_cred(&f, cred, sizeof(cred)), 0);
	cr_assert_str_eq(cred, cred1);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 0);
	pdi_wire_decoder_done(&d);
	free(p);
}

Test(wire, empty_cred_and_body)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	size_t n;
	uint8_t *p = frame(PDI_WIRE_ERROR, NULL, NULL, 0, &n);

	cr_assert_eq(n, PDI_WIRE_HEADER);
	pdi_wire_decoder_init(&d, 0);
	cr_assert_eq(pdi_wire_decoder_feed(&d, p, n), 0);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 1);
	cr_assert_eq(f.type, PDI_WIRE_ERROR);
	cr_assert_eq(f.cred_len, 0);
	cr_assert_eq(f.body_len, 0);
	pdi_wire_decoder_done(&d);
	free(p);
}

Test(wire, split_at_every_byte)
{
	size_t n;
	uint8_t *p = frame(PDI_WIRE_GATHER, cred1, body1, (uint32_t)strlen(body1), &n);
	uint8_t *two = malloc(2 * n);

	memcpy(two, p, n);
	memcpy(two + n, p, n);
	for (size_t k = 0; k <= n; k++)
		cr_assert_eq(feed_split(p, n, k), 1, "one frame cut at %zu", k);
	for (size_t k = 0; k <= 2 * n; k++)
		cr_assert_eq(feed_split(two, 2 * n, k), 2, "two frames cut at %zu", k);
	free(two);
	free(p);
}

Test(wire, byte_by_byte)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	size_t n;
	uint8_t *p = frame(PDI_WIRE_GATHER, cred1, body1, (uint32_t)strlen(body1), &n);

	pdi_wire_decoder_init(&d, 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(pdi_wire_decoder_next(&d, &f), 0, "need more after %zu bytes", i);
		cr_assert_eq(pdi_wire_decoder_feed(&d, p + i, 1), 0);
	}
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 1);
	expect_frame1(&f);
	pdi_wire_decoder_done(&d);
	free(p);
}

Test(wire, two_frames_in_one_feed)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	size_t n1, n2;
	uint8_t *a = frame(PDI_WIRE_GATHER, cred1, body1, (uint32_t)strlen(body1), &n1);
	uint8_t *b = frame(PDI_WIRE_RESULT, cred1, "ok", 2, &n2);
	uint8_t *both = malloc(n1 + n2);

	memcpy(both, a, n1);
	memcpy(both + n1, b, n2);
	pdi_wire_decoder_init(&d, 0);
	cr_assert_eq(pdi_wire_decoder_feed(&d, both, n1 + n2), 0);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 1);
	expect_frame1(&f);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 1);
	cr_assert_eq(f.type, PDI_WIRE_RESULT);
	cr_assert_eq(f.body_len, 2);
	cr_assert_eq(memcmp(f.body, "ok", 2), 0);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 0);
	pdi_wire_decoder_done(&d);
	free(both);
	free(a);
	free(b);
}

Test(wire, truncated_needs_more)
{
	size_t n;
	uint8_t *p = frame(PDI_WIRE_GATHER, cred1, body1, (uint32_t)strlen(body1), &n);

	cr_assert_eq(decode_once(p, PDI_WIRE_HEADER - 1, 0), 0, "truncated header");
	cr_assert_eq(decode_once(p, PDI_WIRE_HEADER, 0), 0, "header only");
	cr_assert_eq(decode_once(p, PDI_WIRE_HEADER + 3, 0), 0, "truncated credential");
	cr_assert_eq(decode_once(p, n - 1, 0), 0, "truncated body");
	free(p);
}

Test(wire, bad_magic)
{
	uint8_t h[PDI_WIRE_HEADER];

	header(h, 0x4d494451u, PDI_WIRE_VERSION, PDI_WIRE_GATHER, 0, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EBADMSG);
	/* garbage is told from a slow peer on its first wrong byte */
	cr_assert_eq(decode_once("G", 1, 0), -EBADMSG);
	cr_assert_eq(decode_once("PDI", 3, 0), 0);
	cr_assert_eq(decode_once("PDX", 3, 0), -EBADMSG);
}

Test(wire, unknown_version)
{
	uint8_t h[PDI_WIRE_HEADER];

	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION + 1, PDI_WIRE_GATHER, 0, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EPROTONOSUPPORT);
	header(h, PDI_WIRE_MAGIC, 0, PDI_WIRE_GATHER, 0, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EPROTONOSUPPORT);
	/* a newer version's other fields may mean anything: still "unsupported" */
	header(h, PDI_WIRE_MAGIC, 2, 77, UINT32_MAX, UINT32_MAX);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EPROTONOSUPPORT);
}

Test(wire, unknown_type)
{
	uint8_t h[PDI_WIRE_HEADER];

	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, 0, 0, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EBADMSG);
	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, PDI_WIRE_ERROR + 1, 0, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EBADMSG);
}

Test(wire, cred_over_limit)
{
	uint8_t h[PDI_WIRE_HEADER];

	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, PDI_WIRE_GATHER, PDI_WIRE_MAX_CRED + 1, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EBADMSG);
	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, PDI_WIRE_GATHER, PDI_WIRE_MAX_CRED, 0);
	cr_assert_eq(decode_once(h, sizeof(h), 0), 0, "at the limit: waits for the credential");
}

Test(wire, body_over_limit_judged_on_header)
{
	uint8_t h[PDI_WIRE_HEADER];

	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, PDI_WIRE_RESULT, 0, 1025);
	cr_assert_eq(decode_once(h, sizeof(h), 1024), -EMSGSIZE);
	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, PDI_WIRE_RESULT, 0, UINT32_MAX);
	cr_assert_eq(decode_once(h, sizeof(h), 0), -EMSGSIZE);
	header(h, PDI_WIRE_MAGIC, PDI_WIRE_VERSION, PDI_WIRE_RESULT, 0, 1024);
	cr_assert_eq(decode_once(h, sizeof(h), 1024), 0, "at the limit: waits for the body");
}

Test(wire, garbage)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t buf[256];

	for (int round = 0; round < 1000; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[i] = (uint8_t)x;
		}
		cr_assert_lt(decode_once(buf, sizeof(buf), 0), 0);
	}
	cr_assert_eq(decode_once("GET / HTTP/1.1\r\n\r\n", 18, 0), -EBADMSG);
}

Test(wire, garbage_after_a_good_frame)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	size_t n;
	uint8_t *p = frame(PDI_WIRE_GATHER, cred1, body1, (uint32_t)strlen(body1), &n);

	pdi_wire_decoder_init(&d, 0);
	cr_assert_eq(pdi_wire_decoder_feed(&d, p, n), 0);
	cr_assert_eq(pdi_wire_decoder_feed(&d, "junk", 4), 0);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), 1);
	expect_frame1(&f);
	cr_assert_eq(pdi_wire_decoder_next(&d, &f), -EBADMSG);
	pdi_wire_decoder_done(&d);
	free(p);
}

Test(wire, undrained_feed_bounded)
{
	struct pdi_wire_decoder d;
	size_t n, fed = 0;
	uint8_t *p = frame(PDI_WIRE_RESULT, NULL, "0123456789abcdef", 16, &n);
	int r = 0;

	pdi_wire_decoder_init(&d, 16);
	/* never drained: refused once one maximal frame's worth waits */
	while (fed < 10 * (PDI_WIRE_HEADER + PDI_WIRE_MAX_CRED + 16) && (r = pdi_wire_decoder_feed(&d, p, n)) == 0)
		fed += n;
	cr_assert_eq(r, -EMSGSIZE);
	cr_assert_geq(fed, PDI_WIRE_HEADER + PDI_WIRE_MAX_CRED + 16);
	cr_assert_lt(fed, PDI_WIRE_HEADER + PDI_WIRE_MAX_CRED + 16 + n);
	pdi_wire_decoder_done(&d);
	free(p);
}

Test(wire, drained_decoder_takes_any_feed)
{
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	size_t n;
	uint8_t *p = frame(PDI_WIRE_RESULT, NULL, "0123456789abcdef", 16, &n);
	uint8_t *many = malloc(1000 * n);
	int frames = 0, r;

	for (int i = 0; i < 1000; i++)
		memcpy(many + i * n, p, n);
	pdi_wire_decoder_init(&d, 16);
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(pdi_wire_decoder_feed(&d, many, 1000 * n), 0);
		while ((r = pdi_wire_decoder_next(&d, &f)) == 1)
			frames++;
		cr_assert_eq(r, 0);
	}
	cr_assert_eq(frames, 3000);
	pdi_wire_decoder_done(&d);
	free(many);
	free(p);
}

Test(wire, encode_refuses_bad_arguments)
{
	uint8_t *p = NULL;
	size_t n = 0;
	char big[PDI_WIRE_MAX_CRED + 1];

	memset(big, 'A', sizeof(big));
	cr_assert_eq(pdi_wire_encode(0, 0, NULL, 0, NULL, 0, &p, &n), -EINVAL);
	cr_assert_eq(pdi_wire_encode(PDI_WIRE_ERROR + 1, 0, NULL, 0, NULL, 0, &p, &n), -EINVAL);
	cr_assert_eq(pdi_wire_encode(PDI_WIRE_GATHER, 0, big, sizeof(big), NULL, 0, &p, &n), -EINVAL);
	cr_assert_eq(pdi_wire_encode(PDI_WIRE_GATHER, 0, NULL, 3, NULL, 0, &p, &n), -EINVAL);
	cr_assert_eq(pdi_wire_encode(PDI_WIRE_GATHER, 0, NULL, 0, NULL, 3, &p, &n), -EINVAL);
	cr_assert_null(p);
}

Test(wire, frame_cred_refuses_nul_and_overflow)
{
	struct pdi_wire_frame f = {.cred = "MUN\0GE", .cred_len = 6};
	char buf[8];

	cr_assert_eq(pdi_wire_frame_cred(&f, buf, sizeof(buf)), -EBADMSG);
	cr_assert_str_eq(buf, "");
	f = (struct pdi_wire_frame){.cred = "MUNGE:abc", .cred_len = 9};
	cr_assert_eq(pdi_wire_frame_cred(&f, buf, sizeof(buf)), -EBADMSG);
	f.cred_len = 7;
	cr_assert_eq(pdi_wire_frame_cred(&f, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "MUNGE:a");
}

Test(wire, fields_round_trip)
{
	struct pdi_wire_writer w = {0};
	struct pdi_wire_reader r;
	const uint8_t *b;
	uint32_t n;
	char s[16];

	pdi_wire_put_u8(&w, 0xab);
	pdi_wire_put_u32(&w, 0xdeadbeef);
	pdi_wire_put_u64(&w, 0x0123456789abcdefull);
	pdi_wire_put_bytes(&w, "\0\1\2", 3);
	pdi_wire_put_str(&w, "node-17");
	pdi_wire_put_str(&w, "");
	cr_assert_eq(w.err, 0);
	cr_assert_eq(w.len, 1 + 4 + 8 + 4 + 3 + 4 + 7 + 4);
	pdi_wire_reader_init(&r, w.buf, w.len);
	cr_assert_eq(pdi_wire_get_u8(&r), 0xab);
	cr_assert_eq(pdi_wire_get_u32(&r), 0xdeadbeef);
	cr_assert_eq(pdi_wire_get_u64(&r), 0x0123456789abcdefull);
	b = pdi_wire_get_bytes(&r, &n);
	cr_assert_eq(n, 3);
	cr_assert_eq(memcmp(b, "\0\1\2", 3), 0);
	cr_assert_eq(pdi_wire_get_str(&r, s, sizeof(s)), 0);
	cr_assert_str_eq(s, "node-17");
	cr_assert_eq(pdi_wire_get_str(&r, s, sizeof(s)), 0);
	cr_assert_str_eq(s, "");
	cr_assert_eq(pdi_wire_reader_finish(&r), 0);
	pdi_wire_writer_done(&w);
	cr_assert_null(w.buf);
}

Test(wire, reader_overruns_are_sticky)
{
	static const uint8_t three[] = {1, 2, 3};
	static const uint8_t long_bytes[] = {200, 0, 0, 0, 'a', 'b'};
	struct pdi_wire_reader r;
	uint32_t n = 99;

	pdi_wire_reader_init(&r, three, sizeof(three));
	cr_assert_eq(pdi_wire_get_u32(&r), 0);
	cr_assert_eq(r.err, -EBADMSG);
	cr_assert_eq(pdi_wire_get_u8(&r), 0, "sticky: nothing more is read");
	cr_assert_eq(pdi_wire_reader_finish(&r), -EBADMSG);

	pdi_wire_reader_init(&r, long_bytes, sizeof(long_bytes));
	cr_assert_null(pdi_wire_get_bytes(&r, &n));
	cr_assert_eq(n, 0);
	cr_assert_eq(r.err, -EBADMSG);

	pdi_wire_reader_init(&r, three, sizeof(three));
	cr_assert_eq(pdi_wire_get_u8(&r), 1);
	cr_assert_eq(pdi_wire_reader_finish(&r), -EBADMSG, "bytes left over");

	pdi_wire_reader_init(&r, NULL, 0);
	cr_assert_eq(pdi_wire_get_u64(&r), 0);
	cr_assert_eq(r.err, -EBADMSG);
}

Test(wire, strings_with_nul_or_too_long_refused)
{
	struct pdi_wire_writer w = {0};
	struct pdi_wire_reader r;
	char s[8] = "x", fits[9];

	pdi_wire_put_bytes(&w, "ab\0cd", 5);
	pdi_wire_reader_init(&r, w.buf, w.len);
	cr_assert_eq(pdi_wire_get_str(&r, s, sizeof(s)), -EBADMSG);
	cr_assert_str_eq(s, "");
	pdi_wire_writer_done(&w);

	pdi_wire_put_str(&w, "12345678");
	pdi_wire_reader_init(&r, w.buf, w.len);
	cr_assert_eq(pdi_wire_get_str(&r, s, sizeof(s)), -EBADMSG, "no room for the NUL");
	pdi_wire_reader_init(&r, w.buf, w.len);
	cr_assert_eq(pdi_wire_get_str(&r, fits, sizeof(fits)), 0);
	cr_assert_str_eq(fits, "12345678");
	pdi_wire_writer_done(&w);
}

Test(wire, writer_stops_at_body_limit)
{
	/* A writer about to pass UINT32_MAX bytes: refused before any allocation. */
	struct pdi_wire_writer w = {.buf = NULL, .len = UINT32_MAX - 2, .cap = UINT32_MAX - 2};

	pdi_wire_put_u32(&w, 1);
	cr_assert_eq(w.err, -EMSGSIZE);
	cr_assert_eq(w.len, UINT32_MAX - 2);
	pdi_wire_put_u8(&w, 1);
	cr_assert_eq(w.len, UINT32_MAX - 2, "sticky");
}

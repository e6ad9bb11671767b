/* SPDX-License-Identifier: GPL-2.0-only */
/* fuzz-wire.c -- libFuzzer target: arbitrary bytes into the peer frame decoder, fed in
 * chunks of fuzzer-chosen sizes, and every frame's body walked with the field reader.
 *
 * Input: byte 0 picks the decoder's max_body, bytes 1-2 seed the chunk sizes, the rest is
 * the stream. Besides the sanitizers, it checks what the decoder promises: frames within
 * the limits, an error that stays, and each frame re-encoding to the very bytes it came
 * from. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t next_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Walk a body as a sequence of fields; its own bytes choose which to read next. */
static void read_body(const uint8_t *p, uint32_t n)
{
	struct pdi_wire_reader r;
	char s[32];
	uint32_t len;

	pdi_wire_reader_init(&r, p, n);
	while (!r.err && r.off < r.len) {
		size_t before = r.off;

		switch (pdi_wire_get_u8(&r) % 5) {
		case 0:
			(void)pdi_wire_get_u32(&r);
			break;
		case 1:
			(void)pdi_wire_get_u64(&r);
			break;
		case 2:
			if (pdi_wire_get_bytes(&r, &len) && r.off > r.len)
				abort();
			break;
		case 3:
			if (pdi_wire_get_str(&r, s, sizeof(s)) == 0 && strlen(s) >= sizeof(s))
				abort();
			break;
		default:
			(void)pdi_wire_get_u8(&r);
		}
		if (r.off < before || r.off > r.len)
			abort();
	}
	(void)pdi_wire_reader_finish(&r);
}

static void check_frame(const struct pdi_wire_frame *f, const struct pdi_wire_decoder *d)
{
	uint8_t *re;
	size_t re_len;

	if (f->version != PDI_WIRE_VERSION || f->cred_len > PDI_WIRE_MAX_CRED || f->body_len > d->max_body)
		abort();
	if (pdi_wire_encode(f->type, f->flags, f->cred, f->cred_len, f->body, f->body_len, &re, &re_len) < 0)
		abort();
	/* the frame's bytes sit just before its credential in the decoder's buffer */
	if (memcmp(re, f->cred - PDI_WIRE_HEADER, re_len))
		abort();
	free(re);
	read_body(f->body, f->body_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t max_bodies[] = {0, 16, 64, 4096};
	struct pdi_wire_decoder d;
	struct pdi_wire_frame f;
	uint32_t seed;
	int r = 0;

	if (size < 3)
		return 0;
	pdi_wire_decoder_init(&d, max_bodies[data[0] % 4]);
	seed = 1u + data[1] + ((uint32_t)data[2] << 8);
	data += 3;
	size -= 3;
	while (size && r >= 0) {
		size_t n = 1 + next_rand(&seed) % 64;

		if (n > size)
			n = size;
		r = pdi_wire_decoder_feed(&d, data, n);
		data += n;
		size -= n;
		while (r >= 0 && (r = pdi_wire_decoder_next(&d, &f)) == 1)
			check_frame(&f, &d);
	}
	if (r < 0 && (pdi_wire_decoder_next(&d, &f) != r || pdi_wire_decoder_feed(&d, "x", 1) != r))
		abort(); /* errors are sticky */
	pdi_wire_decoder_done(&d);
	return 0;
}

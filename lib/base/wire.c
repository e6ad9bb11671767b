/* SPDX-License-Identifier: GPL-2.0-only */
/* wire.c -- framing the peer protocol's byte stream, and bounds-checked body fields.
 *
 * The decoder is the first code a remote peer's bytes reach, before any credential is
 * checked: it allocates only as bytes actually arrive, refuses a header on its 16 bytes
 * alone, and never lets one connection hold more than one maximal frame plus one feed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define DECODER_MIN_CAP 4096
/* A drained decoder keeps at most this much memory: one big frame must not pin its buffer
 * for the life of the connection. */
#define DECODER_KEEP_CAP (64u << 10)

void pdi_le_put(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t pdi_le_get(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int type_known(uint8_t type)
{
	return type >= PDI_WIRE_GATHER && type <= PDI_WIRE_ERROR;
}

/* ---- frames ---- */

int pdi_wire_encode(uint8_t type, uint16_t flags, const char *cred, uint32_t cred_len, const void *body,
		    uint32_t body_len, uint8_t **ret, size_t *ret_len)
{
	size_t total = PDI_WIRE_HEADER + (size_t)cred_len + body_len;
	uint8_t *p;

	if (!type_known(type) || cred_len > PDI_WIRE_MAX_CRED || (!cred && cred_len) || (!body && body_len))
		return -EINVAL;
	p = malloc(total);
	if (!p)
		return -ENOMEM;
	pdi_le_put(p, PDI_WIRE_MAGIC, 4);
	p[4] = PDI_WIRE_VERSION;
	p[5] = type;
	pdi_le_put(p + 6, flags, 2);
	pdi_le_put(p + 8, cred_len, 4);
	pdi_le_put(p + 12, body_len, 4);
	if (cred_len)
		memcpy(p + PDI_WIRE_HEADER, cred, cred_len);
	if (body_len)
		memcpy(p + PDI_WIRE_HEADER + cred_len, body, body_len);
	*ret = p;
	*ret_len = total;
	return 0;
}

void pdi_wire_decoder_init(struct pdi_wire_decoder *d, uint32_t max_body)
{
	*d = (struct pdi_wire_decoder){.max_body = max_body ? max_body : PDI_WIRE_DEFAULT_MAX_BODY};
}

void pdi_wire_decoder_done(struct pdi_wire_decoder *d)
{
	free(d->buf);
	*d = (struct pdi_wire_decoder){.max_body = d->max_body};
}

static size_t max_frame(const struct pdi_wire_decoder *d)
{
	return PDI_WIRE_HEADER + PDI_WIRE_MAX_CRED + (size_t)d->max_body;
}

static int fail(struct pdi_wire_decoder *d, int err)
{
	d->err = err;
	return err;
}

/* Forget the frames already handed out; their pointers die here, as documented. */
static void decoder_compact(struct pdi_wire_decoder *d)
{
	if (!d->consumed)
		return;
	d->len -= d->consumed;
	memmove(d->buf, d->buf + d->consumed, d->len);
	d->consumed = 0;
	if (!d->len && d->cap > DECODER_KEEP_CAP) {
		free(d->buf);
		d->buf = NULL;
		d->cap = 0;
	}
}

static int header_check(const uint8_t *p, uint32_t max_body, struct pdi_wire_frame *h);

int pdi_wire_decoder_announced(const struct pdi_wire_decoder *d, size_t *ret_len)
{
	struct pdi_wire_frame h;
	int r;

	if (d->err)
		return d->err;
	if (d->len - d->consumed < PDI_WIRE_HEADER)
		return 0;
	r = header_check(d->buf + d->consumed, d->max_body, &h);
	if (r < 0)
		return r;
	*ret_len = PDI_WIRE_HEADER + (size_t)h.cred_len + h.body_len;
	return 1;
}

static int decoder_reserve(struct pdi_wire_decoder *d, size_t n)
{
	size_t cap = d->cap ? d->cap : DECODER_MIN_CAP, frame;
	uint8_t *p;

	if (n > SIZE_MAX / 2 - d->len)
		return -ENOMEM;
	if (d->cap - d->len >= n)
		return 0;
	while (cap - d->len < n)
		cap *= 2;
	/* no more than the announced frame (and this feed): what the receiver budgeted for */
	if (pdi_wire_decoder_announced(d, &frame) > 0 && cap > d->consumed + frame && cap > d->len + n)
		cap = d->consumed + frame > d->len + n ? d->consumed + frame : d->len + n;
	p = realloc(d->buf, cap);
	if (!p)
		return -ENOMEM;
	d->buf = p;
	d->cap = cap;
	return 0;
}

int pdi_wire_decoder_feed(struct pdi_wire_decoder *d, const void *data, size_t n)
{
	int r;

	if (d->err)
		return d->err;
	if (!n)
		return 0;
	decoder_compact(d);
	if (d->len >= max_frame(d))
		return fail(d, -EMSGSIZE);
	r = decoder_reserve(d, n);
	if (r < 0)
		return fail(d, r);
	memcpy(d->buf + d->len, data, n);
	d->len += n;
	return 0;
}

/* Garbage is told from a slow peer as soon as a byte differs from the magic. */
static int magic_prefix_ok(const uint8_t *p, size_t avail)
{
	uint8_t magic[4];

	pdi_le_put(magic, PDI_WIRE_MAGIC, 4);
	return !memcmp(p, magic, avail < 4 ? avail : 4);
}

/* Judge a complete 16-byte header; the order makes a future version's frame read as
 * "unsupported" rather than "garbage" whatever its other fields hold. */
static int header_check(const uint8_t *p, uint32_t max_body, struct pdi_wire_frame *h)
{
	if (pdi_le_get(p, 4) != PDI_WIRE_MAGIC)
		return -EBADMSG;
	*h = (struct pdi_wire_frame){
		.version = p[4],
		.type = p[5],
		.flags = (uint16_t)pdi_le_get(p + 6, 2),
		.cred_len = (uint32_t)pdi_le_get(p + 8, 4),
		.body_len = (uint32_t)pdi_le_get(p + 12, 4),
	};
	if (h->version != PDI_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (!type_known(h->type) || h->cred_len > PDI_WIRE_MAX_CRED)
		return -EBADMSG;
	if (h->body_len > max_body)
		return -EMSGSIZE;
	return 0;
}

int pdi_wire_decoder_next(struct pdi_wire_decoder *d, struct pdi_wire_frame *f)
{
	size_t avail = d->len - d->consumed, total;
	struct pdi_wire_frame h;
	const uint8_t *p;
	int r;

	if (d->err)
		return d->err;
	if (!avail)
		return 0;
	p = d->buf + d->consumed;
	if (!magic_prefix_ok(p, avail))
		return fail(d, -EBADMSG);
	if (avail < PDI_WIRE_HEADER)
		return 0;
	r = header_check(p, d->max_body, &h);
	if (r < 0)
		return fail(d, r);
	total = PDI_WIRE_HEADER + (size_t)h.cred_len + h.body_len;
	if (avail < total)
		return 0;
	h.cred = (const char *)p + PDI_WIRE_HEADER;
	h.body = p + PDI_WIRE_HEADER + h.cred_len;
	*f = h;
	d->consumed += total;
	return 1;
}

int pdi_wire_frame_cred(const struct pdi_wire_frame *f, char *buf, size_t len)
{
	if (!len)
		return -EBADMSG;
	buf[0] = '\0';
	if (f->cred_len >= len || (f->cred_len && memchr(f->cred, '\0', f->cred_len)))
		return -EBADMSG;
	if (f->cred_len)
		memcpy(buf, f->cred, f->cred_len);
	buf[f->cred_len] = '\0';
	return 0;
}

/* ---- writer ---- */

uint8_t *pdi_wire_reserve(struct pdi_wire_writer *w, size_t n)
{
	size_t cap = w->cap ? w->cap : 256;
	uint8_t *p;

	if (w->err)
		return NULL;
	if (n > UINT32_MAX - w->len) {
		w->err = -EMSGSIZE;
		return NULL;
	}
	if (w->cap - w->len < n) {
		while (cap - w->len < n)
			cap *= 2;
		p = realloc(w->buf, cap);
		if (!p) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->buf = p;
		w->cap = cap;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

static void w_le(struct pdi_wire_writer *w, uint64_t v, unsigned n)
{
	uint8_t *p = pdi_wire_reserve(w, n);

	if (p)
		pdi_le_put(p, v, n);
}

void pdi_wire_writer_done(struct pdi_wire_writer *w)
{
	free(w->buf);
	*w = (struct pdi_wire_writer){0};
}

void pdi_wire_put_u8(struct pdi_wire_writer *w, uint8_t v)
{
	w_le(w, v, 1);
}

void pdi_wire_put_u16(struct pdi_wire_writer *w, uint16_t v)
{
	w_le(w, v, 2);
}

void pdi_wire_put_u32(struct pdi_wire_writer *w, uint32_t v)
{
	w_le(w, v, 4);
}

void pdi_wire_put_u64(struct pdi_wire_writer *w, uint64_t v)
{
	w_le(w, v, 8);
}

void pdi_wire_put_bytes(struct pdi_wire_writer *w, const void *p, uint32_t n)
{
	uint8_t *dst;

	if (!p && n) {
		if (!w->err)
			w->err = -EINVAL;
		return;
	}
	pdi_wire_put_u32(w, n);
	dst = pdi_wire_reserve(w, n);
	if (dst && n)
		memcpy(dst, p, n);
}

void pdi_wire_put_str(struct pdi_wire_writer *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > UINT32_MAX) {
		if (!w->err)
			w->err = -EMSGSIZE;
		return;
	}
	pdi_wire_put_bytes(w, s, (uint32_t)n);
}

/* ---- reader ---- */

void pdi_wire_reader_init(struct pdi_wire_reader *r, const void *p, size_t len)
{
	*r = (struct pdi_wire_reader){.p = p, .len = p ? len : 0};
}

static const uint8_t *r_take(struct pdi_wire_reader *r, size_t n)
{
	const uint8_t *p;

	if (r->err)
		return NULL;
	if (r->len - r->off < n) {
		r->err = -EBADMSG;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

static uint64_t r_le(struct pdi_wire_reader *r, unsigned n)
{
	const uint8_t *p = r_take(r, n);

	return p ? pdi_le_get(p, n) : 0;
}

uint8_t pdi_wire_get_u8(struct pdi_wire_reader *r)
{
	return (uint8_t)r_le(r, 1);
}

uint32_t pdi_wire_get_u32(struct pdi_wire_reader *r)
{
	return (uint32_t)r_le(r, 4);
}

uint64_t pdi_wire_get_u64(struct pdi_wire_reader *r)
{
	return r_le(r, 8);
}

const uint8_t *pdi_wire_get_bytes(struct pdi_wire_reader *r, uint32_t *n)
{
	uint32_t len = pdi_wire_get_u32(r);
	const uint8_t *p = r_take(r, len);

	*n = p ? len : 0;
	return p;
}

int pdi_wire_get_str(struct pdi_wire_reader *r, char *buf, size_t len)
{
	uint32_t n;
	const uint8_t *p = pdi_wire_get_bytes(r, &n);

	if (len)
		buf[0] = '\0';
	if (!p)
		return r->err;
	if (n >= len || memchr(p, '\0', n)) {
		r->err = -EBADMSG;
		return r->err;
	}
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

int pdi_wire_reader_finish(const struct pdi_wire_reader *r)
{
	if (r->err)
		return r->err;
	return r->off == r->len ? 0 : -EBADMSG;
}

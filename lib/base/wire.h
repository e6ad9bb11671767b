/* SPDX-License-Identifier: GPL-2.0-only */
/* wire.h -- the peer protocol's frames and body fields: pdimond to pdimond over TCP.
 *
 * A frame (all integers little-endian):
 *
 *	0   u32 magic "PDIM"
 *	4   u8  version (PDI_WIRE_VERSION)
 *	5   u8  type (enum pdi_wire_type)
 *	6   u16 flags (passed through; none defined by version 1)
 *	8   u32 cred_len, at most PDI_WIRE_MAX_CRED
 *	12  u32 body_len, at most the receiver's max_body
 *	16  cred_len bytes of MUNGE credential (text, no NUL), then body_len bytes of body
 *
 * Pure C, no I/O: the daemon reads the socket and feeds the bytes in. The decoder trusts
 * nothing and judges a header as soon as its 16 bytes are in, so a peer announcing a huge
 * body is refused before a byte of it is buffered. Every error is sticky: the connection
 * that produced it must be closed. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PDI_WIRE_MAGIC 0x4d494450u /* "PDIM" little-endian */
#define PDI_WIRE_VERSION 1
#define PDI_WIRE_HEADER 16 /* magic u32, version u8, type u8, flags u16, cred_len u32, body_len u32 */
#define PDI_WIRE_MAX_CRED 4096
#define PDI_WIRE_DEFAULT_MAX_BODY (64u << 20)

enum pdi_wire_type {
	PDI_WIRE_GATHER = 1, /* a request down the tree */
	PDI_WIRE_RESULT = 2, /* its merged answer up the tree */
	PDI_WIRE_ERROR = 3,  /* a refusal, with a reason */
};

/* A decoded frame. CRED is not NUL-terminated: see pdi_wire_frame_cred(). */
struct pdi_wire_frame {
	uint8_t version, type;
	uint16_t flags;
	const char *cred;
	uint32_t cred_len;
	const uint8_t *body;
	uint32_t body_len;
};

/* One frame into *RET (malloc'd, *RET_LEN bytes). 0; -EINVAL (unknown type, cred_len over
 * PDI_WIRE_MAX_CRED, or a NULL pointer with a nonzero length), -ENOMEM. */
int pdi_wire_encode(uint8_t type, uint16_t flags, const char *cred, uint32_t cred_len, const void *body,
		    uint32_t body_len, uint8_t **ret, size_t *ret_len);

/* The incremental decoder of one connection's byte stream. */
struct pdi_wire_decoder {
	uint8_t *buf;
	size_t len, cap, consumed; /* bytes held, allocated, and already handed out as frames */
	uint32_t max_body;
	int err;                   /* the sticky error, 0 while healthy */
};

/* MAX_BODY 0 means PDI_WIRE_DEFAULT_MAX_BODY. */
void pdi_wire_decoder_init(struct pdi_wire_decoder *d, uint32_t max_body);
void pdi_wire_decoder_done(struct pdi_wire_decoder *d);

/* Append N bytes. Call pdi_wire_decoder_next() until it returns 0 between feeds: a drained
 * decoder holds less than one maximal frame, so at most one maximal frame plus one feed is
 * ever buffered. 0; -ENOMEM; -EMSGSIZE when a maximal frame's worth of bytes (header,
 * PDI_WIRE_MAX_CRED, max_body) already waits undrained; the decoder's sticky error. */
int pdi_wire_decoder_feed(struct pdi_wire_decoder *d, const void *data, size_t n);

/* 1: *F holds the next complete frame (its pointers valid until the next feed or next
 * call); 0: more bytes are needed; or the sticky error: -EBADMSG (bad magic, garbage,
 * unknown type, cred_len over PDI_WIRE_MAX_CRED), -EPROTONOSUPPORT (unknown version),
 * -EMSGSIZE (body_len over max_body). */
int pdi_wire_decoder_next(struct pdi_wire_decoder *d, struct pdi_wire_frame *f);

/* Once the next frame's header is in (and valid): 1 and its whole length (header,
 * credential and body) in *RET_LEN, so that a receiver can judge what a peer announced
 * before it arrives; 0 while the header is incomplete or when nothing waits; the sticky
 * error. Never more than that frame is allocated for it (and one feed beyond). */
int pdi_wire_decoder_announced(const struct pdi_wire_decoder *d, size_t *ret_len);

/* The frame's credential as a C string in BUF (LEN bytes): 0, or -EBADMSG if it holds a
 * NUL or does not fit. */
int pdi_wire_frame_cred(const struct pdi_wire_frame *f, char *buf, size_t len);

/* ---- body fields ----
 *
 * The writer grows its buffer and remembers its first error (-ENOMEM, or -EMSGSIZE past
 * UINT32_MAX bytes, a body's limit), so an encoder checks w->err once at the end. The
 * reader fails sticky on any overrun (-EBADMSG) and then returns zeros and NULLs. */
struct pdi_wire_writer {
	uint8_t *buf;
	size_t len, cap;
	int err;
};

/* Zero-initialised is ready; done frees the buffer and resets the writer. */
void pdi_wire_writer_done(struct pdi_wire_writer *w);
/* N-byte little-endian integers, as everything pdimon writes for another host or for later. */
void pdi_le_put(uint8_t *p, uint64_t v, unsigned n);
uint64_t pdi_le_get(const uint8_t *p, unsigned n);

/* N bytes more at the end, for the caller to fill; NULL after an error (sticky). */
uint8_t *pdi_wire_reserve(struct pdi_wire_writer *w, size_t n);
void pdi_wire_put_u8(struct pdi_wire_writer *w, uint8_t v);
void pdi_wire_put_u16(struct pdi_wire_writer *w, uint16_t v);
void pdi_wire_put_u32(struct pdi_wire_writer *w, uint32_t v);
void pdi_wire_put_u64(struct pdi_wire_writer *w, uint64_t v);
/* u32 length, then N bytes */
void pdi_wire_put_bytes(struct pdi_wire_writer *w, const void *p, uint32_t n);
/* as bytes, without the NUL */
void pdi_wire_put_str(struct pdi_wire_writer *w, const char *s);

struct pdi_wire_reader {
	const uint8_t *p;
	size_t len, off;
	int err;
};

void pdi_wire_reader_init(struct pdi_wire_reader *r, const void *p, size_t len);
uint8_t pdi_wire_get_u8(struct pdi_wire_reader *r);
uint32_t pdi_wire_get_u32(struct pdi_wire_reader *r);
uint64_t pdi_wire_get_u64(struct pdi_wire_reader *r);
/* The bytes written by pdi_wire_put_bytes(), in place; NULL and *N = 0 on error. */
const uint8_t *pdi_wire_get_bytes(struct pdi_wire_reader *r, uint32_t *n);
/* A string written by pdi_wire_put_str() copied into BUF (LEN bytes, NUL-terminated):
 * 0, or -EBADMSG (sticky; BUF set to "") on overrun, an embedded NUL, or one that does
 * not fit. */
int pdi_wire_get_str(struct pdi_wire_reader *r, char *buf, size_t len);
/* A record read to its end: 0, the sticky error, or -EBADMSG if bytes are left over. */
int pdi_wire_reader_finish(const struct pdi_wire_reader *r);

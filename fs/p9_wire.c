// SPDX-License-Identifier: GPL-2.0
/*
 * 9P's wire format: little-endian integers and counted strings, read
 * through a cursor that never passes the message's end (a message cut
 * short leaves zeroes and sets err, checked once per operation) and
 * written into a reply that never passes its buffer.
 */
#include <string.h>

#include "p9_internal.h"

static const uint8_t *take(struct p9_in *in, size_t n)
{
	const uint8_t *p = in->p;

	if (in->err || in->left < n) {
		in->err = true;
		return NULL;
	}
	in->p += n;
	in->left -= n;
	return p;
}

static uint64_t get_le(struct p9_in *in, unsigned int n)
{
	const uint8_t *p = take(in, n);
	uint64_t v = 0;

	while (p && n--)
		v = v << 8 | p[n];
	return v;
}

uint8_t p9_get8(struct p9_in *in)
{
	return get_le(in, 1);
}

uint16_t p9_get16(struct p9_in *in)
{
	return get_le(in, 2);
}

uint32_t p9_get32(struct p9_in *in)
{
	return get_le(in, 4);
}

uint64_t p9_get64(struct p9_in *in)
{
	return get_le(in, 8);
}

struct p9_str p9_getstr(struct p9_in *in)
{
	struct p9_str str = { "", 0 };
	uint16_t len = p9_get16(in);
	const uint8_t *p = take(in, len);

	if (p) {
		str.s = (const char *)p;
		str.len = len;
	}
	return str;
}

bool p9_str_copy(struct p9_str str, char *buf, size_t size)
{
	if (str.len >= size || memchr(str.s, '\0', str.len))
		return false;
	memcpy(buf, str.s, str.len);
	buf[str.len] = '\0';
	return true;
}

uint8_t *p9_reserve(struct p9_out *out, size_t n)
{
	uint8_t *p;

	if (out->err || out->cap - out->len < n) {
		out->err = true;
		return NULL;
	}
	p = out->buf + out->len;
	out->len += n;
	return p;
}

static void put_le(struct p9_out *out, uint64_t v, unsigned int n)
{
	uint8_t *p = p9_reserve(out, n);
	unsigned int i;

	for (i = 0; p && i < n; i++, v >>= 8)
		p[i] = v & 0xff;
}

void p9_patch32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

void p9_put8(struct p9_out *out, uint8_t v)
{
	put_le(out, v, 1);
}

void p9_put16(struct p9_out *out, uint16_t v)
{
	put_le(out, v, 2);
}

void p9_put32(struct p9_out *out, uint32_t v)
{
	put_le(out, v, 4);
}

void p9_put64(struct p9_out *out, uint64_t v)
{
	put_le(out, v, 8);
}

void p9_putstr(struct p9_out *out, const char *s, size_t len)
{
	uint8_t *p;

	if (len > UINT16_MAX) {
		out->err = true;
		return;
	}
	p9_put16(out, len);
	p = p9_reserve(out, len);
	if (p)
		memcpy(p, s, len);
}

void p9_putqid(struct p9_out *out, const struct p9_qid *qid)
{
	p9_put8(out, qid->type);
	p9_put32(out, qid->version);
	p9_put64(out, qid->path);
}

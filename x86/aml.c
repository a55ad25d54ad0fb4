// SPDX-License-Identifier: GPL-2.0
/*
 * AML byte-code encoder for the DSDT (ACPI 6.x, chapters 6.4 and 20): see
 * include/lkvm/x86/aml.h for the calling rules.
 */
#include <stdlib.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/x86/aml.h"

#define AML_ZERO_OP		0x00
#define AML_ONE_OP		0x01
#define AML_NAME_OP		0x08
#define AML_BYTE_PREFIX		0x0a
#define AML_WORD_PREFIX		0x0b
#define AML_DWORD_PREFIX	0x0c
#define AML_STRING_PREFIX	0x0d
#define AML_QWORD_PREFIX	0x0e
#define AML_SCOPE_OP		0x10
#define AML_BUFFER_OP		0x11
#define AML_PACKAGE_OP		0x12
#define AML_METHOD_OP		0x14
#define AML_DUAL_NAME_PREFIX	0x2e
#define AML_MULTI_NAME_PREFIX	0x2f
#define AML_EXT_OP_PREFIX	0x5b
#define AML_DEVICE_OP		0x82	/* after AML_EXT_OP_PREFIX */
#define AML_ROOT_CHAR		'\\'
#define AML_PARENT_CHAR		'^'
#define AML_RETURN_OP		0xa4

/* Resource descriptor tags (ACPI 6.4.2 small, 6.4.3 large). */
#define RES_IRQ			0x23	/* small type 4, 3 bytes of data */
#define RES_IO			0x47	/* small type 8, 7 bytes of data */
#define RES_END			0x79	/* small type 0xf, 1 byte of data */
#define RES_MEMORY32_FIXED	0x86
#define RES_DWORD_ADDR		0x87
#define RES_WORD_ADDR		0x88
#define RES_EXT_IRQ		0x89
#define RES_QWORD_ADDR		0x8a

#define ADDR_TYPE_MEMORY	0
#define ADDR_TYPE_IO		1
#define ADDR_TYPE_BUS		2

/* General flags of address descriptors: bits 3 (_MAF), 2 (_MIF), 0 (_CON) */
#define ADDR_MIN_MAX_FIXED	0x0c
#define ADDR_CONSUMER		0x01

enum block_kind {
	BLOCK_PLAIN,		/* PkgLength then the body */
	BLOCK_BUFFER,		/* PkgLength, BufferSize, then the bytes */
	BLOCK_RESOURCES,	/* a buffer that gets an End tag on close */
};

/* Room reserved at open for the largest PkgLength (+ BufferSize, DWord). */
#define PKGLEN_RESERVE		4
#define BUFSIZE_RESERVE		5

void aml_init(struct aml_buf *b, void *mem, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->data = mem;
	b->cap = cap;
}

void aml_init_growable(struct aml_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->growable = true;
}

void aml_free(struct aml_buf *b)
{
	if (b->growable)
		free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int aml_finish(const struct aml_buf *b)
{
	return b->failed || b->depth ? -1 : 0;
}

static bool reserve(struct aml_buf *b, size_t n)
{
	size_t need, cap;
	uint8_t *p;

	if (b->failed)
		return false;
	if (__builtin_add_overflow(b->len, n, &need) || need > AML_PKGLEN_MAX)
		goto fail;
	if (need <= b->cap)
		return true;
	if (!b->growable)
		goto fail;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return true;
fail:
	b->failed = true;
	return false;
}

void aml_bytes(struct aml_buf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put8(struct aml_buf *b, uint8_t v)
{
	aml_bytes(b, &v, 1);
}

/* Little-endian, as every multi-byte AML and resource field is. */
static void put_le(struct aml_buf *b, uint64_t v, unsigned int n)
{
	uint8_t tmp[8];

	for (unsigned int i = 0; i < n; i++)
		tmp[i] = v >> (8 * i);
	aml_bytes(b, tmp, n);
}

/* The largest value a PkgLength of n bytes holds: 6, 12, 20, 28 bits. */
static size_t pkglen_limit(size_t n)
{
	return n == 1 ? 0x3f : (1UL << (4 + 8 * (n - 1))) - 1;
}

size_t aml_pkglen_encode(uint8_t out[4], size_t body_len)
{
	size_t n, total;

	/* The length counts its own bytes, so the size decides the value. */
	for (n = 1; n <= 4; n++) {
		total = body_len + n;
		if (total < body_len)
			return 0;
		if (total <= pkglen_limit(n))
			break;
	}
	if (n > 4)
		return 0;
	if (n == 1) {
		out[0] = total;
		return 1;
	}
	/* Lead byte: bits 7-6 = following bytes, bits 3-0 = low nibble. */
	out[0] = ((n - 1) << 6) | (total & 0x0f);
	for (size_t i = 1; i < n; i++)
		out[i] = total >> (4 + 8 * (i - 1));
	return n;
}

static bool lead_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
	return lead_name_char(c) || (c >= '0' && c <= '9');
}

bool aml_nameseg(uint8_t out[4], const char *seg, size_t seg_len)
{
	if (seg_len == 0 || seg_len > 4 || !lead_name_char(seg[0]))
		return false;
	for (size_t i = 0; i < 4; i++) {
		if (i >= seg_len) {
			out[i] = '_';
			continue;
		}
		if (!name_char(seg[i]))
			return false;
		out[i] = seg[i];
	}
	return true;
}

void aml_name_path(struct aml_buf *b, const char *path)
{
	uint8_t segs[255][4];
	size_t nr = 0;
	const char *p = path;

	if (*p == AML_ROOT_CHAR) {
		put8(b, AML_ROOT_CHAR);
		p++;
	} else {
		while (*p == AML_PARENT_CHAR) {
			put8(b, AML_PARENT_CHAR);
			p++;
		}
	}
	while (*p) {
		size_t n = strcspn(p, ".");

		if (nr == ARRAY_SIZE(segs) || !aml_nameseg(segs[nr++], p, n)) {
			b->failed = true;
			return;
		}
		p += n;
		if (*p == '.' && !*++p) {
			b->failed = true;	/* a trailing dot */
			return;
		}
	}
	if (nr == 0) {
		put8(b, 0);		/* NullName */
	} else if (nr == 2) {
		put8(b, AML_DUAL_NAME_PREFIX);
	} else if (nr > 2) {
		put8(b, AML_MULTI_NAME_PREFIX);
		put8(b, nr);
	}
	aml_bytes(b, segs, 4 * nr);
}

void aml_integer(struct aml_buf *b, uint64_t v)
{
	if (v == 0) {
		put8(b, AML_ZERO_OP);
	} else if (v == 1) {
		put8(b, AML_ONE_OP);
	} else if (v <= UINT8_MAX) {
		put8(b, AML_BYTE_PREFIX);
		put_le(b, v, 1);
	} else if (v <= UINT16_MAX) {
		put8(b, AML_WORD_PREFIX);
		put_le(b, v, 2);
	} else if (v <= UINT32_MAX) {
		put8(b, AML_DWORD_PREFIX);
		put_le(b, v, 4);
	} else {
		put8(b, AML_QWORD_PREFIX);
		put_le(b, v, 8);
	}
}

void aml_string(struct aml_buf *b, const char *s)
{
	/* AML strings are 7-bit ASCII without NUL: reject anything else. */
	for (const char *p = s; *p; p++) {
		if ((unsigned char)*p > 0x7f) {
			b->failed = true;
			return;
		}
	}
	put8(b, AML_STRING_PREFIX);
	aml_bytes(b, s, strlen(s) + 1);
}

static bool upper_hex(char c, unsigned int *v)
{
	if (c >= '0' && c <= '9')
		*v = c - '0';
	else if (c >= 'A' && c <= 'F')
		*v = c - 'A' + 10;
	else
		return false;
	return true;
}

bool aml_eisaid_value(const char *id, uint32_t *value)
{
	unsigned int vendor = 0, product = 0, d;

	if (strlen(id) != 7)
		return false;
	/* Three letters of 5 bits ('A' = 1), then four hex digits... */
	for (int i = 0; i < 3; i++) {
		if (id[i] < 'A' || id[i] > 'Z')
			return false;
		vendor = (vendor << 5) | (id[i] - 'A' + 1);
	}
	for (int i = 3; i < 7; i++) {
		if (!upper_hex(id[i], &d))
			return false;
		product = (product << 4) | d;
	}
	/* ...stored big-endian in memory, so byte-swapped in the integer. */
	*value = (vendor >> 8) | (vendor & 0xff) << 8 |
		 (uint32_t)(product >> 8) << 16 |
		 (uint32_t)(product & 0xff) << 24;
	return true;
}

void aml_eisaid(struct aml_buf *b, const char *id)
{
	uint32_t v;

	if (!aml_eisaid_value(id, &v)) {
		b->failed = true;
		return;
	}
	/* Always a DWord, as ASL compilers emit it and OSes expect it. */
	put8(b, AML_DWORD_PREFIX);
	put_le(b, v, 4);
}

void aml_name(struct aml_buf *b, const char *path)
{
	put8(b, AML_NAME_OP);
	aml_name_path(b, path);
}

void aml_name_integer(struct aml_buf *b, const char *path, uint64_t v)
{
	aml_name(b, path);
	aml_integer(b, v);
}

void aml_name_string(struct aml_buf *b, const char *path, const char *s)
{
	aml_name(b, path);
	aml_string(b, s);
}

void aml_name_eisaid(struct aml_buf *b, const char *path, const char *id)
{
	aml_name(b, path);
	aml_eisaid(b, id);
}

/* Reserve the length field of a block; aml_close() fills it in. */
static void open_block(struct aml_buf *b, enum block_kind kind)
{
	size_t room = PKGLEN_RESERVE;

	if (kind != BLOCK_PLAIN)
		room += BUFSIZE_RESERVE;
	if (b->depth == AML_MAX_DEPTH) {
		b->failed = true;
		return;
	}
	if (!reserve(b, room))
		return;
	b->open[b->depth].start = b->len;
	b->open[b->depth].kind = kind;
	b->depth++;
	b->len += room;
}

void aml_scope(struct aml_buf *b, const char *path)
{
	put8(b, AML_SCOPE_OP);
	open_block(b, BLOCK_PLAIN);
	aml_name_path(b, path);
}

void aml_device(struct aml_buf *b, const char *path)
{
	put8(b, AML_EXT_OP_PREFIX);
	put8(b, AML_DEVICE_OP);
	open_block(b, BLOCK_PLAIN);
	aml_name_path(b, path);
}

void aml_method(struct aml_buf *b, const char *path, unsigned int nr_args,
		bool serialized)
{
	if (nr_args > 7) {
		b->failed = true;
		return;
	}
	put8(b, AML_METHOD_OP);
	open_block(b, BLOCK_PLAIN);
	aml_name_path(b, path);
	/* MethodFlags: bits 2-0 ArgCount, bit 3 serialized, SyncLevel 0 */
	put8(b, nr_args | (serialized ? 0x08 : 0));
}

void aml_package(struct aml_buf *b, unsigned int nr_elems)
{
	/* More would need a VarPackage, which nothing here uses. */
	if (nr_elems > UINT8_MAX) {
		b->failed = true;
		return;
	}
	put8(b, AML_PACKAGE_OP);
	open_block(b, BLOCK_PLAIN);
	put8(b, nr_elems);
}

void aml_buffer(struct aml_buf *b)
{
	put8(b, AML_BUFFER_OP);
	open_block(b, BLOCK_BUFFER);
}

void aml_resource_template(struct aml_buf *b)
{
	put8(b, AML_BUFFER_OP);
	open_block(b, BLOCK_RESOURCES);
}

static bool in_resources(struct aml_buf *b)
{
	if (b->depth && b->open[b->depth - 1].kind == BLOCK_RESOURCES)
		return true;
	b->failed = true;
	return false;
}

static void end_tag(struct aml_buf *b, size_t first)
{
	uint8_t sum = RES_END;

	/* The checksum makes the template, End tag included, sum to 0. */
	for (size_t i = first; i < b->len; i++)
		sum += b->data[i];
	put8(b, RES_END);
	put8(b, -sum);
}

void aml_close(struct aml_buf *b)
{
	struct aml_block *blk;
	uint8_t head[PKGLEN_RESERVE + BUFSIZE_RESERVE];
	size_t body, room, n, size_len = 0;

	if (b->depth == 0) {
		b->failed = true;
		return;
	}
	blk = &b->open[--b->depth];
	room = blk->kind == BLOCK_PLAIN ? PKGLEN_RESERVE :
	       PKGLEN_RESERVE + BUFSIZE_RESERVE;
	if (blk->kind == BLOCK_RESOURCES)
		end_tag(b, blk->start + room);
	if (b->failed)
		return;

	body = b->len - blk->start - room;
	if (blk->kind != BLOCK_PLAIN) {
		/* BufferSize: the shortest integer, as for any TermArg. */
		struct aml_buf tmp;

		aml_init(&tmp, head + PKGLEN_RESERVE, BUFSIZE_RESERVE);
		aml_integer(&tmp, body);
		size_len = tmp.len;
	}
	n = aml_pkglen_encode(head, size_len + body);
	if (!n) {
		b->failed = true;
		return;
	}
	memmove(head + n, head + PKGLEN_RESERVE, size_len);
	memcpy(b->data + blk->start, head, n + size_len);
	/* The reservation was the worst case: the body only moves down. */
	memmove(b->data + blk->start + n + size_len,
		b->data + blk->start + room, body);
	b->len = blk->start + n + size_len + body;
}

void aml_return(struct aml_buf *b)
{
	put8(b, AML_RETURN_OP);
}

void aml_method_return_integer(struct aml_buf *b, const char *path,
			       uint64_t v)
{
	aml_method(b, path, 0, false);
	aml_return(b);
	aml_integer(b, v);
	aml_close(b);
}

void aml_res_io(struct aml_buf *b, uint16_t min, uint16_t max,
		uint8_t align, uint8_t len)
{
	if (!in_resources(b))
		return;
	put8(b, RES_IO);
	put8(b, 0x01);			/* decodes 16 address lines */
	put_le(b, min, 2);
	put_le(b, max, 2);
	put8(b, align);
	put8(b, len);
}

void aml_res_irq(struct aml_buf *b, unsigned int irq, unsigned int flags)
{
	uint8_t info = 0;

	if (!in_resources(b))
		return;
	if (irq > 15) {
		b->failed = true;
		return;
	}
	if (flags & AML_IRQ_EDGE)
		info |= 1U << 0;
	if (flags & AML_IRQ_ACTIVE_LOW)
		info |= 1U << 3;
	if (flags & AML_IRQ_SHARED)
		info |= 1U << 4;
	if (flags & AML_IRQ_WAKE)
		info |= 1U << 5;
	put8(b, RES_IRQ);
	put_le(b, 1U << irq, 2);
	put8(b, info);
}

void aml_res_ext_irq(struct aml_buf *b, uint32_t gsi, unsigned int flags)
{
	uint8_t info = 0x01;		/* consumer: the device raises it */

	if (!in_resources(b))
		return;
	if (flags & AML_IRQ_EDGE)
		info |= 1U << 1;
	if (flags & AML_IRQ_ACTIVE_LOW)
		info |= 1U << 2;
	if (flags & AML_IRQ_SHARED)
		info |= 1U << 3;
	if (flags & AML_IRQ_WAKE)
		info |= 1U << 4;
	put8(b, RES_EXT_IRQ);
	put_le(b, 6, 2);		/* flags, count and one GSI */
	put8(b, info);
	put8(b, 1);
	put_le(b, gsi, 4);
}

void aml_res_memory32_fixed(struct aml_buf *b, uint32_t base, uint32_t len,
			    bool writable)
{
	if (!in_resources(b))
		return;
	put8(b, RES_MEMORY32_FIXED);
	put_le(b, 9, 2);
	put8(b, writable ? 0x01 : 0x00);
	put_le(b, base, 4);
	put_le(b, len, 4);
}

/*
 * Word, DWord and QWord address space descriptors share one layout with
 * fields of `width` bytes: granularity, min, max, translation, length.
 * Min and max are always fixed, and the length always max - min + 1.
 */
static void addr_space(struct aml_buf *b, uint8_t tag, unsigned int width,
		       uint8_t type, uint8_t type_flags, unsigned int flags,
		       uint64_t min, uint64_t max)
{
	uint64_t limit = width == 8 ? UINT64_MAX : (1ULL << (8 * width)) - 1;
	uint8_t general = ADDR_MIN_MAX_FIXED;

	if (!in_resources(b))
		return;
	if (max < min || max > limit || max - min == limit) {
		b->failed = true;	/* the length would not fit */
		return;
	}
	if (!(flags & AML_RES_PRODUCER))
		general |= ADDR_CONSUMER;
	put8(b, tag);
	put_le(b, 3 + 5 * width, 2);
	put8(b, type);
	put8(b, general);
	put8(b, type_flags);
	put_le(b, 0, width);		/* granularity: decode everything */
	put_le(b, min, width);
	put_le(b, max, width);
	put_le(b, 0, width);		/* no translation */
	put_le(b, max - min + 1, width);
}

/* Type-specific flags of memory ranges: _RW bit 0, _MEM bits 2-1. */
static uint8_t memory_flags(unsigned int flags)
{
	uint8_t f = flags & AML_RES_READONLY ? 0 : 0x01;

	if (flags & AML_RES_PREFETCHABLE)
		f |= 3U << 1;
	else if (flags & AML_RES_CACHEABLE)
		f |= 1U << 1;
	return f;
}

/* Type-specific flags of I/O ranges: _RNG = 3, both ISA and non-ISA. */
#define IO_ENTIRE_RANGE		0x03

void aml_res_word_bus(struct aml_buf *b, uint16_t min, uint16_t max)
{
	addr_space(b, RES_WORD_ADDR, 2, ADDR_TYPE_BUS, 0, AML_RES_PRODUCER,
		   min, max);
}

void aml_res_word_io(struct aml_buf *b, uint16_t min, uint16_t max,
		     unsigned int flags)
{
	addr_space(b, RES_WORD_ADDR, 2, ADDR_TYPE_IO, IO_ENTIRE_RANGE, flags,
		   min, max);
}

void aml_res_dword_io(struct aml_buf *b, uint32_t min, uint32_t max,
		      unsigned int flags)
{
	addr_space(b, RES_DWORD_ADDR, 4, ADDR_TYPE_IO, IO_ENTIRE_RANGE, flags,
		   min, max);
}

void aml_res_dword_memory(struct aml_buf *b, uint32_t min, uint32_t max,
			  unsigned int flags)
{
	addr_space(b, RES_DWORD_ADDR, 4, ADDR_TYPE_MEMORY,
		   memory_flags(flags), flags, min, max);
}

void aml_res_qword_io(struct aml_buf *b, uint64_t min, uint64_t max,
		      unsigned int flags)
{
	addr_space(b, RES_QWORD_ADDR, 8, ADDR_TYPE_IO, IO_ENTIRE_RANGE, flags,
		   min, max);
}

void aml_res_qword_memory(struct aml_buf *b, uint64_t min, uint64_t max,
			  unsigned int flags)
{
	addr_space(b, RES_QWORD_ADDR, 8, ADDR_TYPE_MEMORY,
		   memory_flags(flags), flags, min, max);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every fuzz target shares: reading the fuzzer's input as
 * little-endian numbers (zeroes once it runs out), and, for targets that
 * drive a virtio device from the fuzzer's own thread, a transport that
 * neither binds kicks nor delivers interrupts.
 */
#ifndef TESTS_FUZZ_COMMON_H
#define TESTS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "lkvm/virtio/device.h"

struct input {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t take8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t take16(struct input *in)
{
	uint16_t lo = take8(in);

	return lo | (uint16_t)take8(in) << 8;
}

static inline uint32_t take32(struct input *in)
{
	uint32_t lo = take16(in);

	return lo | (uint32_t)take16(in) << 16;
}

static inline uint64_t take64(struct input *in)
{
	uint64_t lo = take32(in);

	return lo | (uint64_t)take32(in) << 32;
}

static inline int fz_kick_attach(struct virtio_transport *t,
				 struct virtio_queue *q)
{
	return 0;
}

static inline void fz_kick_detach(struct virtio_transport *t,
				  struct virtio_queue *q)
{
}

static inline void fz_signal(struct virtio_transport *t,
			     struct virtio_queue *q)
{
}

static inline void fz_signal_config(struct virtio_transport *t)
{
}

/* Kicks come from the fuzzer's thread; interrupts go nowhere. */
static const struct virtio_transport_ops fz_transport_ops = {
	.kick_attach = fz_kick_attach,
	.kick_detach = fz_kick_detach,
	.signal_queue = fz_signal,
	.signal_config = fz_signal_config,
};
/* One for every device a target makes: it holds no state. */
static struct virtio_transport fz_transport = { .ops = &fz_transport_ops };

#endif

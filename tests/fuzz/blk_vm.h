/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the transport fuzz targets share: lkvm's virtio-blk over a small
 * in-memory image, on one of the real transports, on a fake VM
 * (tests/unit/fake_vm.c) whose only RAM is one heap buffer of exactly
 * BLK_VM_RAM_SIZE bytes (so ASan sees any access past it). The device's
 * I/O thread is made but never started: every notify that reaches the
 * VMM is served on the fuzzer's own thread, so a run is deterministic.
 * Also the input reader and the checks every transport must pass.
 */
#ifndef TESTS_FUZZ_BLK_VM_H
#define TESTS_FUZZ_BLK_VM_H

#include <stddef.h>
#include <stdint.h>

#include "lkvm/iothread.h"
#include "lkvm/virtio/blk.h"
#include "../unit/fake_vm.h"

#define BLK_VM_RAM_GPA		0x100000ULL
#define BLK_VM_RAM_SIZE		0x10000ULL
#define BLK_VM_DISK_SIZE	0x8000ULL

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

struct input {
	const uint8_t *p;
	size_t n;
};

uint8_t take8(struct input *in);
uint16_t take16(struct input *in);
uint32_t take32(struct input *in);
uint64_t take64(struct input *in);

struct blk_vm {
	struct fake_vm fake;
	struct iothread_pool pool;
	struct virtio_blk *blk;
	struct virtio_device *vdev;
	uint8_t *ram;
};

/* A fresh VM and device; the RAM zeroed, the image too. */
void blk_vm_start(struct blk_vm *v, enum virtio_transport_kind transport,
		  unsigned int nr_queues);
/* All of it gone, the descriptors the transport keeps for life too. */
void blk_vm_stop(struct blk_vm *v);

/* Copy up to len input bytes into RAM at offset off (wrapping inside). */
void blk_vm_fill_ram(struct blk_vm *v, struct input *in, uint32_t off,
		     uint32_t len);

/*
 * As a driver would: a chain of 1-4 descriptors the input describes (a
 * virtio-blk request header in the first buffer, as often as not), put
 * into queue q's rings where the driver programmed them, and made
 * available. Nothing when those are not in RAM.
 */
void blk_vm_post_chain(struct blk_vm *v, unsigned int q, struct input *in);

/* Serve what the kicks' eventfds hold, as the I/O thread would. */
void blk_vm_serve_kicks(struct blk_vm *v);

/*
 * A target's one loop over its input: up to 256 steps of one byte each,
 * from 0xe0 RAM filled with input bytes (blk_vm_fill_ram), from 0xc0 a
 * chain posted on a queue (blk_vm_post_chain), else ops[byte % nr_ops]
 * (which takes what it needs from the input) and then check().
 */
void blk_vm_run(struct blk_vm *v, struct input *in,
		void (*const *ops)(struct input *), unsigned int nr_ops,
		void (*check)(void));

/*
 * What holds whatever the guest did: the device status follows virtio
 * 2.1/3.1 (no DRIVER_OK on a modern driver without FEATURES_OK, no
 * FEATURES_OK for features never offered), a live queue's ring is
 * consistent, and the fake KVM saw no call it does not know.
 */
void blk_vm_check_device(struct blk_vm *v);

/*
 * The ioeventfds the fake KVM holds are exactly one per live queue, at
 * notify(queue) with datamatch = the queue's index, on its kick eventfd;
 * none when mapped is false.
 */
void blk_vm_check_ioeventfds(struct blk_vm *v, bool mapped, bool pio,
			     uint32_t len,
			     uint64_t (*notify)(void *ctx, unsigned int q),
			     void *ctx);

#endif

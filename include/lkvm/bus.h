/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Dispatch of port-I/O and MMIO exits to emulated devices. Devices register
 * address ranges with callbacks; a vCPU thread looks the range up and calls
 * the device, which does its own locking.
 */
#ifndef LKVM_BUS_H
#define LKVM_BUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct bus_dev;

/* len is 1, 2, 4 or 8; offset is relative to the registered base. */
struct bus_ops {
	void (*read)(struct bus_dev *dev, uint64_t offset, void *data,
		     unsigned int len);
	void (*write)(struct bus_dev *dev, uint64_t offset, const void *data,
		      unsigned int len);
};

struct bus_dev {
	const char *name;
	const struct bus_ops *ops;
	void *priv;
	uint64_t accesses;		/* exits it served, for --stats */
};

struct bus_range {
	uint64_t base;
	uint64_t size;
	struct bus_dev *dev;
};

/*
 * Ranges are kept sorted for binary search. Registration normally happens
 * before the vCPUs start; later changes (PCI BAR moves) take the write side
 * of `lock`, lookups from vCPU threads take the read side. Devices are
 * never freed while the VM runs, so callbacks run without the lock.
 */
struct bus {
	const char *name;		/* "pio" or "mmio", for messages */
	pthread_rwlock_t lock;
	unsigned int nr_ranges;
	unsigned int capacity;
	struct bus_range *ranges;
	uint8_t *logged;		/* pio only: unknown ports seen */
	uint64_t unhandled;		/* accesses nobody claimed */
};

int bus_init(struct bus *bus, const char *name);
void bus_exit(struct bus *bus);
/* -1 (with a message) on overlap or allocation failure */
int bus_register(struct bus *bus, uint64_t base, uint64_t size,
		 struct bus_dev *dev);
/*
 * The same for a range the guest chose (a PCI BAR): it may put one on
 * another device, or past the end of the address space, as often as it
 * likes, so a refusal says nothing; -1 all the same.
 */
int bus_claim(struct bus *bus, uint64_t base, uint64_t size,
	      struct bus_dev *dev);
void bus_unregister(struct bus *bus, uint64_t base);
/*
 * Returns true if a device claimed the access; otherwise reads return
 * all-ones and writes are dropped, logged once per address.
 */
bool bus_access(struct bus *bus, uint64_t addr, void *data, unsigned int len,
		bool is_write);

#endif

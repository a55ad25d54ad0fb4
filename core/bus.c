// SPDX-License-Identifier: GPL-2.0
/* Sorted address-range tables for port I/O and MMIO dispatch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/bus.h"
#include "lkvm/util.h"

#define PIO_SPACE	0x10000

int bus_init(struct bus *bus, const char *name)
{
	memset(bus, 0, sizeof(*bus));
	bus->name = name;
	if (pthread_rwlock_init(&bus->lock, NULL))
		return -1;
	if (!strcmp(name, "pio")) {
		bus->logged = calloc(PIO_SPACE / 8, 1);
		if (!bus->logged)
			return -1;
	}
	return 0;
}

void bus_exit(struct bus *bus)
{
	free(bus->ranges);
	free(bus->logged);
	pthread_rwlock_destroy(&bus->lock);
	bus->ranges = NULL;
	bus->logged = NULL;
}

/* Index of the first range whose end is above addr. Caller holds lock. */
static unsigned int bus_lower_bound(const struct bus *bus, uint64_t addr)
{
	unsigned int lo = 0, hi = bus->nr_ranges;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct bus_range *r = &bus->ranges[mid];

		if (r->base + r->size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int bus_grow(struct bus *bus)
{
	unsigned int cap = bus->capacity ? bus->capacity * 2 : 16;
	struct bus_range *r;

	r = realloc(bus->ranges, cap * sizeof(*r));
	if (!r)
		return -1;
	bus->ranges = r;
	bus->capacity = cap;
	return 0;
}

static int bus_insert(struct bus *bus, uint64_t base, uint64_t size,
		      struct bus_dev *dev, bool quiet)
{
	uint64_t end;
	unsigned int i;
	int ret = -1;

	if (!size || u64_add_overflows(base, size, &end)) {
		if (!quiet)
			pr_err("%s: invalid range for %s", bus->name,
			       dev->name);
		return -1;
	}
	pthread_rwlock_wrlock(&bus->lock);
	i = bus_lower_bound(bus, base);
	if (i < bus->nr_ranges && bus->ranges[i].base < end) {
		if (!quiet)
			pr_err("%s: %s at %#llx overlaps %s", bus->name,
			       dev->name, (unsigned long long)base,
			       bus->ranges[i].dev->name);
		goto out;
	}
	if (bus->nr_ranges == bus->capacity && bus_grow(bus)) {
		pr_err("%s: out of memory registering %s", bus->name,
		       dev->name);
		goto out;
	}
	memmove(&bus->ranges[i + 1], &bus->ranges[i],
		(bus->nr_ranges - i) * sizeof(bus->ranges[0]));
	bus->ranges[i] = (struct bus_range) {
		.base = base, .size = size, .dev = dev,
	};
	bus->nr_ranges++;
	ret = 0;
out:
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

int bus_register(struct bus *bus, uint64_t base, uint64_t size,
		 struct bus_dev *dev)
{
	return bus_insert(bus, base, size, dev, false);
}

int bus_claim(struct bus *bus, uint64_t base, uint64_t size,
	      struct bus_dev *dev)
{
	return bus_insert(bus, base, size, dev, true);
}

void bus_unregister(struct bus *bus, uint64_t base)
{
	unsigned int i;

	pthread_rwlock_wrlock(&bus->lock);
	i = bus_lower_bound(bus, base);
	if (i < bus->nr_ranges && bus->ranges[i].base == base) {
		memmove(&bus->ranges[i], &bus->ranges[i + 1],
			(bus->nr_ranges - i - 1) * sizeof(bus->ranges[0]));
		bus->nr_ranges--;
	}
	pthread_rwlock_unlock(&bus->lock);
}

static void bus_log_unhandled(struct bus *bus, uint64_t addr,
			      unsigned int len, bool is_write)
{
	__atomic_add_fetch(&bus->unhandled, 1, __ATOMIC_RELAXED);
	if (bus->logged) {
		uint8_t bit = 1u << (addr % 8);
		uint8_t old = __atomic_fetch_or(&bus->logged[addr / 8], bit,
						__ATOMIC_RELAXED);
		if (old & bit)
			return;
	}
	pr_debug("%s: unhandled %u-byte %s at %#llx", bus->name, len,
		 is_write ? "write" : "read", (unsigned long long)addr);
}

bool bus_access(struct bus *bus, uint64_t addr, void *data, unsigned int len,
		bool is_write)
{
	struct bus_dev *dev = NULL;
	uint64_t offset = 0;
	unsigned int i;

	pthread_rwlock_rdlock(&bus->lock);
	i = bus_lower_bound(bus, addr);
	if (i < bus->nr_ranges && bus->ranges[i].base <= addr &&
	    range_within(addr, len, bus->ranges[i].base, bus->ranges[i].size)) {
		dev = bus->ranges[i].dev;
		offset = addr - bus->ranges[i].base;
	}
	/*
	 * Devices live as long as the VM, so the callback runs unlocked: a
	 * device may then (un)register ranges itself, as a PCI BAR move does.
	 */
	pthread_rwlock_unlock(&bus->lock);
	if (dev) {
		__atomic_add_fetch(&dev->accesses, 1, __ATOMIC_RELAXED);
		if (is_write && dev->ops->write)
			dev->ops->write(dev, offset, data, len);
		else if (!is_write && dev->ops->read)
			dev->ops->read(dev, offset, data, len);
		else if (!is_write)
			memset(data, 0xff, len);
		return true;
	}
	if (!is_write)
		memset(data, 0xff, len);
	if (bus->logged && addr >= PIO_SPACE)
		return false;
	bus_log_unhandled(bus, addr, len, is_write);
	return false;
}

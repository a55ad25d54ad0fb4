/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way from a guest-physical address to host memory. Every access
 * that a guest can influence goes through guest_mem_ptr(): it returns a
 * pointer only when the whole [gpa, gpa + len) lies inside one RAM region,
 * with overflow-safe arithmetic, so that no guest value can make the VMM
 * read or write outside guest RAM.
 */
#ifndef LKVM_GUEST_MEM_H
#define LKVM_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GUEST_MEM_MAX_REGIONS	4

struct guest_mem_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
};

/*
 * Owned by the main thread, which builds it before any vCPU or I/O thread
 * starts; read-only (so lock-free) from then on.
 */
struct guest_mem {
	unsigned int nr_regions;
	struct guest_mem_region regions[GUEST_MEM_MAX_REGIONS];
};

/* Host pointer for [gpa, gpa + len), or NULL if any byte is not RAM. */
void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* Copy helpers: false (and nothing copied) if the range is not all RAM. */
bool guest_mem_write(const struct guest_mem *mem, uint64_t gpa,
		     const void *src, uint64_t len);
bool guest_mem_read(const struct guest_mem *mem, uint64_t gpa,
		    void *dst, uint64_t len);

/*
 * guest_mem_write() for loading a guest image before the guest runs: a
 * page that is zero in src and in guest memory is skipped, so the holes
 * and zeroed sections of a kernel file never fault guest pages in (nor
 * count in --stats' guest_rss_kib). src NULL writes zeroes.
 */
bool guest_mem_load(const struct guest_mem *mem, uint64_t gpa,
		    const void *src, uint64_t len);

/* Add a region; regions must not overlap. Returns -1 when full/invalid. */
int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		  void *hva);

/* Total bytes of RAM in all regions. */
uint64_t guest_mem_total(const struct guest_mem *mem);

#endif

// SPDX-License-Identifier: GPL-2.0
/* Bounds-checked translation of guest-physical ranges to host pointers. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lkvm/guest_mem.h"
#include "lkvm/util.h"

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < mem->nr_regions; i++) {
		const struct guest_mem_region *r = &mem->regions[i];

		if (range_within(gpa, len, r->gpa, r->size))
			return r->hva + (gpa - r->gpa);
	}
	return NULL;
}

bool guest_mem_write(const struct guest_mem *mem, uint64_t gpa,
		     const void *src, uint64_t len)
{
	void *dst = guest_mem_ptr(mem, gpa, len);

	if (!dst)
		return false;
	memcpy(dst, src, len);
	return true;
}

#define LOAD_PAGE	4096U

static bool all_zero(const uint8_t *p, size_t len)
{
	static const uint8_t zero[LOAD_PAGE];

	return !memcmp(p, zero, len);
}

/*
 * Which pages of [dst, dst + len) are resident: one mincore() for the lot.
 * A page that is not was never written since mmap() made it (the loaders
 * run before the guest), so it reads as zero without being looked at;
 * reading it would map the zero page and make it count as resident.
 * NULL if that cannot be told: then every page is looked at.
 */
static unsigned char *resident_map(uint8_t *dst, uint64_t len,
				   uint8_t **base)
{
	uintptr_t start = (uintptr_t)dst & ~(uintptr_t)(LOAD_PAGE - 1);
	size_t span = (uintptr_t)dst + len - start;
	unsigned char *vec = malloc(span / LOAD_PAGE + 1);

	if (vec && mincore((void *)start, span, vec)) {
		free(vec);
		vec = NULL;
	}
	*base = (uint8_t *)start;
	return vec;
}

bool guest_mem_load(const struct guest_mem *mem, uint64_t gpa,
		    const void *src, uint64_t len)
{
	uint8_t *dst = guest_mem_ptr(mem, gpa, len), *base;
	const uint8_t *s = src;
	unsigned char *resident;
	uint64_t done = 0;

	if (!dst)
		return false;
	if (!len)
		return true;
	resident = resident_map(dst, len, &base);
	while (done < len) {
		/* Page by page of guest memory: that is what a write faults in. */
		size_t n = MIN(len - done,
			       LOAD_PAGE - ((gpa + done) & (LOAD_PAGE - 1)));
		uint8_t *d = dst + done;

		if (s && !all_zero(s + done, n))
			memcpy(d, s + done, n);
		else if ((!resident || resident[(d - base) / LOAD_PAGE] & 1) &&
			 !all_zero(d, n))
			memset(d, 0, n);
		done += n;
	}
	free(resident);
	return true;
}

bool guest_mem_read(const struct guest_mem *mem, uint64_t gpa,
		    void *dst, uint64_t len)
{
	const void *src = guest_mem_ptr(mem, gpa, len);

	if (!src)
		return false;
	memcpy(dst, src, len);
	return true;
}

static bool regions_overlap(const struct guest_mem_region *r,
			    uint64_t gpa, uint64_t size)
{
	return gpa < r->gpa + r->size && r->gpa < gpa + size;
}

int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		  void *hva)
{
	uint64_t end;
	unsigned int i;

	if (!size || !hva || mem->nr_regions >= GUEST_MEM_MAX_REGIONS ||
	    u64_add_overflows(gpa, size, &end))
		return -1;
	for (i = 0; i < mem->nr_regions; i++)
		if (regions_overlap(&mem->regions[i], gpa, size))
			return -1;
	mem->regions[mem->nr_regions++] = (struct guest_mem_region) {
		.gpa = gpa, .size = size, .hva = hva,
	};
	return 0;
}

uint64_t guest_mem_total(const struct guest_mem *mem)
{
	uint64_t total = 0;
	unsigned int i;

	for (i = 0; i < mem->nr_regions; i++)
		total += mem->regions[i].size;
	return total;
}

// SPDX-License-Identifier: GPL-2.0
/* Bounds-checked translation of guest-physical ranges to host pointers. */
#include <string.h>

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

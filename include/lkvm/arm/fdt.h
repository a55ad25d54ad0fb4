/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arm64 board's flattened device tree (arm/fdt.c): what a Linux guest
 * reads in place of the PC's ACPI tables. Built from a plain description
 * so that it can be made and re-parsed without a VM (tests/unit).
 */
#ifndef LKVM_ARM_FDT_H
#define LKVM_ARM_FDT_H

#include <stddef.h>
#include <stdint.h>

#define ARM_FDT_MAX_MMIO	32

struct arm_fdt_mmio {
	uint64_t base;
	uint32_t size;
	uint32_t spi;			/* INTID - 32 */
};

struct arm_fdt_config {
	uint64_t ram_base, ram_size;
	unsigned int nr_cpus;
	const uint64_t *mpidr;		/* nr_cpus affinity values */
	unsigned int gic_version;	/* 2 or 3 */
	const char *bootargs;
	uint64_t initrd_start, initrd_size;	/* size 0: no initrd */
	unsigned int nr_mmio;
	const struct arm_fdt_mmio *mmio;
};

/* The phandles the tree hands out, for tests that follow them */
#define ARM_FDT_PHANDLE_GIC	1
#define ARM_FDT_PHANDLE_MSI	2

/*
 * Write the tree into buf; its size is fdt_totalsize(buf) afterwards.
 * Returns 0, or -1 with a one-line message when it does not fit or the
 * description is impossible.
 */
int arm_fdt_build(void *buf, size_t size, const struct arm_fdt_config *c);

#endif

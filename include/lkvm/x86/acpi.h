/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ACPI tables for the x86 board: RSDP, XSDT, FADT (+FACS), MADT and a DSDT
 * written in AML. Pure code: it fills a caller-supplied buffer that will be
 * copied to guest-physical address `base`, so unit tests can run it on a
 * plain malloc'ed buffer.
 */
#ifndef LKVM_X86_ACPI_H
#define LKVM_X86_ACPI_H

#include <stddef.h>
#include <stdint.h>

/* A virtio-mmio device the DSDT announces as LNRO0005 (filled in later). */
struct acpi_mmio_dev {
	uint64_t base;
	uint32_t size;
	uint32_t gsi;
};

#define ACPI_MAX_MMIO_DEVS	32

struct acpi_config {
	unsigned int nr_cpus;		/* MADT gets one LAPIC entry per vCPU */
	unsigned int nr_mmio_devs;
	struct acpi_mmio_dev mmio_devs[ACPI_MAX_MMIO_DEVS];
	int pvpanic;			/* announce the QEMU0001 pvpanic port */
};

/*
 * Build every table into buf (size bytes, placed at guest-physical `base`).
 * On success returns 0 and sets *rsdp_gpa to the RSDP's guest address (the
 * RSDP is put first, at `base`, 16-byte aligned so that a BIOS-area scan
 * finds it). Returns -1 if the tables do not fit.
 */
int acpi_build_tables(void *buf, size_t size, uint64_t base,
		      const struct acpi_config *cfg, uint64_t *rsdp_gpa);

#endif

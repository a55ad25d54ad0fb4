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

/*
 * vCPU n has APIC id n and ACPI processor UID n. The MADT uses plain xAPIC
 * entries (no x2APIC ones), and 0xff is the broadcast id, hence the cap.
 */
#define ACPI_MAX_CPUS		255

/*
 * The IOAPIC's APIC id in both the MADT and the MP table: the first id after
 * the vCPUs, or 0 when that would be the broadcast id (255 vCPUs). Since the
 * xAPIC, IOAPIC and LAPIC ids no longer share a bus, either is legal; the
 * in-kernel IOAPIC's own id register need not match (x86-64 Linux does not
 * compare them).
 */
static inline unsigned int x86_ioapic_id(unsigned int nr_cpus)
{
	return nr_cpus < 0xff ? nr_cpus : 0;
}

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
 * finds it). Returns -1 if the tables do not fit, if nr_cpus is 0 or above
 * ACPI_MAX_CPUS, or if [base, base + size) is not below 4 GiB (the RSDT and
 * FADT hold 32-bit pointers). The whole buffer is zeroed first. With 255
 * vCPUs and 32 virtio-mmio devices the tables take about 12 KiB.
 */
int acpi_build_tables(void *buf, size_t size, uint64_t base,
		      const struct acpi_config *cfg, uint64_t *rsdp_gpa);

#endif

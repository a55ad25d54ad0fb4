/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Intel MultiProcessor Specification 1.4 table: floating pointer + config
 * table with one processor entry per vCPU, the ISA bus, the IOAPIC and the
 * legacy interrupt assignments. Kernels without ACPI use it to find the APs.
 */
#ifndef LKVM_X86_MPTABLE_H
#define LKVM_X86_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Fill buf (size bytes, to be copied to guest-physical `base`) with the
 * floating pointer followed by the configuration table. Returns the number
 * of bytes used, or -1 if it does not fit (or nr_cpus is 0 or above
 * ACPI_MAX_CPUS, or base is not 16-byte aligned below 4 GiB).
 *
 * It takes 220 + 20 * nr_cpus bytes (5320 for 255 vCPUs; a 1 KiB EBDA would
 * hold 40). vCPU n has APIC id n (the BSP is 0); the IOAPIC's id is
 * x86_ioapic_id(nr_cpus) from acpi.h; PCI is bus 0 and ISA bus 1.
 */
long mptable_build(void *buf, size_t size, uint64_t base, unsigned int nr_cpus);

#endif

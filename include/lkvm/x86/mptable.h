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
 * of bytes used, or -1 if it does not fit.
 */
long mptable_build(void *buf, size_t size, uint64_t base, unsigned int nr_cpus);

#endif

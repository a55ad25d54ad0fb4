/* SPDX-License-Identifier: GPL-2.0 */
/* x86 vCPU set-up helpers shared by the arch code. */
#ifndef LKVM_X86_CPU_H
#define LKVM_X86_CPU_H

struct kvm_cpuid2;

/* KVM_GET_SUPPORTED_CPUID, grown until it fits; NULL + message on error. */
struct kvm_cpuid2 *x86_get_supported_cpuid(int kvm_fd);
/* The guest's physical address width (CPUID 0x80000008), 36 if unsaid. */
unsigned int x86_phys_addr_bits(const struct kvm_cpuid2 *cpuid);

#endif

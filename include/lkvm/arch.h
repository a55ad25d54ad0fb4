/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The architecture interface. The core (core/) knows nothing of x86 or
 * arm64; each arch folder implements these calls, which core/run.c makes in
 * this order:
 *
 *   arch_guest_open()   read and check the kernel/firmware/initrd the user
 *                       gave, before /dev/kvm is opened
 *   arch_ram_layout()   where RAM goes in the guest-physical space
 *   arch_vm_init()      irqchip, timers, arch VM state (after the VM fd,
 *                       before guest RAM: it may refuse a layout its vCPUs
 *                       cannot address)
 *   arch_devices_init() board devices (UART, RTC, power, ...)
 *   arch_load_guest()   copy the guest in, build the firmware tables
 *   arch_vcpu_init()    per vCPU: CPUID, MSRs/system registers, entry state
 *   arch_vm_exit()      free arch state
 *   arch_guest_close()
 */
#ifndef LKVM_ARCH_H
#define LKVM_ARCH_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "lkvm/virtio/transport_kind.h"

struct vm;
struct vcpu;
struct kvm_run;
struct vm_config;
struct arch_guest;

#define ARCH_MAX_RAM_RANGES	4

/* Fill ranges[i] = {gpa, size} for ram_bytes of RAM; returns the count. */
unsigned int arch_ram_layout(uint64_t ram_bytes,
			     uint64_t ranges[ARCH_MAX_RAM_RANGES][2]);
int arch_vm_init(struct vm *vm);
int arch_devices_init(struct vm *vm);
/* NULL + a one-line message when a file is missing, bad or too big for -m. */
struct arch_guest *arch_guest_open(const struct vm_config *cfg);
void arch_guest_close(struct arch_guest *guest);
int arch_load_guest(struct vm *vm, const struct arch_guest *guest);
/* At KVM_CREATE_VCPU, before any device: the CPU's identity and state. */
int arch_vcpu_init(struct vcpu *vcpu);
/* Once the guest is loaded: where it starts (the boot vCPU's entry). */
int arch_vcpu_boot(struct vcpu *vcpu);
/* A stopped vCPU's whereabouts for a person: instruction pointer and mode. */
void arch_vcpu_where(struct vcpu *vcpu, char *buf, size_t size);
/* Its registers, several lines, for `lkvm debug --dump` (not in KVM_RUN). */
void arch_vcpu_dump(struct vcpu *vcpu, FILE *f);
/* From the vCPU's own thread as it parks: tell the guest it is paused. */
void arch_vcpu_paused(struct vcpu *vcpu);
void arch_vm_exit(struct vm *vm);

/*
 * Where the n-th memory-mapped (virtio-mmio) device goes and which
 * interrupt line it gets; -1 when the board has no room for more.
 */
int arch_mmio_dev_slot(unsigned int n, uint64_t *base, uint32_t *size,
		       uint32_t *gsi);

/* Where PCI BARs go (inside the host bridge's windows). */
void arch_pci_bar_window(uint64_t *mmio_base, uint64_t *io_base);
/* The GSI of a PCI slot's interrupt pin (0 = INTA), as the DSDT routes it. */
uint32_t arch_pci_intx_gsi(unsigned int slot, unsigned int pin);

/* KVM_IRQ_LINE's irq field for an irqchip GSI (arm64 encodes the type). */
uint32_t arch_irq_line(unsigned int gsi);

/* true when this /dev/kvm cannot run guests at hardware speed */
int arch_kvm_is_software(int kvm_fd);

/* The default console device name and command line for a kernel. */
extern const char arch_default_params[];
/* How virtio devices appear when --virtio-transport is not given. */
extern const enum virtio_transport_kind arch_default_transport;

#endif

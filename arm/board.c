// SPDX-License-Identifier: GPL-2.0
/*
 * The arm64 board's part of the arch interface that is layout only
 * (include/lkvm/arm/layout.h has the map): where RAM, virtio-mmio slots
 * and PCI BARs go, which SPI each device interrupts on, and the GSI
 * routes KVM starts with.
 */
#include <linux/kvm.h>

#include "lkvm/arch.h"
#include "lkvm/arm/layout.h"
#include "lkvm/irq.h"
#include "lkvm/util.h"

/* arm64's <asm/kvm.h> values, for the unit tests built on other hosts */
#ifndef KVM_ARM_IRQ_TYPE_SHIFT
#define KVM_ARM_IRQ_TYPE_SHIFT	24
#define KVM_ARM_IRQ_NUM_SHIFT	0
#define KVM_ARM_IRQ_TYPE_SPI	1
#endif

/*
 * The UART is a 16550 on the MMIO bus, found through the device tree's
 * stdout-path; one port, so the 8250 driver does not probe three more.
 */
const char arch_default_params[] =
	"console=ttyS0 panic=-1 8250.nr_uarts=1";

/* As on x86: modern virtio-pci (MSI-X through the ITS, or INTx) */
const enum virtio_transport_kind arch_default_transport = VIRTIO_TRANSPORT_PCI;

unsigned int arch_ram_layout(uint64_t ram_bytes,
			     uint64_t ranges[ARCH_MAX_RAM_RANGES][2])
{
	ranges[0][0] = ARM_RAM_BASE;
	ranges[0][1] = ram_bytes;
	return 1;
}

int arch_mmio_dev_slot(unsigned int n, uint64_t *base, uint32_t *size,
		       uint32_t *gsi)
{
	if (n >= ARM_VIRTIO_MMIO_SLOTS)
		return -1;
	*base = ARM_VIRTIO_MMIO_BASE + n * ARM_VIRTIO_MMIO_SLOT;
	*size = ARM_VIRTIO_MMIO_SLOT;
	*gsi = ARM_SPI_VIRTIO_MMIO + n;
	return 0;
}

/*
 * I/O BARs are PCI I/O addresses, which the CPU reaches at
 * ARM_PCI_IO_BASE + address; the first 4 KiB stay free, as on a PC.
 */
void arch_pci_bar_window(uint64_t *mmio_base, uint64_t *io_base)
{
	*mmio_base = ARM_PCI_MMIO_BASE;
	*io_base = 0x1000;
}

/*
 * KVM_IRQ_LINE on arm64 names the interrupt's type and INTID in its irq
 * field (Documentation/virt/kvm/api.rst); lkvm's lines are all SPIs.
 */
uint32_t arch_irq_line(unsigned int gsi)
{
	return KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT |
	       (gsi + 32) << KVM_ARM_IRQ_NUM_SHIFT;
}

/* The swizzle the device tree's interrupt-map describes. */
uint32_t arch_pci_intx_gsi(unsigned int slot, unsigned int pin)
{
	return ARM_SPI_PCI_INTX + (slot + pin) % 4;
}

/*
 * GSI n is SPI n (INTID n + 32), as in the routes KVM's vGIC starts
 * with: a table lkvm commits replaces those, so it lists them again.
 * Only the wired SPIs: core/irq.c numbers MSI routes from GSI 64, and
 * the GICv2m frame's SPIs from 64 up are reached through those.
 */
unsigned int arch_irq_default_routes(struct kvm_irq_routing_entry *e,
				     unsigned int max)
{
	unsigned int spi, n = 0;

	for (spi = 0; spi < ARM_SPI_V2M && n < max; spi++)
		e[n++] = (struct kvm_irq_routing_entry) {
			.gsi = spi, .type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip = { .irqchip = 0, .pin = spi },
		};
	return n;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The arm64 board's layout (arm/board.c, include/lkvm/arm/layout.h): no
 * two regions overlap, every device sits below RAM, the interrupt numbers
 * are distinct, and the arch hooks hand out what the map says.
 */
#include <linux/kvm.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lkvm/arch.h"
#include "lkvm/arm/layout.h"
#include "lkvm/irq.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

struct region {
	const char *name;
	uint64_t base, size;
};

static const struct region regions[] = {
	{ "gic-dist", ARM_GIC_DIST_BASE, ARM_GIC_DIST_SIZE },
	{ "gic-cpu", ARM_GIC_CPU_BASE, ARM_GIC_CPU_SIZE },
	{ "gic-v2m", ARM_GIC_V2M_BASE, ARM_GIC_V2M_SIZE },
	{ "gic-its", ARM_GIC_ITS_BASE, ARM_GIC_ITS_SIZE },
	{ "uart", ARM_UART_BASE, ARM_UART_SIZE },
	{ "debug-exit", ARM_DEBUG_EXIT_BASE, 1 },
	{ "boot-marker", ARM_BOOT_MARKER_BASE, 1 },
	{ "virtio-mmio", ARM_VIRTIO_MMIO_BASE,
	  ARM_VIRTIO_MMIO_SLOTS * ARM_VIRTIO_MMIO_SLOT },
	{ "gic-redist", ARM_GIC_REDIST_BASE,
	  LKVM_MAX_CPUS * ARM_GIC_REDIST_STRIDE },
	{ "pci-mmio", ARM_PCI_MMIO_BASE, ARM_PCI_MMIO_SIZE },
	{ "pci-io", ARM_PCI_IO_BASE, ARM_PCI_IO_SIZE },
	{ "pci-ecam", ARM_PCI_ECAM_BASE, ARM_PCI_ECAM_SIZE },
};

static void test_regions_disjoint_below_ram(void **state)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(regions); i++) {
		const struct region *a = &regions[i];

		if (a->base + a->size > ARM_RAM_BASE)
			fail_msg("%s reaches into RAM", a->name);
		/* GIC frames and 16550 registers want 4 KiB alignment */
		if (a->size > 1)
			assert_int_equal(a->base % 0x1000, 0);
		for (j = i + 1; j < ARRAY_SIZE(regions); j++) {
			const struct region *b = &regions[j];

			if (a->base < b->base + b->size &&
			    b->base < a->base + a->size)
				fail_msg("%s overlaps %s", a->name, b->name);
		}
	}
	/* a redistributor for every vCPU lkvm allows */
	assert_true(ARM_MAX_VCPUS_GICV3 >= LKVM_MAX_CPUS);
	/* one ECAM bus is 1 MiB: 32 devices x 8 functions x 4 KiB */
	assert_int_equal(ARM_PCI_ECAM_SIZE, ARM_PCI_ECAM_BUSES << 20);
}

static void test_ram_layout(void **state)
{
	uint64_t r[ARCH_MAX_RAM_RANGES][2];

	assert_int_equal(arch_ram_layout(256 << 20, r), 1);
	assert_int_equal(r[0][0], ARM_RAM_BASE);
	assert_int_equal(r[0][1], 256 << 20);
	/* 2 MiB-aligned, as booting.rst wants the Image's base */
	assert_int_equal(ARM_RAM_BASE % (2 << 20), 0);
}

static void test_mmio_slots(void **state)
{
	uint64_t base, prev_end = 0;
	uint32_t size, gsi;
	unsigned int n;

	for (n = 0; n < ARM_VIRTIO_MMIO_SLOTS; n++) {
		assert_int_equal(arch_mmio_dev_slot(n, &base, &size, &gsi), 0);
		assert_true(base >= prev_end);
		prev_end = base + size;
		assert_true(prev_end <= ARM_VIRTIO_MMIO_BASE +
			    ARM_VIRTIO_MMIO_SLOTS * ARM_VIRTIO_MMIO_SLOT);
		assert_int_equal(gsi, ARM_SPI_VIRTIO_MMIO + n);
		/* clear of the UART's, the PCI lines' and the v2m frame's */
		assert_true(gsi != ARM_SPI_UART);
		assert_true(gsi < ARM_SPI_PCI_INTX || gsi >= ARM_SPI_PCI_INTX + 4);
		assert_true(gsi < ARM_SPI_V2M);
	}
	assert_int_equal(arch_mmio_dev_slot(n, &base, &size, &gsi), -1);
}

static void test_pci(void **state)
{
	uint64_t mmio, io;
	unsigned int slot, pin;

	arch_pci_bar_window(&mmio, &io);
	assert_int_equal(mmio, ARM_PCI_MMIO_BASE);
	assert_true(io > 0 && io < ARM_PCI_IO_SIZE);
	for (slot = 0; slot < 32; slot++)
		for (pin = 0; pin < 4; pin++) {
			uint32_t g = arch_pci_intx_gsi(slot, pin);

			assert_true(g >= ARM_SPI_PCI_INTX &&
				    g < ARM_SPI_PCI_INTX + 4);
			/* neighbouring slots' INTA land on different lines */
			if (slot)
				assert_int_not_equal(g, arch_pci_intx_gsi(slot - 1, pin));
		}
}

static void test_default_routes(void **state)
{
	struct kvm_irq_routing_entry e[256];
	unsigned int n = arch_irq_default_routes(e, ARRAY_SIZE(e)), i;

	/* every wired SPI, none of the v2m frame's (MSI GSIs start at 64) */
	assert_int_equal(n, ARM_SPI_V2M);
	assert_true(n <= 64);
	for (i = 0; i < n; i++) {
		assert_int_equal(e[i].gsi, i);
		assert_int_equal(e[i].type, KVM_IRQ_ROUTING_IRQCHIP);
		assert_int_equal(e[i].u.irqchip.irqchip, 0);
		assert_int_equal(e[i].u.irqchip.pin, i);
	}
	/* a short table is filled, not overrun */
	assert_int_equal(arch_irq_default_routes(e, 3), 3);
}

/* KVM_IRQ_LINE's field: type SPI (1) in bits 24-27, INTID = SPI + 32 */
static void test_irq_line(void **state)
{
	assert_int_equal(arch_irq_line(ARM_SPI_UART), 0x01000000 | 33);
	assert_int_equal(arch_irq_line(ARM_SPI_VIRTIO_MMIO + 31),
			 0x01000000 | (32 + 16 + 31));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regions_disjoint_below_ram),
		cmocka_unit_test(test_ram_layout),
		cmocka_unit_test(test_mmio_slots),
		cmocka_unit_test(test_pci),
		cmocka_unit_test(test_default_routes),
		cmocka_unit_test(test_irq_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

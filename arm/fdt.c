// SPDX-License-Identifier: GPL-2.0
/*
 * The device tree a Linux guest boots from on arm64, written with libfdt's
 * sequential-write API. The bindings it follows are the kernel's
 * Documentation/devicetree/bindings: arm/cpus.yaml, arm/psci.yaml,
 * timer/arm,arch_timer.yaml, interrupt-controller/arm,gic*.yaml,
 * serial/8250.yaml, virtio/mmio.yaml and pci/host-generic-pci.yaml.
 * Interrupt specifiers are the GIC's three cells: type (SPI or PPI),
 * number, flags.
 */
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lkvm/arm/fdt.h"
#include "lkvm/arm/layout.h"
#include "lkvm/util.h"

#define GIC_SPI			0
#define GIC_PPI			1
#define IRQ_EDGE_RISING		1
#define IRQ_LEVEL_HIGH		4
/* GICv2 PPI specifiers name the CPUs they reach, one bit each */
#define GIC_V2_CPU_MASK(n)	((((1U << (n)) - 1) & 0xff) << 8)

/* a <hi lo> pair of cells, as #address-cells = #size-cells = 2 wants */
static void cells64(fdt32_t *out, uint64_t v)
{
	out[0] = cpu_to_fdt32(v >> 32);
	out[1] = cpu_to_fdt32((uint32_t)v);
}

static int prop_reg(void *fdt, uint64_t base, uint64_t size)
{
	fdt32_t reg[4];

	cells64(reg, base);
	cells64(reg + 2, size);
	return fdt_property(fdt, "reg", reg, sizeof(reg));
}

static int prop_irq(void *fdt, uint32_t type, uint32_t num, uint32_t flags)
{
	fdt32_t irq[3] = {
		cpu_to_fdt32(type), cpu_to_fdt32(num), cpu_to_fdt32(flags),
	};

	return fdt_property(fdt, "interrupts", irq, sizeof(irq));
}

/* begin_node with a unit address, "name@hex" */
static int begin_at(void *fdt, const char *name, uint64_t addr)
{
	char node[64];

	snprintf(node, sizeof(node), "%s@%llx", name,
		 (unsigned long long)addr);
	return fdt_begin_node(fdt, node);
}

static int fdt_chosen(void *fdt, const struct arm_fdt_config *c,
		      const char *stdout_path)
{
	if (fdt_begin_node(fdt, "chosen") ||
	    fdt_property_string(fdt, "bootargs", c->bootargs) ||
	    fdt_property_string(fdt, "stdout-path", stdout_path))
		return -1;
	if (c->initrd_size &&
	    (fdt_property_u64(fdt, "linux,initrd-start", c->initrd_start) ||
	     fdt_property_u64(fdt, "linux,initrd-end",
			      c->initrd_start + c->initrd_size)))
		return -1;
	return fdt_end_node(fdt);
}

static int fdt_memory(void *fdt, const struct arm_fdt_config *c)
{
	return begin_at(fdt, "memory", c->ram_base) ||
	       fdt_property_string(fdt, "device_type", "memory") ||
	       prop_reg(fdt, c->ram_base, c->ram_size) ||
	       fdt_end_node(fdt);
}

/* Each CPU by its MPIDR affinity, which is what PSCI CPU_ON takes. */
static int fdt_cpus(void *fdt, const struct arm_fdt_config *c)
{
	unsigned int i;

	if (fdt_begin_node(fdt, "cpus") ||
	    fdt_property_u32(fdt, "#address-cells", 2) ||
	    fdt_property_u32(fdt, "#size-cells", 0))
		return -1;
	for (i = 0; i < c->nr_cpus; i++) {
		fdt32_t reg[2];

		cells64(reg, c->mpidr[i]);
		if (begin_at(fdt, "cpu", c->mpidr[i]) ||
		    fdt_property_string(fdt, "device_type", "cpu") ||
		    fdt_property_string(fdt, "compatible", "arm,arm-v8") ||
		    fdt_property_string(fdt, "enable-method", "psci") ||
		    fdt_property(fdt, "reg", reg, sizeof(reg)) ||
		    fdt_end_node(fdt))
			return -1;
	}
	return fdt_end_node(fdt);
}

/* KVM's PSCI (KVM_ARM_VCPU_PSCI_0_2) speaks 1.0 and up, through HVC. */
static int fdt_psci(void *fdt)
{
	static const char compat[] = "arm,psci-1.0\0arm,psci-0.2";

	return fdt_begin_node(fdt, "psci") ||
	       fdt_property(fdt, "compatible", compat, sizeof(compat)) ||
	       fdt_property_string(fdt, "method", "hvc") ||
	       fdt_end_node(fdt);
}

static int fdt_timer(void *fdt, const struct arm_fdt_config *c)
{
	static const uint32_t ppis[] = {
		ARM_PPI_TIMER_SECURE, ARM_PPI_TIMER_PHYS,
		ARM_PPI_TIMER_VIRT, ARM_PPI_TIMER_HYP,
	};
	uint32_t flags = IRQ_LEVEL_HIGH;
	fdt32_t irqs[3 * ARRAY_SIZE(ppis)];
	unsigned int i;

	if (c->gic_version == 2)
		flags |= GIC_V2_CPU_MASK(c->nr_cpus);
	for (i = 0; i < ARRAY_SIZE(ppis); i++) {
		irqs[3 * i] = cpu_to_fdt32(GIC_PPI);
		irqs[3 * i + 1] = cpu_to_fdt32(ppis[i]);
		irqs[3 * i + 2] = cpu_to_fdt32(flags);
	}
	/* KVM's virtual timer keeps counting whatever the vCPU does */
	return fdt_begin_node(fdt, "timer") ||
	       fdt_property_string(fdt, "compatible", "arm,armv8-timer") ||
	       fdt_property(fdt, "interrupts", irqs, sizeof(irqs)) ||
	       fdt_property(fdt, "always-on", NULL, 0) ||
	       fdt_end_node(fdt);
}

/* The ITS lives inside the GICv3 node, in its address space. */
static int fdt_its(void *fdt)
{
	return begin_at(fdt, "msi-controller", ARM_GIC_ITS_BASE) ||
	       fdt_property_string(fdt, "compatible", "arm,gic-v3-its") ||
	       fdt_property(fdt, "msi-controller", NULL, 0) ||
	       fdt_property_u32(fdt, "#msi-cells", 1) ||
	       prop_reg(fdt, ARM_GIC_ITS_BASE, ARM_GIC_ITS_SIZE) ||
	       fdt_property_u32(fdt, "phandle", ARM_FDT_PHANDLE_MSI) ||
	       fdt_end_node(fdt);
}

static int fdt_gic(void *fdt, const struct arm_fdt_config *c)
{
	bool v3 = c->gic_version == 3;
	fdt32_t reg[8];

	cells64(reg, ARM_GIC_DIST_BASE);
	if (v3) {
		cells64(reg + 2, ARM_GIC_DIST_SIZE);
		cells64(reg + 4, ARM_GIC_REDIST_BASE);
		cells64(reg + 6, ARM_GIC_REDIST_STRIDE * c->nr_cpus);
	} else {
		cells64(reg + 2, ARM_GIC_V2_DIST_SIZE);
		cells64(reg + 4, ARM_GIC_CPU_BASE);
		cells64(reg + 6, ARM_GIC_CPU_SIZE);
	}
	if (begin_at(fdt, "intc", ARM_GIC_DIST_BASE) ||
	    fdt_property_string(fdt, "compatible",
				v3 ? "arm,gic-v3" : "arm,cortex-a15-gic") ||
	    fdt_property(fdt, "interrupt-controller", NULL, 0) ||
	    fdt_property_u32(fdt, "#interrupt-cells", 3) ||
	    fdt_property(fdt, "reg", reg, sizeof(reg)) ||
	    fdt_property_u32(fdt, "phandle", ARM_FDT_PHANDLE_GIC))
		return -1;
	/* the PCI interrupt-map's parent unit addresses are these 2 cells */
	if (fdt_property_u32(fdt, "#address-cells", 2) ||
	    fdt_property_u32(fdt, "#size-cells", 2) ||
	    fdt_property(fdt, "ranges", NULL, 0) ||
	    (v3 && fdt_its(fdt)))
		return -1;
	return fdt_end_node(fdt);
}

static int fdt_uart(void *fdt)
{
	return begin_at(fdt, "uart", ARM_UART_BASE) ||
	       fdt_property_string(fdt, "compatible", "ns16550a") ||
	       prop_reg(fdt, ARM_UART_BASE, ARM_UART_SIZE) ||
	       prop_irq(fdt, GIC_SPI, ARM_SPI_UART, IRQ_LEVEL_HIGH) ||
	       fdt_property_u32(fdt, "clock-frequency", 1843200) ||
	       fdt_end_node(fdt);
}

/*
 * virtio-mmio raises its interrupt as an edge through an irqfd; guest
 * memory is coherent with the device, which is a host thread.
 */
static int fdt_virtio_mmio(void *fdt, const struct arm_fdt_mmio *m)
{
	return begin_at(fdt, "virtio_mmio", m->base) ||
	       fdt_property_string(fdt, "compatible", "virtio,mmio") ||
	       prop_reg(fdt, m->base, m->size) ||
	       prop_irq(fdt, GIC_SPI, m->spi, IRQ_EDGE_RISING) ||
	       fdt_property(fdt, "dma-coherent", NULL, 0) ||
	       fdt_end_node(fdt);
}

/*
 * INTx: slot s's pin p (1-4) is SPI ARM_SPI_PCI_INTX + (s + p - 1) % 4,
 * as arch_pci_intx_gsi() wires it; the mask keeps the two slot bits that
 * swizzle, so sixteen entries cover every slot.
 */
static int prop_pci_intx(void *fdt)
{
	static const uint32_t mask[4] = { 0x1800, 0, 0, 7 };
	fdt32_t map[4 * 4 * 10], m[4];
	unsigned int slot, pin, i, n = 0;

	for (slot = 0; slot < 4; slot++) {
		for (pin = 1; pin <= 4; pin++) {
			const uint32_t e[10] = {
				slot << 11, 0, 0, pin, ARM_FDT_PHANDLE_GIC,
				0, 0, GIC_SPI,
				ARM_SPI_PCI_INTX + (slot + pin - 1) % 4,
				IRQ_LEVEL_HIGH,
			};

			for (i = 0; i < 10; i++)
				map[n++] = cpu_to_fdt32(e[i]);
		}
	}
	for (i = 0; i < 4; i++)
		m[i] = cpu_to_fdt32(mask[i]);
	return fdt_property(fdt, "interrupt-map", map, sizeof(map)) ||
	       fdt_property(fdt, "interrupt-map-mask", m, sizeof(m));
}

/* a ranges entry: PCI space code and address, CPU address, size */
static void pci_range(fdt32_t *out, uint32_t space, uint64_t pci_addr,
		      uint64_t cpu_addr, uint64_t size)
{
	out[0] = cpu_to_fdt32(space);
	cells64(out + 1, pci_addr);
	cells64(out + 3, cpu_addr);
	cells64(out + 5, size);
}

/*
 * The ECAM host bridge. A GICv3's ITS takes virtio-pci's MSI-X, with the
 * requester ID as its device ID (msi-map: the identity over all 64K IDs,
 * the ID lkvm's MSI routes give KVM); a GICv2 has no MSI frame here, so
 * its guests use INTx.
 */
static int fdt_pci(void *fdt, const struct arm_fdt_config *c)
{
	fdt32_t ranges[2 * 7], bus_range[2];

	pci_range(ranges, 0x01000000, 0, ARM_PCI_IO_BASE, ARM_PCI_IO_SIZE);
	pci_range(ranges + 7, 0x02000000, ARM_PCI_MMIO_BASE, ARM_PCI_MMIO_BASE,
		  ARM_PCI_MMIO_SIZE);
	bus_range[0] = cpu_to_fdt32(0);
	bus_range[1] = cpu_to_fdt32(ARM_PCI_ECAM_BUSES - 1);
	if (begin_at(fdt, "pcie", ARM_PCI_ECAM_BASE) ||
	    fdt_property_string(fdt, "compatible", "pci-host-ecam-generic") ||
	    fdt_property_string(fdt, "device_type", "pci") ||
	    fdt_property_u32(fdt, "#address-cells", 3) ||
	    fdt_property_u32(fdt, "#size-cells", 2) ||
	    fdt_property_u32(fdt, "#interrupt-cells", 1) ||
	    prop_reg(fdt, ARM_PCI_ECAM_BASE, ARM_PCI_ECAM_SIZE) ||
	    fdt_property(fdt, "bus-range", bus_range, sizeof(bus_range)) ||
	    fdt_property(fdt, "ranges", ranges, sizeof(ranges)) ||
	    fdt_property(fdt, "dma-coherent", NULL, 0) ||
	    prop_pci_intx(fdt))
		return -1;
	if (c->gic_version == 3) {
		fdt32_t msi_map[4] = {
			0, cpu_to_fdt32(ARM_FDT_PHANDLE_MSI), 0,
			cpu_to_fdt32(0x10000),
		};

		if (fdt_property(fdt, "msi-map", msi_map, sizeof(msi_map)))
			return -1;
	}
	return fdt_end_node(fdt);
}

static int check_config(const struct arm_fdt_config *c)
{
	if (!c->nr_cpus || !c->mpidr || !c->bootargs) {
		pr_err("device tree: no CPUs or no command line");
		return -1;
	}
	if (c->gic_version != 2 && c->gic_version != 3) {
		pr_err("device tree: GICv%u is not a GIC lkvm makes",
		       c->gic_version);
		return -1;
	}
	if (c->gic_version == 2 && c->nr_cpus > ARM_MAX_VCPUS_GICV2) {
		pr_err("device tree: a GICv2 reaches %u CPUs, not %u",
		       ARM_MAX_VCPUS_GICV2, c->nr_cpus);
		return -1;
	}
	if (c->nr_mmio > ARM_FDT_MAX_MMIO || (c->nr_mmio && !c->mmio)) {
		pr_err("device tree: %u virtio-mmio devices", c->nr_mmio);
		return -1;
	}
	return 0;
}

static int fdt_write(void *fdt, size_t size, const struct arm_fdt_config *c)
{
	char stdout_path[32];
	unsigned int i;

	snprintf(stdout_path, sizeof(stdout_path), "/uart@%llx",
		 (unsigned long long)ARM_UART_BASE);
	if (fdt_create(fdt, size) || fdt_finish_reservemap(fdt) ||
	    fdt_begin_node(fdt, "") ||
	    fdt_property_string(fdt, "compatible", "linux,dummy-virt") ||
	    fdt_property_string(fdt, "model", "lkvm") ||
	    fdt_property_u32(fdt, "#address-cells", 2) ||
	    fdt_property_u32(fdt, "#size-cells", 2) ||
	    fdt_property_u32(fdt, "interrupt-parent", ARM_FDT_PHANDLE_GIC) ||
	    fdt_chosen(fdt, c, stdout_path) || fdt_memory(fdt, c) ||
	    fdt_cpus(fdt, c) || fdt_psci(fdt) || fdt_timer(fdt, c) ||
	    fdt_gic(fdt, c) || fdt_uart(fdt) || fdt_pci(fdt, c))
		return -1;
	for (i = 0; i < c->nr_mmio; i++)
		if (fdt_virtio_mmio(fdt, &c->mmio[i]))
			return -1;
	return fdt_end_node(fdt) || fdt_finish(fdt) ? -1 : 0;
}

int arm_fdt_build(void *buf, size_t size, const struct arm_fdt_config *c)
{
	if (check_config(c))
		return -1;
	if (fdt_write(buf, size, c)) {
		pr_err("the device tree does not fit in %zu bytes", size);
		return -1;
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The arm64 device tree (arm/fdt.c), re-parsed with libfdt and checked
 * node by node against what a Linux guest looks for: /chosen, /memory,
 * /cpus with PSCI, the timer's PPIs, the GIC (v3 with its ITS, or v2),
 * the UART stdout-path names, every virtio-mmio device, and the ECAM PCI
 * host bridge with INTx wired as the board wires it and MSIs to the ITS.
 */
#include <libfdt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/arch.h"
#include "lkvm/arm/fdt.h"
#include "lkvm/arm/layout.h"
#include "lkvm/util.h"

#define DTB_SIZE	(64 * 1024)
#define PCI_MAX_SLOTS_CHECKED	32

static const uint64_t mpidrs[] = { 0x0, 0x1, 0x100, 0x10000 };
static const struct arm_fdt_mmio mmio[] = {
	{ ARM_VIRTIO_MMIO_BASE, 0x1000, ARM_SPI_VIRTIO_MMIO },
	{ ARM_VIRTIO_MMIO_BASE + 0x1000, 0x1000, ARM_SPI_VIRTIO_MMIO + 1 },
};

static struct arm_fdt_config base_config(unsigned int gic, unsigned int cpus)
{
	return (struct arm_fdt_config) {
		.ram_base = ARM_RAM_BASE,
		.ram_size = 256ULL << 20,
		.nr_cpus = cpus,
		.mpidr = mpidrs,
		.gic_version = gic,
		.bootargs = "console=ttyS0 quiet",
		.initrd_start = ARM_RAM_BASE + (200ULL << 20),
		.initrd_size = 12345,
		.nr_mmio = ARRAY_SIZE(mmio),
		.mmio = mmio,
	};
}

static void *build(const struct arm_fdt_config *c)
{
	void *fdt = malloc(DTB_SIZE);

	assert_non_null(fdt);
	assert_int_equal(arm_fdt_build(fdt, DTB_SIZE, c), 0);
	assert_int_equal(fdt_check_full(fdt, DTB_SIZE), 0);
	assert_true(fdt_totalsize(fdt) <= DTB_SIZE);
	return fdt;
}

static int node(const void *fdt, const char *path)
{
	int off = fdt_path_offset(fdt, path);

	if (off < 0)
		fail_msg("no node %s", path);
	return off;
}

static const fdt32_t *cells(const void *fdt, int off, const char *name,
			    int ncells)
{
	int len;
	const fdt32_t *p = fdt_getprop(fdt, off, name, &len);

	if (!p)
		fail_msg("no property %s", name);
	if (len != ncells * 4)
		fail_msg("%s is %d bytes, not %d", name, len, ncells * 4);
	return p;
}

static uint64_t u64_at(const fdt32_t *p)
{
	return (uint64_t)fdt32_to_cpu(p[0]) << 32 | fdt32_to_cpu(p[1]);
}

static void assert_string(const void *fdt, int off, const char *name,
			  const char *want)
{
	const char *s = fdt_getprop(fdt, off, name, NULL);

	if (!s)
		fail_msg("no property %s", name);
	assert_string_equal(s, want);
}

static void assert_reg(const void *fdt, int off, uint64_t base,
		       uint64_t size)
{
	const fdt32_t *reg = cells(fdt, off, "reg", 4);

	assert_int_equal(u64_at(reg), base);
	assert_int_equal(u64_at(reg + 2), size);
}

static void assert_irq(const void *fdt, int off, uint32_t type,
		       uint32_t num, uint32_t flags)
{
	const fdt32_t *irq = cells(fdt, off, "interrupts", 3);

	assert_int_equal(fdt32_to_cpu(irq[0]), type);
	assert_int_equal(fdt32_to_cpu(irq[1]), num);
	assert_int_equal(fdt32_to_cpu(irq[2]), flags);
}

static void test_root_chosen_memory(void **state)
{
	struct arm_fdt_config c = base_config(3, 2);
	void *fdt = build(&c);
	int root = node(fdt, "/"), chosen = node(fdt, "/chosen");
	const char *out;

	assert_int_equal(fdt_node_check_compatible(fdt, root,
						   "linux,dummy-virt"), 0);
	assert_int_equal(fdt32_to_cpu(*cells(fdt, root, "#address-cells", 1)),
			 2);
	assert_int_equal(fdt32_to_cpu(*cells(fdt, root, "#size-cells", 1)), 2);
	assert_string(fdt, chosen, "bootargs", "console=ttyS0 quiet");
	assert_int_equal(u64_at(cells(fdt, chosen, "linux,initrd-start", 2)),
			 c.initrd_start);
	assert_int_equal(u64_at(cells(fdt, chosen, "linux,initrd-end", 2)),
			 c.initrd_start + c.initrd_size);
	/* stdout-path names the 16550, which Linux's 8250_of drives */
	out = fdt_getprop(fdt, chosen, "stdout-path", NULL);
	assert_non_null(out);
	assert_int_equal(fdt_node_check_compatible(fdt, node(fdt, out),
						   "ns16550a"), 0);
	assert_reg(fdt, node(fdt, out), ARM_UART_BASE, ARM_UART_SIZE);
	assert_irq(fdt, node(fdt, out), 0, ARM_SPI_UART, 4);
	assert_string(fdt, node(fdt, "/memory@40000000"), "device_type",
		      "memory");
	assert_reg(fdt, node(fdt, "/memory@40000000"), ARM_RAM_BASE,
		   256ULL << 20);
	free(fdt);
}

static void test_no_initrd_no_range(void **state)
{
	struct arm_fdt_config c = base_config(3, 1);
	void *fdt;

	c.initrd_size = 0;
	fdt = build(&c);
	assert_null(fdt_getprop(fdt, node(fdt, "/chosen"),
				"linux,initrd-start", NULL));
	assert_null(fdt_getprop(fdt, node(fdt, "/chosen"),
				"linux,initrd-end", NULL));
	free(fdt);
}

/* Every CPU is there by its MPIDR, started through PSCI over HVC. */
static void test_cpus_and_psci(void **state)
{
	struct arm_fdt_config c = base_config(3, ARRAY_SIZE(mpidrs));
	void *fdt = build(&c);
	int cpus = node(fdt, "/cpus"), cpu, n = 0, psci;

	assert_int_equal(fdt32_to_cpu(*cells(fdt, cpus, "#address-cells", 1)),
			 2);
	assert_int_equal(fdt32_to_cpu(*cells(fdt, cpus, "#size-cells", 1)), 0);
	fdt_for_each_subnode(cpu, fdt, cpus) {
		assert_string(fdt, cpu, "device_type", "cpu");
		assert_string(fdt, cpu, "enable-method", "psci");
		assert_int_equal(fdt_node_check_compatible(fdt, cpu,
							   "arm,arm-v8"), 0);
		assert_int_equal(u64_at(cells(fdt, cpu, "reg", 2)), mpidrs[n]);
		n++;
	}
	assert_int_equal(n, ARRAY_SIZE(mpidrs));
	psci = node(fdt, "/psci");
	assert_int_equal(fdt_node_check_compatible(fdt, psci, "arm,psci-0.2"),
			 0);
	assert_int_equal(fdt_node_check_compatible(fdt, psci, "arm,psci-1.0"),
			 0);
	assert_string(fdt, psci, "method", "hvc");
	free(fdt);
}

/* The four arch timer PPIs, level high; a GICv2 also lists the CPUs. */
static void check_timer(unsigned int gic, unsigned int ncpus, uint32_t flags)
{
	static const uint32_t ppis[] = { 13, 14, 11, 10 };
	struct arm_fdt_config c = base_config(gic, ncpus);
	void *fdt = build(&c);
	int timer = node(fdt, "/timer");
	const fdt32_t *irq = cells(fdt, timer, "interrupts", 12);
	unsigned int i;

	assert_int_equal(fdt_node_check_compatible(fdt, timer,
						   "arm,armv8-timer"), 0);
	for (i = 0; i < ARRAY_SIZE(ppis); i++) {
		assert_int_equal(fdt32_to_cpu(irq[3 * i]), 1);
		assert_int_equal(fdt32_to_cpu(irq[3 * i + 1]), ppis[i]);
		assert_int_equal(fdt32_to_cpu(irq[3 * i + 2]), flags);
	}
	free(fdt);
}

static void test_timer_ppis(void **state)
{
	check_timer(3, 2, 4);
	check_timer(2, 2, 4 | 0x300);
	check_timer(2, 1, 4 | 0x100);
}

/* The root's interrupt-parent is the GIC, whatever its version. */
static int gic_node(const void *fdt)
{
	int root = node(fdt, "/");
	uint32_t parent = fdt32_to_cpu(*cells(fdt, root, "interrupt-parent",
					      1));
	int gic = fdt_node_offset_by_phandle(fdt, parent);

	assert_true(gic >= 0);
	assert_non_null(fdt_getprop(fdt, gic, "interrupt-controller", NULL));
	assert_int_equal(fdt32_to_cpu(*cells(fdt, gic, "#interrupt-cells", 1)),
			 3);
	return gic;
}

static void test_gic_v3_with_its(void **state)
{
	struct arm_fdt_config c = base_config(3, 3);
	void *fdt = build(&c);
	int gic = gic_node(fdt), its;
	const fdt32_t *reg = cells(fdt, gic, "reg", 8);

	assert_int_equal(fdt_node_check_compatible(fdt, gic, "arm,gic-v3"), 0);
	assert_int_equal(u64_at(reg), ARM_GIC_DIST_BASE);
	assert_int_equal(u64_at(reg + 2), ARM_GIC_DIST_SIZE);
	/* one redistributor per vCPU, or the last ones never come up */
	assert_int_equal(u64_at(reg + 4), ARM_GIC_REDIST_BASE);
	assert_int_equal(u64_at(reg + 6), 3 * ARM_GIC_REDIST_STRIDE);
	its = fdt_node_offset_by_compatible(fdt, -1, "arm,gic-v3-its");
	assert_true(its >= 0);
	assert_int_equal(fdt_parent_offset(fdt, its), gic);
	assert_non_null(fdt_getprop(fdt, its, "msi-controller", NULL));
	assert_reg(fdt, its, ARM_GIC_ITS_BASE, ARM_GIC_ITS_SIZE);
	assert_int_equal(fdt_get_phandle(fdt, its), ARM_FDT_PHANDLE_MSI);
	free(fdt);
}

static void test_gic_v2(void **state)
{
	struct arm_fdt_config c = base_config(2, 2);
	void *fdt = build(&c);
	int gic = gic_node(fdt);
	const fdt32_t *reg = cells(fdt, gic, "reg", 8);

	assert_int_equal(fdt_node_check_compatible(fdt, gic,
						   "arm,cortex-a15-gic"), 0);
	assert_int_equal(u64_at(reg), ARM_GIC_DIST_BASE);
	assert_int_equal(u64_at(reg + 4), ARM_GIC_CPU_BASE);
	assert_int_equal(u64_at(reg + 6), ARM_GIC_CPU_SIZE);
	assert_true(fdt_node_offset_by_compatible(fdt, -1,
						  "arm,gic-v3-its") < 0);
	free(fdt);
}

/* Every device the VM made, at its slot with its SPI, edge-triggered. */
static void test_virtio_mmio_nodes(void **state)
{
	struct arm_fdt_config c = base_config(3, 1);
	void *fdt = build(&c);
	int off = -1;
	unsigned int n = 0;

	while ((off = fdt_node_offset_by_compatible(fdt, off,
						    "virtio,mmio")) >= 0) {
		assert_true(n < ARRAY_SIZE(mmio));
		assert_reg(fdt, off, mmio[n].base, mmio[n].size);
		assert_irq(fdt, off, 0, mmio[n].spi, 1);
		assert_non_null(fdt_getprop(fdt, off, "dma-coherent", NULL));
		n++;
	}
	assert_int_equal(n, ARRAY_SIZE(mmio));
	free(fdt);
}

/*
 * Every slot's four pins land on the SPI arch_pci_intx_gsi() raises for
 * them, found through interrupt-map-mask and interrupt-map as Linux's
 * of_irq_parse_raw() does (the mask keeps two slot bits and the pin).
 */
static void check_pci_intx(const void *fdt, int pci)
{
	const fdt32_t *mask = cells(fdt, pci, "interrupt-map-mask", 4);
	const fdt32_t *map = cells(fdt, pci, "interrupt-map", 16 * 10);
	unsigned int slot, pin, i;

	for (slot = 0; slot < PCI_MAX_SLOTS_CHECKED; slot++) {
		for (pin = 1; pin <= 4; pin++) {
			uint32_t hi = (slot << 11) & fdt32_to_cpu(mask[0]);
			uint32_t p = pin & fdt32_to_cpu(mask[3]);
			const fdt32_t *e = NULL;

			for (i = 0; i < 16 && !e; i++)
				if (fdt32_to_cpu(map[i * 10]) == hi &&
				    fdt32_to_cpu(map[i * 10 + 3]) == p)
					e = map + i * 10;
			if (!e)
				fail_msg("slot %u pin %u: not in interrupt-map",
					 slot, pin);
			assert_int_equal(fdt32_to_cpu(e[4]),
					 ARM_FDT_PHANDLE_GIC);
			assert_int_equal(fdt32_to_cpu(e[7]), 0);	/* SPI */
			assert_int_equal(fdt32_to_cpu(e[8]),
					 arch_pci_intx_gsi(slot, pin - 1));
			assert_int_equal(fdt32_to_cpu(e[9]), 4);	/* level */
		}
	}
}

static void check_pci(unsigned int gic)
{
	struct arm_fdt_config c = base_config(gic, 1);
	void *fdt = build(&c);
	int pci = fdt_node_offset_by_compatible(fdt, -1,
						"pci-host-ecam-generic");
	const fdt32_t *r, *bus;

	assert_true(pci >= 0);
	assert_string(fdt, pci, "device_type", "pci");
	assert_int_equal(fdt32_to_cpu(*cells(fdt, pci, "#address-cells", 1)),
			 3);
	assert_int_equal(fdt32_to_cpu(*cells(fdt, pci, "#interrupt-cells", 1)),
			 1);
	assert_reg(fdt, pci, ARM_PCI_ECAM_BASE, ARM_PCI_ECAM_SIZE);
	bus = cells(fdt, pci, "bus-range", 2);
	/* 1 MiB of ECAM per bus */
	assert_int_equal((fdt32_to_cpu(bus[1]) - fdt32_to_cpu(bus[0]) + 1) <<
			 20, ARM_PCI_ECAM_SIZE);
	/* I/O at PCI 0, then 32-bit memory mapped 1:1 */
	r = cells(fdt, pci, "ranges", 14);
	assert_int_equal(fdt32_to_cpu(r[0]), 0x01000000);
	assert_int_equal(u64_at(r + 3), ARM_PCI_IO_BASE);
	assert_int_equal(u64_at(r + 5), ARM_PCI_IO_SIZE);
	assert_int_equal(fdt32_to_cpu(r[7]), 0x02000000);
	assert_int_equal(u64_at(r + 8), ARM_PCI_MMIO_BASE);
	assert_int_equal(u64_at(r + 10), ARM_PCI_MMIO_BASE);
	assert_int_equal(u64_at(r + 12), ARM_PCI_MMIO_SIZE);
	check_pci_intx(fdt, pci);
	if (gic == 3) {
		const fdt32_t *m = cells(fdt, pci, "msi-map", 4);

		/* requester ID n is ITS device ID n, for every ID */
		assert_int_equal(fdt32_to_cpu(m[0]), 0);
		assert_int_equal(fdt32_to_cpu(m[1]), ARM_FDT_PHANDLE_MSI);
		assert_int_equal(fdt32_to_cpu(m[2]), 0);
		assert_int_equal(fdt32_to_cpu(m[3]), 0x10000);
	} else {
		assert_null(fdt_getprop(fdt, pci, "msi-map", NULL));
	}
	free(fdt);
}

static void test_pci_host_bridge(void **state)
{
	check_pci(3);
	check_pci(2);
}

/* A bad description or a buffer too small fails cleanly, never overruns. */
static void test_refusals(void **state)
{
	struct arm_fdt_config c = base_config(3, 1);
	char *buf = malloc(DTB_SIZE + 16);

	assert_non_null(buf);
	memset(buf, 0xa5, DTB_SIZE + 16);
	assert_int_equal(arm_fdt_build(buf, 256, &c), -1);
	assert_int_equal((unsigned char)buf[256], 0xa5);
	c.gic_version = 4;
	assert_int_equal(arm_fdt_build(buf, DTB_SIZE, &c), -1);
	c = base_config(2, 1);
	c.nr_cpus = ARM_MAX_VCPUS_GICV2 + 1;
	assert_int_equal(arm_fdt_build(buf, DTB_SIZE, &c), -1);
	c = base_config(3, 0);
	assert_int_equal(arm_fdt_build(buf, DTB_SIZE, &c), -1);
	c = base_config(3, 1);
	c.nr_mmio = ARM_FDT_MAX_MMIO + 1;
	assert_int_equal(arm_fdt_build(buf, DTB_SIZE, &c), -1);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_chosen_memory),
		cmocka_unit_test(test_no_initrd_no_range),
		cmocka_unit_test(test_cpus_and_psci),
		cmocka_unit_test(test_timer_ppis),
		cmocka_unit_test(test_gic_v3_with_its),
		cmocka_unit_test(test_gic_v2),
		cmocka_unit_test(test_virtio_mmio_nodes),
		cmocka_unit_test(test_pci_host_bridge),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

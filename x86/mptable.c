// SPDX-License-Identifier: GPL-2.0
/*
 * Intel MultiProcessor Specification 1.4 tables: the floating pointer and,
 * right behind it, the configuration table, for kernels that find the APs
 * and the IOAPIC without ACPI.
 */
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/x86/acpi.h"
#include "lkvm/x86/layout.h"
#include "lkvm/x86/mptable.h"

#define MP_SPEC_REV		4	/* 1.4 */

struct mpf_intel {
	char signature[4];		/* "_MP_" */
	uint32_t config_table;
	uint8_t length;			/* in 16-byte units */
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t feature[5];		/* all 0: a config table, no IMCR */
} __attribute__((packed));

struct mpc_header {
	char signature[4];		/* "PCMP" */
	uint16_t length;
	uint8_t spec_rev;
	uint8_t checksum;
	char oem_id[8];
	char product_id[12];
	uint32_t oem_table;
	uint16_t oem_table_size;
	uint16_t entry_count;
	uint32_t lapic_address;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

enum mpc_entry_type {
	MPC_PROCESSOR,
	MPC_BUS,
	MPC_IOAPIC,
	MPC_IO_INTR,
	MPC_LOCAL_INTR,
};

struct mpc_processor {
	uint8_t type;
	uint8_t apic_id;
	uint8_t apic_version;
	uint8_t flags;
	uint32_t signature;
	uint32_t features;
	uint32_t reserved[2];
} __attribute__((packed));

#define CPU_ENABLED		(1U << 0)
#define CPU_BOOTSTRAP		(1U << 1)

struct mpc_bus {
	uint8_t type;
	uint8_t bus_id;
	char bus_type[6];
} __attribute__((packed));

struct mpc_ioapic {
	uint8_t type;
	uint8_t apic_id;
	uint8_t version;
	uint8_t flags;
	uint32_t address;
} __attribute__((packed));

#define IOAPIC_ENABLED		(1U << 0)

/* Both interrupt entry types share this layout. */
struct mpc_intr {
	uint8_t type;
	uint8_t irq_type;
	uint16_t flags;
	uint8_t src_bus;
	uint8_t src_irq;
	uint8_t dst_apic;
	uint8_t dst_pin;
} __attribute__((packed));

enum mp_irq_type {
	MP_INT,
	MP_NMI,
	MP_SMI,
	MP_EXTINT,
};

/* Polarity in bits 1-0, trigger mode in bits 3-2; 0 conforms to the bus. */
#define MP_IRQ_CONFORMS		0
#define MP_IRQ_LEVEL_HIGH	(0x1 | 0x3 << 2)

_Static_assert(sizeof(struct mpf_intel) == 16, "MP floating pointer");
_Static_assert(sizeof(struct mpc_header) == 44, "MP config table header");
_Static_assert(sizeof(struct mpc_processor) == 20, "MP processor entry");
_Static_assert(sizeof(struct mpc_bus) == 8, "MP bus entry");
_Static_assert(sizeof(struct mpc_ioapic) == 8, "MP IOAPIC entry");
_Static_assert(sizeof(struct mpc_intr) == 8, "MP interrupt entry");

#define BUS_PCI			0
#define BUS_ISA			1
#define NR_ISA_IRQS		16
/* IRQ2 is the 8259 cascade: no IOAPIC pin takes it. */
#define NR_IO_INTRS		(NR_ISA_IRQS - 1)
#define NR_LOCAL_INTRS		2
#define ALL_LAPICS		0xff

/* An integrated local APIC, and a plausible family-6 CPU with FPU + APIC. */
#define LAPIC_VERSION		0x14
#define IOAPIC_VERSION		0x11
#define CPU_SIGNATURE		0x600
#define CPU_FEATURES		((1U << 0) | (1U << 9))


static size_t config_table_size(unsigned int nr_cpus)
{
	return sizeof(struct mpc_header) +
	       nr_cpus * sizeof(struct mpc_processor) +
	       2 * sizeof(struct mpc_bus) + sizeof(struct mpc_ioapic) +
	       (NR_IO_INTRS + NR_LOCAL_INTRS) * sizeof(struct mpc_intr);
}

static void *put_processors(void *p, unsigned int nr_cpus)
{
	struct mpc_processor *cpu = p;

	for (unsigned int i = 0; i < nr_cpus; i++, cpu++) {
		cpu->type = MPC_PROCESSOR;
		cpu->apic_id = i;
		cpu->apic_version = LAPIC_VERSION;
		cpu->flags = CPU_ENABLED | (i == 0 ? CPU_BOOTSTRAP : 0);
		cpu->signature = CPU_SIGNATURE;
		cpu->features = CPU_FEATURES;
	}
	return cpu;
}

static void *put_buses(void *p)
{
	struct mpc_bus *bus = p;

	bus[0].type = MPC_BUS;
	bus[0].bus_id = BUS_PCI;
	memcpy(bus[0].bus_type, "PCI   ", 6);
	bus[1].type = MPC_BUS;
	bus[1].bus_id = BUS_ISA;
	memcpy(bus[1].bus_type, "ISA   ", 6);
	return bus + 2;
}

static void *put_ioapic(void *p, uint8_t id)
{
	struct mpc_ioapic *ioapic = p;

	ioapic->type = MPC_IOAPIC;
	ioapic->apic_id = id;
	ioapic->version = IOAPIC_VERSION;
	ioapic->flags = IOAPIC_ENABLED;
	ioapic->address = X86_IOAPIC_ADDR;
	return ioapic + 1;
}

static void *put_io_intrs(void *p, uint8_t ioapic_id)
{
	struct mpc_intr *e = p;

	for (unsigned int irq = 0; irq < NR_ISA_IRQS; irq++) {
		if (irq == 2)
			continue;
		e->type = MPC_IO_INTR;
		e->irq_type = MP_INT;
		/* As in the MADT: the SCI is level-triggered, active-high. */
		e->flags = irq == X86_IRQ_SCI ? MP_IRQ_LEVEL_HIGH :
			   MP_IRQ_CONFORMS;
		e->src_bus = BUS_ISA;
		e->src_irq = irq;
		e->dst_apic = ioapic_id;
		/* The PIT's output reaches the IOAPIC on pin 2. */
		e->dst_pin = irq == 0 ? 2 : irq;
		e++;
	}
	return e;
}

static void *put_local_intrs(void *p)
{
	struct mpc_intr *e = p;

	/* Virtual wire mode: the 8259 on LINT0, NMI on LINT1, every CPU. */
	e[0] = (struct mpc_intr){ .type = MPC_LOCAL_INTR,
				  .irq_type = MP_EXTINT,
				  .src_bus = BUS_ISA,
				  .dst_apic = ALL_LAPICS,
				  .dst_pin = 0 };
	e[1] = (struct mpc_intr){ .type = MPC_LOCAL_INTR,
				  .irq_type = MP_NMI,
				  .src_bus = BUS_ISA,
				  .dst_apic = ALL_LAPICS,
				  .dst_pin = 1 };
	return e + 2;
}

long mptable_build(void *buf, size_t size, uint64_t base, unsigned int nr_cpus)
{
	struct mpf_intel *mpf = buf;
	struct mpc_header *mpc;
	size_t table_len, total;
	uint8_t ioapic_id = x86_ioapic_id(nr_cpus);
	void *p;

	/* Pure code: the caller, who knows the context, reports failures. */
	if (nr_cpus == 0 || nr_cpus > ACPI_MAX_CPUS)
		return -1;
	table_len = config_table_size(nr_cpus);
	total = sizeof(*mpf) + table_len;
	if (size < total)
		return -1;
	/* Scanners look at 16-byte boundaries; pointers are 32-bit. */
	if (base % 16 || !range_within(base, total, 0, X86_4G))
		return -1;
	memset(buf, 0, total);

	mpc = (struct mpc_header *)(mpf + 1);
	memcpy(mpc->signature, "PCMP", 4);
	mpc->length = table_len;
	mpc->spec_rev = MP_SPEC_REV;
	memcpy(mpc->oem_id, "LKVM    ", 8);
	memcpy(mpc->product_id, "LKVM        ", 12);
	mpc->entry_count = nr_cpus + 2 + 1 + NR_IO_INTRS + NR_LOCAL_INTRS;
	mpc->lapic_address = X86_LAPIC_ADDR;

	p = put_processors(mpc + 1, nr_cpus);
	p = put_buses(p);
	p = put_ioapic(p, ioapic_id);
	p = put_io_intrs(p, ioapic_id);
	put_local_intrs(p);
	mpc->checksum = table_checksum(mpc, table_len);

	memcpy(mpf->signature, "_MP_", 4);
	mpf->config_table = base + sizeof(*mpf);
	mpf->length = 1;
	mpf->spec_rev = MP_SPEC_REV;
	mpf->checksum = table_checksum(mpf, sizeof(*mpf));
	return total;
}

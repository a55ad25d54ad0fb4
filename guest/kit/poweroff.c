/* SPDX-License-Identifier: GPL-2.0 */
/*
 * poweroff.elf: shuts the VM down the way an OS does, through ACPI: the
 * PM1a control block from the FADT (or the sleep control register on a
 * hardware-reduced platform) and SLP_TYP from the DSDT's \_S5 package,
 * enabling ACPI mode first if the FADT says it is off. The VMM should then
 * exit 0; reaching the code after the write is a failure.
 */
#include "kit.h"

#define GAS_MEMORY	0
#define GAS_IO		1

static bool fadt_has(const struct acpi_fadt *f, size_t off, size_t len)
{
	return f && f->hdr.length >= off + len;
}

static uint16_t pm1a_cnt_port(const struct acpi_fadt *f)
{
	if (!f) {
		kit_printf("no FADT: assuming PM1a_CNT at %#x\n",
			   KIT_PORT_PM1A_CNT);
		return KIT_PORT_PM1A_CNT;
	}
	if (f->pm1a_cnt_blk)
		return (uint16_t)f->pm1a_cnt_blk;
	if (fadt_has(f, offsetof(struct acpi_fadt, x_pm1a_cnt_blk),
		     sizeof(struct acpi_gas)) &&
	    f->x_pm1a_cnt_blk.space_id == GAS_IO && f->x_pm1a_cnt_blk.address)
		return (uint16_t)f->x_pm1a_cnt_blk.address;
	kit_fail("FADT has no PM1a control block");
	return KIT_PORT_PM1A_CNT;
}

static void acpi_enable(const struct acpi_fadt *f, uint16_t port)
{
	uint64_t deadline;

	if (!f || !f->smi_cmd || !f->acpi_enable ||
	    (inw(port) & ACPI_PM1_SCI_EN))
		return;
	kit_printf("enabling ACPI mode via SMI_CMD %#x\n", f->smi_cmd);
	outb((uint16_t)f->smi_cmd, f->acpi_enable);
	deadline = kit_now_us() + 1000000;
	while (!(inw(port) & ACPI_PM1_SCI_EN) && kit_now_us() < deadline)
		cpu_relax();
}

/* Hardware-reduced ACPI: one byte, SLP_TYP in bits 4:2, SLP_EN bit 5. */
static void sleep_control_write(const struct acpi_gas *g, int slp_typ)
{
	uint8_t v = (uint8_t)((slp_typ & 7) << 2 | ACPI_SLEEP_CTL_SLP_EN);

	kit_printf("powering off: sleep control %s %#lx, SLP_TYP %d\n",
		   g->space_id == GAS_IO ? "port" : "mmio", g->address,
		   slp_typ);
	if (g->space_id == GAS_IO)
		outb((uint16_t)g->address, v);
	else if (g->space_id == GAS_MEMORY && g->address < (1ULL << 32))
		mmio_write8(g->address, v);
	else
		kit_fail("sleep control register in address space %u",
			 g->space_id);
}

KIT_TEST(poweroff)
{
	const struct acpi_fadt *f = (const void *)kit_acpi_find("FACP", 0);
	int slp_typ = kit_acpi_s5_slp_typ();

	if (slp_typ < 0) {
		kit_printf("no \\_S5 in the DSDT: assuming SLP_TYP 5\n");
		slp_typ = 5;
	}
	if (fadt_has(f, offsetof(struct acpi_fadt, flags), 4) &&
	    (f->flags & ACPI_FADT_HW_REDUCED) &&
	    fadt_has(f, offsetof(struct acpi_fadt, sleep_control),
		     sizeof(struct acpi_gas)) && f->sleep_control.address) {
		sleep_control_write(&f->sleep_control, slp_typ);
	} else {
		uint16_t port = pm1a_cnt_port(f);

		acpi_enable(f, port);
		kit_printf("powering off: PM1a_CNT %#x, SLP_TYP %d\n", port,
			   slp_typ);
		outw(port, (uint16_t)(slp_typ << 10 | ACPI_PM1_SLP_EN));
	}

	/* Give an asynchronous VMM a moment before calling it a failure. */
	kit_udelay(200000);
	kit_fail("still running after the S5 request");
}

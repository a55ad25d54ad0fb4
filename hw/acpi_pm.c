// SPDX-License-Identifier: GPL-2.0
/*
 * ACPI fixed hardware registers described by the FADT: PM1a event block
 * (status, enable), PM1a control block and the PM timer. Writing SLP_EN
 * with the \_S5 sleep type is how an ACPI guest powers off; it ends the
 * VM with status 0. SCI_EN reads as set because there is no SMI handler
 * to switch the machine to ACPI mode (the FADT's SMI_CMD is 0).
 */
#include <string.h>
#include <time.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define PM1_CNT_SCI_EN		0x0001
#define PM1_CNT_SLP_TYP_SHIFT	10
#define PM1_CNT_SLP_TYP_MASK	0x1c00
#define PM1_CNT_SLP_EN		0x2000
#define PM_TIMER_HZ		3579545ULL
#define PM_TIMER_MASK		0xffffff	/* 24-bit: TMR_VAL_EXT clear */

/* vCPU threads only; `lock` guards the registers. */
struct acpi_pm {
	struct bus_dev evt_dev;
	struct bus_dev cnt_dev;
	struct bus_dev tmr_dev;
	struct vm *vm;
	pthread_mutex_t lock;
	unsigned int slp_typ_s5;
	uint16_t pm1_sts, pm1_en, pm1_cnt;
};

static uint32_t pm_timer_now(void)
{
	struct timespec ts;
	uint64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	/* 128-bit intermediate: ns * 3.58M overflows 64 bits after ~1.6 h. */
	return (uint32_t)((unsigned __int128)ns * PM_TIMER_HZ / 1000000000ULL);
}

/* Little-endian slice of a register file, for any access width. */
static void reg_read(const uint8_t *regs, size_t size, uint64_t offset,
		     void *data, unsigned int len)
{
	memset(data, 0, len);
	if (offset < size)
		memcpy(data, regs + offset, MIN(len, size - offset));
}

static void acpi_pm_read(struct bus_dev *dev, uint64_t offset, void *data,
			 unsigned int len)
{
	struct acpi_pm *pm = dev->priv;
	uint8_t regs[4];
	uint32_t tmr;

	pthread_mutex_lock(&pm->lock);
	if (dev == &pm->evt_dev) {
		memcpy(regs, &pm->pm1_sts, 2);
		memcpy(regs + 2, &pm->pm1_en, 2);
	} else if (dev == &pm->cnt_dev) {
		uint16_t cnt = pm->pm1_cnt | PM1_CNT_SCI_EN;

		memcpy(regs, &cnt, 2);
	} else {
		tmr = pm_timer_now() & PM_TIMER_MASK;
		memcpy(regs, &tmr, 4);
	}
	pthread_mutex_unlock(&pm->lock);
	reg_read(regs, dev == &pm->cnt_dev ? 2 : 4, offset, data, len);
}

static void acpi_pm_write_cnt(struct acpi_pm *pm, uint16_t val)
{
	unsigned int slp_typ = (val & PM1_CNT_SLP_TYP_MASK) >>
			       PM1_CNT_SLP_TYP_SHIFT;

	pm->pm1_cnt = val & ~PM1_CNT_SLP_EN;	/* SLP_EN reads as zero */
	if (!(val & PM1_CNT_SLP_EN))
		return;
	if (slp_typ == pm->slp_typ_s5)
		vm_request_exit(pm->vm, EXIT_POWEROFF, "guest powered off");
	else
		pr_warn_once("guest asked for sleep type %u: only S5 (power off) is supported",
			     slp_typ);
}

/*
 * A write changes the bytes it covers and no others, as in any register
 * file: a byte written to PM1_EN's high half keeps its low half, a byte
 * written to PM1_CNT's high half (SLP_TYP, SLP_EN) takes effect.
 */
static uint16_t pm_merge(uint16_t old, const uint8_t *regs,
			 const uint8_t *mask)
{
	uint16_t val, m;

	memcpy(&val, regs, 2);
	memcpy(&m, mask, 2);
	return (old & ~m) | (val & m);
}

static void acpi_pm_write(struct bus_dev *dev, uint64_t offset,
			  const void *data, unsigned int len)
{
	struct acpi_pm *pm = dev->priv;
	uint8_t regs[4] = { 0 }, mask[4] = { 0 };
	unsigned int n;

	if (dev == &pm->tmr_dev || offset >= 4)
		return;
	n = MIN(len, 4 - offset);
	memcpy(regs + offset, data, n);
	memset(mask + offset, 0xff, n);
	pthread_mutex_lock(&pm->lock);
	if (dev == &pm->cnt_dev) {
		if (offset < 2)
			acpi_pm_write_cnt(pm, pm_merge(pm->pm1_cnt, regs, mask));
	} else {
		/* write 1 to clear; bytes not written are zero in regs */
		pm->pm1_sts &= ~pm_merge(0, regs, mask);
		pm->pm1_en = pm_merge(pm->pm1_en, regs + 2, mask + 2);
	}
	pthread_mutex_unlock(&pm->lock);
}

static const struct bus_ops acpi_pm_ops = {
	.read = acpi_pm_read,
	.write = acpi_pm_write,
};

int acpi_pm_init(struct vm *vm, uint16_t evt_port, uint16_t cnt_port,
		 uint16_t tmr_port, unsigned int sci_irq, unsigned int slp_typ_s5)
{
	struct acpi_pm *pm = vm_zalloc(vm, sizeof(*pm));

	if (!pm)
		return -1;
	(void)sci_irq;	/* no event source raises an SCI yet */
	pm->vm = vm;
	pm->slp_typ_s5 = slp_typ_s5;
	pthread_mutex_init(&pm->lock, NULL);
	pm->evt_dev = (struct bus_dev) { .name = "acpi-pm1-evt", .ops = &acpi_pm_ops, .priv = pm };
	pm->cnt_dev = (struct bus_dev) { .name = "acpi-pm1-cnt", .ops = &acpi_pm_ops, .priv = pm };
	pm->tmr_dev = (struct bus_dev) { .name = "acpi-pm-tmr", .ops = &acpi_pm_ops, .priv = pm };
	if (bus_register(&vm->pio, evt_port, 4, &pm->evt_dev) ||
	    bus_register(&vm->pio, cnt_port, 2, &pm->cnt_dev))
		return -1;
	return bus_register(&vm->pio, tmr_port, 4, &pm->tmr_dev);
}

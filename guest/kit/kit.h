/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest kit: a freestanding runtime for small 64-bit test guests that
 * lkvm boots through the PVH entry. It gives them a console, port and MMIO
 * access, a heap, the command line, ACPI lookups, AP start-up and a
 * pass/fail report whose count becomes the VM's exit status.
 */
#ifndef KIT_H
#define KIT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

/* Fixed board facts shared with lkvm's include/lkvm/x86/layout.h. */
#define KIT_PORT_COM1		0x3f8
#define KIT_PORT_DEBUG_EXIT	0x501
#define KIT_PORT_PM1A_CNT	0x604
#define KIT_PORT_RTC		0x70
#define KIT_LAPIC_ADDR		0xfee00000UL
#define KIT_IOAPIC_ADDR		0xfec00000UL
#define KIT_EBDA_ADDR		0x9fc00UL
#define KIT_TRAMPOLINE_ADDR	0x8000UL	/* AP real-mode entry page */

/* Exit status used when the guest dies on a CPU exception. */
#define KIT_EXIT_EXCEPTION	250
/* Failure counts above this are reported as this. */
#define KIT_EXIT_MAX_FAILS	200

#define KIT_MAX_CPUS		64

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define __packed		__attribute__((packed))
#define __noreturn		__attribute__((noreturn))
#define __printf(a, b)		__attribute__((format(printf, a, b)))

/*
 * Layouts the kit checks lkvm against (hvm_start_info here, the ACPI tables
 * below) are written again from the specs on purpose, not shared with
 * lkvm's headers: a test that reads a structure through the same
 * definition lkvm writes it with cannot catch a layout mistake.
 *
 * Xen public/arch-x86/hvm/start_info.h, version 1.
 */
#define HVM_START_MAGIC		0x336ec578
struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

#define HVM_MEMMAP_RAM		1

/* Set by kit_main when the start_info magic was right, else NULL. */
extern const struct hvm_start_info *kit_start_info;
/* The end of the highest RAM range in the PVH memory map; 0 without one. */
uint64_t kit_ram_end(void);

/* Each test guest defines these two through KIT_TEST(name). */
extern const char kit_test_name[];
void kit_test(void);
#define KIT_TEST(name)					\
	const char kit_test_name[] = #name;		\
	void kit_test(void)

static inline __noreturn void kit_halt_forever(void)
{
	for (;;)
		asm volatile("cli; hlt");
}

/* ---- libc-like helpers (gcc may also emit calls to the mem* ones) ---- */
void *memset(void *s, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
/* Parses decimal, or hex with 0x; sets *end past the digits. */
uint64_t kit_strtou64(const char *s, const char **end);
/* Parses "xx:xx:xx:xx:xx:xx" (either case), nothing after it. */
bool kit_parse_mac(const char *s, uint8_t mac[6]);

/* ---- console (COM1, polled) ---- */
void kit_putc(char c);
void kit_puts(const char *s);
int kit_printf(const char *fmt, ...) __printf(1, 2);
int kit_vprintf(const char *fmt, va_list ap);
int kit_snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);

/* ---- exit and the report ---- */
__noreturn void kit_exit(unsigned int status);
/* Prints "PASS: name" or "FAIL: name (n failures)" and exits with n. */
__noreturn void kit_finish(void);
extern unsigned int kit_failures;
void kit_fail(const char *fmt, ...) __printf(1, 2);

/* Counts a failure and prints "FAIL: <what>" when cond is false. */
#define kit_check(cond, fmt, ...)					\
	({								\
		bool __ok = !!(cond);					\
		if (!__ok)						\
			kit_fail(fmt, ##__VA_ARGS__);			\
		__ok;							\
	})

/* ---- heap: a bounds-checked first-fit free list ---- */
void *kit_malloc(size_t size);
void *kit_zalloc(size_t size);
void kit_free(void *p);
/* kit_free without the failure report: false if p was not a live block. */
bool kit_free_checked(void *p);
/* Free bytes left in the heap (for tests of the heap itself). */
size_t kit_heap_free_bytes(void);

/* ---- command line ---- */
const char *kit_cmdline(void);
/* Copies the value of "key=value" into buf; false when key is absent. */
bool kit_cmdline_get(const char *key, char *buf, size_t size);
uint64_t kit_cmdline_u64(const char *key, uint64_t dflt);
bool kit_cmdline_has(const char *key);

/*
 * ---- time: ACPI PM timer when usable, else the TSC ----
 * kit_now_us() counts PM timer wraps between its calls: with a 24-bit
 * timer, call it at least every 4.6 s or the time between is lost.
 */
uint64_t kit_now_us(void);
void kit_udelay(uint64_t us);

/* ---- PCI configuration mechanism #1 ---- */
uint32_t kit_pci_read32(unsigned int bus, unsigned int dev, unsigned int fn,
			unsigned int off);
void kit_pci_write32(unsigned int bus, unsigned int dev, unsigned int fn,
		     unsigned int off, uint32_t v);
uint16_t kit_pci_read16(unsigned int bus, unsigned int dev, unsigned int fn,
			unsigned int off);
uint8_t kit_pci_read8(unsigned int bus, unsigned int dev, unsigned int fn,
		      unsigned int off);

/* ---- ACPI ---- */
struct acpi_rsdp {
	char signature[8];
	uint8_t checksum;
	char oem_id[6];
	uint8_t revision;
	uint32_t rsdt_addr;
	/* revision >= 2 */
	uint32_t length;
	uint64_t xsdt_addr;
	uint8_t ext_checksum;
	uint8_t reserved[3];
} __packed;

struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	uint32_t creator_id;
	uint32_t creator_revision;
} __packed;

struct acpi_gas {
	uint8_t space_id;
	uint8_t bit_width;
	uint8_t bit_offset;
	uint8_t access_size;
	uint64_t address;
} __packed;

/* The FADT fields the kit uses; the table may be shorter (old revisions). */
struct acpi_fadt {
	struct acpi_header hdr;
	uint32_t firmware_ctrl;
	uint32_t dsdt;
	uint8_t reserved0;
	uint8_t preferred_pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable;
	uint8_t acpi_disable;
	uint8_t s4bios_req;
	uint8_t pstate_cnt;
	uint32_t pm1a_evt_blk;
	uint32_t pm1b_evt_blk;
	uint32_t pm1a_cnt_blk;
	uint32_t pm1b_cnt_blk;
	uint32_t pm2_cnt_blk;
	uint32_t pm_tmr_blk;
	uint32_t gpe0_blk;
	uint32_t gpe1_blk;
	uint8_t pm1_evt_len;
	uint8_t pm1_cnt_len;
	uint8_t pm2_cnt_len;
	uint8_t pm_tmr_len;
	uint8_t gpe0_blk_len;
	uint8_t gpe1_blk_len;
	uint8_t gpe1_base;
	uint8_t cst_cnt;
	uint16_t p_lvl2_lat;
	uint16_t p_lvl3_lat;
	uint16_t flush_size;
	uint16_t flush_stride;
	uint8_t duty_offset;
	uint8_t duty_width;
	uint8_t day_alrm;
	uint8_t mon_alrm;
	uint8_t century;
	uint16_t iapc_boot_arch;
	uint8_t reserved1;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_version;
	uint64_t x_firmware_ctrl;
	uint64_t x_dsdt;
	struct acpi_gas x_pm1a_evt_blk;
	struct acpi_gas x_pm1b_evt_blk;
	struct acpi_gas x_pm1a_cnt_blk;
	struct acpi_gas x_pm1b_cnt_blk;
	struct acpi_gas x_pm2_cnt_blk;
	struct acpi_gas x_pm_tmr_blk;
	struct acpi_gas x_gpe0_blk;
	struct acpi_gas x_gpe1_blk;
	struct acpi_gas sleep_control;	/* hardware-reduced ACPI */
	struct acpi_gas sleep_status;
} __packed;

#define ACPI_FADT_TMR_VAL_EXT	(1u << 8)
#define ACPI_FADT_HW_REDUCED	(1u << 20)
#define ACPI_PM1_SCI_EN		(1u << 0)
#define ACPI_PM1_SLP_EN		(1u << 13)
#define ACPI_SLEEP_CTL_SLP_EN	(1u << 5)

struct acpi_madt {
	struct acpi_header hdr;
	uint32_t lapic_addr;
	uint32_t flags;
	uint8_t entries[];
} __packed;

#define ACPI_MADT_LAPIC		0
#define ACPI_MADT_IOAPIC	1
#define ACPI_MADT_ISO		2
#define ACPI_MADT_X2APIC	9

struct acpi_madt_entry {
	uint8_t type;
	uint8_t length;
} __packed;

struct acpi_madt_lapic {
	uint8_t type;
	uint8_t length;
	uint8_t acpi_id;
	uint8_t apic_id;
	uint32_t flags;		/* bit 0 enabled, bit 1 online capable */
} __packed;

struct acpi_madt_x2apic {
	uint8_t type;
	uint8_t length;
	uint16_t reserved;
	uint32_t x2apic_id;
	uint32_t flags;
	uint32_t acpi_uid;
} __packed;

uint8_t kit_checksum(const void *p, size_t len);
/* Scans the first KiB of the EBDA and 0xE0000-0xFFFFF for a valid RSDP. */
const struct acpi_rsdp *kit_acpi_rsdp_scan(void);
/* The RSDP start_info points at, or NULL (not checked for validity). */
const struct acpi_rsdp *kit_acpi_rsdp_start_info(void);
/* start_info's if valid, else the scan's. */
const struct acpi_rsdp *kit_acpi_rsdp(void);
bool kit_acpi_rsdp_valid(const struct acpi_rsdp *rsdp);
/* The nth table with this signature from the XSDT (RSDT if no XSDT). */
const struct acpi_header *kit_acpi_find(const char *sig, unsigned int nth);
/* The DSDT, through the FADT. */
const struct acpi_header *kit_acpi_dsdt(void);
/* SLP_TYPa of \_S5 from the DSDT, or -1 if not found. */
int kit_acpi_s5_slp_typ(void);
/* APIC IDs of the enabled processors in the MADT; returns the count. */
unsigned int kit_madt_apic_ids(uint32_t *ids, unsigned int max);

/* ---- local APIC and APs ---- */
#define LAPIC_ID		0x020
#define LAPIC_VERSION		0x030
#define LAPIC_EOI		0x0b0
#define LAPIC_SVR		0x0f0
#define LAPIC_ESR		0x280
#define LAPIC_ICR_LO		0x300
#define LAPIC_ICR_HI		0x310

static inline uint32_t lapic_read(unsigned int reg)
{
	return mmio_read32(KIT_LAPIC_ADDR + reg);
}

static inline void lapic_write(unsigned int reg, uint32_t v)
{
	mmio_write32(KIT_LAPIC_ADDR + reg, v);
}

static inline uint32_t lapic_id(void)
{
	return lapic_read(LAPIC_ID) >> 24;
}

typedef void (*kit_ap_fn)(unsigned int idx, void *arg);

/*
 * Wakes the AP with this APIC ID by INIT-SIPI-SIPI and waits (timeout_us)
 * until it runs fn(idx, arg) on its own stack in 64-bit mode. APs are
 * started one at a time; fn runs with interrupts off, and the AP halts for
 * good when fn returns. Returns 0, or -1 if the AP never answered.
 */
int kit_ap_start(uint32_t apic_id, kit_ap_fn fn, unsigned int idx, void *arg,
		 uint64_t timeout_us);

/* Loads the kit's exception IDT on the calling CPU. */
void kit_load_idt(void);

#endif

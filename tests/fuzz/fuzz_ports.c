// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for the PC board's port-I/O devices (make fuzz-ports):
 * the UART, the CMOS RTC, the i8042, POST, debug-exit, pvpanic, the ACPI
 * PM registers and the PCI host bridge, as arch_devices_init() wires them
 * on a fake VM's port bus, driven through bus_access() like a vCPU's
 * KVM_EXIT_IO. The input is a sequence of accesses (width, port, value,
 * direction) and of bytes typed on the host console.
 *
 * A model of each register file, written from the data sheets rather than
 * from the code, follows every access and checks what the guest reads, the
 * UART's interrupt line and what it sends to the console, the exit the VM
 * was asked for (first request wins; nothing here ends the fuzzer: an
 * exit is only recorded in struct vm) and how much lkvm logged.
 *
 * The console's stdout is a pipe the harness drains and compares with the
 * bytes the guest transmitted; its stdin is a pipe the harness types into.
 * libFuzzer itself only prints on stderr.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/boot_profile.h"
#include "lkvm/bus.h"
#include "lkvm/console.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"
#include "../unit/fake_vm.h"
#include "fuzz_common.h"

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

/* Messages one input may cause, whatever its length: none repeat. */
#define MAX_LOG_LINES	4
#define UART_FIFO	1024
#define TX_MAX		65536
#define TX_DRAIN_AT	16384	/* well below the pipe's 64 KiB */

/* The port ranges arch_devices_init() registers. */
enum dev_id {
	DEV_SERIAL, DEV_I8042_DATA, DEV_I8042_CMD, DEV_RTC, DEV_POST,
	DEV_DEBUG_EXIT, DEV_BOOT_MARKER, DEV_PVPANIC, DEV_PM_EVT, DEV_PM_CNT, DEV_PM_TMR,
	DEV_PCI, NR_DEVS,
};

static const struct {
	uint16_t base, size;
} devs[NR_DEVS] = {
	[DEV_SERIAL]	 = { X86_PORT_COM1, 8 },
	[DEV_I8042_DATA] = { X86_PORT_I8042_DATA, 1 },
	[DEV_I8042_CMD]	 = { X86_PORT_I8042_CMD, 1 },
	[DEV_RTC]	 = { X86_PORT_RTC, 2 },
	[DEV_POST]	 = { X86_PORT_POST, 1 },
	[DEV_DEBUG_EXIT] = { X86_PORT_DEBUG_EXIT, 1 },
	[DEV_BOOT_MARKER] = { BOOT_MARKER_PORT, 1 },
	[DEV_PVPANIC]	 = { X86_PORT_PVPANIC, 1 },
	[DEV_PM_EVT]	 = { X86_PORT_PM1A_EVT, 4 },
	[DEV_PM_CNT]	 = { X86_PORT_PM1A_CNT, 2 },
	[DEV_PM_TMR]	 = { X86_PORT_PM_TMR, 4 },
	[DEV_PCI]	 = { X86_PORT_PCI_CONFIG, 8 },
};

/* What every register file should hold, from the data sheets. */
struct model {
	/* 16550A */
	uint8_t ier, lcr, mcr, scr, dll, dlm;
	bool fifo_on, thr_pending;
	uint8_t rx[UART_FIFO];
	unsigned int rx_head, rx_count;
	uint8_t tx[TX_MAX];
	size_t tx_len;
	/* MC146818: the registers that are plain storage, and the index */
	uint8_t rtc_index;
	uint8_t cmos[128];
	/* i8042 */
	uint8_t ctr, pending_cmd, out;
	bool out_full;
	uint8_t post;
	/* ACPI PM1a */
	uint16_t pm1_en, pm1_cnt;
	/* PCI mechanism #1 and the host bridge's configuration space */
	uint32_t cf8;
	uint8_t bridge[256];
	/* vm_request_exit(): the first request counts */
	bool exiting, by_guest;
	int exit_code;
};

static struct model m;
static int tx_pipe = -1, rx_pipe = -1;
static char log_buf[65536];

/* ---- the console's two ends ---- */

static void pipes_setup_once(void)
{
	int out[2], in[2];

	if (tx_pipe >= 0)
		return;
	CHECK(!pipe2(out, O_CLOEXEC) && !pipe2(in, O_CLOEXEC));
	CHECK(dup2(out[1], STDOUT_FILENO) == STDOUT_FILENO);
	CHECK(dup2(in[0], STDIN_FILENO) == STDIN_FILENO);
	close(out[1]);
	close(in[0]);
	CHECK(!fcntl(out[0], F_SETFL, O_NONBLOCK));
	tx_pipe = out[0];
	rx_pipe = in[1];
	/* The console's writer thread: one for the whole run. */
	CHECK(!console_init());
}

/* What the UART sent must be exactly what the guest wrote to THR. */
static void drain_tx(void)
{
	uint8_t buf[4096];
	size_t got = 0;
	ssize_t n;

	/* The writer thread has it all in the pipe, which has room for it. */
	CHECK(console_flush(5000));
	while ((n = read(tx_pipe, buf, sizeof(buf))) > 0) {
		CHECK(got + n <= m.tx_len);
		CHECK(!memcmp(buf, m.tx + got, n));
		got += n;
	}
	CHECK(got == m.tx_len);
	m.tx_len = 0;
}

/* ---- exits ---- */

static void expect_exit(int code, bool by_guest)
{
	if (m.exiting)
		return;
	m.exiting = true;
	m.exit_code = code;
	m.by_guest = by_guest;
}

static void check_exit(const struct vm *vm)
{
	CHECK(vm->exiting == m.exiting);
	if (!m.exiting)
		return;
	CHECK(vm->exit_code == m.exit_code);
	CHECK(vm->exit_chosen_by_guest == m.by_guest);
}

/* ---- 16550A ---- */

static void uart_rx_push(uint8_t c)
{
	if (m.rx_count == UART_FIFO)
		return;
	m.rx[(m.rx_head + m.rx_count) % UART_FIFO] = c;
	m.rx_count++;
}

static uint8_t uart_iir(void)
{
	uint8_t fifo = m.fifo_on ? 0xc0 : 0;

	if ((m.ier & 0x01) && m.rx_count)
		return 0x04 | fifo;
	if ((m.ier & 0x02) && m.thr_pending)
		return 0x02 | fifo;
	return 0x01 | fifo;
}

static uint8_t uart_msr(void)
{
	if (!(m.mcr & 0x10))
		return 0xb0;	/* DCD, DSR, CTS: a cable with a peer */
	return (m.mcr & 0x02 ? 0x10 : 0) | (m.mcr & 0x01 ? 0x20 : 0) |
	       (m.mcr & 0x04 ? 0x40 : 0) | (m.mcr & 0x08 ? 0x80 : 0);
}

static uint8_t uart_read(unsigned int reg)
{
	bool dlab = m.lcr & 0x80;
	uint8_t v;

	switch (reg) {
	case 0:
		if (dlab)
			return m.dll;
		if (!m.rx_count)
			return 0;
		v = m.rx[m.rx_head];
		m.rx_head = (m.rx_head + 1) % UART_FIFO;
		m.rx_count--;
		return v;
	case 1:
		return dlab ? m.dlm : m.ier;
	case 2:
		v = uart_iir();
		if ((v & 0x0f) == 0x02)
			m.thr_pending = false;	/* reading IIR acknowledges */
		return v;
	case 3:
		return m.lcr;
	case 4:
		return m.mcr;
	case 5:
		return 0x60 | (m.rx_count ? 0x01 : 0);	/* THRE, TEMT, DR */
	case 6:
		return uart_msr();
	default:
		return m.scr;
	}
}

static void uart_write(unsigned int reg, uint8_t v)
{
	bool dlab = m.lcr & 0x80;

	switch (reg) {
	case 0:
		if (dlab) {
			m.dll = v;
			break;
		}
		if (m.mcr & 0x10)
			uart_rx_push(v);
		else
			m.tx[m.tx_len++] = v;
		m.thr_pending = true;
		break;
	case 1:
		if (dlab) {
			m.dlm = v;
			break;
		}
		if (!(m.ier & 0x02) && (v & 0x02))
			m.thr_pending = true;
		m.ier = v & 0x0f;
		break;
	case 2:
		m.fifo_on = v & 0x01;
		if (v & 0x02)
			m.rx_head = m.rx_count = 0;
		break;
	case 3:
		m.lcr = v;
		break;
	case 4:
		m.mcr = v & 0x1f;
		break;
	case 5:
	case 6:
		break;
	default:
		m.scr = v;
	}
}

/* The line follows IIR's "interrupt pending", gated by OUT2. */
static void uart_check_irq(struct fake_vm *f)
{
	bool level = !(uart_iir() & 0x01) && (m.mcr & 0x08);

	CHECK(f->irq_level[X86_IRQ_COM1] == level);
}

/* ---- MC146818 ---- */

static bool rtc_is_clock(uint8_t index)
{
	return index == 0 || index == 2 || index == 4 ||
	       (index >= 6 && index <= 9) || index == 0x32;
}

static int rtc_value(uint8_t v, bool binary)
{
	if (binary)
		return v;
	if ((v & 0x0f) > 9 || (v >> 4) > 9)
		return -1;
	return (v >> 4) * 10 + (v & 0x0f);
}

/* A clock register holds a valid time in the mode register B selects. */
static void rtc_check_clock(uint8_t index, uint8_t v)
{
	bool binary = m.cmos[0x0b] & 0x04, h24 = m.cmos[0x0b] & 0x02;
	static const struct { uint8_t index, min, max; } ranges[] = {
		{ 0x00, 0, 59 }, { 0x02, 0, 59 }, { 0x06, 1, 7 },
		{ 0x07, 1, 31 }, { 0x08, 1, 12 }, { 0x09, 0, 99 },
		/* 19xx-29xx as written, 30 once 2999 has run out */
		{ 0x32, 19, 30 },
	};
	unsigned int i;
	int d;

	if (index == 0x04) {
		if (h24) {
			d = rtc_value(v, binary);
			CHECK(d >= 0 && d <= 23);
		} else {
			d = rtc_value(v & 0x7f, binary);
			CHECK(d >= 1 && d <= 12);
		}
		return;
	}
	for (i = 0; i < ARRAY_SIZE(ranges); i++) {
		if (ranges[i].index != index)
			continue;
		d = rtc_value(v, binary);
		CHECK(d >= ranges[i].min && d <= ranges[i].max);
		return;
	}
	CHECK(0);
}

static uint8_t rtc_read(unsigned int offset, uint8_t v)
{
	uint8_t i = m.rtc_index;

	if (offset == 0)
		return 0xff;	/* the index register is write-only */
	if (rtc_is_clock(i)) {
		rtc_check_clock(i, v);
		return v;
	}
	return m.cmos[i];
}

static void rtc_write(unsigned int offset, uint8_t v)
{
	uint8_t i = m.rtc_index;

	if (offset == 0)
		m.rtc_index = v & 0x7f;
	else if (i == 0x0a)
		m.cmos[i] = v & 0x7f;	/* UIP is read-only */
	else if (!rtc_is_clock(i) && i != 0x0c && i != 0x0d)
		m.cmos[i] = v;
}

/* ---- i8042 ---- */

static uint8_t i8042_status(void)
{
	return 0x14 | (m.out_full ? 0x01 : 0) | (m.pending_cmd ? 0x08 : 0);
}

static void i8042_output(uint8_t v)
{
	m.out = v;
	m.out_full = true;
}

static void i8042_command(uint8_t cmd)
{
	switch (cmd) {
	case 0x20:
		i8042_output(m.ctr);
		break;
	case 0x60: case 0xd1: case 0xd4:
		m.pending_cmd = cmd;
		break;
	case 0xaa:
		i8042_output(0x55);
		break;
	case 0xa9: case 0xab:
		i8042_output(0x00);
		break;
	case 0xd0:
		i8042_output(0x01);
		break;
	case 0xfe:
		expect_exit(EXIT_GUEST_REBOOT, false);
		break;
	}
}

static void i8042_data(uint8_t v)
{
	uint8_t cmd = m.pending_cmd;

	m.pending_cmd = 0;
	if (cmd == 0x60)
		m.ctr = v;
	else if (cmd == 0xd1 && !(v & 0x01))
		expect_exit(EXIT_GUEST_REBOOT, false);
}

/* ---- ACPI PM1a: byte lanes, as any register file ---- */

static void pm_merge(uint16_t *reg, unsigned int first, unsigned int len,
		     const uint8_t *data, unsigned int at)
{
	unsigned int i;

	for (i = 0; i < len; i++) {
		unsigned int b = first + i - at;

		if (b < 2)
			*reg = (*reg & ~(0xff << 8 * b)) | data[i] << 8 * b;
	}
}

static void pm_cnt_write(unsigned int offset, unsigned int len,
			 const uint8_t *data)
{
	uint16_t val = m.pm1_cnt;

	pm_merge(&val, offset, len, data, 0);
	m.pm1_cnt = val & ~0x2000;	/* SLP_EN reads as zero */
	if ((val & 0x2000) && ((val >> 10) & 7) == X86_SLP_TYP_S5)
		expect_exit(EXIT_POWEROFF, false);
}

/* ---- the access, and what the model says of it ---- */

static int dev_of(uint16_t port, unsigned int len, unsigned int *offset)
{
	unsigned int i;

	for (i = 0; i < NR_DEVS; i++) {
		if (port >= devs[i].base &&
		    port + len <= (unsigned int)devs[i].base + devs[i].size) {
			*offset = port - devs[i].base;
			return i;
		}
	}
	return -1;
}

static void expect_bytes(const uint8_t *got, const uint8_t *want,
			 unsigned int len)
{
	CHECK(!memcmp(got, want, len));
}

/* A one-byte register read at any width: the upper bytes read as zero. */
static void expect_byte(const uint8_t *got, uint8_t want, unsigned int len)
{
	uint8_t w[4] = { want };

	expect_bytes(got, w, len);
}

static void pci_read(unsigned int offset, unsigned int len, uint8_t *want)
{
	unsigned int slot = (m.cf8 >> 11) & 0x1f, reg;

	memset(want, 0xff, len);
	if (offset < 4) {
		if (offset == 0 && len == 4)
			memcpy(want, &m.cf8, 4);
		return;
	}
	reg = (m.cf8 & 0xfc) + offset - 4;
	if (!(m.cf8 & 0x80000000u) || (m.cf8 & 0x00ff0700u) || slot ||
	    reg + len > 256)
		return;
	memcpy(want, m.bridge + reg, len);
}

static void pci_write(unsigned int offset, unsigned int len,
		      const uint8_t *data)
{
	unsigned int slot = (m.cf8 >> 11) & 0x1f, reg, i;

	if (offset < 4) {
		if (offset == 0 && len == 4)
			memcpy(&m.cf8, data, 4);
		return;
	}
	reg = (m.cf8 & 0xfc) + offset - 4;
	if (!(m.cf8 & 0x80000000u) || (m.cf8 & 0x00ff0700u) || slot ||
	    reg + len > 256)
		return;
	/* The bridge's only writable bits: I/O, memory, bus master. */
	for (i = 0; i < len; i++)
		if (reg + i == 4)
			m.bridge[4] = (m.bridge[4] & ~0x07) | (data[i] & 0x07);
}

static void model_read(int dev, unsigned int offset, unsigned int len,
		       const uint8_t *got)
{
	uint8_t want[4];
	uint16_t evt[2] = { 0, m.pm1_en };	/* no event sets a status bit */
	uint16_t cnt = m.pm1_cnt | 0x0001;	/* SCI_EN: always ACPI mode */

	switch (dev) {
	case DEV_SERIAL:
		expect_byte(got, uart_read(offset), len);
		break;
	case DEV_I8042_DATA:
		expect_byte(got, m.out, len);
		m.out_full = false;
		break;
	case DEV_I8042_CMD:
		expect_byte(got, i8042_status(), len);
		break;
	case DEV_RTC:
		expect_byte(got, rtc_read(offset, got[0]), len);
		if (offset == 1 && m.rtc_index == 0x0c)
			m.cmos[0x0c] = 0;
		break;
	case DEV_POST:
		expect_byte(got, m.post, len);
		break;
	case DEV_DEBUG_EXIT:
	case DEV_BOOT_MARKER:
		memset(want, 0xff, len);	/* write-only */
		expect_bytes(got, want, len);
		break;
	case DEV_PVPANIC:
		expect_byte(got, 0x03, len);	/* PANICKED, CRASH_LOADED */
		break;
	case DEV_PM_EVT:
		expect_bytes(got, (const uint8_t *)evt + offset, len);
		break;
	case DEV_PM_CNT:
		expect_bytes(got, (const uint8_t *)&cnt + offset, len);
		break;
	case DEV_PM_TMR:
		/* 24 bits: TMR_VAL_EXT is clear in the FADT */
		if (offset + len == 4)
			CHECK(got[len - 1] == 0);
		break;
	case DEV_PCI:
		pci_read(offset, len, want);
		expect_bytes(got, want, len);
		break;
	}
}

static void model_write(int dev, unsigned int offset, unsigned int len,
			const uint8_t *data)
{
	switch (dev) {
	case DEV_SERIAL:
		uart_write(offset, data[0]);
		break;
	case DEV_I8042_DATA:
		i8042_data(data[0]);
		break;
	case DEV_I8042_CMD:
		i8042_command(data[0]);
		break;
	case DEV_RTC:
		rtc_write(offset, data[0]);
		break;
	case DEV_POST:
		m.post = data[0];
		break;
	case DEV_DEBUG_EXIT:
		expect_exit(data[0], true);
		break;
	case DEV_BOOT_MARKER:
		break;		/* the boot profile notes it; nothing to see */
	case DEV_PVPANIC:
		if (data[0] & 0x03)
			expect_exit(EXIT_GUEST_PANIC, false);
		break;
	case DEV_PM_EVT:
		/* PM1_STS is write-1-to-clear and nothing sets it */
		pm_merge(&m.pm1_en, offset, len, data, 2);
		break;
	case DEV_PM_CNT:
		pm_cnt_write(offset, len, data);
		break;
	case DEV_PM_TMR:
		break;
	case DEV_PCI:
		pci_write(offset, len, data);
		break;
	}
}

/* Mostly a register of a device, now and then one past it or any port. */
static uint16_t pick_port(struct input *in)
{
	uint8_t b = take8(in);
	unsigned int d;

	if (b >= 0xf8)
		return take8(in) | take8(in) << 8;
	d = b % NR_DEVS;
	return devs[d].base + (b / NR_DEVS) % (devs[d].size + 1);
}

static void do_access(struct fake_vm *f, struct input *in, uint8_t op)
{
	static const unsigned int widths[] = { 1, 2, 4, 1 };
	unsigned int len = widths[op & 3], offset = 0, i;
	bool is_write = op & 4;
	uint16_t port = pick_port(in);
	uint8_t data[4] = { 0 };
	int dev = dev_of(port, len, &offset);
	bool claimed;

	if (is_write)
		for (i = 0; i < len; i++)
			data[i] = take8(in);
	else
		memset(data, 0x5a, sizeof(data));
	claimed = bus_access(&f->vm.pio, port, data, len, is_write);
	CHECK(claimed == (dev >= 0));
	if (dev < 0) {
		for (i = 0; !is_write && i < len; i++)
			CHECK(data[i] == 0xff);
		return;
	}
	if (is_write)
		model_write(dev, offset, len, data);
	else
		model_read(dev, offset, len, data);
	if (dev == DEV_SERIAL)
		uart_check_irq(f);
	check_exit(&f->vm);
	if (m.tx_len >= TX_DRAIN_AT)
		drain_tx();
}

/* Bytes typed on the host: through the console's input path to the UART. */
static void do_typing(struct fake_vm *f, struct input *in)
{
	uint8_t buf[64];
	unsigned int n = 1 + take8(in) % sizeof(buf), i;

	for (i = 0; i < n; i++)
		buf[i] = take8(in);
	CHECK(write(rx_pipe, buf, n) == (ssize_t)n);
	CHECK(console_read_input() == 0);
	for (i = 0; i < n; i++)
		uart_rx_push(buf[i]);
	uart_check_irq(f);
}

/* ---- one VM per input ---- */

static void model_init(struct fake_vm *f)
{
	uint8_t v, i;

	memset(&m, 0, sizeof(m));
	m.mcr = 0x08;		/* OUT2: the firmware's job, done for the guest */
	m.ctr = 0x30;
	/* The NVRAM holds the memory sizes: take them as they are. */
	for (i = 0; i < 128; i++) {
		bus_access(&f->vm.pio, X86_PORT_RTC, &i, 1, true);
		bus_access(&f->vm.pio, X86_PORT_RTC + 1, &m.cmos[i], 1, false);
	}
	CHECK(m.cmos[0x0a] == 0x26 && m.cmos[0x0b] == 0x02 &&
	      m.cmos[0x0c] == 0 && m.cmos[0x0d] == 0x80);
	v = 0;
	bus_access(&f->vm.pio, X86_PORT_RTC, &v, 1, true);
	m.rtc_index = 0;
	/* The host bridge's configuration space, checked for its identity. */
	m.cf8 = 0x80000000u;
	bus_access(&f->vm.pio, X86_PORT_PCI_CONFIG, &m.cf8, 4, true);
	for (i = 0; i < 64; i++) {
		m.cf8 = 0x80000000u | i * 4;
		bus_access(&f->vm.pio, X86_PORT_PCI_CONFIG, &m.cf8, 4, true);
		bus_access(&f->vm.pio, X86_PORT_PCI_CONFIG + 4,
			   m.bridge + i * 4, 4, false);
	}
	CHECK(!memcmp(m.bridge, "\x36\x1b\x08\x00", 4));
	CHECK(m.bridge[0x0b] == 0x06 && m.bridge[0x0a] == 0x00);
	m.cf8 = 0;
	bus_access(&f->vm.pio, X86_PORT_PCI_CONFIG, &m.cf8, 4, true);
}

static const uint64_t mem_mibs[] = { 16, 256, 3072, 4096, 8192, 1 << 20 };

static int vm_setup(struct fake_vm *f, uint8_t mem_sel)
{
	uint64_t ram = mem_mibs[mem_sel % ARRAY_SIZE(mem_mibs)] * MiB;
	struct arch_vm *arch;

	if (fake_vm_init(f, 0, 1))
		return -1;
	arch = vm_zalloc(&f->vm, sizeof(*arch));
	CHECK(arch);
	arch->ram_below_4g = MIN(ram, X86_MMIO_HOLE_START);
	arch->ram_above_4g = ram - arch->ram_below_4g;
	f->vm.arch = arch;
	return arch_devices_init(&f->vm);
}

static unsigned int count_lines(const char *buf, size_t len)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < len; i++)
		n += buf[i] == '\n';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .p = data, .n = size };
	static struct fake_vm f;
	FILE *saved_stderr = stderr, *log;

	pipes_setup_once();
	/* lkvm's messages (fprintf(stderr)) are counted, not printed. */
	log = fmemopen(log_buf, sizeof(log_buf), "w");
	CHECK(log);
	stderr = log;
	CHECK(!vm_setup(&f, take8(&in)));
	model_init(&f);
	while (in.n) {
		uint8_t op = take8(&in);

		if (op >= 0xf0)
			do_typing(&f, &in);
		else
			do_access(&f, &in, op);
	}
	drain_tx();
	fake_vm_destroy(&f);
	stderr = saved_stderr;
	fflush(log);
	CHECK(count_lines(log_buf, ftell(log)) <= MAX_LOG_LINES);
	fclose(log);
	return 0;
}

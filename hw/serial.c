// SPDX-License-Identifier: GPL-2.0
/*
 * 16550A UART. Transmit goes to the host console's output queue: the
 * transmitter is empty while the queue has room and busy (THRE clear, no
 * THR interrupt) while a stalled reader keeps it full, so that a guest's
 * driver waits as it would on a slow line; receive comes from the host
 * console through a small FIFO. The interrupt output follows the 16550's rules (priority
 * in IIR, THRE cleared by reading IIR or writing THR, gated by MCR.OUT2)
 * and drives an edge-triggered ISA line of the in-kernel irqchip.
 */
#include <string.h>

#include "lkvm/boot_profile.h"
#include "lkvm/bus.h"
#include "lkvm/console.h"
#include "lkvm/hw.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define UART_RX_FIFO	1024

/* Register offsets (DLAB=0 unless noted) and bits, from the 16550 data sheet. */
enum {
	UART_RBR_THR = 0, UART_IER = 1, UART_IIR_FCR = 2, UART_LCR = 3,
	UART_MCR = 4, UART_LSR = 5, UART_MSR = 6, UART_SCR = 7,
};
#define IER_RDI		0x01
#define IER_THRI	0x02
#define IIR_NO_INT	0x01
#define IIR_THRI	0x02
#define IIR_RDI		0x04
#define IIR_FIFO_ON	0xc0
#define FCR_FIFO_EN	0x01
#define FCR_CLEAR_RX	0x02
#define LCR_DLAB	0x80
#define MCR_DTR		0x01
#define MCR_RTS		0x02
#define MCR_OUT1	0x04
#define MCR_OUT2	0x08
#define MCR_LOOP	0x10
#define LSR_DR		0x01
#define LSR_BI		0x10
#define LSR_THRE	0x20
#define LSR_TEMT	0x40
#define MSR_CTS		0x10
#define MSR_DSR		0x20
#define MSR_RI		0x40
#define MSR_DCD		0x80

/*
 * Register state is touched by vCPU threads (port I/O), the main thread
 * (console input) and the console's writer thread (room again); `lock`
 * guards all of it, and is taken before the console's own lock.
 */
struct serial {
	struct bus_dev dev;
	struct vm *vm;
	unsigned int irq;
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thr_ipending;	/* THR-empty interrupt not yet acknowledged */
	bool thr_busy;		/* the console's output queue is full */
	int irq_level;
	uint8_t rx[UART_RX_FIFO];
	bool rx_break[UART_RX_FIFO];	/* this byte is a BREAK's 0 */
	unsigned int rx_head, rx_count;
};

static uint8_t serial_iir(struct serial *s)
{
	uint8_t fifo = (s->fcr & FCR_FIFO_EN) ? IIR_FIFO_ON : 0;

	if ((s->ier & IER_RDI) && s->rx_count)
		return IIR_RDI | fifo;
	if ((s->ier & IER_THRI) && s->thr_ipending)
		return IIR_THRI | fifo;
	return IIR_NO_INT | fifo;
}

/* Caller holds s->lock. */
static void serial_update_irq(struct serial *s)
{
	int level = !(serial_iir(s) & IIR_NO_INT) && (s->mcr & MCR_OUT2);

	if (level != s->irq_level) {
		s->irq_level = level;
		vm_irq_line(s->vm, s->irq, level);
	}
}

static void serial_rx_push(struct serial *s, uint8_t c, bool is_break)
{
	unsigned int tail = (s->rx_head + s->rx_count) % UART_RX_FIFO;

	if (s->rx_count == UART_RX_FIFO)
		return;
	s->rx[tail] = c;
	s->rx_break[tail] = is_break;
	s->rx_count++;
}

static uint8_t serial_rx_pop(struct serial *s)
{
	uint8_t c;

	if (!s->rx_count)
		return 0;
	c = s->rx[s->rx_head];
	s->rx_head = (s->rx_head + 1) % UART_RX_FIFO;
	s->rx_count--;
	return c;
}

static uint8_t serial_msr(struct serial *s)
{
	if (!(s->mcr & MCR_LOOP))
		return MSR_DCD | MSR_DSR | MSR_CTS;
	/* Loopback wires the modem outputs back to the inputs. */
	return ((s->mcr & MCR_RTS) ? MSR_CTS : 0) |
	       ((s->mcr & MCR_DTR) ? MSR_DSR : 0) |
	       ((s->mcr & MCR_OUT1) ? MSR_RI : 0) |
	       ((s->mcr & MCR_OUT2) ? MSR_DCD : 0);
}

static uint8_t serial_read_reg(struct serial *s, unsigned int reg)
{
	uint8_t val;

	switch (reg) {
	case UART_RBR_THR:
		if (s->lcr & LCR_DLAB)
			return s->dll;
		return serial_rx_pop(s);
	case UART_IER:
		return (s->lcr & LCR_DLAB) ? s->dlm : s->ier;
	case UART_IIR_FCR:
		val = serial_iir(s);
		if ((val & 0x0f) == IIR_THRI)
			s->thr_ipending = false;
		return val;
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		/* as a 16550's FIFO does: BI goes with the byte on top */
		return (s->thr_busy ? 0 : LSR_THRE | LSR_TEMT) |
		       (s->rx_count ? LSR_DR : 0) |
		       (s->rx_count && s->rx_break[s->rx_head] ? LSR_BI : 0);
	case UART_MSR:
		return serial_msr(s);
	default:
		return s->scr;
	}
}

/* A byte written while busy is lost, as on an overrun line. */
static void serial_transmit(struct serial *s, uint8_t c)
{
	bool full = false;

	if (s->mcr & MCR_LOOP) {
		serial_rx_push(s, c, false);
	} else {
		console_write(&c, 1, &full);
		boot_profile_console(s->vm, c);
	}
	s->thr_busy = full;
	s->thr_ipending = !full;
}

/* From the console's writer thread: the queue has room again. */
static void serial_console_room(void *opaque)
{
	struct serial *s = opaque;

	pthread_mutex_lock(&s->lock);
	if (s->thr_busy) {
		s->thr_busy = false;
		s->thr_ipending = true;
		serial_update_irq(s);
	}
	pthread_mutex_unlock(&s->lock);
}

static void serial_write_reg(struct serial *s, unsigned int reg, uint8_t val)
{
	switch (reg) {
	case UART_RBR_THR:
		if (s->lcr & LCR_DLAB)
			s->dll = val;
		else
			serial_transmit(s, val);
		break;
	case UART_IER:
		if (s->lcr & LCR_DLAB) {
			s->dlm = val;
			break;
		}
		/* Enabling THRI with an empty THR raises it at once. */
		if (!(s->ier & IER_THRI) && (val & IER_THRI) && !s->thr_busy)
			s->thr_ipending = true;
		s->ier = val & 0x0f;
		break;
	case UART_IIR_FCR:
		s->fcr = val & (FCR_FIFO_EN | 0xc0);
		if (val & FCR_CLEAR_RX)
			s->rx_head = s->rx_count = 0;
		break;
	case UART_LCR:
		s->lcr = val;
		break;
	case UART_MCR:
		s->mcr = val & 0x1f;
		break;
	case UART_LSR:
	case UART_MSR:
		break;	/* read-only */
	default:
		s->scr = val;
	}
}

static void serial_read(struct bus_dev *dev, uint64_t offset, void *data,
			unsigned int len)
{
	struct serial *s = dev->priv;

	memset(data, 0, len);
	pthread_mutex_lock(&s->lock);
	*(uint8_t *)data = serial_read_reg(s, offset);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

static void serial_write(struct bus_dev *dev, uint64_t offset,
			 const void *data, unsigned int len)
{
	struct serial *s = dev->priv;

	pthread_mutex_lock(&s->lock);
	serial_write_reg(s, offset, *(const uint8_t *)data);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

static size_t serial_console_input(void *opaque, const uint8_t *buf,
				   size_t len)
{
	struct serial *s = opaque;
	size_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < len && s->rx_count < UART_RX_FIFO; i++)
		serial_rx_push(s, buf[i], false);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return i;
}

/* A BREAK arrives as a 0 byte with LSR.BI, taking a place in the FIFO. */
static void serial_console_break(void *opaque)
{
	struct serial *s = opaque;

	pthread_mutex_lock(&s->lock);
	serial_rx_push(s, 0, true);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

static const struct bus_ops serial_ops = {
	.read = serial_read,
	.write = serial_write,
};

int serial_init(struct vm *vm, struct bus *bus, uint64_t base,
		unsigned int irq)
{
	struct serial *s = vm_zalloc(vm, sizeof(*s));

	if (!s)
		return -1;
	s->vm = vm;
	s->irq = irq;
	s->dev = (struct bus_dev) { .name = "serial", .ops = &serial_ops, .priv = s };
	s->mcr = MCR_OUT2;
	pthread_mutex_init(&s->lock, NULL);
	console_set_sink(serial_console_input, serial_console_break, s);
	if (console_add_room_notify(serial_console_room, s))
		return -1;
	return bus_register(bus, base, 8, &s->dev);
}

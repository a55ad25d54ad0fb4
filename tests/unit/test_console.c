// SPDX-License-Identifier: GPL-2.0
/*
 * Guest console output when the reader stops (core/console.c, hw/serial.c):
 * the UART's transmitter turns busy instead of its vCPU blocking, it comes
 * back (THRE, THR interrupt) when the reader drains, nothing is lost in
 * between for a driver that waits for THRE, a non-blocking stdout does not
 * make the writer spin, and a flush gives up on a reader that stopped.
 *
 * The console is process-wide (stdout, one writer thread), so each test
 * runs in a child whose stdout is a pipe the child itself reads; the child
 * reports a failure as its exit status.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/bus.h"
#include "lkvm/console.h"
#include "lkvm/hw.h"
#include "lkvm/util.h"
#include "fake_vm.h"

#define COM1		0x3f8
#define COM1_IRQ	4
#define THR		(COM1 + 0)
#define IER		(COM1 + 1)
#define IIR		(COM1 + 2)
#define LSR		(COM1 + 5)
#define LSR_THRE	0x20
#define LSR_DR		0x01
#define LSR_BI		0x10
#define IER_RDI		0x01
#define IIR_RDI		0x04
#define IER_THRI	0x02
#define IIR_THRI	0x02
/* Far beyond the queue and a pipe's buffer together. */
#define PLENTY		(1024 * 1024)

/* In the child: a failed check ends it with its line number. */
#define CHILD_CHECK(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			_exit(__LINE__ % 250 + 1);			\
		}							\
	} while (0)

struct child {
	int rd;			/* what the console wrote to stdout */
	struct fake_vm vm;
};

static uint8_t port_read(struct child *c, uint16_t port)
{
	uint8_t v = 0;

	bus_access(&c->vm.vm.pio, port, &v, 1, false);
	return v;
}

static void port_write(struct child *c, uint16_t port, uint8_t v)
{
	bus_access(&c->vm.vm.pio, port, &v, 1, true);
}

/* stdout becomes a pipe, non-blocking at the writer's end if asked. */
static void child_setup(struct child *c, bool nonblocking_out)
{
	int p[2];

	CHILD_CHECK(pipe(p) == 0);
	CHILD_CHECK(dup2(p[1], STDOUT_FILENO) == STDOUT_FILENO);
	close(p[1]);
	if (nonblocking_out)
		CHILD_CHECK(fcntl(STDOUT_FILENO, F_SETFL, O_NONBLOCK) == 0);
	c->rd = p[0];
	CHILD_CHECK(fake_vm_init(&c->vm, 0, 1) == 0);
	CHILD_CHECK(serial_init(&c->vm.vm, &c->vm.vm.pio, COM1, COM1_IRQ) == 0);
	CHILD_CHECK(console_init() == 0);
}

static void run_child(void (*body)(struct child *c), bool nonblocking_out)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct child c;

		alarm(20);	/* a hang is a failure, not a stuck suite */
		child_setup(&c, nonblocking_out);
		body(&c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Sends bytes as a polite driver would until the transmitter is busy. */
static size_t fill_until_busy(struct child *c, uint8_t *next)
{
	size_t sent = 0;

	while (sent < PLENTY && (port_read(c, LSR) & LSR_THRE)) {
		port_write(c, THR, (*next)++);
		sent++;
		if (sent % 4096 == 0)
			sleep_ms(1);	/* let the writer fill the pipe */
	}
	return sent;
}

/*
 * Fills the queue and, behind it, the pipe: the writer may lag behind a
 * fast sender, so the transmitter turning busy only says the queue is
 * full. Only when it stays busy while the writer has had time to move
 * bytes on is the pipe full too.
 */
static size_t fill_until_stuck(struct child *c, uint8_t *next)
{
	size_t sent = 0;

	do {
		sent += fill_until_busy(c, next);
		sleep_ms(200);
	} while (sent < PLENTY && (port_read(c, LSR) & LSR_THRE));
	return sent;
}

/* Reads the pipe dry, checking the byte sequence continues unbroken. */
static size_t drain(struct child *c, uint8_t *expect)
{
	uint8_t buf[4096];
	size_t total = 0;
	ssize_t n;

	CHILD_CHECK(fcntl(c->rd, F_SETFL, O_NONBLOCK) == 0);
	while ((n = read(c->rd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			CHILD_CHECK(buf[i] == (*expect)++);
		total += n;
	}
	return total;
}

static void stalled_reader_body(struct child *c)
{
	uint8_t next = 0, expect = 0;
	size_t sent, got = 0;
	uint64_t written, dropped;
	size_t queued;
	int i;

	port_write(c, IER, IER_THRI);
	sent = fill_until_stuck(c, &next);
	/* Busy only once both the queue and the pipe are full. */
	CHILD_CHECK(sent >= 64 * 1024 && sent < PLENTY);
	CHILD_CHECK(!(port_read(c, LSR) & LSR_THRE));
	CHILD_CHECK((port_read(c, IIR) & 0x0f) != IIR_THRI);
	CHILD_CHECK(c->vm.irq_level[COM1_IRQ] == 0);

	/* The reader comes back: the transmitter frees, with its interrupt. */
	for (i = 0; i < 2000 && !(port_read(c, LSR) & LSR_THRE); i++) {
		got += drain(c, &expect);
		sleep_ms(1);
	}
	CHILD_CHECK(port_read(c, LSR) & LSR_THRE);
	CHILD_CHECK(c->vm.irq_level[COM1_IRQ] == 1);
	CHILD_CHECK((port_read(c, IIR) & 0x0f) == IIR_THRI);

	/* Everything the polite driver sent arrives, in order. */
	for (i = 0; i < 2000 && got < sent; i++) {
		got += drain(c, &expect);
		sleep_ms(1);
	}
	CHILD_CHECK(got == sent);
	console_output_stats(&written, &dropped, &queued);
	CHILD_CHECK(written == sent && dropped == 0 && queued == 0);
}

static void test_stalled_reader_makes_the_transmitter_busy(void **state)
{
	run_child(stalled_reader_body, false);
}

static void overrun_body(struct child *c)
{
	uint8_t next = 0, buf[4096];
	uint64_t written, dropped;
	size_t sent, queued;
	int i;

	sent = fill_until_stuck(c, &next);
	/* A driver that ignores THRE loses what it sends, counted. */
	for (i = 0; i < 100; i++)
		port_write(c, THR, 'x');
	console_output_stats(&written, &dropped, &queued);
	CHILD_CHECK(dropped == 100);
	CHILD_CHECK(written + queued == sent);
	/* No reader at all: the flush gives up after its stall time. */
	double t0 = now_ms();

	CHILD_CHECK(!console_flush(100));
	CHILD_CHECK(now_ms() - t0 >= 90 && now_ms() - t0 < 1500);
	/* The writer, stuck in write(), still ends when asked. */
	t0 = now_ms();
	console_stop();
	CHILD_CHECK(now_ms() - t0 < 1000);
	CHILD_CHECK(read(c->rd, buf, sizeof(buf)) > 0);
}

static void test_overrun_is_counted_and_flush_gives_up(void **state)
{
	run_child(overrun_body, false);
}

static void nonblocking_body(struct child *c)
{
	uint8_t next = 0, expect = 0;
	size_t sent, got = 0;
	double cpu0;
	int i;

	sent = fill_until_stuck(c, &next);
	/* The writer meets EAGAIN now: it must wait, not spin. */
	cpu0 = cpu_ms();
	sleep_ms(300);
	CHILD_CHECK(cpu_ms() - cpu0 < 100);
	for (i = 0; i < 3000 && got < sent; i++) {
		got += drain(c, &expect);
		sleep_ms(1);
	}
	CHILD_CHECK(got == sent);
}

static void test_nonblocking_stdout_does_not_spin(void **state)
{
	run_child(nonblocking_body, true);
}

static void closed_reader_body(struct child *c)
{
	uint64_t written, dropped;
	size_t queued;
	int i;

	close(c->rd);
	/* The writer meets EPIPE on the first byte ... */
	port_write(c, THR, 'y');
	CHILD_CHECK(console_flush(1000));
	/* ... then everything is discarded and the transmitter never busy. */
	for (i = 0; i < 200 * 1024; i++) {
		CHILD_CHECK(port_read(c, LSR) & LSR_THRE);
		port_write(c, THR, 'y');
	}
	CHILD_CHECK(console_flush(100));
	console_output_stats(&written, &dropped, &queued);
	CHILD_CHECK(written + dropped == 200 * 1024 + 1 && queued == 0);
	CHILD_CHECK(dropped > 0);
}

static void test_closed_reader_discards(void **state)
{
	run_child(closed_reader_body, false);
}

/*
 * lkvm debug --sysrq: a BREAK is a 0 byte that LSR.BI marks while it is
 * on top of the FIFO, with a receive interrupt, and the key comes next
 * without BI, as Linux's 8250 driver needs to see them.
 */
static void sysrq_body(struct child *c)
{
	port_write(c, IER, IER_RDI);
	port_write(c, COM1 + 4, 0x08);		/* MCR.OUT2: interrupts out */
	CHILD_CHECK(console_send_sysrq('t') == 0);
	CHILD_CHECK((port_read(c, IIR) & 0x0f) == IIR_RDI);
	CHILD_CHECK((port_read(c, LSR) & (LSR_DR | LSR_BI)) ==
		    (LSR_DR | LSR_BI));
	CHILD_CHECK(port_read(c, THR) == 0);
	CHILD_CHECK((port_read(c, LSR) & (LSR_DR | LSR_BI)) == LSR_DR);
	CHILD_CHECK(port_read(c, THR) == 't');
	CHILD_CHECK(!(port_read(c, LSR) & (LSR_DR | LSR_BI)));
	CHILD_CHECK(port_read(c, IIR) & 0x01);	/* nothing pending */
}

static void test_sysrq_is_a_break_then_the_key(void **state)
{
	run_child(sysrq_body, false);
}

static unsigned int room_calls;

static void count_room(void *opaque)
{
	__atomic_fetch_add(&room_calls, 1, __ATOMIC_RELAXED);
}

/*
 * virtio-console's writes (console_write_whole): all or nothing, nothing
 * dropped, and a listener hears of room again once the reader drains; a
 * removed listener is not called.
 */
static void whole_writes_body(struct child *c)
{
	static uint8_t chunk[4096];
	struct iovec iov[2] = { { chunk, 1000 }, { chunk + 1000, 3096 } };
	unsigned int i, queued = 0;
	size_t got = 0;
	uint64_t written, dropped;
	size_t left;

	CHILD_CHECK(console_add_room_notify(count_room, NULL) == 0);
	for (i = 0; i < sizeof(chunk); i++)
		chunk[i] = i % 251;
	/* the pipe and the queue fill; then a whole write is refused */
	for (i = 0; i < 1000 && console_write_whole(iov, 2); i++) {
		queued++;
		sleep_ms(1);
	}
	CHILD_CHECK(i < 1000 && queued >= 16);
	console_output_stats(&written, &dropped, &left);
	CHILD_CHECK(dropped == 0 && left > console_queue_size() - 4096);
	CHILD_CHECK(room_calls == 0);
	/* the reader comes back: room again, and every byte in order */
	for (i = 0; i < 2000 && !__atomic_load_n(&room_calls, __ATOMIC_RELAXED);
	     i++) {
		uint8_t buf[4096];
		ssize_t n;

		CHILD_CHECK(fcntl(c->rd, F_SETFL, O_NONBLOCK) == 0);
		while ((n = read(c->rd, buf, sizeof(buf))) > 0) {
			for (ssize_t k = 0; k < n; k++, got++)
				CHILD_CHECK(buf[k] == (got % 4096) % 251);
		}
		sleep_ms(1);
	}
	CHILD_CHECK(room_calls >= 1);
	CHILD_CHECK(console_write_whole(iov, 2));
	console_del_room_notify(count_room, NULL);
	/* full and drained once more: the removed listener hears nothing */
	room_calls = 0;
	for (i = 0; i < 1000 && console_write_whole(iov, 2); i++)
		sleep_ms(1);
	CHILD_CHECK(i < 1000);
	CHILD_CHECK(console_flush(50) == false);
	for (i = 0; i < 2000; i++) {
		uint8_t buf[4096];

		while (read(c->rd, buf, sizeof(buf)) > 0)
			;
		if (console_flush(10))
			break;
	}
	CHILD_CHECK(room_calls == 0);
}

static void test_whole_writes_and_room_listeners(void **state)
{
	run_child(whole_writes_body, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stalled_reader_makes_the_transmitter_busy),
		cmocka_unit_test(test_overrun_is_counted_and_flush_gives_up),
		cmocka_unit_test(test_nonblocking_stdout_does_not_spin),
		cmocka_unit_test(test_closed_reader_discards),
		cmocka_unit_test(test_sysrq_is_a_break_then_the_key),
		cmocka_unit_test(test_whole_writes_and_room_listeners),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

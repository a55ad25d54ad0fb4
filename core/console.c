// SPDX-License-Identifier: GPL-2.0
/*
 * Guest console on the host terminal. The terminal state is saved once and
 * restored by console_restore(), which runs from atexit, from the fatal
 * signal handler and from the normal shutdown path, so that no exit leaves
 * the user's terminal in raw mode.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "lkvm/console.h"
#include "lkvm/util.h"

#define ESCAPE_CHAR	0x01	/* Ctrl-a */

/*
 * Owned by the main thread (init, input, restore); console_write() is called
 * from vCPU threads but only uses the constant out_fd.
 */
static struct {
	int in_fd;
	int out_fd;
	bool is_tty;
	bool raw;
	bool escape;
	struct termios saved;
	console_sink_fn sink;
	void *opaque;
} con = { .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO };

void console_restore(void)
{
	if (con.raw) {
		tcsetattr(con.in_fd, TCSAFLUSH, &con.saved);
		con.raw = false;
	}
}

static void console_fatal_signal(int sig)
{
	console_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void console_install_fatal_handlers(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fatal); i++)
		signal(fatal[i], console_fatal_signal);
}

int console_init(void)
{
	struct termios raw;

	/* A reader that went away must not kill the VMM with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	con.is_tty = isatty(con.in_fd);
	if (!con.is_tty)
		return 0;
	if (tcgetattr(con.in_fd, &con.saved) < 0) {
		con.is_tty = false;
		return 0;
	}
	raw = con.saved;
	/* Output too: the guest sends its own \r\n, lkvm's messages end in one. */
	cfmakeraw(&raw);
	if (tcsetattr(con.in_fd, TCSAFLUSH, &raw) < 0) {
		pr_warn("cannot put the terminal in raw mode: %s",
			strerror(errno));
		return 0;
	}
	con.raw = true;
	atexit(console_restore);
	console_install_fatal_handlers();
	return 0;
}

bool console_is_tty(void)
{
	return con.is_tty;
}

void console_write(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(con.out_fd, p, len);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;	/* output closed: the guest keeps running */
		p += n;
		len -= n;
	}
}

void console_set_sink(console_sink_fn sink, void *opaque)
{
	con.sink = sink;
	con.opaque = opaque;
}

int console_input_fd(void)
{
	return con.in_fd;
}

static void console_feed(const uint8_t *buf, size_t len)
{
	if (con.sink && len)
		con.sink(con.opaque, buf, len);
}

/* Strip the escape sequences out of terminal input. */
static int console_filter_tty(uint8_t *buf, size_t len)
{
	size_t i, out = 0;

	for (i = 0; i < len; i++) {
		uint8_t c = buf[i];

		if (con.escape) {
			con.escape = false;
			if (c == 'x' || c == 'X')
				return 1;
			if (c != ESCAPE_CHAR)
				buf[out++] = ESCAPE_CHAR;
		} else if (c == ESCAPE_CHAR) {
			con.escape = true;
			continue;
		}
		buf[out++] = c;
	}
	console_feed(buf, out);
	return 0;
}

int console_read_input(void)
{
	uint8_t buf[256];
	ssize_t n;

	n = read(con.in_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	if (con.raw)
		return console_filter_tty(buf, n);
	console_feed(buf, n);
	return 0;
}

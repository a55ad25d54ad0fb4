/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host side of the guest console: stdout for output; stdin for input,
 * in raw mode when it is a terminal (restored on every exit path) with
 * QEMU's escape: Ctrl-a x quits, Ctrl-a Ctrl-a sends a Ctrl-a.
 */
#ifndef LKVM_CONSOLE_H
#define LKVM_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where typed bytes go (the serial port); returns how many it took. */
typedef size_t (*console_sink_fn)(void *opaque, const uint8_t *buf,
				  size_t len);

int console_init(void);
void console_restore(void);
bool console_is_tty(void);

/* Output from the guest; safe from any thread. */
void console_write(const void *buf, size_t len);

void console_set_sink(console_sink_fn sink, void *opaque);

/*
 * Called by the main loop when stdin is readable. Returns -1 at EOF (stop
 * polling stdin), 1 when the user typed the quit escape, 0 otherwise.
 */
int console_read_input(void);
int console_input_fd(void);

#endif

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
#include <sys/uio.h>

/* Where typed bytes go (the serial port); returns how many it took. */
typedef size_t (*console_sink_fn)(void *opaque, const uint8_t *buf,
				  size_t len);

int console_init(void);
void console_restore(void);
bool console_is_tty(void);

/*
 * Output from the guest; safe from any thread, never blocks. Queues what
 * fits and drops (and counts) the rest; returns how many bytes it queued,
 * or len when the output is closed and everything is discarded. *full says
 * the queue is now full: room_fn (below) will be called, once, from the
 * writer thread when a quarter of it is free again.
 */
size_t console_write(const void *buf, size_t len, bool *full);

/*
 * For a device whose driver waits for its buffers (virtio-console): all
 * of iov queued, or nothing and false when it does not fit now, in which
 * case the room listeners hear when a quarter of the queue is free.
 * Output that can never fit (more than console_queue_size()) is the
 * caller's to split.
 */
bool console_write_whole(const struct iovec *iov, unsigned int n);
size_t console_queue_size(void);

/*
 * Room again after a full queue: called from the writer thread, which
 * takes no lock a listener may hold around console_write*(). Two at
 * most, one per fn (adding fn again replaces its opaque); once removed, a
 * listener is not being called.
 */
typedef void (*console_room_fn)(void *opaque);
int console_add_room_notify(console_room_fn fn, void *opaque);
void console_del_room_notify(console_room_fn fn, void *opaque);

/*
 * Waits until the writer has written everything queued, or until it has
 * made no progress for stall_ms (a reader that stopped); true if empty.
 */
bool console_flush(unsigned int stall_ms);
/* Ends the writer thread (after a flush): what it had not written is lost. */
void console_stop(void);
void console_output_stats(uint64_t *written, uint64_t *dropped,
			  size_t *queued);

/* A BREAK condition on the line that the sink reads (the serial port). */
typedef void (*console_break_fn)(void *opaque);
void console_set_sink(console_sink_fn sink, console_break_fn brk,
		      void *opaque);
/*
 * Magic SysRq for a guest whose console is the serial port: a BREAK, then
 * the key (Linux acts on a key that follows a break within 5 s). Main
 * thread, as console input is. -1 when there is no line to send it on.
 */
int console_send_sysrq(char key);

/*
 * Called by the main loop when stdin is readable. Returns -1 at EOF (stop
 * polling stdin), 1 when the user typed the quit escape, 0 otherwise.
 */
int console_read_input(void);
int console_input_fd(void);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Virtqueue polling: the options (--poll, and poll= per device) and the
 * per-queue state the virtio core keeps to decide, kick by kick, whether
 * the queue's I/O thread should look at the ring itself for a while
 * instead of waiting for the guest's next kick.
 *
 * A queue is in notify mode or in poll mode. In notify mode the thread
 * serves the ring when kicked and sleeps. A queue whose kicks and
 * requests come at start_rate a second or faster goes to poll mode: after
 * serving, the guest's kicks stay off and the thread keeps checking the
 * ring for a window after the queue was last active (a kick, or work it
 * found), then turns kicks back on (and looks once more) before it may
 * sleep. The window adapts as QEMU's does: a kick that came soon after
 * the window ran out would have been caught by a longer one (grow: 4 us,
 * then x2, up to max_us); a kick much later says polling does not pay for
 * this queue (halve, down to 0). After stop_idle_ms without activity the
 * queue goes back to notify mode.
 */
#ifndef LKVM_VIRTIO_POLL_H
#define LKVM_VIRTIO_POLL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lkvm/iothread.h"

enum virtio_poll_mode {
	VIRTIO_POLL_OFF,	/* kicks only: no polling at all */
	VIRTIO_POLL_AUTO,	/* by kick rate, adaptive window */
	VIRTIO_POLL_ON,		/* always poll mode, window fixed at max_us */
	VIRTIO_POLL_UNSET,	/* a device's poll=: not given, the global one */
};

struct virtio_poll_config {
	enum virtio_poll_mode mode;
	uint32_t max_us;		/* the window's cap */
	uint32_t start_rate;		/* kicks + requests a second: poll */
	uint32_t stop_idle_ms;		/* no work this long: notify mode */
};

#define VIRTIO_POLL_DEFAULT_MODE	VIRTIO_POLL_AUTO
#define VIRTIO_POLL_DEFAULT_MAX_US	50
#define VIRTIO_POLL_DEFAULT_START_RATE	1000
#define VIRTIO_POLL_DEFAULT_STOP_IDLE_MS 1000
#define VIRTIO_POLL_MAX_MAX_US		10000	/* 10 ms */

/* The defaults above. */
void virtio_poll_config_default(struct virtio_poll_config *cfg);
/*
 * --poll off|auto|on[,max_us=N][,start_rate=N][,stop_idle_ms=N]; fills
 * *cfg over what it holds. -1 with a one-line error.
 */
int virtio_poll_parse(const char *arg, struct virtio_poll_config *cfg);
/* "off", "auto", "on": -1 (no message) for anything else. */
int virtio_poll_parse_mode(const char *s, size_t len,
			   enum virtio_poll_mode *mode);
const char *virtio_poll_mode_name(enum virtio_poll_mode mode);

/*
 * One queue's polling state, in struct virtio_queue, guarded by the
 * queue's lock and changed only by the thread that serves the queue
 * (its I/O thread). The poller is that thread's own.
 */
struct virtio_queue_poll {
	struct io_poller poller;
	bool allowed;			/* the device polls this queue type */
	bool polling;			/* poll mode */
	bool polled;			/* kicks off; the thread polls the ring */
	uint64_t window_ns;
	uint64_t last_active_ns;	/* the last kick, or work found */
	uint64_t period_start_ns;	/* the rate: kicks + requests since */
	uint32_t period_events;
	uint64_t mode_since_ns;		/* poll mode since */
	/* counters, read at exit */
	uint64_t hits;			/* polls that found work */
	uint64_t misses;		/* polls that found none */
	uint64_t switches;		/* notify <-> poll mode changes */
	uint64_t poll_ns;		/* time in poll mode, until the last switch */
};

struct virtio_device;
struct virtio_queue;

/* The core's side (virtio/device.c), each under q->lock. */
void virtio_poll_init(struct virtio_queue *q);
/* The queue stopped: notify mode, no polling. */
void virtio_poll_reset(struct virtio_device *vdev, struct virtio_queue *q);
/* count kicks came through the queue's ioeventfd: maybe change mode. */
void virtio_poll_kicked(struct virtio_device *vdev, struct virtio_queue *q,
			uint64_t count);
/*
 * The policy behind it, on its own clock (unit tests give it theirs):
 * `waiting` chains were available when the kick came.
 */
void virtio_poll_account_kick(const struct virtio_poll_config *cfg,
			      struct virtio_queue_poll *vp, uint64_t count,
			      unsigned int waiting, uint64_t now);
/*
 * A serve pass ended with the ring empty or, budget_spent, with its
 * per-turn budget used up, having served `served` chains. True when the
 * queue stays polled (guest kicks left off, the thread looks again),
 * false when the caller must turn kicks back on and look once more.
 */
bool virtio_poll_keep(struct virtio_device *vdev, struct virtio_queue *q,
		      bool budget_spent, unsigned int served);
void virtio_poll_write_stats(const struct virtio_device *vdev,
			     const struct virtio_queue *q, FILE *f);

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * Virtqueue polling (see lkvm/virtio/poll.h for the policy): the options,
 * the per-queue mode and window, and the poller the queue's I/O thread
 * runs while the guest's kicks are off. Everything here runs under the
 * queue's lock, on the thread that serves the queue.
 *
 * No request may wait for a kick that will not come: kicks are off only
 * while the thread is awake and polling (q->poll.polled), and the thread
 * turns them back on, with the barrier and the look at the ring that
 * virtq_enable_notify()'s callers owe, before it may sleep.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/poll.h"

#define POLL_GROW_START_NS	4000ULL		/* QEMU's first step */
#define POLL_RATE_PERIOD_NS	10000000ULL	/* kicks counted per 10 ms */
#define POLL_MAX_START_RATE	10000000U
#define POLL_MAX_STOP_IDLE_MS	3600000U

static const char *const mode_names[] = {
	[VIRTIO_POLL_OFF] = "off",
	[VIRTIO_POLL_AUTO] = "auto",
	[VIRTIO_POLL_ON] = "on",
	[VIRTIO_POLL_UNSET] = "unset",
};

void virtio_poll_config_default(struct virtio_poll_config *cfg)
{
	*cfg = (struct virtio_poll_config) {
		.mode = VIRTIO_POLL_DEFAULT_MODE,
		.max_us = VIRTIO_POLL_DEFAULT_MAX_US,
		.start_rate = VIRTIO_POLL_DEFAULT_START_RATE,
		.stop_idle_ms = VIRTIO_POLL_DEFAULT_STOP_IDLE_MS,
	};
}

const char *virtio_poll_mode_name(enum virtio_poll_mode mode)
{
	return (unsigned int)mode < ARRAY_SIZE(mode_names) ? mode_names[mode]
							    : "unknown";
}

int virtio_poll_parse_mode(const char *s, size_t len,
			   enum virtio_poll_mode *mode)
{
	unsigned int m;

	for (m = VIRTIO_POLL_OFF; m < VIRTIO_POLL_UNSET; m++)
		if (strlen(mode_names[m]) == len && !strncmp(s, mode_names[m], len)) {
			*mode = m;
			return 0;
		}
	return -1;
}

/* The NAME=N settings of --poll, each a number in [min, max]. */
static const struct {
	const char *name;
	uint32_t min, max;
	size_t offset;
} poll_settings[] = {
	{ "max_us", 1, VIRTIO_POLL_MAX_MAX_US,
	  offsetof(struct virtio_poll_config, max_us) },
	{ "start_rate", 1, POLL_MAX_START_RATE,
	  offsetof(struct virtio_poll_config, start_rate) },
	{ "stop_idle_ms", 1, POLL_MAX_STOP_IDLE_MS,
	  offsetof(struct virtio_poll_config, stop_idle_ms) },
};

/* One item of --poll (len bytes at item, not terminated); -1 + message. */
static int poll_parse_item(const char *arg, const char *item, size_t len,
			   bool first, struct virtio_poll_config *cfg)
{
	const char *eq = memchr(item, '=', len);
	char val[24];
	unsigned int i;
	uint64_t v;

	if (first && !virtio_poll_parse_mode(item, len, &cfg->mode))
		return 0;
	for (i = 0; eq && i < ARRAY_SIZE(poll_settings); i++) {
		size_t vlen = len - (size_t)(eq + 1 - item);

		if (strlen(poll_settings[i].name) != (size_t)(eq - item) ||
		    strncmp(item, poll_settings[i].name, eq - item))
			continue;
		if (vlen && vlen < sizeof(val)) {
			memcpy(val, eq + 1, vlen);
			val[vlen] = 0;
			if (parse_u64(val, &v) && v >= poll_settings[i].min &&
			    v <= poll_settings[i].max) {
				*(uint32_t *)((char *)cfg +
					      poll_settings[i].offset) = v;
				return 0;
			}
		}
		pr_err("--poll '%s': %s must be a number from %u to %u", arg,
		       poll_settings[i].name, poll_settings[i].min,
		       poll_settings[i].max);
		return -1;
	}
	pr_err("--poll '%s': '%.*s' is not off, auto, on, max_us=N, start_rate=N or stop_idle_ms=N",
	       arg, (int)len, item);
	return -1;
}

int virtio_poll_parse(const char *arg, struct virtio_poll_config *cfg)
{
	const char *item = arg, *end;

	for (;;) {
		end = strchr(item, ',');
		if (poll_parse_item(arg, item, end ? (size_t)(end - item)
						   : strlen(item),
				    item == arg, cfg))
			return -1;
		if (!end)
			return 0;
		item = end + 1;
	}
}

/* Could this queue poll at all, served from here? */
static bool poll_usable(struct virtio_device *vdev, struct virtio_queue *q)
{
	return q->poll.allowed && vdev->use_ioeventfd &&
	       vdev->poll_cfg.mode != VIRTIO_POLL_OFF &&
	       iothread_is_current(q->iothread);
}

static uint64_t poll_max_ns(const struct virtio_poll_config *cfg)
{
	return cfg->max_us * 1000ULL;
}

static void poll_mode_enter(const struct virtio_poll_config *cfg,
			    struct virtio_queue_poll *vp, uint64_t now)
{
	vp->polling = true;
	vp->switches++;
	vp->mode_since_ns = now;
	vp->last_active_ns = now;
	vp->window_ns = cfg->mode == VIRTIO_POLL_ON ?
			poll_max_ns(cfg) :
			MIN(POLL_GROW_START_NS, poll_max_ns(cfg));
}

/* Back to notify mode, as of `when` (the queue went idle then). */
static void poll_mode_leave(struct virtio_queue_poll *vp, uint64_t when)
{
	if (!vp->polling)
		return;
	vp->polling = false;
	vp->switches++;
	if (when > vp->mode_since_ns)
		vp->poll_ns += when - vp->mode_since_ns;
	vp->period_start_ns = 0;
	vp->period_events = 0;
}

/*
 * A kick that the window missed, gap after the queue was last active:
 * had the window been longer, would polling have caught it? The gap is
 * measured when the thread is awake again, so it includes the thread's
 * own wake-up (tens of microseconds on a loaded or virtualized host): a
 * kick up to twice the cap after the work counts as a near miss. A
 * longer wait halves the window rather than resetting it (QEMU's
 * poll-shrink=2), so that one stray wait does not undo a window that was
 * catching the rest.
 */
static void poll_window_adapt(const struct virtio_poll_config *cfg,
			      struct virtio_queue_poll *vp, uint64_t gap)
{
	uint64_t max = poll_max_ns(cfg);

	if (cfg->mode == VIRTIO_POLL_ON || gap <= vp->window_ns)
		return;
	if (gap > 2 * max)
		vp->window_ns = vp->window_ns / 2 >= POLL_GROW_START_NS ?
				vp->window_ns / 2 : 0;
	else
		vp->window_ns = vp->window_ns ? MIN(2 * vp->window_ns, max)
					      : MIN(POLL_GROW_START_NS, max);
}

/* Kicks and requests at start_rate a second or more, over 10 ms? */
static bool poll_rate_reached(const struct virtio_poll_config *cfg,
			      struct virtio_queue_poll *vp, uint64_t count,
			      uint64_t now)
{
	uint64_t need = ((uint64_t)cfg->start_rate *
			 (POLL_RATE_PERIOD_NS / 1000000) + 999) / 1000;

	if (!vp->period_start_ns ||
	    now - vp->period_start_ns >= POLL_RATE_PERIOD_NS) {
		vp->period_start_ns = now;
		vp->period_events = 0;
	}
	vp->period_events = MIN((uint64_t)vp->period_events + count, UINT32_MAX);
	return vp->period_events >= MAX(need, 1);
}

void virtio_poll_account_kick(const struct virtio_poll_config *cfg,
			      struct virtio_queue_poll *vp, uint64_t count,
			      unsigned int waiting, uint64_t now)
{
	uint64_t idle_ns = cfg->stop_idle_ms * 1000000ULL;

	if (cfg->mode == VIRTIO_POLL_OFF)
		return;
	if (vp->polling) {
		uint64_t gap = now - vp->last_active_ns;

		if (cfg->mode == VIRTIO_POLL_ON || gap < idle_ns) {
			/*
			 * A driver that kicks once for a batch posted its
			 * chains one by one over the gap: the first came
			 * about gap / waiting after the queue went quiet.
			 */
			poll_window_adapt(cfg, vp, gap / MAX(waiting, 1u));
			vp->last_active_ns = now;
			return;
		}
		poll_mode_leave(vp, vp->last_active_ns + idle_ns);
	}
	if (cfg->mode == VIRTIO_POLL_ON ||
	    poll_rate_reached(cfg, vp, count, now))
		poll_mode_enter(cfg, vp, now);
}

void virtio_poll_kicked(struct virtio_device *vdev, struct virtio_queue *q,
			uint64_t count)
{
	if (poll_usable(vdev, q))
		virtio_poll_account_kick(&vdev->poll_cfg, &q->poll, count,
					 virtq_avail_count(&q->ring), now_ns());
}

bool virtio_poll_keep(struct virtio_device *vdev, struct virtio_queue *q,
		      bool budget_spent, unsigned int served)
{
	const struct virtio_poll_config *cfg = &vdev->poll_cfg;
	struct virtio_queue_poll *vp = &q->poll;
	uint64_t window;

	vp->polled = false;
	if (poll_usable(vdev, q)) {
		if (served) {
			uint64_t now = now_ns();

			vp->last_active_ns = now;
			/* requests count towards the rate as kicks do: a
			 * busy queue's driver kicks rarely, the device
			 * being awake */
			if (!vp->polling && cfg->mode == VIRTIO_POLL_AUTO &&
			    poll_rate_reached(cfg, vp, served, now))
				poll_mode_enter(cfg, vp, now);
		}
		window = vp->polling ? vp->window_ns : 0;
	} else if (budget_spent && iothread_is_current(q->iothread)) {
		window = 0;	/* no polling here, only the rest of the turn */
	} else {
		return false;
	}
	if (!budget_spent && !window)
		return false;
	vp->polled = true;
	iothread_poll_start(q->iothread, &vp->poller, window);
	return true;
}

/* The queue's thread, each turn while q->poll.polled. */
static enum io_poll_result virtio_queue_poll(struct io_poller *p)
{
	struct virtio_queue *q = p->opaque;
	enum io_poll_result r = IO_POLL_IDLE;

	/* A reset or a start holds the lock: look again next turn. */
	if (pthread_mutex_trylock(&q->lock))
		return IO_POLL_IDLE;
	if (!q->live || !q->poll.polled) {
		r = IO_POLL_GONE;
	} else if (!virtq_has_avail(&q->ring)) {
		q->poll.misses++;
	} else {
		uint64_t before = q->requests;

		/*
		 * Only the serve loop keeps a queue polled: a handler that
		 * does not reach it (a net queue whose role the driver
		 * changed, TX waiting for room) ends the polling here, with
		 * kicks back on, or the thread would spin on a ring nobody
		 * consumes.
		 */
		q->poll.polled = false;
		q->vdev->ops->queue_kick(q->vdev, q);
		if (q->requests != before)
			q->poll.hits++;
		else
			q->poll.misses++;
		if (q->poll.polled) {
			r = IO_POLL_WORK;
		} else {
			virtq_enable_notify(&q->ring, true);
			r = IO_POLL_GONE;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

/* The window passed: kicks back on, unless a chain came in meanwhile. */
static bool virtio_queue_poll_stop(struct io_poller *p)
{
	struct virtio_queue *q = p->opaque;
	bool keep = false;

	pthread_mutex_lock(&q->lock);
	if (q->live && q->poll.polled) {
		virtq_enable_notify(&q->ring, true);
		keep = virtq_has_avail(&q->ring);
		if (keep)
			virtq_enable_notify(&q->ring, false);
		else
			q->poll.polled = false;
	}
	pthread_mutex_unlock(&q->lock);
	return keep;
}

void virtio_poll_init(struct virtio_queue *q)
{
	memset(&q->poll, 0, sizeof(q->poll));
	q->poll.poller.poll = virtio_queue_poll;
	q->poll.poller.stop = virtio_queue_poll_stop;
	q->poll.poller.opaque = q;
}

/* Where poll mode ends if nothing comes: now, or stop_idle_ms after work. */
static uint64_t poll_mode_end(const struct virtio_device *vdev,
			      const struct virtio_queue_poll *vp)
{
	uint64_t end = now_ns();

	if (vdev->poll_cfg.mode != VIRTIO_POLL_ON)
		end = MIN(end, vp->last_active_ns +
			       vdev->poll_cfg.stop_idle_ms * 1000000ULL);
	return end;
}

void virtio_poll_reset(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_queue_poll *vp = &q->poll;

	if (vp->polling)
		poll_mode_leave(vp, poll_mode_end(vdev, vp));
	vp->polled = false;
}

void virtio_poll_write_stats(const struct virtio_device *vdev,
			     const struct virtio_queue *q, FILE *f)
{
	const struct virtio_queue_poll *vp = &q->poll;
	uint64_t poll_ns = vp->poll_ns, end;

	if (vp->polling) {
		end = poll_mode_end(vdev, vp);
		if (end > vp->mode_since_ns)
			poll_ns += end - vp->mode_since_ns;
	}
	fprintf(f, "\"poll_hits\":%llu,\"poll_misses\":%llu,"
		"\"poll_mode_ms\":%.3f,\"poll_switches\":%llu,"
		"\"poll_window_us\":%.3f,\"polling\":%s",
		(unsigned long long)vp->hits, (unsigned long long)vp->misses,
		poll_ns / 1e6, (unsigned long long)vp->switches,
		vp->window_ns / 1e3, vp->polling ? "true" : "false");
}

// SPDX-License-Identifier: GPL-2.0
/*
 * User-requested devices: one virtio-blk per -d, one virtio-net per -n, a
 * virtio-rng with --rng, console, balloon, a virtio-9p per --9p, each taking
 * over the disk, backend or directory the inputs opened, and with
 * --iothreads the shared I/O threads that serve them. Each device is made
 * first, then wrapped in the transport --virtio-transport chose, in this
 * order (which gives them their PCI slots or virtio-mmio slots).
 * Owned by the main thread, which creates them before the vCPUs start and
 * stops them after the vCPUs are gone.
 */
#include <limits.h>
#include <stdio.h>

#include "lkvm/devices.h"
#include "lkvm/doctor.h"
#include "lkvm/inputs.h"
#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/blk.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/net.h"
#include "lkvm/virtio/9p.h"
#include "lkvm/virtio/balloon.h"
#include "lkvm/virtio/console.h"
#include "lkvm/virtio/rng.h"
#include "lkvm/virtio/transport.h"
#include "lkvm/vm.h"

struct vm_devices {
	struct iothread_pool pool;	/* --iothreads; empty otherwise */
	unsigned int nr_blk;
	struct virtio_blk *blk[LKVM_MAX_DISKS];
	unsigned int nr_net;
	struct virtio_net *net[LKVM_MAX_NICS];
	const struct net_config *net_cfg[LKVM_MAX_NICS];
	struct virtio_rng *rng;		/* --rng; NULL otherwise */
	struct virtio_console *console;	/* --console virtio; NULL otherwise */
	struct virtio_balloon *balloon;	/* --balloon; NULL otherwise */
	unsigned int nr_shares;
	struct virtio_9p *shares[LKVM_MAX_SHARES];	/* --9p */
	/* the four above, as --stats and the exit warnings see them */
	unsigned int nr_small;
	struct small_device {
		const char *type;	/* --stats' name */
		const char *what;	/* what the guest missed, for a person */
		const char *kconfig;	/* the option a guest without it lacks */
		const char *module;	/* and its module's name */
		struct virtio_device *vdev;
	} small[3 + LKVM_MAX_SHARES];
};

/* The transport the user chose, around a device that is made. */
static int devices_attach(struct vm *vm, struct virtio_device *vdev)
{
	switch (vm->cfg->transport) {
	case VIRTIO_TRANSPORT_MMIO:
		return virtio_mmio_create(vm, vdev);
	case VIRTIO_TRANSPORT_PCI_LEGACY:
		return virtio_pci_create(vm, vdev, true);
	default:
		return virtio_pci_create(vm, vdev, false);
	}
}

static int add_small(struct vm *vm, struct vm_devices *d, const char *type,
		     const char *what, const char *kconfig, const char *module,
		     struct virtio_device *vdev)
{
	d->small[d->nr_small++] = (struct small_device) {
		type, what, kconfig, module, vdev,
	};
	return devices_attach(vm, vdev);
}

static const char *const transport_names[] = {
	[VIRTIO_TRANSPORT_PCI] = "pci",
	[VIRTIO_TRANSPORT_PCI_LEGACY] = "pci-legacy",
	[VIRTIO_TRANSPORT_MMIO] = "mmio",
};

/* --poll, with the device's own poll= mode when it has one. */
static struct virtio_poll_config device_poll(const struct vm_config *cfg,
					     enum virtio_poll_mode mode)
{
	struct virtio_poll_config poll = cfg->poll;

	if (mode != VIRTIO_POLL_UNSET)
		poll.mode = mode;
	return poll;
}

static struct iothread_pool *devices_pool(struct vm_devices *d)
{
	return d->pool.nr ? &d->pool : NULL;
}

static int devices_create_nics(struct vm *vm, struct vm_devices *d,
			       struct vm_inputs *in)
{
	const struct vm_config *cfg = vm->cfg;
	unsigned int i;

	for (i = 0; i < cfg->nr_nics; i++) {
		struct virtio_net_options opts = {
			.net = cfg->nics[i],
			.backend = &in->nets[i],
			.use_ioeventfd = !cfg->no_ioeventfd,
			.poll = device_poll(cfg, cfg->nics[i].poll),
			.pool = devices_pool(d),
		};
		struct virtio_net *net;

		if (cfg->nics[i].mode == NET_MODE_NONE)
			continue;
		net = virtio_net_create(vm, &opts);
		if (!net)
			return -1;
		d->net[d->nr_net] = net;
		d->net_cfg[d->nr_net++] = &cfg->nics[i];
		if (devices_attach(vm, virtio_net_device(net)))
			return -1;
	}
	return 0;
}

static int devices_create_shares(struct vm *vm, struct vm_devices *d,
				 struct vm_inputs *in,
				 const struct virtio_device_options *opts)
{
	const struct vm_config *cfg = vm->cfg;
	unsigned int i;

	for (i = 0; i < cfg->nr_shares; i++) {
		struct virtio_9p *p;

		p = virtio_9p_create(vm, opts, in->share_fds[i],
				     cfg->shares[i].tag, cfg->shares[i].ro);
		in->share_fds[i] = -1;	/* the device's now, made or not */
		if (!p)
			return -1;
		d->shares[d->nr_shares++] = p;
		if (add_small(vm, d, "virtio-9p", "a virtio-9p share",
			      "CONFIG_NET_9P_VIRTIO", "9pnet_virtio",
			      virtio_9p_device(p)))
			return -1;
	}
	return 0;
}

int devices_create(struct vm *vm, struct vm_inputs *in)
{
	const struct vm_config *cfg = vm->cfg;
	struct vm_devices *d = vm_zalloc(vm, sizeof(*d));
	struct virtio_device_options small;
	unsigned int i;

	if (!d)
		return -1;
	vm->devices = d;
	if (cfg->nr_iothreads && !cfg->no_ioeventfd &&
	    iothread_pool_create(&d->pool, vm, cfg->nr_iothreads))
		return -1;
	for (i = 0; i < in->nr_disks; i++) {
		struct virtio_blk_options opts = {
			.disk = &in->disks[i],
			/* A queue per vCPU: no vCPU waits on another's. */
			.nr_queues = MIN(cfg->nr_cpus, (unsigned int)VIRTIO_MAX_QUEUES - 1),
			.use_ioeventfd = !cfg->no_ioeventfd,
			.poll = device_poll(cfg, cfg->disks[i].poll),
			.pool = devices_pool(d),
		};

		d->blk[i] = virtio_blk_create(vm, &opts);
		if (!d->blk[i])
			return -1;
		d->nr_blk++;
		if (devices_attach(vm, virtio_blk_device(d->blk[i])))
			return -1;
	}
	if (devices_create_nics(vm, d, in))
		return -1;
	small = (struct virtio_device_options) {
		.use_ioeventfd = !cfg->no_ioeventfd,
		.pool = devices_pool(d),
	};
	if (cfg->rng) {
		if (!(d->rng = virtio_rng_create(vm, &small)) ||
		    add_small(vm, d, "virtio-rng", "its virtio-rng device",
			      "CONFIG_HW_RANDOM_VIRTIO", "virtio_rng",
			      virtio_rng_device(d->rng)))
			return -1;
	}
	if (cfg->virtio_console) {
		if (!(d->console = virtio_console_create(vm, &small)) ||
		    add_small(vm, d, "virtio-console",
			      "its virtio-console (hvc0), so its console output and input went nowhere",
			      "CONFIG_VIRTIO_CONSOLE", "virtio_console",
			      virtio_console_device(d->console)))
			return -1;
	}
	if (cfg->balloon) {
		if (!(d->balloon = virtio_balloon_create(vm, &small)) ||
		    add_small(vm, d, "virtio-balloon", "its virtio-balloon device",
			      "CONFIG_VIRTIO_BALLOON", "virtio_balloon",
			      virtio_balloon_device(d->balloon)))
			return -1;
	}
	if (devices_create_shares(vm, d, in, &small))
		return -1;
	return iothread_pool_start(&d->pool);
}

void devices_stop(struct vm *vm)
{
	unsigned int i;

	if (!vm->devices)
		return;
	/* No shared thread may serve a queue its device is tearing down. */
	iothread_pool_stop(&vm->devices->pool);
	/* destroying twice is harmless; the counts stay for the report */
	for (i = 0; i < vm->devices->nr_blk; i++)
		virtio_blk_destroy(vm->devices->blk[i]);
	for (i = 0; i < vm->devices->nr_net; i++)
		virtio_net_destroy(vm->devices->net[i]);
	virtio_rng_destroy(vm->devices->rng);
	virtio_console_destroy(vm->devices->console);
	virtio_balloon_destroy(vm->devices->balloon);
	for (i = 0; i < vm->devices->nr_shares; i++)
		virtio_9p_destroy(vm->devices->shares[i]);
	/* after the devices: their teardown still unwatches its fds there */
	iothread_pool_destroy(&vm->devices->pool);
}

/* The guest left a device alone: say so, and what the doctor thinks. */
static void report_unused(struct vm *vm, struct doctor **doc,
			  const char *what, const char *kconfig,
			  const char *module)
{
	bool mmio = vm->cfg->transport == VIRTIO_TRANSPORT_MMIO;
	const char *const kconfigs[2] = {
		kconfig, mmio ? "CONFIG_VIRTIO_MMIO" : "CONFIG_VIRTIO_PCI",
	};
	const char *const modules[2] = {
		module, mmio ? "virtio_mmio" : "virtio_pci",
	};
	char why[256];

	if (!*doc)
		*doc = doctor_open(vm->cfg->kernel, vm->cfg->initrd);
	doctor_explain(*doc, kconfigs, modules, why, sizeof(why));
	pr_warn("the guest never initialised %s: %s", what, why);
}

void devices_report_unused(struct vm *vm)
{
	struct vm_devices *d = vm->devices;
	struct doctor *doc = NULL;
	char what[PATH_MAX + 64];
	unsigned int i;

	if (!d)
		return;
	for (i = 0; i < d->nr_blk; i++)
		if (!virtio_blk_device(d->blk[i])->driver_seen) {
			snprintf(what, sizeof(what), "the virtio-blk disk '%s'",
				 vm->cfg->disks[i].disk.path);
			report_unused(vm, &doc, what, "CONFIG_VIRTIO_BLK",
				      "virtio_blk");
		}
	for (i = 0; i < LKVM_MAX_NICS && d->net[i]; i++)
		if (!virtio_net_device(d->net[i])->driver_seen) {
			snprintf(what, sizeof(what), "its virtio-net card %u", i);
			report_unused(vm, &doc, what, "CONFIG_VIRTIO_NET",
				      "virtio_net");
		}
	for (i = 0; i < d->nr_small; i++)
		if (!d->small[i].vdev->driver_seen)
			report_unused(vm, &doc, d->small[i].what,
				      d->small[i].kconfig, d->small[i].module);
	doctor_close(doc);
}

static void write_device_stats(FILE *f, struct vm *vm, const char *type,
			       const struct virtio_device *vdev, bool first,
			       bool live)
{
	fprintf(f, "%s{\"type\":\"%s\",\"transport\":\"%s\","
		"\"driver_seen\":%s,\"status\":%u,\"times_broken\":%u,",
		first ? "" : ",", type, transport_names[vm->cfg->transport],
		vdev->driver_seen ? "true" : "false", vdev->status,
		vdev->times_broken);
	fprintf(f, "\"poll\":\"%s\",",
		virtio_poll_mode_name(vdev->use_ioeventfd ? vdev->poll_cfg.mode
							  : VIRTIO_POLL_OFF));
	virtio_device_write_queue_stats(vdev, f);
	if (vdev->ops->write_stats && !live) {
		fprintf(f, ",");
		vdev->ops->write_stats((struct virtio_device *)vdev, f);
	}
	fprintf(f, "}");
}

void devices_write_stats(struct vm *vm, FILE *f, bool live)
{
	struct vm_devices *d = vm->devices;
	unsigned int i, n = 0;

	fprintf(f, "\"devices\":[");
	for (i = 0; d && i < vm->cfg->nr_disks && d->blk[i]; i++)
		write_device_stats(f, vm, "virtio-blk",
				   virtio_blk_device(d->blk[i]), !n++, live);
	for (i = 0; d && i < LKVM_MAX_NICS && d->net[i]; i++)
		write_device_stats(f, vm, "virtio-net",
				   virtio_net_device(d->net[i]), !n++, live);
	for (i = 0; d && i < d->nr_small; i++)
		write_device_stats(f, vm, d->small[i].type, d->small[i].vdev,
				   !n++, live);
	fprintf(f, "]");
}

int devices_balloon_adjust(struct vm *vm, int64_t delta_pages,
			   uint32_t *target, uint32_t *actual)
{
	if (!vm->devices || !vm->devices->balloon)
		return -1;
	virtio_balloon_adjust(vm->devices->balloon, delta_pages, target, actual);
	return 0;
}

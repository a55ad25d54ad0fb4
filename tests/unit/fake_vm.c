// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for KVM behind vm_ioctl() (see fake_vm.h). It keeps the
 * rules KVM keeps where a device could break them: an ioeventfd is bound
 * once per address and datamatch and unbound only if bound (EEXIST,
 * ENOENT), an eventfd feeds one irqfd at a time (EBUSY), a routing table
 * replaces the last one whole.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/util.h"
#include "fake_vm.h"

static struct fake_vm *to_fake(struct vm *vm)
{
	return (struct fake_vm *)((char *)vm - offsetof(struct fake_vm, vm));
}

static int fail(int err)
{
	errno = err;
	return -1;
}

static bool same_ioeventfd(const struct fake_ioeventfd *e,
			   const struct kvm_ioeventfd *req)
{
	return e->addr == req->addr && e->len == req->len &&
	       e->pio == !!(req->flags & KVM_IOEVENTFD_FLAG_PIO) &&
	       e->datamatch == req->datamatch;
}

static int fake_ioeventfd(struct fake_vm *f, const struct kvm_ioeventfd *req)
{
	unsigned int i;

	if (!(req->flags & KVM_IOEVENTFD_FLAG_DATAMATCH))
		return fail(EINVAL);	/* lkvm always matches the queue */
	for (i = 0; i < f->nr_ioeventfds; i++)
		if (same_ioeventfd(&f->ioeventfds[i], req))
			break;
	if (req->flags & KVM_IOEVENTFD_FLAG_DEASSIGN) {
		if (i == f->nr_ioeventfds || f->ioeventfds[i].fd != req->fd)
			return fail(ENOENT);
		f->ioeventfds[i] = f->ioeventfds[--f->nr_ioeventfds];
		return 0;
	}
	if (i < f->nr_ioeventfds)
		return fail(EEXIST);
	if (f->nr_ioeventfds == FAKE_VM_MAX_IOEVENTFDS)
		return fail(ENOSPC);
	f->ioeventfds[f->nr_ioeventfds++] = (struct fake_ioeventfd) {
		.addr = req->addr, .len = req->len, .fd = req->fd,
		.pio = !!(req->flags & KVM_IOEVENTFD_FLAG_PIO),
		.datamatch = req->datamatch,
	};
	return 0;
}

static int fake_irqfd(struct fake_vm *f, const struct kvm_irqfd *req)
{
	unsigned int i;

	for (i = 0; i < f->nr_irqfds; i++)
		if (f->irqfds[i].fd == (int)req->fd)
			break;
	if (req->flags & KVM_IRQFD_FLAG_DEASSIGN) {
		/* KVM ignores a deassign of nothing; so do we. */
		if (i < f->nr_irqfds && f->irqfds[i].gsi == req->gsi)
			f->irqfds[i] = f->irqfds[--f->nr_irqfds];
		return 0;
	}
	if (i < f->nr_irqfds)
		return fail(EBUSY);
	if (f->nr_irqfds == FAKE_VM_MAX_IRQFDS)
		return fail(ENOSPC);
	f->irqfds[f->nr_irqfds++] = (struct fake_irqfd) {
		.gsi = req->gsi, .fd = req->fd,
		.resample_fd = req->flags & KVM_IRQFD_FLAG_RESAMPLE ?
			       (int)req->resamplefd : -1,
	};
	return 0;
}

static int fake_routing(struct fake_vm *f, const struct kvm_irq_routing *r)
{
	if (r->nr > FAKE_VM_MAX_ROUTES)
		return fail(EINVAL);
	memcpy(f->routes, r->entries, r->nr * sizeof(r->entries[0]));
	f->nr_routes = r->nr;
	f->routing_commits++;
	return 0;
}

static int fake_irq_line(struct fake_vm *f, const struct kvm_irq_level *l)
{
	if (l->irq >= FAKE_VM_MAX_GSIS)
		return fail(EINVAL);
	f->irq_level[l->irq] = l->level;
	return 0;
}

static int fake_dispatch(struct fake_vm *f, unsigned long req, void *arg)
{
	switch (req) {
	case KVM_CHECK_EXTENSION:
		return 0;	/* no optional capability: the plain paths */
	case KVM_SET_USER_MEMORY_REGION:
		return 0;
	case KVM_IOEVENTFD:
		return fake_ioeventfd(f, arg);
	case KVM_IRQFD:
		return fake_irqfd(f, arg);
	case KVM_SET_GSI_ROUTING:
		return fake_routing(f, arg);
	case KVM_IRQ_LINE:
		return fake_irq_line(f, arg);
	default:
		f->unexpected++;
		return fail(ENOTTY);
	}
}

static int fake_vm_ioctl(struct vm *vm, unsigned long req, void *arg)
{
	struct fake_vm *f = to_fake(vm);
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = fake_dispatch(f, req, arg);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static const struct vm_kvm_ops fake_kvm_ops = {
	.vm_ioctl = fake_vm_ioctl,
};

int fake_vm_init(struct fake_vm *f, uint64_t mem_mib, unsigned int nr_cpus)
{
	uint64_t ranges[ARCH_MAX_RAM_RANGES][2];
	unsigned int n;

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->cfg = (struct vm_config) { .mem_mib = mem_mib, .nr_cpus = nr_cpus };
	if (vm_init(&f->vm, &f->cfg))
		return -1;
	f->vm.kvm_ops = &fake_kvm_ops;
	if (!mem_mib)
		return 0;
	n = arch_ram_layout(mem_mib * MiB, ranges);
	return vm_setup_ram(&f->vm, (const uint64_t (*)[2])ranges, n);
}

void fake_vm_destroy(struct fake_vm *f)
{
	vm_destroy(&f->vm);
	pthread_mutex_destroy(&f->lock);
}

int fake_vm_ioeventfd(struct fake_vm *f, uint64_t addr, bool pio,
		      uint64_t datamatch)
{
	unsigned int i;
	int fd = -1;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nr_ioeventfds; i++)
		if (f->ioeventfds[i].addr == addr &&
		    f->ioeventfds[i].pio == pio &&
		    f->ioeventfds[i].datamatch == datamatch)
			fd = f->ioeventfds[i].fd;
	pthread_mutex_unlock(&f->lock);
	return fd;
}

bool fake_vm_notify(struct fake_vm *f, uint64_t addr, bool pio,
		    uint64_t value, uint32_t len)
{
	uint64_t one = 1;
	unsigned int i;
	int fd = -1;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nr_ioeventfds; i++) {
		const struct fake_ioeventfd *e = &f->ioeventfds[i];

		if (e->addr == addr && e->pio == pio && e->len == len &&
		    e->datamatch == value)
			fd = e->fd;
	}
	pthread_mutex_unlock(&f->lock);
	return fd >= 0 && write(fd, &one, sizeof(one)) == sizeof(one);
}

int fake_vm_irqfd(struct fake_vm *f, uint32_t gsi)
{
	unsigned int i;
	int fd = -1;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nr_irqfds && fd < 0; i++)
		if (f->irqfds[i].gsi == gsi)
			fd = f->irqfds[i].fd;
	pthread_mutex_unlock(&f->lock);
	return fd;
}

bool fake_vm_route(struct fake_vm *f, uint32_t gsi,
		   struct kvm_irq_routing_entry *out)
{
	bool found = false;
	unsigned int i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nr_routes && !found; i++) {
		if (f->routes[i].gsi != gsi)
			continue;
		*out = f->routes[i];
		found = true;
	}
	pthread_mutex_unlock(&f->lock);
	return found;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * GSI routing and irqfds. KVM_SET_GSI_ROUTING replaces the whole table, so
 * we keep it here: the arch's irqchip routes first, MSI routes after them.
 * The table is changed by vCPU threads (a driver programming MSI-X) and
 * the main thread, always under the routing lock.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/irq.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define IRQ_MAX_ROUTES		1024
#define IRQ_FIRST_MSI_GSI	64	/* above every irqchip pin */

/*
 * Shared by every thread that raises interrupts; lock guards all of it.
 * holders[gsi]: how many devices hold that irqchip line up (PCI INTx).
 */
struct irq_routing {
	pthread_mutex_t lock;
	unsigned int nr;
	unsigned int next_msi_gsi;
	bool msi_devid;			/* KVM_CAP_MSI_DEVID: routes name it */
	struct kvm_irq_routing *table;	/* IRQ_MAX_ROUTES entries */
	unsigned int holders[IRQ_FIRST_MSI_GSI];
};

/* Caller holds the lock. */
static int irq_commit(struct vm *vm)
{
	struct irq_routing *r = vm->irq;

	r->table->nr = r->nr;
	if (vm_ioctl(vm, KVM_SET_GSI_ROUTING, r->table) < 0) {
		pr_err("KVM_SET_GSI_ROUTING: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int irq_init(struct vm *vm)
{
	struct irq_routing *r = vm_zalloc(vm, sizeof(*r));
	int ret;

	if (!r)
		return -1;
	r->table = calloc(1, sizeof(*r->table) +
			     IRQ_MAX_ROUTES * sizeof(r->table->entries[0]));
	if (!r->table) {
		pr_err("out of memory");
		return -1;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->next_msi_gsi = IRQ_FIRST_MSI_GSI;
	/* a property of this VM (its ITS), so asked of the VM's fd */
	r->msi_devid = vm_ioctl(vm, KVM_CHECK_EXTENSION,
				(void *)(uintptr_t)KVM_CAP_MSI_DEVID) > 0;
	r->nr = arch_irq_default_routes(r->table->entries, IRQ_MAX_ROUTES);
	vm->irq = r;
	pthread_mutex_lock(&r->lock);
	ret = irq_commit(vm);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void irq_exit(struct vm *vm)
{
	if (vm->irq) {
		free(vm->irq->table);
		vm->irq->table = NULL;
	}
}

static struct kvm_irq_routing_entry *irq_find(struct irq_routing *r,
					      unsigned int gsi)
{
	unsigned int i;

	for (i = 0; i < r->nr; i++)
		if (r->table->entries[i].gsi == gsi &&
		    r->table->entries[i].type == KVM_IRQ_ROUTING_MSI)
			return &r->table->entries[i];
	return NULL;
}

static void irq_set_msi(const struct irq_routing *r,
			struct kvm_irq_routing_entry *e, unsigned int gsi,
			uint32_t devid, uint64_t addr, uint32_t data)
{
	memset(e, 0, sizeof(*e));
	e->gsi = gsi;
	e->type = KVM_IRQ_ROUTING_MSI;
	e->u.msi.address_lo = (uint32_t)addr;
	e->u.msi.address_hi = addr >> 32;
	e->u.msi.data = data;
	if (r->msi_devid) {
		e->flags = KVM_MSI_VALID_DEVID;
		e->u.msi.devid = devid;
	}
}

int irq_msi_route_add(struct vm *vm, uint32_t devid, uint64_t addr,
		      uint32_t data)
{
	struct irq_routing *r = vm->irq;
	int gsi = -1;

	pthread_mutex_lock(&r->lock);
	if (r->nr < IRQ_MAX_ROUTES) {
		gsi = r->next_msi_gsi++;
		irq_set_msi(r, &r->table->entries[r->nr++], gsi, devid, addr,
			    data);
		if (irq_commit(vm)) {
			r->nr--;
			gsi = -1;
		}
	} else {
		pr_err("out of interrupt routes (%d)", IRQ_MAX_ROUTES);
	}
	pthread_mutex_unlock(&r->lock);
	return gsi;
}

int irq_msi_route_update(struct vm *vm, unsigned int gsi, uint32_t devid,
			 uint64_t addr, uint32_t data)
{
	struct irq_routing *r = vm->irq;
	struct kvm_irq_routing_entry *e;
	int ret = -1;

	pthread_mutex_lock(&r->lock);
	e = irq_find(r, gsi);
	if (e) {
		irq_set_msi(r, e, gsi, devid, addr, data);
		ret = irq_commit(vm);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int irqfd_attach(struct vm *vm, int fd, unsigned int gsi, int resample_fd)
{
	struct kvm_irqfd irqfd = { .fd = fd, .gsi = gsi };

	if (resample_fd >= 0) {
		irqfd.flags = KVM_IRQFD_FLAG_RESAMPLE;
		irqfd.resamplefd = resample_fd;
	}
	if (vm_ioctl(vm, KVM_IRQFD, &irqfd) < 0) {
		pr_err("KVM_IRQFD on GSI %u: %s", gsi, strerror(errno));
		return -1;
	}
	return 0;
}

void irqfd_detach(struct vm *vm, int fd, unsigned int gsi)
{
	struct kvm_irqfd irqfd = {
		.fd = fd, .gsi = gsi, .flags = KVM_IRQFD_FLAG_DEASSIGN,
	};

	if (vm_ioctl(vm, KVM_IRQFD, &irqfd) < 0)
		pr_warn("KVM_IRQFD deassign on GSI %u: %s", gsi,
			strerror(errno));
}

void irq_line_hold(struct vm *vm, unsigned int gsi, bool *held, bool up)
{
	struct irq_routing *r = vm->irq;

	if (gsi >= IRQ_FIRST_MSI_GSI)
		return;
	pthread_mutex_lock(&r->lock);
	if (*held != up) {
		*held = up;
		if (up && r->holders[gsi]++ == 0)
			vm_irq_line(vm, gsi, 1);
		else if (!up && --r->holders[gsi] == 0)
			vm_irq_line(vm, gsi, 0);
	}
	pthread_mutex_unlock(&r->lock);
}

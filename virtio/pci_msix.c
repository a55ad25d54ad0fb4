// SPDX-License-Identifier: GPL-2.0
/*
 * MSI-X for a virtio-pci function: see pci_msix.h. Each vector's message
 * leaves through an irqfd bound to a GSI whose MSI route follows the
 * table entry, so a queue interrupt never leaves the kernel; a masked
 * vector's message waits in the PBA until it is unmasked.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lkvm/irq.h"
#include "lkvm/pci.h"
#include "lkvm/util.h"
#include "pci_msix.h"

#define PCI_CAP_ID_MSIX		0x11
#define MSIX_CTRL_ENABLE	0x8000
#define MSIX_CTRL_MASKALL	0x4000
#define MSIX_ENTRY_MASKED	0x1
#define MSIX_ENTRY_CTRL		12	/* the Vector Control word */

static uint16_t msix_control(const struct pci_msix *m)
{
	return pci_get16(m->pdev->cfg + m->cap + 2);
}

bool pci_msix_enabled(const struct pci_msix *m)
{
	return msix_control(m) & MSIX_CTRL_ENABLE;
}

bool pci_msix_control_written(const struct pci_msix *m, unsigned int offset,
			      unsigned int len)
{
	return offset <= m->cap + 3 && offset + len > m->cap + 2;
}

uint16_t pci_msix_vector(const struct pci_msix *m, uint32_t v)
{
	return v < m->nr_vectors ? v : PCI_MSIX_NO_VECTOR;
}

static void eventfd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn_once("virtio-pci: irqfd: %s", strerror(errno));
}

static bool vector_masked(const struct pci_msix *m, uint16_t vector)
{
	return (msix_control(m) & MSIX_CTRL_MASKALL) ||
	       (__atomic_load_n(&m->table[vector].ctrl, __ATOMIC_SEQ_CST) &
		MSIX_ENTRY_MASKED);
}

/* Deliver a pending vector if it is still pending: whoever clears wins. */
static void claim_pending(struct pci_msix *m, uint16_t vector)
{
	uint64_t bit = 1ULL << vector;

	if (__atomic_fetch_and(&m->pending, ~bit, __ATOMIC_SEQ_CST) & bit)
		eventfd_signal(m->fd[vector]);
}

/*
 * Runs on the I/O thread under the queue's lock only, racing with a vCPU
 * that unmasks under vdev->lock: after marking the vector pending, look at
 * the mask again, so an unmask in between cannot strand the message.
 */
void pci_msix_fire(struct pci_msix *m, uint16_t vector)
{
	if (vector >= m->nr_vectors)
		return;
	if (!vector_masked(m, vector)) {
		eventfd_signal(m->fd[vector]);
		return;
	}
	__atomic_fetch_or(&m->pending, 1ULL << vector, __ATOMIC_SEQ_CST);
	if (!vector_masked(m, vector))
		claim_pending(m, vector);
}

void pci_msix_deliver_pending(struct pci_msix *m)
{
	unsigned int v;

	if (!pci_msix_enabled(m))
		return;
	for (v = 0; v < m->nr_vectors; v++)
		if (!vector_masked(m, v))
			claim_pending(m, v);
}

void pci_msix_reset(struct pci_msix *m)
{
	__atomic_store_n(&m->pending, 0, __ATOMIC_SEQ_CST);
}

/* A table entry changed: route its GSI to the new address and data. */
static void update_route(struct pci_msix *m, unsigned int v)
{
	const struct pci_msix_entry *e = &m->table[v];

	irq_msi_route_update(m->vm, m->gsi[v], m->requester_id,
			     ((uint64_t)e->addr_hi << 32) | e->addr_lo, e->data);
}

/* Aligned 32- or 64-bit writes inside one entry (PCI 3.0, 6.8.2). */
void pci_msix_table_write(struct pci_msix *m, uint64_t off, const void *data,
			  unsigned int len)
{
	unsigned int v = off / sizeof(struct pci_msix_entry);
	unsigned int field = off % sizeof(struct pci_msix_entry);

	if (v >= m->nr_vectors || (len != 4 && len != 8) || field % 4 ||
	    field + len > sizeof(struct pci_msix_entry))
		return;
	if (field == MSIX_ENTRY_CTRL && len == 4)
		__atomic_store_n(&m->table[v].ctrl, *(const uint32_t *)data,
				 __ATOMIC_SEQ_CST);
	else
		memcpy((uint8_t *)&m->table[v] + field, data, len);
	if (field < MSIX_ENTRY_CTRL)
		update_route(m, v);
	pci_msix_deliver_pending(m);
}

void pci_msix_table_read(struct pci_msix *m, uint64_t off, void *data,
			 unsigned int len)
{
	unsigned int v = off / sizeof(struct pci_msix_entry);
	unsigned int field = off % sizeof(struct pci_msix_entry);

	memset(data, 0, len);
	if (v < m->nr_vectors && field + len <= sizeof(struct pci_msix_entry))
		memcpy(data, (uint8_t *)&m->table[v] + field, len);
}

void pci_msix_pba_read(struct pci_msix *m, uint64_t off, void *data,
		       unsigned int len)
{
	uint64_t pba = __atomic_load_n(&m->pending, __ATOMIC_SEQ_CST);

	memset(data, 0, len);
	if (off < sizeof(pba))
		memcpy(data, (uint8_t *)&pba + off, MIN(len, sizeof(pba) - off));
}

void pci_msix_add_cap(const struct pci_msix *m, struct pci_device *pdev,
		      unsigned int next, uint8_t bar, uint32_t table,
		      uint32_t pba)
{
	uint8_t *cap = pdev->cfg + m->cap;

	cap[0] = PCI_CAP_ID_MSIX;
	cap[1] = next;
	pci_put16(cap + 2, m->nr_vectors - 1);	/* the table's size - 1 */
	pci_put32(cap + 4, table | bar);
	pci_put32(cap + 8, pba | bar);
	pdev->wmask[m->cap + 3] = 0xc0;		/* enable, function mask */
}

int pci_msix_init(struct pci_msix *m, struct vm *vm,
		  const struct pci_device *pdev, unsigned int cap,
		  uint32_t requester_id, unsigned int nr_vectors)
{
	unsigned int v;

	m->vm = vm;
	m->pdev = pdev;
	m->cap = cap;
	m->requester_id = requester_id;
	m->nr_vectors = MIN(nr_vectors, (unsigned int)PCI_MSIX_MAX_VECTORS);
	for (v = 0; v < m->nr_vectors; v++) {
		m->table[v].ctrl = MSIX_ENTRY_MASKED;
		m->fd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		m->gsi[v] = irq_msi_route_add(vm, requester_id, 0, 0);
		if (m->fd[v] < 0 || m->gsi[v] < 0 ||
		    irqfd_attach(vm, m->fd[v], m->gsi[v], -1))
			return -1;
	}
	return 0;
}

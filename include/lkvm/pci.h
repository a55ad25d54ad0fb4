/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PCI bus 0 behind a host bridge reached through configuration mechanism
 * #1 (ports 0xcf8/0xcfc, x86) or ECAM (arm64). Devices register a 256-byte
 * configuration space and optional hooks for registers with side effects
 * (BARs, MSI-X).
 */
#ifndef LKVM_PCI_H
#define LKVM_PCI_H

#include <stdint.h>

#define PCI_MAX_DEVICES		32
#define PCI_CFG_SIZE		256

struct pci_device;

struct pci_device_ops {
	/* Called after the generic write has updated cfg[]. */
	void (*cfg_write)(struct pci_device *pdev, unsigned int offset,
			  const void *data, unsigned int len);
};

/* Config space is guarded by the PCI host's lock; hooks run under it. */
struct pci_device {
	uint8_t cfg[PCI_CFG_SIZE];
	uint8_t wmask[PCI_CFG_SIZE];	/* writable bits of each byte */
	const struct pci_device_ops *ops;
	void *priv;
};

/* Config space fields are little-endian and need not be aligned. */
static inline uint16_t pci_get16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static inline uint32_t pci_get32(const uint8_t *p)
{
	return pci_get16(p) | (uint32_t)pci_get16(p + 2) << 16;
}

static inline void pci_put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void pci_put32(uint8_t *p, uint32_t v)
{
	pci_put16(p, v);
	pci_put16(p + 2, v >> 16);
}

struct vm;

/* Put pdev in a free slot of bus 0; returns the slot or -1. */
int pci_register_device(struct vm *vm, struct pci_device *pdev);

#endif

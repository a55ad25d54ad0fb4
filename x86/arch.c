// SPDX-License-Identifier: GPL-2.0
/*
 * The x86 PC board behind the arch interface: RAM split around the 32-bit
 * hole, the in-kernel irqchip (PIC, IOAPIC, LAPICs) and PIT, the legacy
 * devices, and the choice of loader for what the user gave us.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/boot_profile.h"
#include "lkvm/hw.h"
#include "lkvm/irq.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/cpu.h"
#include "lkvm/x86/layout.h"

/* Pages KVM needs for real-mode emulation on VMX, just below the firmware. */
#define X86_TSS_ADDR		0xfffbd000ULL
#define X86_IDENTITY_MAP_ADDR	0xfffbc000ULL

/*
 * What a boot with no -p gets: the console, and what saves a CI boot time
 * (each measured; README "Kernel command line"):
 *   panic=-1          a panicked guest reboots at once instead of hanging
 *                     (pvpanic still reports it first, exit 4);
 *   pci=noearly       no PCI scans before the PCI subsystem: on CPUs that
 *                     look like AMD family 0xf/0x10 (QEMU's TCG CPU, so
 *                     every nested CI boot here) Linux searches all 256
 *                     buses for an AGP bridge twice: 16k exits, 0.5-0.7 s;
 *                     the early quirks it also skips are for chipsets
 *                     lkvm does not emulate;
 *   no_timer_check    no test that the IO-APIC timer interrupt works: the
 *                     in-kernel IO-APIC and PIT are known good;
 *   8250.nr_uarts=1   no probing for COM2-COM4, which lkvm has not.
 */
const char arch_default_params[] =
	"console=ttyS0 panic=-1 pci=noearly no_timer_check 8250.nr_uarts=1";

const enum virtio_transport_kind arch_default_transport = VIRTIO_TRANSPORT_PCI;

unsigned int arch_ram_layout(uint64_t ram_bytes,
			     uint64_t ranges[ARCH_MAX_RAM_RANGES][2])
{
	uint64_t low = MIN(ram_bytes, X86_MMIO_HOLE_START);

	ranges[0][0] = 0;
	ranges[0][1] = low;
	if (ram_bytes == low)
		return 1;
	ranges[1][0] = X86_4G;
	ranges[1][1] = ram_bytes - low;
	return 2;
}

static int x86_create_irqchip(struct vm *vm)
{
	struct kvm_pit_config pit = { .flags = 0 };

	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, X86_TSS_ADDR) < 0) {
		pr_err("KVM_SET_TSS_ADDR: %s", strerror(errno));
		return -1;
	}
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_IDENTITY_MAP_ADDR) > 0) {
		uint64_t addr = X86_IDENTITY_MAP_ADDR;

		if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &addr) < 0) {
			pr_err("KVM_SET_IDENTITY_MAP_ADDR: %s", strerror(errno));
			return -1;
		}
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		pr_err("KVM_CREATE_IRQCHIP: %s", strerror(errno));
		return -1;
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		pr_err("KVM_CREATE_PIT2: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * RAM above 4 GiB must stay inside the physical addresses the vCPUs have:
 * KVM refuses the memory slot otherwise, with nothing but EINVAL.
 */
static int x86_check_ram_end(const struct arch_vm *arch, uint64_t mem_mib)
{
	unsigned int bits = x86_phys_addr_bits(arch->cpuid);
	uint64_t end = arch->ram_above_4g ? X86_4G + arch->ram_above_4g :
					    arch->ram_below_4g;
	uint64_t room;

	if (bits >= 64 || end <= (1ULL << bits))
		return 0;
	room = ((1ULL << bits) - (X86_4G - X86_MMIO_HOLE_START)) / MiB;
	pr_err("-m %llu: guest RAM would end at %llu GiB, beyond the %u-bit physical addresses of this KVM's vCPUs; at most -m %llu",
	       (unsigned long long)mem_mib, (unsigned long long)(end / GiB),
	       bits, (unsigned long long)room);
	return -1;
}

int arch_vm_init(struct vm *vm)
{
	struct arch_vm *arch = vm_zalloc(vm, sizeof(*arch));
	uint64_t ram = vm->cfg->mem_mib * MiB;

	if (!arch)
		return -1;
	vm->arch = arch;
	arch->ram_below_4g = MIN(ram, X86_MMIO_HOLE_START);
	arch->ram_above_4g = ram - arch->ram_below_4g;
	arch->cpuid = x86_get_supported_cpuid(vm->kvm_fd);
	if (!arch->cpuid || x86_check_ram_end(arch, vm->cfg->mem_mib))
		return -1;
	return x86_create_irqchip(vm);
}

void arch_vm_exit(struct vm *vm)
{
	if (vm->arch) {
		free(vm->arch->cpuid);
		vm->arch->cpuid = NULL;
	}
}

int arch_devices_init(struct vm *vm)
{
	struct arch_vm *arch = vm->arch;

	if (serial_init(vm, &vm->pio, X86_PORT_COM1, X86_IRQ_COM1) ||
	    i8042_init(vm, X86_PORT_I8042_DATA, X86_PORT_I8042_CMD) ||
	    rtc_init(vm, X86_PORT_RTC, arch->ram_below_4g, arch->ram_above_4g) ||
	    post_init(vm, X86_PORT_POST) ||
	    debug_exit_init(vm, &vm->pio, X86_PORT_DEBUG_EXIT) ||
	    boot_marker_init(vm, &vm->pio, BOOT_MARKER_PORT) ||
	    pvpanic_init(vm, X86_PORT_PVPANIC) ||
	    acpi_pm_init(vm, X86_PORT_PM1A_EVT, X86_PORT_PM1A_CNT,
			 X86_PORT_PM_TMR, X86_IRQ_SCI, X86_SLP_TYP_S5) ||
	    pci_host_init(vm, X86_PORT_PCI_CONFIG))
		return -1;
	return 0;
}

/*
 * kvm_pvm (and any KVM without VMX/SVM underneath) emulates every guest
 * instruction: it works, but Linux will not boot in useful time.
 */
int arch_kvm_is_software(int kvm_fd)
{
	(void)kvm_fd;
	return access("/sys/module/kvm_pvm", F_OK) == 0;
}

/*
 * The PC's irqchip routes: ISA IRQs 0-15 to both PICs and IOAPIC pins, PCI
 * pins 16-23 to the IOAPIC. IRQ 0 (the PIT) goes to IOAPIC pin 2, as the
 * MADT's interrupt source override tells the guest, and GSI 2 (the
 * cascade) has no route.
 */
unsigned int arch_irq_default_routes(struct kvm_irq_routing_entry *e,
				     unsigned int max)
{
	unsigned int gsi, n = 0;

	for (gsi = 0; gsi < X86_NR_GSIS && n + 2 <= max; gsi++) {
		if (gsi == 2)
			continue;
		if (gsi < 16)
			e[n++] = (struct kvm_irq_routing_entry) {
				.gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
				.u.irqchip = {
					.irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER
							   : KVM_IRQCHIP_PIC_SLAVE,
					.pin = gsi % 8,
				},
			};
		e[n++] = (struct kvm_irq_routing_entry) {
			.gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip = {
				.irqchip = KVM_IRQCHIP_IOAPIC,
				.pin = gsi == 0 ? 2 : gsi,
			},
		};
	}
	return n;
}

/*
 * virtio-mmio slots: 4 KiB each in their own window of the 32-bit hole,
 * with IOAPIC pins nothing else on the board uses (edge-triggered, as the
 * DSDT describes them); pins 16-19 are the PCI slots' INTx.
 */
static const uint8_t mmio_dev_gsis[] = {
	5, 6, 7, 10, 11, 20, 21, 22, 23,
};

#define X86_VIRTIO_MMIO_SLOT	0x1000

int arch_mmio_dev_slot(unsigned int n, uint64_t *base, uint32_t *size,
		       uint32_t *gsi)
{
	if (n >= ARRAY_SIZE(mmio_dev_gsis) ||
	    (n + 1) * X86_VIRTIO_MMIO_SLOT > X86_VIRTIO_MMIO_SIZE)
		return -1;
	*base = X86_VIRTIO_MMIO_START + n * X86_VIRTIO_MMIO_SLOT;
	*size = X86_VIRTIO_MMIO_SLOT;
	*gsi = mmio_dev_gsis[n];
	return 0;
}

void arch_pci_bar_window(uint64_t *mmio_base, uint64_t *io_base)
{
	*mmio_base = X86_PCI_MMIO_START;
	*io_base = X86_PCI_IO_START;
}

/* KVM_IRQ_LINE takes the GSI itself: PIC and IOAPIC pins per the routes. */
uint32_t arch_irq_line(unsigned int gsi)
{
	return gsi;
}

/* The swizzle the DSDT's _PRT describes: slot + pin over GSIs 16-19. */
uint32_t arch_pci_intx_gsi(unsigned int slot, unsigned int pin)
{
	return X86_PCI_INTX_GSI_BASE + (slot + pin) % 4;
}

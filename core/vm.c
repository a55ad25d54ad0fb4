// SPDX-License-Identifier: GPL-2.0
/*
 * VM lifetime: /dev/kvm and API checks, the VM file descriptor, guest RAM
 * slots, and the shared exit request that every thread may raise.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

struct required_cap {
	int cap;
	const char *name;
};

static const struct required_cap required_caps[] = {
	{ KVM_CAP_USER_MEMORY,	"KVM_CAP_USER_MEMORY" },
	{ KVM_CAP_IRQCHIP,	"KVM_CAP_IRQCHIP" },
	{ KVM_CAP_IOEVENTFD,	"KVM_CAP_IOEVENTFD" },
	{ KVM_CAP_IRQFD,	"KVM_CAP_IRQFD" },
	{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT" },
};

static enum kvm_kind kvm_open_failed(int err, char *why, size_t len)
{
	switch (err) {
	case ENOENT:
		snprintf(why, len, "/dev/kvm does not exist (no KVM on this machine, or the kvm module is not loaded)");
		return KVM_NONE;
	case ENODEV:
	case ENXIO:
		snprintf(why, len, "/dev/kvm does not answer: this kernel has no KVM registered (%s)",
			 strerror(err));
		return KVM_NONE;
	case EACCES:
	case EPERM:
		snprintf(why, len, "cannot open /dev/kvm: %s (add yourself to the kvm group)",
			 strerror(err));
		return KVM_UNUSABLE;
	default:
		snprintf(why, len, "cannot open /dev/kvm: %s", strerror(err));
		return KVM_UNUSABLE;
	}
}

int kvm_device_open(enum kvm_kind *kind, char *why, size_t len)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int version;

	if (fd < 0) {
		*kind = kvm_open_failed(errno, why, len);
		return -1;
	}
	version = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (version < 0 || version != KVM_API_VERSION) {
		if (version < 0)
			snprintf(why, len, "/dev/kvm is not a KVM device (KVM_GET_API_VERSION: %s)",
				 strerror(errno));
		else
			snprintf(why, len, "/dev/kvm speaks KVM API %d, lkvm needs %d",
				 version, KVM_API_VERSION);
		close(fd);
		*kind = KVM_UNUSABLE;
		return -1;
	}
	*kind = arch_kvm_is_software(fd) ? KVM_SOFTWARE : KVM_HARDWARE;
	return fd;
}

static int kvm_open(struct vm *vm)
{
	enum kvm_kind kind;
	char why[160];
	unsigned int i;

	vm->kvm_fd = kvm_device_open(&kind, why, sizeof(why));
	if (vm->kvm_fd < 0) {
		pr_err("%s", why);
		return -1;
	}
	vm->software_kvm = kind == KVM_SOFTWARE;
	for (i = 0; i < ARRAY_SIZE(required_caps); i++) {
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION,
			  required_caps[i].cap) <= 0) {
			pr_err("/dev/kvm lacks %s, which lkvm needs",
			       required_caps[i].name);
			return -1;
		}
	}
	vm->vcpu_mmap_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->vcpu_mmap_size < (int)sizeof(struct kvm_run)) {
		pr_err("KVM_GET_VCPU_MMAP_SIZE failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int vm_check_cpus(struct vm *vm)
{
	int max = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);

	if (max <= 0)
		max = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_VCPUS);
	if (max <= 0)
		max = 4;	/* what the KVM API documents as the fallback */
	if (vm->cfg->nr_cpus > (unsigned int)max) {
		pr_err("-c %u: this KVM supports at most %d vCPUs",
		       vm->cfg->nr_cpus, max);
		return -1;
	}
	return 0;
}

int vm_init(struct vm *vm, const struct vm_config *cfg)
{
	memset(vm, 0, sizeof(*vm));
	vm->cfg = cfg;
	vm->kvm_fd = vm->vm_fd = vm->exit_efd = -1;
	vm->nr_vcpus = cfg->nr_cpus;
	pthread_mutex_init(&vm->exit_lock, NULL);
	pthread_mutex_init(&vm->alloc_lock, NULL);
	pthread_mutex_init(&vm->coalesced_lock, NULL);
	pthread_mutex_init(&vm->pause_lock, NULL);
	pthread_cond_init(&vm->pause_cond, NULL);
	boot_profile_init(vm);
	vm->exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->exit_efd < 0) {
		pr_err("eventfd: %s", strerror(errno));
		return -1;
	}
	if (bus_init(&vm->pio, "pio") || bus_init(&vm->mmio, "mmio")) {
		pr_err("out of memory");
		return -1;
	}
	return 0;
}

int vm_create(struct vm *vm, const struct vm_config *cfg)
{
	if (vm_init(vm, cfg) || kvm_open(vm) || vm_check_cpus(vm))
		return -1;
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		pr_err("KVM_CREATE_VM failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int vm_ioctl(struct vm *vm, unsigned long req, void *arg)
{
	if (vm->kvm_ops)
		return vm->kvm_ops->vm_ioctl(vm, req, arg);
	return ioctl(vm->vm_fd, req, arg);
}

bool vm_has_cap(struct vm *vm, long cap)
{
	if (vm->kvm_ops)
		return vm->kvm_ops->vm_ioctl(vm, KVM_CHECK_EXTENSION,
					     (void *)(uintptr_t)cap) > 0;
	return ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, cap) > 0;
}

int vm_ioeventfd(struct vm *vm, uint64_t addr, uint32_t len, bool pio,
		 uint64_t datamatch, int fd, bool assign)
{
	struct kvm_ioeventfd ioev = {
		.addr = addr,
		.len = len,
		.fd = fd,
		.datamatch = datamatch,
		.flags = KVM_IOEVENTFD_FLAG_DATAMATCH |
			 (pio ? KVM_IOEVENTFD_FLAG_PIO : 0) |
			 (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
	};

	if (vm_ioctl(vm, KVM_IOEVENTFD, &ioev) < 0) {
		pr_err("KVM_IOEVENTFD %s %s %#llx: %s",
		       assign ? "at" : "off", pio ? "port" : "address",
		       (unsigned long long)addr, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Guest RAM starts on a huge-page boundary and asks for transparent huge
 * pages: KVM can then map the guest 2 MiB at a time (guest-physical and
 * host-virtual addresses must agree modulo 2 MiB for that), which saves
 * the guest a stage-2 fault per 4 KiB page as it boots and TLB misses as
 * it runs. Where THP is off, madvise() fails and nothing changes.
 */
#define RAM_ALIGN	(2 * MiB)

static void *map_guest_ram(uint64_t size)
{
	size_t len = size + RAM_ALIGN;
	uint8_t *p, *ram;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	ram = (uint8_t *)(((uintptr_t)p + RAM_ALIGN - 1) & ~(RAM_ALIGN - 1));
	if (ram > p)
		munmap(p, ram - p);
	munmap(ram + size, p + len - (ram + size));
	madvise(ram, size, MADV_HUGEPAGE);
	return ram;
}

/*
 * All RAM lives in one anonymous mapping, sliced into KVM slots. The
 * mapping is NORESERVE so that a large -m costs only what the guest touches.
 */
int vm_setup_ram(struct vm *vm, const uint64_t (*ranges)[2],
		 unsigned int nr_ranges)
{
	uint64_t total = 0, offset = 0;
	unsigned int i;

	for (i = 0; i < nr_ranges; i++)
		total += ranges[i][1];
	vm->ram = map_guest_ram(total);
	if (!vm->ram) {
		pr_err("cannot map %llu MiB of guest RAM: %s",
		       (unsigned long long)(total / MiB), strerror(errno));
		return -1;
	}
	vm->ram_size = total;
	for (i = 0; i < nr_ranges; i++) {
		struct kvm_userspace_memory_region region = {
			.slot = i,
			.guest_phys_addr = ranges[i][0],
			.memory_size = ranges[i][1],
			.userspace_addr = (uintptr_t)vm->ram + offset,
		};

		if (vm_ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
			pr_err("KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
			return -1;
		}
		if (guest_mem_add(&vm->mem, ranges[i][0], ranges[i][1],
				  (uint8_t *)vm->ram + offset))
			return -1;
		offset += ranges[i][1];
	}
	return 0;
}

struct vm_alloc {
	struct vm_alloc *next;
	max_align_t data[];
};

void *vm_zalloc(struct vm *vm, size_t size)
{
	struct vm_alloc *a = calloc(1, sizeof(*a) + size);

	if (!a) {
		pr_err("out of memory");
		return NULL;
	}
	pthread_mutex_lock(&vm->alloc_lock);
	a->next = vm->allocs;
	vm->allocs = a;
	pthread_mutex_unlock(&vm->alloc_lock);
	return a->data;
}

static void vm_free_allocs(struct vm *vm)
{
	while (vm->allocs) {
		struct vm_alloc *a = vm->allocs;

		vm->allocs = a->next;
		free(a);
	}
}

void vm_destroy(struct vm *vm)
{
	vm_free_allocs(vm);
	free(vm->vcpus);
	vm->vcpus = NULL;
	if (vm->ram)
		munmap(vm->ram, vm->ram_size);
	vm->ram = NULL;
	bus_exit(&vm->pio);
	bus_exit(&vm->mmio);
	if (vm->exit_efd >= 0)
		close(vm->exit_efd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm->exit_efd = vm->vm_fd = vm->kvm_fd = -1;
}

void vm_request_exit(struct vm *vm, int code, const char *fmt, ...)
{
	uint64_t one = 1;
	va_list ap;

	boot_mark(vm, BOOT_EXIT);
	pthread_mutex_lock(&vm->exit_lock);
	if (!vm->exiting) {
		vm->exiting = true;
		vm->exit_code = code;
		va_start(ap, fmt);
		vsnprintf(vm->exit_reason, sizeof(vm->exit_reason), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&vm->exit_lock);
	if (write(vm->exit_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn("cannot wake the main loop: %s", strerror(errno));
}

void vm_guest_exit(struct vm *vm, uint8_t status)
{
	pthread_mutex_lock(&vm->exit_lock);
	if (!vm->exiting)
		vm->exit_chosen_by_guest = true;
	pthread_mutex_unlock(&vm->exit_lock);
	vm_request_exit(vm, status, "guest exit status %u", status);
}

bool vm_is_exiting(struct vm *vm)
{
	bool exiting;

	pthread_mutex_lock(&vm->exit_lock);
	exiting = vm->exiting;
	pthread_mutex_unlock(&vm->exit_lock);
	return exiting;
}

void vm_coalesce_pio(struct vm *vm, uint16_t port, uint32_t size)
{
	struct kvm_coalesced_mmio_zone zone = {
		.addr = port, .size = size, .pio = 1,
	};

	if (!vm_has_cap(vm, KVM_CAP_COALESCED_PIO) ||
	    !vm_has_cap(vm, KVM_CAP_COALESCED_MMIO))
		return;
	if (vm_ioctl(vm, KVM_REGISTER_COALESCED_MMIO, &zone) < 0)
		pr_debug("cannot coalesce port %#x: %s", port, strerror(errno));
}

void vm_irq_line(struct vm *vm, unsigned int gsi, int level)
{
	struct kvm_irq_level irq = { .irq = arch_irq_line(gsi), .level = level };

	if (vm_ioctl(vm, KVM_IRQ_LINE, &irq) < 0)
		pr_warn_once("KVM_IRQ_LINE %u: %s", gsi, strerror(errno));
}

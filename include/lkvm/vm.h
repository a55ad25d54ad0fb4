/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The virtual machine: its configuration (what the user asked for), the KVM
 * handles, guest RAM, the I/O buses and the vCPUs, and the one way a VM ends
 * (vm_request_exit), whoever asks for it.
 */
#ifndef LKVM_VM_H
#define LKVM_VM_H

#include <pthread.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lkvm/boot_profile.h"
#include "lkvm/bus.h"
#include "lkvm/disk.h"
#include "lkvm/guest_mem.h"
#include "lkvm/net.h"
#include "lkvm/virtio/poll.h"
#include "lkvm/virtio/transport_kind.h"

/* Exit statuses of `lkvm run`; a guest may also choose any 0-255 itself. */
#define EXIT_POWEROFF		0	/* guest powered off (ACPI S5) */
#define EXIT_VMM_ERROR		1	/* bad option, missing file, KVM failure */
#define EXIT_GUEST_CRASH	2	/* triple fault, emulation failure */
#define EXIT_GUEST_REBOOT	3	/* reboot request, without --reboot */
#define EXIT_GUEST_PANIC	4	/* panic reported through pvpanic */
#define EXIT_TIMEOUT		124	/* --timeout expired */

#define LKVM_MAX_CPUS		255	/* xAPIC IDs, one MADT/MP entry each */
#define LKVM_MAX_MEM_MIB	(1024ULL * 1024)	/* 1 TiB */
#define LKVM_MAX_DISKS		8
#define LKVM_MAX_SHARES		8

/* -d PATH[,...]: a virtio-blk disk; its strings are kept in buf. */
struct disk_config {
	struct disk_params disk;	/* how the image is opened */
	enum virtio_poll_mode poll;	/* poll=; VIRTIO_POLL_UNSET: --poll's */
	char buf[2 * PATH_MAX];		/* the path, backing-dir= */
};

/* --9p HOSTDIR,TAG[,ro]: a host directory the guest mounts by its tag. */
struct share_config {
	char path[PATH_MAX];
	char tag[65];			/* VIRTIO_9P_TAG_MAX + 1 */
	bool ro;
};
#define LKVM_MAX_NICS		4

/* --irqchip; the default is the arch's (the PC's, or a GICv3). */
enum vm_irqchip {
	VM_IRQCHIP_DEFAULT,
	VM_IRQCHIP_GICV3,
	VM_IRQCHIP_GICV2,
};

/* What the user asked for; filled by the CLI, read-only afterwards. */
struct vm_config {
	const char *kernel;
	const char *initrd;
	const char *params;		/* the whole command line; NULL: the
					   arch's default (after the CLI,
					   --append is in it) */
	const char *append;		/* --append's words */
	const char *firmware;
	const char *name;
	const char *stats_path;
	uint64_t mem_mib;
	unsigned int nr_cpus;
	unsigned int timeout_s;		/* 0: none */
	double deadline_ms;		/* CLOCK_MONOTONIC end of --timeout */
	bool reboot;			/* restart the guest on reboot */
	unsigned int nr_disks;
	struct disk_config disks[LKVM_MAX_DISKS];
	unsigned int nr_nics;
	struct net_config nics[LKVM_MAX_NICS];
	unsigned int nr_shares;
	struct share_config shares[LKVM_MAX_SHARES];
	bool root_share;		/* -d DIR: shares[0] is the root fs */
	enum virtio_transport_kind transport;
	enum vm_irqchip irqchip;	/* --irqchip: arm64's GIC version */
	const char *dump_dtb;		/* --dump-dtb: arm64's tree, also here */
	bool rng;			/* --rng: a virtio-rng device */
	bool balloon;			/* --balloon: a virtio-balloon device */
	bool virtio_console;		/* --console virtio: hvc0, and input
					   goes there, not to the UART */
	bool no_ioeventfd;		/* serve notifies in vCPU threads */
	bool no_seccomp;		/* run without seccomp filters */
	bool no_landlock;		/* run without Landlock */
	bool boot_profile;		/* --boot-profile: print it at exit */
	struct virtio_poll_config poll;	/* --poll; devices' poll= override */
	unsigned int nr_iothreads;	/* --iothreads; 0: per device/pair */
	bool mmio_cmdline;		/* virtio_mmio.device= on the cmdline */
	bool default_guest;		/* kernel/initrd/params came from the cache */
};

struct vcpu_stats {
	uint64_t exits;
	uint64_t io;
	uint64_t mmio;
	uint64_t hlt;
	uint64_t intr;			/* KVM_RUN interrupted by a signal */
	uint64_t other;
	uint64_t handle_ns;		/* time in lkvm between KVM_RUNs, when
					   --boot-profile or --stats asks */
};

/* Owned by its vCPU thread; the main thread reads stats after the join. */
struct vcpu {
	struct vm *vm;
	unsigned int id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	struct vcpu_stats stats;
};

struct arch_vm;
struct vm_alloc;
struct vm;

/*
 * A stand-in for KVM behind the VM's own ioctls (unit tests: guest memory,
 * ioeventfds, irqfds and GSI routes recorded instead of made; see
 * tests/unit/fake_vm.c). vm_ioctl() gets the KVM_* request and argument of
 * a VM-fd ioctl, and KVM_CHECK_EXTENSION with the capability as argument.
 */
struct vm_kvm_ops {
	int (*vm_ioctl)(struct vm *vm, unsigned long req, void *arg);
};

/* A memory-mapped device the firmware tables must announce (virtio-mmio). */
#define VM_MAX_MMIO_DEVS	32
struct vm_mmio_dev {
	uint64_t base;
	uint32_t size;
	uint32_t gsi;
};
struct irq_routing;
struct vm_devices;
struct iothread;
struct kvm_coalesced_mmio_ring;

/*
 * Built by the main thread before any other thread starts. After that the
 * fields are read-only except: exit_code/exit_reason (first writer wins,
 * under exit_lock), and the buses (their own rwlock).
 */
struct vm {
	const struct vm_config *cfg;
	int kvm_fd;
	int vm_fd;
	const struct vm_kvm_ops *kvm_ops;	/* NULL: the real KVM */
	int vcpu_mmap_size;
	bool software_kvm;

	void *ram;			/* one host mapping for all RAM regions */
	uint64_t ram_size;
	struct guest_mem mem;

	struct bus pio;
	struct bus mmio;

	unsigned int nr_vcpus;
	struct vcpu *vcpus;

	/*
	 * Pausing (lkvm pause): the main thread sets pause_requested and
	 * kicks the vCPUs out of KVM_RUN; each parks in vcpu_park() and
	 * counts itself in nr_parked until it is resumed or stopped
	 * (vcpus_stopping). All four under pause_lock, which pause_cond
	 * goes with, waking both sides.
	 */
	pthread_mutex_t pause_lock;
	pthread_cond_t pause_cond;
	bool pause_requested;
	bool vcpus_stopping;
	unsigned int nr_parked;
	double start_ms;		/* now_ms() when vm_run began */

	pthread_mutex_t exit_lock;
	bool exiting;
	int exit_code;
	bool exit_chosen_by_guest;	/* debug-exit: not worth a warning */
	char exit_reason[96];
	int exit_efd;			/* wakes the main loop */

	struct arch_vm *arch;
	struct irq_routing *irq;	/* core/irq.c, its own lock */
	struct vm_devices *devices;	/* core/devices.c */
	struct boot_profile boot;	/* its own lock */

	/*
	 * Coalesced writes (KVM_CAP_COALESCED_PIO): KVM queues them in this
	 * ring instead of exiting; a vCPU drains it, under coalesced_lock,
	 * before it handles any exit, so devices see every access in order.
	 */
	struct kvm_coalesced_mmio_ring *coalesced_ring;
	unsigned int coalesced_max;	/* entries in the ring's page */
	pthread_mutex_t coalesced_lock;

	/* Filled while devices are created, before the tables are built. */
	unsigned int nr_mmio_devs;
	struct vm_mmio_dev mmio_devs[VM_MAX_MMIO_DEVS];

	/* Every I/O thread made for the VM, for --stats (main thread). */
	struct iothread *iothreads;

	/* Device state allocated by vm_zalloc(), freed by vm_destroy(). */
	pthread_mutex_t alloc_lock;
	struct vm_alloc *allocs;
};

/* Zeroed memory that lives until vm_destroy(); NULL + message on failure. */
void *vm_zalloc(struct vm *vm, size_t size);

/* Ask the VM to stop with this status; only the first request counts. */
void vm_request_exit(struct vm *vm, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool vm_is_exiting(struct vm *vm);
/* The guest ends the VM with a status of its choice (debug-exit). */
void vm_guest_exit(struct vm *vm, uint8_t status);

/*
 * Let KVM buffer writes to these ports instead of exiting (the guest must
 * not need a write's effect before its next exit). Falls back to normal
 * exits when KVM cannot.
 */
void vm_coalesce_pio(struct vm *vm, uint16_t port, uint32_t size);

/* Raise or lower a legacy interrupt line of the in-kernel irqchip. */
void vm_irq_line(struct vm *vm, unsigned int gsi, int level);

/* What /dev/kvm is on this machine. */
enum kvm_kind {
	KVM_NONE,		/* no /dev/kvm, or no KVM behind it */
	KVM_UNUSABLE,		/* there, but not ours: permissions, not KVM */
	KVM_SOFTWARE,		/* emulates every guest instruction (kvm_pvm) */
	KVM_HARDWARE,
};

/*
 * Open /dev/kvm and check its API version: the fd and *kind, or -1 with
 * *kind KVM_NONE or KVM_UNUSABLE and why[] the sentence to show the user.
 */
int kvm_device_open(enum kvm_kind *kind, char *why, size_t len);

/* The VM's state short of KVM (exit eventfd, buses, locks); -1 + message. */
int vm_init(struct vm *vm, const struct vm_config *cfg);
/* vm_init(), then /dev/kvm and a VM on it; -1 + message. */
int vm_create(struct vm *vm, const struct vm_config *cfg);

/* A KVM ioctl on the VM (or on its stand-in); as ioctl(2). */
int vm_ioctl(struct vm *vm, unsigned long req, void *arg);
bool vm_has_cap(struct vm *vm, long cap);
/*
 * Bind fd to guest writes of datamatch (len bytes) at a guest address or
 * port, or undo it: KVM then signals fd instead of exiting. -1 + message.
 */
int vm_ioeventfd(struct vm *vm, uint64_t addr, uint32_t len, bool pio,
		 uint64_t datamatch, int fd, bool assign);
int vm_setup_ram(struct vm *vm, const uint64_t (*ranges)[2],
		 unsigned int nr_ranges);
void vm_destroy(struct vm *vm);

int vcpus_create(struct vm *vm);
/* After the guest is loaded: each vCPU's entry state (arch_vcpu_boot). */
int vcpus_boot(struct vm *vm);
int vcpus_start(struct vm *vm);
/* vcpus_stop() ends the vCPU threads; vcpus_destroy() also frees the vCPUs. */
void vcpus_stop(struct vm *vm);
/* After vcpus_stop(): one line per vCPU, where it was and in what state. */
void vcpus_report(struct vm *vm);
void vcpus_destroy(struct vm *vm);

/*
 * Main thread: take every vCPU out of KVM_RUN and keep it out until
 * vcpus_resume(). -1 when one has not stopped within timeout_ms (it stays
 * asked to). Device I/O in flight completes meanwhile; the guest sees
 * the time it was paused pass (kvmclock is told, so it does not take the
 * pause for a soft lockup).
 */
int vcpus_pause(struct vm *vm, unsigned int timeout_ms);
void vcpus_resume(struct vm *vm);
bool vcpus_paused(struct vm *vm);
/* Each vCPU's registers for a person; the vCPUs must be paused. */
void vcpus_dump(struct vm *vm, FILE *f);

/*
 * The whole `lkvm run`: returns the exit status; *reboot tells whether the
 * guest asked for a reboot (a guest-chosen status 3 is not one).
 */
int vm_run(const struct vm_config *cfg, bool *reboot);

#endif

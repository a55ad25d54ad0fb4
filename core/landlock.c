// SPDX-License-Identifier: GPL-2.0
/*
 * Landlock confinement (see include/lkvm/landlock.h), with raw syscalls:
 * glibc has no wrappers, and Debian 12's <linux/landlock.h> (6.1) stops at
 * ABI 2, so the later rights are spelled out here with their ABI.
 *
 * Every right the kernel's ABI knows is handled, so whatever no rule
 * grants is refused. The rules:
 *   --9p share, read-only    read files, list directories
 *   --9p share, read-write   and write, truncate, make and remove files,
 *                            directories, symlinks, FIFOs and sockets,
 *                            rename and link within it (never a device:
 *                            the 9p server makes none)
 *   -d image                 read it; write it unless ro (the fd lkvm
 *                            holds already can: nothing else is opened)
 *   kernel, initrd, the      read: the doctor maps them at exit to say
 *   config beside the kernel why a device went unused
 *   --stats FILE             write and truncate it (made at set-up)
 *   /proc/self/status, statm read: --stats and lkvm stat
 *   the control directory    remove a file: the VM's socket at exit
 *   /etc/resolv.conf         read, for -n user: libslirp rereads it
 * Nothing may be executed, and no device opened (IOCTL_DEV, from ABI 5).
 * TCP (from ABI 4): no connect() and no bind() at all, but for -n user
 * without restrict=on, whose guest connects anywhere and whose FTP and
 * IRC helpers listen on ephemeral ports. From ABI 6: no abstract UNIX
 * socket outside, and (once the kernel lets a process's threads signal
 * each other across their own domains: erratum 2) no signal to another
 * process. Taps, disks and /dev/kvm are opened before and used through
 * their fds, which Landlock does not take back.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lkvm/doctor.h"
#include "lkvm/landlock.h"
#include "lkvm/util.h"

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE		(1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV		(1ULL << 15)	/* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP		(1ULL << 0)	/* ABI 4 */
#define LANDLOCK_ACCESS_NET_CONNECT_TCP		(1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET	(1ULL << 0)	/* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL			(1ULL << 1)
#endif
#ifndef LANDLOCK_CREATE_RULESET_ERRATA
#define LANDLOCK_CREATE_RULESET_ERRATA		(1U << 1)
#endif
#define LL_RULE_NET_PORT		2	/* LANDLOCK_RULE_NET_PORT */
#define LL_ERRATUM_SIGNAL_THREADS	(1U << 1)	/* erratum 2, ABI 6 */

#define FS(r)		LANDLOCK_ACCESS_FS_##r
#define FS_READ		(FS(READ_FILE) | FS(READ_DIR))
#define FS_WRITE_TREE	(FS(WRITE_FILE) | FS(TRUNCATE) | FS(REMOVE_DIR) |     \
			 FS(REMOVE_FILE) | FS(MAKE_DIR) | FS(MAKE_REG) |      \
			 FS(MAKE_SOCK) | FS(MAKE_FIFO) | FS(MAKE_SYM) |       \
			 FS(REFER))
/* What a rule on a file (not a directory) may grant. */
#define FS_FILE		(FS(EXECUTE) | FS(WRITE_FILE) | FS(READ_FILE) |       \
			 FS(TRUNCATE) | FS(IOCTL_DEV))
#define MAX_PINS	8

/* The UAPI's struct as of ABI 6; older kernels take a prefix of it. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_net_port {
	uint64_t allowed_access;
	uint64_t port;
};

/*
 * Built by the main thread during set-up; each thread reads ruleset when
 * it confines itself (the slirp thread while rules are still added: the
 * kernel takes a ruleset's state at landlock_restrict_self()).
 */
static struct {
	int ruleset;			/* -1: not confining */
	int abi;
	uint64_t handled_fs;
	int pins[MAX_PINS];
	unsigned int nr_pins;
} ll = { .ruleset = -1 };

static long ll_create(const struct ll_ruleset_attr *attr, size_t size,
		      uint32_t flags)
{
	return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static uint64_t fs_rights(int abi)
{
	uint64_t r = (FS(MAKE_SYM) << 1) - 1;	/* ABI 1: bits 0-12 */

	if (abi >= 2)
		r |= FS(REFER);
	if (abi >= 3)
		r |= FS(TRUNCATE);
	if (abi >= 5)
		r |= FS(IOCTL_DEV);
	return r;
}

/* Whether a -n user card's guest may connect anywhere (no restrict=on). */
static bool open_user_net(const struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_nics; i++)
		if (cfg->nics[i].mode == NET_MODE_USER &&
		    !cfg->nics[i].restricted)
			return true;
	return false;
}

static bool has_user_net(const struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_nics; i++)
		if (cfg->nics[i].mode == NET_MODE_USER)
			return true;
	return false;
}

static bool has_rw_share(const struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_shares; i++)
		if (!cfg->shares[i].ro)
			return true;
	return false;
}

static int allow_fd(int fd, uint64_t rights, const char *what)
{
	struct landlock_path_beneath_attr pb = { .parent_fd = fd };
	struct stat st;

	if (fstat(fd, &st)) {
		pr_err("landlock: %s: %s", what, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		rights &= FS_FILE;
	pb.allowed_access = rights & ll.handled_fs;
	if (!pb.allowed_access)
		return 0;
	if (syscall(SYS_landlock_add_rule, ll.ruleset,
		    LANDLOCK_RULE_PATH_BENEATH, &pb, 0)) {
		/* a memfd, a pipe: nothing Landlock confines takes a rule */
		if (errno == EBADFD)
			return 0;
		pr_err("landlock: cannot allow %s: %s (--no-landlock runs without)",
		       what, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * What is not there is nothing to allow. A rule holds its inode; procfs
 * makes a new one for a name whose dentry the kernel dropped, so its
 * rules keep their fd open (pin), which holds the dentry.
 */
static int allow_path(const char *path, uint64_t rights, bool pin)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return 0;
	ret = allow_fd(fd, rights, path);
	if (!ret && pin && ll.nr_pins < MAX_PINS)
		ll.pins[ll.nr_pins++] = fd;
	else
		close(fd);
	return ret;
}

/* The directory a path is in, for a right on its entries. */
static int allow_parent(const char *path, uint64_t rights)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash)
		return allow_path(".", rights, false);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + !(slash - path)),
		 path);
	return allow_path(dir, rights, false);
}

#ifdef LKVM_SANITIZED
/*
 * ASan/LSan builds: the leak check at exit reads /proc/self/maps and
 * each thread's status under /proc/self/task; a report symbolizes from
 * the binary and its libraries, each one of the files mapped now.
 */
static int allow_sanitizer(void)
{
	char line[PATH_MAX + 128];
	FILE *f;

	if (allow_path("/proc/self/maps", FS(READ_FILE), true) ||
	    allow_path("/proc/self/task", FS_READ, true))
		return -1;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		allow_path(path, FS(READ_FILE), false);
	}
	fclose(f);
	return 0;
}
#else
static int allow_sanitizer(void)
{
	return 0;
}
#endif

static void ll_reset(void)
{
	while (ll.nr_pins)
		close(ll.pins[--ll.nr_pins]);
	if (ll.ruleset >= 0)
		close(ll.ruleset);
	ll.ruleset = -1;
	ll.abi = 0;
}

/* The ABI, or 0 after saying (at -v) why lkvm runs without Landlock. */
static int usable_abi(const struct vm_config *cfg)
{
	long abi = ll_create(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (abi < 0) {
		pr_info("landlock: %s: lkvm confines its threads with seccomp alone",
			errno == ENOSYS ? "this kernel has no Landlock" :
			errno == EOPNOTSUPP ? "Landlock is off in this kernel (lsm= at boot)" :
			strerror(errno));
		return 0;
	}
	/* ABI 1 refuses every rename or link into another directory */
	if (abi < 2 && has_rw_share(cfg)) {
		pr_info("landlock: ABI 1 would break renames across directories in a writable --9p share: lkvm confines its threads with seccomp alone");
		return 0;
	}
	return abi;
}

int landlock_prepare(const struct vm_config *cfg)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t size = sizeof(attr.handled_access_fs);
	bool ephemeral_bind = false;
	long errata;
	int abi;

	ll_reset();
	if (cfg->no_landlock || !(abi = usable_abi(cfg)))
		return 0;
	ll.handled_fs = attr.handled_access_fs = fs_rights(abi);
	if (abi >= 4) {
		ephemeral_bind = open_user_net(cfg);
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
			(ephemeral_bind ? 0 : LANDLOCK_ACCESS_NET_CONNECT_TCP);
		size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		errata = ll_create(NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA);
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
		if (errata > 0 && (errata & LL_ERRATUM_SIGNAL_THREADS))
			attr.scoped |= LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	ll.ruleset = ll_create(&attr, size, 0);
	if (ll.ruleset < 0) {
		pr_err("landlock: cannot make a ruleset (ABI %d): %s (--no-landlock runs without)",
		       abi, strerror(errno));
		return -1;
	}
	ll.abi = abi;
	if (ephemeral_bind) {
		struct ll_net_port port = {
			.allowed_access = LANDLOCK_ACCESS_NET_BIND_TCP,
		};

		if (syscall(SYS_landlock_add_rule, ll.ruleset,
			    LL_RULE_NET_PORT, &port, 0)) {
			pr_err("landlock: cannot allow ephemeral TCP ports: %s (--no-landlock runs without)",
			       strerror(errno));
			return -1;
		}
	}
	if ((has_user_net(cfg) &&
	     allow_path("/etc/resolv.conf", FS(READ_FILE), false)) ||
	    allow_sanitizer())
		return -1;
	pr_info("landlock: ABI %d: once set up, lkvm reaches only the files it was given", abi);
	return 0;
}

static int allow_shares(const struct vm_config *cfg, const int *share_fds)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_shares; i++)
		if (share_fds[i] >= 0 &&
		    allow_fd(share_fds[i], cfg->shares[i].ro ? FS_READ :
			     FS_READ | FS_WRITE_TREE, cfg->shares[i].path))
			return -1;
	return 0;
}

static int allow_disks(const struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_disks; i++)
		if (allow_path(cfg->disks[i].disk.path, FS(READ_FILE) |
			       (cfg->disks[i].disk.readonly ? 0 : FS(WRITE_FILE)),
			       false))
			return -1;
	return 0;
}

/* What the kernel doctor reads at exit (core/doctor.c). */
static int allow_doctor(const struct vm_config *cfg)
{
	char config[PATH_MAX];

	if (cfg->kernel && (allow_path(cfg->kernel, FS(READ_FILE), false) ||
			    (doctor_config_path(cfg->kernel, config,
						sizeof(config)) &&
			     allow_path(config, FS(READ_FILE), false))))
		return -1;
	return cfg->initrd ? allow_path(cfg->initrd, FS(READ_FILE), false) : 0;
}

int landlock_allow_vm(const struct vm_config *cfg, const int *share_fds,
		      const char *control_sock)
{
	bool stats = cfg->stats_path && strcmp(cfg->stats_path, "-");

	if (ll.ruleset < 0)
		return 0;
	if (allow_shares(cfg, share_fds) || allow_disks(cfg) ||
	    allow_doctor(cfg) ||
	    (stats && allow_path(cfg->stats_path,
				 FS(WRITE_FILE) | FS(TRUNCATE), false)))
		return -1;
	if ((cfg->stats_path || control_sock) &&
	    (allow_path("/proc/self/status", FS(READ_FILE), true) ||
	     allow_path("/proc/self/statm", FS(READ_FILE), true)))
		return -1;
	return control_sock ? allow_parent(control_sock, FS(REMOVE_FILE)) : 0;
}

int landlock_confine(const char *who)
{
	if (ll.ruleset < 0)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_landlock_restrict_self, ll.ruleset, 0)) {
		pr_err("landlock: cannot confine the %s thread: %s (--no-landlock runs without)",
		       who, strerror(errno));
		return -1;
	}
	return 0;
}

int landlock_abi(void)
{
	return ll.abi;
}

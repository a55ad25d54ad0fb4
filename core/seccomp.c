// SPDX-License-Identifier: GPL-2.0
/*
 * seccomp-bpf confinement (see include/lkvm/seccomp.h).
 *
 * The lists come from what each thread class was seen to call under
 * strace over the whole test suite, plus what glibc does underneath
 * (malloc's arenas: mmap, mprotect, madvise, mremap; futexes; vDSO
 * fallbacks; abort() and raise() on a fatal signal) and what the code
 * paths no test reaches would call (grep every syscall wrapper). Set-up
 * (loading the guest, opening disks, taps, /dev/kvm, libslirp with
 * dlopen) happens before any filter, so none of it is listed.
 *
 * Arguments are checked where it is cheap and worth it: ioctl requests
 * (a vCPU thread may run KVM_RUN and the few VM ioctls its exits need,
 * never another fd's requests), no executable mappings anywhere, the
 * sockets the slirp thread may make, read-only opens for it, and which
 * signal's action may change (only back to the default, on the fatal
 * path). The filters are built here with libseccomp, which writes the
 * architecture check, the x32 guard and the search for us, and are
 * exported as plain BPF so that each thread installs its own with one
 * syscall: nothing to allocate, nothing to fail half-way.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_tun.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/console.h"
#include "lkvm/landlock.h"
#include "lkvm/seccomp.h"
#include "lkvm/util.h"

#define ARG_NONE	6u		/* a rule on the number alone */
#define MASK_INT	0xffffffffull	/* the kernel reads an int/uint */

/* Allowed when (argument arg & mask) == value. */
struct sc_rule {
	int nr;
	unsigned int arg;
	uint64_t mask;
	uint64_t value;
};

#define ALLOW(name)		{ SCMP_SYS(name), ARG_NONE, 0, 0 }
#define ALLOW_IF(name, a, v)	{ SCMP_SYS(name), a, MASK_INT, v }
#define ALLOW_MASKED(name, a, m, v) { SCMP_SYS(name), a, m, v }
#define IOCTL(req)		ALLOW_IF(ioctl, 1, req)

/* Every thread: glibc's own needs, logging, and the ways out. */
static const struct sc_rule base_rules[] = {
	ALLOW(read), ALLOW(write), ALLOW(readv), ALLOW(writev), ALLOW(close),
	ALLOW(futex), ALLOW(brk), ALLOW(munmap), ALLOW(madvise), ALLOW(mremap),
	/* malloc's arenas and thread stacks; nothing becomes executable */
	ALLOW_MASKED(mmap, 2, PROT_EXEC, 0),
	ALLOW_MASKED(mprotect, 2, PROT_EXEC, 0),
	/* the vDSO's fallbacks */
	ALLOW(clock_gettime), ALLOW(clock_getres), ALLOW(gettimeofday),
	ALLOW(time), ALLOW(clock_nanosleep), ALLOW(nanosleep),
	ALLOW(sched_yield),
	ALLOW(rt_sigreturn), ALLOW(rt_sigprocmask), ALLOW(restart_syscall),
	ALLOW(getpid), ALLOW(gettid),
	/* raise() and abort() on the fatal path (console.c), pthread_kill() */
	ALLOW(tgkill),
	ALLOW_IF(rt_sigaction, 0, SIGABRT), ALLOW_IF(rt_sigaction, 0, SIGSEGV),
	ALLOW_IF(rt_sigaction, 0, SIGBUS), ALLOW_IF(rt_sigaction, 0, SIGFPE),
	ALLOW_IF(rt_sigaction, 0, SIGILL),
	/* the terminal back to cooked mode on any fatal exit */
	IOCTL(TCSETSF),
	ALLOW(exit), ALLOW(exit_group),
};

/* Serving any queue: the used ring's interrupt on INTx (and the UART's). */
static const struct sc_rule serve_rules[] = {
	IOCTL(KVM_IRQ_LINE),
};

/*
 * Serving the queues of disks, NICs, rng, console and balloon: vCPU
 * threads (--no-ioeventfd, and a driver's register writes: queue start,
 * reset, features) and I/O threads alike.
 */
static const struct sc_rule device_rules[] = {
	/* disks: vectored I/O, FLUSH, DISCARD and WRITE_ZEROES */
	ALLOW(preadv), ALLOW(pwritev), ALLOW(pread64), ALLOW(pwrite64),
	ALLOW(preadv2), ALLOW(pwritev2),
	ALLOW(fdatasync), ALLOW(fallocate),
	IOCTL(BLKDISCARD), IOCTL(BLKZEROOUT),
	/* io_uring disks: submitting and reaping (its rings are made first) */
	ALLOW(io_uring_enter),
	/* virtio-rng */
	ALLOW_IF(getrandom, 2, GRND_NONBLOCK),
	/* tap queues as the driver configures them */
	IOCTL(TUNSETOFFLOAD), IOCTL(TUNSETQUEUE), IOCTL(TUNSETVNETHDRSZ),
	/* a queue's ioeventfd, made by the thread that starts the queue */
	ALLOW(eventfd2), ALLOW(epoll_ctl),
};

static const struct sc_rule vcpu_rules[] = {
	IOCTL(KVM_RUN),
	/* what a driver's writes change: notifies, MSI-X routes, irqfds */
	IOCTL(KVM_IOEVENTFD), IOCTL(KVM_IRQFD), IOCTL(KVM_SET_GSI_ROUTING),
#ifdef KVM_KVMCLOCK_CTRL
	/* parking for lkvm pause: the guest's kvmclock is told */
	IOCTL(KVM_KVMCLOCK_CTRL),
#endif
};

/*
 * virtio-9p (--9p): each share's files are served by its device's own
 * thread, which alone of lkvm's threads may work on files (virtio/9p.c:
 * a vCPU serving notifies inline hands them to it). Paths are resolved
 * with openat2 beneath the share's root; the rest work in directories so
 * opened, or on /proc/self/fd names of inodes so opened (fs/p9_*.c).
 * mknodat makes what the server makes, never a device node.
 */
static const struct sc_rule share_rules[] = {
	ALLOW(openat2), ALLOW(openat), ALLOW(close), ALLOW(newfstatat),
	ALLOW(fstat), ALLOW(fstatfs), ALLOW(statx), ALLOW(readlinkat),
	ALLOW(getdents64), ALLOW(lseek), ALLOW(pread64), ALLOW(pwrite64),
	ALLOW(fsync), ALLOW(fdatasync), ALLOW(fcntl),
	ALLOW(mkdirat), ALLOW(symlinkat), ALLOW(linkat),
	ALLOW_MASKED(mknodat, 2, S_IFMT, S_IFREG),
	ALLOW_MASKED(mknodat, 2, S_IFMT, S_IFIFO),
	ALLOW_MASKED(mknodat, 2, S_IFMT, S_IFSOCK),
	ALLOW(renameat), ALLOW(renameat2), ALLOW(unlinkat), ALLOW(fchownat),
	ALLOW(chmod), ALLOW(fchmodat), ALLOW(truncate), ALLOW(utimensat),
	ALLOW(getxattr), ALLOW(listxattr), ALLOW(setxattr),
	ALLOW(removexattr),
};

static const struct sc_rule io_rules[] = {
	ALLOW(epoll_wait), ALLOW(epoll_pwait),
	/* a polling thread asks whether it was preempted; CPU time at exit */
	ALLOW(getrusage),
};

/* The main loop, then the teardown, --stats and the timeout report. */
static const struct sc_rule main_rules[] = {
	ALLOW(poll), ALLOW(ppoll), ALLOW(epoll_ctl), ALLOW(getrusage),
	/* the disks' io_uring drained at the end; qcow2 tables written back */
	ALLOW(io_uring_enter),
	ALLOW(pread64), ALLOW(pwrite64), ALLOW(fdatasync), ALLOW(fallocate),
	/* --stats: its file, /proc/self/status and statm, guest RAM RSS */
	ALLOW(openat), ALLOW(newfstatat), ALLOW(fstat), ALLOW(lseek),
	ALLOW(mincore),
	IOCTL(TCGETS),
	/* console input to the UART's line; devices unbinding their fds */
	IOCTL(KVM_IRQ_LINE), IOCTL(KVM_IOEVENTFD), IOCTL(KVM_IRQFD),
	IOCTL(KVM_SET_GSI_ROUTING),
	IOCTL(TUNSETOFFLOAD), IOCTL(TUNSETQUEUE),
	/* where each vCPU stopped, after --timeout, and lkvm debug --dump */
	IOCTL(KVM_GET_MP_STATE), IOCTL(KVM_GET_REGS), IOCTL(KVM_GET_SREGS),
#ifdef __aarch64__
	/* arm64 reads each register on its own */
	IOCTL(KVM_GET_ONE_REG),
#endif
	/* the control socket: a client at a time; removed at the end */
	ALLOW(accept4), ALLOW(sendto), ALLOW(unlink), ALLOW(unlinkat),
};

/*
 * libslirp makes host sockets at run time for the guest's connections
 * (TCP, UDP, ICMP echo, its FTP/IRC helpers' listeners) and rereads
 * /etc/resolv.conf when it changes.
 */
static const struct sc_rule slirp_rules[] = {
	ALLOW(poll), ALLOW(ppoll),
	ALLOW_IF(socket, 0, AF_INET), ALLOW_IF(socket, 0, AF_INET6),
	ALLOW(connect), ALLOW(bind), ALLOW(listen), ALLOW(accept),
	ALLOW(accept4), ALLOW(shutdown),
	ALLOW(sendto), ALLOW(sendmsg), ALLOW(recvfrom), ALLOW(recvmsg),
	ALLOW(getsockname), ALLOW(getpeername), ALLOW(setsockopt),
	ALLOW(getsockopt), ALLOW(fcntl),
	IOCTL(FIONREAD), IOCTL(FIONBIO), IOCTL(SIOCGIFINDEX),
	ALLOW_MASKED(openat, 2, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY),
	ALLOW(newfstatat), ALLOW(fstat), ALLOW(lseek),
};

/*
 * The console's writer thread writes stdout (base_rules has write) and
 * waits on a non-blocking one; SIGUSR2 wakes it at exit (rt_sigreturn).
 */
static const struct sc_rule console_rules[] = {
	ALLOW(poll), ALLOW(ppoll),
};

#ifdef LKVM_SANITIZED
/*
 * ASan/LSan builds only: the leak check at exit stops the world from a
 * tracer (clone, prctl(PR_SET_PTRACER), ptrace, wait4, the /proc/self/task
 * listing) and reads /proc/self/maps; a report does the same and
 * symbolizes from the binary's own file. The runtime makes raw syscalls:
 * open and getdents, not glibc's openat and getdents64. Its tracer blocks
 * every signal, so a call missing here kills it silently and the exit
 * then waits for it for ever.
 */
static const struct sc_rule sanitizer_rules[] = {
	ALLOW(clone), ALLOW(ptrace), ALLOW(wait4), ALLOW(prctl),
	ALLOW(open), ALLOW(getdents), ALLOW(getdents64), ALLOW(newfstatat),
	ALLOW(fstat), ALLOW(lseek), ALLOW(readlink), ALLOW(pread64),
	ALLOW(sigaltstack), ALLOW(rt_sigaction), ALLOW(getppid), ALLOW(kill),
	ALLOW(sched_getaffinity),
};
#endif

struct sc_table {
	const struct sc_rule *rules;
	size_t nr;
};

#define TABLE(t)	{ t, ARRAY_SIZE(t) }
#define SC_MAX_TABLES	4

static const struct sc_class_def {
	const char *name;
	struct sc_table tables[SC_MAX_TABLES];
} classes[SECCOMP_NR_CLASSES] = {
	[SECCOMP_MAIN] = { "main", { TABLE(base_rules), TABLE(main_rules) } },
	[SECCOMP_VCPU] = { "vCPU", { TABLE(base_rules), TABLE(serve_rules),
				     TABLE(device_rules), TABLE(vcpu_rules) } },
	[SECCOMP_IO] = { "I/O", { TABLE(base_rules), TABLE(serve_rules),
				  TABLE(device_rules), TABLE(io_rules) } },
	[SECCOMP_P9] = { "9p", { TABLE(base_rules), TABLE(serve_rules),
				 TABLE(io_rules), TABLE(share_rules) } },
	[SECCOMP_SLIRP] = { "slirp", { TABLE(base_rules),
				       TABLE(slirp_rules) } },
	[SECCOMP_CONSOLE] = { "console", { TABLE(base_rules),
					   TABLE(console_rules) } },
};

/* The host's syscall names, from <sys/syscall.h> at build time. */
static const char *const syscall_names[] = {
#include "syscall_names.h"
};

static struct sock_fprog programs[SECCOMP_NR_CLASSES];
static uint32_t native_arch;		/* AUDIT_ARCH_*, as si_arch gives it */
static __thread int thread_class = -1;

const char *seccomp_class_name(enum seccomp_class cls)
{
	return cls < SECCOMP_NR_CLASSES ? classes[cls].name : "unknown";
}

/* Async-signal-safe pieces of the death message. */
static size_t put_str(char *buf, size_t len, size_t size, const char *s)
{
	while (*s && len + 1 < size)
		buf[len++] = *s++;
	return len;
}

static size_t put_uint(char *buf, size_t len, size_t size, unsigned int v)
{
	char digits[12];
	int n = 0;

	do {
		digits[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (n && len + 1 < size)
		buf[len++] = digits[--n];
	return len;
}

static const char *syscall_name(const siginfo_t *si)
{
	unsigned int nr = si->si_syscall;

	if (si->si_arch != native_arch)
		return "another ABI";
	if (nr < ARRAY_SIZE(syscall_names) && syscall_names[nr])
		return syscall_names[nr];
	return "unknown";
}

/*
 * SIGSYS from SECCOMP_RET_TRAP: say who did what, leave the terminal as
 * it was, and end the process. write(), tcsetattr() and _exit() only.
 */
static void seccomp_sigsys(int sig, siginfo_t *si, void *uc)
{
	char msg[160];
	size_t n = 0;

	n = put_str(msg, n, sizeof(msg), "lkvm: seccomp: ");
	n = put_str(msg, n, sizeof(msg), seccomp_class_name(thread_class));
	n = put_str(msg, n, sizeof(msg), " thread made forbidden syscall ");
	n = put_uint(msg, n, sizeof(msg), si->si_syscall);
	n = put_str(msg, n, sizeof(msg), " (");
	n = put_str(msg, n, sizeof(msg), syscall_name(si));
	n = put_str(msg, n, sizeof(msg), ")\r\n");
	if (write(STDERR_FILENO, msg, n) < 0) {
		/* nothing left to tell it to */
	}
	console_restore();
	_exit(EXIT_SECCOMP);
}

static int add_rule(scmp_filter_ctx ctx, const struct sc_rule *r)
{
	if (r->arg == ARG_NONE)
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 0);
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
				SCMP_CMP(r->arg, SCMP_CMP_MASKED_EQ, r->mask,
					 r->value));
}

static int add_table(scmp_filter_ctx ctx, const struct sc_table *t)
{
	size_t i;
	int err;

	for (i = 0; i < t->nr; i++) {
		err = add_rule(ctx, &t->rules[i]);
		if (err) {
			pr_err("seccomp: rule for syscall %d: %s", t->rules[i].nr,
			       strerror(-err));
			return -1;
		}
	}
	return 0;
}

/* libseccomp 2.5 exports to a file only: a memfd, read back. */
static int export_program(scmp_filter_ctx ctx, struct sock_fprog *prog)
{
	int fd = memfd_create("lkvm-seccomp", MFD_CLOEXEC);
	struct sock_filter *insns = NULL;
	off_t size;
	int err;

	if (fd < 0)
		return -errno;
	err = seccomp_export_bpf(ctx, fd);
	size = lseek(fd, 0, SEEK_END);
	if (!err && (size <= 0 || size % sizeof(*insns) ||
		     size / sizeof(*insns) > BPF_MAXINSNS))
		err = -EINVAL;
	if (!err && !(insns = malloc(size)))
		err = -ENOMEM;
	if (!err && pread(fd, insns, size, 0) != size)
		err = -EIO;
	close(fd);
	if (err) {
		free(insns);
		return err;
	}
	prog->filter = insns;
	prog->len = size / sizeof(*insns);
	return 0;
}

static int build_class(enum seccomp_class cls)
{
	const struct sc_class_def *def = &classes[cls];
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	unsigned int i;
	int err = -1;

	if (!ctx) {
		pr_err("seccomp: libseccomp cannot start a filter");
		return -1;
	}
	/* a syscall of another ABI (int 0x80, x32) gets the same message */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP))
		goto out;
	for (i = 0; i < SC_MAX_TABLES && def->tables[i].rules; i++)
		if (add_table(ctx, &def->tables[i]))
			goto out;
#ifdef LKVM_SANITIZED
	{
		const struct sc_table san = TABLE(sanitizer_rules);

		if (add_table(ctx, &san))
			goto out;
	}
#endif
	err = export_program(ctx, &programs[cls]);
	if (err)
		pr_err("seccomp: cannot export the %s thread's filter: %s",
		       def->name, strerror(-err));
out:
	seccomp_release(ctx);
	return err ? -1 : 0;
}

int seccomp_prepare(void)
{
	struct sigaction sa = {
		.sa_sigaction = seccomp_sigsys,
		.sa_flags = SA_SIGINFO,
	};
	unsigned int i;

	if (programs[0].filter)
		return 0;
	/*
	 * glibc reads the time zone on the first time conversion (the RTC's
	 * gmtime_r() too): now, while files may still be opened.
	 */
	tzset();
	native_arch = seccomp_arch_native();
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL)) {
		pr_err("seccomp: sigaction: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < SECCOMP_NR_CLASSES; i++)
		if (build_class(i))
			return -1;
	return 0;
}

int seccomp_confine(enum seccomp_class cls)
{
	sigset_t sys;

	/* first: the seccomp filter would refuse landlock_restrict_self() */
	if (landlock_confine(seccomp_class_name(cls)))
		return -1;
	if (cls >= SECCOMP_NR_CLASSES || !programs[cls].filter)
		return 0;
	thread_class = cls;
	/* a blocked SIGSYS would kill silently instead of naming the call */
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	pthread_sigmask(SIG_UNBLOCK, &sys, NULL);
	/* no flags: this thread alone, never TSYNC */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &programs[cls])) {
		pr_err("seccomp: cannot confine the %s thread: %s (--no-seccomp runs without)",
		       classes[cls].name, strerror(errno));
		return -1;
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The seccomp filters (core/seccomp.c), each installed as lkvm installs
 * it: by a thread of the class, for itself. Every case runs in a child
 * process of its own, since a filter can never be taken off again: a
 * forbidden syscall must end that child with EXIT_SECCOMP and the one
 * line naming the thread class and the syscall; an allowed one must
 * reach the kernel (its own error, such as ENOTTY, is fine).
 */
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lkvm/seccomp.h"

/* Child exit statuses of our own: the filter let the call through. */
#define CHILD_PASSED		0
#define CHILD_NOT_REFUSED	90
#define CHILD_WRONG_RESULT	91
#define CHILD_SETUP_FAILED	92

struct probe {
	enum seccomp_class cls;
	int (*body)(void);	/* runs confined; a CHILD_* status */
};

/* Made before the thread confines itself, as lkvm's set-up makes them. */
static int pipe_fds[2] = { -1, -1 };
static int disk_fd = -1, event_fd = -1;

static int probe_setup(void)
{
	char path[] = "/tmp/lkvm-seccomp-XXXXXX";

	if (pipe(pipe_fds))
		return -1;
	disk_fd = mkstemp(path);
	if (disk_fd < 0)
		return -1;
	unlink(path);
	event_fd = eventfd(0, EFD_NONBLOCK);
	return event_fd < 0 ? -1 : 0;
}

static void *probe_thread(void *arg)
{
	struct probe *p = arg;

	if (probe_setup() || seccomp_confine(p->cls))
		return (void *)(intptr_t)CHILD_SETUP_FAILED;
	return (void *)(intptr_t)p->body();
}

struct outcome {
	int status;		/* exit status, or -signal */
	char err[512];		/* what the child wrote on stderr */
};

/*
 * In a child: prepare the filters (as vm_run() does) unless told not to,
 * run body in a new thread confined to cls, and exit with its status.
 */
static void run_probe(enum seccomp_class cls, int (*body)(void), bool prepare,
		      struct outcome *out)
{
	struct probe p = { .cls = cls, .body = body };
	int pfd[2], status;
	ssize_t n, len = 0;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;
		void *ret;

		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		if ((prepare && seccomp_prepare()) ||
		    pthread_create(&t, NULL, probe_thread, &p) ||
		    pthread_join(t, &ret))
			_exit(CHILD_SETUP_FAILED);
		_exit((int)(intptr_t)ret);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], out->err + len,
			 sizeof(out->err) - 1 - len)) > 0)
		len += n;
	out->err[len] = '\0';
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	out->status = WIFEXITED(status) ? WEXITSTATUS(status)
					: -WTERMSIG(status);
}

static void assert_refused(enum seccomp_class cls, int (*body)(void),
			   long nr, const char *name)
{
	struct outcome o;
	char want[128];

	run_probe(cls, body, true, &o);
	snprintf(want, sizeof(want),
		 "lkvm: seccomp: %s thread made forbidden syscall %ld (%s)",
		 seccomp_class_name(cls), nr, name);
	if (o.status != EXIT_SECCOMP || !strstr(o.err, want))
		fail_msg("expected status %d and \"%s\"; got status %d, stderr \"%s\"",
			 EXIT_SECCOMP, want, o.status, o.err);
}

static void assert_passes(enum seccomp_class cls, int (*body)(void))
{
	struct outcome o;

	run_probe(cls, body, true, &o);
	if (o.status != CHILD_PASSED)
		fail_msg("expected status 0; got %d, stderr \"%s\"", o.status,
			 o.err);
}

static int do_execve(void)
{
	char *const argv[] = { "true", NULL };

	syscall(SYS_execve, "/bin/true", argv, NULL);
	return CHILD_NOT_REFUSED;
}

static int do_inet_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd >= 0)
		close(fd);
	return CHILD_NOT_REFUSED;
}

/* slirp's own: a UDP socket to a host peer */
static int make_inet_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return CHILD_WRONG_RESULT;
	close(fd);
	return CHILD_PASSED;
}

static int do_unix_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	if (fd >= 0)
		close(fd);
	return CHILD_NOT_REFUSED;
}

/* A request KVM never answers, on the vCPU's own kind of call. */
static int do_fionread(void)
{
	int n;

	ioctl(pipe_fds[0], FIONREAD, &n);
	return CHILD_NOT_REFUSED;
}

static int do_open_for_writing(void)
{
	/* the syscall itself: ASan's open() may take another way in */
	int fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY);

	if (fd >= 0)
		close(fd);
	return CHILD_NOT_REFUSED;
}

static int do_mmap_exec(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		munmap(p, 4096);
	return CHILD_NOT_REFUSED;
}

/* What a 9p thread's server does to a share's files. */
static int do_open_read_only(void)
{
	int fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);

	if (fd >= 0)
		close(fd);
	return CHILD_NOT_REFUSED;
}

static int do_mknod_char_device(void)
{
	/* the mode alone is refused: the path is never read */
	syscall(SYS_mknodat, AT_FDCWD, NULL, S_IFCHR | 0600, 0);
	return CHILD_NOT_REFUSED;
}

static int do_mknod_block_device(void)
{
	syscall(SYS_mknodat, AT_FDCWD, NULL, S_IFBLK | 0600, 0);
	return CHILD_NOT_REFUSED;
}

/* A FIFO, a socket and a regular file reach the kernel (EFAULT here). */
static int p9_thread_work(void)
{
	static const mode_t kinds[] = { S_IFIFO, S_IFSOCK, S_IFREG };
	int fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);

	if (fd < 0)
		return CHILD_WRONG_RESULT;
	close(fd);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (syscall(SYS_mknodat, AT_FDCWD, NULL, kinds[i] | 0600, 0) !=
		    -1 || errno != EFAULT)
			return CHILD_WRONG_RESULT;
	return CHILD_PASSED;
}

/*
 * Files are the 9p thread's alone: no vCPU or other I/O thread opens
 * one (with --9p or without), and even the 9p thread makes no device
 * node.
 */
static void only_the_9p_thread_opens_files(void **state)
{
	assert_passes(SECCOMP_P9, p9_thread_work);
	assert_refused(SECCOMP_VCPU, do_open_read_only, SYS_openat, "openat");
	assert_refused(SECCOMP_IO, do_open_read_only, SYS_openat, "openat");
	assert_refused(SECCOMP_P9, do_mknod_char_device, SYS_mknodat,
		       "mknodat");
	assert_refused(SECCOMP_P9, do_mknod_block_device, SYS_mknodat,
		       "mknodat");
	assert_refused(SECCOMP_P9, do_inet_socket, SYS_socket, "socket");
}

/* A ring's restrictions (disk/aio_uring.c) would mean nothing without. */
static int do_uring_register(void)
{
	syscall(SYS_io_uring_register, pipe_fds[0], 0, NULL, 0);
	return CHILD_NOT_REFUSED;
}

static int do_uring_setup(void)
{
	char params[120] = { 0 };	/* struct io_uring_params */

	syscall(SYS_io_uring_setup, 1, params);
	return CHILD_NOT_REFUSED;
}

static void io_thread_cannot_execve(void **state)
{
	assert_refused(SECCOMP_IO, do_execve, SYS_execve, "execve");
}

static void io_thread_cannot_open_a_socket(void **state)
{
	assert_refused(SECCOMP_IO, do_inet_socket, SYS_socket, "socket");
}

static void vcpu_thread_refuses_a_non_kvm_ioctl(void **state)
{
	assert_refused(SECCOMP_VCPU, do_fionread, SYS_ioctl, "ioctl");
}

static void main_thread_cannot_execve(void **state)
{
	/* --reboot forks a fresh child instead: no thread needs execve */
	assert_refused(SECCOMP_MAIN, do_execve, SYS_execve, "execve");
}

static void slirp_thread_makes_inet_sockets_only(void **state)
{
	assert_passes(SECCOMP_SLIRP, make_inet_socket);
	assert_refused(SECCOMP_SLIRP, do_unix_socket, SYS_socket, "socket");
}

static void slirp_thread_opens_read_only(void **state)
{
	assert_refused(SECCOMP_SLIRP, do_open_for_writing, SYS_openat,
		       "openat");
}

static void no_thread_maps_executable_memory(void **state)
{
	enum seccomp_class c;

	for (c = 0; c < SECCOMP_NR_CLASSES; c++)
		assert_refused(c, do_mmap_exec, SYS_mmap, "mmap");
}

static void no_thread_sets_up_or_registers_io_uring(void **state)
{
	enum seccomp_class c;

	for (c = 0; c < SECCOMP_NR_CLASSES; c++) {
		assert_refused(c, do_uring_register, SYS_io_uring_register,
			       "io_uring_register");
		assert_refused(c, do_uring_setup, SYS_io_uring_setup,
			       "io_uring_setup");
	}
}

/* What an I/O thread does serving a disk and its queues. */
static int io_thread_work(void)
{
	char buf[512] = "data";
	struct iovec iov = { buf, sizeof(buf) };
	int fd = disk_fd, efd = event_fd;
	uint64_t one = 1;
	struct rusage ru;
	struct timespec ts;
	void *big;

	if (pwritev(fd, &iov, 1, 4096) != sizeof(buf) ||
	    preadv(fd, &iov, 1, 0) != sizeof(buf) || fdatasync(fd) ||
	    write(efd, &one, sizeof(one)) != sizeof(one) ||
	    read(efd, &one, sizeof(one)) != sizeof(one) ||
	    getrusage(RUSAGE_THREAD, &ru) ||
	    clock_gettime(CLOCK_MONOTONIC, &ts))
		return CHILD_WRONG_RESULT;
	/* malloc's own mmap, madvise and munmap */
	big = malloc(8 << 20);
	if (!big)
		return CHILD_WRONG_RESULT;
	memset(big, 1, 8 << 20);
	free(big);
	close(fd);
	close(efd);
	return CHILD_PASSED;
}

/* The console's writer: stdout and a wait on it, nothing more. */
static int console_work(void)
{
	struct pollfd pfd = { .fd = pipe_fds[1], .events = POLLOUT };

	if (write(pipe_fds[1], "x", 1) != 1 || poll(&pfd, 1, 0) != 1)
		return CHILD_WRONG_RESULT;
	return CHILD_PASSED;
}

static void console_thread_writes_and_nothing_else(void **state)
{
	assert_passes(SECCOMP_CONSOLE, console_work);
	assert_refused(SECCOMP_CONSOLE, do_inet_socket, SYS_socket, "socket");
	assert_refused(SECCOMP_CONSOLE, do_fionread, SYS_ioctl, "ioctl");
}

static void io_thread_serves_a_disk(void **state)
{
	assert_passes(SECCOMP_IO, io_thread_work);
}

/* KVM_RUN passes the filter; the kernel then refuses it on a pipe. */
static int vcpu_kvm_run(void)
{
	if (ioctl(pipe_fds[0], KVM_RUN, 0) != -1 || errno != ENOTTY)
		return CHILD_WRONG_RESULT;
	return CHILD_PASSED;
}

static void vcpu_thread_may_run_kvm_run(void **state)
{
	assert_passes(SECCOMP_VCPU, vcpu_kvm_run);
}

/*
 * The filter is the confined thread's alone: the child's main thread,
 * never confined, still makes the socket the I/O thread could not.
 */
static void io_thread_confines_itself_alone(void **state)
{
	struct probe p = { .cls = SECCOMP_IO, .body = io_thread_work };
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;
		void *ret;
		int fd;

		if (seccomp_prepare() ||
		    pthread_create(&t, NULL, probe_thread, &p) ||
		    pthread_join(t, &ret) || ret)
			_exit(CHILD_SETUP_FAILED);
		fd = socket(AF_UNIX, SOCK_DGRAM, 0);
		_exit(fd >= 0 ? CHILD_PASSED : CHILD_WRONG_RESULT);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), CHILD_PASSED);
}

/* Without seccomp_prepare() (--no-seccomp, unit tests) nothing changes. */
static void unprepared_confine_does_nothing(void **state)
{
	struct outcome o;

	run_probe(SECCOMP_IO, do_unix_socket, false, &o);
	assert_int_equal(o.status, CHILD_NOT_REFUSED);
	assert_null(strstr(o.err, "seccomp"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(io_thread_cannot_execve),
		cmocka_unit_test(io_thread_cannot_open_a_socket),
		cmocka_unit_test(vcpu_thread_refuses_a_non_kvm_ioctl),
		cmocka_unit_test(main_thread_cannot_execve),
		cmocka_unit_test(slirp_thread_makes_inet_sockets_only),
		cmocka_unit_test(slirp_thread_opens_read_only),
		cmocka_unit_test(no_thread_maps_executable_memory),
		cmocka_unit_test(no_thread_sets_up_or_registers_io_uring),
		cmocka_unit_test(io_thread_serves_a_disk),
		cmocka_unit_test(console_thread_writes_and_nothing_else),
		cmocka_unit_test(vcpu_thread_may_run_kvm_run),
		cmocka_unit_test(io_thread_confines_itself_alone),
		cmocka_unit_test(unprepared_confine_does_nothing),
		cmocka_unit_test(only_the_9p_thread_opens_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

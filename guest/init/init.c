// SPDX-License-Identifier: GPL-2.0
/*
 * /init for Linux guests of lkvm: the whole user space a test guest needs
 * before its one command runs, and the code that turns that command's exit
 * status into lkvm's exit status.
 *
 * Boot sequence:
 *  1. mount proc, sysfs, devtmpfs (+ devpts), tmpfs on /tmp and /run;
 *  2. load the modules listed in /etc/lkvm/modules, one path per line in
 *     dependency order, optionally followed by module parameters;
 *  3. run the command: lkvm.run= from the kernel command line, else
 *     /etc/lkvm/run, else /bin/sh, on the console as its controlling tty;
 *     or, in an initramfs lkvm sandbox made, the command it names, in the
 *     host's file system (sandbox.c);
 *  4. end the VM with the command's status.
 *
 * lkvm.run=PROG,ARG,...  splits into argv at commas (and at spaces when the
 * value is double-quoted, which the kernel allows: lkvm.run="a b"); %XX
 * stands for the byte with hex value XX, so %2C is a comma and %20 a space.
 *
 * lkvm.status=auto (default): status 0 powers the VM off (ACPI S5, lkvm
 *   exits 0), any other status is written to the debug-exit port 0x501,
 *   which makes lkvm exit with it.
 * lkvm.status=port: always write the status to the port.
 * lkvm.status=poweroff: always power off; the status is only printed.
 * A command killed by signal S has status 128 + S; one that cannot be
 * started has status 127. lkvm itself uses 1-4 and 124 for its own
 * outcomes, so tests should pick other statuses.
 *
 * Like busybox init, SIGUSR1 and SIGUSR2 to PID 1 (busybox halt, poweroff)
 * power the VM off at once and SIGTERM (busybox reboot) reboots it, which
 * lkvm reports as exit status 3.
 *
 * lkvm.verbose makes init say what it does; otherwise it prints only errors,
 * because every console byte is an exit to the VMM.
 *
 * PID 1 must never exit (the kernel panics), so every path ends in the
 * power-off/port code and, if both fail, sleeps forever.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <sys/io.h>
#endif
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

/*
 * lkvm's debug-exit and boot-marker registers: I/O ports on x86, bytes
 * of MMIO on arm64 (include/lkvm/arm/layout.h), reached through /dev/mem.
 */
#if defined(__aarch64__)
#define DEBUG_EXIT_PORT		0x09010000UL
#define BOOT_MARKER_PORT	0x09010001UL
#else
#define DEBUG_EXIT_PORT		0x501
#define BOOT_MARKER_PORT	0x502	/* include/lkvm/boot_profile.h */
#endif
#define CMDLINE_MAX	4096
#define MAX_ARGS	64

enum status_mode { STATUS_AUTO, STATUS_PORT, STATUS_POWEROFF };

static bool verbose;
static volatile sig_atomic_t requested;	/* RB_* from a signal, or 0 */

static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("lkvm-init: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#define info(...) do { if (verbose) msg(__VA_ARGS__); } while (0)

static void do_mount(const char *src, const char *dir, const char *type,
		     unsigned long flags, const char *data)
{
	/* Mount points may be missing on a root other than our initramfs. */
	if (mkdir(dir, 0755) && errno != EEXIST)
		info("mkdir %s: %s", dir, strerror(errno));
	if (mount(src, dir, type, flags, data) && errno != EBUSY)
		msg("mount %s on %s: %s", type, dir, strerror(errno));
}

static void mount_all(void)
{
	const unsigned long nodev = MS_NOSUID | MS_NODEV | MS_NOEXEC;

	do_mount("proc", "/proc", "proc", nodev, NULL);
	do_mount("sysfs", "/sys", "sysfs", nodev, NULL);
	do_mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	do_mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		 "gid=5,mode=620,ptmxmode=666");
	do_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, NULL);
	do_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	do_mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
}

/*
 * The kernel gives init /dev/console as stdio only if the root file system
 * has that node; an initramfs built without it leaves us with no fds until
 * devtmpfs is up.
 */
static void console_stdio(void)
{
	int fd;

	if (fcntl(0, F_GETFD) >= 0 && fcntl(1, F_GETFD) >= 0 &&
	    fcntl(2, F_GETFD) >= 0)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

static int load_module(const char *path, const char *params)
{
	struct stat st;
	void *buf;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = syscall(SYS_finit_module, fd, params, 0);
	if (ret && errno == ENOSYS && !fstat(fd, &st)) {
		/* Kernels before 3.8 only take the module as a buffer. */
		buf = malloc(st.st_size);
		if (buf && read(fd, buf, st.st_size) == st.st_size)
			ret = syscall(SYS_init_module, buf, st.st_size, params);
		free(buf);
	}
	close(fd);
	return ret;
}

static void load_modules(const char *list)
{
	char line[1024];
	FILE *f;

	f = fopen(list, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *path = line, *params, *end;

		path += strspn(path, " \t");
		end = path + strcspn(path, "\r\n");
		*end = '\0';
		if (!*path || *path == '#')
			continue;
		params = path + strcspn(path, " \t");
		if (*params) {
			*params++ = '\0';
			params += strspn(params, " \t");
		}
		if (load_module(path, params) && errno != EEXIST)
			msg("module %s: %s", path, strerror(errno));
		else
			info("loaded %s", path);
	}
	fclose(f);
}

/*
 * Split a lkvm.run= value into argv in place: separators end an argument,
 * %XX decodes afterwards so that an escaped comma stays inside one.
 */
static int split_args(char *val, char **argv, int max)
{
	int argc = 0;
	char *tok;

	for (tok = strtok(val, ", \t"); tok && argc < max - 1;
	     tok = strtok(NULL, ", \t")) {
		char *r = tok, *w = tok;

		while (*r) {
			if (r[0] == '%' && isxdigit((unsigned char)r[1]) &&
			    isxdigit((unsigned char)r[2])) {
				char hex[3] = { r[1], r[2], '\0' };

				*w++ = (char)strtol(hex, NULL, 16);
				r += 3;
			} else {
				*w++ = *r++;
			}
		}
		*w = '\0';
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	return argc;
}

/*
 * Walk the kernel command line the way the kernel does: words separated by
 * spaces, double quotes group. Returns the value of the last key= or, for a
 * bare key, an empty string; NULL if absent. The result lives in buf.
 */
static char *cmdline_get(const char *cmdline, const char *key, char *buf,
			 size_t size)
{
	size_t klen = strlen(key);
	const char *p = cmdline;
	char *found = NULL;

	while (*p) {
		char word[CMDLINE_MAX];
		size_t n = 0;
		bool quoted = false;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		while (*p && (quoted || (*p != ' ' && *p != '\t' &&
					 *p != '\n'))) {
			if (*p == '"')
				quoted = !quoted;
			else if (n < sizeof(word) - 1)
				word[n++] = *p;
			p++;
		}
		word[n] = '\0';
		if (!strncmp(word, key, klen) &&
		    (word[klen] == '=' || word[klen] == '\0')) {
			snprintf(buf, size, "%s",
				 word[klen] ? word + klen + 1 : "");
			found = buf;
		}
		/* The kernel hands everything after "--" to init. */
		if (!strcmp(word, "--"))
			break;
	}
	return found;
}

static void read_cmdline(char *buf, size_t size)
{
	ssize_t n = 0;
	int fd;

	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
}

/*
 * /dev/console cannot be a controlling terminal, and shells without one
 * turn job control and ^C off; open the tty it stands for instead.
 */
static void take_console(void)
{
	char name[64] = "", path[80];
	char *last;
	int fd;
	FILE *f;

	setsid();
	f = fopen("/sys/class/tty/console/active", "re");
	if (f) {
		if (!fgets(name, sizeof(name), f))
			name[0] = '\0';
		fclose(f);
	}
	name[strcspn(name, "\n")] = '\0';
	/* The last entry is the one /dev/console writes to. */
	last = strrchr(name, ' ');
	last = last ? last + 1 : name;
	snprintf(path, sizeof(path), "/dev/%s", *last ? last : "console");
	fd = open(path, O_RDWR);
	if (fd < 0)
		fd = open("/dev/console", O_RDWR);
	if (fd < 0)
		return;
	ioctl(fd, TIOCSCTTY, 1);
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

static void setup_env(void)
{
	/*
	 * The kernel sets HOME=/ and TERM=linux unless its command line says
	 * otherwise; a shell is happier in a home of its own.
	 */
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
		       "/sbin:/bin", 1);
	setenv("HOME", "/root", 1);
	setenv("TERM", "linux", 0);
	setenv("SHELL", "/bin/sh", 0);
	setenv("USER", "root", 0);
	if (access("/root", F_OK))
		mkdir("/root", 0700);
	if (chdir(getenv("HOME")))
		chdir("/");
}

/*
 * root=TAG rootfstype=9p (lkvm run -d DIR): a kernel with 9p built in
 * mounts it itself and never runs us; one with 9p as modules boots this
 * initramfs, which loads them, mounts the share and moves into it with
 * the file systems it mounted. False if this is not such a boot or the
 * mount failed (then the initramfs stays the root, and says why).
 */
static bool enter_9p_root(const char *cmdline)
{
	static const char *const moved[] = { "/proc", "/sys", "/dev", "/tmp",
					     "/run" };
	char tag[256], type[32], flags[512], dir[64];
	unsigned int i;

	if (!cmdline_get(cmdline, "rootfstype", type, sizeof(type)) ||
	    strcmp(type, "9p") || !cmdline_get(cmdline, "root", tag, sizeof(tag)))
		return false;
	if (!cmdline_get(cmdline, "rootflags", flags, sizeof(flags)))
		snprintf(flags, sizeof(flags), "trans=virtio,version=9p2000.L");
	mkdir("/newroot", 0755);
	if (mount(tag, "/newroot", "9p",
		  cmdline_get(cmdline, "ro", dir, sizeof(dir)) ? MS_RDONLY : 0,
		  flags)) {
		msg("mount 9p root %s: %s", tag, strerror(errno));
		return false;
	}
	for (i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		snprintf(dir, sizeof(dir), "/newroot%s", moved[i]);
		mkdir(dir, 0755);
		if (mount(moved[i], dir, NULL, MS_MOVE, NULL))
			info("move %s: %s", moved[i], strerror(errno));
	}
	if (chdir("/newroot") || mount(".", "/", NULL, MS_MOVE, NULL) ||
	    chroot(".") || chdir("/")) {
		msg("switch to the 9p root: %s", strerror(errno));
		return false;
	}
	return true;
}

static void on_signal(int sig)
{
	requested = sig == SIGTERM ? RB_AUTOBOOT : RB_POWER_OFF;
}

/*
 * The UART sends from a kernel buffer; powering off before it is empty
 * loses the command's last lines (through /dev/console this is the tty
 * the command wrote to as well). Wait until the queue reads empty and the
 * transmitter is idle, for as long as the queue keeps moving: each byte
 * costs the guest a VM exit, and nested under emulation on a busy host a
 * 2-vCPU guest needed more than 2 s for its last 4 KiB. Not tcdrain(): it
 * was seen to return with kilobytes queued, and it has no bound.
 *
 * A stall is counted in polls as well as in time: a guest whose vCPUs the
 * host did not run for seconds sees its clock jump past the bound in one
 * poll (seen nested: 2 KiB lost with the queue still moving). A queue
 * that has not moved for a while gets its transmitter restarted (output
 * off and on again re-arms the THR-empty interrupt), in case the
 * interrupt that would move it was lost; the kernel log says so.
 */
#define DRAIN_POLL_MS	1
#define DRAIN_STALL_MS	3000	/* a queue this long unmoved is stuck */
#define DRAIN_RESTART_MS 1000	/* unmoved this long: restart the sender */
#define DRAIN_MAX_MS	60000

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* A kernel log line: the kernel writes it to the console itself. */
static void kmsg(const char *fmt, ...)
{
	char line[160];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n < sizeof(line) ? (size_t)n :
						      sizeof(line) - 1) < 0)
		n = 0;
	close(fd);
}

/* Whether the console's queue and transmitter are empty; -1: not a tty. */
static int console_idle(int *queued)
{
	unsigned int lsr;

	if (ioctl(STDOUT_FILENO, TIOCOUTQ, queued))
		return -1;
	/* Not a serial port (no LSR to read): the queue is enough. */
	return !*queued && (ioctl(STDOUT_FILENO, TIOCSERGETLSR, &lsr) ||
			    (lsr & TIOCSER_TEMT));
}

static void console_drain(void)
{
	unsigned long long start = now_ms(), moved = start, t;
	unsigned int polls = 0, restarts = 0;
	bool restarted = false, stuck = true;
	int queued = 0, last = -1, owed = -1, sent = 0;

	for (t = start; t - start < DRAIN_MAX_MS; t = now_ms()) {
		int idle = console_idle(&queued);

		if (idle || (owed >= 0 && sent >= owed)) {
			/* what was queued when we came is out: writers that
			 * go on are not waited for */
			stuck = false;
			break;
		}
		if (owed < 0)
			owed = queued;
		/* only a shorter queue is progress; a longer one is more */
		if (last >= 0 && queued < last) {
			sent += last - queued;
			moved = t;
			polls = 0;
			restarted = false;
		}
		last = queued;
		if (t - moved >= DRAIN_STALL_MS &&
		    polls >= DRAIN_STALL_MS / DRAIN_POLL_MS)
			break;
		if (!restarted && queued && t - moved >= DRAIN_RESTART_MS &&
		    polls >= DRAIN_RESTART_MS / DRAIN_POLL_MS) {
			tcflow(STDOUT_FILENO, TCOOFF);
			tcflow(STDOUT_FILENO, TCOON);
			restarted = true;
			restarts++;
		}
		usleep(DRAIN_POLL_MS * 1000);
		polls++;
	}
	if (restarts)
		kmsg("<3>lkvm-init: console output stalled with bytes queued; "
		     "restarted its transmitter %u times\n", restarts);
	if (stuck)
		kmsg("<3>lkvm-init: console still had %d bytes queued after "
		     "%llu ms\n", queued, now_ms() - start);
}

/*
 * The command runs under a session leader of ours that holds the console
 * as its controlling tty. When a session leader exits, the kernel hangs
 * its tty up, and a hangup throws away what is still queued in the UART's
 * buffer: a command that ended with kilobytes unsent lost them (seen
 * nested, where every console byte is slow). The leader outlives the
 * command, drains the console, and exits with the command's status.
 */
static __attribute__((noreturn)) void lead_session(char **argv)
{
	sigset_t all;
	pid_t pid;
	int status = 0;

	take_console();
	/* ^C and ^\ are the command's (it is in our process group). */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	pid = fork();
	if (pid < 0) {
		msg("fork: %s", strerror(errno));
		_exit(127);
	}
	if (!pid) {
		/* Ignored signals would stay ignored across exec. */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		sandbox_become_user();
		execvp(argv[0], argv);
		msg("cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	console_drain();
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	_exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127);
}

static int run(char **argv)
{
	pid_t pid, w;
	int status;

	pid = fork();
	if (pid < 0) {
		msg("fork: %s", strerror(errno));
		return 127;
	}
	if (!pid)
		lead_session(argv);
	/* As PID 1 we also inherit every orphan; reap them on the way. */
	for (;;) {
		w = wait(&status);
		if (w == pid || requested)
			break;
		if (w < 0 && errno != EINTR) {
			msg("wait: %s", strerror(errno));
			return 127;
		}
	}
	if (requested)
		return 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 127;
}

static void kill_all(void)
{
	kill(-1, SIGTERM);
	usleep(20000);
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

#if defined(__aarch64__)
/* One byte to a device register; false (errno set) if it could not be. */
static bool port_write(unsigned long addr, uint8_t value)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC);
	volatile uint8_t *p;

	if (fd < 0)
		return false;
	p = mmap(NULL, page, PROT_WRITE, MAP_SHARED, fd, addr & ~(page - 1));
	close(fd);
	if (p == MAP_FAILED)
		return false;
	p[addr & (page - 1)] = value;
	munmap((void *)p, page);
	return true;
}
#else
static sigjmp_buf port_fault_jmp;

static void port_fault(int sig)
{
	(void)sig;
	siglongjmp(port_fault_jmp, 1);
}

/*
 * One byte to an I/O port from user space; false (errno set) if it could
 * not be done.
 * A fault is survived: this init also runs under other VMMs (the
 * benchmarks), and in one nested set-up (QEMU -M pc under TCG's SVM) every
 * user-space port access takes a #GP, which would kill PID 1.
 */
static bool port_write(uint16_t port, uint8_t value)
{
	struct sigaction sa = { .sa_handler = port_fault }, old;
	bool done = false;

	if (ioperm(port, 1, 1))
		return false;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(port_fault_jmp, 1)) {
		outb(value, port);
		done = true;
	} else {
		errno = EFAULT;
	}
	sigaction(SIGSEGV, &old, NULL);
	ioperm(port, 1, 0);
	return done;
}
#endif

/*
 * lkvm's boot profile marks the moment user space began (--boot-profile):
 * one write to its boot-marker port, before anything else. Elsewhere the
 * port is empty and the write goes nowhere.
 */
static void boot_marker(void)
{
	port_write(BOOT_MARKER_PORT, 1);
}

static void debug_exit(int status)
{
	if (!port_write(DEBUG_EXIT_PORT, status & 0xff))
		msg("cannot write the exit status to %#lx: %s",
		    (unsigned long)DEBUG_EXIT_PORT, strerror(errno));
}

static __attribute__((noreturn)) void end_vm(int status,
					      enum status_mode mode)
{
	/*
	 * Drained first while the command's session leader still holds the
	 * console (reboot or poweroff from inside can end the VM while the
	 * command runs), and again after everything is gone: killing the
	 * leader hangs the tty up and drops what it still queues.
	 */
	console_drain();
	kill_all();
	sync();
	console_drain();
	if (requested) {
		reboot(requested);
	} else if (mode == STATUS_PORT || (mode == STATUS_AUTO && status)) {
		debug_exit(status);
	}
	/*
	 * Also the fallback for a VMM without the debug-exit device: a port
	 * write that did not stop the VM goes on here.
	 */
	reboot(RB_POWER_OFF);
	msg("power off: %s", strerror(errno));
	for (;;)
		pause();
}

int main(void)
{
	static char cmdline[CMDLINE_MAX], val[CMDLINE_MAX];
	char *args[MAX_ARGS] = { "/bin/sh", NULL };
	enum status_mode mode = STATUS_AUTO;
	int status;

	struct sigaction sa = { .sa_handler = on_signal };

	boot_marker();
	/* ^C on the console belongs to the command, not to us. */
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	mount_all();
	console_stdio();
	setvbuf(stderr, NULL, _IOLBF, 0);
	read_cmdline(cmdline, sizeof(cmdline));
	verbose = cmdline_get(cmdline, "lkvm.verbose", val, sizeof(val));

	if (cmdline_get(cmdline, "lkvm.status", val, sizeof(val))) {
		if (!strcmp(val, "port"))
			mode = STATUS_PORT;
		else if (!strcmp(val, "poweroff"))
			mode = STATUS_POWEROFF;
		else if (strcmp(val, "auto"))
			msg("unknown lkvm.status=%s, using auto", val);
	}

	load_modules("/etc/lkvm/modules");
	if (enter_9p_root(cmdline) && !cmdline_get(cmdline, "lkvm.run", val,
						    sizeof(val)) &&
	    !access("/sbin/init", X_OK)) {
		/* the root's own init takes over as PID 1 */
		execl("/sbin/init", "init", (char *)NULL);
		msg("cannot run /sbin/init: %s", strerror(errno));
	}
	setup_env();

	status = sandbox_enter(args, MAX_ARGS);
	if (status > 0)
		end_vm(status, STATUS_PORT);
	if (!status) {
		/* the command's status is lkvm's, whatever it is */
		mode = STATUS_PORT;
	} else if (cmdline_get(cmdline, "lkvm.run", val, sizeof(val)) && *val) {
		if (!split_args(val, args, MAX_ARGS))
			args[0] = "/bin/sh";
	} else if (!access("/etc/lkvm/run", X_OK)) {
		args[0] = "/etc/lkvm/run";
	}

	info("running %s", args[0]);
	status = run(args);
	if ((status && !sandbox_active()) || verbose)
		msg("%s exited with status %d", args[0], status);
	end_vm(status, mode);
}

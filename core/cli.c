// SPDX-License-Identifier: GPL-2.0
/*
 * `lkvm run` options, spelled as kvmtool spells them. Every check that
 * needs no KVM happens here, so a bad option or a missing file gets its
 * one-line error before anything is created.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/cli.h"
#include "lkvm/control.h"
#include "lkvm/iothread.h"
#include "lkvm/setup.h"
#include "lkvm/util.h"
#include "lkvm/virtio/poll.h"

/*
 * Command lines lkvm puts together (the default guest's, --append): more
 * than any x86 kernel takes (2 KiB); the loaders check the kernel's limit.
 */
#define CMDLINE_BUF	4096

enum {
	OPT_NAME = 0x100,
	OPT_CONSOLE,
	OPT_TIMEOUT,
	OPT_STATS,
	OPT_REBOOT,
	OPT_TRANSPORT,
	OPT_IRQCHIP,
	OPT_DUMP_DTB,
	OPT_NO_IOEVENTFD,
	OPT_RNG,
	OPT_BALLOON,
	OPT_9P,
	OPT_MMIO_CMDLINE,
	OPT_POLL,
	OPT_IOTHREADS,
	OPT_NO_SECCOMP,
	OPT_NO_LANDLOCK,
	OPT_BOOT_PROFILE,
	OPT_APPEND,
};

static const struct option run_options[] = {
	{ "kernel",	required_argument, NULL, 'k' },
	{ "initrd",	required_argument, NULL, 'i' },
	{ "params",	required_argument, NULL, 'p' },
	{ "append",	required_argument, NULL, OPT_APPEND },
	{ "mem",	required_argument, NULL, 'm' },
	{ "cpus",	required_argument, NULL, 'c' },
	{ "firmware",	required_argument, NULL, 'f' },
	{ "name",	required_argument, NULL, OPT_NAME },
	{ "console",	required_argument, NULL, OPT_CONSOLE },
	{ "timeout",	required_argument, NULL, OPT_TIMEOUT },
	{ "stats",	required_argument, NULL, OPT_STATS },
	{ "reboot",	no_argument,	   NULL, OPT_REBOOT },
	{ "disk",	required_argument, NULL, 'd' },
	{ "network",	required_argument, NULL, 'n' },
	{ "virtio-transport", required_argument, NULL, OPT_TRANSPORT },
	{ "irqchip",	required_argument, NULL, OPT_IRQCHIP },
	{ "dump-dtb",	required_argument, NULL, OPT_DUMP_DTB },
	{ "no-ioeventfd", no_argument,	   NULL, OPT_NO_IOEVENTFD },
	{ "rng",	no_argument,	   NULL, OPT_RNG },
	{ "balloon",	no_argument,	   NULL, OPT_BALLOON },
	{ "9p",		required_argument, NULL, OPT_9P },
	{ "mmio-cmdline", no_argument,	   NULL, OPT_MMIO_CMDLINE },
	{ "poll",	required_argument, NULL, OPT_POLL },
	{ "iothreads",	required_argument, NULL, OPT_IOTHREADS },
	{ "no-seccomp",	no_argument,	   NULL, OPT_NO_SECCOMP },
	{ "no-landlock", no_argument,	   NULL, OPT_NO_LANDLOCK },
	{ "boot-profile", no_argument,	   NULL, OPT_BOOT_PROFILE },
	{ "verbose",	no_argument,	   NULL, 'v' },
	{ "quiet",	no_argument,	   NULL, 'q' },
	{ "help",	no_argument,	   NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void cli_usage_run(void)
{
	printf(
"usage: lkvm run [options]\n"
"\n"
"Boot a guest: a Linux bzImage, an ELF kernel with a PVH entry (vmlinux),\n"
"or raw firmware. With neither -k nor -f, boot the default guest (see\n"
"scripts/default-guest.sh).\n"
"\n"
"  -k, --kernel FILE     kernel: bzImage or ELF vmlinux (PVH entry)\n"
"  -i, --initrd FILE     initial ramdisk\n"
"  -p, --params STRING   the kernel command line, exactly (default: lkvm's,\n"
"                        see below)\n"
"      --append STRING   add STRING to the command line (-p's, the default\n"
"                        guest's or lkvm's own); repeatable\n"
"  -m, --mem MiB         guest RAM in MiB (default %d, at least %d)\n"
"  -c, --cpus N          number of vCPUs (default 1, at most %d)\n"
"  -f, --firmware FILE   raw firmware image (<= 256 KiB, multiple of 4 KiB),\n"
"                        mapped to end at 1 MiB and 4 GiB; starts at the\n"
"                        reset vector in real mode\n"
"  -d, --disk PATH[,ro][,direct][,poll=MODE][,aio=io_uring|sync]\n"
"            [,format=raw|qcow2][,backing-dir=DIR]\n"
"                        a virtio-blk disk: raw or qcow2 image (found from\n"
"                        its header), or block device; locked while in\n"
"                        use; repeatable (up to %d); aio: io_uring\n"
"                        (default where the kernel has it) or sync (one\n"
"                        request at a time); a qcow2's backing files must\n"
"                        lie in its own directory or in DIR\n"
"  -n, --network mode=tap|user|none[,guest_mac=XX:XX:XX:XX:XX:XX]...\n"
"                        a virtio-net card; MAC stable per --name unless\n"
"                        given; '-n tap', '-n user,...' for short;\n"
"                        repeatable (up to %d)\n"
"                        tap: a host tap (attached, or created with\n"
"                        CAP_NET_ADMIN): tapif=NAME, queues=N (a queue\n"
"                        pair per vCPU, up to N), script=PATH (run as\n"
"                        PATH IFNAME before the guest starts)\n"
"                        user: user-mode networking (libslirp), no\n"
"                        privileges; guest 10.0.2.15 by DHCP, host\n"
"                        loopback at 10.0.2.2;\n"
"                        hostfwd=tcp|udp:[HOSTADDR]:PORT-[GUESTADDR]:PORT\n"
"                        (HOSTADDR 127.0.0.1 unless given);\n"
"                        host_loopback=off: the host's loopback is out of\n"
"                        reach (lkvm sandbox's default); restrict=on:\n"
"                        all outside is, but hostfwd's connections in\n"
"                        poll=MODE: this card's --poll mode\n"
"      --9p HOSTDIR,TAG[,ro]\n"
"                        share a host directory over virtio-9p (9P2000.L);\n"
"                        the guest mounts it with 'mount -t 9p -o\n"
"                        trans=virtio,version=9p2000.L TAG DIR'; nothing\n"
"                        outside HOSTDIR is reachable (no symlink is\n"
"                        followed on the host); ro refuses every change;\n"
"                        repeatable (up to %d)\n"
"      --balloon         a virtio-balloon device: lkvm balloon NAME\n"
"                        --inflate/--deflate MiB takes RAM back from the\n"
"                        guest and returns it\n"
"      --rng             a virtio-rng device: entropy from the host's\n"
"                        getrandom() (the guest's /dev/hwrng)\n"
"      --virtio-transport pci|pci-legacy|mmio\n"
"                        how virtio devices appear: modern virtio-pci with\n"
"                        MSI-X (default), legacy virtio-pci (I/O BAR,\n"
"                        INTx; x86 only) for old kernels, or virtio-mmio\n"
"                        (in ACPI, or arm64's device tree)\n"
"      --irqchip gicv3|gicv2\n"
"                        arm64: the interrupt controller (default gicv3,\n"
"                        with an ITS for MSIs); not on x86\n"
"      --dump-dtb FILE   arm64: also write the device tree the guest boots\n"
"                        with to FILE (dtc -I dtb FILE shows it)\n"
"      --no-ioeventfd    serve queue notifies in vCPU threads (to measure\n"
"                        what ioeventfd saves); no polling then\n"
"      --poll off|auto|on[,max_us=N][,start_rate=N][,stop_idle_ms=N]\n"
"                        virtqueue polling by the I/O threads: auto\n"
"                        (default) polls a queue that sees start_rate\n"
"                        kicks and requests a second or more (%u), for an\n"
"                        adaptive window of up to max_us (%u) after its\n"
"                        last activity, until stop_idle_ms (%u) pass\n"
"                        without any; on: always, window max_us; off:\n"
"                        never\n"
"      --iothreads N     serve every queue from N shared I/O threads\n"
"                        (default: a thread per disk and per queue pair)\n"
"      --mmio-cmdline    also list virtio-mmio devices on the kernel command\n"
"                        line (virtio_mmio.device=), for kernels without ACPI\n"
"      --name NAME       the VM's name for lkvm list, stop, pause, resume,\n"
"                        stat and debug (unique; default guest-PID)\n"
"      --console serial|virtio\n"
"                        where the guest's console is: the 8250 UART on\n"
"                        COM1 (ttyS0, the default) or virtio-console (hvc0;\n"
"                        typed input goes there; console=hvc0 replaces\n"
"                        console=ttyS0 in the default command line)\n"
"      --timeout SECONDS stop the guest after SECONDS and exit 124\n"
"      --stats FILE      write run statistics as JSON to FILE (- = stderr)\n"
"      --boot-profile    at exit, say when the boot reached each milestone\n"
"                        (first guest instruction, first console byte, the\n"
"                        kernel's banner and Run /init, init, exit) with the\n"
"                        exits and lkvm time between them (also in --stats)\n"
"      --reboot          when the guest reboots, start it again (each boot\n"
"                        in a fresh child process; --timeout covers all)\n"
"      --no-seccomp      run without the seccomp filters that confine each\n"
"                        thread (vCPU, I/O, slirp, console, main) to its\n"
"                        syscalls\n"
"      --no-landlock     run without Landlock, which keeps lkvm from every\n"
"                        file it was not given once the VM is set up (and\n"
"                        from TCP, signals, abstract sockets where the\n"
"                        kernel can); independent of --no-seccomp\n"
"  -v, --verbose         more messages (repeat for debug)\n"
"  -q, --quiet           errors only\n"
"  -h, --help            this text\n"
"\n"
"lkvm's default kernel command line:\n"
"  %s\n"
"\n"
"The console is the terminal (raw mode; Ctrl-a x quits, Ctrl-a Ctrl-a sends\n"
"Ctrl-a) or, when stdin is not a terminal, stdin/stdout as they are.\n"
"\n"
"Exit status:\n"
"  0     the guest powered off (ACPI S5), or quit with Ctrl-a x\n"
"  N     the guest wrote byte N to the debug-exit port 0x%x\n"
"  1     lkvm error: bad option, missing or invalid file, KVM failure\n"
"  2     the guest crashed: triple fault or KVM emulation failure\n"
"  3     the guest asked to reboot (without --reboot)\n"
"  4     the guest panicked (reported through pvpanic, port 0x505)\n"
"  124   --timeout expired\n"
"  159   a thread made a syscall its seccomp filter forbids (stderr\n"
"        names the thread class and the syscall; see --no-seccomp)\n"
"  128+N lkvm was stopped by signal N\n",
	DEFAULT_MEM_MIB, MIN_MEM_MIB, LKVM_MAX_CPUS, LKVM_MAX_DISKS,
	LKVM_MAX_NICS, LKVM_MAX_SHARES, VIRTIO_POLL_DEFAULT_START_RATE,
	VIRTIO_POLL_DEFAULT_MAX_US, VIRTIO_POLL_DEFAULT_STOP_IDLE_MS,
	arch_default_params, 0x501);
}

/*
 * The guest command line lkvm gives unless -p says otherwise: the arch's,
 * with hvc0 as the console for --console virtio. Only one console=: with
 * ttyS0 as well, every kernel message would be printed twice.
 */
static const char *base_params(const struct vm_config *cfg)
{
	static char buf[CMDLINE_BUF];
	const char *serial = strstr(arch_default_params, "console=ttyS0");
	size_t len = strlen("console=ttyS0");

	if (!cfg->virtio_console)
		return arch_default_params;
	if (!serial)
		snprintf(buf, sizeof(buf), "console=hvc0 %s", arch_default_params);
	else
		snprintf(buf, sizeof(buf), "%.*sconsole=hvc0%s",
			 (int)(serial - arch_default_params),
			 arch_default_params, serial + len);
	return buf;
}

static int parse_bounded(const char *opt, const char *arg, uint64_t min,
			 uint64_t max, uint64_t *val)
{
	if (!parse_u64(arg, val) || *val < min || *val > max) {
		pr_err("%s '%s': expected a whole number from %llu to %llu",
		       opt, arg, (unsigned long long)min,
		       (unsigned long long)max);
		return -1;
	}
	return 0;
}

static int check_readable(const char *path, const char *what)
{
	if (access(path, R_OK) == 0)
		return 0;
	pr_err("cannot read %s '%s': %m", what, path);
	return -1;
}

/* The default guest: kernel, initrd and cmdline files in one folder. */
static const char *default_guest_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("LKVM_DEFAULT_GUEST");

	if (env && *env)
		return env;
	env = getenv("XDG_CACHE_HOME");
	if (env && *env)
		snprintf(dir, sizeof(dir), "%s/lkvm/default", env);
	else
		snprintf(dir, sizeof(dir), "%s/.cache/lkvm/default",
			 getenv("HOME") ? getenv("HOME") : "/root");
	return dir;
}

/* The default guest's cmdline file: what it adds to lkvm's command line. */
static int default_guest_params(const char *path, struct vm_config *cfg)
{
	static char params[CMDLINE_BUF];
	char extra[CMDLINE_BUF];
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f)
		return 0;
	if (fgets(extra, sizeof(extra), f)) {
		extra[strcspn(extra, "\n")] = '\0';
		if (snprintf(params, sizeof(params), "%s %s",
			     base_params(cfg), extra) >= (int)sizeof(params)) {
			pr_err("%s is too long", path);
			ret = -1;
		}
		cfg->params = params;
	}
	fclose(f);
	return ret;
}

static int use_default_guest(struct vm_config *cfg)
{
	static char kernel[PATH_MAX], initrd[PATH_MAX];
	const char *dir = default_guest_dir();
	char path[PATH_MAX];

	if (strlen(dir) > PATH_MAX - 16) {
		pr_err("default guest folder name is too long");
		return -1;
	}
	snprintf(kernel, sizeof(kernel), "%.*s/kernel", PATH_MAX - 16, dir);
	snprintf(initrd, sizeof(initrd), "%.*s/initrd", PATH_MAX - 16, dir);
	snprintf(path, sizeof(path), "%.*s/cmdline", PATH_MAX - 16, dir);
	if (access(kernel, R_OK)) {
		pr_err("no kernel given (-k) and no default guest in %s: run scripts/default-guest.sh or pass -k",
		       dir);
		return -1;
	}
	cfg->kernel = kernel;
	if (!access(initrd, R_OK))
		cfg->initrd = initrd;
	/* -p beats the guest's cmdline file. */
	if (!cfg->params && default_guest_params(path, cfg))
		return -1;
	cfg->default_guest = true;
	return 0;
}

/*
 * --9p HOSTDIR,TAG[,ro]. The directory is opened with the other inputs;
 * a tag is what a mount names, so it is printable and has no comma.
 */
static int parse_share(const char *arg, struct share_config *sh)
{
	const char *comma = strchr(arg, ',');
	const char *tag, *end;
	size_t len;

	if (!comma || comma == arg) {
		pr_err("--9p '%s': expected HOSTDIR,TAG[,ro]", arg);
		return -1;
	}
	tag = comma + 1;
	end = strchr(tag, ',');
	len = end ? (size_t)(end - tag) : strlen(tag);
	if (!len || len >= sizeof(sh->tag)) {
		pr_err("--9p '%s': the tag is 1-%zu characters", arg,
		       sizeof(sh->tag) - 1);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if (tag[i] <= ' ' || tag[i] > '~') {
			pr_err("--9p '%s': the tag has a space or an unprintable character", arg);
			return -1;
		}
	if (end && strcmp(end, ",ro")) {
		pr_err("--9p '%s': unknown option '%s' (only ro)", arg, end + 1);
		return -1;
	}
	memcpy(sh->tag, tag, len);
	sh->tag[len] = '\0';
	sh->ro = end != NULL;
	if ((size_t)(comma - arg) >= sizeof(sh->path)) {
		pr_err("--9p '%.40s...': the directory's name is too long", arg);
		return -1;
	}
	memcpy(sh->path, arg, comma - arg);
	sh->path[comma - arg] = '\0';
	return 0;
}

static int add_share(const char *arg, struct vm_config *cfg)
{
	struct share_config *sh = &cfg->shares[cfg->nr_shares];
	unsigned int i;

	if (cfg->nr_shares == LKVM_MAX_SHARES) {
		pr_err("--9p: at most %d shares", LKVM_MAX_SHARES);
		return -1;
	}
	if (parse_share(arg, sh))
		return -1;
	for (i = 0; i < cfg->nr_shares; i++)
		if (!strcmp(cfg->shares[i].tag, sh->tag)) {
			pr_err("--9p '%s': tag '%s' is already used", arg,
			       sh->tag);
			return -1;
		}
	cfg->nr_shares++;
	return 0;
}

/*
 * -d DIR (or -d NAME, a directory lkvm setup made): the guest's root file
 * system over virtio-9p, as kvmtool's -d takes a directory. The path is
 * what comes before an option; a directory means a root, anything else a
 * disk image.
 */
static const char *root_dir_path(const char *arg, char *buf, size_t size)
{
	size_t len = strcspn(arg, ",");
	struct stat st;

	if (len >= size)
		return NULL;
	memcpy(buf, arg, len);
	buf[len] = '\0';
	if (!stat(buf, &st))
		return S_ISDIR(st.st_mode) ? buf : NULL;
	if (strchr(buf, '/') || !control_name_valid(buf))
		return NULL;
	return setup_dir(buf, buf, size) || stat(buf, &st) ||
	       !S_ISDIR(st.st_mode) ? NULL : buf;
}

static bool root_dir_option(const char *arg)
{
	char path[PATH_MAX];

	return root_dir_path(arg, path, sizeof(path)) != NULL;
}

static int add_root_dir(const char *arg, struct vm_config *cfg)
{
	const char *comma = strchr(arg, ',');
	struct share_config *sh = &cfg->shares[cfg->nr_shares];

	if (cfg->root_share) {
		pr_err("-d '%s': the guest has a root directory already", arg);
		return -1;
	}
	if (comma && strcmp(comma, ",ro")) {
		pr_err("-d '%s': a root directory takes only ro", arg);
		return -1;
	}
	if (cfg->nr_shares == LKVM_MAX_SHARES) {
		pr_err("-d '%s': at most %d shares", arg, LKVM_MAX_SHARES);
		return -1;
	}
	/* the root goes first, so a kernel finds it as the first 9p device */
	memmove(&cfg->shares[1], &cfg->shares[0],
		cfg->nr_shares * sizeof(*sh));
	sh = &cfg->shares[0];
	root_dir_path(arg, sh->path, sizeof(sh->path));
	snprintf(sh->tag, sizeof(sh->tag), "%s", ROOT_DIR_TAG);
	sh->ro = comma != NULL;
	cfg->nr_shares++;
	cfg->root_share = true;
	return 0;
}

/* -d's poll=, the device's key among the disk's. */
static int disk_poll_key(void *opaque, const char *arg, const char *key,
			 size_t n)
{
	struct disk_config *d = opaque;

	if (n <= 5 || strncmp(key, "poll=", 5))
		return 1;
	if (!virtio_poll_parse_mode(key + 5, n - 5, &d->poll))
		return 0;
	pr_err("-d '%s': poll must be off, auto or on", arg);
	return -1;
}

static int add_disk(const char *arg, struct disk_config *d)
{
	struct disk_option_extra poll = {
		.keys = "poll=", .parse = disk_poll_key, .opaque = d,
	};

	d->poll = VIRTIO_POLL_UNSET;
	return disk_parse_option(arg, &d->disk, d->buf, sizeof(d->buf), &poll);
}

/* The kernel (or guest/init, for a kernel with 9p as modules) mounts it. */
static int join_root_params(struct vm_config *cfg)
{
	static char buf[CMDLINE_BUF];
	const char *base = cfg->params ? cfg->params : base_params(cfg);
	int n;

	if (strstr(base, "root="))
		return 0;	/* the user's own choice */
	n = snprintf(buf, sizeof(buf), "%s root=%s rootfstype=9p "
		     "rootflags=trans=virtio,version=9p2000.L,msize=524288 %s",
		     base, ROOT_DIR_TAG, cfg->shares[0].ro ? "ro" : "rw");
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		pr_err("-d: the command line is too long");
		return -1;
	}
	cfg->params = buf;
	return 0;
}

/* The words of the options that name one of a few things, by value. */
static const char *const transport_words[] = {
	[VIRTIO_TRANSPORT_PCI] = "pci",
	[VIRTIO_TRANSPORT_PCI_LEGACY] = "pci-legacy",
	[VIRTIO_TRANSPORT_MMIO] = "mmio",
};
static const char *const irqchip_words[] = {
	[VM_IRQCHIP_GICV3] = "gicv3",
	[VM_IRQCHIP_GICV2] = "gicv2",
};
static const char *const console_words[] = { "serial", "virtio" };

/*
 * arg is one of words[] (NULL entries are no word): its index, or -1 with
 * a message that names them all ("expected a, b or c").
 */
static int parse_choice(const char *opt, const char *arg,
			const char *const *words, unsigned int n)
{
	char list[128] = "";
	size_t used = 0;
	unsigned int i, last = 0, shown = 0;

	for (i = 0; i < n; i++) {
		if (words[i] && !strcmp(arg, words[i]))
			return i;
		if (words[i])
			last = i;
	}
	for (i = 0; i < n && used < sizeof(list); i++)
		if (words[i])
			used += snprintf(list + used, sizeof(list) - used, "%s%s",
					 !shown++ ? "" : i == last ? " or " : ", ",
					 words[i]);
	pr_err("%s '%s': expected %s", opt, arg, list);
	return -1;
}

/* --append, repeatable: the words of every one, in order. */
static int append_params(struct vm_config *cfg, const char *words)
{
	static char buf[CMDLINE_BUF];
	size_t used = cfg->append ? strlen(buf) : 0;
	int n;

	n = snprintf(buf + used, sizeof(buf) - used, "%s%s", used ? " " : "",
		     words);
	if (n < 0 || (size_t)n >= sizeof(buf) - used) {
		pr_err("--append: the command line is too long");
		return -1;
	}
	cfg->append = buf;
	return 0;
}

static int parse_option(int opt, struct vm_config *cfg)
{
	uint64_t v;
	int c;

	switch (opt) {
	case 'k': cfg->kernel = optarg; return 0;
	case 'i': cfg->initrd = optarg; return 0;
	case 'p': cfg->params = optarg; return 0;
	case OPT_APPEND: return append_params(cfg, optarg);
	case 'f': cfg->firmware = optarg; return 0;
	case OPT_NAME:
		if (!control_name_valid(optarg)) {
			pr_err("--name '%s': a VM name is 1-%d letters, digits, '.', '_' or '-', not starting with '.'",
			       optarg, CONTROL_NAME_MAX);
			return -1;
		}
		cfg->name = optarg;
		return 0;
	case OPT_STATS: cfg->stats_path = optarg; return 0;
	case OPT_REBOOT: cfg->reboot = true; return 0;
	case OPT_NO_IOEVENTFD: cfg->no_ioeventfd = true; return 0;
	case OPT_RNG: cfg->rng = true; return 0;
	case OPT_BALLOON: cfg->balloon = true; return 0;
	case OPT_NO_SECCOMP: cfg->no_seccomp = true; return 0;
	case OPT_NO_LANDLOCK: cfg->no_landlock = true; return 0;
	case OPT_BOOT_PROFILE: cfg->boot_profile = true; return 0;
	case OPT_MMIO_CMDLINE: cfg->mmio_cmdline = true; return 0;
	case OPT_9P:
		return add_share(optarg, cfg);
	case 'd':
		if (root_dir_option(optarg))
			return add_root_dir(optarg, cfg);
		if (cfg->nr_disks == LKVM_MAX_DISKS) {
			pr_err("-d: at most %d disks", LKVM_MAX_DISKS);
			return -1;
		}
		return add_disk(optarg, &cfg->disks[cfg->nr_disks++]);
	case OPT_TRANSPORT:
		c = parse_choice("--virtio-transport", optarg, transport_words,
				 ARRAY_SIZE(transport_words));
		if (c < 0)
			return -1;
		cfg->transport = c;
		return 0;
	case OPT_DUMP_DTB:
		cfg->dump_dtb = optarg;
		return 0;
	case OPT_IRQCHIP:
		c = parse_choice("--irqchip", optarg, irqchip_words,
				 ARRAY_SIZE(irqchip_words));
		if (c < 0)
			return -1;
		cfg->irqchip = c;
		return 0;
	case OPT_POLL:
		return virtio_poll_parse(optarg, &cfg->poll);
	case OPT_IOTHREADS:
		if (parse_bounded("--iothreads", optarg, 1, IOTHREAD_POOL_MAX,
				  &v))
			return -1;
		cfg->nr_iothreads = v;
		return 0;
	case 'n':
		if (cfg->nr_nics == LKVM_MAX_NICS) {
			pr_err("-n: at most %d network cards", LKVM_MAX_NICS);
			return -1;
		}
		return net_parse_option(optarg, &cfg->nics[cfg->nr_nics++]);
	case 'v': if (log_threshold < LOG_DEBUG) log_threshold++; return 0;
	case 'q': log_threshold = LOG_ERROR; return 0;
	case 'm':
		if (parse_bounded("-m", optarg, MIN_MEM_MIB, LKVM_MAX_MEM_MIB, &v))
			return -1;
		cfg->mem_mib = v;
		return 0;
	case 'c':
		if (parse_bounded("-c", optarg, 1, LKVM_MAX_CPUS, &v))
			return -1;
		cfg->nr_cpus = v;
		return 0;
	case OPT_TIMEOUT:
		if (parse_bounded("--timeout", optarg, 1, 86400 * 365, &v))
			return -1;
		cfg->timeout_s = v;
		return 0;
	case OPT_CONSOLE:
		c = parse_choice("--console", optarg, console_words,
				 ARRAY_SIZE(console_words));
		if (c < 0)
			return -1;
		cfg->virtio_console = c == 1;
		return 0;
	default:
		return -1;	/* getopt printed why */
	}
}

/* NICs without a MAC get one derived from the VM's name and their index. */
static void assign_macs(struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_nics; i++)
		if (!cfg->nics[i].mac_given)
			net_default_mac(cfg->name, i, cfg->nics[i].mac);
}

/* --append's words after the command line the guest would get without. */
static int join_append(struct vm_config *cfg)
{
	static char buf[CMDLINE_BUF];
	const char *base = cfg->params ? cfg->params : base_params(cfg);
	int n = snprintf(buf, sizeof(buf), "%s %s", base, cfg->append);

	if (n < 0 || (size_t)n >= sizeof(buf)) {
		pr_err("--append: the command line is too long");
		return -1;
	}
	cfg->params = buf;
	return 0;
}

static int check_config(struct vm_config *cfg)
{
	if (cfg->firmware &&
	    (cfg->kernel || cfg->initrd || cfg->params || cfg->append)) {
		pr_err("--firmware boots the firmware alone: drop -k, -i, -p and --append");
		return -1;
	}
	if (cfg->initrd && !cfg->kernel) {
		pr_err("-i needs a kernel (-k)");
		return -1;
	}
	if (!cfg->kernel && !cfg->firmware && use_default_guest(cfg))
		return -1;
	if (cfg->append && join_append(cfg))
		return -1;
	if (cfg->root_share && !cfg->firmware && join_root_params(cfg))
		return -1;
	if (!cfg->params && cfg->virtio_console && !cfg->firmware)
		cfg->params = base_params(cfg);
	if (cfg->kernel && check_readable(cfg->kernel, "kernel"))
		return -1;
	if (cfg->initrd && check_readable(cfg->initrd, "initrd"))
		return -1;
	if (cfg->firmware && check_readable(cfg->firmware, "firmware"))
		return -1;
	assign_macs(cfg);
	return 0;
}

enum cli_result cli_parse_run(int argc, char **argv, struct vm_config *cfg)
{
	int opt;

	memset(cfg, 0, sizeof(*cfg));
	cfg->mem_mib = DEFAULT_MEM_MIB;
	cfg->nr_cpus = 1;
	cfg->transport = arch_default_transport;
	virtio_poll_config_default(&cfg->poll);
	optind = 0;	/* 0: glibc re-initialises fully, so tests can parse twice */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":k:i:p:m:c:f:d:n:vqh", run_options,
				  NULL)) != -1) {
		if (opt == 'h') {
			cli_usage_run();
			return CLI_EXIT_OK;
		}
		if (opt == '?' || opt == ':') {
			pr_err("%s '%s' (see lkvm run --help)",
			       opt == '?' ? "unknown option" : "missing value for",
			       argv[optind - 1]);
			return CLI_ERROR;
		}
		if (parse_option(opt, cfg))
			return CLI_ERROR;
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s' (see lkvm run --help)",
		       argv[optind]);
		return CLI_ERROR;
	}
	return check_config(cfg) ? CLI_ERROR : CLI_OK;
}

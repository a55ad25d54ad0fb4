// SPDX-License-Identifier: GPL-2.0
/* lkvm's entry: subcommand dispatch. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/boot_profile.h"
#include "lkvm/cli.h"
#include "lkvm/control.h"
#include "lkvm/sandbox.h"
#include "lkvm/setup.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#ifndef LKVM_VERSION
#define LKVM_VERSION "0.1"
#endif

/*
 * A guest reboot with --reboot starts the VM again in a fresh process: the
 * surest way to give the guest a machine in its power-on state. The
 * process that runs a VM is confined by seccomp, and filters outlive
 * execve(), so it cannot start the next one itself: a parent that never
 * touches KVM runs each boot in a child of its own and waits for it,
 * passing on the signals that end a VM.
 */
static int run_boot(const struct vm_config *cfg, bool *reboot)
{
	sigset_t fwd, old;
	siginfo_t si;
	int status, pfd[2];
	pid_t pid;
	char c;

	sigemptyset(&fwd);
	sigaddset(&fwd, SIGINT);
	sigaddset(&fwd, SIGTERM);
	sigaddset(&fwd, SIGHUP);
	sigaddset(&fwd, SIGQUIT);
	sigaddset(&fwd, SIGCHLD);
	if (pipe2(pfd, O_CLOEXEC)) {
		pr_err("pipe: %m");
		return EXIT_VMM_ERROR;
	}
	sigprocmask(SIG_BLOCK, &fwd, &old);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		status = vm_run(cfg, reboot);
		/* the exit status alone is the guest's to choose: 3 is ambiguous */
		if (*reboot && write(pfd[1], "r", 1) != 1)
			pr_err("cannot ask for the reboot: %m");
		exit(status);
	}
	close(pfd[1]);
	if (pid < 0) {
		pr_err("fork: %m");
		status = EXIT_VMM_ERROR << 8;
	}
	while (pid > 0 && waitpid(pid, &status, WNOHANG) == 0)
		if (sigwaitinfo(&fwd, &si) > 0 && si.si_signo != SIGCHLD)
			kill(pid, si.si_signo);
	sigprocmask(SIG_SETMASK, &old, NULL);
	*reboot = read(pfd[0], &c, 1) == 1;
	close(pfd[0]);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static int run_with_reboot(struct vm_config *cfg)
{
	bool reboot;
	int code;

	/* --timeout covers all boots */
	if (cfg->timeout_s)
		cfg->deadline_ms = now_ms() + cfg->timeout_s * 1e3;
	if (!cfg->reboot)
		return vm_run(cfg, &reboot);
	for (;;) {
		code = run_boot(cfg, &reboot);
		/* the next boot's profile starts from its own zero */
		boot_profile_start(now_ms());
		if (!reboot)
			return code;
		/*
		 * A guest that reboots before the main loop ever looks at the
		 * clock would otherwise be started again for ever.
		 */
		if (cfg->deadline_ms && now_ms() >= cfg->deadline_ms) {
			pr_warn("timeout: stopped after %u s (exit status %d)",
				cfg->timeout_s, EXIT_TIMEOUT);
			return EXIT_TIMEOUT;
		}
		pr_info("guest rebooted: starting it again");
	}
}

static void usage(void)
{
	printf(
"usage: lkvm <command> [options]\n"
"\n"
"  run       boot a guest (lkvm run --help)\n"
"  sandbox [run options] -- CMD [ARGS]\n"
"            run CMD in a throwaway VM over the host's own files: the\n"
"            host's / read-only under a tmpfs overlay, the working\n"
"            directory read-write at the same path, as the caller's\n"
"            uid/gid; lkvm's exit status is CMD's (no CMD: a shell). The\n"
"            kernel (default: the default guest's) needs virtio-9p and\n"
"            overlayfs, built in or as modules in its initrd (-i)\n"
"  setup NAME\n"
"            make ~/.lkvm/NAME ($LKVM_HOME/NAME), a busybox root file\n"
"            system to boot with lkvm run -d NAME (over virtio-9p)\n"
"\n"
"  list                       the running VMs: name, pid, state\n"
"  stop NAME|--all            end a VM (its exit status is 0)\n"
"  pause NAME, resume NAME    stop and restart a VM's vCPUs\n"
"  stat NAME                  a VM's --stats counters, live, as JSON\n"
"  debug NAME --dump          each vCPU's registers\n"
"  debug NAME --sysrq KEY     Magic SysRq KEY on the guest's console\n"
"  balloon NAME --inflate MiB | --deflate MiB\n"
"                             take RAM from a guest (run --balloon), or give\n"
"                             it back\n"
"            VMs are named by run --name (default guest-PID); their\n"
"            sockets are in $LKVM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/lkvm,\n"
"            else /tmp/lkvm-UID\n"
"\n"
"  probe     say whether /dev/kvm runs guests at hardware speed\n"
"            (exit 0: yes, 2: software KVM only, 3: no KVM here,\n"
"            1: /dev/kvm unusable, such as no permission)\n"
"  version   print the version\n"
"  help      this text\n");
}

/*
 * Tell scripts where guests can run: 0 here at hardware speed, 2 only tiny
 * guests (a software KVM), 3 nowhere (no KVM on this machine: a nested set-up
 * under QEMU's TCG needs none), 1 /dev/kvm is there but unusable (fix it).
 */
static int cmd_probe(void)
{
	static const char *const verdicts[] = {
		[KVM_NONE] = "none", [KVM_UNUSABLE] = "unusable",
		[KVM_SOFTWARE] = "software", [KVM_HARDWARE] = "hardware",
	};
	static const int statuses[] = {
		[KVM_NONE] = 3, [KVM_UNUSABLE] = 1,
		[KVM_SOFTWARE] = 2, [KVM_HARDWARE] = 0,
	};
	enum kvm_kind kind;
	char why[160];
	int fd = kvm_device_open(&kind, why, sizeof(why));

	if (fd >= 0) {
		snprintf(why, sizeof(why), kind == KVM_SOFTWARE ?
			 "/dev/kvm is kvm_pvm, which emulates every guest instruction" :
			 "/dev/kvm is hardware-accelerated");
		close(fd);
	}
	printf("%s: %s\n", verdicts[kind], why);
	return statuses[kind];
}

/* lkvm sandbox [run options] [-- CMD [ARGS]] */
static int cmd_sandbox(int argc, char **argv)
{
	struct vm_config cfg;
	int opts = 1;

	while (opts < argc && strcmp(argv[opts], "--"))
		opts++;
	switch (cli_parse_run(opts, argv, &cfg)) {
	case CLI_EXIT_OK:
		return 0;
	case CLI_ERROR:
		return EXIT_VMM_ERROR;
	case CLI_OK:
		break;
	}
	if (opts < argc)
		opts++;		/* the "--" */
	if (sandbox_configure(&cfg, argc - opts, argv + opts))
		return EXIT_VMM_ERROR;
	return run_with_reboot(&cfg);
}

int main(int argc, char **argv)
{
	struct vm_config cfg;
	const char *cmd = argc > 1 ? argv[1] : "help";

	boot_profile_start(now_ms());
	if (!strcmp(cmd, "run")) {
		switch (cli_parse_run(argc - 1, argv + 1, &cfg)) {
		case CLI_EXIT_OK:
			return 0;
		case CLI_ERROR:
			return EXIT_VMM_ERROR;
		case CLI_OK:
			return run_with_reboot(&cfg);
		}
	}
	if (!strcmp(cmd, "sandbox"))
		return cmd_sandbox(argc - 1, argv + 1);
	if (!strcmp(cmd, "setup"))
		return setup_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("lkvm version %s\n", LKVM_VERSION);
		return 0;
	}
	if (vmctl_command(cmd))
		return vmctl_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "probe"))
		return cmd_probe();
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage();
		return 0;
	}
	pr_err("unknown command '%s' (see lkvm --help)", cmd);
	return EXIT_VMM_ERROR;
}

// SPDX-License-Identifier: GPL-2.0
/* lkvm's entry: subcommand dispatch. */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/cli.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#ifndef LKVM_VERSION
#define LKVM_VERSION "0.1"
#endif

/*
 * A guest reboot with --reboot starts the whole VMM again: a fresh process
 * is the surest way to give the guest a machine in its power-on state.
 */
#define DEADLINE_ENV	"LKVM_REBOOT_DEADLINE_MS"

/* --timeout covers all boots: a rebooted lkvm inherits the deadline. */
static void set_deadline(struct vm_config *cfg)
{
	const char *inherited = getenv(DEADLINE_ENV);

	if (!cfg->timeout_s)
		return;
	if (inherited && cfg->reboot)
		cfg->deadline_ms = strtod(inherited, NULL);
	else
		cfg->deadline_ms = now_ms() + cfg->timeout_s * 1e3;
}

static int run_with_reboot(struct vm_config *cfg, char **argv)
{
	char deadline[32];
	bool reboot;
	int code;

	set_deadline(cfg);
	code = vm_run(cfg, &reboot);
	if (reboot && cfg->reboot) {
		pr_info("guest rebooted: starting it again");
		snprintf(deadline, sizeof(deadline), "%.3f", cfg->deadline_ms);
		setenv(DEADLINE_ENV, deadline, 1);
		execv("/proc/self/exe", argv);
		pr_err("cannot restart lkvm for the reboot: %m");
	}
	return code;
}

static void usage(void)
{
	printf(
"usage: lkvm <command> [options]\n"
"\n"
"  run       boot a guest (lkvm run --help)\n"
"  probe     say whether /dev/kvm runs guests at hardware speed\n"
"            (exit 0: yes, 2: software KVM only, 1: unusable)\n"
"  version   print the version\n"
"  help      this text\n");
}

/* Tell scripts whether Linux guests can boot here at useful speed. */
static int cmd_probe(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		printf("unusable: cannot open /dev/kvm: %m\n");
		return 1;
	}
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		printf("unusable: /dev/kvm speaks an unknown API version\n");
		close(fd);
		return 1;
	}
	if (arch_kvm_is_software(fd)) {
		printf("software: /dev/kvm is kvm_pvm, which emulates every guest instruction\n");
		close(fd);
		return 2;
	}
	printf("hardware: /dev/kvm is hardware-accelerated\n");
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct vm_config cfg;
	const char *cmd = argc > 1 ? argv[1] : "help";

	if (!strcmp(cmd, "run")) {
		switch (cli_parse_run(argc - 1, argv + 1, &cfg)) {
		case CLI_EXIT_OK:
			return 0;
		case CLI_ERROR:
			return EXIT_VMM_ERROR;
		case CLI_OK:
			return run_with_reboot(&cfg, argv);
		}
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("lkvm version %s\n", LKVM_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "probe"))
		return cmd_probe();
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage();
		return 0;
	}
	pr_err("unknown command '%s' (see lkvm --help)", cmd);
	return EXIT_VMM_ERROR;
}

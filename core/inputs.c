// SPDX-License-Identifier: GPL-2.0
/*
 * Open and check everything the user named before /dev/kvm is touched (see
 * include/lkvm/inputs.h): the first problem found is the one reported, in
 * the order the options are documented (guest, disks, network).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/file_map.h"
#include "lkvm/inputs.h"
#include "lkvm/p9.h"
#include "lkvm/util.h"

static int inputs_open_disks(struct vm_inputs *in, const struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_disks; i++) {
		if (disk_open(&in->disks[i], &cfg->disks[i].disk))
			return -1;
		in->nr_disks++;
	}
	return 0;
}

/* A queue pair per vCPU, up to what the user asked for. */
static unsigned int nic_queue_pairs(const struct vm_config *cfg,
				    const struct net_config *nic)
{
	return MAX(1u, MIN(MIN(nic->queues, cfg->nr_cpus),
			   (unsigned int)NET_MAX_QUEUE_PAIRS));
}

static int inputs_open_nets(struct vm_inputs *in, const struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_nics; i++)
		if (net_backend_open(&in->nets[i], &cfg->nics[i],
				     nic_queue_pairs(cfg, &cfg->nics[i])))
			return -1;
	return 0;
}

/*
 * Each share's open files are host fds (at most P9_MAX_OPEN each): lift
 * the soft limit toward the hard one, so that a guest's open files do not
 * take the fds lkvm itself needs later (a queue's eventfd, a client).
 */
static void raise_fd_limit(unsigned int nr_shares)
{
	rlim_t want = 1024 + (rlim_t)nr_shares * P9_MAX_OPEN;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want :
		      (rl.rlim_max < want ? rl.rlim_max : want);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_debug("setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
}

static int inputs_open_shares(struct vm_inputs *in,
			      const struct vm_config *cfg)
{
	unsigned int i;

	if (cfg->nr_shares)
		raise_fd_limit(cfg->nr_shares);
	for (i = 0; i < cfg->nr_shares; i++) {
		const char *path = cfg->shares[i].path, *fs;

		in->share_fds[i] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (in->share_fds[i] < 0) {
			pr_err("--9p %s: %s", path, errno == ENOTDIR ?
			       "not a directory" : strerror(errno));
			return -1;
		}
		fs = p9_kernel_fs(in->share_fds[i]);
		if (fs) {
			pr_err("--9p %s: on %s, a kernel interface, which no share serves",
			       path, fs);
			return -1;
		}
	}
	return 0;
}

struct guest_open {
	struct vm_inputs *in;
	const struct vm_config *cfg;
};

static int guest_open(void *arg)
{
	struct guest_open *o = arg;

	o->in->guest = arch_guest_open(o->cfg);
	return o->in->guest ? 0 : -1;
}

int vm_inputs_open(struct vm_inputs *in, const struct vm_config *cfg)
{
	struct guest_open o = { .in = in, .cfg = cfg };
	unsigned int i;

	memset(in, 0, sizeof(*in));	/* disks: none open */
	for (i = 0; i < LKVM_MAX_SHARES; i++)
		in->share_fds[i] = -1;
	/* The parsers read the mapped kernel file: see file_map.h. */
	if (mapped_file_guard(guest_open, &o) || inputs_open_disks(in, cfg) ||
	    inputs_open_nets(in, cfg) || inputs_open_shares(in, cfg))
		return -1;
	return 0;
}

struct guest_load {
	struct vm_inputs *in;
	struct vm *vm;
};

static int guest_load(void *arg)
{
	struct guest_load *l = arg;

	return arch_load_guest(l->vm, l->in->guest);
}

int vm_inputs_load_guest(struct vm_inputs *in, struct vm *vm)
{
	struct guest_load l = { .in = in, .vm = vm };
	int ret = mapped_file_guard(guest_load, &l);

	/* Guest RAM has it now: the file's pages need not stay mapped. */
	arch_guest_close(in->guest);
	in->guest = NULL;
	return ret;
}

void vm_inputs_close(struct vm_inputs *in)
{
	unsigned int i;

	for (i = 0; i < LKVM_MAX_NICS; i++)
		net_backend_close(&in->nets[i]);
	for (i = 0; i < LKVM_MAX_DISKS; i++)
		disk_close(&in->disks[i]);
	for (i = 0; i < LKVM_MAX_SHARES; i++)
		if (in->share_fds[i] >= 0) {
			close(in->share_fds[i]);
			in->share_fds[i] = -1;
		}
	in->nr_disks = 0;
	arch_guest_close(in->guest);
	in->guest = NULL;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The tap backend. Frames cross the tap with a virtio-net header in front
 * (IFF_VNET_HDR, TUNSETVNETHDRSZ), exactly the header the guest's driver
 * puts on its buffers, so they pass unchanged. With several queue pairs
 * the tap is opened once per pair (IFF_MULTI_QUEUE) and the kernel
 * spreads flows over them; pairs the driver has not enabled are detached
 * (TUNSETQUEUE) so that nothing is steered to a queue no one serves.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lkvm/net.h"
#include "lkvm/util.h"

#define VNET_HDR_LEN	12

extern char **environ;

static void tap_explain(const char *ifname, int err)
{
	if (err == EBUSY)
		pr_err("tap '%s' is busy: another process has it open", ifname);
	else if (err == EPERM)
		pr_err("cannot use tap '%s': creating a tap needs CAP_NET_ADMIN (or create it for your user: ip tuntap add dev %s mode tap user $USER vnet_hdr)",
		       ifname, ifname);
	else if (err == EINVAL)
		pr_err("cannot attach to tap '%s': it exists with other flags (multi_queue must match queues=)",
		       ifname);
	else
		pr_err("cannot attach to tap '%s': %s", ifname, strerror(err));
}

/* The same request on every queue of the tap. */
static int tap_ioctl_all(struct net_backend *be, unsigned long req,
			 unsigned long arg)
{
	unsigned int i;

	for (i = 0; i < be->nr_queues; i++)
		if (ioctl(be->fds[i], req, arg) < 0)
			return -errno;
	return 0;
}

static int tap_set_header_len(struct net_backend *be, int len)
{
	return tap_ioctl_all(be, TUNSETVNETHDRSZ, (unsigned long)&len);
}

static int tap_set_offloads(struct net_backend *be, unsigned int tun_flags)
{
	return tap_ioctl_all(be, TUNSETOFFLOAD, tun_flags);
}

static int tap_enable_queue(struct net_backend *be, unsigned int idx,
			    bool enable)
{
	struct ifreq ifr = {
		.ifr_flags = enable ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE,
	};

	if (be->nr_queues == 1 || idx >= be->nr_queues)
		return 0;
	/* EINVAL: already in that state (a reset re-enables pair 0). */
	if (ioctl(be->fds[idx], TUNSETQUEUE, &ifr) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

static void tap_close(struct net_backend *be)
{
	unsigned int i;

	for (i = 0; i < be->nr_queues; i++)
		if (be->fds[i] >= 0)
			close(be->fds[i]);
	be->nr_queues = 0;
}

static const struct net_backend_ops tap_ops = {
	.set_header_len = tap_set_header_len,
	.set_offloads = tap_set_offloads,
	.enable_queue = tap_enable_queue,
	.close = tap_close,
};

/*
 * TUNSETIFF. A single queue may also be one queue of an existing
 * multi-queue tap (queues= capped by the vCPUs, or not given): the flags
 * must match the tap's, so ask again as a multi-queue one.
 */
static int tap_set_iff(int fd, struct ifreq *ifr, bool named)
{
	int saved;

	if (!ioctl(fd, TUNSETIFF, ifr))
		return 0;
	if (errno != EINVAL || !named || (ifr->ifr_flags & IFF_MULTI_QUEUE))
		return -1;
	saved = errno;
	ifr->ifr_flags |= IFF_MULTI_QUEUE;
	if (!ioctl(fd, TUNSETIFF, ifr))
		return 0;
	errno = saved;
	return -1;
}

/* One more queue of the tap; the first names it when the kernel picks. */
static int tap_open_queue(struct net_backend *be, const char *ifname,
			  bool multi_queue)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	int hdr_len = VNET_HDR_LEN;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 && errno == EACCES) {
		pr_err("tap%s%s: cannot open /dev/net/tun: %s (a tap needs root or CAP_NET_ADMIN; -n user needs neither)",
		       ifname ? " " : "", ifname ? ifname : "", strerror(errno));
		return -1;
	}
	if (fd < 0) {
		pr_err("tap: cannot open /dev/net/tun: %s", strerror(errno));
		return -1;
	}
	if (multi_queue)
		ifr.ifr_flags |= IFF_MULTI_QUEUE;
	if (ifname)
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (tap_set_iff(fd, &ifr, ifname != NULL) < 0) {
		tap_explain(ifname ? ifname : "(new)", errno);
		goto fail;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0) {
		pr_err("tap '%s': TUNSETVNETHDRSZ: %s", ifr.ifr_name,
		       strerror(errno));
		goto fail;
	}
	snprintf(be->name, sizeof(be->name), "%s", ifr.ifr_name);
	be->fds[be->nr_queues++] = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

/* kvmtool's script=: "SCRIPT IFNAME" configures the new tap. */
static int tap_run_script(const char *script, const char *ifname)
{
	char *argv[] = { (char *)script, (char *)ifname, NULL };
	int status;
	pid_t pid;
	int err = posix_spawn(&pid, script, NULL, NULL, argv, environ);

	if (err) {
		pr_err("tap '%s': cannot run script '%s': %s", ifname, script,
		       strerror(err));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	pr_err("tap '%s': script '%s' failed (%s %d)", ifname, script,
	       WIFEXITED(status) ? "exit status" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return -1;
}

int tap_backend_open(struct net_backend *be, const struct net_config *cfg,
		     unsigned int queues)
{
	const char *ifname = cfg->tapif[0] ? cfg->tapif : NULL;

	memset(be, 0, sizeof(*be));
	be->ops = &tap_ops;
	while (be->nr_queues < queues)
		if (tap_open_queue(be, be->nr_queues ? be->name : ifname,
				   queues > 1))
			goto fail;
	/* Probe, then hand over nothing until a driver says what it takes. */
	be->offloads = !tap_set_offloads(be, TUN_F_CSUM | TUN_F_TSO4 |
					     TUN_F_TSO6);
	tap_set_offloads(be, 0);
	if (cfg->script[0] && tap_run_script(cfg->script, be->name))
		goto fail;
	return 0;
fail:
	tap_close(be);
	be->ops = NULL;
	return -1;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The tap backend and the -n option. Frames cross the tap with a 12-byte
 * virtio-net header in front (IFF_VNET_HDR, TUNSETVNETHDRSZ), exactly the
 * header a VERSION_1 virtio-net driver puts on its buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lkvm/net.h"
#include "lkvm/util.h"

#define VNET_HDR_LEN	12

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6 || strlen(s) != 17)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = b[i];
	/* A multicast or all-zero address cannot be a NIC's own. */
	if (mac[0] & 1)
		return -1;
	for (i = 0; i < 6; i++)
		if (mac[i])
			return 0;
	return -1;
}

static int net_parse_pair(const char *arg, const char *key, const char *val,
			  struct net_config *cfg)
{
	if (!strcmp(key, "mode")) {
		if (!strcmp(val, "tap"))
			cfg->mode = NET_MODE_TAP;
		else if (!strcmp(val, "none"))
			cfg->mode = NET_MODE_NONE;
		else
			goto bad;
	} else if (!strcmp(key, "tapif")) {
		if (!*val || strlen(val) >= IFNAMSIZ)
			goto bad;
		snprintf(cfg->tapif, sizeof(cfg->tapif), "%s", val);
	} else if (!strcmp(key, "guest_mac")) {
		if (parse_mac(val, cfg->mac))
			goto bad;
		cfg->mac_given = true;
	} else {
		pr_err("-n '%s': unknown setting '%s' (mode, tapif, guest_mac)",
		       arg, key);
		return -1;
	}
	return 0;
bad:
	pr_err("-n '%s': bad value '%s' for %s", arg, val, key);
	return -1;
}

int net_parse_option(const char *arg, struct net_config *cfg)
{
	char buf[256], *item, *save = NULL;

	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = NET_MODE_TAP;
	if (!strcmp(arg, "tap") || !strcmp(arg, "none")) {
		cfg->mode = strcmp(arg, "tap") ? NET_MODE_NONE : NET_MODE_TAP;
		return 0;
	}
	if (strlen(arg) >= sizeof(buf)) {
		pr_err("-n: option string too long");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq) {
			pr_err("-n '%s': expected key=value, got '%s'", arg, item);
			return -1;
		}
		*eq = '\0';
		if (net_parse_pair(arg, item, eq + 1, cfg))
			return -1;
	}
	return 0;
}

void net_default_mac(const char *vm_name, unsigned int index, uint8_t mac[6])
{
	const char *s = vm_name ? vm_name : "lkvm";
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	h = (h ^ index) * 16777619u;
	/* Locally administered, unicast: 02:4c:4b ("LK") + 24 bits of hash. */
	mac[0] = 0x02;
	mac[1] = 0x4c;
	mac[2] = 0x4b;
	mac[3] = h >> 16;
	mac[4] = h >> 8;
	mac[5] = h;
}

static void tap_explain(const char *ifname, int err)
{
	if (err == EBUSY)
		pr_err("tap '%s' is busy: another process has it open", ifname);
	else if (err == EPERM)
		pr_err("cannot use tap '%s': creating a tap needs CAP_NET_ADMIN (or create it for your user: ip tuntap add dev %s mode tap user $USER vnet_hdr)",
		       ifname, ifname);
	else
		pr_err("cannot attach to tap '%s': %s", ifname, strerror(err));
}

int tap_open(struct tap *tap, const char *ifname)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	int hdr_len = VNET_HDR_LEN;

	tap->fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (tap->fd < 0) {
		pr_err("cannot open /dev/net/tun: %s", strerror(errno));
		return -1;
	}
	if (ifname)
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(tap->fd, TUNSETIFF, &ifr) < 0) {
		tap_explain(ifname ? ifname : "(new)", errno);
		goto fail;
	}
	if (ioctl(tap->fd, TUNSETVNETHDRSZ, &hdr_len) < 0) {
		pr_err("tap '%s': TUNSETVNETHDRSZ: %s", ifr.ifr_name,
		       strerror(errno));
		goto fail;
	}
	snprintf(tap->ifname, sizeof(tap->ifname), "%s", ifr.ifr_name);
	/* Probe, then hand over nothing until a driver says what it takes. */
	tap->offloads = !tap_set_offloads(tap, TUN_F_CSUM | TUN_F_TSO4 |
					       TUN_F_TSO6);
	tap_set_offloads(tap, 0);
	return 0;
fail:
	close(tap->fd);
	tap->fd = -1;
	return -1;
}

int tap_set_header_len(struct tap *tap, int len)
{
	return ioctl(tap->fd, TUNSETVNETHDRSZ, &len) ? -errno : 0;
}

int tap_set_offloads(struct tap *tap, unsigned int tun_flags)
{
	return ioctl(tap->fd, TUNSETOFFLOAD, tun_flags) ? -errno : 0;
}

void tap_close(struct tap *tap)
{
	if (tap->fd >= 0)
		close(tap->fd);
	tap->fd = -1;
}

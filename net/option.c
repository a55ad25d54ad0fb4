// SPDX-License-Identifier: GPL-2.0
/*
 * The -n option, kvmtool's spelling:
 *   -n mode=tap|user|none[,tapif=NAME][,guest_mac=MAC][,queues=N]
 *      [,script=PATH][,hostfwd=tcp:[HOSTADDR]:PORT-[GUESTADDR]:PORT]...
 *      [,restrict=on|off][,host_loopback=on|off][,poll=off|auto|on]
 * and the short forms "tap", "user" and "none", which may also lead the
 * settings ("user,hostfwd=...").
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/net.h"
#include "lkvm/util.h"

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

static int parse_port(const char *s, uint16_t *port)
{
	uint64_t v;

	if (!parse_u64(s, &v) || v == 0 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

/* "[ADDR]:PORT", ADDR left as it is when empty. */
static int parse_addr_port(char *s, struct in_addr *addr, uint16_t *port)
{
	char *colon = strrchr(s, ':');

	if (!colon)
		return -1;
	*colon = '\0';
	if (*s && inet_pton(AF_INET, s, addr) != 1)
		return -1;
	return parse_port(colon + 1, port);
}

/* [tcp|udp]:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT */
static int parse_hostfwd(const char *val, struct net_hostfwd *fwd)
{
	char buf[128], *s = buf, *dash;

	if (strlen(val) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", val);
	memset(fwd, 0, sizeof(*fwd));
	fwd->host_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!strncmp(s, "tcp:", 4)) {
		s += 4;
	} else if (!strncmp(s, "udp:", 4)) {
		fwd->udp = true;
		s += 4;
	}
	dash = strchr(s, '-');
	if (!dash)
		return -1;
	*dash = '\0';
	if (parse_addr_port(s, &fwd->host_addr, &fwd->host_port) ||
	    parse_addr_port(dash + 1, &fwd->guest_addr, &fwd->guest_port))
		return -1;
	return 0;
}

static int parse_on_off(const char *val, bool *on)
{
	if (!strcmp(val, "on"))
		*on = true;
	else if (!strcmp(val, "off"))
		*on = false;
	else
		return -1;
	return 0;
}

static int parse_mode(const char *val, enum net_mode *mode)
{
	if (!strcmp(val, "tap"))
		*mode = NET_MODE_TAP;
	else if (!strcmp(val, "user"))
		*mode = NET_MODE_USER;
	else if (!strcmp(val, "none"))
		*mode = NET_MODE_NONE;
	else
		return -1;
	return 0;
}

static int net_parse_pair(const char *arg, const char *key, const char *val,
			  struct net_config *cfg)
{
	uint64_t v;
	bool on;

	if (!strcmp(key, "mode")) {
		if (parse_mode(val, &cfg->mode))
			goto bad;
	} else if (!strcmp(key, "tapif")) {
		if (!*val || strlen(val) >= IFNAMSIZ)
			goto bad;
		snprintf(cfg->tapif, sizeof(cfg->tapif), "%s", val);
	} else if (!strcmp(key, "guest_mac")) {
		if (parse_mac(val, cfg->mac))
			goto bad;
		cfg->mac_given = true;
	} else if (!strcmp(key, "queues")) {
		if (!parse_u64(val, &v) || v < 1 || v > NET_MAX_QUEUE_PAIRS)
			goto bad;
		cfg->queues = v;
	} else if (!strcmp(key, "script")) {
		if (!*val || strlen(val) >= sizeof(cfg->script))
			goto bad;
		/* kvmtool's "script=none": configure nothing. */
		if (strcmp(val, "none"))
			snprintf(cfg->script, sizeof(cfg->script), "%s", val);
	} else if (!strcmp(key, "poll")) {
		if (virtio_poll_parse_mode(val, strlen(val), &cfg->poll))
			goto bad;
	} else if (!strcmp(key, "restrict")) {
		if (parse_on_off(val, &cfg->restricted))
			goto bad;
	} else if (!strcmp(key, "host_loopback")) {
		if (parse_on_off(val, &on))
			goto bad;
		cfg->host_loopback = on ? NET_HOST_LOOPBACK_ON :
					  NET_HOST_LOOPBACK_OFF;
	} else if (!strcmp(key, "hostfwd")) {
		if (cfg->nr_hostfwd == NET_MAX_HOSTFWD) {
			pr_err("-n '%s': at most %d hostfwd rules", arg,
			       NET_MAX_HOSTFWD);
			return -1;
		}
		if (parse_hostfwd(val, &cfg->hostfwd[cfg->nr_hostfwd]))
			goto bad;
		cfg->nr_hostfwd++;
	} else {
		pr_err("-n '%s': unknown setting '%s' (mode, tapif, guest_mac, queues, script, hostfwd, restrict, host_loopback, poll)",
		       arg, key);
		return -1;
	}
	return 0;
bad:
	pr_err("-n '%s': bad value '%s' for %s", arg, val, key);
	return -1;
}

/* Settings that only make sense for the other backend are mistakes. */
static int net_check_config(const char *arg, const struct net_config *cfg)
{
	if (cfg->mode == NET_MODE_USER &&
	    (cfg->tapif[0] || cfg->script[0] || cfg->queues > 1)) {
		pr_err("-n '%s': tapif, script and queues apply to mode=tap only",
		       arg);
		return -1;
	}
	if (cfg->mode == NET_MODE_TAP &&
	    (cfg->nr_hostfwd || cfg->restricted || cfg->host_loopback)) {
		pr_err("-n '%s': hostfwd, restrict and host_loopback apply to mode=user only",
		       arg);
		return -1;
	}
	if (cfg->restricted && cfg->host_loopback == NET_HOST_LOOPBACK_ON) {
		pr_err("-n '%s': restrict=on keeps the guest from the host altogether: drop host_loopback=on",
		       arg);
		return -1;
	}
	return 0;
}

int net_parse_option(const char *arg, struct net_config *cfg)
{
	char buf[1024], *item, *save = NULL;

	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = NET_MODE_TAP;
	cfg->queues = 1;
	cfg->poll = VIRTIO_POLL_UNSET;
	if (!parse_mode(arg, &cfg->mode))
		return 0;
	if (strlen(arg) >= sizeof(buf)) {
		pr_err("-n: option string too long");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		/* "user,hostfwd=..." as QEMU spells it: the mode first. */
		if (!eq && item == buf && !parse_mode(item, &cfg->mode))
			continue;
		if (!eq) {
			pr_err("-n '%s': expected key=value, got '%s'", arg, item);
			return -1;
		}
		*eq = '\0';
		if (net_parse_pair(arg, item, eq + 1, cfg))
			return -1;
	}
	return net_check_config(arg, cfg);
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

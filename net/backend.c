// SPDX-License-Identifier: GPL-2.0
/*
 * The one place a -n card's mode becomes a backend: a tap, or libslirp's
 * user-mode network where lkvm was built with it (lkvm.static is not:
 * libslirp exists as a shared library only).
 */
#include <string.h>

#include "lkvm/net.h"
#include "lkvm/util.h"

int net_backend_open(struct net_backend *be, const struct net_config *cfg,
		     unsigned int queues)
{
	memset(be, 0, sizeof(*be));
	switch (cfg->mode) {
	case NET_MODE_TAP:
		return tap_backend_open(be, cfg, queues);
	case NET_MODE_USER:
#ifdef CONFIG_SLIRP
		return slirp_backend_open(be, cfg);
#else
		pr_err("-n mode=user: this lkvm was built without libslirp (user-mode networking)");
		return -1;
#endif
	case NET_MODE_NONE:
		break;
	}
	return 0;
}

void net_backend_close(struct net_backend *be)
{
	if (be->ops)
		be->ops->close(be);
	be->ops = NULL;
}

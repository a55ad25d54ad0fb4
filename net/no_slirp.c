// SPDX-License-Identifier: GPL-2.0
/*
 * -n user in a build without libslirp. libslirp and the glib under it
 * come as shared libraries only, so lkvm.static (the nested test tier's
 * lkvm) is linked with this file instead of net/slirp.c.
 */
#include "lkvm/net.h"
#include "lkvm/util.h"

int slirp_backend_open(struct net_backend *be, const struct net_config *cfg)
{
	pr_err("this lkvm was built without libslirp (user-mode networking)");
	return -1;
}

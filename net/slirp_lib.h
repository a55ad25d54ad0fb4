/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libslirp, loaded when the first -n user card is opened rather than at
 * every start: with it come glib and pcre2, whose loading and relocation
 * every lkvm run paid before (most never use user-mode networking). The
 * calls lkvm makes, by libslirp's own names without the prefix.
 */
#ifndef LKVM_NET_SLIRP_LIB_H
#define LKVM_NET_SLIRP_LIB_H

#include <libslirp.h>

struct slirp_lib {
	Slirp *(*new)(const SlirpConfig *cfg, const SlirpCb *callbacks,
		      void *opaque);
	void (*cleanup)(Slirp *slirp);
	void (*input)(Slirp *slirp, const uint8_t *pkt, int pkt_len);
	void (*pollfds_fill)(Slirp *slirp, uint32_t *timeout,
			     SlirpAddPollCb add_poll, void *opaque);
	void (*pollfds_poll)(Slirp *slirp, int select_error,
			     SlirpGetREventsCb get_revents, void *opaque);
	int (*add_hostfwd)(Slirp *slirp, int is_udp, struct in_addr host_addr,
			   int host_port, struct in_addr guest_addr,
			   int guest_port);
	void (*handle_timer)(Slirp *slirp, SlirpTimerId id, void *cb_opaque);
};

/*
 * libslirp's entry points, loaded on first use (any thread, once); NULL
 * and a one-line error naming the library when it cannot be had.
 */
const struct slirp_lib *slirp_lib(void);

#endif

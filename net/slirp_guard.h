/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The frames a user-mode network with host_loopback=off (or restrict=on)
 * keeps from libslirp: those that would have it connect to the host's own
 * loopback. libslirp's disable_host_loopback only stops 10.0.2.2 standing
 * for 127.0.0.1; a guest that writes its own frames can address 127.0.0.1
 * (or 0.0.0.0, which Linux takes for a local address, or ::1, or either
 * behind ::ffff:) itself, and libslirp would connect() there for it.
 */
#ifndef LKVM_NET_SLIRP_GUARD_H
#define LKVM_NET_SLIRP_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* frame: Ethernet, no virtio-net header; true: drop it. */
bool slirp_frame_to_host_loopback(const uint8_t *frame, size_t len);

#endif

# SPDX-License-Identifier: GPL-2.0
"""The tap side of tests/kit/test_virtio_net_ctrl.py, run inside the
test's own network namespace (ip netns exec NS /usr/bin/python3
netctrl_helper.py ...): the partner of guest/kit/netctrl.c.

An AF_PACKET socket bound to the tap sees everything the guest sends. Its
IPv4/UDP data frames are collected (the test checks them byte for byte);
its request frames (ethertype 0x88b7: magic, phase, n, then n entries of
destination MAC + le16 flow) are answered at once with one IPv4/UDP frame
per entry, in order, sent into the tap (lkvm reads them; with a
multi-queue tap the kernel picks the queue by flow). Anything else coming
in is counted as "other".

Prints "ready" once the socket is bound (or "waiting" first with
--wait-tap), runs until stdin is closed or --timeout, then prints one JSON
line: the data frames (hex), the requests, how many frames were injected,
and any errors.
"""
import argparse
import json
import struct
import sys
import time

from net_helper import frames_in, parse_mac, tap_socket, wait_tap_or_fail

ETH_TYPE_IP = 0x0800
ETH_TYPE_REQ = 0x88b7
HOST_MAC = bytes.fromhex("020000000001")
HOST_IP = bytes([10, 0, 0, 1])
GUEST_IP = bytes([10, 0, 0, 2])
GUEST_PORT, FLOW_PORT = 2000, 1000
RX_MAGIC, TX_MAGIC, REQ_MAGIC = 0x52564b4c, 0x54564b4c, 0x43564b4c
RX_PATTERN = 32


def ip_checksum(h):
    s = sum(struct.unpack("!10H", h))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def udp_frame(dst, src, ip_src, ip_dst, sport, dport, ident, payload):
    """guest/kit/netctrl.c build_udp(): checksummed IPv4, UDP checksum 0."""
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), ident, 0,
                     64, 17, 0, ip_src, ip_dst)
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    return dst + src + struct.pack("!H", ETH_TYPE_IP) + ip + udp + payload


def rx_frame(dst, phase, k, flow):
    """What the guest must receive for entry k of request `phase`."""
    pat = bytes((phase * 7 + k * 13 + flow * 17 + i) & 0xff
                for i in range(RX_PATTERN))
    payload = struct.pack("<IIII", RX_MAGIC, phase, k, flow) + pat
    return udp_frame(dst, HOST_MAC, HOST_IP, GUEST_IP, FLOW_PORT + flow,
                     GUEST_PORT, k & 0xffff, payload)


def tx_frame(mac, idx, flow):
    """Data frame idx of `flow` as the guest sends it (build_tx_frame())."""
    plen = 16 + (idx * 157) % 1200
    pat = bytes((i * 7 + idx * 29 + flow * 3) & 0xff for i in range(16, plen))
    payload = struct.pack("<IIII", TX_MAGIC, idx, flow, plen) + pat
    return udp_frame(HOST_MAC, mac, GUEST_IP, HOST_IP, GUEST_PORT,
                     FLOW_PORT + flow, idx & 0xffff, payload)


def parse_request(data):
    """(phase, [(dst, flow), ...]) of a request frame, or None."""
    if len(data) < 26:
        return None
    magic, phase, n = struct.unpack("<III", data[14:26])
    if magic != REQ_MAGIC or len(data) < 26 + 8 * n:
        return None
    entries = []
    for i in range(n):
        e = data[26 + 8 * i:34 + 8 * i]
        entries.append((e[:6], struct.unpack("<H", e[6:8])[0]))
    return phase, entries


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ifname", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--wait-tap", action="store_true",
                    help="lkvm creates the tap: wait for it, set it up")
    ap.add_argument("--ready-file",
                    help="created once the socket is bound")
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    out = {"frames": [], "requests": [], "injected": 0, "errors": [],
           "other": 0}

    if args.wait_tap and not wait_tap_or_fail(args.ifname, deadline, out):
        return 1
    s = tap_socket(args.ifname, args.ready_file)

    for data in frames_in(s, deadline, out):
        etype = struct.unpack("!H", data[12:14])[0] if len(data) >= 14 else 0
        if etype == ETH_TYPE_REQ:
            req = parse_request(data)
            if req is None:
                out["errors"].append(f"bad request frame {data[:40].hex()}")
                continue
            phase, entries = req
            out["requests"].append({"phase": phase, "n": len(entries)})
            for k, (dst, flow) in enumerate(entries):
                try:
                    s.send(rx_frame(dst, phase, k, flow))
                    out["injected"] += 1
                except OSError as e:
                    out["errors"].append(f"inject {phase}/{k}: {e}")
                    break
        elif etype == ETH_TYPE_IP:
            out["frames"].append(data.hex())
        else:
            out["other"] += 1
            if out["other"] <= 4:
                out.setdefault("other_frames", []).append(
                    f"{len(data)}:{data[:32].hex()}")
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

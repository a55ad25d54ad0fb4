# SPDX-License-Identifier: GPL-2.0
"""The tap side of tests/kit/test_virtio_net.py, run inside the test's own
network namespace (ip netns exec NS /usr/bin/python3 net_helper.py ...).

An AF_PACKET socket bound to the tap collects what the guest sends
(ethertype 0x88b5, not our own outgoing frames; anything else coming in is
counted as "other") and, once the guest's first frame shows it is up, sends --inject frames of ethertype 0x88b6 on the same
socket: that transmits them into the tap, where lkvm reads them for the
guest's receive queue.

Prints "ready" once the socket is bound, then runs until stdin is closed
(or --timeout), and prints one JSON line: the frames seen (hex), how many
were injected, when, and any errors. The frame layout and the pattern are
guest/kit/net.c's.
"""
import argparse
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

ETH_P_ALL = 0x0003
ETH_TYPE_TX = 0x88b5        # guest -> host
ETH_TYPE_RX = 0x88b6        # host -> guest
PACKET_OUTGOING = 4
HOST_SRC_MAC = bytes.fromhex("020000000001")
PAYLOAD_MIN, PAYLOAD_MAX = 46, 1500
M64 = (1 << 64) - 1


def pattern_word(seed, etype, idx, j):
    """guest/kit/net.c pattern_word()."""
    x = (seed * 0x9e3779b97f4a7c15 + ((etype << 32) | idx) * 0xbf58476d1ce4e5b9
         + j) & M64
    x ^= x >> 31
    x = (x * 0x94d049bb133111eb) & M64
    x ^= x >> 29
    return x


def payload_len(seed, idx):
    """guest/kit/net.c payload_len()."""
    if idx == 0:
        return PAYLOAD_MAX
    if idx == 1:
        return PAYLOAD_MIN
    return PAYLOAD_MIN + (seed * 7 + idx * 397) % (PAYLOAD_MAX - PAYLOAD_MIN + 1)


def payload(seed, etype, idx):
    n = payload_len(seed, idx)
    words = (n - 12 + 7) // 8
    body = b"".join(struct.pack("<Q", pattern_word(seed, etype, idx, j))
                    for j in range(words))
    return (struct.pack("<III", idx, seed & 0xffffffff, n) + body)[:n]


def frame(dst, src, etype, seed, idx):
    return dst + src + struct.pack(">H", etype) + payload(seed, etype, idx)


def parse_mac(s):
    b = bytes.fromhex(s.replace(":", ""))
    assert len(b) == 6, s
    return b


def wait_for_tap(name, deadline):
    """lkvm creates the tap: wait for it, bring it up."""
    while time.monotonic() < deadline:
        try:
            socket.if_nametoindex(name)
        except OSError:
            time.sleep(0.01)
            continue
        subprocess.run(["ip", "link", "set", name, "up"], check=True,
                       timeout=10)
        return True
    return False


def wait_tap_or_fail(name, deadline, out):
    """--wait-tap: says "waiting", waits for the tap. False (and out, with
    the error, printed) when it never appeared."""
    print("waiting", flush=True)
    if wait_for_tap(name, deadline):
        return True
    out["errors"].append(f"{name} never appeared")
    print(json.dumps(out), flush=True)
    return False


def tap_socket(name, ready_file=None):
    """An AF_PACKET socket bound to the tap, for every ethertype; says
    "ready", and creates ready_file if given (lkvm's script= waits for it
    when lkvm made the tap: the guest must not send before we listen)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((name, ETH_P_ALL))
    print("ready", flush=True)
    if ready_file:
        open(ready_file, "w").close()
    return s


def frames_in(s, deadline, out):
    """Yields each frame that comes in from the tap (our own outgoing ones
    left out) until the deadline, or until stdin is closed (lkvm is gone)
    and what was still queued is read, or until the tap goes away with
    lkvm (out["tap_gone"])."""
    stdin_open = True
    while time.monotonic() < deadline:
        fds = [s] + ([sys.stdin] if stdin_open else [])
        ready, _, _ = select.select(fds, [], [], 0.2)
        if sys.stdin in ready:
            if not os.read(sys.stdin.fileno(), 4096):
                stdin_open = False
                # stdin closed: lkvm is gone; take what is still queued
                deadline = min(deadline, time.monotonic() + 0.2)
        if s not in ready:
            continue
        try:
            data, addr = s.recvfrom(1 << 18)
        except OSError as e:
            # a tap lkvm created goes away with it
            out["tap_gone"] = e.errno
            return
        if addr[2] != PACKET_OUTGOING:
            yield data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ifname", required=True)
    ap.add_argument("--inject", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dst", default="ff:ff:ff:ff:ff:ff",
                    help="destination MAC of the injected frames")
    ap.add_argument("--big", type=int, default=0,
                    help="first inject one frame with this many payload "
                    "bytes (index 0xffffffff; raise the tap's MTU first)")
    ap.add_argument("--again-at", type=int, default=0,
                    help="inject --inject more frames (indexes continuing) "
                    "when the guest's TX frame with this index arrives "
                    "(net.elf reset=1)")
    ap.add_argument("--gap", type=float, default=0,
                    help="milliseconds between injected frames")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--wait-tap", action="store_true",
                    help="the tap does not exist yet: wait, then set it up")
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    out = {"frames": [], "injected": 0, "errors": [], "other": 0}

    if args.wait_tap and not wait_tap_or_fail(args.ifname, deadline, out):
        return 1
    try:
        with open(f"/sys/class/net/{args.ifname}/tun_flags") as f:
            out["tun_flags"] = int(f.read(), 16)
    except OSError as e:
        out["errors"].append(f"tun_flags: {e}")

    s = tap_socket(args.ifname)

    dst = parse_mac(args.dst)
    t0 = time.monotonic()
    for data in frames_in(s, deadline, out):
        # anything coming in from the tap is the guest's: it is up
        first = not out["frames"] and not out["other"]
        if len(data) < 14 or struct.unpack(">H", data[12:14])[0] != ETH_TYPE_TX:
            out["other"] += 1
            if out["other"] <= 4:
                out.setdefault("other_frames", []).append(
                    f"{len(data)}:{data[:32].hex()}")
        else:
            out["frames"].append(data.hex())
            idx = struct.unpack("<I", data[14:18])[0] if len(data) >= 18 else -1
            if args.again_at and idx == args.again_at and args.inject:
                for i in range(args.inject, 2 * args.inject):
                    try:
                        s.send(frame(dst, HOST_SRC_MAC, ETH_TYPE_RX,
                                     args.seed, i))
                        out["injected"] += 1
                    except OSError as e:
                        out["errors"].append(f"inject {i}: {e}")
                        break
        if first and args.inject:
            out["first_frame_s"] = time.monotonic() - t0
            if args.big:
                big = (dst + HOST_SRC_MAC + struct.pack(">H", ETH_TYPE_RX) +
                       struct.pack("<III", 0xffffffff, args.seed, args.big) +
                       bytes(args.big - 12))
                try:
                    s.send(big)
                    out["big_sent"] = len(big)
                except OSError as e:
                    out["errors"].append(f"inject big: {e}")
            for i in range(args.inject):
                if i and args.gap:
                    time.sleep(args.gap / 1000)
                try:
                    s.send(frame(dst, HOST_SRC_MAC, ETH_TYPE_RX, args.seed, i))
                    out["injected"] += 1
                except OSError as e:
                    out["errors"].append(f"inject {i}: {e}")
                    break
            out["injected_s"] = time.monotonic() - t0
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0
"""virtio-net's control queue, multi-queue and hostile drivers, checked
from both sides: netctrl.elf (guest/kit/netctrl.c) drives the device and
leads; netctrl_helper.py on the tap answers its request frames with the
frames it asks for and collects its data frames, which are checked here
byte for byte. lkvm's --stats must agree with what the guest counted.

Every test that touches a network does so inside its own network namespace
(the netns fixture of test_virtio_net.py): the tap, lkvm and the helper
all live there. Nothing is addressed outside it.

  filter        the receive filter (VIRTIO_NET_CTRL_RX, _MAC): 16 phases
                of 8 frames to the guest's MAC, another MAC, unicast and
                multicast addresses in and out of the tables, broadcast;
                the guest must get exactly the accepted ones, --stats
                rx_filtered counts the rest; malformed commands get
                VIRTIO_NET_ERR and change nothing; a reset restores the
                promiscuous filter (pci, pci-legacy, mmio)
  bigtable      MAC tables of 150 and 100 + 100 entries (more than 840
                bytes), as Linux sends them
  features      commands whose feature was not negotiated: ERR
  mq            -c 2 queues=2: MQ, max_virtqueue_pairs 2, the control
                queue at index 4, one pair until VQ_PAIRS_SET, then TX on
                both queues and flows steered back to the queue that sent
                them, pairs 1 and 2 again; queues=2 with -c 1 (no MQ), and
                MQ declined by the driver
  hostile       broken chains on the RX, TX and control queues: lkvm
                keeps running, counts it (times_broken, tx_dropped,
                rx_dropped) and works again after a reset

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_net_ctrl.py
"""
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_virtio_net import (  # noqa: E402
    GUEST_TRANSPORT, LKVM, MAC, TAP, ip, kit, lkvm_run, make_tap, needs_netns,
    netns, Helper, pytestmark as NET_MARKS)
import netctrl_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).resolve().parent / "netctrl_helper.py"
NEEDS_RESET = 0x40

# test_virtio_net's (./lkvm, /dev/kvm, --network), and a namespace for all
pytestmark = [*NET_MARKS, needs_netns]

assert netns  # the fixture, used by name below


class CtrlHelper(Helper):
    """netctrl_helper.py in the namespace, bound to the tap before lkvm."""

    def __init__(self, ns, wait_tap=False, ready_file=None):
        self.start(HELPER, ns,
                   ["--ready-file", str(ready_file)] if ready_file else [],
                   wait_tap)


# lkvm runs it once the tap it made exists, before the guest starts: the
# guest's first frame must find the helper listening.
WAIT_FOR_HELPER = """#!/bin/sh
i=0
while [ ! -e "{ready}" ]; do
	i=$((i + 1))
	[ $i -le 400 ] || {{ echo "the helper never bound to $1" >&2; exit 1; }}
	sleep 0.05
done
"""


def run_netctrl(ns, tmp_path, case, transport="pci", cpus=1, queues=1,
                tap="single", lkvm=LKVM, **params):
    """A tap ("single", "multi" for multi_queue, or "lkvm" to let lkvm
    create it), the helper, and lkvm with netctrl.elf case=CASE."""
    if tap == "single":
        make_tap(ns)
    elif tap == "multi":
        ip("tuntap", "add", "dev", TAP, "mode", "tap", "multi_queue",
           "vnet_hdr", ns=ns)
        ip("link", "set", TAP, "up", ns=ns)
    ready = tmp_path / "helper-ready" if tap == "lkvm" else None
    h = CtrlHelper(ns, wait_tap=tap == "lkvm", ready_file=ready)
    try:
        h.wait_line("waiting" if tap == "lkvm" else "ready")
        netarg = f"mode=tap,tapif={TAP},guest_mac={MAC}"
        if ready:
            script = tmp_path / "wait-for-helper"
            script.write_text(WAIT_FOR_HELPER.format(ready=ready))
            script.chmod(0o755)
            netarg += f",script={script}"
        if queues > 1:
            netarg += f",queues={queues}"
        params = {"case": case, "transport": GUEST_TRANSPORT[transport],
                  "mac": MAC, **params}
        r = lkvm_run(["-c", cpus, "-k", kit("netctrl.elf"), "-n", netarg,
                      "-p", " ".join(f"{k}={v}" for k, v in params.items())],
                     ns=ns, stats=tmp_path / "stats.json",
                     transport=transport, lkvm=lkvm)
        return r, h.finish()
    finally:
        h.stop()


def counts(r):
    m = re.search(r"^netctrl: rx0=(\d+) rx1=(\d+) tx0=(\d+) tx1=(\d+) "
                  r"ctrl=(\d+) requests=(\d+) filtered=(\d+) other=(\d+) "
                  r"tx_idx=(\d+)", r.out, re.M)
    assert m, r
    return dict(zip(("rx0", "rx1", "tx0", "tx1", "ctrl", "requests",
                     "filtered", "other", "tx_idx"), map(int, m.groups())))


def net_dev(r):
    assert r.stats, r
    nets = [d for d in r.stats["devices"] if d["type"] == "virtio-net"]
    assert len(nets) == 1, r.stats["devices"]
    return nets[0]


def check_tx(h, flows, r):
    """The host saw data frames 0..n-1 of the given flows, each once, byte
    for byte (frames of different queues may interleave)."""
    mac = netctrl_helper.parse_mac(MAC)
    got = sorted(bytes.fromhex(f) for f in h["frames"])
    want = sorted(netctrl_helper.tx_frame(mac, i, f)
                  for i, f in enumerate(flows))
    assert len(got) == len(want), (
        f"host saw {len(got)} data frames, the guest sent {len(want)}", r)
    for g, w in zip(got, want):
        assert g == w, (f"a TX frame differs: got {g[:64].hex()}..., "
                        f"expected {w[:64].hex()}...", r)


def check_clean(r, h, c):
    assert r.rc == 0, r
    assert "PASS: netctrl" in r.out, r
    assert not r.err_lines(), r
    assert not h["errors"], h
    assert c["other"] == 0 and h["other"] == 0, (h, r)
    assert len(h["requests"]) == c["requests"], (h, r)
    assert h["injected"] == sum(q["n"] for q in h["requests"]), h


# ---- the receive filter ----

FILTER_PHASES = 16
FILTERED = 41       # frames the 16 phases of case_filter() must filter


@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_ctrl_filter(netns, tmp_path, transport):
    r, h = run_netctrl(netns, tmp_path, "filter", transport)
    c = counts(r)
    check_clean(r, h, c)
    phases = re.findall(r"^phase \d+ \(", r.out, re.M)
    assert len(phases) == FILTER_PHASES, r
    assert c["filtered"] == FILTERED, r
    assert "malformed: 19 commands and 5 odd chains answered" in r.out, r
    dev = net_dev(r)
    assert dev["times_broken"] == 0 and not dev["status"] & NEEDS_RESET, dev
    assert dev["rx_filtered"] == FILTERED, dev
    assert dev["rx_dropped"] == 0 and dev["tx_dropped"] == 0, dev
    assert dev["queue_pairs"] == 1 and dev["active_pairs"] == 1, dev
    assert len(dev["queues"]) == 3, dev
    rxq, txq, ctrlq = dev["queues"]
    # a frame is one receive request; every command one control request
    assert rxq["requests"] == c["rx0"] > 0, (dev, c)
    assert txq["requests"] == c["tx0"] == c["requests"] + 2, (dev, c)
    assert ctrlq["requests"] == c["ctrl"] > 40, (dev, c)
    check_tx(h, [0, 1], r)


def test_ctrl_mac_table_big(netns, tmp_path):
    """MAC tables longer than 64 entries mean "all of that class"; Linux
    sends every address it has, however many: 150 multicast (910 bytes),
    100 + 100 (1210 bytes)."""
    r, h = run_netctrl(netns, tmp_path, "bigtable")
    c = counts(r)
    check_clean(r, h, c)
    assert net_dev(r)["rx_filtered"] == c["filtered"] == 3 + 3, r


def test_ctrl_features(netns, tmp_path):
    """RX/MAC commands without CTRL_RX, ALLUNI/NOBCAST without
    CTRL_RX_EXTRA, MAC_ADDR_SET without CTRL_MAC_ADDR: ERR. Without
    CTRL_VQ queue 2 is no control queue: nothing answers there."""
    r, h = run_netctrl(netns, tmp_path, "features")
    c = counts(r)
    check_clean(r, h, c)
    assert "features: commands need their feature bits" in r.out, r
    dev = net_dev(r)
    assert dev["times_broken"] == 0, dev
    assert dev["queues"][2]["requests"] == c["ctrl"] == 9, (dev, c)


# ---- multi-queue ----

MQ_TX_FLOWS = [0, 1, 2, 3] * 4      # tx_flows() twice


@pytest.mark.parametrize("transport", ["pci", "mmio"])
def test_mq(netns, tmp_path, transport):
    """Two vCPUs, queues=2 on a multi-queue tap: the guest takes MQ,
    reads max_virtqueue_pairs 2, finds the control queue at 4, sees one
    pair in use until VQ_PAIRS_SET 2, sends on both transmit queues and
    gets flows back on the queue that sent them (the tap's flow table);
    VQ_PAIRS_SET 1 brings everything to receiveq0, 2 spreads it again."""
    r, h = run_netctrl(netns, tmp_path, "mq", transport, cpus=2, queues=2,
                       tap="multi", pairs=2)
    c = counts(r)
    check_clean(r, h, c)
    assert "max_virtqueue_pairs 2, 2 pairs set up, controlq 4" in r.out, r
    dev = net_dev(r)
    assert dev["queue_pairs"] == 2 and dev["active_pairs"] == 2, dev
    assert dev["times_broken"] == 0 and dev["rx_filtered"] == 0, dev
    assert len(dev["queues"]) == 5, dev
    rx0, tx0, rx1, tx1, ctrlq = dev["queues"]
    assert rx0["requests"] == c["rx0"] > 0, (dev, c)
    assert rx1["requests"] == c["rx1"] > 0, (dev, c)
    assert tx0["requests"] == c["tx0"] == c["requests"] + 8, (dev, c)
    assert tx1["requests"] == c["tx1"] == 8, (dev, c)
    assert ctrlq["requests"] == c["ctrl"] == 6, (dev, c)
    check_tx(h, MQ_TX_FLOWS, r)


def test_mq_one_vcpu(netns, tmp_path):
    """queues=2 with -c 1: one pair per vCPU, so no MQ; the control
    queue at 2; VQ_PAIRS_SET is refused."""
    r, h = run_netctrl(netns, tmp_path, "mq", cpus=1, queues=2, tap="lkvm",
                       pairs=1)
    c = counts(r)
    check_clean(r, h, c)
    dev = net_dev(r)
    assert dev["queue_pairs"] == 1 and dev["active_pairs"] == 1, dev
    assert len(dev["queues"]) == 3, dev
    assert dev["queues"][0]["requests"] == c["rx0"] > 0, (dev, c)
    check_tx(h, [0, 1, 2, 3] * 2, r)


def test_mq_one_vcpu_multi_queue_tap(netns, tmp_path):
    """The same on a multi-queue tap made for queues=2: lkvm must still
    attach to it (with one queue) rather than refuse it."""
    r, h = run_netctrl(netns, tmp_path, "mq", cpus=1, queues=2, tap="multi",
                       pairs=1)
    c = counts(r)
    check_clean(r, h, c)
    assert net_dev(r)["queue_pairs"] == 1, r


def test_mq_declined(netns, tmp_path):
    """MQ offered but not taken: one pair, the control queue at 2, and the
    tap's second queue detached, so every flow still reaches receiveq0."""
    r, h = run_netctrl(netns, tmp_path, "mq", cpus=2, queues=2, tap="multi",
                       pairs=2, nomq=1)
    c = counts(r)
    check_clean(r, h, c)
    assert "max_virtqueue_pairs 2, 1 pairs set up, controlq 2" in r.out, r
    dev = net_dev(r)
    assert dev["queue_pairs"] == 2 and dev["active_pairs"] == 1, dev
    assert len(dev["queues"]) == 5, dev
    # without MQ queue 2 is the control queue; 3 and 4 go unused
    rx0, tx0, ctrlq, q3, q4 = dev["queues"]
    assert rx0["requests"] == c["rx0"] > 0, (dev, c)
    assert ctrlq["requests"] == c["ctrl"] == 1, (dev, c)
    assert q3["requests"] == q4["requests"] == 0, dev
    check_tx(h, [0, 1, 2, 3] * 2, r)


# ---- hostile drivers ----

# case -> what lkvm must count: NEEDS_RESET (times_broken), or a dropped
# TX chain (tx_dropped), or dropped frames (rx_dropped)
RESET = {"times_broken": 1}
TX_DROP = {"tx_dropped": 1}
HOSTILE = {
    "h_rx_past_ram": RESET, "h_tx_past_ram": RESET, "h_ctrl_past_ram": RESET,
    "h_rx_hole": RESET, "h_tx_hole": RESET, "h_ctrl_hole": RESET,
    "h_rx_loop": RESET, "h_tx_loop": RESET, "h_ctrl_loop": RESET,
    "h_rx_head_oob": RESET, "h_tx_head_oob": RESET,
    "h_ctrl_head_oob": RESET,
    "h_rx_next_oob": RESET, "h_tx_next_oob": RESET,
    "h_ctrl_next_oob": RESET,
    "h_rx_indirect_badlen": RESET, "h_tx_indirect_badlen": RESET,
    "h_ctrl_indirect_badlen": RESET,
    "h_rx_indirect_empty": None, "h_tx_indirect_empty": None,
    "h_ctrl_indirect_empty": None,
    "h_rx_indirect_past_ram": RESET, "h_tx_indirect_past_ram": RESET,
    "h_ctrl_indirect_past_ram": RESET,
    "h_tx_short": TX_DROP, "h_tx_writable": TX_DROP,
    "h_tx_hdr_writable": TX_DROP,
    "h_rx_small_mrg": {},
    "h_rx_tiny": None,
    "h_rx_readonly": {"rx_bad_buffers": 1},
    "h_rx_mixed": {"rx_bad_buffers": 1},
    # [good, read-only, good, good] with three frames: all three land
    "h_rx_interleaved": {"rx_bad_buffers": 1},
    "h_ctrl_readable_ack": {},
}


def hostile_params():
    for case, want in HOSTILE.items():
        if isinstance(want, type(pytest.param(0))):
            yield pytest.param(case, want.values[0], marks=want.marks, id=case)
        else:
            yield pytest.param(case, want, id=case)


@pytest.mark.parametrize("case,expect", hostile_params())
def test_net_hostile(netns, tmp_path, case, expect):
    """One broken chain (netctrl.c's case h_*), then a reset, a command,
    and traffic both ways."""
    r, h = run_netctrl(netns, tmp_path, case)
    assert f"case {case} " in r.out, r
    assert "recovered: traffic after reset ok" in r.out, r
    if case == "h_rx_interleaved":
        assert "interleaved: 3 frames in the good buffers" in r.out, r
    assert r.rc == 0 and "PASS: netctrl" in r.out, r
    # at most one warning (NEEDS_RESET is said once), nothing else
    lines = r.err_lines()
    assert len(lines) <= 1, r
    assert all(l.startswith("lkvm: warning: ") for l in lines), r
    dev = net_dev(r)
    assert not dev["status"] & NEEDS_RESET, dev
    want = {"times_broken": 0, "tx_dropped": 0, "rx_dropped": 0,
            "rx_bad_buffers": 0}
    if case == "h_rx_tiny":
        # both frames dropped behind it, or the buffer given back empty
        if "a 4-byte receive buffer: given back empty" in r.out:
            want["rx_bad_buffers"] = 1
        else:
            want["rx_dropped"] = 2
    elif expect is None:
        # either answer is fine (see netctrl.c), and counted as such
        broken = "NEEDS_RESET" in r.out
        want = {"times_broken": int(broken)}
        if not broken and case.startswith("h_tx"):
            want["tx_dropped"] = 1
    else:
        want.update(expect)
    got = {k: dev[k] for k in want}
    assert got == want, (got, want, r)
    # the recovery's filter phase: one frame filtered
    assert dev["rx_filtered"] == 1, dev
    # only the recovery's data frame reached the tap
    check_tx(h, [5], r)
    assert not h["errors"], h

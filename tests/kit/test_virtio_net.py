# SPDX-License-Identifier: GPL-2.0
"""virtio-net over a tap (-n mode=tap,tapif=NAME), checked from both sides:
net.elf (guest/kit/net.c) drives the device from inside the guest, and a
packet helper (tests/kit/net_helper.py) sits on the tap: it checks what
the guest sent byte for byte, and injects frames the guest then checks.

Every test that touches a network does so inside its own network namespace
(lkvm-test-<pid>-<n>): the tap, lkvm and the helper all live there, and the
namespace is deleted at the end. Nothing is addressed outside it.

  transports    pci, pci-legacy and mmio, each with and without ioeventfd:
                16 frames each way, MAC and link status from config, the
                TX frames exact and in order, --stats kicks and requests;
                the guest waits for interrupts (MSI-X, INTx, the mmio pin)
                and fails if a used ring moves without one
  interrupts    frames 20 ms apart to an idle guest: one interrupt each
  features      INDIRECT_DESC and EVENT_IDX, a 16-entry ring wrapped many
                times
  mrg           512-byte receive buffers: 1500-byte frames merged over 3
                (and each buffer as a two-descriptor chain)
  hold          no receive buffers until the host's frames are queued, then
                fewer buffers than frames: nothing may be dropped
  no mrg        without MRG_RXBUF: a 12-byte header with num_buffers 1
                (modern), a 10-byte header (legacy)
  bad TX        a chain shorter than the header, the header alone, or
                72000 bytes: completed or NEEDS_RESET, never a hung queue
  early RX      receive buffers posted before DRIVER_OK (3.1.1 step 7)
  reset         a device reset mid-run, then the same traffic on new rings
  oversized     without MRG_RXBUF, a frame bigger than a buffer (tap MTU
                9000) is dropped and the frames behind it still arrive
  lkvm's tap    lkvm creates the tap (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, not
                persistent) and picks the MAC itself; the MAC follows
                --name; a persistent tap serves two runs in turn
  bad input     -n mode=bogus, an empty or too long tapif, malformed,
                multicast or zero MACs, a tap another lkvm holds: exit 1
                and one "lkvm: error:" line

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_net.py
"""
import itertools
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_virtio_blk import LKVM, Run as BlkRun, kit, run_cmd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import net_helper  # noqa: E402

HELPER = Path(__file__).resolve().parent / "net_helper.py"
PYTHON = "/usr/bin/python3"
VM_TIMEOUT = 30
PROC_TIMEOUT = 60
MAC = "52:54:00:12:34:56"
TAP = "lkvmtap0"
BCAST = "ff:ff:ff:ff:ff:ff"
# --virtio-transport -> net.elf's transport=
GUEST_TRANSPORT = {"pci": "pci", "pci-legacy": "legacy", "mmio": "mmio"}
IFF_TAP, IFF_NO_PI, IFF_PERSIST, IFF_VNET_HDR = 0x0002, 0x1000, 0x0800, 0x4000


class Run(BlkRun):
    """test_virtio_blk's Run."""


# Tests that make a network namespace of their own (root, as tests/kit's
# conftest.py makes sure).
pytestmark = []
needs_netns = pytest.mark.netns


def ip(*args, ns=None, check=True):
    cmd = (["ip", "netns", "exec", ns, "ip"] if ns else ["ip"]) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=20,
                          check=check)


_ns_counter = itertools.count()


@pytest.fixture
def netns():
    """A network namespace of our own, IPv6 off so the kernel stays quiet
    on the tap; deleted (with the taps in it) at the end."""
    name = f"lkvm-test-{os.getpid()}-{next(_ns_counter)}"
    ip("netns", "add", name)
    try:
        subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"],
                       capture_output=True, timeout=20)
        yield name
    finally:
        ip("netns", "del", name, check=False)


def make_tap(ns, name=TAP):
    ip("tuntap", "add", "dev", name, "mode", "tap", "vnet_hdr", ns=ns)
    ip("link", "set", name, "up", ns=ns)


class Helper:
    """net_helper.py in the namespace: bound to the tap before lkvm runs."""

    def __init__(self, ns, inject, seed, dst=MAC, wait_tap=False, big=0,
                 again_at=0, gap=0):
        args = ["--inject", str(inject), "--seed", str(seed), "--dst", dst]
        if big:
            args += ["--big", str(big)]
        if again_at:
            args += ["--again-at", str(again_at)]
        if gap:
            args += ["--gap", str(gap)]
        self.start(HELPER, ns, args, wait_tap)

    def start(self, script, ns, args, wait_tap):
        """Runs script (a helper on TAP) in ns with args."""
        cmd = ["ip", "netns", "exec", ns, PYTHON, str(script), "--ifname",
               TAP, *args, "--timeout", str(PROC_TIMEOUT + 30)]
        if wait_tap:
            cmd.append("--wait-tap")
        self.name = Path(script).name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.buf = b""
        self.result = None

    def wait_line(self, want, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.decode().strip() == want:
                    return
                continue
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                data = os.read(self.proc.stdout.fileno(), 65536)
                if not data:
                    break
                self.buf += data
        self.stop()
        pytest.fail(f"{self.name} never said {want!r}: "
                    f"{self.buf!r} {self.proc.stderr.read()!r}")

    def finish(self):
        """lkvm is done: the helper prints what it saw and exits."""
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{self.name} did not finish")
        lines = (self.buf + out).decode().splitlines()
        assert lines and self.proc.returncode == 0, (lines, err)
        self.result = json.loads(lines[-1])
        return self.result

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def lkvm_run(args, ns=None, stats=None, transport="pci", ioeventfd=True,
             wait=True, lkvm=LKVM):
    cmd = ([str(lkvm), "run", "--timeout", str(VM_TIMEOUT),
            "--virtio-transport", transport] + [str(a) for a in args])
    if stats:
        cmd[2:2] = ["--stats", str(stats)]
    if not ioeventfd:
        cmd.append("--no-ioeventfd")
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return run_cmd(cmd, stats, run_cls=Run)


def guest_counts(r):
    m = re.search(r"net: tx=(\d+) tx_done=(\d+) rx=(\d+) rx_used=(\d+) "
                  r"tx_kicks=(\d+) rx_kicks=(\d+)", r.out)
    assert m, r
    c = dict(zip(("tx", "tx_done", "rx", "rx_used", "tx_kicks", "rx_kicks"),
                 map(int, m.groups())))
    m = re.search(r"rx: \d+ frames, \d+ buffers used, (\d+) merged "
                  r"\(at most (\d+) buffers\)", r.out)
    assert m, r
    c["merged"], c["max_bufs"] = map(int, m.groups())
    m = re.search(r"^mac ([0-9a-f:]{17}) status (\S+) header (\d+) bytes",
                  r.out, re.M)
    assert m, r
    c["mac"], c["hdr_len"] = m.group(1), int(m.group(3))
    m = re.search(r"^interrupts: (\d+) taken", r.out, re.M)
    c["irqs"] = int(m.group(1)) if m else None
    return c


def expected_tx(seed, n, src, dst=BCAST):
    return [net_helper.frame(net_helper.parse_mac(dst),
                             net_helper.parse_mac(src),
                             net_helper.ETH_TYPE_TX, seed, i)
            for i in range(n)]


def check_tx_frames(h, seed, n, src, r):
    """The host saw exactly the guest's n frames, in order, byte for byte."""
    got = [bytes.fromhex(f) for f in h["frames"]]
    want = expected_tx(seed, n, src)
    assert len(got) == n, (f"host saw {len(got)} frames, the guest sent {n}",
                           str(r))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (f"TX frame {i}: {len(g)} bytes, expected {len(w)}; "
                        f"first difference at byte "
                        f"{next((k for k, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))}",
                        str(r))


def check_stats(r, c, transport, ioeventfd, early_kicks=0):
    st = r.stats
    assert st, r
    nets = [d for d in st["devices"] if d["type"] == "virtio-net"]
    assert len(nets) == 1, st["devices"]
    dev = nets[0]
    assert dev["transport"] == transport, dev
    assert dev["driver_seen"] is True, dev
    # receiveq, transmitq and the control queue (unused by net.elf)
    assert len(dev["queues"]) == 3, dev
    rxq, txq, ctrlq = dev["queues"]
    assert ctrlq["requests"] == 0, dev
    # every TX chain is a request; RX requests are at least the frames
    assert txq["requests"] == c["tx"], dev
    assert rxq["requests"] >= c["rx"] > 0, dev
    for q, kicks in ((rxq, c["rx_kicks"]), (txq, c["tx_kicks"])):
        if ioeventfd:
            # lkvm binds a queue's ioeventfd at DRIVER_OK: a kick before
            # that (early=1, the RX queue) exits to the vCPU instead.
            early = early_kicks if q is rxq else 0
            assert q["kicks_exit"] == early, dev
            assert q["kicks_eventfd"] + early == kicks > 0, (dev, c)
        else:
            assert q["kicks_eventfd"] == 0, dev
            assert q["kicks_exit"] == kicks > 0, (dev, c)


def net_run(ns, tmp_path, transport="pci", ioeventfd=True, tx=16, rx=16,
            seed=7, guest_mac=MAC, create_tap=True, mtu=None, big=0,
            lkvm_args=(), again_at=0, gap=0, **opts):
    """Tap (unless lkvm is to create it), helper, lkvm with net.elf."""
    if create_tap:
        make_tap(ns)
    if mtu:
        ip("link", "set", TAP, "mtu", str(mtu), ns=ns)
    h = Helper(ns, rx, seed, dst=guest_mac or BCAST,
               wait_tap=not create_tap, big=big, again_at=again_at,
               gap=gap)
    try:
        h.wait_line("ready" if create_tap else "waiting")
        netarg = f"mode=tap,tapif={TAP}"
        if guest_mac:
            netarg += f",guest_mac={guest_mac}"
        params = {"transport": GUEST_TRANSPORT[transport], "seed": seed,
                  "tx": tx, "rx": rx}
        if guest_mac:
            params["mac"] = guest_mac
        params.update(opts)
        r = lkvm_run([*lkvm_args, "-k", kit("net.elf"), "-n", netarg, "-p",
                      " ".join(f"{k}={v}" for k, v in params.items())],
                     ns=ns, stats=tmp_path / "stats.json",
                     transport=transport, ioeventfd=ioeventfd)
        return r, h.finish()
    finally:
        h.stop()


def check_run(r, h, transport, ioeventfd=True, tx=16, rx=16, seed=7,
              mac=MAC, early_kicks=0):
    assert r.rc == 0, r
    assert "PASS: net" in r.out, r
    assert not r.err_lines(), r
    assert not h["errors"], h["errors"]
    assert h["injected"] == rx, h
    c = guest_counts(r)
    if mac:
        assert c["mac"] == mac, r
    assert c["tx"] == c["tx_done"] == tx and c["rx"] == rx, c
    check_tx_frames(h, seed, tx, c["mac"], r)
    check_stats(r, c, transport, ioeventfd, early_kicks)
    return c


@needs_netns
@pytest.mark.parametrize("ioeventfd", [True, False],
                         ids=["ioeventfd", "no-ioeventfd"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_net_transport(netns, tmp_path, transport, ioeventfd):
    r, h = net_run(netns, tmp_path, transport, ioeventfd, irq=1)
    c = check_run(r, h, transport, ioeventfd)
    assert c["irqs"] > 0, r
    assert c["hdr_len"] == 12, r
    assert c["merged"] == 0, r      # 2048-byte buffers hold any frame
    if transport == "mmio":
        assert "virtio-mmio slot 0 at 0xe0000000: device 1" in r.out, r


@needs_netns
@pytest.mark.parametrize("transport", ["pci", "mmio"])
def test_net_indirect_event_idx(netns, tmp_path, transport):
    """INDIRECT_DESC (every other TX chain) and EVENT_IDX on a 16-entry
    ring, wrapped several times by 40 frames each way."""
    r, h = net_run(netns, tmp_path, transport, tx=40, rx=40, seed=11,
                   indirect=1, event_idx=1, qsize=16, rxbufs=8, irq=1)
    c = check_run(r, h, transport, tx=40, rx=40, seed=11)
    assert c["irqs"] > 0, r


@needs_netns
@pytest.mark.parametrize("rxchain", [0, 1], ids=["flat", "chained"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_net_mrg(netns, tmp_path, transport, rxchain):
    """512-byte receive buffers: a 1514-byte frame plus its header needs
    three, and num_buffers says so."""
    r, h = net_run(netns, tmp_path, transport, seed=13, rxsize=512,
                   rxbufs=12, rxchain=rxchain, irq=rxchain)
    c = check_run(r, h, transport, seed=13)
    assert c["merged"] > 0 and c["max_bufs"] == 3, r
    assert c["rx_used"] > c["rx"], r


@needs_netns
@pytest.mark.parametrize("ioeventfd", [True, False],
                         ids=["ioeventfd", "no-ioeventfd"])
@pytest.mark.parametrize("bufs", [
    {"rxbufs": 16},
    {"rxbufs": 4},
    {"rxbufs": 3, "rxsize": 512, "event_idx": 1},
], ids=["16x2048", "4x2048", "3x512-event_idx"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_net_hold(netns, tmp_path, transport, bufs, ioeventfd):
    """No receive buffers while the host injects its 24 frames (they wait
    in the tap), then 16, or only 4, or 3 small ones a frame needs all of
    (with EVENT_IDX, so lkvm must ask for the kick through avail_event),
    re-posted as they are used: lkvm must resume on the kicks and drop
    nothing."""
    r, h = net_run(netns, tmp_path, transport, ioeventfd, tx=4, rx=24,
                   seed=17, hold=500, irq=1, **bufs)
    c = check_run(r, h, transport, ioeventfd, tx=4, rx=24, seed=17)
    assert c["irqs"] > 0, r
    assert "hold: 500 ms without receive buffers" in r.out, r




@needs_netns
@pytest.mark.parametrize("transport", ["pci", "mmio"])
@pytest.mark.parametrize("bad", ["tx_short", "tx_hdr_only", "tx_huge"])
def test_net_bad_tx_chain(netns, tmp_path, transport, bad):
    """After the traffic, one broken TX chain: 6 bytes (less than the
    header), the header alone, or 72000 bytes. lkvm completes it (the frame
    dropped or passed on) or sets NEEDS_RESET, but the queue never hangs and
    lkvm never dies; if it completed, a good frame after it still arrives."""
    r, h = net_run(netns, tmp_path, transport, tx=4, rx=4, seed=47,
                   bad=bad, irq=1)
    assert r.rc == 0, r
    assert "PASS: net" in r.out, r
    assert not r.err_lines(), r
    if f"bad {bad}: NEEDS_RESET" in r.out:
        tx = 4
    else:
        assert f"bad {bad}: completed, traffic goes on" in r.out, r
        tx = 5
    c = guest_counts(r)
    check_tx_frames(h, 47, tx, c["mac"], r)


@needs_netns
@pytest.mark.parametrize("event_idx", [0, 1], ids=["flags", "event_idx"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_net_rx_interrupts(netns, tmp_path, transport, event_idx):
    """Frames 20 ms apart reach a guest that waits idle for each: every
    one must come with an interrupt (MSI-X, INTx, the mmio pin), whether
    the driver asks by flags or by used_event."""
    r, h = net_run(netns, tmp_path, transport, tx=2, rx=12, seed=53,
                   gap=20, irq=1, event_idx=event_idx)
    c = check_run(r, h, transport, tx=2, rx=12, seed=53)
    # On a loaded machine the host's 20 ms sleeps bunch frames together,
    # so only "interrupts came, more than once" is certain; a lost
    # interrupt would leave the guest waiting and fail check_run above.
    assert c["irqs"] >= 2, r


@needs_netns
@pytest.mark.parametrize("event_idx", [0, 1], ids=["flags", "event_idx"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_net_rx_posted_before_driver_ok(netns, tmp_path, transport,
                                        event_idx):
    """Receive buffers posted and kicked before DRIVER_OK: once the
    driver is OK, frames from the tap must land in them."""
    r, h = net_run(netns, tmp_path, transport, tx=2, rx=8, seed=61,
                   early=1, irq=1, event_idx=event_idx)
    assert "early: 16 receive buffers posted" in r.out, r
    check_run(r, h, transport, tx=2, rx=8, seed=61, early_kicks=1)


@needs_netns
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_net_reset(netns, tmp_path, transport):
    """A device reset after the first 6 + 8 frames: new rings, features
    again, and the same traffic once more (the helper injects RX frames
    8-15 on seeing TX frame 6); --stats counts across the reset."""
    r, h = net_run(netns, tmp_path, transport, tx=6, rx=8, seed=43,
                   again_at=6, reset=1, irq=1)
    check_run(r, h, transport, tx=12, rx=16, seed=43)
    assert "reset: set up again, 8 more frames each way" in r.out, r


@needs_netns
@pytest.mark.parametrize("transport,hdr_len", [
    ("pci", 12), ("mmio", 12),
    ("pci-legacy", 10),
])
def test_net_no_mrg(netns, tmp_path, transport, hdr_len):
    """MRG_RXBUF declined: one buffer per frame with num_buffers 1 (virtio
    1.x keeps the 12-byte header); a legacy device uses the 10-byte
    struct virtio_net_hdr in both directions."""
    r, h = net_run(netns, tmp_path, transport, seed=19, mrg=0)
    c = check_run(r, h, transport, seed=19)
    assert c["hdr_len"] == hdr_len, r


@needs_netns
def test_net_lkvm_creates_tap(netns, tmp_path):
    """No tap yet: lkvm creates it (TAP, NO_PI, VNET_HDR, not persistent),
    the helper brings it up, and it is gone when lkvm exits. No guest_mac:
    lkvm chooses a unicast MAC, the guest sends from it."""
    r, h = net_run(netns, tmp_path, "pci", tx=4, rx=4, seed=23,
                   guest_mac=None, create_tap=False, delay=1500)
    c = check_run(r, h, "pci", tx=4, rx=4, seed=23, mac=None)
    flags = h.get("tun_flags")
    assert flags is not None, h
    want = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR
    assert flags & want == want, hex(flags)
    assert not flags & IFF_PERSIST, hex(flags)
    mac = net_helper.parse_mac(c["mac"])
    assert not mac[0] & 1 and any(mac), c["mac"]
    assert ip("link", "show", TAP, ns=netns, check=False).returncode != 0, \
        "the tap lkvm created outlived it"


@needs_netns
def test_net_attach_twice(netns, tmp_path):
    """The same persistent tap serves two lkvm runs one after the other."""
    make_tap(netns)
    for seed in (29, 31):
        h = Helper(netns, 4, seed)
        try:
            h.wait_line("ready")
            r = lkvm_run(["-k", kit("net.elf"), "-n",
                          f"mode=tap,tapif={TAP},guest_mac={MAC}", "-p",
                          f"transport=pci seed={seed} tx=4 rx=4 mac={MAC}"],
                         ns=netns, stats=tmp_path / f"stats{seed}.json")
            res = h.finish()
        finally:
            h.stop()
        check_run(r, res, "pci", tx=4, rx=4, seed=seed)


def test_net_mode_none():
    """-n mode=none: no device at all; the guest says so cleanly."""
    r = lkvm_run(["-k", kit("net.elf"), "-n", "mode=none", "-p",
                  "transport=pci"])
    assert r.rc == 1, r
    assert "FAIL: no virtio-net device" in r.out, r
    assert not r.err_lines(), r




@pytest.mark.parametrize("netarg", [
    "mode=tap,tapif=",
    f"mode=tap,tapif={TAP},guest_mac=52:54:00:12:34",
    f"mode=tap,tapif={TAP},guest_mac=52:54:00:12:34:zz",
    f"mode=tap,tapif={TAP},guest_mac=52:54:00:12:34:56:78",
    f"mode=tap,tapif={TAP},guest_mac=525400123456",
    f"mode=tap,tapif={TAP},guest_mac=01:00:5e:00:00:01",
    f"mode=tap,tapif={TAP},guest_mac=ff:ff:ff:ff:ff:ff",
    f"mode=tap,tapif={TAP},guest_mac=00:00:00:00:00:00",
    "mode=tap,tapif=abcdefghijklmnopqrstuvwxyz",
    "mode=bogus",
], ids=["empty-tapif", "short-mac", "bad-hex-mac", "long-mac",
        "mac-no-colons", "multicast-mac", "broadcast-mac", "zero-mac",
        "long-tapif", "bogus-mode"])
def test_net_bad_input(request, netarg):
    """Refused before any tap is opened: exit 1, one "lkvm: error:" line.
    It runs in a namespace anyway, so a bug that gets as far as creating a
    tap does so there."""
    args = ["-k", kit("exit.elf"), "-n", netarg]
    ns = f"lkvm-test-{os.getpid()}-{next(_ns_counter)}"
    ip("netns", "add", ns)
    try:
        r = lkvm_run(args, ns=ns)
    finally:
        ip("netns", "del", ns, check=False)
    assert r.rc == 1, r
    lines = r.err_lines()
    assert len(lines) == 1 and lines[0].startswith("lkvm: error:"), r
    assert "hello from the guest kit" not in r.out, r




@needs_netns
@pytest.mark.parametrize("transport", ["pci", "mmio"])
def test_net_oversized_frame_no_mrg(netns, tmp_path, transport):
    """MRG_RXBUF declined, 1526-byte buffers; the host's first frame is a
    4014-byte one (tap MTU 9000) that fits no buffer: it must be dropped,
    and the 8 ordinary frames after it must all arrive."""
    r, h = net_run(netns, tmp_path, transport, tx=2, rx=8, seed=37, mrg=0,
                   rxsize=1526, mtu=9000, big=4000, irq=1)
    assert h.get("big_sent") == 4014, h
    check_run(r, h, transport, tx=2, rx=8, seed=37)


@needs_netns
def test_net_mac_per_name(netns, tmp_path):
    """Without guest_mac the MAC comes from --name: the same name gives the
    same MAC run after run, another name another MAC; all unicast."""
    macs = []
    for i, name in enumerate(("vm-a", "vm-a", "vm-b")):
        if i:
            ip("tuntap", "del", "dev", TAP, "mode", "tap", ns=netns)
        r, h = net_run(netns, tmp_path, "pci", tx=1, rx=1, seed=41 + i,
                       guest_mac=None, lkvm_args=("--name", name))
        c = check_run(r, h, "pci", tx=1, rx=1, seed=41 + i, mac=None)
        mac = net_helper.parse_mac(c["mac"])
        assert not mac[0] & 1 and any(mac), c["mac"]
        macs.append(c["mac"])
    assert macs[0] == macs[1] != macs[2], macs


@needs_netns
def test_net_mac_uppercase(netns, tmp_path):
    """guest_mac in upper case is the same MAC."""
    r, h = net_run(netns, tmp_path, "mmio", tx=2, rx=2, seed=59,
                   guest_mac="52:54:00:AB:CD:EF")
    check_run(r, h, "mmio", tx=2, rx=2, seed=59, mac="52:54:00:ab:cd:ef")


@needs_netns
def test_net_tap_busy(netns):
    """A tap another lkvm has open: the second one says so and exits 1."""
    make_tap(netns)
    bg = subprocess.Popen(
        ["ip", "netns", "exec", netns, str(LKVM), "run", "--timeout", "20",
         "-k", str(kit("hang.elf")), "-n", f"mode=tap,tapif={TAP}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    try:
        out = b""
        deadline = time.monotonic() + 10
        while b"hanging" not in out and time.monotonic() < deadline:
            if bg.poll() is not None:
                break
            ready, _, _ = select.select([bg.stdout], [], [], 0.2)
            if ready:
                out += os.read(bg.stdout.fileno(), 4096)
        assert b"hanging" in out, out
        r = lkvm_run(["-k", kit("exit.elf"), "-n", f"mode=tap,tapif={TAP}"],
                     ns=netns)
    finally:
        if bg.poll() is None:
            bg.kill()
        bg.wait(timeout=10)
        bg.stdout.close()
        bg.stderr.close()
    assert r.rc == 1, r
    lines = r.err_lines()
    assert len(lines) == 1 and lines[0].startswith("lkvm: error:"), r
    assert "busy" in lines[0], r
    assert "hello from the guest kit" not in r.out, r


@needs_netns
def test_net_tap_down(netns, tmp_path):
    """The tap left down: the kernel drops what lkvm writes, and lkvm
    still completes every TX chain (nothing hangs, no error)."""
    ip("tuntap", "add", "dev", TAP, "mode", "tap", "vnet_hdr", ns=netns)
    r = lkvm_run(["-k", kit("net.elf"), "-n", f"mode=tap,tapif={TAP}", "-p",
                  "transport=pci tx=40 rx=0 irq=1"],
                 ns=netns, stats=tmp_path / "stats.json")
    assert r.rc == 0, r
    assert "PASS: net" in r.out, r
    assert not r.err_lines(), r
    c = guest_counts(r)
    assert c["tx"] == c["tx_done"] == 40, c
    st = json.loads(ip("-s", "-j", "link", "show", TAP, ns=netns).stdout)
    assert st[0]["stats64"]["rx"]["dropped"] == 40, st

"""virtio-net with a real Linux guest: Debian's generic kernel under lkvm,
nested in one QEMU TCG L1 guest (tests/nested/nested.py).

One L1 boot runs the L2 boots of RUNS, one per transport (pci, pci-legacy,
mmio; -m 256, 1 vCPU), each with two NICs on taps t0 and t1 that lkvm
creates inside L1 (which has no other network: every address and packet
stays there), on 169.254.77.0/24 and 169.254.78.0/24. net-job.sh is the L1
side, net-check.sh the guest's. Per NIC the guest finds the interface by the
MAC given on the command line and pings L1 (56-byte and full-MTU frames);
then 100 MiB go over TCP from the guest to L1 and 100 MiB back over the
first NIC, 8 MiB each way over the second, and iperf3 runs 3 s each way
(guest -> L1, then -R) over the first. A fourth boot ("mq": 2 vCPUs, one
NIC with queues=2) runs both iperf3 tests at once, one per CPU, and every
RX and TX queue of both pairs must serve requests. A fifth ("poll") is the
first with both cards on one shared I/O thread that polls their transmit
queues.

The bulk payload is made the same way on both sides and here: per MiB an
8-digit chunk number and one 1 MiB - 8 byte random block, so a lost,
repeated or swapped segment changes the md5 the receiver computes. It is
moved by net-blast.c (1 MiB writes, md5 as it reads): busybox nc moves 1 KiB
per system call and with md5sum behind it did 20 MiB in 29 s under nested
TCG, against 6-15 s for 100 MiB here.

Checked: the virtio_net driver binds every card with the MAC asked for,
links are up, pings answered, every byte arrives (size and md5, both ways,
on each NIC, over that NIC's own tap), frames longer than an MTU cross the
tap both ways during the bulk transfers (TSO: with the offloads off every
average is <= 1514 bytes, which fails the test), iperf3 moves data both
ways, queues are served through ioeventfd, lkvm dropped no frame (its
--stats counters: TCP would hide drops from the md5s), the guest's dmesg
has no warnings, lkvm exits 0. test_net_blast_on_the_host checks the helper alone.

Timings on the 2-core development box, three runs with nothing else
nested running (the "nested timings" section of the output prints them
every time): the whole file 2 min 53 s - 3 min 20 s; L1 170-195 s on the
host, of which per L2 boot 49-71 s in L1 (boot to the checks 13-17 s);
100 MiB guest -> L1 5.7-16 s, L1 -> guest 4.5-10 s; 8 MiB 0.4-2 s.
iperf3 (nested TCG, correctness only): guest -> L1 31-151 Mbit/s, L1 ->
guest 118-237 Mbit/s. On a loaded box all of it can take twice as long:
each lkvm run has 180 s.

Environment: LKVM_NESTED_WORK keeps the L1 image and console.log;
LKVM_NESTED_NET_REPLAY=console.log re-checks a saved console without
booting; LKVM_NESTED_NET_RUNS=pci,mmio runs only those; LKVM_NESTED_LKVM
tests another static lkvm.
"""

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NET_CHECK = os.path.join(HERE, "net-check.sh")
NET_JOB = os.path.join(HERE, "net-job.sh")
NET_BLAST = os.path.join(HERE, "net-blast")
IPERF3 = "/usr/bin/iperf3"

MIB = 1 << 20
MTU_FRAME = 1514        # the longest frame without segmentation offloads
# Each MiB of payload: "%08d" % chunk, then this block.
BLOCK = random.Random("lkvm-net-payload").randbytes(MIB - 8)


class Run:
    """One L2 boot: its NICs as (MAC, MiB each way[, more -n options]),
    iperf3 seconds each way over NIC 0 (0: none), more lkvm options."""

    def __init__(self, name, transport, nics, iperf=0, timeout=90,
                 lkvm_args=()):
        self.name, self.transport, self.iperf = name, transport, iperf
        self.nics = [n if len(n) == 3 else (n[0], n[1], "") for n in nics]
        self.timeout, self.lkvm_args = timeout, list(lkvm_args)

    def job(self):
        nics = ["%s/%d%s" % (mac, mib, "/" + opts if opts else "")
                for mac, mib, opts in self.nics]
        return nested.Job(self.name, ["sh", "/l1/net-job.sh", self.name,
                                      self.transport, str(self.timeout),
                                      str(self.iperf)] + nics + ["--"] +
                          self.lkvm_args, timeout=self.timeout + 30)


RUNS = [
    Run("pci", "pci", [("02:4c:4b:01:00:01", 100), ("02:4c:4b:01:00:02", 8)],
        iperf=3, timeout=180),
    Run("pci-legacy", "pci-legacy", [("02:4c:4b:02:00:01", 100),
                                     ("02:4c:4b:02:00:02", 8)],
        iperf=3, timeout=180),
    Run("mmio", "mmio", [("02:4c:4b:03:00:01", 100),
                         ("02:4c:4b:03:00:02", 8)], iperf=3, timeout=180),
    # Multi-queue: two vCPUs, two queue pairs, the two iperf3 tests at once
    # from different CPUs (test_multi_queue_spreads_flows).
    Run("mq", "pci", [("02:4c:4b:04:00:01", 0, "queues=2")], iperf=3,
        timeout=180, lkvm_args=["-c", "2"]),
    # Both cards' queues on one shared I/O thread that polls the transmit
    # queues (a window long enough for a nested guest's pace): the same
    # checks, and test_polled_transmit_queues.
    Run("poll", "pci", [("02:4c:4b:05:00:01", 100), ("02:4c:4b:05:00:02", 8)],
        iperf=3, timeout=180,
        lkvm_args=["--poll", "on,max_us=3000", "--iothreads", "1"]),
]
_only = os.environ.get("LKVM_NESTED_NET_RUNS")
if _only:
    RUNS = [r for r in RUNS if r.name in _only.split(",")]
RUN_IDS = [r.name for r in RUNS]
NICS = [(r, i) for r in RUNS for i in range(len(r.nics)) if r.nics[i][1]]
NIC_IDS = ["%s-nic%d" % (r.name, i) for r, i in NICS]

# Printed at the end of the run by conftest.py.
TIMINGS = []


def payload_md5(mib):
    h = hashlib.md5()
    for c in range(mib):
        h.update(b"%08d" % c)
        h.update(BLOCK)
    return h.hexdigest()


@pytest.fixture(scope="module")
def l1(tmp_path_factory):
    work = nested.work_dir(tmp_path_factory, "nested-net")
    replay = os.environ.get("LKVM_NESTED_NET_REPLAY")
    if replay:
        res = nested.replay(replay)
        res.workdir = os.path.dirname(replay)
    else:
        if not shutil.which(IPERF3):
            pytest.fail("%s is missing: scripts/install-deps.sh" % IPERF3)
        lkvm = os.environ.get("LKVM_NESTED_LKVM") or nested.LKVM_STATIC
        if not os.path.exists(lkvm):
            pytest.fail("%s is missing: run 'make lkvm.static'" % lkvm)
        nested.build_helpers([NET_BLAST])
        kernel = nested.fetch_kernels(["generic"])["generic"]
        block = os.path.join(work, "net-block.bin")
        with open(block, "wb") as f:
            f.write(BLOCK)
        initrd = nested.build_l2_initramfs(
            os.path.join(work, "l2-net.gz"), kernel,
            ["--add", NET_CHECK + ":/net/net-check.sh",
             "--add", block + ":/net/block.bin",
             "--add", NET_BLAST + ":/net/net-blast", "--binary", IPERF3])
        files = {"/l2/vmlinux": kernel["vmlinux"], "/l2/net-initrd": initrd,
                 "/l1/net-job.sh": NET_JOB, "/l1/net-block.bin": block,
                 "/l1/net-blast": NET_BLAST}
        res = nested.run_l1([r.job() for r in RUNS], files,
                            l1_kernel=kernel, workdir=work, lkvm=lkvm,
                            l1_args=["--binary", IPERF3])
        res.workdir = work
    _summary(res)
    return res


def _job(l1, name):
    assert l1.completed, l1.describe()
    j = l1.jobs.get(name)
    assert j is not None, "no result for %s:\n%s" % (name, l1.tail())
    return j


def _marked(j, marker):
    """{word: JSON} of the job's "@@<marker> word JSON" lines."""
    out = {}
    for line in j.console:
        if line.startswith("@@%s " % marker):
            key, _, text = line[len(marker) + 3:].partition(" ")
            try:
                out[key] = json.loads(text)
            except ValueError:
                out[key] = None
    return out


def _kv(j, key):
    """A net-blast line in a fact ("bytes=N md5=HEX secs=S") as a dict."""
    return dict(w.split("=", 1) for w in j.facts.get(key, "").split()
                if "=" in w)


def _counters(j, key):
    """The tap or NIC counters in a fact: rx_bytes rx_packets tx_bytes
    tx_packets."""
    v = j.facts.get(key, "").split()
    return [int(x) for x in v] if len(v) == 4 else None


def _delta(j, a, b):
    """Counters from fact a to fact b: (rx bytes, rx frames, tx bytes, tx
    frames), or None if either is missing."""
    ca, cb = _counters(j, a), _counters(j, b)
    if ca is None or cb is None:
        return None
    return tuple(y - x for x, y in zip(ca, cb))


def _avg(nbytes, frames):
    return nbytes / frames if frames else 0.0


def _iperf_figures(rep):
    """(bytes, bits/s) sent and received in one client's -J report."""
    end = rep["end"]
    return [(end[k]["bytes"], end[k]["bits_per_second"])
            for k in ("sum_sent", "sum_received")]


def _summary(res):
    TIMINGS.append("nested-net: L1 %s in %.1f s on the host (L1 init at %s"
                   " s); console log %s/console.log" % (
                       "completed" if res.completed else "FAILED",
                       res.elapsed, res.l1.get("boot_time"), res.workdir))
    for r in RUNS:
        j = res.jobs.get(r.name)
        if not j:
            continue
        f = j.facts
        TIMINGS.append("nested-net: %-10s exit=%s %s s in L1; guest checks"
                       " from %s s to %s s of uptime" % (
                           r.name, j.exit, j.time, f.get("t_start"),
                           f.get("t_end")))
        for i, (_, mib, _) in enumerate(r.nics):
            if not mib:
                continue
            up = _delta(j, "l1_t%d_start" % i, "l1_t%d_up" % i)
            down = _delta(j, "l1_t%d_up" % i, "l1_t%d_down" % i)
            TIMINGS.append(
                "nested-net: %-10s nic%d %3d MiB guest->L1 %s s, L1->guest"
                " %s s; average frame on the tap %s / %s bytes" % (
                    r.name, i, mib, _kv(j, "l1_nic%d_up" % i).get("secs"),
                    _kv(j, "nic%d_recv" % i).get("secs"),
                    "%.0f" % _avg(up[0], up[1]) if up else "?",
                    "%.0f" % _avg(down[2], down[3]) if down else "?"))
        rep = _marked(j, "IPERF")
        for d, what in (("fwd", "guest->L1"), ("rev", "L1->guest -R")):
            try:
                (sb, sbps), (rb, rbps) = _iperf_figures(rep[d])
            except (KeyError, TypeError):
                continue
            TIMINGS.append(
                "nested-net: %-10s iperf3 %-12s %.1f Mbit/s sent (%.1f MiB),"
                " %.1f Mbit/s received (%.1f MiB); nested TCG: correctness"
                " only" % (r.name, what, sbps / 1e6, sb / MIB, rbps / 1e6,
                           rb / MIB))


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_nics_found_and_ping(l1, run):
    """Every card: the virtio_net driver, the MAC given, link up, pings
    answered (56-byte and full-MTU), a clean dmesg, lkvm exit 0."""
    j = _job(l1, run.name)
    f = j.facts
    ctx = "%s:\n%s" % (run.name, j.tail())
    assert f.get("l1_lkvm_rc") == "0", ctx
    assert f.get("nics") == str(len(run.nics)), ctx
    names = set()
    for i, (mac, _, _) in enumerate(run.nics):
        # net-check.sh found the interface by this MAC.
        assert f.get("nic%d_if" % i), "no interface with MAC %s; %s" % (
            mac, ctx)
        names.add(f["nic%d_if" % i])
        assert f.get("nic%d_driver" % i) == "virtio_net", ctx
        assert f.get("nic%d_carrier" % i) == "1", ctx
        assert f.get("nic%d_ping_rc" % i) == "0", ctx
        assert "5 packets received" in f.get("nic%d_ping_summary" % i, ""), ctx
        assert f.get("nic%d_bigping_rc" % i) == "0", ctx
    assert len(names) == len(run.nics), ctx
    assert f.get("dmesg_bad") == "0", "%s: %s" % (run.name, j.dmesg)


@pytest.mark.parametrize("run,i", NICS, ids=NIC_IDS)
def test_tcp_both_ways(l1, run, i):
    """MIB MiB guest -> L1 and L1 -> guest over TCP, byte-exact (md5 and
    size on the receiving side), over this NIC's own tap."""
    j = _job(l1, run.name)
    f = j.facts
    mib = run.nics[i][1]
    want = payload_md5(mib)
    ctx = "%s nic%d, %d MiB:\n%s" % (run.name, i, mib, j.tail())
    assert f.get("nic%d_send_rc" % i) == "0", ctx
    assert f.get("nic%d_recv_rc" % i) == "0", ctx
    up, down = _kv(j, "l1_nic%d_up" % i), _kv(j, "nic%d_recv" % i)
    # What L1 received from the guest, then what the guest received.
    assert up.get("bytes") == str(mib * MIB), ctx
    assert up.get("md5") == want, ctx
    assert down.get("bytes") == str(mib * MIB), ctx
    assert down.get("md5") == want, ctx
    # The tap of this NIC carried it: its own rx (guest -> L1) and tx.
    up = _delta(j, "l1_t%d_start" % i, "l1_t%d_up" % i)
    down = _delta(j, "l1_t%d_up" % i, "l1_t%d_down" % i)
    assert up and up[0] >= mib * MIB, "t%d rx %s; %s" % (i, up, ctx)
    assert down and down[2] >= mib * MIB, "t%d tx %s; %s" % (i, down, ctx)


BULK_RUNS = [r for r in RUNS if r.nics[0][1]]


@pytest.mark.parametrize("run", BULK_RUNS, ids=[r.name for r in BULK_RUNS])
def test_offloads_large_segments(l1, run):
    """During NIC 0's bulk transfers the frames that cross the tap are on
    average longer than 1514 bytes, each way: the guest's TSO segments
    reach the tap whole (HOST_TSO, the tap's vnet header), and L1's GSO
    frames reach the guest whole (GUEST_TSO, TUNSETOFFLOAD); the guest's
    own NIC counters agree. Without the offloads no frame exceeds 1514."""
    j = _job(l1, run.name)
    ctx = "%s:\n%s" % (run.name, j.tail())
    up = _delta(j, "l1_t0_start", "l1_t0_up")
    down = _delta(j, "l1_t0_up", "l1_t0_down")
    sent = _delta(j, "nic0_cnt_before", "nic0_cnt_sent")
    got = _delta(j, "nic0_cnt_sent", "nic0_cnt_received")
    assert up and down and sent and got, ctx
    avgs = {"tap rx (guest -> L1)": _avg(up[0], up[1]),
            "tap tx (L1 -> guest)": _avg(down[2], down[3]),
            "guest tx": _avg(sent[2], sent[3]),
            "guest rx": _avg(got[0], got[1])}
    small = {k: round(v) for k, v in avgs.items() if v <= MTU_FRAME}
    assert not small, "average frames of at most %d bytes: %s; %s" % (
        MTU_FRAME, small, ctx)


@pytest.mark.parametrize("run", [r for r in RUNS if r.iperf],
                         ids=[r.name for r in RUNS if r.iperf])
def test_iperf3_both_ways(l1, run):
    """iperf3 -c L1 and iperf3 -c L1 -R from the guest: each moved more
    than 1 MiB at a non-zero rate, by the guest's report and by L1's
    server. The figures are in the nested timings: TCG, correctness only."""
    j = _job(l1, run.name)
    f = j.facts
    rep = _marked(j, "IPERF")
    ctx = "%s: %s\n%s" % (run.name, sorted(rep), j.tail())
    assert f.get("iperf_fwd_rc") == "0" and f.get("iperf_rev_rc") == "0", ctx
    for d, reverse in (("fwd", 0), ("rev", 1)):
        assert rep.get(d), "%s: no iperf3 %s report; %s" % (run.name, d, ctx)
        assert rep[d]["start"]["test_start"]["reverse"] == reverse, ctx
        for nbytes, bps in _iperf_figures(rep[d]):
            assert nbytes > MIB and bps > 0, "%s %s: %s" % (
                run.name, d, rep[d]["end"])
    # L1's servers saw the same tests: what they received / sent.
    assert rep.get("l1-fwd") and rep.get("l1-rev"), ctx
    assert (rep["l1-fwd"]["end"]["sum_received"]["bytes"] ==
            rep["fwd"]["end"]["sum_received"]["bytes"]), ctx
    assert (rep["l1-rev"]["end"]["sum_sent"]["bytes"] ==
            rep["rev"]["end"]["sum_sent"]["bytes"]), ctx


def _stats(j):
    """lkvm's --stats JSON."""
    stats = None
    for line in j.console:
        if line.startswith("@@STATS "):
            stats = json.loads(line[len("@@STATS "):])
    assert stats, "%s: no --stats JSON:\n%s" % (j.name, j.tail())
    return stats


def _net_devices(j):
    """The virtio-net devices of lkvm's --stats JSON."""
    return [d for d in _stats(j)["devices"] if d["type"] == "virtio-net"]


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_queues_served_through_ioeventfd(l1, run):
    """Per card (--stats): driver seen, both queues served, every kick
    through ioeventfd, none by a vCPU exit."""
    devs = _net_devices(_job(l1, run.name))
    assert len(devs) == len(run.nics), devs
    for dev in devs:
        assert dev["driver_seen"], dev
        rx, tx = dev["queues"][:2]
        assert rx["requests"] > 0 and tx["requests"] > 0, dev
        assert tx["kicks_eventfd"] > 0, dev
        assert all(q["kicks_exit"] == 0 for q in dev["queues"]), dev


@pytest.mark.parametrize("run", RUNS, ids=RUN_IDS)
def test_nothing_dropped(l1, run):
    """lkvm dropped no frame either way and met no bad receive buffer in
    all that traffic (--stats). TCP would have hidden drops from the md5s:
    it retransmits. A full ring is no reason to drop: lkvm stops reading
    the tap until the driver posts buffers."""
    for dev in _net_devices(_job(l1, run.name)):
        bad = {k: dev.get(k) for k in ("rx_dropped", "rx_bad_buffers",
                                       "tx_dropped")}
        assert bad == dict.fromkeys(bad, 0), dev


POLL_RUNS = [r for r in RUNS if "--poll" in r.lkvm_args]


@pytest.mark.parametrize("run", POLL_RUNS, ids=[r.name for r in POLL_RUNS])
def test_polled_transmit_queues(l1, run):
    """--poll on --iothreads 1: every queue of both cards on the one
    thread; transmit queues polled and found frames without kicks, receive
    and control queues never polled."""
    j = _job(l1, run.name)
    st = _stats(j)
    assert [t["name"] for t in st.get("iothreads", [])] == ["io0"], st
    for dev in _net_devices(j):
        assert dev["poll"] == "on", dev
        assert {q["iothread"] for q in dev["queues"]} == {0}, dev
        rx, tx = dev["queues"][:2]
        assert tx["poll_hits"] > 0, dev
        assert tx["kicks_eventfd"] < tx["requests"], dev
        assert rx["poll_hits"] == 0 and rx["poll_switches"] == 0, dev
        assert dev["queues"][-1]["poll_switches"] == 0, dev


MQ_RUNS = [r for r in RUNS if "queues=" in r.nics[0][2]]


@pytest.mark.parametrize("run", MQ_RUNS, ids=[r.name for r in MQ_RUNS])
def test_multi_queue_spreads_flows(l1, run):
    """queues=2 with 2 vCPUs: the guest's driver negotiates MQ and enables
    both pairs (VIRTIO_NET_CTRL_MQ on the control queue), and flows from
    the two CPUs use both: every RX and TX queue served requests."""
    j = _job(l1, run.name)
    f = j.facts
    ctx = "%s:\n%s" % (run.name, j.tail())
    assert f.get("nic0_rx_queues") == "2", ctx
    assert f.get("nic0_tx_queues") == "2", ctx
    (dev,) = _net_devices(j)
    assert dev["queue_pairs"] == 2 and dev["active_pairs"] == 2, dev
    rx0, tx0, rx1, tx1, ctrl = dev["queues"]
    for name, q in (("rx0", rx0), ("tx0", tx0), ("rx1", rx1), ("tx1", tx1)):
        assert q["requests"] > 0, (name, dev)
    # MQ_VQ_PAIRS_SET and the receive-mode commands went through it.
    assert ctrl["requests"] > 0, dev


def test_net_blast_on_the_host(tmp_path):
    """The transfer helper itself, over loopback in a network namespace of
    its own: the md5 it prints for data arriving in odd-sized pieces is
    hashlib's, and what it sends is the payload payload_md5() describes."""
    if not shutil.which("unshare") or os.geteuid():
        pytest.skip("needs unshare -n (root)")
    nested.build_helpers([NET_BLAST])
    block = tmp_path / "block.bin"
    block.write_bytes(BLOCK)
    data = random.Random(7).randbytes(3 * MIB + 12345)
    sender = tmp_path / "send.py"
    sender.write_text(
        "import random, socket, sys, time\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        s = socket.create_connection(('127.0.0.1', 5000))\n"
        "        break\n"
        "    except ConnectionRefusedError:\n"
        "        time.sleep(0.05)\n"
        "rnd, off = random.Random(1), 0\n"
        "while off < len(data):\n"
        "    n = rnd.choice([1, 7, 63, 64, 65, 1000, 70000])\n"
        "    s.sendall(data[off:off + n])\n"
        "    off += n\n"
        "s.close()\n")
    (tmp_path / "data.bin").write_bytes(data)
    script = (
        "ip link set lo up\n"
        "{nb} recv listen 5000 & {py} {s} {d}; wait\n"
        "{nb} send listen 5001 5 {b} & sleep 0.3; {nb} recv 127.0.0.1 5001\n"
        "wait\n").format(nb=NET_BLAST, py=sys.executable, s=sender,
                          d=tmp_path / "data.bin", b=block)
    out = subprocess.run(["unshare", "-n", "sh", "-c", script], timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True).stdout
    lines = [dict(w.split("=", 1) for w in line.split())
             for line in out.splitlines() if line.startswith("bytes=")]
    got = [(d["bytes"], d.get("md5")) for d in lines]
    assert (str(len(data)), hashlib.md5(data).hexdigest()) in got, out
    assert (str(5 * MIB), payload_md5(5)) in got, out
    assert (str(5 * MIB), None) in got, out

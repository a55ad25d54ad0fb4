"""virtio-net with a real Linux guest: Debian's generic kernel under lkvm,
nested in one QEMU TCG L1 guest (tests/nested/nested.py).

One L1 boot runs an L2 boot per transport. In each, lkvm creates tap t0
inside L1 (which has no other network: every address and packet stays
there), L1 gives t0 a link-local address, and the guest (tests/nested/
net-check.sh) brings its NIC up and pings L1, with small and full-size
frames. Checked: the virtio_net driver binds, the MAC is the one given on
the command line, the link is up, pings are answered, lkvm exits 0, and
--stats shows both queues served with no kick exiting to user space.
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NET_CHECK = os.path.join(HERE, "net-check.sh")
NET_JOB = os.path.join(HERE, "net-job.sh")
TRANSPORTS = ("pci", "pci-legacy", "mmio")
MACS = {"pci": "02:4c:4b:00:00:01", "pci-legacy": "02:4c:4b:00:00:02",
        "mmio": "02:4c:4b:00:00:03"}


@pytest.fixture(scope="module")
def l1(tmp_path_factory):
    work = os.environ.get("LKVM_NESTED_WORK") or str(
        tmp_path_factory.mktemp("nested-net"))
    lkvm = os.environ.get("LKVM_NESTED_LKVM") or nested.LKVM_STATIC
    if not os.path.exists(lkvm):
        pytest.fail("%s is missing: run 'make lkvm.static'" % lkvm)
    nested.build_helpers()
    kernel = nested.fetch_kernels(["generic"])["generic"]
    initrd = nested.build_l2_initramfs(
        os.path.join(work, "l2-net.gz"), kernel,
        ["--add", NET_CHECK + ":/net/net-check.sh"])
    files = {"/l2/vmlinux": kernel["vmlinux"], "/l2/net-initrd": initrd,
             "/l1/net-job.sh": NET_JOB}
    jobs = [nested.Job(t, ["sh", "/l1/net-job.sh", t, MACS[t]], timeout=120)
            for t in TRANSPORTS]
    return nested.run_l1(jobs, files, l1_kernel=kernel, workdir=work,
                         lkvm=lkvm)


def _job(l1, name):
    assert l1.completed, l1.describe()
    j = l1.jobs.get(name)
    assert j is not None, "no result for %s:\n%s" % (name, l1.tail())
    return j


def _stats(j):
    for line in j.console:
        if line.startswith("@@STATS "):
            try:
                return json.loads(line[len("@@STATS "):])
            except ValueError:
                break
    pytest.fail("%s: no --stats JSON:\n%s" % (j.name, j.tail()))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ping(l1, transport):
    j = _job(l1, transport)
    f = j.facts
    ctx = "%s:\n%s" % (transport, j.tail())
    assert f.get("lkvm_rc") == "0", ctx
    assert f.get("eth0") == "yes", ctx
    assert f.get("driver") == "virtio_net", ctx
    assert f.get("mac") == MACS[transport], ctx
    assert f.get("carrier") == "1", ctx
    assert f.get("ping_rc") == "0", ctx
    assert "5 packets received" in f.get("ping_summary", ""), ctx
    assert f.get("bigping_rc") == "0", ctx
    assert f.get("net_errors") == "0", ctx


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tcp_both_ways_with_offloads(l1, transport):
    """4 MiB guest -> L1 and L1 -> guest over TCP, byte-exact (md5), and
    the guest's segments reach the tap larger than an MTU (TSO on)."""
    j = _job(l1, transport)
    f = j.facts
    ctx = "%s:\n%s" % (transport, j.tail())
    assert f.get("send_rc") == "0", ctx
    assert f.get("l1_rx_bytes") == str(4 << 20), ctx
    assert f.get("l1_rx_md5") == f.get("payload_md5"), ctx
    assert f.get("recv_bytes") == str(4 << 20), ctx
    assert f.get("recv_md5") == f.get("payload_md5"), ctx
    avg = int(f.get("tx_bytes") or 0) / max(int(f.get("tx_packets") or 1), 1)
    assert avg > 1514, "%s: average frame %.0f bytes: no TSO\n%s" % (
        transport, avg, j.tail())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_queues_served_through_ioeventfd(l1, transport):
    j = _job(l1, transport)
    dev = [d for d in _stats(j)["devices"] if d["type"] == "virtio-net"]
    assert len(dev) == 1 and dev[0]["driver_seen"], dev
    rx, tx = dev[0]["queues"]
    assert rx["requests"] > 0 and tx["requests"] > 0, dev
    assert rx["kicks_exit"] == 0 and tx["kicks_exit"] == 0, dev
    assert tx["kicks_eventfd"] > 0, dev

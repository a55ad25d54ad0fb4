# SPDX-License-Identifier: GPL-2.0
"""How lkvm sets up its tap (net/tap.c), without a guest driver: the
script= hook and multi-queue taps. Every test runs lkvm in a network
namespace of its own, deleted at the end; no frame leaves it.

  script=       runs as "SCRIPT IFNAME" once the tap exists and before
                the guest starts (it sees the tap lkvm holds open); a
                failing or missing script is a one-line error, exit 1
  queues=N      with N vCPUs, a tap lkvm creates is IFF_MULTI_QUEUE and
                --stats shows N queue pairs; fewer vCPUs, fewer pairs;
                a single-queue tap cannot serve queues=2 (one-line error)

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_net_tap.py
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
LKVM = os.environ.get("LKVM", str(TOP / "lkvm"))
EXIT_ELF = TOP / "guest" / "kit" / "exit.elf"
IFF_MULTI_QUEUE = 0x0100


@pytest.fixture
def netns():
    name = f"lkvm-tap-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=20)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], timeout=20)


def lkvm(ns, *args, stats=None):
    cmd = ["ip", "netns", "exec", ns, LKVM, "run", "--timeout", "20",
           "-k", str(EXIT_ELF)]
    if stats:
        cmd += ["--stats", str(stats)]
    return subprocess.run(cmd + list(args), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def errors(p):
    return [l for l in p.stderr.splitlines() if l.startswith("lkvm: error:")]


def write_script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def net_stats(path):
    devs = json.loads(path.read_text())["devices"]
    return [d for d in devs if d["type"] == "virtio-net"]


def test_script_configures_the_tap(netns, tmp_path):
    out = tmp_path / "seen"
    script = write_script(tmp_path / "ifup", f"""
echo "$1" >{out}
cat /sys/class/net/$1/tun_flags >>{out}
ip link set "$1" up && ip addr add 192.0.2.1/24 dev "$1"
cat /sys/class/net/$1/operstate >>{out}
""")
    p = lkvm(netns, "-n", f"mode=tap,tapif=lkt0,script={script}")
    assert p.returncode == 0, p.stderr
    name, flags, state = out.read_text().split()
    assert name == "lkt0"
    # the tap lkvm holds: IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, single queue
    assert int(flags, 16) & 0x5002 == 0x5002, flags
    assert not int(flags, 16) & IFF_MULTI_QUEUE, flags
    # up with a carrier: lkvm had the tap open while the script ran
    assert state in ("up", "unknown"), state


def test_script_gets_the_kernel_chosen_name(netns, tmp_path):
    out = tmp_path / "seen"
    script = write_script(tmp_path / "ifup", f'echo "$1" >{out}\n')
    p = lkvm(netns, "-n", f"mode=tap,script={script}")
    assert p.returncode == 0, p.stderr
    assert out.read_text().strip().startswith("tap"), out.read_text()


@pytest.mark.parametrize("body,words", [
    ("exit 3\n", ["script", "failed", "exit status 3"]),
    ("kill -9 $$\n", ["script", "failed", "signal 9"]),
])
def test_failing_script(netns, tmp_path, body, words):
    script = write_script(tmp_path / "ifup", body)
    p = lkvm(netns, "-n", f"mode=tap,tapif=lkt0,script={script}")
    assert p.returncode == 1, p.stderr
    assert len(errors(p)) == 1, p.stderr
    for w in words + ["lkt0"]:
        assert w in errors(p)[0], p.stderr
    assert "exiting with status" not in p.stdout   # the guest never ran


def test_missing_script(netns, tmp_path):
    p = lkvm(netns, "-n", f"mode=tap,script={tmp_path}/nope")
    assert p.returncode == 1, p.stderr
    assert len(errors(p)) == 1 and "cannot run script" in errors(p)[0], \
        p.stderr


def test_multi_queue_tap(netns, tmp_path):
    out = tmp_path / "seen"
    script = write_script(tmp_path / "ifup",
                          f"cat /sys/class/net/$1/tun_flags >{out}\n")
    st = tmp_path / "stats.json"
    p = lkvm(netns, "-c", "2", "-n",
             f"mode=tap,tapif=lkt0,queues=2,script={script}", stats=st)
    assert p.returncode == 0, p.stderr
    assert int(out.read_text(), 16) & IFF_MULTI_QUEUE
    (net,) = net_stats(st)
    assert net["queue_pairs"] == 2, net
    # rx0 tx0 rx1 tx1 and the control queue
    assert len(net["queues"]) == 5, net


def test_queues_capped_by_vcpus(netns, tmp_path):
    st = tmp_path / "stats.json"
    p = lkvm(netns, "-c", "1", "-n", "mode=tap,tapif=lkt0,queues=4",
             stats=st)
    assert p.returncode == 0, p.stderr
    (net,) = net_stats(st)
    assert net["queue_pairs"] == 1 and len(net["queues"]) == 3, net


def test_single_queue_tap_refuses_queues(netns):
    subprocess.run(["ip", "netns", "exec", netns, "ip", "tuntap", "add",
                    "dev", "lkt1", "mode", "tap", "vnet_hdr"], check=True,
                   timeout=20)
    p = lkvm(netns, "-c", "2", "-n", "mode=tap,tapif=lkt1,queues=2")
    assert p.returncode == 1, p.stderr
    assert len(errors(p)) == 1 and "multi_queue" in errors(p)[0], p.stderr

# SPDX-License-Identifier: GPL-2.0
"""Virtqueue polling and shared I/O threads, from guest-kit guests: the
same checks as without polling (blk.elf's patterns on the image, every
request of reqbench.elf checked in the guest), with --poll on a window
long enough that the I/O thread really catches a slow guest's requests
without kicks, with --iothreads sharing one thread among four disks, and
an idle guest whose polled queues cost no CPU.

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_poll.py
"""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from test_virtio_blk import (DISCARD, WZEROES, blk_cmdline, check_image,
                             check_stats, fill_range, kit, lkvm_run,
                             make_image)

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")

# A guest on a software KVM or under nested TCG takes hundreds of
# microseconds between requests: a 2 ms window catches them.
POLL_ON = "on,max_us=2000"
POLL_AUTO = "auto,max_us=2000,start_rate=100"
BLOCK = 4096
REQ = re.compile(r"reqbench: (\d+) requests qd (\d+) in (\d+) us, "
                 r"(\d+) kicks, (\d+) errors")


def numbered_image(path, blocks=2048):
    """Each 4 KiB block starts with its number (reqbench.elf verify=1)."""
    with open(path, "wb") as f:
        for b in range(blocks):
            f.write(b.to_bytes(8, "little") + bytes(BLOCK - 8))
    return path


def reqbench(tmp_path, images, transport="mmio", lkvm_args=(), timeout=60,
             **params):
    stats = tmp_path / "stats.json"
    p = {"transport": {"pci-legacy": "legacy"}.get(transport, transport),
         "verify": 1, "disks": len(images)}
    p.update(params)
    cmd = [str(LKVM), "run", "--timeout", str(timeout), "--stats", str(stats),
           "--virtio-transport", transport, *lkvm_args,
           "-k", str(kit("reqbench.elf")),
           "-p", " ".join(f"{k}={v}" for k, v in p.items())]
    for img in images:
        cmd += ["-d", str(img)]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout + 30)
    m = REQ.search(proc.stdout)
    assert proc.returncode == 0 and m, (cmd, proc.stdout, proc.stderr)
    st = json.loads(stats.read_text())
    return {"requests": int(m.group(1)), "kicks": int(m.group(4)),
            "errors": int(m.group(5)), "stats": st, "out": proc.stdout}


def queues(st):
    return [q for d in st["devices"] for q in d["queues"]]


def preempted(st):
    """Did a polling thread have its CPU taken while it spun? It then
    stops polling at once (a busy host: another VMM, a test in L1), so
    that kicks, not polls, carry the requests."""
    return any(t["spin_yields"] for t in st["iothreads"])


@pytest.mark.parametrize("mode", [
    {}, {"event_idx": 1}, {"indirect": 1, "event_idx": 1, "qsize": 8},
], ids=["plain", "event_idx", "indirect+event_idx"])
def test_blk_rw_polled(tmp_path, mode):
    """blk.elf's whole run with every queue polling: the same data on the
    image, every kick the guest made counted, and polling found work."""
    seed = 4000 + len(mode)
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = lkvm_run("--poll", POLL_ON, "-k", kit("blk.elf"), "-d", img,
                 "-p", blk_cmdline(seed, **mode),
                 stats=tmp_path / "stats.json")
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    check_image(img, seed)
    check_stats(r, True)
    dev = r.stats["devices"][0]
    assert dev["poll"] == "on", r
    q = dev["queues"][0]
    assert q["poll_switches"] >= 1, r
    assert q["poll_hits"] > 0 or preempted(r.stats), r


@pytest.mark.parametrize("qd", [1, 16])
@pytest.mark.parametrize("poll", ["off", POLL_AUTO, POLL_ON])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_reqbench_verified(tmp_path, transport, poll, qd):
    """Random 4 KiB reads, each checked in the guest, the guest kicking
    only when the device asks: in poll mode it mostly does not."""
    img = numbered_image(tmp_path / "disk.img")
    n = 600
    r = reqbench(tmp_path, [img], transport, ["--poll", poll], qd=qd,
                 requests=n, event_idx=int(qd > 1))
    assert r["requests"] == n and r["errors"] == 0, r
    q = queues(r["stats"])[0]
    assert q["requests"] == n, r
    assert q["kicks_eventfd"] == r["kicks"], r
    assert q["kicks_exit"] == 0, r
    if poll == "off":
        assert q["poll_hits"] == 0 and q["poll_switches"] == 0, r
        return
    # auto entered poll mode; whether its window grows to catch this
    # slow guest's requests is the adaptive rule's call
    assert q["poll_switches"] >= 1, r
    if poll == POLL_ON and not preempted(r["stats"]):
        # the thread found most requests itself
        assert q["poll_hits"] > 0, r
        assert r["kicks"] < n / 2, r


def test_shared_iothread_four_disks(tmp_path):
    """--iothreads 1: four disks' queues on one thread, which polls all of
    them; every request checked, none starved."""
    imgs = [numbered_image(tmp_path / f"d{i}.img") for i in range(4)]
    n = 1600
    r = reqbench(tmp_path, imgs, "mmio", ["--iothreads", "1", "--poll",
                                          POLL_ON], qd=4, requests=n)
    assert r["requests"] == n and r["errors"] == 0, r
    st = r["stats"]
    assert [t["name"] for t in st["iothreads"]] == ["io0"], st["iothreads"]
    qs = queues(st)
    assert len(qs) == 4, st
    assert {q["iothread"] for q in qs} == {0}, st
    assert sum(q["requests"] for q in qs) == n, st
    # each disk did its share (the guest keeps qd on each)
    assert all(q["requests"] >= n // 8 for q in qs), st
    assert all(q["poll_hits"] > 0 for q in qs) or preempted(st), st


def test_iothreads_round_robin(tmp_path):
    """--iothreads 2 with three disks: queues dealt out in turn."""
    imgs = [numbered_image(tmp_path / f"d{i}.img", 256) for i in range(3)]
    r = reqbench(tmp_path, imgs, "mmio", ["--iothreads", "2"], qd=2,
                 requests=300)
    assert r["errors"] == 0, r
    st = r["stats"]
    assert [t["name"] for t in st["iothreads"]] == ["io0", "io1"], st
    assert [q["iothread"] for q in queues(st)] == [0, 1, 0], st


def thread_cpu_s(pid, name):
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0]) / 1e9
        except OSError:
            pass
    return total


@pytest.mark.parametrize("poll", [POLL_AUTO, POLL_ON])
def test_idle_polled_queue_costs_no_cpu(tmp_path, poll):
    """A burst puts the queue in poll mode; then the guest does no I/O for
    10 s: its I/O thread must take under 1% of a CPU meanwhile."""
    img = numbered_image(tmp_path / "disk.img", 256)
    cmd = [str(LKVM), "run", "--timeout", "60", "--poll", poll,
           "--stats", str(tmp_path / "stats.json"),
           "--virtio-transport", "mmio", "-k", str(kit("reqbench.elf")),
           "-d", str(img), "-p", "transport=mmio qd=4 requests=400 verify=1 "
           "idle_ms=10000"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out = ""
        deadline = time.monotonic() + 45
        while "reqbench: idle" not in out:
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, out
            out += line
        time.sleep(0.5)                 # the last window has run out
        cpu0, t0 = thread_cpu_s(proc.pid, "blk-io"), time.monotonic()
        time.sleep(8)
        cpu1, t1 = thread_cpu_s(proc.pid, "blk-io"), time.monotonic()
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, out + rest + err
    st = json.loads((tmp_path / "stats.json").read_text())
    q = queues(st)[0]
    assert q["poll_switches"] >= 1, st
    assert (cpu1 - cpu0) / (t1 - t0) < 0.01, (cpu0, cpu1, t1 - t0)

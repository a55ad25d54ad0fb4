# SPDX-License-Identifier: GPL-2.0
"""virtio-blk over virtio-pci, modern and legacy, checked from both sides:
blk.elf (guest/kit/blk.c with transport=pci or transport=legacy, driving
the function through guest/kit/virtio_pci.c) reads, writes, flushes, asks
for the ID, discards and checks errors and interrupts from inside; these
tests then look at the image file on the host and at lkvm's --stats.

Interrupts, checked inside the guest: modern uses MSI-X (delivery to the
LAPIC, the entry's mask bit and the PBA, unmask delivering the pending
message with the entry's current data, the function mask, suppression by
NO_INTERRUPT or EVENT_IDX); legacy uses INTx (the Interrupt Line the _PRT
swizzle gives, level-triggered on the IOAPIC, ISR read acknowledging and
lowering the line, an EOI with ISR still set bringing the interrupt back).

Legacy INTx also keeps the PCI Status Interrupt Status bit, and asserts a
pending interrupt when the driver clears Interrupt Disable.

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_pci.py
"""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from test_virtio_blk import (DISCARD, IMG_SECTORS, KIT, LKVM, SOFT_KVM,
                             WZEROES, Run, blk_cmdline, can_punch_holes, kit,
                             check_image, fill_range, make_image, pattern,
                             read_sectors, write_sectors)

VM_TIMEOUT = 30
PROC_TIMEOUT = 60
# --virtio-transport -> blk.elf's transport=
GUEST_TRANSPORT = {"pci": "pci", "pci-legacy": "legacy"}
# the BAR device names lkvm's --stats uses
BAR_DEVICE = {"pci": "virtio-pci", "pci-legacy": "virtio-pci-legacy"}


def run_pci(transport, *args, stats, ioeventfd=True, cpus=1):
    cmd = [str(LKVM), "run", "--timeout", str(VM_TIMEOUT), "--stats",
           str(stats), "--virtio-transport", transport, "-c", str(cpus),
           *map(str, args)]
    if not ioeventfd:
        cmd.append("--no-ioeventfd")
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=PROC_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not end within {PROC_TIMEOUT}s; "
                    f"output so far:\n{(e.stdout or b'').decode(errors='replace')}")
    st = json.loads(Path(stats).read_text()) if Path(stats).exists() else None
    return Run(proc.returncode, proc.stdout.decode(errors="replace"),
               proc.stderr.decode(errors="replace"),
               time.monotonic() - start, st)


def check_pci_stats(r, transport, ioeventfd, status, unhandled=0):
    """Kicks, interrupts, requests and BAR exits against the guest's counts."""
    st = r.stats
    assert st, r
    guest = r.guest_counts()
    assert len(st["devices"]) == 1, r
    dev = st["devices"][0]
    assert dev["type"] == "virtio-blk" and dev["transport"] == transport, r
    assert dev["driver_seen"] is True and dev["times_broken"] == 0, r
    assert dev["status"] == status, r
    q = dev["queues"][0]
    assert q["requests"] == guest["requests"], r
    # every completion the guest left unsuppressed (masked MSI-X ones
    # included: they were signalled and went to the PBA)
    assert 0 < q["interrupts"] <= q["requests"], r
    if ioeventfd:
        assert q["kicks_exit"] == 0, r
        assert q["kicks_eventfd"] == guest["kicks"] > 0, r
    else:
        assert q["kicks_eventfd"] == 0, r
        assert q["kicks_exit"] == guest["kicks"] > 0, r

    # Every other access to the BAR is an exit to lkvm.
    accesses = guest["reads"] + guest["writes"] - (guest["kicks"] if ioeventfd
                                                   else 0)
    if transport == "pci-legacy":
        bar = {d["device"]: d["exits"] for d in st["pio_devices"]}
        assert bar.get(BAR_DEVICE[transport]) == accesses, r
    else:
        bar = {d["device"]: d["exits"] for d in st["mmio_devices"]}
        mmio = sum(v["mmio"] for v in st["vcpus"])
        assert mmio == bar.get(BAR_DEVICE[transport]) + \
            st["mmio_unhandled"], r
        # The software KVM (kvm_pvm) here reports the guest's first store
        # to an MSI-X Vector Control word as two KVM_EXIT_MMIO: one spare.
        bar = bar.get(BAR_DEVICE[transport])
        assert accesses <= bar <= accesses + 1, r
    assert st["mmio_unhandled"] + st["pio_unhandled"] == unhandled, r


def guest_args(transport, img, seed, **extra):
    return ["-k", kit("blk.elf"), "-d", img, "-p",
            blk_cmdline(seed, transport=GUEST_TRANSPORT[transport], **extra)]


@pytest.mark.parametrize("ioeventfd", [True, False],
                         ids=["ioeventfd", "no-ioeventfd"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy"])
@pytest.mark.parametrize("mode", [
    {},
    {"indirect": 1, "event_idx": 1},
], ids=["plain", "indirect+event_idx"])
def test_blk_pci_rw(tmp_path, transport, ioeventfd, mode):
    """Read/write/flush/get-id/discard over virtio-pci; the image and the
    counters agree with what the guest did."""
    seed = 3000 + 10 * ioeventfd + len(mode) + (transport == "pci") * 100
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    blocks_before = os.stat(img).st_blocks
    r = run_pci(transport, *guest_args(transport, img, seed, **mode),
                stats=tmp_path / "stats.json", ioeventfd=ioeventfd)
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    assert not [l for l in r.err.splitlines() if SOFT_KVM not in l], r
    if transport == "pci":
        assert "MSI-X entry 1 of 2, mask, PBA, function mask ok" in r.out, r
    else:
        assert "level, ISR acknowledge, EOI re-fire ok" in r.out, r
        # the _PRT swizzle: slot 1, INTA -> GSI 16 + (1 + 0) % 4
        assert "virtio-pci legacy 00:01.0" in r.out and "GSI 17" in r.out, r
    check_image(img, seed)
    check_pci_stats(r, transport, ioeventfd,
                    0x07 if transport == "pci-legacy" else 0x0f)
    if can_punch_holes(tmp_path):
        assert os.stat(img).st_blocks < blocks_before, r


def test_blk_pci_modern_intx(tmp_path):
    """A modern driver that leaves MSI-X off gets INTx: the same level pin,
    ISR in its capability region acknowledging on read."""
    seed = 6060
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = run_pci("pci", *guest_args("pci", img, seed, msix=0),
                stats=tmp_path / "stats.json")
    assert r.rc == 0 and "PASS: blk" in r.out, r
    assert "interrupts: INTx GSI 17 level, ISR acknowledge, EOI re-fire ok" \
        in r.out, r
    check_image(img, seed)
    check_pci_stats(r, "pci", True, 0x0f)


@pytest.mark.parametrize("ioeventfd", [True, False],
                         ids=["ioeventfd", "no-ioeventfd"])
@pytest.mark.parametrize("transport", ["pci", "pci-legacy"])
def test_blk_pci_bar_moved(tmp_path, transport, ioeventfd):
    """The guest moves the BAR before it drives the device (as an OS that
    reassigns resources would): registers and notify ioeventfds follow,
    and the old place answers nothing (all ones, one unhandled access)."""
    seed = 5150 + ioeventfd
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = run_pci(transport, *guest_args(transport, img, seed, move_bar=1),
                stats=tmp_path / "stats.json", ioeventfd=ioeventfd)
    assert r.rc == 0 and "PASS: blk" in r.out, r
    assert "BAR moved from" in r.out, r
    check_image(img, seed)
    unhandled = r.stats["pio_unhandled" if transport == "pci-legacy"
                        else "mmio_unhandled"]
    assert unhandled == 1, r
    check_pci_stats(r, transport, ioeventfd,
                    0x07 if transport == "pci-legacy" else 0x0f, unhandled=1)


@pytest.mark.parametrize("transport", ["pci", "pci-legacy"])
def test_blk_pci_read_only(tmp_path, transport):
    """-d IMG,ro: VIRTIO_BLK_F_RO offered (in legacy's 32 bits too), writes
    and discards refused, the host's pattern read back untouched."""
    seed = 77
    img = make_image(tmp_path / "disk.img")
    for s in (0, 8, IMG_SECTORS - 1):
        write_sectors(img, s, pattern(seed, s))
    before = img.read_bytes()
    r = run_pci(transport, "-k", kit("blk.elf"), "-d", f"{img},ro", "-p",
                f"transport={GUEST_TRANSPORT[transport]} seed={seed} "
                f"sectors=0,8,last ro=1 discard=1024,8 cap={IMG_SECTORS}",
                stats=tmp_path / "stats.json")
    assert r.rc == 0 and "PASS: blk" in r.out, r
    assert img.read_bytes() == before
    assert read_sectors(img, 8) == pattern(seed, 8)


def test_blk_pci_two_queues(tmp_path):
    """With 2 vCPUs the modern function has 2 queues and 3 MSI-X vectors;
    queue 0 still gets entry 1 and the data lands."""
    seed = 4242
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = run_pci("pci", *guest_args("pci", img, seed),
                stats=tmp_path / "stats.json", cpus=2)
    assert r.rc == 0 and "PASS: blk" in r.out, r
    assert "MSI-X entry 1 of 3" in r.out, r
    check_image(img, seed)
    assert len(r.stats["devices"][0]["queues"]) == 2, r


@pytest.mark.parametrize("transport", ["pci-legacy", "pci", "mmio"])
def test_reqbench_smoke(tmp_path, transport):
    """The request benchmark's guest (tests/bench/request_bench.py) works on
    every transport: all reads succeed, lkvm counts each one, and every
    kick the guest made reached the device through its ioeventfd."""
    img = tmp_path / "disk.img"
    with open(img, "wb") as f:
        f.write(b"\x5a" * (4 << 20))
    guest = {"pci-legacy": "legacy"}.get(transport, transport)
    r = run_pci(transport, "-k", kit("reqbench.elf"), "-d", img, "-p",
                f"transport={guest} qd=8 requests=300",
                stats=tmp_path / "stats.json")
    assert r.rc == 0 and "PASS: reqbench" in r.out, r
    m = re.search(r"reqbench: 300 requests qd 8 in \d+ us, (\d+) kicks, "
                  r"0 errors", r.out)
    assert m, r
    q = r.stats["devices"][0]["queues"][0]
    assert q["requests"] == 300, r
    assert q["kicks_eventfd"] == int(m.group(1)) and q["kicks_exit"] == 0, r
    assert q["interrupts"] == 0, r          # NO_INTERRUPT throughout


def run_intx_disable(tmp_path):
    img = make_image(tmp_path / "disk.img")
    r = run_pci("pci-legacy", "-k", kit("blk.elf"), "-d", img, "-p",
                f"transport=legacy seed=9 intx_disable=1 cap={IMG_SECTORS}",
                stats=tmp_path / "stats.json")
    assert "interrupts: INTx GSI 17 level" in r.out, r
    # Interrupt Disable itself works: nothing reaches the IOAPIC while set
    assert "asserted with Interrupt Disable set" not in r.out, r
    return r


def test_legacy_pci_status_interrupt_bit(tmp_path):
    r = run_intx_disable(tmp_path)
    assert "FAIL: PCI Status: Interrupt Status clear" not in r.out, r


def test_legacy_intx_disable_clear_asserts(tmp_path):
    r = run_intx_disable(tmp_path)
    assert "clearing Interrupt Disable with an interrupt pending did not " \
        "assert INTx" not in r.out, r

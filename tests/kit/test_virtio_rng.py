# SPDX-License-Identifier: GPL-2.0
"""--rng: lkvm's virtio-rng, driven by guest/kit/rng.elf on each transport
(and with notifies served in vCPU threads): random-looking bytes in every
buffer, a chain filled across its buffers, at most 64 KiB a buffer,
nothing past the used length touched, a read-only chain used empty; and
--stats counting exactly the guest's four requests."""
import json
import subprocess

import pytest

from test_virtio_blk import LKVM, PROC_TIMEOUT, ROOT, SOFT_KVM, kit


def run_rng(tmp_path, *args):
    stats = tmp_path / "stats.json"
    p = subprocess.run([str(LKVM), "run", "--timeout", "30", "--stats",
                        str(stats), *args, "-k", str(kit("rng.elf"))],
                       cwd=ROOT, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=PROC_TIMEOUT)
    return p, (json.loads(stats.read_text()) if stats.exists() else None)


@pytest.mark.parametrize("transport,ioeventfd", [
    ("pci", True), ("pci-legacy", True), ("mmio", True), ("pci", False)],
    ids=["pci", "pci-legacy", "mmio", "pci-no-ioeventfd"])
def test_rng(tmp_path, transport, ioeventfd):
    guest = {"pci": "transport=pci", "pci-legacy": "transport=legacy",
             "mmio": "transport=mmio"}[transport]
    p, st = run_rng(tmp_path, "--rng", "--virtio-transport", transport,
                    *([] if ioeventfd else ["--no-ioeventfd"]), "-p", guest)
    assert p.returncode == 0 and "PASS: rng" in p.stdout, p.stdout + p.stderr
    warnings = [line for line in p.stderr.splitlines()
                if line.startswith("lkvm:") and SOFT_KVM not in line]
    assert not warnings, p.stderr
    dev = st["devices"][0]
    assert dev["type"] == "virtio-rng" and dev["driver_seen"], dev
    assert dev["queues"][0]["requests"] == 4, dev
    assert dev["times_broken"] == 0, dev


def test_no_rng_without_the_option(tmp_path):
    """No --rng, no device: the guest finds none, and --stats lists none."""
    p, st = run_rng(tmp_path, "-p", "transport=pci")
    assert p.returncode != 0 and "no virtio-rng device" in p.stdout, p.stdout
    assert st["devices"] == [], st

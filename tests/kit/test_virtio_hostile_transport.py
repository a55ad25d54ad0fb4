# SPDX-License-Identifier: GPL-2.0
"""A hostile virtio-blk driver against lkvm's virtio-pci transports
(guest/kit/hostile_pci.c), modern and legacy: BARs moved under load and onto
RAM, other devices, 0 and all ones; MSI-X table, PBA and vector abuse;
every width at every offset of the config space, the virtio regions and
the legacy register file; status writes in every order. The guest checks
what it can see and ends each case with a reset and a pattern written and
read back; here we check that lkvm stayed up and said no more than one
warning. A second disk gives the guest another function's BAR to aim at.
The virtio-mmio register sweep is case regs_all of test_virtio_hostile.py.

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_hostile_transport.py
(LKVM=build/sanitize/lkvm for the ASan/UBSan build)
"""
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
GUEST = ROOT / "guest" / "kit" / "hostile_pci.elf"

VM_TIMEOUT = 60
PROC_TIMEOUT = 120
SOFT_KVM = "software KVM"            # lkvm's note about kvm_pvm hosts
TRANSPORT = {"pci": "pci", "legacy": "pci-legacy"}

BOTH = [
    "bar_move",         # BAR moved there and back with writes in flight
    "bar_targets",      # BAR on RAM, 0, all ones, devices, decoding off
    "config_space",     # 256 offsets x 3 widths x 3 values, restored
    "status_order",     # the 24 orders of the four status bits
    "status_wide",      # 16-bit Status write of 0x100: a reset, ISR too
]
MODERN = [
    "msix",             # past the table, PBA, odd widths, stray messages
    "virtio_regions",   # every width at common, ISR, device, notify, PBA
]
LEGACY = [
    "legacy_regs",      # 256 ports x 3 widths x 4 values
    "legacy_qsel",      # queue select out of range
] + [f"legacy_pfn pfn={n}" for n in range(5)]   # rings outside RAM

CASES = ([("pci", c) for c in BOTH + MODERN] +
         [("legacy", c) for c in BOTH + LEGACY])


def run(transport, case, images, *extra):
    # --poll off: a kick at a BAR's old place must reach nothing, and a
    # polling device would serve the request anyway
    cmd = [str(LKVM), "run", "--timeout", str(VM_TIMEOUT), "--poll", "off",
           "--virtio-transport", TRANSPORT[transport], *extra,
           "-k", str(GUEST), "-d", str(images[0]), "-d", str(images[1]),
           "-p", f"case={case} transport={transport}"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=PROC_TIMEOUT)
    out = proc.stdout.decode(errors="replace")
    err = proc.stderr.decode(errors="replace")
    report = (f"{' '.join(cmd)}\nexit {proc.returncode} after "
              f"{time.monotonic() - start:.2f}s\n--- stdout ---\n{out}"
              f"--- stderr ---\n{err}")
    return proc.returncode, out, err, report


def judge(case, rc, out, err, report):
    name = case.split()[0]
    assert f"case {name} " in out, report
    assert "recovered: read after reset ok" in out, report
    assert rc == 0 and "PASS: hostile_pci" in out, report
    # lkvm may say what the guest did wrong, once, as a warning: no error,
    # no sanitizer report, no crash
    lines = [l for l in err.splitlines() if SOFT_KVM not in l]
    assert len(lines) <= 1, report
    assert all(l.startswith("lkvm: warning: ") for l in lines), report


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_pci")
    imgs = [d / "disk0.img", d / "disk1.img"]
    for img in imgs:
        with open(img, "wb") as f:
            f.truncate(1 << 20)
    return imgs


@pytest.fixture(autouse=True)
def guest_built():
    if not GUEST.exists():
        pytest.fail(f"{GUEST} missing: run make guest-kit")


@pytest.mark.parametrize("transport,case", CASES,
                         ids=[f"{t}-{c.replace(' ', '-')}" for t, c in CASES])
def test_hostile_transport(images, transport, case):
    judge(case, *run(transport, case, images))


@pytest.mark.parametrize("transport", ["pci", "legacy"])
def test_bar_move_no_ioeventfd(images, transport):
    """The same moves with kicks served in the vCPU thread."""
    judge("bar_move", *run(transport, "bar_move", images, "--no-ioeventfd"))


def test_cases_listed(images):
    """An unknown case lists the transport's cases and fails."""
    rc, out, err, report = run("legacy", "msix", images)
    assert rc != 0 and "cases (legacy):" in out, report
    assert " legacy_regs" in out and " msix" not in out, report

# SPDX-License-Identifier: GPL-2.0
"""A hostile virtio-blk driver (guest/kit/hostile.c) against lkvm: one
broken rule per run. The guest checks what the device answered (NEEDS_RESET
or an error status), resets it and reads a sector to prove it recovered;
here we check that lkvm stayed up and said no more than one warning about
it. Every case also runs under the ASan/UBSan build in the sanitized pass
(make SANITIZE=1 check-kit, which sets $LKVM).

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_hostile.py
"""
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
HOSTILE = ROOT / "guest" / "kit" / "hostile.elf"

VM_TIMEOUT = 30
PROC_TIMEOUT = 60
SOFT_KVM = "software KVM"            # lkvm's note about kvm_pvm hosts


CASES = [
    "desc_past_ram",        # data buffer across the end of RAM
    "desc_hole",            # data buffer on the device's own registers
    "desc_high",            # data buffer at 1 TiB
    "addr_overflow",        # addr + len wraps past 2^64
    "loop",                 # two descriptors chained to each other
    "selfloop",             # a descriptor chained to itself
    "head_oob",             # avail ring head >= queue size
    "next_oob",             # next >= queue size
    "order",                # readable descriptor after a writable one
    "indirect_ok",          # the control: a good indirect chain completes
    "nested_indirect",      # indirect descriptor inside an indirect table
    "indirect_badlen",      # indirect table length 40: not a multiple of 16
    "indirect_next",        # INDIRECT and NEXT on one descriptor
    "indirect_loop",        # loop inside an indirect table
    "indirect_unneg",       # indirect without INDIRECT_DESC negotiated
    "len_overflow",         # chain total past 4 GiB, every buffer in RAM
    "avail_jump",           # avail->idx moves by queue size + 1
    "avail_back",           # avail->idx moves backwards
    "read_ro_buf",          # IN whose data buffer is device-readable
    "write_wo_buf",         # OUT whose data buffer is device-writable
    "hdr_writable",         # header in a writable buffer: IOERR
    "no_status",            # no writable byte: returned with len 0
    "bad_len",              # read of 100 bytes: IOERR
    "qnum_npot",            # QueueNum 3: ignored, QueueNumMax kept
    "qnum_big",             # QueueNum 512 > QueueNumMax: ignored
    "ring_oob",             # descriptor table outside RAM, then DRIVER_OK
    "ring_straddle",        # used ring across the end of RAM
    "ring_misaligned",      # descriptor table 8 mod 16
    "ring_late",            # bad avail ring readied after DRIVER_OK
    "ready_regs",           # queue registers rewritten while ready: ignored
    "early_kick",           # kick before DRIVER_OK: nothing may happen
    "reset_inflight",       # reset with 8 requests queued
    "config_oob",           # config reads/writes past its end
    "regs",                 # odd-width, read-only and unknown registers
    "shm",                  # SHMLen of a region that does not exist: -1
    "features",             # FEATURES_OK without VERSION_1 / with bit 50
    "regs_all",             # every width at every offset of 0..0x1ff
    "status_wide",          # Status 0x100: a reset, InterruptStatus too
]


def run(lkvm, *args, env=None):
    cmd = [str(lkvm), "run", "--timeout", str(VM_TIMEOUT),
           "--virtio-transport", "mmio", *map(str, args)]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=PROC_TIMEOUT, env=env)
    out = proc.stdout.decode(errors="replace")
    err = proc.stderr.decode(errors="replace")
    report = (f"{' '.join(cmd)}\nexit {proc.returncode} after "
              f"{time.monotonic() - start:.2f}s\n--- stdout ---\n{out}"
              f"--- stderr ---\n{err}")
    return proc.returncode, out, err, report


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    img = tmp_path_factory.mktemp("hostile") / "disk.img"
    with open(img, "wb") as f:
        f.truncate(1 << 20)
    return img


@pytest.mark.parametrize("case", CASES)
def test_hostile(image, case):
    if not HOSTILE.exists():
        pytest.fail(f"{HOSTILE} missing: run make guest-kit")
    rc, out, err, report = run(
        LKVM, "-k", HOSTILE, "-d", image, "-p", f"case={case}",
        env=None)
    assert f"case {case} " in out, report
    assert "recovered: read after reset ok" in out, report
    assert rc == 0, report
    assert "PASS: hostile" in out, report
    # lkvm may say what the guest did wrong, once, as a warning: no error,
    # no sanitizer report, no crash
    lines = [l for l in err.splitlines() if SOFT_KVM not in l]
    assert len(lines) <= 1, report
    assert all(l.startswith("lkvm: warning: ") for l in lines), report


def reset_race(lkvm, image, ioeventfd):
    args = ["-c", "2", "-k", HOSTILE, "-d", image, "-p", "case=reset_race"]
    if not ioeventfd:
        args.insert(0, "--no-ioeventfd")
    return run(lkvm, *args,
               env=None)


@pytest.mark.parametrize("ioeventfd", [True, False],
                         ids=["ioeventfd", "no-ioeventfd"])
def test_reset_race(image, ioeventfd):
    """An AP kicks the queue nonstop while the BSP resets and re-readies
    the device 40 times on the same rings."""
    rc, out, err, report = reset_race(LKVM, image, ioeventfd)
    assert "resets against" in out, report
    assert "recovered: read after reset ok" in out, report
    assert rc == 0 and "PASS: hostile" in out, report
    lines = [l for l in err.splitlines() if SOFT_KVM not in l]
    assert all(l.startswith("lkvm: warning: ") for l in lines), report


def test_warnings_bounded(image):
    """Ten rounds of: break the device (avail index jump), reset it."""
    rc, out, err, report = run(LKVM, "-k", HOSTILE, "-d", image,
                               "-p", "case=break_loop rounds=10")
    assert rc == 0 and "10 rounds of break and reset" in out, report
    lines = [l for l in err.splitlines() if SOFT_KVM not in l]
    assert len(lines) <= 1, report


@pytest.mark.sanitize_only
def test_sanitize_disk_option_leak(image):
    rc, out, err, report = run(LKVM, "-k", HOSTILE, "-d", image,
                               "-p", "case=indirect_ok")
    assert "PASS: hostile" in out, report
    assert rc == 0 and "LeakSanitizer" not in err, report

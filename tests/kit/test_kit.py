# SPDX-License-Identifier: GPL-2.0
"""Guest-kit tier: boots each guest/kit image under ./lkvm on the host KVM
and checks the VMM's exit status and the guest's console output.

Run with: /usr/bin/python3 -m pytest -q tests/kit  (or: make check-kit)

The host KVM may be a software one (every guest instruction emulated), so
the guests are tiny and every run is bounded twice: by lkvm's --timeout and
by the subprocess timeout here.
"""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
KIT = ROOT / "guest" / "kit"

VM_TIMEOUT = 30          # lkvm --timeout for guests that should end alone
PROC_TIMEOUT = 60        # hard stop for the lkvm process itself


class Run:
    def __init__(self, proc, elapsed):
        self.rc = proc.returncode
        self.out = proc.stdout.decode(errors="replace")
        self.err = proc.stderr.decode(errors="replace")
        self.elapsed = elapsed

    def __str__(self):
        return (f"exit {self.rc} after {self.elapsed:.2f}s\n"
                f"--- stdout ---\n{self.out}--- stderr ---\n{self.err}")

    # pytest shows the repr of an assertion's operands: the whole run.
    __repr__ = __str__


def lkvm_run(*args, timeout=VM_TIMEOUT):
    cmd = [str(LKVM), "run", "--timeout", str(timeout), *map(str, args)]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=PROC_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not end within {PROC_TIMEOUT}s "
                    f"(its own --timeout {timeout} failed); output so far:\n"
                    f"{(e.stdout or b'').decode(errors='replace')}")
    return Run(proc, time.monotonic() - start)


def kit(name):
    path = KIT / name
    if not path.exists():
        pytest.fail(f"{path} missing: run make guest-kit")
    return path


@pytest.mark.parametrize("status", [0, 7, 255])
def test_exit_status(status):
    r = lkvm_run("-k", kit("exit.elf"), "-p", f"status={status}")
    assert r.rc == status, r
    # The serial console goes to lkvm's stdout, not its stderr.
    assert "hello from the guest kit" in r.out, r
    assert "hello from the guest kit" not in r.err, r
    assert f"exiting with status {status}" in r.out, r


def test_exit_default_status():
    r = lkvm_run("-k", kit("exit.elf"))
    assert r.rc == 0, r
    assert "hello from the guest kit" in r.out, r


def test_cmdline_reaches_guest():
    r = lkvm_run("-k", kit("exit.elf"), "-p", "status=3 marker=kit-xyz")
    assert r.rc == 3, r
    assert "marker=kit-xyz" in r.out, r


def test_absurd_but_valid_mem():
    """1 TiB of guest RAM is mapped lazily: the guest boots, or lkvm says in
    one line that the vCPUs cannot address it and how much they can, and
    that much boots."""
    r = lkvm_run("-k", kit("exit.elf"), "-m", str(1024 * 1024))
    if r.rc == 0:
        return
    errors = [l for l in r.err.splitlines() if l.startswith("lkvm: error:")]
    assert r.rc == 1 and len(errors) == 1, r
    m = re.search(r"physical addresses .*; at most -m (\d+)$", errors[0])
    assert m, r
    r = lkvm_run("-k", kit("exit.elf"), "-m", m.group(1))
    assert r.rc == 0, r


def symbol_at(elf, addr):
    """The name of the function of elf that holds addr (nm -n order)."""
    out = subprocess.run(["nm", "-n", str(elf)], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    name = None
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            if int(f[0], 16) > addr:
                break
            name = f[2]
    return name


def test_hang_timeout():
    r = lkvm_run("-k", kit("hang.elf"), "-c", 2, timeout=1)
    assert r.rc == 124, r
    assert "hanging" in r.out, r
    assert 0.8 <= r.elapsed < 5, r
    # where each vCPU was when --timeout stopped it: the BSP halted in
    # the test body, the AP never started
    err = "\n".join(r.err.splitlines())   # lkvm ends its lines with \r\n
    m = re.search(r"^lkvm: warning: vcpu0: rip (0x[0-9a-f]+) \(64-bit, "
                  r"cs 0x[0-9a-f]+\), rsp 0x[0-9a-f]+, interrupts off, "
                  r"halted, \d+ exits to lkvm$", err, re.M)
    assert m, r
    assert symbol_at(kit("hang.elf"), int(m.group(1), 16)) == "kit_test", r
    assert re.search(r"^lkvm: warning: vcpu1: rip 0xfff0 \(real mode, "
                     r"cs 0xf000\), .* uninitialized, 0 exits to lkvm$",
                     err, re.M), r


def test_poweroff():
    r = lkvm_run("-k", kit("poweroff.elf"))
    assert r.rc == 0, r
    assert "powering off" in r.out, r
    assert "FAIL" not in r.out, r


@pytest.mark.parametrize("cpus", [1, 2, 4])
def test_smp(cpus):
    r = lkvm_run("-k", kit("smp.elf"), "-c", cpus, "-p", f"cpus={cpus}")
    assert r.rc == 0, r
    assert "PASS: smp" in r.out, r
    assert f"{cpus} cpus up" in r.out, r
    lines = [l for l in r.out.splitlines() if l.startswith("cpu ")]
    assert len(lines) == cpus, r


@pytest.mark.parametrize("mem", [64, 256, 4200])
@pytest.mark.parametrize("cpus", [1, 3])
def test_tables(cpus, mem):
    r = lkvm_run("-k", kit("tables.elf"), "-c", cpus, "-m", mem,
                 "-p", f"cpus={cpus} mem={mem}")
    assert r.rc == 0, r
    assert "PASS: tables" in r.out, r


def test_rtc():
    r = lkvm_run("-k", kit("rtc.elf"), "-p", f"now={int(time.time())}")
    assert r.rc == 0, r
    assert "PASS: rtc" in r.out, r


def test_firmware_reset_vector():
    r = lkvm_run("-f", kit("firmware.bin"))
    assert r.rc == 0x42, r
    assert "firmware ok" in r.out, r


def test_kit_selftest():
    # The kit's own runtime: if this fails, distrust the other results.
    r = lkvm_run("-k", kit("selftest.elf"), "-p",
                 "alpha=1 beta=0x10 gamma word=hello")
    assert r.rc == 0, r
    assert "PASS: selftest" in r.out, r


@pytest.mark.parametrize("mode,status", [
    ("exception", 250),   # the kit's own handler reports and exits
    ("triple", 2),        # lkvm: the guest crashed
    ("reboot", 3),        # lkvm: reboot requested, no --reboot given
    ("panic", 4),         # lkvm: pvpanic
])
def test_fault_exit_codes(mode, status):
    r = lkvm_run("-k", kit("fault.elf"), "-p", f"mode={mode}")
    assert r.rc == status, r
    assert f"fault mode {mode}" in r.out, r
    assert "still running" not in r.out, r


def test_reboot_restarts_guest():
    # With --reboot each i8042 reset boots the guest again, until --timeout.
    r = lkvm_run("--reboot", "-k", kit("fault.elf"), "-p", "mode=reboot",
                 timeout=2)
    assert r.rc == 124, r
    assert r.out.count("fault mode reboot") >= 2, r


def test_pit_reaches_ioapic_pin2():
    """The MADT's IRQ0 -> GSI2 override is true of the interrupt routing."""
    r = lkvm_run("-k", kit("timer.elf"))
    assert r.rc == 0, r
    assert "PIT -> IOAPIC pin 2" in r.out, r


def test_tsc_frequency_given():
    """The guest is told its TSC rate (CPUID 0x40000010, kvmclock), and it
    is the rate the TSC runs at."""
    r = lkvm_run("-k", kit("tsc.elf"))
    assert r.rc == 0, r
    assert "PASS: tsc" in r.out, r


def _stats(path):
    import json
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("disk,cpus", [(False, 1), (True, 1), (True, 3)])
def test_pci_bus(tmp_path, disk, cpus):
    """Bus 0 as a driver sees it, and a bus scan costs one exit per read:
    the config-address writes are coalesced by KVM instead of exiting."""
    args = ["-k", kit("pci.elf"), "-c", cpus, "--stats", tmp_path / "s.json"]
    params = f"scans=50 queues={cpus}"
    if disk:
        img = tmp_path / "d.img"
        img.write_bytes(b"")
        os.truncate(img, 1 << 20)
        args += ["-d", img]
        params += " blk=1"
    r = lkvm_run(*args, "-p", params)
    assert r.rc == 0, r
    assert "PASS: pci" in r.out, r
    st = _stats(tmp_path / "s.json")
    pio = {d["device"]: d["exits"] for d in st["pio_devices"]}
    io_exits = sum(v["io"] for v in st["vcpus"])
    if st["coalesced_pio"]:
        # Each config read is an address write (queued) plus a data read.
        others = sum(n for dev, n in pio.items() if dev != "pci-host")
        assert io_exits - others <= pio["pci-host"] // 2 + 16, st


@pytest.mark.parametrize("transport", ["mmio", "pci-legacy"])
@pytest.mark.parametrize("ioeventfd", [True, False])
def test_notify_path(tmp_path, transport, ioeventfd):
    """With ioeventfd no kick exits to a vCPU thread; without, every one does."""
    img = tmp_path / "d.img"
    img.write_bytes(b"")
    os.truncate(img, 1 << 20)
    params = "kicks=256" + (" legacy" if transport == "pci-legacy" else "")
    args = ["-k", kit("kick.elf"), "-d", img, "--virtio-transport", transport,
            "-p", params, "--stats", tmp_path / "s.json"]
    if not ioeventfd:
        args.append("--no-ioeventfd")
    r = lkvm_run(*args)
    assert r.rc == 0, r
    q = _stats(tmp_path / "s.json")["devices"][0]["queues"][0]
    if ioeventfd:
        assert q["kicks_exit"] == 0 and q["kicks_eventfd"] == 256, q
    else:
        assert q["kicks_exit"] == 256 and q["kicks_eventfd"] == 0, q


def test_mmio_cmdline(tmp_path):
    """--mmio-cmdline names each virtio-mmio slot for kernels without ACPI."""
    img = tmp_path / "d.img"
    img.write_bytes(b"\0" * 4096)
    img2 = tmp_path / "e.img"
    img2.write_bytes(b"\0" * 4096)
    r = lkvm_run("-k", kit("exit.elf"), "-d", img, "-d", f"{img2},ro",
                 "--virtio-transport", "mmio", "--mmio-cmdline", "-p", "x=1")
    assert r.rc == 0, r
    assert ('cmdline: "x=1 virtio_mmio.device=4K@0xe0000000:5 '
            'virtio_mmio.device=4K@0xe0001000:6"') in r.out, r

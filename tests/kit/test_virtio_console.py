# SPDX-License-Identifier: GPL-2.0
"""--console virtio: lkvm's virtio-console (hvc0), driven by
guest/kit/hvc.elf on each transport: an emergency write before the
queues run, a line over three buffers, typed input in the receive
buffers, lkvm debug --sysrq as Ctrl-O and the key (hvc's SysRq), and a
reader that stops: the guest's output waits for it and none is lost."""
import json
import subprocess
import time

import pytest

from running_vm import RunningVM
from test_virtio_blk import LKVM, PROC_TIMEOUT, ROOT, SOFT_KVM, kit

TRANSPORTS = {"pci": "transport=pci", "pci-legacy": "transport=legacy",
              "mmio": "transport=mmio"}


def stats_of(path):
    st = json.loads(path.read_text())
    dev = [d for d in st["devices"] if d["type"] == "virtio-console"]
    assert len(dev) == 1, st["devices"]
    return st, dev[0]


@pytest.mark.parametrize("transport,ioeventfd", [
    ("pci", True), ("pci-legacy", True), ("mmio", True), ("pci", False)],
    ids=["pci", "pci-legacy", "mmio", "pci-no-ioeventfd"])
def test_output(tmp_path, transport, ioeventfd):
    stats = tmp_path / "stats.json"
    p = subprocess.run(
        [str(LKVM), "run", "--timeout", "60", "--stats", str(stats),
         "--console", "virtio", "--virtio-transport", transport,
         *([] if ioeventfd else ["--no-ioeventfd"]),
         "-p", TRANSPORTS[transport], "-k", str(kit("hvc.elf"))],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=PROC_TIMEOUT)
    assert p.returncode == 0 and "PASS: hvc" in p.stdout, p.stdout + p.stderr
    for line in ("HVC emergency", "HVC hello from the guest",
                 "HVC three buffers, one chain"):
        assert line + "\n" in p.stdout, (line, p.stdout)
    warnings = [line for line in p.stderr.splitlines()
                if line.startswith("lkvm:") and SOFT_KVM not in line]
    assert not warnings, p.stderr
    st, dev = stats_of(stats)
    assert dev["driver_seen"] and dev["times_broken"] == 0, dev
    assert [q["requests"] for q in dev["queues"]] == [0, 2], dev
    assert dev["output_cut"] == 0 and dev["input_dropped"] == 0, dev


def test_input_and_sysrq(tmp_path):
    """What the user types reaches the receive buffers, and SysRq comes
    as hvc takes it: Ctrl-O (0x0f), then the key."""
    vm = RunningVM(tmp_path / "run", "hvc", "--console", "virtio",
                   "-p", "input", "-k", str(kit("hvc.elf")))
    try:
        vm.wait_line(r"^hvc: ready for input$")
        vm.type("ping\n")
        vm.wait_line(r"^HVC got ping$")
        vm.wait_line(r"^hvc: ready for sysrq$")
        p = vm.lkvm("debug", "hvc", "--sysrq", "h")
        assert p.returncode == 0, p.stderr
        vm.wait_line(r"^hvc: sysrq bytes 0f 68$")
        code, err = vm.finish()
        assert code == 0, (vm.seen, err)
    finally:
        vm.kill()
    assert "PASS: hvc" in vm.seen, vm.seen


def test_stalled_reader_holds_output(tmp_path):
    """192 KiB of output while nobody reads for 3 s: the console queue
    fills, lkvm holds the guest's buffers instead of dropping them, and
    once the reader is back every line arrives whole and in order."""
    stats = tmp_path / "stats.json"
    bulk = 48
    proc = subprocess.Popen(
        [str(LKVM), "run", "--timeout", "120", "--stats", str(stats),
         "--console", "virtio", "-p", f"bulk={bulk}",
         "-k", str(kit("hvc.elf"))],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    time.sleep(3)
    assert proc.poll() is None, "the guest finished without its reader"
    out, err = proc.communicate(timeout=PROC_TIMEOUT)
    assert proc.returncode == 0, out[-2000:] + err
    got = [l for l in out.split(b"\n") if l.startswith(b"HVC bulk ")]
    assert len(got) == bulk, len(got)
    for i, line in enumerate(got):
        head = b"HVC bulk %04d " % i
        fill = bytes([ord("a") + i % 26])
        assert line.startswith(head) and len(line) == 4095, (i, line[:40])
        assert line[len(head):] == fill * (4095 - len(head)), i
    st, dev = stats_of(stats)
    assert dev["output_held"] > 0, dev
    assert dev["output_cut"] == 0, dev
    assert st["console"]["dropped"] == 0, st["console"]


def test_chain_larger_than_the_queue_is_cut(tmp_path):
    """A single output chain of 100 KiB (10 buffers), more than the whole
    console queue: written as far as it fits, counted as cut, given back;
    the VM goes on."""
    stats = tmp_path / "stats.json"
    # The output goes to a file, not a pipe: a pipe's reader that a loaded
    # machine does not schedule for 500 ms makes lkvm drop output (the
    # stalled-reader test above covers that), which is not what this
    # test is about.
    out_path = tmp_path / "out"
    with open(out_path, "wb") as out:
        p = subprocess.run(
            [str(LKVM), "run", "--timeout", "60", "--stats", str(stats),
             "--console", "virtio", "-p", "too_big",
             "-k", str(kit("hvc.elf"))],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.PIPE, timeout=PROC_TIMEOUT)
    stdout = out_path.read_bytes()
    assert p.returncode == 0 and b"PASS: hvc" in stdout, p.stderr
    assert stdout.count(b"z") >= 32 * 1024, stdout.count(b"z")
    st, dev = stats_of(stats)
    assert dev["output_cut"] == 1 and dev["times_broken"] == 0, dev
    assert dev["queues"][1]["requests"] == 3, dev


def test_unused_console_is_named(tmp_path):
    """A guest with no virtio-console driver: lkvm says at exit that its
    console went nowhere, and which kernel option is missing."""
    p = subprocess.run(
        [str(LKVM), "run", "--timeout", "30", "--console", "virtio",
         "-k", str(kit("exit.elf"))],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=PROC_TIMEOUT)
    assert "CONFIG_VIRTIO_CONSOLE" in p.stderr, p.stderr
    assert "hvc0" in p.stderr, p.stderr

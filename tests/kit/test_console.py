# SPDX-License-Identifier: GPL-2.0
"""A console reader that stops (issue 10): a guest flooding COM1 while
nothing reads lkvm's stdout must not take the VMM with it. The vCPU keeps
running (the UART shows a busy transmitter instead of blocking it), SIGTERM
and --timeout still end the VM on time, and a reader that comes back gets
every byte of a guest that waits for THRE, in order.

stdout is a pipe shrunk to one page, so that lkvm's own queue (64 KiB) is
what fills; spew.elf (guest/kit/spew.c) prints 64-byte numbered lines.
"""
import fcntl
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
SPEW = ROOT / "guest" / "kit" / "spew.elf"
F_SETPIPE_SZ = 1031
LINE = re.compile(rb"^spew (\d{8}) \.+\r?$")
# On the software KVM a byte takes two exits: ~20 KB/s, so 64 KiB of queue
# fills in about 4 s.
FILL_S = 7


def small_pipe():
    rd, wr = os.pipe()
    fcntl.fcntl(wr, F_SETPIPE_SZ, 4096)
    return rd, wr


def spawn(wr, *args):
    proc = subprocess.Popen([str(LKVM), "run", "-k", str(SPEW), *args],
                            stdin=subprocess.DEVNULL, stdout=wr,
                            stderr=subprocess.PIPE)
    os.close(wr)
    return proc


def read_all(rd, limit_s):
    """Reads the pipe to EOF, bounded in time."""
    chunks, end = [], time.monotonic() + limit_s
    os.set_blocking(rd, False)
    while time.monotonic() < end:
        try:
            data = os.read(rd, 65536)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if not data:
            break
        chunks.append(data)
    os.close(rd)
    return b"".join(chunks)


def wait_bounded(proc, limit_s):
    try:
        proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"lkvm did not end within {limit_s} s with "
                             "its console reader stopped")
    return proc.stderr.read().decode(errors="replace")


def test_sigterm_ends_the_vm_while_nobody_reads():
    rd, wr = small_pipe()
    proc = spawn(wr, "-p", "lines=1000000", "--timeout", "60")
    time.sleep(FILL_S)
    assert proc.poll() is None, proc.stderr.read()
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    err = wait_bounded(proc, 5)
    took = time.monotonic() - start
    os.close(rd)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by signal" in err, err
    assert re.search(r"console: \d+ bytes of guest output lost", err), err
    assert took < 3, f"SIGTERM took {took:.1f} s"


def test_timeout_ends_the_vm_while_nobody_reads():
    rd, wr = small_pipe()
    start = time.monotonic()
    proc = spawn(wr, "-p", "lines=1000000", "--timeout", str(FILL_S))
    err = wait_bounded(proc, FILL_S + 10)
    took = time.monotonic() - start
    os.close(rd)
    assert proc.returncode == 124, err
    assert took < FILL_S + 3, f"--timeout {FILL_S} took {took:.1f} s"


def read_first(rd, nbytes, limit_s):
    """Reads nbytes (the guest's first lines), timing how long they took."""
    data, start = b"", time.monotonic()
    while len(data) < nbytes and time.monotonic() - start < limit_s:
        chunk = os.read(rd, nbytes - len(data))
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - start


def test_a_reader_that_comes_back_gets_every_byte(tmp_path):
    lines = 1800    # 115 KiB: more than the queue and the pipe together
    stats = tmp_path / "stats.json"
    rd, wr = small_pipe()
    proc = spawn(wr, "-p", f"lines={lines} patience_ms=60000",
                 "--timeout", "120", "--stats", str(stats))
    # The guest's speed depends on the host's load: measure it on the
    # first 16 KiB, then stop reading for twice as long as the queue and
    # the pipe take to fill at that speed.
    head, took = read_first(rd, 16384, 40)
    time.sleep(min(2 * took * (68 * 1024) / max(len(head), 1), 60))
    out = head + read_all(rd, 100)
    err = wait_bounded(proc, 10)
    assert proc.returncode == 0, err
    got = [int(m.group(1)) for m in map(LINE.match, out.splitlines()) if m]
    assert got == list(range(lines)), \
        f"{len(got)} of {lines} lines, first gap near " \
        f"{next((i for i, n in enumerate(got) if n != i), None)}"
    done = re.search(rb"spew done: busy=(\d+) overruns=(\d+)", out)
    assert done, out[-500:]
    # The guest saw the transmitter busy while nobody read, and never had
    # to give up on it.
    assert int(done.group(1)) > 0 and int(done.group(2)) == 0, done.group(0)
    console = json.loads(stats.read_text())["console"]
    assert console["dropped"] == 0 and console["unwritten"] == 0, console
    assert console["written"] == len(out), (console, len(out))

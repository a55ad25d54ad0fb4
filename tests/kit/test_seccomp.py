# SPDX-License-Identifier: GPL-2.0
"""seccomp confinement on a running VM (core/seccomp.c). It is on by
default, so every other kit test already runs confined; here: each lkvm
thread carries exactly one filter, its own (none inherited from the
thread that made it), --no-seccomp runs without, and SIGTERM still ends a
confined VM the documented way. What a filter refuses is unit-tested
(tests/unit/test_seccomp.c)."""
import os
import signal
import subprocess
import time

import pytest

from test_kit import KIT, LKVM

THREADS = {"lkvm", "vcpu0", "vcpu1", "blk-io", "net-io0", "slirp",
           "lkvm-console"}


def thread_status(pid):
    """{comm: (tid, its /proc status fields)} of a process's threads."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        found[fields["Name"].strip()] = (int(tid), fields)
    return found


def seccomp_by_thread(pid):
    """{comm: (Seccomp mode, Seccomp_filters)} for lkvm's own threads."""
    return {name: (int(f["Seccomp"]), int(f["Seccomp_filters"]))
            for name, (_, f) in thread_status(pid).items() if name in THREADS}


def settled(pid, want, wait_s=10):
    """The threads' state once it is want, or as it is after wait_s: the
    guest may print before every thread has named (and confined) itself,
    the main thread last."""
    deadline = time.monotonic() + wait_s
    threads = seccomp_by_thread(pid)
    while threads != want and time.monotonic() < deadline:
        time.sleep(0.1)
        threads = seccomp_by_thread(pid)
    return threads


def hanging_vm(tmp_path, *extra):
    img = tmp_path / "disk.img"
    img.write_bytes(bytes(4096))
    cmd = [str(LKVM), "run", "--timeout", "30", "-c", "2", "-d", str(img),
           "-n", "user", *extra, "-k", str(KIT / "hang.elf")]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 25
    out = ""
    while "hanging" not in out:
        line = proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"hang.elf did not start: {out}{proc.stderr.read()}")
        out += line
    return proc


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    return err


def test_every_thread_has_its_own_filter(tmp_path):
    want = {name: (2, 1) for name in THREADS}
    proc = hanging_vm(tmp_path)
    try:
        threads = settled(proc.pid, want)
    finally:
        err = stop(proc)
    assert threads == want, threads
    # the main loop, confined, still takes SIGTERM and tears down
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "seccomp" not in err, err


def test_no_seccomp_runs_unconfined(tmp_path):
    want = {name: (0, 0) for name in THREADS}
    proc = hanging_vm(tmp_path, "--no-seccomp")
    try:
        threads = settled(proc.pid, want)
    finally:
        err = stop(proc)
    assert threads == want, threads
    assert proc.returncode == 128 + signal.SIGTERM, err

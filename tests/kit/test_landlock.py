# SPDX-License-Identifier: GPL-2.0
"""Landlock on a running VM (core/landlock.c), from the attacker's side:
a VM with a disk, a writable --9p share, --stats and -n user runs
hang.elf, and each of its threads whose seccomp filter lets it open
files (the main thread; the 9p share's I/O thread; the slirp thread,
read-only) is made, by ptrace, to call openat() as code that took it
over would (tests/kit/inject.py). /etc/passwd must be refused with
EACCES while what the thread's work needs still opens; --no-landlock
(and lkvm before Landlock) opens it. The VM then ends normally. What the
policy allows, file by file, is unit-tested (tests/unit/test_landlock.c).
"""
import errno
import os
import signal
import subprocess
import time

import pytest

import inject
from test_kit import KIT, LKVM
from test_seccomp import stop, thread_status

pytestmark = pytest.mark.skipif(not inject.supported(),
                                reason="the injector is x86-64, as root")


def threads(pid):
    """{comm: (tid, Seccomp mode)} of a process's threads."""
    return {name: (tid, int(f["Seccomp"]))
            for name, (tid, f) in thread_status(pid).items()}


def confined_vm(tmp_path, *extra):
    """hang.elf with a disk, a share, --stats and -n user, once every
    thread named here has confined itself (the main thread last)."""
    share = tmp_path / "share"
    share.mkdir()
    (share / "file").write_text("shared")
    img = tmp_path / "disk.img"
    img.write_bytes(bytes(4096))
    stats = tmp_path / "stats.json"
    cmd = [str(LKVM), "run", "--timeout", "60", "-d", str(img),
           "--9p", f"{share},tag", "-n", "user", "--stats", str(stats),
           *extra, "-k", str(KIT / "hang.elf")]
    env = dict(os.environ, LKVM_RUNTIME_DIR=str(tmp_path / "run"))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    want = {"lkvm", "9p-io", "slirp"}
    deadline = time.monotonic() + 30
    while True:
        t = threads(proc.pid) if proc.poll() is None else {}
        if all(t.get(n, (0, 0))[1] == 2 for n in want):
            return proc, t, share, stats
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"lkvm did not confine {want}: {t}; "
                        f"{proc.stderr.read()}")
        time.sleep(0.05)


def opened(tid, path, flags=os.O_RDONLY):
    """Whether thread tid, taken over, opens path (the fd is closed)."""
    fd = inject.openat(tid, path, flags)
    if fd >= 0:
        inject.close(tid, fd)
        return True
    assert fd == -errno.EACCES, (path, os.strerror(-fd))
    return False


def test_taken_over_threads_cannot_open_host_files(tmp_path):
    proc, t, share, stats = confined_vm(tmp_path)
    try:
        main, io, slirp = t["lkvm"][0], t["9p-io"][0], t["slirp"][0]
        for tid in (main, io, slirp):
            assert not opened(tid, "/etc/passwd"), tid
        assert not opened(main, "/proc/self/environ")
        assert not opened(io, str(tmp_path / "outside"), os.O_WRONLY |
                          os.O_CREAT)
        # what each thread's work needs still opens
        assert opened(io, str(share / "file"))
        assert opened(io, str(share / "file"), os.O_WRONLY)
        assert opened(main, str(stats), os.O_WRONLY | os.O_TRUNC)
        assert opened(main, "/proc/self/status")
        if os.path.exists("/etc/resolv.conf"):
            assert opened(slirp, "/etc/resolv.conf")
    finally:
        err = stop(proc)
    # taken over and handed back, every thread ends the VM as ever
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "seccomp" not in err and "landlock" not in err, err
    assert stats.read_text().startswith("{"), err


def test_no_landlock_leaves_host_files_open(tmp_path):
    """The same thread, without Landlock, opens /etc/passwd: what the test
    above refuses is Landlock's doing, and lkvm before it let it."""
    proc, t, _, _ = confined_vm(tmp_path, "--no-landlock")
    try:
        assert opened(t["lkvm"][0], "/etc/passwd")
        assert opened(t["9p-io"][0], "/etc/passwd")
    finally:
        err = stop(proc)
    assert proc.returncode == 128 + signal.SIGTERM, err

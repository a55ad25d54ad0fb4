# SPDX-License-Identifier: GPL-2.0
"""seccomp confinement on a running VM (core/seccomp.c). It is on by
default, so every other kit test already runs confined; here: each lkvm
thread carries exactly one filter, its own (none inherited from the
thread that made it), --no-seccomp runs without, and SIGTERM still ends a
confined VM the documented way. What a filter refuses is unit-tested
(tests/unit/test_seccomp.c); here gdb makes a running VM's threads call
what a compromised thread would: with --9p, only the share's own thread
may open a file, and it may not make a device node."""
import os
import platform
import shutil
import signal
import subprocess
import textwrap
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


def seccomp_by_thread(pid, names=THREADS):
    """{comm: (Seccomp mode, Seccomp_filters)} for lkvm's threads of
    those names."""
    return {name: (int(f["Seccomp"]), int(f["Seccomp_filters"]))
            for name, (_, f) in thread_status(pid).items() if name in names}


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


def inject(tmp_path, pid, thread, call):
    """Make lkvm's thread named thread call call (a C expression) from
    where it waits, as code that took the thread over would: gdb's
    output."""
    if not shutil.which("gdb"):
        pytest.fail("gdb is missing: run scripts/install-deps.sh")
    script = tmp_path / "inject.py"
    script.write_text(textwrap.dedent(f"""\
        import gdb
        gdb.execute("set pagination off")
        gdb.execute("handle SIGSYS nostop noprint pass")
        found = [t for t in gdb.selected_inferior().threads()
                 if t.name == {thread!r}]
        if not found:
            raise gdb.GdbError("no thread named {thread}")
        found[0].switch()
        gdb.execute("call (long){call}")
        """))
    p = subprocess.run(["gdb", "-q", "-nx", "-batch", "-p", str(pid),
                        "-x", str(script)],
                       capture_output=True, text=True, timeout=60)
    return p.stdout + p.stderr


def died_of(proc, what):
    """lkvm's end once a thread made a forbidden call: status 159 and the
    one line naming the thread's class and the call."""
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"lkvm lived on: {err}")
    assert proc.returncode == 159, (proc.returncode, err)
    assert f"lkvm: seccomp: {what}\n" in err, err


# openat(AT_FDCWD, NULL, 0) and mknodat(AT_FDCWD, NULL, S_IFCHR | 0600, 0):
# the filter decides on the number and the mode alone (the kernel would
# answer EFAULT for the path)
NR_OPENAT, NR_MKNODAT = {"x86_64": (257, 259),
                         "aarch64": (56, 33)}[platform.machine()]
OPENAT = f"syscall({NR_OPENAT}, -100, 0, 0)"
MKNOD_CHR = f"syscall({NR_MKNODAT}, -100, 0, 0020600, 0)"


def share_vm(tmp_path, thread, *extra):
    """A hanging VM with a share, once thread and the share's own thread
    (9p-io) have each confined themselves."""
    share = tmp_path / "share"
    share.mkdir()
    proc = hanging_vm(tmp_path, "--9p", f"{share},kit9p", *extra)
    want = {thread: (2, 1), "9p-io": (2, 1)}
    deadline = time.monotonic() + 10
    while (threads := seccomp_by_thread(proc.pid, set(want))) != want:
        if time.monotonic() > deadline:
            stop(proc)
            pytest.fail(f"threads not confined: {threads}")
        time.sleep(0.1)
    return proc


@pytest.mark.parametrize("thread,cls,extra", [
    ("vcpu0", "vCPU", ()), ("blk-io", "I/O", ()),
    ("vcpu1", "vCPU", ("--no-ioeventfd",)),
    ("io0", "I/O", ("--iothreads", "1"))],
    ids=["vcpu", "blk-io", "vcpu-no-ioeventfd", "pool-thread"])
def test_with_9p_no_other_thread_opens_files(tmp_path, thread, cls, extra):
    """--9p gives the file syscalls to the share's own thread alone: a
    vCPU or a disk's I/O thread (or with --iothreads a pool's, with
    --no-ioeventfd a vCPU serving notifies) that calls openat ends lkvm.
    Before, with --9p, every such thread could open any path."""
    proc = share_vm(tmp_path, thread, *extra)
    inject(tmp_path, proc.pid, thread, OPENAT)
    died_of(proc, f"{cls} thread made forbidden syscall {NR_OPENAT} (openat)")


def test_the_9p_thread_opens_files_and_makes_no_device(tmp_path):
    """The share's thread may call openat (and the VM runs on), and its
    own filter refuses a character device's mknodat."""
    proc = share_vm(tmp_path, "9p-io")
    out = inject(tmp_path, proc.pid, "9p-io", OPENAT)
    assert "= -1" in out, out           # EFAULT: it reached the kernel
    assert proc.poll() is None, out
    inject(tmp_path, proc.pid, "9p-io", MKNOD_CHR)
    died_of(proc, f"9p thread made forbidden syscall {NR_MKNODAT} (mknodat)")

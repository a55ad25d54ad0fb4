# SPDX-License-Identifier: GPL-2.0
"""Helpers shared by the benches that put lkvm beside its peers (kvmtool,
QEMU) in one nested L1: tests/bench/net_peers_bench.py and
tests/bench/boot_peers_bench.py. Stdlib only."""
import os
import signal
import statistics
import subprocess
from pathlib import Path


def kvmtool_binary():
    """Where kvmtool is expected: $KVMTOOL, else the cache that
    scripts/peers/build-kvmtool.sh installs into."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(os.environ.get("KVMTOOL") or
                os.path.join(cache, "lkvm", "peers", "kvmtool"))


def stop(proc, grace):
    """Wait up to grace seconds for proc, then kill its process group (it
    was started in a session of its own); its exit status, None if
    killed."""
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def med(values):
    """The median of the values that are not None; None if none is."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def follow(path, done, prefix):
    """Print the L1 part's progress lines (those starting with prefix) as
    L1's console log grows, until done is set."""
    f, part = None, b""
    while not done.is_set():
        if f is None:
            try:
                f = open(path, "rb")
            except FileNotFoundError:
                done.wait(1)
                continue
        data = f.readline()
        if not data:
            # A second L1 boot starts a new log (the first is renamed).
            try:
                if os.stat(path).st_ino != os.fstat(f.fileno()).st_ino:
                    f.close()
                    f, part = None, b""
                    continue
            except FileNotFoundError:
                pass
            done.wait(1)
            continue
        part += data
        if part.endswith(b"\n"):
            line = part.decode(errors="replace").replace("\r", "").strip()
            part = b""
            if line.startswith(prefix):
                print(line, flush=True)
    if f:
        f.close()


def version(argv):
    """The first line a program prints about its version, or '?'."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (out.strip().splitlines() or ["?"])[0]

# SPDX-License-Identifier: GPL-2.0
"""Helpers shared by the benches that put lkvm beside its peers (kvmtool,
QEMU) in one nested L1: tests/bench/net_peers_bench.py and
tests/bench/boot_peers_bench.py. Stdlib only."""
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nested"))


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


def run_l1_part(script, work, env, name, prefix, timeout):
    """Run `script --in-l1 work` in one nested L1 (tests/nested/l1shell.py),
    echoing its progress lines (those starting with prefix) as they come,
    and say how L1 went: a failure (with L1's console tail) and a second L1
    boot. The l1shell result; its results are in work/results.json, which
    exists if the L1 part got that far."""
    import l1shell  # noqa: E402
    # l1shell keeps L1's console there as it comes: progress from it.
    log = Path(l1shell.WORK) / f"{name}.console.log"
    log.unlink(missing_ok=True)
    done = threading.Event()
    follower = threading.Thread(target=follow, args=(log, done, prefix),
                                daemon=True)
    follower.start()
    try:
        res = l1shell.run(["/usr/bin/python3", str(Path(script).resolve()),
                           "--in-l1", str(work)], env=env, name=name,
                          echo=False, timeout=timeout)
    finally:
        time.sleep(1.5)
        done.set()
        follower.join()
    if res.status != 0:
        print(f"{prefix}the L1 part failed ({res.status}, {res.why}):\n"
              f"{res.l1.tail() if res.l1 else ''}")
        if (Path(work) / "results.json").exists():
            print(f"{prefix}what it measured before that:")
    if res.retried:
        # nested.py said so on stderr when it happened; the first L1's
        # console is kept beside the second's, as .died.
        print(f"{prefix}L1 was booted twice, every run made again in the "
              "second: " + res.retried.split("; last console")[0])
    return res

# SPDX-License-Identifier: GPL-2.0
"""A kit guest under `lkvm run` that a test talks to while it runs: its
console read line by line on a thread, its stdin a pipe, its control
socket in a runtime directory of the test's own, and the management
commands (`lkvm stat`, `pause`, `balloon`, ...) run against it."""
import os
import queue
import re
import subprocess
import threading
import time

import pytest

from test_virtio_blk import LKVM, ROOT


def lkvm(env, *args, timeout=60):
    """A management command (or any lkvm command) with env's runtime dir."""
    return subprocess.run([str(LKVM), *args], env=env, cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


class RunningVM:
    """lkvm run ARGS (with --name NAME unless None, --timeout 120), under
    the command prefix (such as strace) when one is given."""

    def __init__(self, rundir, name, *args, prefix=()):
        self.name = name
        self.env = dict(os.environ, LKVM_RUNTIME_DIR=str(rundir))
        cmd = [*prefix, str(LKVM), "run", "--timeout", "120"]
        if name:
            cmd += ["--name", name]
        self.proc = subprocess.Popen(
            cmd + list(args), cwd=ROOT, env=self.env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            bufsize=1)
        self.lines = queue.Queue()
        self.seen = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def state(self):
        """What became of lkvm, for a failure message."""
        rc = self.proc.poll()
        return self.seen[-8:], ("running" if rc is None else
                                f"lkvm exited {rc}: {self.proc.stderr.read()}")

    def wait_line(self, pred, timeout=60):
        """The first console line from now on that pred (a function, or a
        regular expression) accepts."""
        if isinstance(pred, str):
            pred = re.compile(pred).search
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line is None:
                break
            self.seen.append(line)
            if pred(line):
                return line
        pytest.fail(f"{self.name}: no such line; {self.state()}")

    def drain(self, quiet_s):
        """Every line printed until none came for quiet_s seconds."""
        got = []
        while True:
            try:
                line = self.lines.get(timeout=quiet_s)
            except queue.Empty:
                return got
            if line is None:
                return got
            self.seen.append(line)
            got.append(line)

    def type(self, text):
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def lkvm(self, *args):
        return lkvm(self.env, *args)

    def finish(self, timeout=30):
        """Wait for the end: (status, stderr); every line is in seen.
        A VM that does not end fails the test with where its vCPU is, in
        lkvm's --timeout words (see conftest.py)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p = self.lkvm("debug", self.name or f"guest-{self.proc.pid}",
                          "--dump")
            rip = re.search(r"rip ([0-9a-f]{16})", p.stdout)
            pytest.fail(f"{self.name} did not end in {timeout} s: vcpu0: "
                        f"rip 0x{rip[1].lstrip('0') if rip else '?'} "
                        f"({p.stdout[:300]})")
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.drain(0)
        return self.proc.returncode, self.proc.stderr.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

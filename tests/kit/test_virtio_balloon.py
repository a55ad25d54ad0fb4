# SPDX-License-Identifier: GPL-2.0
"""--balloon and `lkvm balloon NAME --inflate/--deflate MiB`: lkvm's
virtio-balloon driven by guest/kit/balloon.elf on each transport. Pages
the guest gives up leave lkvm's memory (guest RSS falls by as much, the
guest reads them back as zeroes), pages it takes back work again, frame
numbers outside RAM are skipped and counted, and the target stays within
the guest's RAM."""
import json
import os
import re
import subprocess
import threading
import time

import pytest

from test_virtio_blk import LKVM, ROOT, kit

TRANSPORTS = {"pci": "transport=pci", "pci-legacy": "transport=legacy",
              "mmio": "transport=mmio"}


class Guest:
    def __init__(self, tmp_path, name, args):
        self.env = dict(os.environ, LKVM_RUNTIME_DIR=str(tmp_path / "run"))
        self.name = name
        self.stats = tmp_path / f"{name}.json"
        self.proc = subprocess.Popen(
            [str(LKVM), "run", "--timeout", "120", "--name", name,
             "--stats", str(self.stats), *args],
            cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait(self, pattern, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in list(self.lines):
                if re.search(pattern, line):
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        rc = self.proc.poll()
        why = "" if rc is None else f" (lkvm exited {rc}: {self.proc.stderr.read()})"
        pytest.fail(f"no {pattern!r}: {self.lines[-20:]}{why}")

    def lkvm(self, *args):
        return subprocess.run([str(LKVM), *args], env=self.env,
                              capture_output=True, text=True, timeout=60)

    def state(self):
        rc = self.proc.poll()
        return self.lines[-8:], ("running" if rc is None else
                                 f"lkvm exited {rc}: {self.proc.stderr.read()}")

    def balloon(self, how, mib):
        p = self.lkvm("balloon", self.name, how, str(mib))
        assert p.returncode == 0, (p.stderr, self.state())
        return p.stdout

    def guest_rss_kib(self):
        p = self.lkvm("stat", self.name)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["guest_rss_kib"]

    def finish(self):
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        return self.proc.returncode, self.proc.stderr.read()


@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_inflate_and_deflate(tmp_path, transport):
    g = Guest(tmp_path, "bal", ["--balloon",
                                "--virtio-transport", transport,
                                "-p", TRANSPORTS[transport] + " pool_mib=8",
                                "-k", str(kit("balloon.elf"))])
    try:
        g.wait(r"^balloon: ready, pool 2048 pages$")
        rss0 = g.guest_rss_kib()
        out = g.balloon("--inflate", 6)
        assert out == "balloon: target 6 MiB, the guest gave 0 MiB so far\n"
        g.wait(r"^balloon: holding 1536 pages$")
        rss1 = g.guest_rss_kib()
        # what the guest gave is gone from lkvm's memory
        assert rss0 - rss1 >= 6 * 1024 * 0.9, (rss0, rss1, g.lines[-8:])
        out = g.balloon("--deflate", 2)
        assert out.startswith("balloon: target 4 MiB, the guest gave 6 MiB"), out
        g.wait(r"^balloon: holding 1024 pages$")
        # more than it holds: back to 0, not below
        out = g.balloon("--deflate", 100)
        assert out.startswith("balloon: target 0 MiB"), out
        code, err = g.finish()
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
    assert code == 0 and "PASS: balloon" in g.lines, (g.lines[-10:], err)
    st = json.loads(g.stats.read_text())
    dev = [d for d in st["devices"] if d["type"] == "virtio-balloon"][0]
    assert dev["driver_seen"] and dev["times_broken"] == 0, dev
    assert (dev["pages_inflated"], dev["pages_deflated"], dev["bad_pfns"],
            dev["target_pages"], dev["actual_pages"]) == (1536, 1536, 4, 0, 0), dev


def test_target_is_bounded_and_needs_a_balloon(tmp_path):
    """The target never goes past the guest's RAM; a VM without --balloon
    says so; bad amounts are refused before anything is asked."""
    g = Guest(tmp_path, "big", ["--balloon",
                                "-k", str(kit("count.elf"))])
    plain = Guest(tmp_path, "plain", ["-k", str(kit("count.elf"))])
    try:
        g.wait(r"^count 2$")
        plain.wait(r"^count 2$")
        out = g.balloon("--inflate", 1 << 20)
        assert out.startswith("balloon: target 256 MiB"), out
        p = g.lkvm("balloon", "plain", "--inflate", "1")
        assert p.returncode == 1 and "no balloon" in p.stderr, p.stderr
        for bad in (["--inflate", "0"], ["--inflate", "-3"],
                    ["--inflate", "x"], ["--inflate", "1", "--deflate", "1"],
                    []):
            p = g.lkvm("balloon", "big", *bad)
            assert p.returncode == 1, (bad, p)
            assert "balloon" in p.stderr, (bad, p.stderr)
        p = g.lkvm("stop", "big")
        code, err = g.finish()
        assert p.returncode == 0 and code == 0, (p.stderr, code, err,
                                                 g.lines[-5:])
    finally:
        for v in (g, plain):
            if v.proc.poll() is None:
                v.proc.kill()
                v.proc.wait()

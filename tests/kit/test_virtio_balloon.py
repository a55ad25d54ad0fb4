# SPDX-License-Identifier: GPL-2.0
"""--balloon and `lkvm balloon NAME --inflate/--deflate MiB`: lkvm's
virtio-balloon driven by guest/kit/balloon.elf on each transport. Pages
the guest gives up leave lkvm's memory (guest RSS falls by as much, the
guest reads them back as zeroes), pages it takes back work again, frame
numbers outside RAM are skipped and counted, and the target stays within
the guest's RAM."""
import json

import pytest

from running_vm import RunningVM
from test_virtio_blk import kit

TRANSPORTS = {"pci": "transport=pci", "pci-legacy": "transport=legacy",
              "mmio": "transport=mmio"}


class Guest(RunningVM):
    """A guest run with --stats into tmp_path/NAME.json."""

    def __init__(self, tmp_path, name, args):
        self.stats = tmp_path / f"{name}.json"
        super().__init__(tmp_path / "run", name, "--stats", str(self.stats),
                         *args)

    def balloon(self, how, mib):
        p = self.lkvm("balloon", self.name, how, str(mib))
        assert p.returncode == 0, (p.stderr, self.state())
        return p.stdout

    def guest_rss_kib(self):
        p = self.lkvm("stat", self.name)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["guest_rss_kib"]


@pytest.mark.parametrize("transport", ["pci", "pci-legacy", "mmio"])
def test_inflate_and_deflate(tmp_path, transport):
    g = Guest(tmp_path, "bal", ["--balloon",
                                "--virtio-transport", transport,
                                "-p", TRANSPORTS[transport] + " pool_mib=8",
                                "-k", str(kit("balloon.elf"))])
    try:
        g.wait_line(r"^balloon: ready, pool 2048 pages$")
        rss0 = g.guest_rss_kib()
        out = g.balloon("--inflate", 6)
        assert out == "balloon: target 6 MiB, the guest gave 0 MiB so far\n"
        g.wait_line(r"^balloon: holding 1536 pages$")
        rss1 = g.guest_rss_kib()
        # what the guest gave is gone from lkvm's memory
        assert rss0 - rss1 >= 6 * 1024 * 0.9, (rss0, rss1, g.seen[-8:])
        out = g.balloon("--deflate", 2)
        assert out.startswith("balloon: target 4 MiB, the guest gave 6 MiB"), out
        g.wait_line(r"^balloon: holding 1024 pages$")
        # more than it holds: back to 0, not below
        out = g.balloon("--deflate", 100)
        assert out.startswith("balloon: target 0 MiB"), out
        code, err = g.finish()
    finally:
        g.kill()
    assert code == 0 and "PASS: balloon" in g.seen, (g.seen[-10:], err)
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
        g.wait_line(r"^count 2$")
        plain.wait_line(r"^count 2$")
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
                                                 g.seen[-5:])
        # count.elf drives no balloon: the exit says what a kernel lacks
        assert "CONFIG_VIRTIO_BALLOON" in err, err
    finally:
        for v in (g, plain):
            v.kill()

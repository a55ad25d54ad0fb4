# SPDX-License-Identifier: GPL-2.0
"""lkvm under valgrind's memcheck (issue 10): guest-kit guests that drive a
disk (plain and O_DIRECT, with a user-mode network card loaded beside it)
and hostile guests that break the virtio rules end with no memcheck error
and no definite leak. memcheck sees what ASan does not: reads of
uninitialised memory, and leaks in paths the sanitized pass never ends.
tests/nested/test_user_net.py runs a whole Linux boot with disk and
network under memcheck the same way.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
KIT = ROOT / "guest" / "kit"
VALGRIND = ["valgrind", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--track-fds=no"]
# The hostile cases that take the most error paths: chain walks, ring
# set-up, config space, feature negotiation, reset with requests queued.
HOSTILE = ["desc_past_ram", "loop", "indirect_loop", "len_overflow",
           "ring_oob", "reset_inflight", "config_oob", "regs", "features"]

pytestmark = pytest.mark.plain_only


def memcheck(*args):
    if not shutil.which("valgrind"):
        pytest.fail("valgrind missing: scripts/install-deps.sh")
    # valgrind runs the guest's code, and lkvm's, through its own JIT,
    # which a seccomp filter would stop (and 3.19 has no seccomp(2));
    # nor does it know Landlock's syscalls.
    cmd = [*VALGRIND, str(LKVM), "run", "--no-seccomp", "--no-landlock",
           "--timeout", "60", *map(str, args)]
    proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=180)
    report = f"{' '.join(cmd)}\nexit {proc.returncode}\n" \
             f"--- stdout ---\n{proc.stdout}--- stderr ---\n{proc.stderr}"
    assert "ERROR SUMMARY: 0 errors" in proc.stderr, report
    assert proc.returncode == 0, report
    return proc.stdout


@pytest.mark.parametrize("direct", [False, True], ids=["cached", "direct"])
def test_disk_and_user_net_under_memcheck(tmp_path, direct):
    img = tmp_path / "disk.img"
    img.write_bytes(b"\0" * (1 << 20))
    disk = f"{img},direct" if direct else str(img)
    out = memcheck("-k", KIT / "crashdisk.elf", "-d", disk, "-n", "user",
                   "-p", "gen=9 first=0 count=64")
    assert "crashdisk: flushed 64" in out and "PASS" in out, out


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_guest_under_memcheck(tmp_path, case):
    img = tmp_path / "disk.img"
    img.write_bytes(b"\0" * (1 << 20))
    out = memcheck("--virtio-transport", "mmio", "-k", KIT / "hostile.elf",
                   "-d", img, "-p", f"case={case}")
    assert "PASS: hostile" in out, out

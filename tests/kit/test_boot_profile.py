# SPDX-License-Identifier: GPL-2.0
"""--boot-profile on a guest-kit guest: lkvm's own milestones and the
guest's first entry, exit and console byte are all there, in order, no
later than the exit request and the whole run; the kit guest writes no
boot marker and prints no Linux lines, so those are "not seen".
tests/nested/test_boot.py checks the kernel's milestones on Linux.
"""
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
KIT = ROOT / "guest" / "kit"
ORDER = ["vmm_start", "inputs_open", "vm_built", "first_entry", "first_exit",
         "first_console_byte", "exit_request"]


def test_boot_profile_of_a_kit_guest(tmp_path):
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [str(LKVM), "run", "--timeout", "30", "--boot-profile", "-q",
         "--stats", str(stats), "-k", str(KIT / "exit.elf")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    st = json.loads(stats.read_text())
    marks = {m["mark"]: m for m in st["boot"]}
    assert list(marks) == ORDER, st["boot"]
    times = [marks[name]["ms"] for name in ORDER]
    assert times == sorted(times), st["boot"]
    assert times[0] == 0 and times[-1] <= st["wall_ms"] + 50, st
    # the guest ran before its first exit, and printed after it
    assert marks["first_exit"]["exits"] == 0, marks
    assert 0 < marks["first_console_byte"]["exits"] <= \
        marks["exit_request"]["exits"], marks
    assert marks["exit_request"]["exits"] <= sum(
        v["exits"] for v in st["vcpus"]), st
    # printed even with -q, one line per milestone
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("lkvm:")]
    assert any("boot profile" in ln for ln in lines), proc.stderr
    for name in ORDER:
        assert any(ln.split()[1:2] == [name] for ln in lines), proc.stderr
    for name in ("kernel_banner", "kernel_run_init", "init_start"):
        assert any(name in ln and "not seen" in ln for ln in lines), \
            proc.stderr

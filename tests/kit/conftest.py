# SPDX-License-Identifier: GPL-2.0
"""The guest kit needs a KVM and root (network namespaces, taps). Where
this machine has no usable KVM the tier runs inside a nested L1 (make
check-kit, tests/tier.py), so a run here without one is a mistake to say
at once, not a suite to skip."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sanitize_only: runs in the ASan/UBSan pass alone "
        "(make SANITIZE=1 check-kit)")
    config.addinivalue_line(
        "markers", "plain_only: runs in the plain pass alone (make check-kit)")
    config.addinivalue_line(
        "markers", "netns: makes a network namespace of its own")


def pytest_sessionstart(session):
    if not os.access(LKVM, os.X_OK):
        pytest.exit(f"tests/kit: no {LKVM} (make lkvm)", returncode=3)
    if os.geteuid() != 0:
        pytest.exit("tests/kit needs root (network namespaces, taps)",
                    returncode=3)
    probe = subprocess.run([str(LKVM), "probe"], capture_output=True,
                           text=True, timeout=30)
    if probe.returncode not in (0, 2):
        pytest.exit("tests/kit needs a KVM and this machine has none "
                    f"({probe.stdout.strip()}): make check-kit runs these "
                    "tests inside a nested L1", returncode=3)

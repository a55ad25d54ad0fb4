# SPDX-License-Identifier: GPL-2.0
"""Least privilege (issue 10): `lkvm run` works as an ordinary user who may
open /dev/kvm through its group, with a disk and a user-mode network card;
only a tap card needs more, and says so in one line.

The host is left as it is: in a mount namespace of its own, the test puts a
copy of the /dev/kvm node owned by a group (gid 64001, standing for `kvm`)
over /dev/kvm, then runs lkvm through setpriv as uid 64000 with no
capabilities at all. tests/nested/test_user_net.py does the same with a
Linux guest in L1.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
GUEST = ROOT / "guest" / "kit" / "crashdisk.elf"
UID, KVM_GID = 64000, 64001

WRAP = r"""
set -e
dev=$1; shift
mount -t tmpfs -o mode=0755 lkvm-test-dev "$dev"
mknod "$dev/kvm" c "$KVM_MAJOR" "$KVM_MINOR"
chown "0:$KVM_GID" "$dev/kvm"
chmod 0660 "$dev/kvm"
mount --bind "$dev/kvm" /dev/kvm
exec "$@"
"""


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="lkvm-unpriv-", dir="/tmp")
    os.chmod(d, 0o755)
    os.mkdir(os.path.join(d, "dev"))
    home = os.path.join(d, "home")
    os.mkdir(home)
    os.chown(home, UID, UID)
    yield Path(d)
    shutil.rmtree(d)


def run_as_user(workdir, groups, *args, timeout=60):
    st = os.stat("/dev/kvm")
    env = dict(os.environ, KVM_GID=str(KVM_GID),
               KVM_MAJOR=str(os.major(st.st_rdev)),
               KVM_MINOR=str(os.minor(st.st_rdev)))
    setpriv = ["setpriv", f"--reuid={UID}", f"--regid={UID}",
               f"--groups={groups}" if groups else "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all"]
    cmd = ["unshare", "--mount", "--propagation", "private",
           "sh", "-c", WRAP, "wrap", str(workdir / "dev"),
           *setpriv, str(LKVM), "run", "--timeout", "30", *map(str, args)]
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, env=env,
                          cwd=workdir / "home")


def user_image(workdir, blocks):
    img = workdir / "home" / "disk.img"
    with open(img, "wb") as f:
        f.truncate(blocks * 4096)
    os.chown(img, UID, UID)
    return img


def test_a_kvm_group_member_runs_a_vm_with_disk_and_user_net(workdir):
    img = user_image(workdir, 64)
    stats = workdir / "home" / "stats.json"
    r = run_as_user(workdir, KVM_GID, "-k", GUEST, "-d", img, "-n", "user",
                    "--stats", stats, "-p", "gen=7 first=0 count=32")
    assert r.returncode == 0, r
    assert "crashdisk: flushed 32" in r.stdout and "PASS" in r.stdout, r
    # The blocks really went to the user's image, and the stats file is
    # the user's own.
    assert (img.read_bytes()[:8] == (0x484b5341524b4c4c).to_bytes(8,
                                                                "little")), r
    assert os.stat(stats).st_uid == UID


def test_without_the_group_the_error_names_dev_kvm(workdir):
    img = user_image(workdir, 64)
    r = run_as_user(workdir, None, "-k", GUEST, "-d", img)
    assert r.returncode != 0, r
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("lkvm:")]
    assert lines and "/dev/kvm" in lines[0], r
    assert "ermission denied" in lines[0], r


def test_only_a_tap_needs_privilege(workdir):
    img = user_image(workdir, 64)
    r = run_as_user(workdir, KVM_GID, "-k", GUEST, "-d", img,
                    "-n", "mode=tap,tapif=lkvmunpriv0")
    assert r.returncode != 0, r
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1, r
    assert "tap" in errors[0] and ("ermission" in errors[0] or
                                   "not permitted" in errors[0]), r
    assert "crashdisk" not in r.stdout, "the guest ran: the error came late"

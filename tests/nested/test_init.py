"""guest/init, mkinitramfs and check.sh on their own, without lkvm.

A Debian cloud kernel boots the L2 initramfs directly under QEMU TCG (no
nesting, a few seconds each), with QEMU's isa-debug-exit on port 0x501, so
that the two ways init ends a VM are checked independently of lkvm: a
non-zero status goes out through the port (QEMU exits with status*2+1),
status 0 powers off through ACPI (QEMU exits 0).
"""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

TIMINGS = []
TTY_STOP = os.path.join(nested.TOP, "tests", "nested", "tty-stop")


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("init"))
    nested.build_helpers()
    kernel = nested.fetch_kernels(["cloud"])["cloud"]
    nested.build_helpers([TTY_STOP])
    initrd = nested.build_l2_initramfs(os.path.join(work, "l2.gz"), kernel,
                                       ["--add", TTY_STOP + ":/tty-stop"])
    return kernel, initrd


def _boot(guest, args, cpus=2, mem=256):
    kernel, initrd = guest
    res = nested.boot_l1(
        kernel["bzimage"], initrd, timeout=120, mem=mem, cpus=cpus,
        append="lkvm.run=" + args,
        qemu_args=["-device", "isa-debug-exit,iobase=0x501,iosize=1"])
    TIMINGS.append("init: lkvm.run=%s: QEMU exit %s in %.1f s" % (
        args, res.returncode, res.elapsed))
    assert not res.timed_out, res.describe()
    return res


@pytest.mark.parametrize("status", [42, 0])
def test_status_ends_vm(guest, status):
    res = _boot(guest, "/check.sh,%d" % status)
    assert res.facts.get("done") == "1", res.describe()
    assert res.returncode == (status * 2 + 1 if status else 0), \
        res.describe()
    assert res.facts["kernel"] == guest[0]["version"]
    assert res.facts["cpus"] == "2"
    # init loaded the virtio set (11 modules with their dependencies).
    assert int(res.facts["modules"]) >= 9, res.describe()
    # QEMU's own CPUID 0xD is consistent: xsave-check agrees with Linux.
    assert res.facts.get("xsave_ok") == "1", res.describe()
    assert res.facts["cpuid_warnings"] == "0", res.describe()


def test_run_splits_and_escapes(guest):
    # lkvm.status=port: even status 0 goes out through the port.
    res = _boot(guest, "/bin/sh,-c,echo%20@@FACT%20arg=[$0]%2C[$1],"
                "a%2Cb,c%25d lkvm.status=port", cpus=1)
    assert res.facts.get("arg") == "[a,b],[c%d]", res.describe()
    assert res.returncode == 0 * 2 + 1, res.describe()


def test_console_drained_past_a_stalled_transmitter(guest):
    """The command leaves 4 KiB queued behind a stopped transmitter (as a
    lost THR-empty interrupt would): init restarts it, says so in the
    kernel log, and every byte reaches the console before power-off."""
    res = _boot(guest, "/tty-stop,16,40", cpus=1)
    text = res.console.replace("\r", "")
    # (the first line follows the firmware's screen-clearing escapes)
    pats = re.findall(r"@@PAT (\d{5}) 0123456789abcdefghijklmnopqrstuvwxyz"
                      r"ABCDEFGHIJKLMN$", text, re.M)
    assert pats == ["%05d" % i for i in range(56)], res.describe()
    assert res.facts.get("tty_stop_end") == "56", res.describe()
    assert "restarted its transmitter 1 times" in text, res.describe()
    assert "bytes queued after" not in text, res.describe()
    assert res.returncode == 0, res.describe()

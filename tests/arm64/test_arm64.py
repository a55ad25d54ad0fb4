"""lkvm on arm64: the cross-built static lkvm boots Debian's cloud-arm64
kernel inside an arm64 QEMU TCG guest (L1) whose /dev/kvm runs on QEMU's
emulated EL2. One L1 boot per GIC version (QEMU's host GIC must match: an
emulated GICv3 cannot host a GICv2 VM), each running several L2 boots
(tests/arm64/l1-run.sh), each L2 reporting what it found
(tests/arm64/l2-check.sh):

  - the device tree lkvm wrote (its model, "lkvm"), with 1 and 2 vCPUs
    (the second comes up through in-kernel PSCI CPU_ON);
  - the GIC it asked for, in /proc/interrupts;
  - a virtio-blk disk over virtio-mmio and over virtio-pci (the ECAM host
    bridge; MSI-X through the ITS on a GICv3, INTx on a GICv2): 256 KiB of
    random bytes written, flushed, read back past the page cache and
    compared;
  - a virtio-net card on an L1 tap: carrier up, and L1 answers pings;
  - the exit status the guest chose (the debug-exit byte on MMIO), and
    PSCI SYSTEM_OFF and SYSTEM_RESET ending lkvm with 0 and 3, as ACPI
    power-off and reset do on x86;
  - a one-line refusal, before any VM exists, of what the arm64 board
    cannot do (legacy virtio-pci: no PCI I/O space) and of a kernel that is
    not an Image.

Needs qemu-system-arm and the arm64 cross build (scripts/install-deps.sh);
`make check-nested-arm64` builds and fetches the rest. LKVM_ARM64_WORK
keeps the initramfs images and the consoles in a directory of your choice.
"""

import base64
import os
import struct
import re
import shutil
import subprocess
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
MKINITRAMFS = os.path.join(TOP, "guest", "initramfs", "mkinitramfs")
LKVM = os.path.join(TOP, "build", "arm64", "lkvm")
INIT = os.path.join(TOP, "build", "arm64", "guest", "init", "init")
QEMU_TIMEOUT = 420      # one L1 run; ~15-30 s on a quiet box

# per GIC: (lkvm options, L2 command-line words, expected lkvm status)
# virtio-pci is the default, as on x86
MMIO = "--virtio-transport mmio"
PCI = "--virtio-transport pci"
BOOTS = {
    "gicv3": [
        ("-c 1 " + MMIO, "arm64test.status=7", 7),
        ("-c 2 " + MMIO + " --dump-dtb /tmp/lkvm.dtb", "arm64test.status=9",
         9),
        ("-c 1", "arm64test.status=11", 11),
        ("-c 2 " + PCI + " --dump-dtb /tmp/lkvm.dtb", "arm64test.status=13",
         13),
        ("-c 2", "arm64test.end=poweroff", 0),
        ("-c 1 " + MMIO, "arm64test.end=reboot", 3),
    ],
    "gicv2": [
        ("-c 1 --irqchip gicv2 " + MMIO, "arm64test.status=7", 7),
        ("-c 2 --irqchip gicv2 " + MMIO, "arm64test.status=9", 9),
        ("-c 1 --irqchip gicv2", "arm64test.status=11", 11),
        ("-c 2 --irqchip gicv2 " + PCI, "arm64test.status=13", 13),
        # refused before any VM exists: (options, the error's words, 1)
        ("-c 1 --virtio-transport pci-legacy", "needs PCI I/O space", 1),
        # ... and leaves no --dump-dtb file behind
        ("-c 1 -k /l1/l2.gz --dump-dtb /tmp/lkvm.dtb", "is gzip-compressed",
         1),
    ],
}
GIC_NAME = {"gicv3": "GICv3", "gicv2": "GIC-0"}
L2_MODULES = ("virtio,virtio_ring,virtio_mmio,virtio_pci_modern_dev,"
              "virtio_pci_legacy_dev,virtio_pci,virtio_blk,virtio_net")


def _cmd(*argv):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout


def _kernel():
    """The cloud-arm64 Image and its modules directory."""
    env = dict(line.split("=", 1) for line in
               _cmd(os.path.join(TOP, "scripts", "fetch-kernel.sh"),
                    "arm64").split())
    return env["arm64_bzimage"], env["arm64_modules"]


def _mkinitramfs(out, *args):
    subprocess.run(["/usr/bin/python3", MKINITRAMFS, "-o", out,
                    "--init", INIT] + list(args), check=True)


@pytest.fixture(scope="module")
def work():
    keep = os.environ.get("LKVM_ARM64_WORK")
    if keep:
        os.makedirs(keep, exist_ok=True)
        yield keep
        return
    d = tempfile.mkdtemp(prefix="lkvm-arm64-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def images(work):
    for f in (LKVM, INIT):
        assert os.path.exists(f), "%s: run make ARCH=arm64 first" % f
    image, modules = _kernel()
    busybox = os.path.join(_cmd(os.path.join(TOP, "scripts",
                                             "arm64-sysroot.sh")).strip(),
                           "bin", "busybox")
    l2 = os.path.join(work, "l2.gz")
    _mkinitramfs(l2, "--busybox", busybox, "--modules-dir", modules,
                 "--modules", L2_MODULES,
                 "--run", os.path.join(HERE, "l2-check.sh"))
    made = {}
    for gic, boots in BOOTS.items():
        lines = os.path.join(work, "boots-" + gic)
        with open(lines, "w") as f:
            for opts, words, status in boots:
                f.write("%s|%s\n" % (opts, words if status != 1 else ""))
        l1 = os.path.join(work, "l1-%s.gz" % gic)
        _mkinitramfs(l1, "--busybox", busybox, "--modules-dir", modules,
                     "--modules", "tun",
                     "--run", os.path.join(HERE, "l1-run.sh"),
                     "--add", LKVM + ":/l1/lkvm",
                     "--add", image + ":/l1/Image",
                     "--add", l2 + ":/l1/l2.gz",
                     "--add", lines + ":/l1/boots")
        made[gic] = l1
    return image, made


def _run_l1(work, image, initrd, gic):
    """Boot L1 under QEMU; its console, and how long it took."""
    version = "3" if gic == "gicv3" else "2"
    argv = ["qemu-system-aarch64",
            "-M", "virt,virtualization=on,gic-version=" + version,
            "-cpu", "max,pauth-impdef=on", "-smp", "2", "-m", "1024",
            "-nographic", "-no-reboot", "-kernel", image, "-initrd", initrd,
            "-append", "console=ttyAMA0 quiet panic=-1 rdinit=/init "
                       "lkvm.status=poweroff"]
    start = time.monotonic()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=QEMU_TIMEOUT)
    console = p.stdout.decode("utf-8", "replace")
    with open(os.path.join(work, "console-%s.log" % gic), "w") as f:
        f.write(console)
    return console, time.monotonic() - start


def _boots(console):
    """Each L2 boot's facts: its lkvm options, the @@L2 lines, the status."""
    boots, cur = [], None
    for line in console.splitlines():
        m = re.match(r"@@L1 boot=(.*)", line.strip())
        if m:
            cur = {"opts": m.group(1).strip()}
            boots.append(cur)
            continue
        m = re.match(r"@@L2 (\w+)=(.*)", line.strip())
        if m and cur is not None:
            cur[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"lkvm: error: (.*)", line.strip())
        if m and cur is not None:
            cur["error"] = m.group(1)
            continue
        m = re.match(r"@@L1 dtb=(\S*)", line.strip())
        if m and cur is not None:
            cur["dtb"] = base64.b64decode(m.group(1))
            continue
        m = re.match(r"@@L1 exit=(\d+)", line.strip())
        if m and cur is not None:
            cur["exit"] = int(m.group(1))
    return boots


@pytest.mark.parametrize("gic", sorted(BOOTS))
def test_arm64_boots(work, images, gic):
    image, l1 = images
    console, secs = _run_l1(work, image, l1[gic], gic)
    print("arm64 %s: L1 run %.1f s" % (gic, secs))
    assert "@@L1 kvm=yes" in console, console[-3000:]
    boots = _boots(console)
    assert len(boots) == len(BOOTS[gic]), console[-3000:]
    for (opts, words, status), b in zip(BOOTS[gic], boots):
        where = "%s, L2 %s: %r" % (gic, words, b)
        assert b["opts"] == opts, where
        assert b.get("exit") == status, where
        if status == 1:
            assert words in b.get("error", ""), where
            assert "model" not in b and "dtb" not in b, where
            continue
        assert b.get("model") == "lkvm", where
        assert b.get("cpus") == opts.split()[1], where
        assert b.get("gic") == GIC_NAME[gic], where
        if MMIO not in opts:
            # under the ECAM host bridge; MSI-X through the ITS on a
            # GICv3, INTx on a GICv2 (no MSI frame)
            assert "/pci0000:00/" in b.get("disk", ""), where
            want = "ITS-MSI" if gic == "gicv3" else GIC_NAME[gic]
        else:
            assert "virtio_mmio" in b.get("disk", ""), where
            want = GIC_NAME[gic]
        assert b.get("virtio_irqs", "").split() == [want], where
        assert b.get("blk") == "ok", where
        assert b.get("carrier") == "1", where
        assert b.get("ping") == "ok", where
        assert ("dtb" in b) == ("--dump-dtb" in opts), where
        if "dtb" in b:
            _check_dumped_dtb(b["dtb"], b)


def _check_dumped_dtb(dtb, boot):
    """--dump-dtb wrote the whole tree the guest booted with (the guest
    saw its model and its two CPUs above): a valid header, the size it
    claims, and the nodes this boot had."""
    magic, total = struct.unpack_from(">II", dtb)
    assert magic == 0xd00dfeed, boot
    assert total == len(dtb), boot
    for s in (b"lkvm", b"arm,gic-v3", b"arm,psci-0.2", b"ns16550a", b"cpu@1",
              b"linux,initrd-start", b"pci-host-ecam-generic",
              b"interrupt-map", b"msi-map"):
        assert s in dtb, (s, boot)

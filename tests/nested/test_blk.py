"""virtio-blk with a real Linux guest: Debian's generic kernel under lkvm,
nested in one QEMU TCG L1 guest (tests/nested/nested.py).

One L1 boot (a module-scope fixture) runs five L2 boots, each checking many
things; the L2 side is tests/nested/blk-check.sh, the L1 side (images,
lkvm, checks of the image bytes after lkvm is gone) tests/nested/blk-job.sh.

  pci          modern virtio-pci: pattern I/O, two disks, ro disk, discard,
               ioeventfd kick counters; makes an ext2 file system on a third
               disk and writes files in it
  pci-legacy   the same over legacy virtio-pci (I/O BAR, INTx), no fs
  mmio         the same over virtio-mmio (ACPI LNRO0005); mounts the pci
               boot's file system again and reads its files back
  noioeventfd  --no-ioeventfd (pci), one disk: pattern I/O; every kick is
               an exit
  fio          fio randwrite + crc32c verify at iodepth 32 on the data disk
               (fio and its libraries come on a read-only ext2 disk built on
               the host: 80+ MiB, too big for the guest's initramfs), then a
               flushed write, after which L1 kills lkvm with SIGKILL and finds
               the data in the image
  poll-*       fio randwrite + crc32c verify at iodepth 1 and 32 with the
               queues polled (--poll on/auto with a window that catches a
               nested guest), over each transport, the disks on one or two
               shared I/O threads (--iothreads)

All guests: the PVH vmlinux of the generic flavour, -m 256, 1 vCPU.

Environment: LKVM_NESTED_WORK keeps the images and the console log in a
directory of your choice; LKVM_NESTED_BLK_REPLAY=console.log re-checks a
saved L1 console without booting; LKVM_NESTED_LKVM=path tests another static
lkvm build than ./lkvm.static.
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BLK_CHECK = os.path.join(HERE, "blk-check.sh")
BLK_JOB = os.path.join(HERE, "blk-job.sh")

MIB = 1 << 20
IO_TIMEOUT = 90         # lkvm --timeout of an L2 boot
FIO_TIMEOUT = 240     # fio: ~800 IOPS on a quiet box, ~80 on a busy one

TRANSPORTS = ("pci", "pci-legacy", "mmio")
# name, mode, transport, fs, lkvm timeout, extra lkvm options
BOOTS = [
    ("pci", "io", "pci", "mkfs", IO_TIMEOUT, []),
    ("pci-legacy", "io", "pci-legacy", "none", IO_TIMEOUT, []),
    ("mmio", "io", "mmio", "verify", IO_TIMEOUT, []),
    ("noioeventfd", "io", "pci", "quick", IO_TIMEOUT, ["--no-ioeventfd"]),
    ("fio", "fio", "pci", "-", FIO_TIMEOUT, []),
    ("poll-pci", "fioqd", "pci", "-", FIO_TIMEOUT,
     ["--poll", "on,max_us=3000", "--iothreads", "1"]),
    ("poll-pci-legacy", "fioqd", "pci-legacy", "-", FIO_TIMEOUT,
     ["--poll", "auto,max_us=3000,start_rate=100"]),
    ("poll-mmio", "fioqd", "mmio", "-", FIO_TIMEOUT,
     ["--poll", "on,max_us=3000", "--iothreads", "2"]),
    # every other boot's disks use io_uring, lkvm's default
    ("poll-sync", "fioqd", "pci", "aio=sync", FIO_TIMEOUT,
     ["--poll", "on,max_us=3000"]),
    # a qcow2 overlay (qemu-img create -b) on a raw base
    ("qcow2", "fioqd", "pci", "qcow2", FIO_TIMEOUT, []),
]
POLL_BOOTS = [b[0] for b in BOOTS if b[1] == "fioqd" and b[3] != "qcow2"]
IO_BOOTS = [b[0] for b in BOOTS if b[1] == "io"]
FULL_BOOTS = [b[0] for b in BOOTS if b[1] == "io" and b[3] != "quick"]

# Printed at the end of the run (see _Summary).
BLK_TIMINGS = []


def _pattern(seed):
    """1 MiB of reproducible pseudo-random bytes."""
    return random.Random(seed).randbytes(MIB)


def build_qcow2_overlay(work):
    """A 64 MiB raw base (blk-check.sh finds the data disk by that size)
    with the pattern at 24 MiB, and a qcow2 overlay on it that names it as
    base.img (next to it)."""
    base = os.path.join(work, "base.img")
    top = os.path.join(work, "top.qcow2")
    with open(base, "wb") as f:
        f.truncate(64 * MIB)
        f.seek(24 * MIB)
        f.write(_pattern("lkvm-blk-pattern"))
    if os.path.exists(top):
        os.unlink(top)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b",
                    "base.img", "-F", "raw", top], cwd=work, check=True)
    return base, top


def stage_qemu_img(files):
    """qemu-img with its libraries and loader into L1 (/l1/qemu-img/), so
    that L1 can check the qcow2 images its guests wrote. None, or why
    not."""
    qimg = shutil.which("qemu-img")
    if not qimg:
        return "qemu-img is not installed on the host (scripts/install-deps.sh)"
    out = subprocess.run(["ldd", qimg], capture_output=True, text=True).stdout
    # the files themselves: mkinitramfs keeps a symlink a symlink
    files["/l1/qemu-img/qemu-img"] = os.path.realpath(qimg)
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+) \(", line)
        if m:
            files["/l1/qemu-img/lib/" + m.group(1)] = \
                os.path.realpath(m.group(2))
            continue
        m = re.match(r"\s*(/\S*ld-linux\S*) \(", line)
        if m:
            files["/l1/qemu-img/ld.so"] = os.path.realpath(m.group(1))
    return None


def build_fio_image(work):
    """An ext2 image with fio, its libraries and their loader, for a
    read-only disk: /fio, /ld.so, /lib/*. Returns (path, None) or
    (None, why not)."""
    fio = shutil.which("fio")
    if not fio:
        return None, "fio is not installed on the host (scripts/install-deps.sh)"
    mke2fs = shutil.which("mke2fs") or "/sbin/mke2fs"
    if not os.path.exists(mke2fs):
        return None, "mke2fs (e2fsprogs) is not installed on the host"
    out = subprocess.run(["ldd", fio], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT,
                         universal_newlines=True).stdout
    stage = os.path.join(work, "fio-stage")
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(os.path.join(stage, "lib"))
    shutil.copy(fio, os.path.join(stage, "fio"))
    loader = None
    for line in out.splitlines():
        if "not found" in line:
            return None, "ldd %s: %s" % (fio, line.strip())
        m = re.match(r"\s*(\S+) => (/\S+) \(", line)
        if m:
            shutil.copy(m.group(2), os.path.join(stage, "lib", m.group(1)))
            continue
        m = re.match(r"\s*(/\S*ld-linux\S*) \(", line)
        if m:
            loader = m.group(1)
    if not loader:
        return None, "no dynamic loader in ldd %s:\n%s" % (fio, out)
    shutil.copy(loader, os.path.join(stage, "ld.so"))
    total = sum(os.path.getsize(os.path.join(d, f))
                for d, _, fs in os.walk(stage) for f in fs)
    size_kib = total * 11 // 10 // 1024 + 8192
    img = os.path.join(work, "fio.img")
    open(img, "wb").close()     # else mke2fs says it creates one
    subprocess.run([mke2fs, "-q", "-F", "-t", "ext2", "-b", "4096", "-m", "0",
                    "-L", "fio", "-d", stage, img, "%dk" % size_kib],
                   check=True)
    shutil.rmtree(stage, ignore_errors=True)
    return img, None


class _Summary:
    """A plugin registered by the fixture: prints BLK_TIMINGS at the end."""

    @staticmethod
    def pytest_terminal_summary(terminalreporter):
        if BLK_TIMINGS:
            terminalreporter.section("nested virtio-blk timings")
            for line in BLK_TIMINGS:
                terminalreporter.write_line(line)


@pytest.fixture(scope="module")
def l1(tmp_path_factory, request):
    request.config.pluginmanager.register(_Summary(), "lkvm-blk-summary")
    work = nested.work_dir(tmp_path_factory, "nested-blk")
    pat = os.path.join(work, "pat.bin")
    two = os.path.join(work, "two.bin")
    with open(pat, "wb") as f:
        f.write(_pattern("lkvm-blk-pattern"))
    with open(two, "wb") as f:
        f.write(_pattern("lkvm-blk-second-disk"))

    replay = os.environ.get("LKVM_NESTED_BLK_REPLAY")
    if replay:
        res = nested.replay(replay)
        res.fio_missing = None
        res.workdir = os.path.dirname(replay)
        _timings(res)
        return res

    lkvm = os.environ.get("LKVM_NESTED_LKVM") or nested.LKVM_STATIC
    if not os.path.exists(lkvm):
        pytest.fail("%s is missing: run 'make lkvm.static'" % lkvm)
    nested.build_helpers()
    kernel = nested.fetch_kernels(["generic"])["generic"]
    initrd = nested.build_l2_initramfs(
        os.path.join(work, "l2-blk.gz"), kernel,
        ["--extra-modules", "ext4,crc32c_generic",
         "--add", BLK_CHECK + ":/blk/blk-check.sh",
         "--add", pat + ":/blk/pat.bin", "--add", two + ":/blk/two.bin"])
    files = {"/l2/vmlinux": kernel["vmlinux"], "/l2/initrd": initrd,
             "/l1/blk-job.sh": BLK_JOB, "/l1/pat.bin": pat,
             "/l1/two.bin": two}
    base, top = build_qcow2_overlay(work)
    files["/l1/base.img"] = base
    files["/l1/top.qcow2"] = top
    qemu_img_missing = stage_qemu_img(files)
    fio_img, fio_missing = build_fio_image(work)
    if fio_img:
        files["/l2/fio.img"] = fio_img
    jobs = []
    for name, mode, transport, fs, limit, extra in BOOTS:
        # The job's bound is later than lkvm's --timeout, leaving time for
        # the checks in L1.
        jobs.append(nested.Job(name, ["sh", "/l1/blk-job.sh", name, mode,
                                      transport, fs, str(limit)] + extra,
                               timeout=limit + 30))
    res = nested.run_l1(jobs, files, l1_kernel=kernel, workdir=work,
                        lkvm=lkvm)
    res.fio_missing = fio_missing
    res.qemu_img_missing = qemu_img_missing
    res.workdir = work
    _timings(res)
    return res


def _timings(res):
    BLK_TIMINGS.append("nested-blk: L1 %s in %.1f s on the host (L1 init at"
                       " %s s); console log %s/console.log" % (
                           "completed" if res.completed else "FAILED",
                           res.elapsed, res.l1.get("boot_time"),
                           res.workdir))
    for name, *_ in BOOTS:
        j = res.jobs.get(name)
        if j:
            BLK_TIMINGS.append("nested-blk: %-12s exit=%s  %s s in L1;"
                               " guest uptime: checks start %s s, end %s s"
                               % (name, j.exit, j.time,
                                  j.facts.get("t_start"),
                                  j.facts.get("uptime")))
    j = res.jobs.get("fio")
    if j and j.facts.get("fio_write_iops"):
        BLK_TIMINGS.append("nested-blk: fio %s randwrite 4k iodepth 32:"
                           " write IOPS=%s (BW %s), verify read IOPS=%s"
                           " (nested TCG: for the record only)" % (
                               j.facts.get("fio_engine"),
                               j.facts.get("fio_write_iops"),
                               j.facts.get("fio_write_bw"),
                               j.facts.get("fio_read_iops")))


def _job(l1, name):
    """The job's result, which must have run to its end."""
    j = l1.jobs.get(name)
    if j is None or not j.ended:
        pytest.fail("L2 boot %s did not %s.\n%s" % (
            name, "start" if j is None else "finish", l1.describe()))
    return j


def _where(j, n=40):
    return "\n--- %s console (job exit %s, %s s in L1) ---\n%s%s" % (
        j.name, j.exit, j.time, j.tail(n),
        "\n--- dmesg ---\n" + "\n".join(j.dmesg) if j.dmesg else "")


def _io_job(l1, name):
    """An io boot that ran its checks and ended with lkvm exit 0."""
    j = _job(l1, name)
    assert j.facts.get("done") == "1", (
        "blk-check.sh did not finish in %s" % name) + _where(j)
    assert j.facts.get("l1_lkvm_rc") == "0", (
        "lkvm exit status %s in %s (0 = guest powered off)" % (
            j.facts.get("l1_lkvm_rc"), name)) + _where(j)
    return j


def _expect(j, problems, key, want, what):
    got = j.facts.get(key)
    if got != want:
        problems.append("%s: %s=%r, expected %r" % (what, key, got, want))


def _stats(j):
    raw = j.facts.get("l1_stats", "")
    try:
        return json.loads(raw)
    except ValueError:
        pytest.fail("%s: --stats output is not JSON: %r" % (j.name, raw[:500])
                    + _where(j))


def test_l1_boots_with_kvm(l1):
    assert l1.l1.get("kvm") == "1", l1.describe()
    assert not l1.timed_out, l1.describe()
    assert l1.completed, l1.describe()


@pytest.mark.parametrize("name", IO_BOOTS)
def test_pattern_io(l1, name):
    """The guest finds the disk, writes 1 MiB with O_DIRECT, reads it back
    (direct and through a dropped page cache); L1 finds it in the image."""
    j = _io_job(l1, name)
    problems = []
    if not j.facts.get("data_dev", "").startswith("/dev/vd"):
        problems.append("no 64 MiB virtio disk in the guest (disks: %s)" %
                        j.facts.get("disks"))
    _expect(j, problems, "pattern_write_rc", "0", "dd write to the disk")
    _expect(j, problems, "pattern_readback", "1", "O_DIRECT read-back")
    _expect(j, problems, "pattern_readback_cached", "1",
            "read-back after drop_caches")
    _expect(j, problems, "l1_pattern_in_image", "1",
            "the pattern in the image file at 1 MiB")
    _expect(j, problems, "data_ro", "0", "rw disk's /sys/block/*/ro")
    _expect(j, problems, "io_errors", "0", "I/O errors in the guest's dmesg")
    _expect(j, problems, "kernel_warnings", "0", "kernel WARN/BUG/Oops")
    _expect(j, problems, "l1_data_size", str(64 * MIB),
            "image size unchanged")
    assert not problems, "%s: %s%s" % (name, "; ".join(problems), _where(j))


@pytest.mark.parametrize("name", FULL_BOOTS)
def test_two_disks(l1, name):
    """vda and vdb at once, with different contents."""
    j = _io_job(l1, name)
    problems = []
    data, two = j.facts.get("data_dev"), j.facts.get("two_dev")
    if not two or two == data:
        problems.append("second disk %r (data disk %r; disks %s)" % (
            two, data, j.facts.get("disks")))
    _expect(j, problems, "two_content", "1",
            "the second disk reads as its image (two.bin)")
    _expect(j, problems, "two_differs", "1", "the two contents differ")
    assert not problems, "%s: %s%s" % (name, "; ".join(problems), _where(j))


@pytest.mark.parametrize("name", FULL_BOOTS)
def test_ro_disk(l1, name):
    """An ro disk: /sys/block/vdX/ro is 1, a write fails in the guest and
    the image is unchanged."""
    j = _io_job(l1, name)
    problems = []
    _expect(j, problems, "two_ro", "1", "/sys/block/<ro disk>/ro")
    if j.facts.get("two_write_rc") in (None, "0"):
        problems.append("a write to the ro disk succeeded in the guest"
                        " (dd status %s)" % j.facts.get("two_write_rc"))
    _expect(j, problems, "two_content_after", "1",
            "the ro disk's contents after the write attempt")
    _expect(j, problems, "l1_two_unchanged", "1", "the ro image file in L1")
    assert not problems, "%s: %s (write error: %s)%s" % (
        name, "; ".join(problems), j.facts.get("two_write_error"), _where(j))


@pytest.mark.parametrize("name", FULL_BOOTS)
def test_discard_punches_holes(l1, name):
    """16 MiB written then blkdiscard'ed: zeros and unallocated in the image
    (L1's /tmp is tmpfs, which punches holes); 2 MiB written and kept:
    allocated."""
    j = _io_job(l1, name)
    problems = []
    if int(j.facts.get("discard_max_bytes") or 0) <= 0:
        problems.append("the guest sees no discard support"
                        " (discard_max_bytes %s)" %
                        j.facts.get("discard_max_bytes"))
    _expect(j, problems, "discard_fill_rc", "0", "writing the 18 MiB")
    _expect(j, problems, "discard_rc", "0", "blkdiscard in the guest")
    if j.facts.get("l1_discarded_md5") != j.facts.get("l1_zeros_md5"):
        problems.append("discarded range [16, 32) MiB is not zeros in the"
                        " image")
    if j.facts.get("l1_control_md5") != j.facts.get("l1_control_expected_md5"):
        problems.append("the kept range [40, 42) MiB is not what was written")
    alloc = int(j.facts.get("l1_data_alloc_kb") or -1)
    # Kept: 1 MiB pattern + 2 MiB control = 3072 KiB. Without hole
    # punching the 16 MiB would still be there: 19456 KiB.
    kept = 3 * 1024
    if not kept <= alloc < kept + 4096:
        problems.append("image allocates %d KiB after the discard; expected"
                        " %d-%d KiB (%d without hole punching)" % (
                            alloc, kept, kept + 4096, kept + 16 * 1024))
    assert not problems, "%s: %s (blkdiscard: %s; before the run %s KiB)%s" % (
        name, "; ".join(problems), j.facts.get("discard_error"),
        j.facts.get("l1_data_alloc_kb_before"), _where(j))


def test_filesystem_survives_reboot(l1):
    """ext2 (busybox mke2fs, the kernel's ext4 driver) made and written in
    the pci boot, mounted again in the mmio boot: the files read back."""
    mk = _io_job(l1, "pci")
    problems = []
    for key, what in (("mkfs_rc", "mke2fs"), ("mount_rc", "mount"),
                      ("fs_write_ok", None), ("umount_rc", "umount")):
        _expect(mk, problems, key, "1" if key == "fs_write_ok" else "0",
                what or "file written and read in the new fs")
    _expect(mk, problems, "l1_fs_magic", "53ef", "ext2 magic in the image")
    assert not problems, "first boot (pci, mkfs): %s (error: %s)%s" % (
        "; ".join(problems), mk.facts.get("fs_error"), _where(mk))
    again = _io_job(l1, "mmio")
    _expect(again, problems, "l1_fs_image", "1", "fs image kept in L1")
    _expect(again, problems, "mount_rc", "0", "mount")
    _expect(again, problems, "fs_hello",
            "lkvm virtio-blk fs written over pci", "hello.txt")
    _expect(again, problems, "fs_data_ok", "1", "data.bin (1 MiB)")
    _expect(again, problems, "fs_two_ok", "1", "dir/two.bin (1 MiB)")
    _expect(again, problems, "umount_rc", "0", "umount")
    assert not problems, "second boot (mmio): %s (error: %s)%s" % (
        "; ".join(problems), again.facts.get("fs_error"), _where(again))


def _queues(stats):
    """[(device index, queue)] of every virtio-blk queue."""
    return [(i, q) for i, d in enumerate(stats.get("devices", []))
            for q in d.get("queues", [])]


@pytest.mark.parametrize("name", TRANSPORTS)
def test_ioeventfd_kicks(l1, name):
    """With ioeventfd (the default) every kick of the disk workload is
    served in the kernel: kicks_exit == 0, kicks_eventfd > 0."""
    j = _io_job(l1, name)
    stats = _stats(j)
    devs = stats.get("devices", [])
    problems = []
    if len(devs) < 2:
        problems.append("%d devices in --stats" % len(devs))
    for i, d in enumerate(devs):
        qs = d.get("queues", [])
        ev = sum(q["kicks_eventfd"] for q in qs)
        ex = sum(q["kicks_exit"] for q in qs)
        req = sum(q["requests"] for q in qs)
        if not d.get("driver_seen"):
            problems.append("device %d: driver not seen" % i)
        if ex != 0:
            problems.append("device %d: %d kicks exited to lkvm" % (i, ex))
        if ev <= 0:
            problems.append("device %d: no eventfd kicks (%d requests)" % (
                i, req))
        if req <= 0:
            problems.append("device %d: no requests" % i)
    assert not problems, "%s: %s\nstats: %s%s" % (
        name, "; ".join(problems), json.dumps(devs), _where(j, 10))


def test_no_ioeventfd_kicks(l1):
    """--no-ioeventfd: kicks are exits (kicks_exit > 0), none by eventfd."""
    j = _io_job(l1, "noioeventfd")
    devs = _stats(j).get("devices", [])
    qs = [q for _, q in _queues({"devices": devs})]
    ex = sum(q["kicks_exit"] for q in qs)
    ev = sum(q["kicks_eventfd"] for q in qs)
    assert ex > 0 and ev == 0, (
        "--no-ioeventfd: kicks_exit %d (want > 0), kicks_eventfd %d (want"
        " 0)\nstats: %s%s" % (ex, ev, json.dumps(devs), _where(j, 10)))


def _fio_job(l1):
    if getattr(l1, "fio_missing", None):
        pytest.fail("fio test not run: " + l1.fio_missing)
    return _job(l1, "fio")


def test_fio_verify(l1):
    """fio randwrite 4k at iodepth 32 over 16 MiB with verify=crc32c: every
    block written, then read back and checked."""
    j = _fio_job(l1)
    f = j.facts
    assert f.get("fio_version", "").startswith("fio-"), (
        "fio does not run in L2: %s" % f.get("fio_version", f.get("fio_rc"))
        + _where(j))
    assert f.get("fio_rc") == "0" and f.get("fio_err") == "0" and \
        f.get("fio_verify_errors") == "0", (
            "fio (%s engine) exit %s, err=%s, %s verify error lines" % (
                f.get("fio_engine"), f.get("fio_rc"), f.get("fio_err"),
                f.get("fio_verify_errors")) + _where(j, 80))
    reads, _, writes = f.get("fio_issued", "").partition(",")
    assert reads == writes and int(writes or 0) == 4096, (
        "fio issued %r reads,writes: expected 4096 4k writes, all read back"
        " by the verify pass" % f.get("fio_issued")) + _where(j, 80)
    assert f.get("fio_write_iops"), "no IOPS in fio's output" + _where(j, 80)


@pytest.mark.parametrize("name", POLL_BOOTS)
def test_fio_verify_polled(l1, name):
    """fio randwrite with crc32c verify at iodepth 1 and 32 while the I/O
    threads poll the queues: every block written, read back and checked,
    lkvm ends cleanly, and polling really served requests without kicks."""
    if getattr(l1, "fio_missing", None):
        pytest.fail("fio test not run: " + l1.fio_missing)
    j = _io_job(l1, name)
    f = j.facts
    problems = []
    for qd, blocks in (("qd1", 512), ("qd32", 2048)):
        if f.get(qd + "_rc") != "0" or f.get(qd + "_err") != "0" or \
                f.get(qd + "_verify_errors") != "0":
            problems.append("%s: fio (%s) exit %s, err=%s, %s verify error"
                            " lines" % (qd, f.get(qd + "_engine"),
                                        f.get(qd + "_rc"), f.get(qd + "_err"),
                                        f.get(qd + "_verify_errors")))
        reads, _, writes = f.get(qd + "_issued", "").partition(",")
        if not (reads == writes and int(writes or 0) == blocks):
            problems.append("%s: issued %r, want %d writes all read back" % (
                qd, f.get(qd + "_issued"), blocks))
    _expect(j, problems, "io_errors", "0", "I/O errors in the guest's dmesg")
    st = _stats(j)
    qs = [q for _, q in _queues(st)]
    if not sum(q.get("poll_hits", 0) for q in qs):
        problems.append("no request found by polling")
    nthreads = 2 if name == "poll-mmio" else 1
    if name not in ("poll-pci-legacy", "poll-sync") and \
            len(st.get("iothreads", [])) != nthreads:
        problems.append("%d I/O threads, want %d" % (
            len(st.get("iothreads", [])), nthreads))
    aio = "sync" if name == "poll-sync" else "io_uring"
    got = [d.get("aio") for d in st.get("devices", [])
           if d.get("type") == "virtio-blk"]
    if not got or got[0] != aio:
        problems.append("the data disk's aio is %s, want %s" % (
            got[0] if got else None, aio))
    assert not problems, "%s: %s\nstats: %s%s" % (
        name, "; ".join(problems), json.dumps(st.get("devices")),
        _where(j, 60))


def test_qcow2_overlay(l1):
    """fio verify at iodepth 1 and 32 on a qcow2 overlay (qemu-img create
    -b base.img): every block written and read back, lkvm ends cleanly,
    the overlay took the writes, the base kept every byte, and qemu-img
    check (run in L1) finds the overlay clean."""
    if getattr(l1, "fio_missing", None):
        pytest.fail("fio test not run: " + l1.fio_missing)
    j = _io_job(l1, "qcow2")
    f = j.facts
    problems = []
    for qd, blocks in (("qd1", 512), ("qd32", 2048)):
        reads, _, writes = f.get(qd + "_issued", "").partition(",")
        if f.get(qd + "_rc") != "0" or f.get(qd + "_verify_errors") != "0" \
                or not (reads == writes and int(writes or 0) == blocks):
            problems.append("%s: fio exit %s, %s verify error lines, issued"
                            " %r" % (qd, f.get(qd + "_rc"),
                                     f.get(qd + "_verify_errors"),
                                     f.get(qd + "_issued")))
    _expect(j, problems, "io_errors", "0", "I/O errors in the guest's dmesg")
    _expect(j, problems, "l1_base_unchanged", "1", "the base image changed")
    if getattr(l1, "qemu_img_missing", None):
        problems.append("qemu-img check not run: " + l1.qemu_img_missing)
    else:
        _expect(j, problems, "l1_qemu_img_check", "0",
                "qemu-img check of the overlay in L1 (0: no errors, no"
                " leaks)")
    grown = int(f.get("l1_top_kb", 0)) - int(f.get("l1_top_kb_before", 0))
    if grown < 8 * 1024:
        problems.append("the overlay grew by %d KiB, want >= 8 MiB" % grown)
    assert not problems, "; ".join(problems) + _where(j, 60)


def test_flushed_data_survives_kill9(l1):
    """Data the guest flushed (O_DIRECT + fsync; buffered + fsync) is in the
    image after lkvm is killed with SIGKILL right after."""
    j = _fio_job(l1)
    f = j.facts
    assert f.get("l1_marker_seen") == "1", (
        "the guest's BLK-KILL-NOW marker never came (lkvm exit %s)" %
        f.get("l1_lkvm_rc")) + _where(j)
    problems = []
    _expect(j, problems, "l1_lkvm_rc", "137", "lkvm killed by SIGKILL")
    _expect(j, problems, "kill_direct_rc", "0", "O_DIRECT write in the guest")
    _expect(j, problems, "kill_fsync_rc", "0", "buffered write + fsync")
    _expect(j, problems, "l1_kill_direct_in_image", "1",
            "O_DIRECT data at 40 MiB in the image")
    _expect(j, problems, "l1_kill_fsync_in_image", "1",
            "fsync'ed data at 42 MiB in the image")
    _expect(j, problems, "io_errors", "0", "I/O errors in the guest's dmesg")
    assert not problems, "; ".join(problems) + _where(j)

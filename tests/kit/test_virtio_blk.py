# SPDX-License-Identifier: GPL-2.0
"""virtio-blk over virtio-mmio, checked from both sides: blk.elf drives the
device from inside the guest (guest/kit/blk.c), and these tests then look at
the image file on the host, lkvm's --stats counters, and the image locks.

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_virtio_blk.py
"""
import ctypes
import ctypes.util
import hashlib
import json
import os
import re
import shutil
import select
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
KIT = ROOT / "guest" / "kit"

VM_TIMEOUT = 30
PROC_TIMEOUT = 60

SECTOR = 512
IMG_SECTORS = 32768                  # 16 MiB
MULTI = 64                           # blk.elf writes 16 sectors here
MULTI_SECTORS = 16
DISCARD = (1024, 256)                # sector, count
WZEROES = (2048, 256)
GUARD = 8                            # sectors around those ranges left alone
SOFT_KVM = "software KVM"            # lkvm's note about kvm_pvm hosts

M64 = (1 << 64) - 1


def pattern_word(seed, sector, w):
    """guest/kit/blk.c pattern_word()."""
    x = (seed * 0x9e3779b97f4a7c15 + sector * 0xbf58476d1ce4e5b9 + w) & M64
    x ^= x >> 31
    x = (x * 0x94d049bb133111eb) & M64
    x ^= x >> 29
    return x


def pattern(seed, sector, count=1):
    return b"".join(struct.pack("<64Q", *(pattern_word(seed, s, w)
                                          for w in range(SECTOR // 8)))
                    for s in range(sector, sector + count))


class Run:
    def __init__(self, rc, out, err, elapsed, stats=None):
        self.rc, self.out, self.err = rc, out, err
        self.elapsed, self.stats = elapsed, stats

    def __str__(self):
        return (f"exit {self.rc} after {self.elapsed:.2f}s\n"
                f"--- stdout ---\n{self.out}--- stderr ---\n{self.err}"
                f"--- stats ---\n{self.stats}")

    # pytest shows the repr of an assertion's operands: the whole run.
    __repr__ = __str__

    def err_lines(self):
        """stderr without the note every run on a software KVM prints."""
        return [l for l in self.err.splitlines() if SOFT_KVM not in l]

    def guest_counts(self):
        m = re.search(r"blk: requests=(\d+) kicks=(\d+) reg_reads=(\d+) "
                      r"reg_writes=(\d+)", self.out)
        assert m, self
        return dict(zip(("requests", "kicks", "reads", "writes"),
                        map(int, m.groups())))


def lkvm_cmd(*args, timeout=VM_TIMEOUT, lkvm=None):
    return [str(lkvm or LKVM), "run", "--timeout", str(timeout),
            "--virtio-transport", "mmio", *map(str, args)]


def lkvm_run(*args, timeout=VM_TIMEOUT, stats=None):
    cmd = lkvm_cmd(*args, timeout=timeout)
    if stats:
        cmd[2:2] = ["--stats", str(stats)]
    return run_cmd(cmd, stats)


def run_cmd(cmd, stats=None, run_cls=None):
    """Run lkvm's command line; a Run (or run_cls) with its --stats JSON."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=PROC_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not end within {PROC_TIMEOUT}s; "
                    f"output so far:\n{(e.stdout or b'').decode(errors='replace')}")
    st = json.loads(Path(stats).read_text()) if stats and Path(stats).exists() \
        else None
    return (run_cls or Run)(proc.returncode,
                            proc.stdout.decode(errors="replace"),
                            proc.stderr.decode(errors="replace"),
                            time.monotonic() - start, st)


def kit(name):
    path = KIT / name
    if not path.exists():
        pytest.fail(f"{path} missing: run make guest-kit")
    return path


def make_image(path, sectors=IMG_SECTORS):
    with open(path, "wb") as f:
        f.truncate(sectors * SECTOR)
    return path


def read_sectors(path, sector, count=1):
    with open(path, "rb") as f:
        f.seek(sector * SECTOR)
        return f.read(count * SECTOR)


def write_sectors(path, sector, data):
    with open(path, "r+b") as f:
        f.seek(sector * SECTOR)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fill_range(path, rng, byte=0xaa):
    """The range plus GUARD sectors each side, allocated and non-zero."""
    start, count = rng
    write_sectors(path, start - GUARD,
                  bytes([byte]) * (count + 2 * GUARD) * SECTOR)


def can_punch_holes(directory):
    """Does this file system free blocks on FALLOC_FL_PUNCH_HOLE?"""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                               ctypes.c_long]
    probe = Path(directory) / "punch-probe"
    probe.write_bytes(b"\xaa" * (1 << 20))
    fd = os.open(probe, os.O_RDWR)
    try:
        os.fsync(fd)
        before = os.fstat(fd).st_blocks
        ok = libc.fallocate(fd, 3, 0, 1 << 19) == 0   # PUNCH_HOLE|KEEP_SIZE
        return ok and os.fstat(fd).st_blocks < before
    finally:
        os.close(fd)
        probe.unlink()


def blk_cmdline(seed, **extra):
    args = {"seed": seed, "sectors": "0,8,last", "multi": MULTI,
            "discard": "%d,%d" % DISCARD, "wzeroes": "%d,%d" % WZEROES,
            "cap": IMG_SECTORS, "stream": 200}
    args.update(extra)
    return " ".join(f"{k}={v}" for k, v in args.items())


def check_image(img, seed):
    last = IMG_SECTORS - 1
    for s in (0, 8, last):
        assert read_sectors(img, s) == pattern(seed, s), f"sector {s}"
    assert read_sectors(img, MULTI, MULTI_SECTORS) == \
        pattern(seed, MULTI, MULTI_SECTORS), "the 16-sector write"
    # Neighbours of what the guest wrote stay as they were (zero).
    for s in (1, 7, 9, MULTI - 1, MULTI + MULTI_SECTORS, last - 1):
        assert read_sectors(img, s) == bytes(SECTOR), f"sector {s} touched"
    for name, (start, count) in (("discard", DISCARD), ("wzeroes", WZEROES)):
        assert read_sectors(img, start, count) == bytes(count * SECTOR), \
            f"{name} range not zero on the host"
        # exactly the range: the guard sectors keep their 0xaa
        for s in (start - GUARD, start - 1, start + count,
                  start + count + GUARD - 1):
            assert read_sectors(img, s) == b"\xaa" * SECTOR, \
                f"{name}: sector {s} outside the range changed"


def check_stats(r, ioeventfd, aio="io_uring"):
    st = r.stats
    assert st, r
    guest = r.guest_counts()
    assert len(st["devices"]) == 1, r
    dev = st["devices"][0]
    assert dev["type"] == "virtio-blk" and dev["transport"] == "mmio", r
    assert dev["aio"] == aio, r
    assert dev["driver_seen"] is True, r
    assert dev["status"] == 0x0f, r     # ACK|DRIVER|FEATURES_OK|DRIVER_OK
    q = dev["queues"][0]
    assert q["requests"] == guest["requests"], r
    assert 0 < q["interrupts"] <= q["requests"], r
    mmio = sum(v["mmio"] for v in st["vcpus"])
    io = sum(v["io"] for v in st["vcpus"])
    assert io > 0, r                   # console and PM timer at least
    # the MMIO exits are the device's, plus blk.elf probing the 12 empty
    # virtio-mmio slots
    slots = {d["base"]: d["exits"] for d in st["mmio_devices"]
             if d["device"] == "virtio-mmio"}
    assert st["mmio_unhandled"] == 12, r
    assert mmio == sum(slots.values()) + st["mmio_unhandled"], r
    if ioeventfd:
        # every kick stayed in the kernel; every other register access
        # is an MMIO exit
        assert q["kicks_exit"] == 0, r
        assert q["kicks_eventfd"] == guest["kicks"] > 0, r
        assert mmio == guest["reads"] + guest["writes"] - guest["kicks"], r
    else:
        assert q["kicks_eventfd"] == 0, r
        assert q["kicks_exit"] == guest["kicks"] > 0, r
        assert mmio == guest["reads"] + guest["writes"], r


@pytest.mark.parametrize("aio", ["io_uring", "sync"])
@pytest.mark.parametrize("ioeventfd", [True, False],
                         ids=["ioeventfd", "no-ioeventfd"])
@pytest.mark.parametrize("mode", [
    {},
    {"indirect": 1},
    {"event_idx": 1},
    {"indirect": 1, "event_idx": 1, "qsize": 8},
], ids=["plain", "indirect", "event_idx", "indirect+event_idx"])
def test_blk_rw(tmp_path, mode, ioeventfd, aio):
    """Both backends: io_uring (the default) and one request at a time."""
    seed = 1000 + len(mode) * 4 + ioeventfd * 2 + (aio == "sync")
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    blocks_before = os.stat(img).st_blocks
    disk = str(img) if aio == "io_uring" else f"{img},aio={aio}"
    args = ["-k", kit("blk.elf"), "-d", disk,
            "-p", blk_cmdline(seed, **mode)]
    if not ioeventfd:
        args.insert(0, "--no-ioeventfd")
    r = lkvm_run(*args, stats=tmp_path / "stats.json")
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    assert "DSDT: LNRO0005 at 0xe0000000 size 0x1000 GSI 5" in r.out, r
    assert not r.err_lines(), r
    check_image(img, seed)
    check_stats(r, ioeventfd, aio)
    if can_punch_holes(tmp_path):
        # DISCARD really gave the host its space back
        assert os.stat(img).st_blocks < blocks_before, r


@pytest.mark.parametrize("opts,ioeventfd", [
    (",direct", True), (",direct", False), (",direct,aio=io_uring", True),
    (",direct,aio=sync", True), ("", True)],
    ids=["direct", "direct-no-ioeventfd", "direct-io_uring", "direct-sync",
         "cached"])
def test_blk_requests_in_flight_together(tmp_path, opts, ioeventfd):
    """The guest keeps 8 reads in flight. On a `direct` disk io_uring has
    them in flight together in the host's kernel, aio=sync one at a time;
    through the page cache each is answered at once (RWF_NOWAIT), with no
    io_uring round trip. Every read is answered: a lost completion would
    stall the stream."""
    if "direct" in opts and not direct_io_works(tmp_path):
        pytest.fail(f"{tmp_path}: its file system takes no O_DIRECT; point "
                    "TMPDIR at a disk-backed one (the nested L1's /tmp is)")
    img = make_image(tmp_path / "disk.img")
    # without ioeventfds a vCPU thread submits; the I/O thread still reaps
    r = lkvm_run(*([] if ioeventfd else ["--no-ioeventfd"]),
                 "-k", kit("blk.elf"), "-d", f"{img}{opts}",
                 "-p", f"seed=9 cap={IMG_SECTORS} stream=400",
                 stats=tmp_path / "stats.json")
    assert r.rc == 0 and "stream: 400 reads" in r.out, r
    dev = r.stats["devices"][0]
    if "sync" in opts:
        assert dev["aio"] == "sync" and dev["max_inflight"] == 1, r
    elif "direct" in opts:
        assert dev["aio"] == "io_uring", r
        assert 2 <= dev["max_inflight"] <= 8, r
    else:
        assert dev["aio"] == "io_uring", r
        # the stream's 400 reads, from the page cache: nearly all at once
        # (in the nested L1, with its small page cache, a few were not)
        assert dev["done_without_waiting"] >= 380, r


def test_blk_unaligned_buffers(tmp_path):
    """virtio buffers need no alignment: scatter-gather at 16 mod 512."""
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = lkvm_run("-k", kit("blk.elf"), "-d", img,
                 "-p", blk_cmdline(77, unaligned=1, indirect=1))
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    check_image(img, 77)


def direct_io_works(directory):
    try:
        fd = os.open(make_image(Path(directory) / "direct-probe", 8),
                     os.O_RDWR | os.O_DIRECT)
    except OSError:
        return False
    os.close(fd)
    return True


@pytest.mark.parametrize("unaligned", [0, 1], ids=["aligned", "unaligned"])
def test_blk_direct(tmp_path, unaligned):
    if not direct_io_works(tmp_path):
        pytest.fail(f"{tmp_path}: its file system takes no O_DIRECT; point "
                    "TMPDIR at a disk-backed one (the nested L1's /tmp is)")
    img = make_image(tmp_path / "disk.img")
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = lkvm_run("-k", kit("blk.elf"), "-d", f"{img},direct",
                 "-p", blk_cmdline(5, unaligned=unaligned))
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    check_image(img, 5)


def test_blk_readonly(tmp_path):
    """-d IMG,ro: F_RO offered, writes/DISCARD/WRITE_ZEROES refused, data
    readable, and the image file not changed by one byte."""
    seed = 31
    img = make_image(tmp_path / "disk.img")
    for s in (0, 8, IMG_SECTORS - 1):
        write_sectors(img, s, pattern(seed, s))
    write_sectors(img, MULTI, pattern(seed, MULTI, MULTI_SECTORS))
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    before = hashlib.sha256(img.read_bytes()).hexdigest()
    blocks = os.stat(img).st_blocks
    r = lkvm_run("-k", kit("blk.elf"), "-d", f"{img},ro",
                 "-p", blk_cmdline(seed, ro=1, indirect=1),
                 stats=tmp_path / "stats.json")
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    assert hashlib.sha256(img.read_bytes()).hexdigest() == before, r
    assert os.stat(img).st_blocks == blocks, r
    check_stats(r, True)


def test_blk_id_stable(tmp_path):
    """GET_ID: the same serial for the same image across runs, another
    one for another image."""
    ids = []
    for name in ("a.img", "a.img", "b.img"):
        img = tmp_path / name
        if not img.exists():
            make_image(img)
        r = lkvm_run("-k", kit("blk.elf"), "-d", f"{img},ro",
                     "-p", "ro=1 seed=1")
        assert "PASS: blk" in r.out, r
        m = re.search(r"blk id: (\S+)", r.out)
        assert m, r
        ids.append(m.group(1))
    assert ids[0] == ids[1], ids
    assert ids[0] != ids[2], ids


def test_blk_unused_disk_hint(tmp_path):
    """A guest that never drives its disk (exit.elf has no virtio driver):
    at exit lkvm names the kernel options the guest probably lacks."""
    img = make_image(tmp_path / "disk.img")
    r = lkvm_run("-k", kit("exit.elf"), "-d", img, "-p", "status=0")
    assert r.rc == 0, r
    hint = [l for l in r.err_lines()
            if "never initialised the virtio-blk disk" in l]
    assert len(hint) == 1, r
    assert str(img) in hint[0] and "CONFIG_VIRTIO_BLK" in hint[0] and \
        "CONFIG_VIRTIO_MMIO" in hint[0], r


def test_blk_unused_disk_hint_reads_config_beside(tmp_path):
    """A kernel named vmlinux-VERSION with config-VERSION beside it (as in
    Debian's /boot): the hint at exit is read from that file, which lkvm
    opens after its seccomp filter is in force."""
    kernel = tmp_path / "vmlinux-9.9.9-kit"
    shutil.copy(kit("exit.elf"), kernel)
    (tmp_path / "config-9.9.9-kit").write_text(
        "CONFIG_VIRTIO_MMIO=y\nCONFIG_VIRTIO_BLK=m\n")
    img = make_image(tmp_path / "disk.img")
    r = lkvm_run("-k", kernel, "-d", img, "-p", "status=0")
    assert r.rc == 0, r
    hint = [l for l in r.err_lines()
            if "never initialised the virtio-blk disk" in l]
    assert len(hint) == 1, r
    assert "CONFIG_VIRTIO_BLK=m, and it has no initramfs to load " \
        "virtio_blk from" in hint[0], r


def test_blk_second_disk(tmp_path):
    """Two disks take slots 0 and 1 (GSIs 5 and 6); the guest writes to the
    second only, and the DSDT describes slot 1 with GSI 6."""
    a = make_image(tmp_path / "a.img")
    b = make_image(tmp_path / "b.img")
    fill_range(b, DISCARD)
    fill_range(b, WZEROES)
    r = lkvm_run("-k", kit("blk.elf"), "-d", a, "-d", b,
                 "-p", blk_cmdline(9, dev=1, ndev=2))
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    assert "DSDT: LNRO0005 at 0xe0001000 size 0x1000 GSI 6" in r.out, r
    assert "interrupts: GSI 6" in r.out, r
    check_image(b, 9)
    with open(a, "rb") as f:
        assert not any(f.read()), "the first disk was written"


def test_blk_image_size_not_sector_multiple(tmp_path):
    """A tail shorter than a sector is invisible, with a warning."""
    img = tmp_path / "odd.img"
    with open(img, "wb") as f:
        f.truncate(IMG_SECTORS * SECTOR + 100)
    fill_range(img, DISCARD)
    fill_range(img, WZEROES)
    r = lkvm_run("-k", kit("blk.elf"), "-d", img, "-p", blk_cmdline(3))
    assert r.rc == 0, r
    assert "PASS: blk" in r.out, r
    assert any("multiple of 512" in l for l in r.err_lines()), r
    check_image(img, 3)
    assert img.stat().st_size == IMG_SECTORS * SECTOR + 100


# ---- image locking: OFD locks, shared for ro, exclusive for rw ----

class Background:
    """An lkvm that holds the image: hang.elf until killed or --timeout."""

    def __init__(self, disk):
        self.proc = subprocess.Popen(
            lkvm_cmd("-k", kit("hang.elf"), "-d", disk, timeout=20),
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)

    def wait_running(self):
        """The guest runs, so lkvm opened and locked the disk."""
        out = b""
        deadline = time.monotonic() + 10
        while b"hanging" not in out and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                out += os.read(self.proc.stdout.fileno(), 4096)
        assert b"hanging" in out, (out, self.proc.stderr.read()
                                   if self.proc.poll() is not None else b"")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.mark.parametrize("first,second,shared", [
    ("", "", False),
    ("", ",ro", False),
    (",ro", "", False),
    (",ro", ",ro", True),
], ids=["rw+rw", "rw+ro", "ro+rw", "ro+ro"])
def test_blk_image_lock(tmp_path, first, second, shared):
    img = make_image(tmp_path / "disk.img", 2048)
    bg = Background(f"{img}{first}")
    try:
        bg.wait_running()
        r = lkvm_run("-k", kit("exit.elf"), "-d", f"{img}{second}",
                     timeout=10)
    finally:
        bg.stop()
    if shared:
        assert r.rc == 0, r
        # exit.elf has no virtio driver: the one line is lkvm's hint
        lines = r.err_lines()
        assert len(lines) == 1 and "never initialised" in lines[0], r
    else:
        assert r.rc != 0, r
        lines = r.err_lines()
        assert len(lines) == 1 and "in use" in lines[0], r
        assert "hello from the guest kit" not in r.out, r
    # and once the first is gone the image is free again
    r = lkvm_run("-k", kit("exit.elf"), "-d", img, timeout=10)
    assert r.rc == 0, r


def test_blk_same_image_twice(tmp_path):
    """One lkvm given the same image twice must not open it twice rw."""
    img = make_image(tmp_path / "disk.img", 2048)
    r = lkvm_run("-k", kit("exit.elf"), "-d", img, "-d", img, timeout=10)
    assert r.rc != 0, r
    lines = r.err_lines()
    assert len(lines) == 1 and "in use" in lines[0], r


# ---- qcow2 images (disk/qcow2.c), made and checked by QEMU's own tools ----

def qemu_img(*args, check=True):
    return subprocess.run(["qemu-img", *map(str, args)], check=check,
                          capture_output=True, text=True)


def qcow2_to_raw(img, out):
    """The guest-visible bytes of a qcow2, after qemu-img check finds it
    clean (no corruption, no leaks)."""
    r = qemu_img("check", img, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    qemu_img("convert", "-O", "raw", img, out)
    return out


@pytest.mark.parametrize("compat", ["0.10", "1.1"], ids=["v2", "v3"])
def test_blk_qcow2(tmp_path, compat):
    """The whole blk.elf run (writes, 16-sector scatter-gather, DISCARD,
    WRITE_ZEROES, 400 reads in a stream) on a qcow2 made by qemu-img: what
    QEMU reads back from the image is what a raw image would hold."""
    seed = 61 if compat == "1.1" else 62
    raw = make_image(tmp_path / "guards.img")
    fill_range(raw, DISCARD)    # the guard sectors check_image looks for
    fill_range(raw, WZEROES)
    img = tmp_path / "disk.qcow2"
    qemu_img("convert", "-q", "-O", "qcow2", "-o", f"compat={compat}", raw,
             img)
    r = lkvm_run("-k", kit("blk.elf"), "-d", img,
                 "-p", blk_cmdline(seed, indirect=1, event_idx=1),
                 stats=tmp_path / "stats.json")
    assert r.rc == 0 and "PASS: blk" in r.out, r
    assert not r.err_lines(), r
    check_image(qcow2_to_raw(img, tmp_path / "out.raw"), seed)
    assert r.stats["devices"][0]["aio"] == "io_uring", r


def test_blk_qcow2_backing_and_compressed(tmp_path):
    """A compressed qcow2 (qemu-img convert -c) of a base image reads the
    base's pattern in the guest; an overlay on the base (qemu-img create
    -b) takes the guest's writes while the base keeps every byte, and
    reads what it did not write through to the base."""
    seed, base_seed = 71, 72
    base = make_image(tmp_path / "base.img")
    for s in (0, 8, IMG_SECTORS - 1):
        write_sectors(base, s, pattern(base_seed, s))
    write_sectors(base, MULTI, pattern(base_seed, MULTI, MULTI_SECTORS))
    write_sectors(base, 4000, pattern(base_seed, 4000))
    comp = tmp_path / "comp.qcow2"
    qemu_img("convert", "-q", "-c", "-O", "qcow2", base, comp)
    assert "compression type" in qemu_img("info", comp).stdout
    r = lkvm_run("-k", kit("blk.elf"), "-d", f"{comp},ro",
                 "-p", blk_cmdline(base_seed, ro=1))
    assert r.rc == 0 and "PASS: blk" in r.out, r

    before = hashlib.sha256(base.read_bytes()).hexdigest()
    top = tmp_path / "top.qcow2"
    qemu_img("create", "-q", "-f", "qcow2", "-b", base.name, "-F", "raw",
             top)
    r = lkvm_run("-k", kit("blk.elf"), "-d", top,
                 "-p", blk_cmdline(seed, discard="%d,%d" % (8192, 256),
                                   wzeroes="%d,%d" % (8448, 256)))
    assert r.rc == 0 and "PASS: blk" in r.out, r
    assert hashlib.sha256(base.read_bytes()).hexdigest() == before
    out = qcow2_to_raw(top, tmp_path / "out.raw")
    for s in (0, 8, IMG_SECTORS - 1):
        assert read_sectors(out, s) == pattern(seed, s), f"sector {s}"
    # not written by the guest: the base's, through the backing file
    assert read_sectors(out, 4000) == pattern(base_seed, 4000)
    assert read_sectors(out, 9) == bytes(SECTOR)


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_blk_qcow2_killed_mid_writes(tmp_path, sig):
    """lkvm killed while the guest writes to a qcow2 (4 KiB clusters, so
    every write allocates): qemu-img check finds no corruption, each time.
    SIGKILL may leak a cluster (as QEMU's images may); SIGTERM stops the VM
    and drains its requests first, so it leaves not even that."""
    img = tmp_path / "k.qcow2"
    for delay in (0.15, 0.25, 0.35, 0.5):
        qemu_img("create", "-q", "-f", "qcow2", "-o", "cluster_size=4096",
                 img, IMG_SECTORS * SECTOR)
        p = subprocess.Popen([str(LKVM), "run", "-k", kit("blk.elf"), "-d",
                              str(img), "-p", blk_cmdline(81 + int(delay * 10))],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(getattr(signal, sig))
        p.wait(timeout=PROC_TIMEOUT)
        r = qemu_img("check", img, check=False)
        assert r.returncode in ((0, 3) if sig == "SIGKILL" else (0,)), \
            r.stdout + r.stderr

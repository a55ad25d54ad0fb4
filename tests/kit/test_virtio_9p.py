# SPDX-License-Identifier: GPL-2.0
"""--9p DIR,TAG[,ro]: lkvm's virtio-9p, driven by guest/kit/p9.elf with
hand-built 9P2000.L messages on each transport (and with notifies served
in vCPU threads). The guest reads, walks, lists, creates, renames and
removes through a read-write share, and is refused every change on a
read-only share of the same directory; ".." never leaves the share, no
symlink is ever followed, malformed messages get an error (or break the
device until it is reset) and the device keeps working. From the host:
nothing outside the share changed, nothing that was in it changed, what
the guest made is there, and --stats agrees with the guest's counts. A
race swaps a directory of the share with a symlink to one outside while
the guest walks into it: the guest never reads the outside file."""
import ctypes
import hashlib
import json
import os
import re
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from test_virtio_blk import LKVM, PROC_TIMEOUT, ROOT, SOFT_KVM, kit

TRANSPORTS = {"pci": "transport=pci", "pci-legacy": "transport=legacy",
              "mmio": "transport=mmio"}
SECRET = "TOP-SECRET-OUTSIDE"
HELLO = "hello from host\n"
RACE_ITERS = 300
MAX_SWAPS = 2_000_000               # the race's bound, should lkvm hang

# What the guest makes in the read-write share: required, and allowed
# (a link to a symlink, a fifo and a device node may be refused).
MADE = {"created.txt", "renamed_dir", "sub/moved.txt", "made_link",
        "suid_try"}
MAY_MAKE = {"hl_link", "made_fifo", "cdev"}


def layout(tmp_path):
    """tmp_path/fs: outside/ with the secret, share/ with files, a
    directory, symlinks out of it (absolute, relative, to a directory), a
    hard link, a fifo, and swap/ (inside) with swap_alt (a symlink to
    outside/) for the race."""
    fs = tmp_path / "fs"
    outside, share = fs / "outside", fs / "share"
    outside.mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    share.mkdir()
    (share / "hello.txt").write_text(HELLO)
    (share / "sub" / "deeper").mkdir(parents=True)
    (share / "sub" / "inner.txt").write_text("inner\n")
    os.symlink(outside / "secret.txt", share / "link_out")
    os.symlink("../outside/secret.txt", share / "link_rel")
    os.symlink(outside, share / "dir_link")
    os.link(share / "hello.txt", share / "hard_in")
    os.mkfifo(share / "fifo")
    (share / "swap").mkdir()
    (share / "swap" / "secret.txt").write_text("inside")
    os.symlink(outside, share / "swap_alt")
    return fs, share, outside


def give_xattrs(share, outside):
    """user.kit on hello.txt and on the outside secret, for the guest to
    see the one and not the other; False where the host has no xattrs."""
    try:
        os.setxattr(share / "hello.txt", "user.kit", b"inside-xattr")
        os.setxattr(outside / "secret.txt", "user.kit", b"outside-xattr")
    except OSError:
        return False
    return True


def entry(path):
    """Everything a change to path would alter, never following a link
    (and never opening a fifo)."""
    st = os.lstat(path)
    body = None
    if stat.S_ISREG(st.st_mode):
        body = hashlib.sha256(path.read_bytes()).hexdigest()
    elif stat.S_ISLNK(st.st_mode):
        body = os.readlink(path)
    xattrs = {n: os.getxattr(path, n, follow_symlinks=False)
              for n in os.listxattr(path, follow_symlinks=False)}
    return {"kind": stat.S_IFMT(st.st_mode), "mode": stat.S_IMODE(st.st_mode),
            "uid": st.st_uid, "gid": st.st_gid, "size": st.st_size,
            "mtime": st.st_mtime_ns, "ino": st.st_ino, "body": body,
            "xattrs": xattrs}


def snapshot(root):
    """relative path -> entry() for root and all below it."""
    out = {".": entry(root)}
    for top, dirs, files in os.walk(root):     # not into linked dirs
        for name in dirs + files:
            path = Path(top, name)
            out[str(path.relative_to(root))] = entry(path)
    return out


def lasting(e):
    """What the share's own entries must keep: a directory's times change
    as the guest adds names, and a symlink's own times and owner are the
    guest's to set (Tsetattr on it must not reach its target)."""
    if e["kind"] == stat.S_IFDIR:
        return e["kind"], e["mode"]
    if e["kind"] == stat.S_IFLNK:
        return e["kind"], e["body"]
    return (e["kind"], e["mode"], e["uid"], e["gid"], e["size"], e["mtime"],
            e["body"], e["xattrs"])


def run_p9(tmp_path, args, cmdline):
    stats = tmp_path / "stats.json"
    p = subprocess.run([str(LKVM), "run", "--timeout", "60", "--stats",
                        str(stats), *args, "-k", str(kit("p9.elf")),
                        "-p", cmdline],
                       cwd=ROOT, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=PROC_TIMEOUT)
    return p, (json.loads(stats.read_text()) if stats.exists() else None)


def guest_counts(stdout, tag):
    m = re.search(rf"^9p: {tag}: (\d+) requests, (\d+) resets, "
                  r"(\d+) errors$", stdout, re.M)
    assert m, stdout
    return int(m[1]), int(m[2]), int(m[3])


def check_stats(p, st, tags):
    """Each share in --stats once, its requests, breaks and Rlerrors as
    the guest counted them; no warning but the software-KVM note and, if
    the guest broke a device, the one line that says so."""
    devs = {d["tag"]: d for d in st["devices"] if d["type"] == "virtio-9p"}
    assert sorted(devs) == sorted(tags), st["devices"]
    broken = 0
    for tag in tags:
        dev = devs[tag]
        sent, resets, errors = guest_counts(p.stdout, tag)
        assert dev["driver_seen"], dev
        assert dev["read_only"] == (tag == "kitro"), dev
        assert dev["times_broken"] == resets, (dev, resets)
        assert dev["errors"] == errors, (dev, errors)
        # a chain the device broke on may not count as served
        served = dev["queues"][0]["requests"]
        assert sent - resets <= served <= sent, (dev, sent, resets)
        broken += resets
    warnings = [line for line in p.stderr.splitlines()
                if line.startswith("lkvm:") and SOFT_KVM not in line and
                not (broken and "needs a reset" in line)]
    assert not warnings, p.stderr


def check_share(share, before, after, xattrs):
    """Nothing that was in the share changed; what the guest made is
    there, as it made it; nothing else appeared."""
    for path, e in before.items():
        assert path in after, f"{path} is gone"
        assert lasting(after[path]) == lasting(e), (path, e, after[path])
    new = set(after) - set(before)
    assert MADE <= new <= MADE | MAY_MAKE, sorted(new)
    assert (share / "created.txt").read_text() == "written by the guest\n"
    if xattrs:
        assert after["created.txt"]["xattrs"] == {"user.guest":
                                                  b"guest-xattr"}
    assert after["renamed_dir"]["kind"] == stat.S_IFDIR
    assert after["sub/moved.txt"]["kind"] == stat.S_IFREG
    assert os.readlink(share / "made_link") == "../outside/secret.txt"
    # a hostile guest plants no privileges on the host
    assert not after["suid_try"]["mode"] & 0o6000, after["suid_try"]
    for path, e in after.items():
        assert e["kind"] not in (stat.S_IFCHR, stat.S_IFBLK), (path, e)
    if "hl_link" in new:
        # a hard link to the symlink itself, not to what it points at
        assert after["hl_link"]["body"] == before["link_out"]["body"]
        assert after["hl_link"]["kind"] == stat.S_IFLNK


@pytest.mark.parametrize("transport,threads", [
    ("pci", []), ("pci-legacy", []), ("mmio", []),
    ("pci", ["--no-ioeventfd"]), ("mmio", ["--iothreads", "1"])],
    ids=["pci", "pci-legacy", "mmio", "pci-no-ioeventfd", "mmio-iothreads"])
def test_9p(tmp_path, transport, threads):
    """Each share is served by a thread of its own (the only one that may
    work on files), also when a vCPU takes the notifies
    (--no-ioeventfd) or a pool serves the other devices (--iothreads)."""
    fs, share, outside = layout(tmp_path)
    xattrs = give_xattrs(share, outside)
    out_before, share_before = snapshot(outside), snapshot(share)
    p, st = run_p9(tmp_path, ["--9p", f"{share},kit9p",
                              "--9p", f"{share},kitro,ro",
                              "--virtio-transport", transport, *threads],
                   TRANSPORTS[transport] + (" xattr" if xattrs else ""))
    assert p.returncode == 0 and "PASS: 9p" in p.stdout, p.stdout + p.stderr
    assert SECRET not in p.stdout
    assert f"9p: link_out -> {outside}/secret.txt\n" in p.stdout, p.stdout
    check_stats(p, st, ["kit9p", "kitro"])
    names = [t["name"] for t in st["iothreads"]]
    assert names.count("9p-io") == 2, names
    assert snapshot(outside) == out_before
    assert sorted(os.listdir(fs)) == ["outside", "share"]
    check_share(share, share_before, snapshot(share), xattrs)


def swapper(share, stop, swaps, errors):
    """Exchanges share/swap and share/swap_alt (a directory and a symlink
    to outside/) as fast as it can, until stop or MAX_SWAPS."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = libc.renameat2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                          ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    a, b = bytes(share / "swap"), bytes(share / "swap_alt")
    while not stop.is_set() and swaps[0] < MAX_SWAPS:
        if renameat2(at_fdcwd, a, at_fdcwd, b, rename_exchange):
            errors.append(os.strerror(ctypes.get_errno()))
            return
        swaps[0] += 1


def test_swap_race(tmp_path):
    """The host swaps a directory of the share with a symlink out of it
    while the guest walks into it and reads: the guest may be refused,
    may read what is inside, and never reads the outside."""
    fs, share, outside = layout(tmp_path)
    out_before = snapshot(outside)
    stop, swaps, errors = threading.Event(), [0], []
    t = threading.Thread(target=swapper, args=(share, stop, swaps, errors))
    t.start()
    try:
        p, st = run_p9(tmp_path, ["--9p", f"{share},kit9p"],
                       f"transport=pci race={RACE_ITERS}")
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert p.returncode == 0 and "PASS: 9p" in p.stdout, p.stdout + p.stderr
    assert SECRET not in p.stdout
    m = re.search(rf"^9p: race: (\d+) of {RACE_ITERS} reads succeeded$",
                  p.stdout, re.M)
    assert m and int(m[1]) > 0, p.stdout
    assert swaps[0] > 0
    print(f"race: {m[1]} of {RACE_ITERS} reads, {swaps[0]} swaps")
    check_stats(p, st, ["kit9p"])
    assert snapshot(outside) == out_before


def test_no_9p_without_the_option(tmp_path):
    """No --9p, no device: the guest finds none, and --stats lists none."""
    p, st = run_p9(tmp_path, [], "transport=pci")
    assert p.returncode != 0 and "no virtio-9p device" in p.stdout, p.stdout
    assert st["devices"] == [], st


@pytest.mark.parametrize("spec", ["{missing},tag", "{share}", "{file},tag",
                                  "{share},", "{share},tag,rw"],
                         ids=["missing-dir", "no-tag", "not-a-dir",
                              "empty-tag", "bad-flag"])
def test_bad_option(tmp_path, spec):
    """A share that cannot be served is an error, naming --9p, before the
    guest runs."""
    fs, share, outside = layout(tmp_path)
    arg = spec.format(missing=tmp_path / "nope", share=share,
                      file=share / "hello.txt")
    p = subprocess.run([str(LKVM), "run", "--9p", arg,
                        "-k", str(kit("exit.elf"))],
                       cwd=ROOT, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=PROC_TIMEOUT)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "--9p" in p.stderr, p.stderr
    assert "unknown option '--9p'" not in p.stderr, p.stderr
    assert "hello from the guest kit" not in p.stdout

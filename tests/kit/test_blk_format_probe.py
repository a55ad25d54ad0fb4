# SPDX-License-Identifier: GPL-2.0
"""The format-probing escape, end to end with a real guest (guest/kit/blkhdr.c).

A guest with a writable raw disk opened without format= writes a qcow2 header
naming a host file (here a stand-in for ~/.ssh/id_ed25519) as its backing file
into its own sector 0. An lkvm that probes the image at its next open would
take the disk for a qcow2 image and serve that host file to the guest. lkvm
must refuse the write (IOERR), say so in one line, and keep the VM running;
the next `lkvm run` of the same disk serves it as raw still, and the guest
reads its own zeroes, not the secret. With format=raw the user said raw: the
write lands, and a later run without format= still cannot reach the secret
(the backing file lies outside the image's directory: refused at open).

Run with: /usr/bin/python3 -m pytest -q tests/kit/test_blk_format_probe.py
"""
import re

import pytest

from test_virtio_blk import kit, lkvm_run, make_image, read_sectors

HEAD = 4096                     # what blkhdr.elf reads and hashes
IOERR = 1                       # VIRTIO_BLK_S_IOERR
REFUSED = "refused a guest write"


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & ((1 << 64) - 1)
    return h


def guest_head(r):
    """What the guest read of its disk's first 4 KiB: (hash, first bytes)."""
    m = re.search(r"blkhdr: head ([0-9a-f]{16}) ([0-9a-f]{32})", r.out)
    assert m, r
    return int(m.group(1), 16), bytes.fromhex(m.group(2))


def setup_disk(tmp_path):
    """The guest's raw disk in vm/, the host's secret in home/, apart."""
    (tmp_path / "vm").mkdir()
    (tmp_path / "home").mkdir()
    secret = tmp_path / "home" / "id_ed25519"
    secret.write_bytes((b"-----BEGIN OPENSSH PRIVATE KEY-----\n" * 256)[:2 * HEAD])
    return make_image(tmp_path / "vm" / "disk.img"), secret


def blkhdr(disk, *params):
    return lkvm_run("-k", kit("blkhdr.elf"), "-d", disk, "-p", " ".join(params))


@pytest.mark.parametrize("opts", [",aio=io_uring", ",aio=sync", ",direct"],
                         ids=["io_uring", "sync", "direct"])
def test_guest_cannot_turn_its_raw_disk_into_qcow2(tmp_path, opts):
    img, secret = setup_disk(tmp_path)
    r = blkhdr(f"{img}{opts}", "write=1", f"backing={secret}")
    assert r.rc == 0 and "PASS: blkhdr" in r.out, r
    assert f"blkhdr: header write status {IOERR}" in r.out, r
    said = [line for line in r.err_lines() if REFUSED in line]
    assert len(said) == 1 and str(img) in said[0] and "qcow2" in said[0], r
    assert r.err_lines() == said, r
    # nothing of the header landed; the plain write after it did
    assert read_sectors(img, 0, HEAD // 512) == bytes(HEAD)
    assert read_sectors(img, 64) == b"\x77" * 512
    assert guest_head(r) == (fnv1a64(bytes(HEAD)), bytes(16)), r

    # the next run (as the next boot of a --reboot VM): raw, no secret
    r = blkhdr(f"{img}{opts}")
    assert r.rc == 0 and "PASS: blkhdr" in r.out, r
    assert not r.err_lines(), r
    assert guest_head(r) == (fnv1a64(bytes(HEAD)), bytes(16)), r
    assert guest_head(r)[0] != fnv1a64(secret.read_bytes()[:HEAD])


def test_format_raw_takes_the_header_and_still_hides_the_secret(tmp_path):
    img, secret = setup_disk(tmp_path)
    r = blkhdr(f"{img},format=raw", "write=1", f"backing={secret}")
    assert r.rc == 0 and "PASS: blkhdr" in r.out, r
    assert "blkhdr: header write status 0" in r.out, r
    assert not r.err_lines(), r
    header = read_sectors(img, 0)
    assert header[:4] == b"QFI\xfb" and str(secret).encode() in header
    assert guest_head(r) == (fnv1a64(read_sectors(img, 0, HEAD // 512)),
                             header[:16]), r

    # probed now, it is a qcow2 image; its backing file is outside vm/
    r = blkhdr(str(img))
    assert r.rc != 0 and "blkhdr" not in r.out, r
    lines = r.err_lines()
    assert len(lines) == 1 and "outside the image's directory" in lines[0] \
        and str(img) in lines[0] and str(secret) in lines[0], r
    # and said raw again, the guest's own bytes
    r = blkhdr(f"{img},format=raw")
    assert r.rc == 0 and guest_head(r)[1] == header[:16], r

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Seeds for tests/fuzz/fuzz_qcow2.c, into tests/fuzz/corpus/qcow2/ (or
the folder given): images qemu-img makes (mode 0: a 16-bit length, the
image, then requests), and random bytes for the fuzzer's image builder
(mode 1). Deterministic; needs qemu-img and qemu-io. (The corpus also
keeps the four images of the target's first version, behind a 0 byte.)"""
import hashlib
import os
import random
import struct
import subprocess
import sys
import tempfile

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus", "qcow2")


def put(data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def requests(n, rnd):
    """kind, sector, length: as request() in fuzz_qcow2.c takes them"""
    return b"".join(bytes([rnd.randrange(5)]) +
                    struct.pack("<HH", rnd.randrange(2048), rnd.randrange(128))
                    for _ in range(n))


def main():
    rnd = random.Random(5)
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "backing.raw")
        with open(base, "wb") as f:
            f.write(bytes((i // 512 * 3 + 1) & 255 for i in range(65536)))
        made = {
            "a": ["create", "-o", "cluster_size=512", "1M"],
            "b": ["create", "-o", "compat=0.10,cluster_size=1024", "1M"],
            "c": ["create", "-o", "cluster_size=4096", "-b", "backing.raw",
                  "-F", "raw", "1M"],
        }
        for name, args in made.items():
            img = os.path.join(tmp, name + ".qcow2")
            subprocess.run(["qemu-img", args[0], "-q", "-f", "qcow2"] +
                           args[1:-1] + [img, args[-1]], check=True, cwd=tmp)
        subprocess.run(["qemu-img", "convert", "-q", "-c", "-O", "qcow2", "-o",
                        "cluster_size=4096", base,
                        os.path.join(tmp, "d.qcow2")], check=True)
        subprocess.run(["qemu-io", "-c", "write -P 7 0 8k", "-c",
                        "write -P 9 20k 4k", os.path.join(tmp, "a.qcow2")],
                       check=True, capture_output=True)
        for name in "abcd":
            with open(os.path.join(tmp, name + ".qcow2"), "rb") as f:
                img = f.read()
            put(b"\0" + struct.pack("<H", len(img)) + img + requests(24, rnd))
    for _ in range(24):
        put(b"\1" + bytes(rnd.randrange(256) for _ in range(300)))


if __name__ == "__main__":
    main()

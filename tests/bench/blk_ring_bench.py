#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""virtio-blk device throughput without guest cost, next to fio.

Runs blk_ring_bench (a host thread plays the virtio driver against lkvm's
virtio-blk and its I/O thread) on a raw image in /dev/shm for 4 KiB random
reads at QD1 and QD32, 4 KiB random writes at QD32 and 1 MiB sequential
reads, with each of the disk's backends (aio=io_uring, aio=sync), and fio
with the same pattern on the same file when fio is installed (its best
engine of io_uring, libaio and psync: on tmpfs the synchronous one often
wins). Then a fully allocated qcow2 against the raw file (reads, and
writes over allocated clusters, with and without a FLUSH every 16th
request), allocating writes on a new qcow2 against a sparse raw file (on
tmpfs, and on the disk under /var/tmp, where FLUSHes cost what the disk
takes), and the disk under /var/tmp with O_DIRECT, where requests in
flight together pay off.
Prints requests/s, CPU per request (lkvm: the device's, without the driver
thread), and lkvm / fio as a ratio.
"""
import json
import os
import shutil
import subprocess
import sys

SECONDS = 3
CASES = [  # (bench mode, queue depth, fio rw, fio bs)
    ("randread", 1, "randread", "4k"),
    ("randread", 32, "randread", "4k"),
    ("randwrite", 32, "randwrite", "4k"),
    ("seqread1m", 8, "read", "1m"),
]


AIO = ("io_uring", "sync")


def run_lkvm(binary, image, mode, qd):
    """image may carry -d options: IMAGE,direct,aio=sync"""
    out = subprocess.run([binary, image, mode, str(qd), str(SECONDS)],
                         check=True, capture_output=True, text=True).stdout
    _, _, iops, dev_us, total_us, errors = out.split()[:6]
    if int(errors):
        sys.exit(f"{mode} QD{qd}: {errors} requests failed")
    return float(iops), float(dev_us)


def run_fio(image, rw, bs, qd, direct=False):
    """fio's best single-job figure over the engines that may win here."""
    best = (None, None, None)
    for engine in ("io_uring", "libaio", "psync"):
        iops, us = run_fio_engine(image, rw, bs, qd, engine, direct)
        if iops and (best[0] is None or iops > best[0]):
            best = (iops, us, engine)
    return best


def run_fio_engine(image, rw, bs, qd, engine, direct=False):
    fio = shutil.which("fio")
    if not fio:
        return None, None
    out = subprocess.run(
        [fio, "--name=b", f"--filename={image}", f"--rw={rw}", f"--bs={bs}",
         f"--iodepth={qd}", f"--ioengine={engine}",
         f"--direct={int(direct)}",
         f"--runtime={SECONDS}", "--time_based", "--randrepeat=0",
         "--output-format=json"], capture_output=True, text=True)
    start = out.stdout.find("{")
    if out.returncode or start < 0:
        return None, None
    job = json.loads(out.stdout[start:])["jobs"][0]
    side = job["read"] if "read" in rw else job["write"]
    iops = side["iops"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * SECONDS
    return iops, cpu_s / max(iops * SECONDS, 1) * 1e6


def table(title, rows):
    """rows: (case, lkvm variant, (iops, us), fio (iops, us, engine))."""
    print(title)
    hdr = (f"{'case':<16}{'lkvm':>16}{'lkvm req/s':>12}{'dev us/req':>12}"
           f"{'fio req/s':>12}{'fio us/req':>12}{'engine':>10}"
           f"{'lkvm/fio':>10}")
    print(hdr)
    print("-" * len(hdr))
    for case, variant, (iops, us), (fio_iops, fio_us, engine) in rows:
        ratio = f"{iops / fio_iops:.2f}" if fio_iops else "n/a"
        fio_cols = (f"{fio_iops:>12.0f}{fio_us:>12.2f}{engine:>10}"
                    if fio_iops else f"{'n/a':>12}{'n/a':>12}{'':>10}")
        print(f"{case:<16}{variant:>16}{iops:>12.0f}{us:>12.2f}{fio_cols}"
              f"{ratio:>10}", flush=True)
    print()


def make_file(image, size=1 << 30):
    with open(image, "wb") as f:
        f.truncate(size)
    # Written once so reads hit allocated blocks, as fio's would.
    subprocess.run(["dd", "if=/dev/zero", f"of={image}", "bs=1M",
                    f"count={size >> 20}", "conv=notrunc"], check=True,
                   capture_output=True)


def tmpfs_rows(binary, image):
    """Page-cache speed: what the serve path itself costs."""
    for mode, qd, rw, bs in CASES:
        fio = run_fio(image, rw, bs, qd)
        for aio in AIO:
            yield (f"{mode} QD{qd}", f"aio={aio}",
                   run_lkvm(binary, f"{image},aio={aio}", mode, qd), fio)


def direct_rows(binary, image):
    """A real disk under O_DIRECT: where requests in flight together pay."""
    for mode, qd, rw in (("randread", 1, "randread"),
                         ("randread", 32, "randread"),
                         ("randwrite", 32, "randwrite")):
        fio = run_fio(image, rw, "4k", qd, direct=True)
        for aio in AIO:
            yield (f"{mode} QD{qd}", f"direct,aio={aio}",
                   run_lkvm(binary, f"{image},direct,aio={aio}", mode, qd),
                   fio)


NO_FIO = (None, None, None)


def qcow2_rows(binary, raw, qcow2):
    """qcow2 (every cluster allocated) against raw, same workload: reads,
    and writes over what is there (no table changes), with and without a
    FLUSH every 16th request."""
    for qd in (1, 32):
        fio = run_fio(raw, "randread", "4k", qd)
        for name, img in (("raw", raw), ("qcow2", qcow2)):
            yield (f"randread QD{qd}", name,
                   run_lkvm(binary, img, "randread", qd), fio)
    for mode in ("randwrite", "randwrite+flush"):
        for name, img in (("raw", raw), ("qcow2", qcow2)):
            yield (f"overwrite {mode[9:] or '4k'} QD32", name,
                   run_lkvm(binary, img, mode, 32), NO_FIO)


def alloc_run(binary, folder, fmt, mode, size):
    """64 KiB sequential writes over a new image, once: on a qcow2 each
    allocates a cluster. The best of three fresh images (the first pass
    over new memory or blocks is the noisiest)."""
    best = None
    img = os.path.join(folder, "lkvm-blk-bench-alloc." + fmt)
    try:
        for _ in range(3):
            if fmt == "raw":
                with open(img, "wb") as f:
                    f.truncate(size)
            else:
                subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2",
                                img, str(size)], check=True)
            got = run_lkvm(binary, img, mode, 8)
            if best is None or got[0] > best[0]:
                best = got
    finally:
        if os.path.exists(img):
            os.unlink(img)
    return best


def alloc_rows(binary, folder, size):
    """Allocating writes: qcow2's new clusters and their tables, against a
    sparse raw file filling its holes."""
    for mode in ("seqwrite64k", "seqwrite64k+flush"):
        for fmt in ("raw", "qcow2"):
            yield (f"alloc 64k{mode[11:]} QD8", fmt,
                   alloc_run(binary, folder, fmt, mode, size), NO_FIO)


def main():
    binary = sys.argv[1]
    image = "/dev/shm/lkvm-blk-bench.img"
    qcow2 = "/dev/shm/lkvm-blk-bench.qcow2"
    disk = "/var/tmp/lkvm-blk-bench.img"
    made = [image]
    try:
        make_file(image)
        table(f"virtio-blk from a host-thread driver vs fio, {image} "
              f"(tmpfs), {SECONDS} s each", tmpfs_rows(binary, image))
        if shutil.which("qemu-img"):
            made.append(qcow2)
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-o",
                            "preallocation=full", qcow2, "1G"], check=True)
            table("qcow2 (qemu-img create -o preallocation=full) vs raw, "
                  "tmpfs", qcow2_rows(binary, image, qcow2))
            table("allocating writes: a new qcow2 vs a sparse raw file, "
                  "tmpfs, 1 GiB once over",
                  alloc_rows(binary, "/dev/shm", 1 << 30))
            table("allocating writes on a disk (/var/tmp), 256 MiB once "
                  "over: what the flushes cost",
                  alloc_rows(binary, "/var/tmp", 256 << 20))
        else:
            print("qemu-img is not installed: no qcow2 figures\n")
        made.append(disk)
        make_file(disk, 256 << 20)
        table(f"the same on a disk with O_DIRECT, {disk}",
              direct_rows(binary, disk))
        if not shutil.which("fio"):
            print("fio is not installed: apt-get install fio for the comparison")
    finally:
        for path in made:
            if os.path.exists(path):
                os.unlink(path)


if __name__ == "__main__":
    main()

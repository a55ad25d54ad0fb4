#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""virtio-blk device throughput without guest cost, next to fio.

Runs blk_ring_bench (a host thread plays the virtio driver against lkvm's
virtio-blk and its I/O thread) on a raw image in /dev/shm for 4 KiB random
reads at QD1 and QD32, 4 KiB random writes at QD32 and 1 MiB sequential
reads, with each of the disk's backends (aio=io_uring, aio=sync), and fio
with the same pattern on the same file when fio is installed (its best
engine of io_uring, libaio and psync: on tmpfs the synchronous one often
wins). Prints requests/s, CPU per request (lkvm: the device's, without the
driver thread), and lkvm / fio as a ratio.
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


def run_lkvm(binary, image, mode, qd, aio="io_uring"):
    out = subprocess.run([binary, f"{image},aio={aio}", mode, str(qd),
                          str(SECONDS)],
                         check=True, capture_output=True, text=True).stdout
    _, _, iops, dev_us, total_us, errors = out.split()[:6]
    if int(errors):
        sys.exit(f"{mode} QD{qd}: {errors} requests failed")
    return float(iops), float(dev_us)


def run_fio(image, rw, bs, qd):
    """fio's best single-job figure over the engines that may win here."""
    best = (None, None, None)
    for engine in ("io_uring", "libaio", "psync"):
        iops, us = run_fio_engine(image, rw, bs, qd, engine)
        if iops and (best[0] is None or iops > best[0]):
            best = (iops, us, engine)
    return best


def run_fio_engine(image, rw, bs, qd, engine):
    fio = shutil.which("fio")
    if not fio:
        return None, None
    out = subprocess.run(
        [fio, "--name=b", f"--filename={image}", f"--rw={rw}", f"--bs={bs}",
         f"--iodepth={qd}", f"--ioengine={engine}", "--direct=0",
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


def main():
    binary = sys.argv[1]
    image = "/dev/shm/lkvm-blk-bench.img"
    with open(image, "wb") as f:
        f.truncate(1 << 30)
    # Written once so reads hit allocated pages, as fio's would.
    subprocess.run(["dd", "if=/dev/zero", f"of={image}", "bs=1M",
                    "count=1024", "conv=notrunc"], check=True,
                   capture_output=True)
    try:
        print(f"virtio-blk from a host-thread driver vs fio, {image} "
              f"(tmpfs), {SECONDS} s each")
        hdr = (f"{'case':<16}{'aio':>9}{'lkvm req/s':>12}{'dev us/req':>12}"
               f"{'fio req/s':>12}{'fio us/req':>12}{'engine':>10}"
               f"{'lkvm/fio':>10}")
        print(hdr)
        print("-" * len(hdr))
        for mode, qd, rw, bs in CASES:
            fio_iops, fio_us, engine = run_fio(image, rw, bs, qd)
            fio_cols = (f"{fio_iops:>12.0f}{fio_us:>12.2f}{engine:>10}"
                        if fio_iops else f"{'n/a':>12}{'n/a':>12}{'':>10}")
            for aio in AIO:
                iops, us = run_lkvm(binary, image, mode, qd, aio)
                ratio = f"{iops / fio_iops:.2f}" if fio_iops else "n/a"
                print(f"{mode + ' QD' + str(qd):<16}{aio:>9}{iops:>12.0f}"
                      f"{us:>12.2f}{fio_cols}{ratio:>10}")
        if not shutil.which("fio"):
            print("fio is not installed: apt-get install fio for the comparison")
    finally:
        os.unlink(image)


if __name__ == "__main__":
    main()

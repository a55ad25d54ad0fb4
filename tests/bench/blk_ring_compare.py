#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Two builds of blk_ring_bench side by side on blk_ring_bench.py's qcow2
rows (reads and overwrites of a fully allocated qcow2, on tmpfs and with
FLUSHes on /var/tmp; allocating writes on a new one, on tmpfs and on
/var/tmp; with and without a FLUSH every 16th request), run in turns,
ROUNDS times, the best of each kept:
requests/s of each and NEW / OLD as a ratio. For a change's cost:

    blk_ring_compare.py OLD_BINARY NEW_BINARY [ROUNDS]

(build OLD from the older tree with this tree's blk_ring_bench.c).
"""
import os
import subprocess
import sys

import blk_ring_bench as bench

QCOW2 = "/dev/shm/lkvm-blk-cmp.qcow2"
QCOW2_DISK = "/var/tmp/lkvm-blk-cmp.qcow2"      # 256 MiB


def cases():
    qcow2 = QCOW2
    for qd in (1, 32):
        yield f"read 4k QD{qd}", lambda b, qd=qd: bench.run_lkvm(
            b, qcow2, "randread", qd)
    for mode in ("randwrite", "randwrite+flush"):
        yield f"overwrite 4k{mode[9:]} QD32", lambda b, m=mode: \
            bench.run_lkvm(b, qcow2, m, 32)
    yield "overwrite 4k+flush QD32 /var/tmp", lambda b: bench.run_lkvm(
        b, QCOW2_DISK, "randwrite+flush", 32)
    for folder, size in (("/dev/shm", 1 << 30), ("/var/tmp", 256 << 20)):
        for mode in ("seqwrite64k", "seqwrite64k+flush"):
            yield (f"alloc 64k{mode[11:]} QD8 {folder}",
                   lambda b, f=folder, m=mode, s=size: bench.alloc_run(
                       b, f, "qcow2", m, s))


def main():
    old, new = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for img, size in ((QCOW2, "1G"), (QCOW2_DISK, "256M")):
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-o",
                        "preallocation=full", img, size], check=True)
    try:
        print(f"{'case':<34}{'old req/s':>12}{'new req/s':>12}{'new/old':>9}")
        for name, run in cases():
            best = {old: 0.0, new: 0.0}
            for _ in range(rounds):
                for binary in (old, new):
                    best[binary] = max(best[binary], run(binary)[0])
            print(f"{name:<34}{best[old]:>12.0f}{best[new]:>12.0f}"
                  f"{best[new] / best[old]:>9.2f}", flush=True)
    finally:
        os.unlink(QCOW2)
        os.unlink(QCOW2_DISK)


if __name__ == "__main__":
    main()

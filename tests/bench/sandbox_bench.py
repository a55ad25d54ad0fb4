#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""How long `lkvm sandbox -- true` takes, next to `lkvm run` of the same
kernel and initramfs running `true`, in one nested QEMU TCG L1 (issue 12's
benchmark). Both boot Debian's generic kernel (PVH vmlinux) with the
guest/init + virtio modules initramfs, 1 vCPU, 256 MiB, and end through
the debug-exit port (lkvm.status=port: no ACPI power-off), on lkvm's own
default command line (--append for run); lkvm sandbox adds
its archive to that initramfs, two virtio-9p shares, the mounts (9p root,
overlay, working directory) and the switch to the caller's ids. The two
alternate, N rounds (default 10, LKVM_BENCH_SANDBOX_ROUNDS); each figure is
launch to exit of lkvm in L1 (tests/nested/sandbox-job.sh bench).
Prints the medians and their ratio. About 3 minutes, both cores.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "nested"))
import nested  # noqa: E402
import test_sandbox  # noqa: E402


def main():
    rounds = int(os.environ.get("LKVM_BENCH_SANDBOX_ROUNDS", "10"))
    work = os.environ.get("LKVM_NESTED_WORK") or "/tmp/lkvm-bench-sandbox"
    os.makedirs(work, exist_ok=True)
    kernel = nested.fetch_kernels(["generic"])["generic"]
    files = test_sandbox.l1_files(work, kernel)
    job = nested.Job("bench", ["sh", "/l1/sandbox-job.sh", "bench",
                               str(rounds)], timeout=60 * rounds + 60)
    res = nested.run_l1([job], files, l1_kernel=kernel, workdir=work)
    j = res.jobs.get("bench")
    if not j or j.exit != 0:
        print("bench-sandbox: the L1 run failed; console log in %s" % work)
        return 1
    sb = [float(j.facts["sb_bench_sandbox_%d" % i]) for i in range(rounds)]
    run = [float(j.facts["sb_bench_run_%d" % i]) for i in range(rounds)]
    msb, mrun = statistics.median(sb), statistics.median(run)
    print("lkvm sandbox -- true      median %.2f s  (min %.2f, max %.2f, %d runs)"
          % (msb, min(sb), max(sb), rounds))
    print("lkvm run (lkvm.run=true) median %.2f s  (min %.2f, max %.2f, %d runs)"
          % (mrun, min(run), max(run), rounds))
    print("sandbox / run             %.2f" % (msb / mrun))
    print("(launch to exit in a nested L1 under QEMU TCG, alternating)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

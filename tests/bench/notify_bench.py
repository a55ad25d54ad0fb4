#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Notify cost: a guest-kit guest (guest/kit/kick.elf) kicks a virtio queue
100,000 times; time per kick with ioeventfd and with --no-ioeventfd (every
kick an exit to a vCPU thread), for the mmio and legacy-pci notify paths,
side by side in one run. The guest times itself (ACPI PM timer) and also
times an empty loop of the same shape, so the table shows both the raw
figure and the one net of the loop. --stats says where each kick went.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM", ROOT / "lkvm"))
KICK = ROOT / "guest" / "kit" / "kick.elf"
KICKS = int(os.environ.get("LKVM_BENCH_KICKS", "100000"))
LINE = re.compile(r"kick: (\d+) kicks, (\d+) us, [\d.]+ us/kick, "
                  r"loop (\d+)\.(\d+) us/iteration")


def run(transport, ioeventfd, img, stats):
    params = f"kicks={KICKS}" + (" legacy" if transport == "pci-legacy" else "")
    cmd = [str(LKVM), "run", "-q", "--timeout", "120", "-k", str(KICK),
           "-d", img, "--virtio-transport", transport, "-p", params,
           "--stats", stats]
    if not ioeventfd:
        cmd.append("--no-ioeventfd")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    m = LINE.search(out.stdout)
    if out.returncode or not m:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}"
                 f"{out.stderr}")
    kicks, us = int(m.group(1)), int(m.group(2))
    loop = float(f"{m.group(3)}.{m.group(4)}")
    with open(stats) as f:
        q = json.load(f)["devices"][0]["queues"][0]
    return us / kicks, us / kicks - loop, q["kicks_eventfd"], q["kicks_exit"]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "disk.img")
        with open(img, "wb") as f:
            f.truncate(1 << 20)
        stats = os.path.join(tmp, "stats.json")
        print(f"notify cost: {KICKS} kicks of an empty queue from kick.elf")
        hdr = (f"{'path':<26}{'us/kick':>9}{'net':>8}{'via eventfd':>13}"
               f"{'via exit':>10}")
        print(hdr)
        print("-" * len(hdr))
        for transport in ("mmio", "pci-legacy"):
            net = {}
            for ioev in (True, False):
                raw, n, ev, ex = run(transport, ioev, img, stats)
                net[ioev] = n
                label = f"{transport} {'ioeventfd' if ioev else 'exit'}"
                print(f"{label:<26}{raw:>9.2f}{n:>8.2f}{ev:>13}{ex:>10}")
            if net[True] > 0:
                print(f"{transport}: exit / ioeventfd = "
                      f"{net[False] / net[True]:.2f} (net of the loop)")
        print("the host KVM emulates every guest instruction: the loop "
              "itself costs microseconds here")


if __name__ == "__main__":
    main()

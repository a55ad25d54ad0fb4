#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Notify cost: a guest-kit guest (guest/kit/kick.elf) kicks a virtio queue
100,000 times; time per kick with ioeventfd (--poll off, auto, on) and with
--no-ioeventfd (every kick an exit to a vCPU thread), for the mmio and
legacy-pci notify paths, and kvmtool's, side by side, in interleaved rounds
(LKVM_BENCH_ROUNDS, default 3; medians). kvmtool runs its own build of the
same loop (guest/kit/peer/kick_kvmtool.bin) where it is installed: $KVMTOOL,
else ~/.cache/lkvm/peers/kvmtool (scripts/peers/build-kvmtool.sh); where it
is not, its rows say so.

Each configuration runs twice: as the scheduler places the threads, and
with every thread of the VMM on one CPU (taskset -c 0), where each wake-up
of the I/O thread preempts the vCPU. The guests time themselves (ACPI PM
timer; kvmtool's, the TSC calibrated on the PIT) and also time an empty
loop of the same shape: "net" is the kick's cost over that loop. --stats
says where lkvm's kicks went.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM", ROOT / "lkvm"))
KICK = ROOT / "guest" / "kit" / "kick.elf"
PEER_KICK = ROOT / "guest" / "kit" / "peer" / "kick_kvmtool.bin"
PEER_EXIT = ROOT / "guest" / "kit" / "peer" / "kick_kvmtool_exit.bin"
KICKS = int(os.environ.get("LKVM_BENCH_KICKS", "100000"))
ROUNDS = int(os.environ.get("LKVM_BENCH_ROUNDS", "3"))
LINE = re.compile(r"kick: (\d+) kicks, (\d+) us, [\d.]+ us/kick, "
                  r"loop (\d+)\.(\d+) us/iteration")
PINS = (("", []), ("1 CPU", ["taskset", "-c", "0"]))


def kvmtool_binary():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    path = os.environ.get("KVMTOOL") or os.path.join(cache, "lkvm", "peers",
                                                     "kvmtool")
    return path if os.access(path, os.X_OK) else None


def lkvm_cmd(transport, extra, img, stats):
    params = f"kicks={KICKS}" + (" legacy" if transport == "pci-legacy" else "")
    return [str(LKVM), "run", "-q", "--timeout", "120", "-k", str(KICK),
            "-d", img, "--virtio-transport", transport, "-p", params,
            "--stats", stats, *extra]


def kvmtool_cmd(binary, guest, img):
    return [binary, "run", "--nodefaults", "-n", "mode=none", "-c", "1",
            "-m", "64", "-k", str(guest), "-d", img,
            "--virtio-transport", "pci-legacy"]


def configs(img, stats, kvmtool):
    out = []
    for transport in ("mmio", "pci-legacy"):
        for label, extra in (("ioeventfd, poll off", ["--poll", "off"]),
                             ("ioeventfd, poll auto", []),
                             ("ioeventfd, poll on", ["--poll", "on"]),
                             ("exit", ["--no-ioeventfd"])):
            out.append((f"lkvm {transport} {label}",
                        lkvm_cmd(transport, extra, img, stats), True))
    if kvmtool:
        out.append(("kvmtool pci-legacy ioeventfd",
                    kvmtool_cmd(kvmtool, PEER_KICK, img), False))
        out.append(("kvmtool pci-legacy exit",
                    kvmtool_cmd(kvmtool, PEER_EXIT, img), False))
    return out


def run(cmd, lkvm, stats):
    out = subprocess.run(["timeout", "180", *cmd], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL)
    m = LINE.search(out.stdout)
    if (lkvm and out.returncode) or not m:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}"
                 f"{out.stderr}")
    kicks, us = int(m.group(1)), int(m.group(2))
    loop = float(f"{m.group(3)}.{m.group(4)}")
    where = ""
    if lkvm:
        with open(stats) as f:
            q = json.load(f)["devices"][0]["queues"][0]
        where = f"{q['kicks_eventfd']}/{q['kicks_exit']}"
    return us / kicks, us / kicks - loop, where


def main():
    kvmtool = kvmtool_binary()
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "disk.img")
        with open(img, "wb") as f:
            f.truncate(1 << 20)
        stats = os.path.join(tmp, "stats.json")
        cases = [(f"{label}{', ' + pin if pin else ''}", pre + cmd, lkvm)
                 for label, cmd, lkvm in configs(img, stats, kvmtool)
                 for pin, pre in PINS]
        res = {c[0]: [] for c in cases}
        for r in range(ROUNDS):
            # a different order each round: drift hits every case alike
            for label, cmd, lkvm in cases[r % len(cases):] + \
                    cases[:r % len(cases)]:
                res[label].append(run(cmd, lkvm, stats))
    print(f"notify cost: {KICKS} kicks of an empty queue, medians of "
          f"{ROUNDS} interleaved rounds")
    hdr = (f"{'path':<46}{'us/kick':>9}{'net':>8}{'eventfd/exit':>15}")
    print(hdr)
    print("-" * len(hdr))
    for label, rows in res.items():
        raw = statistics.median(r[0] for r in rows)
        net = statistics.median(r[1] for r in rows)
        print(f"{label:<46}{raw:>9.2f}{net:>8.2f}{rows[-1][2]:>15}")
    if not kvmtool:
        print("kvmtool: not installed (scripts/peers/build-kvmtool.sh), "
              "its rows skipped")
    print("the host KVM may emulate every guest instruction: the loop "
          "itself can cost microseconds")


if __name__ == "__main__":
    main()

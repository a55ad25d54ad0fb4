#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Boot benchmark: how fast and how lean lkvm starts and ends a tiny guest.

For guest/kit/quick.elf (its first instruction ends the VM; --guest picks
another) with 1 and 2 vCPUs, N runs each (default 20), it
reports medians of
  - wall time from launch to exit,
  - the VMM's CPU time (user + sys of the child, from os.wait4's rusage),
  - the VMM's own resident memory outside guest RAM: rss_kib - guest_rss_kib
    from `lkvm run --stats FILE` (a JSON object written at exit),
  - peak RSS: max_rss_kib from --stats when lkvm gives it, and the
    kernel's ru_maxrss for the child. Linux
    folds the forking Python's resident set into the child's ru_maxrss at
    exec, so ru_maxrss cannot go below a floor, measured here with
    /bin/true and printed: a value at the floor means "at most this".
If lkvm has no --stats yet, the RSS-outside-guest column says so and the
rest still runs. With --qemu (default when qemu-system-x86_64 exists) the
same ELF is also booted by QEMU (-M microvm and -M pc, -accel kvm,
isa-debug-exit) for comparison; QEMU has no --stats, so only ru_maxrss.

The host KVM may be a software one where every guest instruction is
emulated: absolute times here say little about real hardware, ratios run
side by side in one go say more.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM") or ROOT / "lkvm")
ELF = ROOT / "guest" / "kit" / "quick.elf"
QEMU = shutil.which("qemu-system-x86_64")


def run_once(cmd, want_rc, timeout, stats=None):
    """One launch: (wall s, cpu s, maxrss KiB, stats dict or None, error)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)
        killer = threading.Timer(timeout, os.kill, (proc.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = None
        if proc.returncode != want_rc:
            out.seek(0)
            tail = out.read()[-400:].decode(errors="replace")
            err = f"exit {proc.returncode}, expected {want_rc}: {tail!r}"
    st = None
    if stats and os.path.exists(stats):
        try:
            with open(stats) as f:
                st = json.load(f)
        except (OSError, ValueError) as e:
            err = err or f"bad --stats file: {e}"
        os.unlink(stats)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, st, err


def lkvm_has_stats(mem):
    """Does this lkvm accept --stats and write rss_kib/guest_rss_kib?"""
    fd, path = tempfile.mkstemp(prefix="lkvm-stats-", suffix=".json")
    os.close(fd)
    os.unlink(path)
    cmd = [str(LKVM), "run", "--timeout", "20", "--stats", path,
           "-m", str(mem), "-k", str(ELF)]
    _, _, _, st, err = run_once(cmd, 0, 30, stats=path)
    if err or not st:
        return False, err or "no stats file written"
    missing = [k for k in ("rss_kib", "guest_rss_kib") if k not in st]
    if missing:
        return False, f"--stats JSON lacks {', '.join(missing)}"
    return True, None


def bench(label, cmd_fn, runs, want_rc, timeout, use_stats):
    walls, cpus, maxrss, own, peak = [], [], [], [], []
    errors = []
    for i in range(runs):
        stats = None
        if use_stats:
            stats = os.path.join(tempfile.gettempdir(),
                                 f"lkvm-bench-{os.getpid()}-{i}.json")
        wall, cpu, mrss, st, err = run_once(cmd_fn(stats), want_rc, timeout,
                                            stats)
        if err:
            errors.append(err)
            continue
        walls.append(wall)
        cpus.append(cpu)
        maxrss.append(mrss)
        if st and "rss_kib" in st and "guest_rss_kib" in st:
            own.append(st["rss_kib"] - st["guest_rss_kib"])
        if st and "max_rss_kib" in st:
            peak.append(st["max_rss_kib"])
    return {
        "label": label,
        "runs": runs,
        "ok": len(walls),
        "wall_ms": statistics.median(walls) * 1e3 if walls else None,
        "cpu_ms": statistics.median(cpus) * 1e3 if cpus else None,
        "maxrss_kib": statistics.median(maxrss) if maxrss else None,
        "own_rss_kib": statistics.median(own) if own else None,
        "peak_rss_kib": statistics.median(peak) if peak else None,
        "errors": errors,
    }


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    return f"{v:.1f}{unit}" if isinstance(v, float) else f"{v}{unit}"


def main():
    global ELF
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--mem", type=int, default=64, help="guest MiB")
    ap.add_argument("--qemu", dest="qemu", action="store_true",
                    default=QEMU is not None)
    ap.add_argument("--no-qemu", dest="qemu", action="store_false")
    ap.add_argument("--qemu-runs", type=int, default=3,
                    help="QEMU -M pc runs SeaBIOS: slow on a software KVM")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--guest", type=Path, default=ELF,
                    help="the PVH ELF to boot (must exit with status 0)")
    args = ap.parse_args()
    ELF = args.guest

    for need in (LKVM, ELF):
        if not need.exists():
            sys.exit(f"{need} missing: run make lkvm guest-kit")

    has_stats, why = lkvm_has_stats(args.mem)
    if not has_stats:
        print(f"note: lkvm --stats unusable ({why}); the 'VMM RSS' column "
              "(RSS outside guest RAM) is n/a, ru_maxrss still shown")

    results = []
    for ncpu in (1, 2):
        def lkvm_cmd(stats, ncpu=ncpu):
            cmd = [str(LKVM), "run", "--timeout", "20", "-c", str(ncpu),
                   "-m", str(args.mem), "-k", str(ELF)]
            if stats:
                cmd[2:2] = ["--stats", stats]
            return cmd
        results.append(bench(f"lkvm -c {ncpu}", lkvm_cmd, args.runs, 0, 30,
                             has_stats))

    if args.qemu and QEMU and os.access("/dev/kvm", os.R_OK | os.W_OK):
        for machine in ("microvm", "pc"):
            for ncpu in (1, 2):
                def qemu_cmd(stats, machine=machine, ncpu=ncpu):
                    return [QEMU, "-accel", "kvm", "-M", machine,
                            "-smp", str(ncpu), "-m", str(args.mem),
                            "-nodefaults", "-nographic", "-serial", "stdio",
                            "-device", "isa-debug-exit,iobase=0x501,iosize=1",
                            "-kernel", str(ELF)]
                # isa-debug-exit: QEMU exits (status << 1) | 1.
                results.append(bench(f"QEMU -M {machine} -smp {ncpu}",
                                     qemu_cmd, args.qemu_runs, 1, 120, False))

    floor = bench("/bin/true", lambda stats: ["/bin/true"], 3, 0, 10,
                  False)["maxrss_kib"]

    hdr = (f"{'boot ' + ELF.name:<24}{'runs':>6}{'wall ms':>10}{'CPU ms':>10}"
           f"{'VMM RSS KiB':>13}{'peak KiB':>10}{'ru_maxrss':>11}")
    print()
    print(f"medians; guest RAM {args.mem} MiB; VMM RSS = resident memory "
          "outside guest RAM, peak = max_rss_kib (both from lkvm --stats)")
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        print(f"{r['label']:<24}{r['ok']:>3}/{r['runs']:<2}"
              f"{fmt(r['wall_ms']):>10}{fmt(r['cpu_ms']):>10}"
              f"{fmt(r['own_rss_kib']):>13}{fmt(r['peak_rss_kib']):>10}"
              f"{fmt(r['maxrss_kib']):>11}")
    print(f"ru_maxrss floor (the forking python, seen by /bin/true): "
          f"{fmt(floor)} KiB; values at the floor mean 'at most this'.")
    for r in results:
        for e in r["errors"][:3]:
            print(f"error: {r['label']}: {e}")
    if any(r["label"].startswith("QEMU") for r in results):
        print("QEMU rows: same ELF, -accel kvm with isa-debug-exit; "
              "-M pc includes SeaBIOS.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0 if all(r["ok"] for r in results if r["label"].startswith("lkvm")) else 1


if __name__ == "__main__":
    sys.exit(main())

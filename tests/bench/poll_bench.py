#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Virtqueue polling, side by side in one run (make bench-poll).

One table, three parts:

1. guest kit: polling guest-kit drivers with real vCPU exits, on the
   host's KVM or, without one, in a nested L1 (figures then distorted by
   TCG): reqbench.elf, 4 KiB random reads at QD1 and QD32 from a tmpfs
   image, interrupts on (one per used-ring update the driver asks for);
   netbench.elf, 64-byte frames out (tx) and in (rx) over a tap in a
   network namespace of its own. Each with --no-ioeventfd, --poll off,
   --poll auto (the defaults), and --poll auto,max_us=1000, a window sized
   for guests as slow as a software KVM's or a nested one's.
2. host-thread ring driver: lkvm's devices driven from a host thread
   (tests/bench/ring_driver.c), no guest instructions in the way, with a
   driver that waits for interrupts (irq) or polls its used ring (spin);
   fio on the same file for the disk rows.
3. shared I/O threads: reqbench.elf on four disks at QD8, each disk with
   its own thread or all four on --iothreads 1.

Columns: requests (frames) per second; kicks, vCPU exits and interrupts
per request; VMM CPU per request (rusage of lkvm, the vCPU threads'
emulation included on a software KVM) and the part outside the vCPU
threads; vCPU time per MB moved, the seed work's efficiency figure (vCPU
utilisation per MB/s). Ratios against --poll off close each group.

LKVM_BENCH_REQUESTS / LKVM_BENCH_FRAMES shrink the guest runs.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from request_bench import run_sampled  # noqa: E402
from blk_ring_bench import run_fio  # noqa: E402
import net_bench  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM", ROOT / "lkvm"))
KIT = ROOT / "guest" / "kit"
BUILD = Path(os.environ.get("LKVM_BUILD", ROOT / "build" / "default"))
BLK_RING = BUILD / "tests" / "bench" / "blk_ring_bench"
NET_RING = BUILD / "tests" / "bench" / "net_ring_bench"
REQUESTS = int(os.environ.get("LKVM_BENCH_REQUESTS", "10000"))
FRAMES = int(os.environ.get("LKVM_BENCH_FRAMES", "10000"))
RING_SECONDS = 2
RUN_TIMEOUT = 180
IMAGE_DIR = Path("/dev/shm")
BLOCK = 4096

VARIANTS = [  # (label, lkvm options)
    ("no-ioeventfd", ["--no-ioeventfd"]),
    ("poll off", ["--poll", "off"]),
    ("poll auto", ["--poll", "auto"]),
    ("auto 1ms", ["--poll", "auto,max_us=1000"]),
]


def image(name, mib=64):
    path = IMAGE_DIR / name
    with open(path, "wb") as f:
        chunk = b"\x5a" * (1 << 20)     # written, so reads hit real pages
        for _ in range(mib):
            f.write(chunk)
    return path


def vcpu_s(last):
    return sum(v for k, v in last.items() if k.startswith("vcpu"))


def figures(cmd, done, guest_us, nbytes, queues, st, ru, last):
    non_vcpu = sum(v for k, v in last.items() if not k.startswith("vcpu"))
    secs = guest_us / 1e6
    mb = nbytes / 1e6
    return {
        "rate": done / secs,
        "kicks": sum(q["kicks_eventfd"] + q["kicks_exit"]
                     for q in queues) / done,
        "exits": sum(v["exits"] for v in st["vcpus"]) / done,
        "irqs": sum(q["interrupts"] for q in queues) / done,
        "cpu_us": (ru.ru_utime + ru.ru_stime) / done * 1e6,
        "other_us": non_vcpu / done * 1e6,
        "vcpu_ms_mb": vcpu_s(last) * 1e3 / mb if mb else 0.0,
    }


def reqbench(img, qd, extra, stats, disks=1):
    params = (f"transport=mmio qd={qd} requests={REQUESTS} irq=1 "
              f"event_idx=1 disks={disks}")
    cmd = [str(LKVM), "run", "-q", "--timeout", str(RUN_TIMEOUT),
           "--virtio-transport", "mmio", "-k", str(KIT / "reqbench.elf"),
           "-p", params, "--stats", stats, *extra]
    for i in range(disks):
        cmd += ["-d", str(img[i] if isinstance(img, list) else img)]
    rc, ru, out, err, last = run_sampled(cmd)
    line = next((x for x in out.splitlines() if x.startswith("reqbench:")),
                "")
    w = line.replace(",", "").split()
    if rc or len(w) < 11 or int(w[10]):
        sys.exit(f"{' '.join(cmd)} failed ({rc}):\n{out}{err}")
    st = json.loads(Path(stats).read_text())
    qs = [q for d in st["devices"] for q in d["queues"]]
    done = int(w[1])
    return figures(cmd, done, int(w[6]), done * BLOCK, qs, st, ru, last)


def netbench(ns, mode, extra, stats):
    return net_bench.guest(str(NET_RING), ns, mode, stats, "mmio", extra,
                           FRAMES)


def guest_part():
    """Part 1 and 3, where a KVM runs guests: {label: {variant: row}}."""
    res = {}
    img = image("lkvm-poll-bench.img")
    imgs = [image(f"lkvm-poll-bench{i}.img", 16) for i in range(4)]
    ns = net_bench.make_netns()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stats = os.path.join(tmp, "stats.json")
            for qd in (1, 32):
                res[f"blk 4k read QD{qd}"] = {
                    v: reqbench(img, qd, o, stats) for v, o in VARIANTS}
            for mode in ("tx64", "rx64"):
                res[f"net {mode[:2]} 64 B"] = {
                    v: netbench(ns, mode, o, stats) for v, o in VARIANTS}
            for v, o in (("poll off", ["--poll", "off"]),
                         ("auto 1ms", ["--poll", "auto,max_us=1000"])):
                for label, extra in (("4 threads", []),
                                     ("--iothreads 1", ["--iothreads", "1"])):
                    res.setdefault("4 disks QD8", {})[f"{v}, {label}"] = \
                        reqbench(imgs, 8, o + extra, stats, disks=4)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True,
                       timeout=20)
        for p in [img, *imgs]:
            p.unlink(missing_ok=True)
    return res


def guest_part_where_kvm_is():
    sys.path.insert(0, str(ROOT / "tests"))
    import tier  # noqa: E402
    place, _ = tier.choose_place(True, str(LKVM))
    if place == "host":
        return guest_part(), "host KVM"
    sys.path.insert(0, str(ROOT / "tests" / "nested"))
    import l1shell  # noqa: E402
    out = ROOT / "build" / "bench" / "poll-guest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    print(f"guest kit: {tier.TCG_NOTE}", flush=True)
    res = l1shell.run(["/usr/bin/python3", __file__, "--guest-only",
                       str(out)], env={"LKVM": str(LKVM)}, name="bench-poll",
                      echo=False)
    if res.status != 0 or not out.exists():
        sys.exit(f"guest part in L1 failed ({res.status}, {res.why}):\n"
                 f"{res.l1.tail() if res.l1 else ''}")
    return json.loads(out.read_text()), "nested L1 (TCG)"


def blk_ring(img, qd, poll, driver):
    out = subprocess.run([str(BLK_RING), str(img), "randread", str(qd),
                          str(RING_SECONDS), poll, driver], check=True,
                         capture_output=True, text=True,
                         timeout=RING_SECONDS + 60).stdout.split()
    if int(out[5]):
        sys.exit(f"blk ring {qd} {poll} {driver}: {out[5]} errors")
    return {"rate": float(out[2]), "kicks": float(out[6]),
            "irqs": float(out[7]), "other_us": float(out[3]),
            "cpu_us": float(out[4]), "hits": float(out[8])}


def net_ring(mode, poll):
    out = subprocess.run([str(NET_RING), "lkvm", mode, str(RING_SECONDS),
                          poll], check=True, capture_output=True, text=True,
                         timeout=RING_SECONDS + 60).stdout.split()
    if int(out[8]):
        sys.exit(f"net ring {mode} {poll}: {out[8]} errors")
    return {"rate": float(out[2]), "other_us": float(out[3]),
            "cpu_us": float(out[4]), "kicks": float(out[9]),
            "irqs": float(out[10])}


def ring_part():
    res = {}
    img = image("lkvm-poll-ring.img", 256)
    try:
        for qd in (1, 32):
            for driver in ("irq", "spin"):
                res[f"blk QD{qd}, driver {driver}"] = {
                    p: blk_ring(img, qd, p, driver)
                    for p in ("off", "auto", "on")}
            fio = run_fio(str(img), "randread", "4k", qd)
            if fio[0]:
                res[f"blk QD{qd}, fio ({fio[2]})"] = {
                    "": {"rate": fio[0], "cpu_us": fio[1]}}
    finally:
        img.unlink(missing_ok=True)
    for mode in ("tx64", "rx64"):
        res[f"net {mode}"] = {p: net_ring(mode, p)
                              for p in ("off", "auto", "on")}
    return res


def fmt(v, spec):
    return format(v, spec) if v is not None else "-"


def print_group(title, rows, cols):
    print(f"\n{title}")
    hdr = f"{'':<34}" + "".join(f"{h:>{w}}" for h, _, w, _ in cols)
    print(hdr)
    print("-" * len(hdr))
    for label, variants in rows.items():
        base = variants.get("poll off") or variants.get("off")
        for v, r in variants.items():
            name = f"{label}  {v}".rstrip()
            line = f"{name:<34}"
            for _, key, w, spec in cols:
                line += f"{fmt(r.get(key), spec):>{w}}"
            if base and r is not base and base.get("rate"):
                line += f"   x{r['rate'] / base['rate']:.2f} req/s"
            print(line)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--guest-only":
        Path(sys.argv[2]).write_text(json.dumps(guest_part()))
        return
    for path in (LKVM, KIT / "reqbench.elf", KIT / "netbench.elf", BLK_RING,
                 NET_RING):
        if not path.exists():
            sys.exit(f"{path} missing: make lkvm guest-kit bench binaries")
    guest, where = guest_part_where_kvm_is()
    ring = ring_part()
    gcols = [("req/s", "rate", 10, ".0f"), ("kicks/req", "kicks", 10, ".3f"),
             ("exits/req", "exits", 10, ".3f"), ("irqs/req", "irqs", 9, ".3f"),
             ("VMM us/req", "cpu_us", 11, ".1f"),
             ("non-vCPU", "other_us", 9, ".1f"),
             ("vCPU ms/MB", "vcpu_ms_mb", 11, ".0f")]
    print("virtqueue polling: lkvm " + " | ".join(v for v, _ in VARIANTS))
    print_group(f"guest kit on {where}: {REQUESTS} requests / {FRAMES} "
                "frames a run", {k: v for k, v in guest.items()
                                 if not k.startswith("4 disks")}, gcols)
    print_group("shared I/O threads: reqbench, 4 disks x QD8",
                {k: v for k, v in guest.items() if k.startswith("4 disks")},
                gcols)
    rcols = [("req/s", "rate", 10, ".0f"), ("kicks/req", "kicks", 10, ".3f"),
             ("irqs/req", "irqs", 9, ".3f"),
             ("dev us/req", "other_us", 11, ".2f"),
             ("all us/req", "cpu_us", 11, ".2f"),
             ("poll hits", "hits", 10, ".3f")]
    print_group(f"host-thread ring driver, {RING_SECONDS} s a run "
                "(dev: the I/O thread's CPU, all: every thread's)", ring,
                rcols)
    for qd in (1, 32):
        fio = ring.get(next((k for k in ring if k.startswith(f"blk QD{qd}, fio")),
                            ""), {}).get("")
        spin = ring[f"blk QD{qd}, driver spin"]
        if fio:
            print(f"QD{qd}: lkvm / fio = " + ", ".join(
                f"{p} {spin[p]['rate'] / fio['rate']:.2f}"
                for p in ("off", "auto", "on")) + " (spinning driver)")


if __name__ == "__main__":
    main()

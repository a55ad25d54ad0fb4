#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""virtio-net frames/s and VMM CPU per frame, next to the tap's own limit.

For tx64, tx64k, rx64 and rx64k (64-byte UDP frames, 64 KiB TCP segments
through TSO), side by side in one run:

- tap limit: net_ring_bench tap, one thread writing the frames into a tap
  fd (TX) or reading them from it while an AF_PACKET injector feeds the
  tap (RX);
- lkvm host thread: net_ring_bench lkvm, lkvm's virtio-net and its I/O
  thread driven by a host thread playing the driver on shared rings (no
  guest instructions in the way), the same frames, the same injector;
- guest kit: guest/kit/netbench.elf, a polling driver in a guest on the
  host's (software) KVM, modern virtio-pci, sending or receiving
  LKVM_BENCH_FRAMES frames (a tenth as many of 64 KiB); the injector
  feeds the tap for RX.

The two host-side programs alternate, LKVM_BENCH_NET_ROUNDS rounds of
LKVM_BENCH_NET_SECONDS each, and the medians are shown. Each of them runs
in a network namespace of its own (unshare); the guest runs in one this
script creates with ip netns and deletes at the end.

Columns: frames/s of each; lkvm/tap, the ratio of those; the CPU time per
frame of the thread doing the backend work (lkvm's I/O thread, or the tap
writer/reader) and tap/lkvm of those, which is what one I/O thread could
carry if it had a core to itself (the frames/s ratio also depends on
what else the two cores are doing); for the guest: frames/s by its own
clock, VMM CPU per frame (rusage of lkvm, vCPU emulation included), the
part outside the vCPU thread, vCPU exits and kicks per frame.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from request_bench import run_sampled  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LKVM = Path(os.environ.get("LKVM", ROOT / "lkvm"))
GUEST = ROOT / "guest" / "kit" / "netbench.elf"
ROUNDS = int(os.environ.get("LKVM_BENCH_NET_ROUNDS", "3"))
SECONDS = float(os.environ.get("LKVM_BENCH_NET_SECONDS", "2"))
FRAMES = int(os.environ.get("LKVM_BENCH_FRAMES", "20000"))
MODES = os.environ.get("LKVM_BENCH_NET_MODES", "tx64 tx64k rx64 rx64k").split()
TAP = "lkvmnb0"
RUN_TIMEOUT = 120


def ring(binary, side, mode):
    cmd = [binary, side, mode, str(SECONDS)]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=SECONDS + 30)
    fields = p.stdout.split()
    if p.returncode or len(fields) < 9:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n"
                 f"{p.stdout}{p.stderr}")
    rate, io_us, cpu_us = map(float, fields[2:5])
    frames, tap_packets, tap_dropped, errors = map(int, fields[5:9])
    # The tap must have taken (TX) or handed over (RX) every frame counted.
    if errors or tap_packets < frames:
        sys.exit(f"{side} {mode}: {errors} bad frames, tap counted "
                 f"{tap_packets} of {frames}")
    return {"rate": rate, "io_us": io_us, "cpu_us": cpu_us,
            "dropped": tap_dropped}


def ip(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    subprocess.run(cmd, check=True, capture_output=True, timeout=20)


def make_netns():
    """A namespace for the guest runs: no IPv6, no forwarding."""
    ns = f"lkvm-netbench-{os.getpid()}"
    ip("ip", "netns", "add", ns)
    try:
        ip("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1", "net.ipv4.ip_forward=0",
           ns=ns)
    except subprocess.CalledProcessError:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        raise
    return ns


def make_tap(ns):
    """A fresh persistent tap for each run, addressed as net_ring_bench's:
    a tap keeps the offloads the last driver chose, and the injector must
    not see TSO on before this run's driver has asked for it."""
    subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "del", TAP],
                   capture_output=True, timeout=20)
    ip("ip", "tuntap", "add", "dev", TAP, "mode", "tap", "vnet_hdr", ns=ns)
    ip("ip", "addr", "add", "10.0.0.1/24", "dev", TAP, ns=ns)
    ip("ip", "link", "set", TAP, "up", ns=ns)


def tap_mac(ns):
    out = subprocess.run(["ip", "netns", "exec", ns, "ip", "-j", "link",
                          "show", TAP], check=True, capture_output=True,
                         text=True, timeout=20).stdout
    return json.loads(out)[0]["address"]


def guest(binary, ns, mode, stats, transport="pci", extra=(), frames=None):
    """netbench.elf in one mode in namespace ns: frames/s by the guest's
    clock, VMM CPU per frame (all, and outside the vCPU threads), vCPU
    exits, device-side kicks and interrupts per frame, the guest's own
    kicks per frame, and vCPU time per MB moved."""
    # 64 KiB frames cost the guest 16 buffers each on RX: a tenth as many.
    if frames is None:
        frames = FRAMES // 10 if mode.endswith("64k") else FRAMES
    guest_transport = {"pci-legacy": "legacy"}.get(transport, transport)
    params = f"transport={guest_transport} mode={mode} frames={frames}"
    make_tap(ns)
    if mode.startswith("tx"):
        params += f" dst={tap_mac(ns)}"
    inj = None
    if mode.startswith("rx"):
        inj = subprocess.Popen(["ip", "netns", "exec", ns, binary, "inject",
                                mode, TAP, str(RUN_TIMEOUT), str(frames)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    cmd = ["ip", "netns", "exec", ns, str(LKVM), "run", "-q", "--timeout",
           str(RUN_TIMEOUT), "--virtio-transport", transport, "-k",
           str(GUEST), "-n", f"mode=tap,tapif={TAP}", "-p", params,
           "--stats", stats, *extra]
    # ip netns exec execs lkvm: the pid is lkvm's, as run_sampled needs.
    rc, ru, out, err, last = run_sampled(cmd)
    inj_out = ""
    if inj:
        try:
            inj_out = "".join(inj.communicate(timeout=RUN_TIMEOUT))
        except subprocess.TimeoutExpired:
            inj.kill()
            inj_out = "".join(inj.communicate())
    line = next((x for x in out.splitlines() if x.startswith("netbench:")),
                "")
    words = line.replace(",", "").split()
    if rc or len(words) < 10 or int(words[9]):
        sys.exit(f"{' '.join(cmd)} failed ({rc}):\n{out}{err}{inj_out}")
    done, us, kicks = int(words[1]), int(words[5]), int(words[7])
    with open(stats) as f:
        st = json.load(f)
    dev = next(d for d in st["devices"] if d["type"] == "virtio-net")
    q = dev["queues"][0 if mode.startswith("rx") else 1]
    served = q["requests"]
    if served < done:
        sys.exit(f"{mode}: --stats counts {served} frames, the guest {done}")
    non_vcpu = sum(v for k, v in last.items() if not k.startswith("vcpu"))
    vcpu = sum(v for k, v in last.items() if k.startswith("vcpu"))
    mb = done * (65214 if mode.endswith("64k") else 64) / 1e6
    return {
        "rate": done / (us / 1e6),
        "cpu_us": (ru.ru_utime + ru.ru_stime) / done * 1e6,
        "other_us": non_vcpu / done * 1e6,
        "exits": sum(v["exits"] for v in st["vcpus"]) / done,
        "kicks": (q["kicks_eventfd"] + q["kicks_exit"]) / done,
        "irqs": q["interrupts"] / done,
        "guest_kicks": kicks / done,
        "vcpu_ms_mb": vcpu * 1e3 / mb,
    }


def guest_figures(binary):
    """netbench.elf in each mode, in a network namespace of its own."""
    ns = make_netns()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stats = os.path.join(tmp, "stats.json")
            return {mode: guest(binary, ns, mode, stats) for mode in MODES}
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True,
                       timeout=20)


def guest_figures_where_kvm_is(binary):
    """The guest part on the host's KVM, or, without one, this script's
    --guest-only run inside a nested L1 (tests/tier.py decides). The
    host-thread figures above need no KVM and stay on the host."""
    sys.path.insert(0, str(ROOT / "tests"))
    import tier  # noqa: E402
    place, _ = tier.choose_place(True, str(LKVM))
    if place == "host":
        return guest_figures(binary)
    sys.path.insert(0, str(ROOT / "tests" / "nested"))
    import l1shell  # noqa: E402
    out = ROOT / "build" / "bench" / "net-guest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    print(f"guest kit: {tier.TCG_NOTE}", flush=True)
    res = l1shell.run(["/usr/bin/python3", __file__, "--guest-only",
                       str(out), binary], env={"LKVM": str(LKVM)},
                      name="bench-net", echo=False)
    if res.status != 0 or not out.exists():
        sys.exit(f"guest part in L1 failed ({res.status}, {res.why}):\n"
                 f"{res.l1.tail() if res.l1 else ''}")
    return json.loads(out.read_text())


def main():
    if sys.argv[1] == "--guest-only":
        Path(sys.argv[2]).write_text(json.dumps(guest_figures(sys.argv[3])))
        return
    binary = sys.argv[1]
    for path in (LKVM, GUEST, Path(binary)):
        if not path.exists():
            sys.exit(f"{path} missing: make lkvm guest-kit {binary}")
    t0 = time.monotonic()
    print(f"virtio-net: tap limit and lkvm from a host-thread driver, "
          f"{ROUNDS} x {SECONDS:g} s each, alternating (medians); guest "
          f"kit: {FRAMES} frames, modern virtio-pci, polling driver")
    host = {}
    for mode in MODES:
        runs = {"tap": [], "lkvm": []}
        for _ in range(ROUNDS):
            for side in ("tap", "lkvm"):
                runs[side].append(ring(binary, side, mode))
        host[mode] = {side: {k: statistics.median(r[k] for r in rs)
                             for k in rs[0]}
                      for side, rs in runs.items()}
    kit = guest_figures_where_kvm_is(binary)
    hdr = (f"{'mode':<7}{'tap fr/s':>10}{'lkvm fr/s':>11}{'lkvm/tap':>9}"
           f"{'tap us/fr':>10}{'lkvm us/fr':>11}{'tap/lkvm':>9}"
           f"{'guest fr/s':>11}{'VMM us/fr':>10}{'non-vCPU':>9}"
           f"{'exits/fr':>9}{'kicks/fr':>9}")
    print(hdr)
    print("-" * len(hdr))
    for mode in MODES:
        t, lk, g = host[mode]["tap"], host[mode]["lkvm"], kit[mode]
        print(f"{mode:<7}{t['rate']:>10.0f}{lk['rate']:>11.0f}"
              f"{lk['rate'] / t['rate']:>9.2f}{t['io_us']:>10.2f}"
              f"{lk['io_us']:>11.2f}{t['io_us'] / lk['io_us']:>9.2f}"
              f"{g['rate']:>11.0f}{g['cpu_us']:>10.1f}{g['other_us']:>9.2f}"
              f"{g['exits']:>9.4f}{g['kicks']:>9.4f}", flush=True)
    print(f"({time.monotonic() - t0:.0f} s in all)")
    print("""\
us/fr: CPU per frame of the thread doing the backend's work (lkvm's I/O
thread; the tap writer or reader). tap/lkvm of it is the share of the tap's
limit one lkvm I/O thread reaches given a core of its own; lkvm/tap of
frames/s is what this loaded 2-core box gave side by side (the lkvm run
has one more busy thread, the driver, than the tap writer). The goal is
>= 0.80. Guest figures are bound by the emulated guest (~1 us per guest
instruction on this software KVM); VMM us/fr includes that emulation,
non-vCPU is the I/O thread and the rest.""")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""virtio-net TCP throughput of a Debian guest under lkvm, kvmtool and QEMU,
side by side in one nested L1 boot.

One QEMU TCG L1 (tests/nested/l1shell.py: the host's / read-only over 9p,
the work tree read-write, a working /dev/kvm) runs this script again with
--in-l1, which boots the same L2 guest under each VMM variant in turn:

  lkvm --poll off, --poll auto (the default), --poll on
                  lkvm.static ($LKVM_NESTED_LKVM), the PVH vmlinux;
  kvmtool         $KVMTOOL, else ~/.cache/lkvm/peers/kvmtool
                  (scripts/peers/build-kvmtool.sh), the bzImage (it boots
                  no PVH ELF), its own default command line in front of
                  ours (noapic, reboot=k, ...);
  QEMU            /usr/bin/qemu-system-x86_64 -accel kvm -M pc -cpu host,
                  the PVH vmlinux (QEMU's pvh.bin option ROM).

The guest is Debian's generic kernel with a guest/init + busybox + virtio +
iperf3 initramfs, 1 vCPU, 256 MiB, one virtio-net card over modern
virtio-pci (every VMM's default) on a tap inside L1, served in user space
by the VMM (no vhost: L1 has no /dev/vhost-net). Each run gets a fresh tap
(pnet0, L1 at 169.254.80.1/24, the guest at .2: nothing leaves L1) and two
one-shot iperf3 servers in L1; the guest (tests/bench/net_peers_guest.sh)
runs iperf3 -c for LKVM_BENCH_NET_PEERS_SECONDS (default 5) guest -> L1,
then -R, L1 -> guest, and reports each client's JSON on the console. The
figure is the receiver's bit rate (the client's sum_received). The VMMs
take turns in LKVM_BENCH_NET_PEERS_ROUNDS rounds (default 3), each round in
a different order; medians are shown with every round's figure. A run that
gives no figures (the guest lost, a timeout) is run once more and said so.

Ending the guest: lkvm and QEMU power off through ACPI (guest/init's
end); kvmtool has no ACPI, so the guest runs busybox reboot, init reboots
and kvmtool's i8042 reset ends it ("KVM session ended normally"). Every
VMM gets a pipe as stdin that never delivers a byte: kvmtool polls stdin
for its console, and /dev/null (always readable, EOF) would spin that
thread at a full CPU.

lkvm's --stats are kept for every lkvm run; the table shows, for one run
per variant (the first that gave figures), the RX and TX queues' kicks
through ioeventfd, requests, poll hits and kicks per request (the whole
run: boot, pings and both iperf3 tests).

NESTED TCG: every L2 instruction and exit is emulated by QEMU's TCG under
L1's KVM. Absolute Mbit/s are correctness-level figures that say nothing
about real hardware; the ratios between VMMs in one run are what count.
A peer whose binary is missing is skipped (the output says so);
lkvm.static missing stops the benchmark. Files: build/bench/net-peers/
(the L2 initramfs, config.json, results.json, every run's console log).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "nested"))
import nested  # noqa: E402
sys.path.insert(0, str(HERE))
from peers import (kvmtool_binary, med, run_l1_part, stop,  # noqa: E402
                   version)

LKVM = Path(os.environ.get("LKVM_NESTED_LKVM") or ROOT / "lkvm.static")
QEMU = Path("/usr/bin/qemu-system-x86_64")
IPERF3 = Path("/usr/bin/iperf3")
GUEST_SCRIPT = HERE / "net_peers_guest.sh"
WORK = ROOT / "build" / "bench" / "net-peers"
ROUNDS = int(os.environ.get("LKVM_BENCH_NET_PEERS_ROUNDS", "3"))
SECONDS = int(os.environ.get("LKVM_BENCH_NET_PEERS_SECONDS", "5"))
# A whole run took 15-30 s here (boot, pings, both tests, the reports,
# the shutdown); the bound leaves room for a loaded box.
RUN_TIMEOUT = 180 + 2 * SECONDS
MEM, CPUS = 256, 1
TAP = "pnet0"
L1_ADDR = "169.254.80.1"
MAC = "02:4c:4b:50:00:01"
PORTS = {"fwd": 5201, "rev": 5202}
DIRS = (("fwd", "guest->L1"), ("rev", "L1->guest"))

# (label, kind, extra arguments); the lkvm ones first, the peers after.
VARIANTS = [
    ("lkvm --poll off", "lkvm", ["--poll", "off"]),
    ("lkvm --poll auto", "lkvm", ["--poll", "auto"]),
    ("lkvm --poll on", "lkvm", ["--poll", "on"]),
    ("kvmtool", "kvmtool", []),
    ("QEMU -M pc", "qemu", []),
]
NESTED_NOTE = ("NESTED TCG: L1 is a QEMU TCG guest and every L2 instruction"
               " and exit is emulated; absolute Mbit/s are correctness-level"
               " figures only, the ratios within this one run are what"
               " count")


# --- in L1 -----------------------------------------------------------------

def cmdline(end):
    return ("console=ttyS0 quiet panic=-1 lkvm.run=/net/peers-guest.sh,"
            f"{SECONDS},{MAC},{end}")


def vmm_command(kind, extra, cfg, stats):
    """argv of one run of a VMM variant."""
    net = f"mode=tap,tapif={TAP},guest_mac={MAC}"
    if kind == "lkvm":
        # lkvm's own timeout first: it says where the vCPU was.
        return [cfg["lkvm"], "run", "--timeout", str(RUN_TIMEOUT - 10),
                "-k", cfg["vmlinux"], "-i", cfg["initrd"], "-m", str(MEM),
                "-c", str(CPUS), "--name", "peers", "-n", net,
                "--stats", stats, *extra, "-p", cmdline("exit")]
    if kind == "kvmtool":
        return [cfg["kvmtool"], "run", "-k", cfg["bzimage"], "-i",
                cfg["initrd"], "-m", str(MEM), "-c", str(CPUS), "--name",
                "peers", "-n", net, *extra, "-p", cmdline("reboot")]
    # No option ROM on the card: direct kernel boot needs none.
    return [cfg["qemu"], "-accel", "kvm", "-M", "pc", "-cpu", "host",
            "-smp", str(CPUS), "-m", str(MEM), "-nodefaults", "-nographic",
            "-serial", "stdio", "-no-reboot", "-kernel", cfg["vmlinux"],
            "-initrd", cfg["initrd"], "-append", cmdline("exit"),
            "-netdev", f"tap,id=n0,ifname={TAP},script=no,downscript=no,"
            "vhost=off", "-device",
            f"virtio-net-pci,netdev=n0,mac={MAC},romfile=", *extra]


def sh(*argv):
    subprocess.run(argv, check=True, timeout=30, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def fresh_tap():
    """A new persistent tap with L1's address, up: a tap keeps the offloads
    its last user set, so none is reused."""
    subprocess.run(["ip", "link", "del", TAP], stderr=subprocess.DEVNULL)
    sh("ip", "tuntap", "add", "dev", TAP, "mode", "tap")
    sh("ip", "addr", "add", f"{L1_ADDR}/24", "dev", TAP)
    sh("ip", "link", "set", TAP, "up")


def parse_console(text):
    """The guest's @@PEERS facts and @@IPERF reports from a console log."""
    text = text.replace("\r", "")
    facts, reports = {}, {}
    for line in text.split("\n"):
        m = re.search(r"@@PEERS (.*)$", line)
        if m:
            facts = dict(w.split("=", 1) for w in m.group(1).split()
                         if "=" in w)
        m = re.search(r"@@IPERF (fwd|rev) (\{.*\})\s*$", line)
        if m:
            try:
                reports[m.group(1)] = json.loads(m.group(2))
            except ValueError:
                reports[m.group(1)] = {"error": "unreadable JSON"}
    return facts, reports


def mbits(report, key="sum_received"):
    try:
        return report["end"][key]["bits_per_second"] / 1e6
    except (KeyError, TypeError):
        return None


def net_queues(stats_path):
    """lkvm --stats: the card's RX and TX queue counters."""
    try:
        with open(stats_path) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return None
    dev = next((d for d in st.get("devices", [])
                if d.get("type") == "virtio-net"), None)
    if not dev:
        return None
    keys = ("kicks_eventfd", "kicks_exit", "requests", "poll_hits",
            "poll_misses", "interrupts")
    return {q: {k: dev["queues"][i].get(k) for k in keys}
            for i, q in enumerate(("rx", "tx"))}


def one_run(kind, extra, cfg, name):
    """Boot the guest under one VMM variant; its figures as a dict."""
    tmp = Path("/tmp/net-peers")
    tmp.mkdir(exist_ok=True)
    stats = tmp / "stats.json"
    log = tmp / "console.log"
    for p in (stats, log):
        p.unlink(missing_ok=True)
    fresh_tap()
    servers, vmm = {}, None
    t0 = time.monotonic()
    try:
        for d, port in PORTS.items():
            out = open(tmp / f"server-{d}.json", "wb")
            servers[d] = subprocess.Popen(
                [str(IPERF3), "-s", "-1", "-B", L1_ADDR, "-p", str(port),
                 "-J"], stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
            out.close()
        with open(log, "wb") as out:
            vmm = subprocess.Popen(vmm_command(kind, extra, cfg, str(stats)),
                                   stdin=subprocess.PIPE, stdout=out,
                                   stderr=subprocess.STDOUT,
                                   start_new_session=True)
        rc = stop(vmm, RUN_TIMEOUT)
        vmm.stdin.close()
    finally:
        if vmm is not None and vmm.poll() is None:
            stop(vmm, 0)
        # iperf3 -s -1 ends after its one test; one still there never had
        # it.
        for p in servers.values():
            stop(p, 2)
        subprocess.run(["ip", "link", "del", TAP], stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    text = log.read_text(errors="replace")
    shutil.copy(log, Path(cfg["work"]) / "runs" / f"{name}.log")
    facts, reports = parse_console(text)
    run = {"rc": rc, "wall": round(wall, 1), "facts": facts,
           "fwd": mbits(reports.get("fwd")), "rev": mbits(reports.get("rev")),
           "fwd_sent": mbits(reports.get("fwd"), "sum_sent"),
           "rev_sent": mbits(reports.get("rev"), "sum_sent")}
    # Cross-check: L1's server received what the guest's client says.
    try:
        srv = json.loads((tmp / "server-fwd.json").read_text())
        run["fwd_l1_bytes"] = srv["end"]["sum_received"]["bytes"]
        run["fwd_bytes"] = reports["fwd"]["end"]["sum_received"]["bytes"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if kind == "lkvm":
        run["stats"] = net_queues(stats)
    run["ok"] = (run["fwd"] is not None and run["rev"] is not None and
                 facts.get("driver") == "virtio_net")
    if not run["ok"]:
        tail = [x for x in text.replace("\r", "").split("\n") if x][-15:]
        run["tail"] = tail
        # kvmtool ends a VM that triple-faulted (KVM_EXIT_SHUTDOWN) as it
        # ends one that reset, "ended normally", exit 0; only the guest's
        # own reboot message tells them apart.
        if (kind == "kvmtool" and rc == 0 and
                "reboot: Restarting system" not in text):
            run["why"] = ("the guest stopped with no word from its kernel:"
                          " a triple fault, which kvmtool reports as a"
                          " normal end")
    return run


def fig(v):
    return "-" if v is None else f"{v:.1f}"


def l1_main(work):
    cfg = json.loads((work / "config.json").read_text())
    (work / "runs").mkdir(exist_ok=True)
    variants = [v for v in VARIANTS if cfg.get(v[1])]
    results = {label: {"runs": [], "retries": []} for label, _, _ in variants}
    t0 = time.monotonic()
    for r in range(ROUNDS):
        # A different order each round: drift hits every variant alike.
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for label, kind, extra in order:
            slug = re.sub(r"[^\w]+", "-", label).strip("-")
            run = one_run(kind, extra, cfg, f"r{r + 1}-{slug}")
            if not run["ok"]:
                # Once more: nested TCG loses an L2 now and then.
                results[label]["retries"].append(
                    {"round": r + 1, "rc": run["rc"], "facts": run["facts"],
                     "tail": run["tail"], "why": run.get("why")})
                print(f"net-peers: round {r + 1} {label}: no figures (exit "
                      f"{run['rc']}), once more", flush=True)
                run = one_run(kind, extra, cfg, f"r{r + 1}-{slug}-again")
            results[label]["runs"].append(run)
            print(f"net-peers: round {r + 1}/{ROUNDS} {label:<17} guest->L1 "
                  f"{fig(run['fwd'])} Mbit/s, L1->guest {fig(run['rev'])} "
                  f"Mbit/s, exit {run['rc']}, {run['wall']:.0f} s "
                  f"({time.monotonic() - t0:.0f} s in all)", flush=True)
            (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


# --- on the host ---------------------------------------------------------

def fmt(v, width, prec=1):
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{prec}f}"


def print_table(results, cfg, skipped):
    print()
    print(f"virtio-net TCP throughput, iperf3 {SECONDS} s each way between "
          f"L1 and a Debian {cfg['kernel']} guest")
    print(f"(1 vCPU, {MEM} MiB, virtio-net over modern virtio-pci on a tap "
          f"in L1, user-space backend, no vhost); medians of {ROUNDS} "
          "interleaved rounds")
    print("versions: " + "; ".join(f"{k}: {v}" for k, v in
                                   cfg["versions"].items()))
    print(f"*** {NESTED_NOTE} ***")
    for s in skipped:
        print(f"skipped: {s}")
    hdr = (f"{'VMM':<18}{'guest->L1 Mbit/s':>17}  {'rounds':<20}"
           f"{'L1->guest Mbit/s':>17}  {'rounds':<20}{'run s':>6}")
    print(hdr)
    print("-" * len(hdr))
    med_of = {}
    for label, res in results.items():
        runs = res["runs"]
        row = f"{label:<18}"
        for d, _ in DIRS:
            m = med(r[d] for r in runs)
            med_of[(label, d)] = m
            rounds = " ".join("-" if r[d] is None else f"{r[d]:.1f}"
                              for r in runs)
            row += f"{fmt(m, 17)}  {rounds:<20}"
        row += fmt(med(r["wall"] for r in runs), 6, 0)
        print(row)
    peers = [label for label in results
             if not label.startswith("lkvm")]
    lkvms = [label for label in results if label.startswith("lkvm")]
    if peers:
        print()
        print("ratios of the medians, lkvm / peer (> 1: lkvm faster)")
        hdr = f"{'':<18}" + "".join(
            f"{what + ' / ' + p.split()[0]:>22}" for _, what in DIRS
            for p in peers)
        print(hdr)
        print("-" * len(hdr))
        for lk in lkvms:
            row = f"{lk:<18}"
            for d, _ in DIRS:
                for p in peers:
                    a, b = med_of[(lk, d)], med_of[(p, d)]
                    row += fmt(a / b if a is not None and b else None, 22, 2)
            print(row)
    print()
    print("lkvm --stats, one run per variant (the whole run: boot, pings, "
          "both tests)")
    hdr = (f"{'variant':<18}{'queue':<7}{'kicks_eventfd':>14}"
           f"{'requests':>10}{'poll_hits':>11}{'kicks/request':>15}")
    print(hdr)
    print("-" * len(hdr))
    for lk in lkvms:
        run = next((r for r in results[lk]["runs"]
                    if r["ok"] and r.get("stats")), None)
        if run is None:
            print(f"{lk:<18}no --stats")
            continue
        for q in ("rx", "tx"):
            s = run["stats"][q]
            kicks = (s["kicks_eventfd"] or 0) + (s["kicks_exit"] or 0)
            per = kicks / s["requests"] if s["requests"] else None
            print(f"{lk if q == 'rx' else '':<18}{q.upper():<7}"
                  f"{s['kicks_eventfd']:>14}{s['requests']:>10}"
                  f"{s['poll_hits']:>11}{fmt(per, 15, 4)}")
    print("(RX asks for no kicks while it has buffers; poll_hits under "
          "--poll off are the thread\ncoming back for what a serve pass "
          "left over its budget, kicks still off, not polling)")
    odd = []
    for label, res in results.items():
        for t in res["retries"]:
            why = f" ({t['why']})" if t.get("why") else ""
            odd.append(f"{label}, round {t['round']}: no figures (exit "
                       f"{t['rc']}){why}, run once more; its last console "
                       "lines: " + " | ".join(t["tail"][-4:]))
        for i, r in enumerate(res["runs"]):
            if not r["ok"]:
                odd.append(f"{label}, round {i + 1}: no figures again (exit "
                           f"{r['rc']}): " + " | ".join(r["tail"][-4:]))
            elif ("fwd_l1_bytes" in r and
                  r["fwd_l1_bytes"] != r["fwd_bytes"]):
                odd.append(f"{label}, round {i + 1}: L1's server received "
                           f"{r['fwd_l1_bytes']} bytes, the guest's report "
                           f"says {r['fwd_bytes']}")
    for o in odd:
        print(f"note: {o}")
    print(f"*** {NESTED_NOTE} ***")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--in-l1":
        return l1_main(Path(sys.argv[2]))
    t0 = time.monotonic()
    if not LKVM.exists():
        sys.exit(f"net-peers: {LKVM} is missing (make lkvm.static); "
                 "nothing measured")
    if not IPERF3.exists():
        sys.exit(f"net-peers: {IPERF3} is missing: scripts/install-deps.sh")
    WORK.mkdir(parents=True, exist_ok=True)
    for p in [WORK / "results.json", *(WORK / "runs").glob("*.log")]:
        p.unlink(missing_ok=True)
    kernel = nested.fetch_kernels(["generic"])["generic"]
    nested.build_helpers()
    initrd = nested.build_l2_initramfs(
        str(WORK / "l2-peers.gz"), kernel,
        ["--add", f"{GUEST_SCRIPT}:/net/peers-guest.sh",
         "--binary", str(IPERF3)])
    cfg = {"lkvm": str(LKVM), "vmlinux": kernel["vmlinux"],
           "bzimage": kernel["bzimage"], "initrd": initrd,
           "kernel": kernel["version"], "work": str(WORK)}
    skipped = []
    kvmtool = kvmtool_binary()
    if os.access(kvmtool, os.X_OK):
        cfg["kvmtool"] = str(kvmtool)
    else:
        skipped.append(f"kvmtool: {kvmtool} is missing "
                       "(scripts/peers/build-kvmtool.sh; or set $KVMTOOL)")
    if os.access(QEMU, os.X_OK):
        cfg["qemu"] = str(QEMU)
    else:
        skipped.append(f"QEMU: {QEMU} is missing (qemu-system-x86)")
    cfg["versions"] = {"lkvm": version([str(LKVM), "version"])}
    if "kvmtool" in cfg:
        cfg["versions"]["kvmtool"] = version([cfg["kvmtool"], "version"])
    if "qemu" in cfg:
        cfg["versions"]["QEMU"] = version([cfg["qemu"], "--version"])
    (WORK / "config.json").write_text(json.dumps(cfg, indent=1))
    n = ROUNDS * len([v for v in VARIANTS if cfg.get(v[1])])
    print(f"net-peers: {n} L2 boots in one nested L1 (about half a minute "
          f"each); {NESTED_NOTE}", flush=True)
    for s in skipped:
        print(f"net-peers: skipped: {s}", flush=True)
    env = {"LKVM_BENCH_NET_PEERS_ROUNDS": str(ROUNDS),
           "LKVM_BENCH_NET_PEERS_SECONDS": str(SECONDS)}
    res = run_l1_part(__file__, WORK, env, "bench-net-peers", "net-peers: ",
                      900 + 2 * n * (RUN_TIMEOUT + 10))
    results = WORK / "results.json"
    failed = res.status != 0
    if not results.exists():
        return 1
    print_table(json.loads(results.read_text()), cfg, skipped)
    print(f"({time.monotonic() - t0:.0f} s in all, L1 {res.elapsed:.0f} s; "
          f"console logs in {WORK / 'runs'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Boot time of a Debian guest under lkvm, kvmtool and QEMU, side by side
in one nested L1 boot (issue 14: "boot faster than every peer").

One QEMU TCG L1 (tests/nested/l1shell.py: the host's / read-only over 9p,
the work tree read-write, a working /dev/kvm) runs this script again with
--in-l1, which boots the same guest under each variant in turn:

  lkvm bzImage, lkvm PVH   lkvm.static ($LKVM_NESTED_LKVM), the bzImage or
                           the extracted vmlinux through its PVH note;
                           lkvm's own default command line with the
                           guest's needs appended (--append) where `lkvm
                           run --help` offers --append, else
                           -p "console=ttyS0 quiet panic=-1 ..." (the
                           output says which);
  lkvm PVH -p              -p "console=ttyS0 quiet panic=-1 ...": no
                           default command line, to show what it gains;
  with LKVM_BENCH_BOOT_PEERS_ALL=1 also:
  lkvm PVH, no --stats     "lkvm PVH" without --stats (every other lkvm
                           variant has it), to show what timing its exits
                           costs;
  lkvm PVH initrd none|lz4|zstd
                           "lkvm PVH" with the initramfs uncompressed, or
                           compressed by lz4 -l or zstd (mkinitramfs
                           --compress; gzip is "lkvm PVH" itself);
  kvmtool bzImage          $KVMTOOL, else ~/.cache/lkvm/peers/kvmtool
                           (scripts/peers/build-kvmtool.sh); it boots no
                           PVH ELF and puts its own defaults (noacpi,
                           reboot=k, earlyprintk=serial, ...) in front of
                           -p;
  QEMU pc bzImage, QEMU pc PVH, QEMU microvm PVH
                           /usr/bin/qemu-system-x86_64 -accel kvm -cpu
                           host; -M pc through SeaBIOS (the PVH vmlinux via
                           its pvh.bin option ROM), -M microvm through qboot.

The guest is Debian's cloud kernel (the one issue 14 measured), 1 vCPU,
256 MiB, a guest/init + busybox initramfs from mkinitramfs that loads the
virtio modules; tests/bench/boot_peers_guest.sh prints "@@BOOTED up=S"
(the guest's /proc/uptime) at once and ends the VM. Every VMM's guest gets
"console=ttyS0 quiet panic=-1" so that the console costs all alike, and
no devices beyond the console (kvmtool: -n mode=none). QEMU -M pc also
gets pci=noacpi: with the PCI interrupt links set up through ACPI, every
port I/O from L2 user space takes a #GP in this nested set-up (iopl(3)
and ioperm() alike), which kills guest/init at its first instruction, the
write of the boot-profile port 0x502; -M microvm, lkvm and kvmtool are
not affected.

For each run: launch-to-init, the wall time from starting the VMM until
the marker line arrives on its stdout (read through a pipe and
timestamped line by line as it comes, the same for every VMM);
launch-to-exit, until the VMM process has ended; the guest's uptime at
the marker; for lkvm the --stats boot milestones (first_entry,
first_exit, init_start, exit_request: ms since lkvm's main()). The
variants take turns in LKVM_BENCH_BOOT_PEERS_ROUNDS rounds (default 7),
each round in a different order; medians are shown with every round's
figure. The guests' files and lkvm and kvmtool are copied to L1's own
/tmp first (the work tree's 9p mount has no page cache: a file read from
it pays 9p on every launch, which kvmtool and QEMU, from the cached host
root, would not for their binaries). A run whose marker never comes
(nested TCG loses an L2 now and then) is run once more and said so; a
variant lost twice in a row in the first round is dropped from the later
rounds, saying why. Another QEMU TCG process on the host (somebody else's
L1 on the same two cores) during the bench is reported as noise.

Tiny guests: launch-to-exit of lkvm with guest/kit/quick.elf (its first
instruction ends the VM) against kvmtool with guest/kit/peer/
quick_kvmtool.bin (an i8042 reset at once) and quick_kvmtool_tf.bin (a
triple fault), LKVM_BENCH_BOOT_PEERS_TINY_RUNS runs each (default 20),
interleaved, in L1 and on the host (whose KVM may be a software one);
a kvmtool guest that does not end it cleanly there is skipped, saying so.

NESTED TCG: every L2 instruction and exit is emulated by QEMU's TCG under
L1's KVM. Absolute seconds are correctness-level figures that say nothing
about real hardware; the ratios between variants in one run are what
count. A peer whose binary is missing is skipped (the output says so);
lkvm.static missing stops the benchmark. Files: build/bench/boot-peers/
(the initramfs variants, config.json, results.json, every run's console
log under runs/, each line with its arrival time).
"""
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
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
GUEST_SCRIPT = HERE / "boot_peers_guest.sh"
QUICK = ROOT / "guest" / "kit" / "quick.elf"
PEER_DIR = ROOT / "guest" / "kit" / "peer"
WORK = ROOT / "build" / "bench" / "boot-peers"
ROUNDS = int(os.environ.get("LKVM_BENCH_BOOT_PEERS_ROUNDS", "7"))
TINY_RUNS = int(os.environ.get("LKVM_BENCH_BOOT_PEERS_TINY_RUNS", "20"))
# A boot took 4-12 s here; the bound leaves room for a loaded box and a
# lost L2 (which then costs the whole of it).
RUN_TIMEOUT = 120
TINY_TIMEOUT = 20
MEM, CPUS = 256, 1
# What every guest gets, whatever its VMM adds.
ESSENTIALS = "console=ttyS0 quiet panic=-1"
MARKER = b"@@BOOTED up="
GOAL = 0.8
COMPRESSIONS = ("gzip", "none", "lz4", "zstd")
# inputs_open and vm_built too: in L1 reading and placing a 50 MB vmlinux
# is a good part of lkvm's time before the guest's first instruction.
MILESTONES = ("inputs_open", "vm_built", "first_entry", "first_exit",
              "init_start", "exit_request")
PREFIX = "boot-peers: "

# (label, VMM, kernel, initramfs compression, command line); the lkvm ones
# first, the peers after. Command line: "default" is lkvm's own with the
# guest's needs appended (where lkvm has --append), "plain" -p with only
# ours; the peers get theirs (see vmm_command). ",nostats": without
# --stats, to see what its clock reads per exit cost (L1's clocksource is
# the HPET, which TCG emulates).
VARIANTS = [
    ("lkvm bzImage", "lkvm", "bzimage", "gzip", "default"),
    ("lkvm PVH", "lkvm", "vmlinux", "gzip", "default"),
    ("lkvm PVH -p", "lkvm", "vmlinux", "gzip", "plain"),
]
# LKVM_BENCH_BOOT_PEERS_ALL=1: also these, which settled their questions
# (no initramfs compression boots clearly faster than gzip; --stats costs
# nothing measurable) in the runs the README quotes.
if os.environ.get("LKVM_BENCH_BOOT_PEERS_ALL") == "1":
    VARIANTS += [
        ("lkvm PVH, no --stats", "lkvm", "vmlinux", "gzip",
         "default,nostats"),
        ("lkvm PVH initrd none", "lkvm", "vmlinux", "none", "default"),
        ("lkvm PVH initrd lz4", "lkvm", "vmlinux", "lz4", "default"),
        ("lkvm PVH initrd zstd", "lkvm", "vmlinux", "zstd", "default"),
    ]
VARIANTS += [
    ("kvmtool bzImage", "kvmtool", "bzimage", "gzip", None),
    ("QEMU pc bzImage", "qemu", "bzimage", "gzip", "pc"),
    ("QEMU pc PVH", "qemu", "vmlinux", "gzip", "pc"),
    ("QEMU microvm PVH", "qemu", "vmlinux", "gzip", "microvm"),
]
# The tiny guests: (label, VMM, guest file).
TINY = [
    ("lkvm quick.elf", "lkvm", str(QUICK)),
    ("kvmtool i8042 reset", "kvmtool", str(PEER_DIR / "quick_kvmtool.bin")),
    ("kvmtool triple fault", "kvmtool",
     str(PEER_DIR / "quick_kvmtool_tf.bin")),
]
NESTED_NOTE = ("NESTED TCG: L1 is a QEMU TCG guest and every L2 instruction"
               " and exit is emulated; figures are correctness-level,"
               " ratios within one run count")


def slug(label):
    return re.sub(r"[^\w]+", "-", label).strip("-")


# --- tiny guests (in L1 and on the host) -----------------------------------

def local_path(cfg, path):
    """Where a file is read from: its copy in L1's /tmp if stage_inputs
    made one."""
    return cfg.get("local", {}).get(str(path), str(path))


def tiny_command(kind, guest, cfg):
    guest = local_path(cfg, guest)
    if kind == "lkvm":
        return [cfg["lkvm"], "run", "-q", "--timeout", str(TINY_TIMEOUT - 5),
                "-m", "64", "-c", "1", "-k", guest]
    # --nodefaults: no 9p root, no default command line; -n mode=none: no
    # network card. As lkvm has neither.
    return [cfg["kvmtool"], "run", "--nodefaults", "-n", "mode=none",
            "-m", "64", "-c", "1", "-k", guest]


def tiny_run(kind, argv):
    """One launch of a tiny guest: (wall s, None) or (wall s, why not)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        # stdin a pipe that never delivers a byte, for both: kvmtool polls
        # its stdin for the console.
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
        rc = stop(proc, TINY_TIMEOUT)
        wall = time.monotonic() - t0
        proc.stdin.close()
        out.seek(0)
        text = out.read().decode(errors="replace")
    if rc is None:
        return wall, f"did not end within {TINY_TIMEOUT} s"
    if rc != 0:
        return wall, f"exit {rc}: {text[-300:]!r}"
    # kvmtool says "ended normally" for a reset and a triple fault alike,
    # but a KVM_EXIT_INTERNAL_ERROR (a software KVM's triple fault) comes
    # with a register dump first: not a clean end.
    if kind == "kvmtool" and ("ended normally" not in text or
                              "Registers:" in text or
                              "KVM_EXIT" in text):
        return wall, f"not a clean end: {text[-300:]!r}"
    return wall, None


def todo_labels(todo):
    return [t[0] for t in todo]


def tiny_profile(cfg):
    """One more lkvm launch, with --stats, outside the timed ones: where
    lkvm's own time goes (its boot milestones and wall_ms, main() to
    exit)."""
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "stats.json")
        argv = tiny_command("lkvm", str(QUICK), cfg)
        _, err = tiny_run("lkvm", argv[:2] + ["--stats", stats] + argv[2:])
        if err:
            return None
        try:
            with open(stats) as f:
                st = json.load(f)
        except (OSError, ValueError):
            return None
    out = {b["mark"]: b["ms"] for b in st.get("boot", [])}
    out["wall_ms"] = st.get("wall_ms")
    return out


def tiny_bench(cfg, where, log=print):
    """TINY_RUNS interleaved launches of each tiny guest; a kvmtool guest
    that does not end cleanly in a first probe is skipped, saying why."""
    res = {}
    todo = []
    for label, kind, guest in TINY:
        if not cfg.get(kind):
            continue
        if not os.path.exists(guest):
            res[label] = {"skipped": f"{guest} is missing (make guest-kit "
                          "peer-kit)", "walls": []}
            continue
        wall, err = tiny_run(kind, tiny_command(kind, guest, cfg))
        if err:
            res[label] = {"skipped": f"a first launch failed ({err})",
                          "walls": []}
            log(f"{PREFIX}tiny {where}: {label} skipped: {err}")
            continue
        res[label] = {"walls": [], "errors": []}
        todo.append((label, kind, guest))
    for i in range(TINY_RUNS):
        # A different order each time: drift hits every guest alike.
        k = i % len(todo) if todo else 0
        for label, kind, guest in todo[k:] + todo[:k]:
            wall, err = tiny_run(kind, tiny_command(kind, guest, cfg))
            if err:
                res[label]["errors"].append(err)
            else:
                res[label]["walls"].append(wall)
    if "lkvm quick.elf" in todo_labels(todo):
        res["lkvm quick.elf"]["profile"] = tiny_profile(cfg)
    for label, r in res.items():
        if r.get("walls"):
            log(f"{PREFIX}tiny {where}: {label}: median "
                f"{med(r['walls']) * 1e3:.1f} ms over {len(r['walls'])} "
                f"runs, {len(r.get('errors', []))} failed")
    return res


# --- in L1 -----------------------------------------------------------------

def guest_cmdline(end):
    return f"lkvm.run=/boot-peers.sh,{end}"


def vmm_command(kind, kernel, comp, mode, cfg, stats):
    """argv of one run of a variant."""
    k = cfg[kernel]
    initrd = cfg["initrd"][comp]
    mode, _, nostats = (mode or "").partition(",")
    if kind == "lkvm":
        argv = [cfg["lkvm"], "run", "--timeout", str(RUN_TIMEOUT - 10),
                "-k", k, "-i", initrd, "-m", str(MEM), "-c", str(CPUS)]
        if not nostats:
            argv += ["--stats", stats]
        ours = f"{ESSENTIALS} {guest_cmdline('exit')}"
        if mode == "default" and cfg["append"]:
            # The essentials too: every guest has them whatever lkvm's
            # default holds (a repeated console= or quiet is harmless; a
            # default loglevel below quiet's would be raised to it).
            return argv + ["--append", ours]
        return argv + ["-p", ours]
    if kind == "kvmtool":
        return [cfg["kvmtool"], "run", "-k", k, "-i", initrd, "-m", str(MEM),
                "-c", str(CPUS), "-n", "mode=none", "-p",
                f"{ESSENTIALS} {guest_cmdline('reboot')}"]
    extra = " pci=noacpi" if mode == "pc" else ""
    return [cfg["qemu"], "-accel", "kvm", "-M", mode, "-cpu", "host",
            "-smp", str(CPUS), "-m", str(MEM), "-nodefaults", "-nographic",
            "-serial", "stdio", "-no-reboot", "-kernel", k, "-initrd", initrd,
            "-append", f"{ESSENTIALS}{extra} {guest_cmdline('exit')}"]


def read_console(proc, t0, deadline):
    """The VMM's stdout as (arrival s since t0, line) pairs until it ends
    or deadline passes; and when the marker came (None if it did not)."""
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    lines, part, t_init = [], b"", None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        # A short select keeps the deadline exact without a reader thread.
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            continue
        now = time.monotonic() - t0
        if not data:
            break       # EOF: the VMM has ended (or closed its stdout)
        part += data
        *done, part = part.split(b"\n")
        for line in done:
            lines.append((now, line.rstrip(b"\r")))
            if t_init is None and MARKER in line:
                t_init = now
    if part:
        lines.append((time.monotonic() - t0, part))
    return lines, t_init


def boot_marks(stats_path):
    """lkvm --stats: {milestone: ms since lkvm's main()}."""
    try:
        with open(stats_path) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return None
    return {b["mark"]: b["ms"] for b in st.get("boot", [])}


def one_run(kind, kernel, comp, mode, cfg, name):
    """Boot the guest under one variant; its figures as a dict."""
    tmp = Path("/tmp/boot-peers")
    tmp.mkdir(exist_ok=True)
    stats, err = tmp / "stats.json", tmp / "stderr.log"
    stats.unlink(missing_ok=True)
    argv = vmm_command(kind, kernel, comp, mode, cfg, str(stats))
    with open(err, "wb") as errf:
        t0 = time.monotonic()
        # stdin: a pipe that never delivers a byte (kvmtool polls its stdin
        # for the console; /dev/null, always readable, would spin it).
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errf,
                                start_new_session=True)
        try:
            lines, t_init = read_console(proc, t0, t0 + RUN_TIMEOUT)
            rc = stop(proc, max(1.0, t0 + RUN_TIMEOUT - time.monotonic()))
            t_exit = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                stop(proc, 0)
            proc.stdin.close()
            proc.stdout.close()
    text = [ln.decode(errors="replace") for _, ln in lines]
    up = cmdline = None
    for ln in text:
        m = re.search(r"@@BOOTED up=([\d.]+)", ln)
        if m and up is None:
            up = float(m.group(1))
        m = re.search(r"@@CMDLINE (.*)$", ln)
        if m and cmdline is None:
            cmdline = m.group(1).strip()
    stderr = err.read_bytes().decode(errors="replace")
    with open(Path(cfg["work"]) / "runs" / f"{name}.log", "w") as f:
        f.write("# " + " ".join(argv) + "\n")
        f.write(f"# exit {rc}, marker at {t_init} s, ended at "
                f"{t_exit:.3f} s after launch\n")
        for (t, _), ln in zip(lines, text):
            f.write(f"{t:9.3f}  {ln}\n")
        f.write("# --- stderr ---\n" + stderr)
    # Every VMM here ends with status 0 when the guest powers off (lkvm,
    # QEMU) or resets (kvmtool, "KVM session ended normally").
    clean = rc == 0
    run = {"ok": t_init is not None, "rc": rc,
           "init": None if t_init is None else round(t_init, 3),
           "exit": round(t_exit, 3) if clean else None,
           "wall": round(t_exit, 3), "up": up, "cmdline": cmdline}
    if kind == "lkvm" and stats.exists():
        run["marks"] = boot_marks(stats)
    if not run["ok"] or not clean:
        run["tail"] = [x for x in text + stderr.splitlines() if x][-12:]
        if rc is None:
            run["why"] = f"killed after {RUN_TIMEOUT} s"
    return run


def warm_up(cfg):
    """Read every input once, so that no run pays for 9p's first read of
    a kernel, an initramfs or a VMM (cache=loose keeps them in L1's page
    cache); and start each QEMU machine once on the tiny guest, which
    pulls in its firmware and libraries."""
    t0 = time.monotonic()
    files = [cfg["bzimage"], cfg["vmlinux"], cfg["lkvm"],
             *cfg["initrd"].values()]
    files += [cfg[k] for k in ("kvmtool", "qemu") if cfg.get(k)]
    for path in files:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    out = {"read_s": round(time.monotonic() - t0, 1)}
    if cfg.get("qemu"):
        for machine in ("pc", "microvm"):
            t1 = time.monotonic()
            try:
                # isa-debug-exit: quick.elf's write of 0 ends QEMU, status 1.
                rc = subprocess.run(
                    [cfg["qemu"], "-accel", "kvm", "-M", machine, "-cpu",
                     "host", "-m", "64", "-nodefaults", "-nographic",
                     "-serial", "stdio", "-no-reboot", "-device",
                     "isa-debug-exit,iobase=0x501,iosize=1", "-kernel",
                     local_path(cfg, QUICK)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    timeout=120).returncode
            except subprocess.TimeoutExpired:
                rc = None
            out[f"qemu_{machine}"] = {"rc": rc, "s": round(
                time.monotonic() - t1, 2)}
    return out


def stage_inputs(cfg):
    """Copy the guests' files and the VMMs that are single files (lkvm,
    kvmtool) to L1's own /tmp (ext4), and point cfg at the copies. The work
    tree's 9p mount has no page cache: a binary or initramfs read from it
    costs a 9p round trip per page on every launch (lkvm.static, from the
    work tree, paid 0.1-0.3 s a launch that kvmtool, from the cached host
    root, did not). QEMU stays on the host root (cache=loose), its
    libraries and firmware read once by warm_up."""
    dest = Path("/tmp/boot-peers/in")
    dest.mkdir(parents=True, exist_ok=True)
    local = {}

    def copy(path):
        if path not in local:
            to = dest / f"{len(local)}-{Path(path).name}"
            shutil.copy2(path, to)      # the mode too: executables
            local[path] = str(to)
        return local[path]

    for k in ("lkvm", "kvmtool", "bzimage", "vmlinux"):
        if cfg.get(k):
            cfg[k] = copy(cfg[k])
    cfg["initrd"] = {c: copy(p) for c, p in cfg["initrd"].items()}
    for guest in [str(QUICK)] + [g for _, _, g in TINY]:
        if os.path.exists(guest):
            copy(guest)
    cfg["local"] = local


def fig(v, prec=2):
    return "-" if v is None else f"{v:.{prec}f}"


def l1_main(work):
    cfg = json.loads((work / "config.json").read_text())
    (work / "runs").mkdir(exist_ok=True)
    results = {"boot": {}, "dropped": {}}
    t0 = time.monotonic()
    stage_inputs(cfg)
    results["warmup"] = warm_up(cfg)
    print(f"{PREFIX}warm-up: {results['warmup']}", flush=True)
    results["tiny_l1"] = tiny_bench(
        cfg, "L1", lambda s: print(s, flush=True))
    (work / "results.json").write_text(json.dumps(results, indent=1))
    variants = [v for v in VARIANTS
                if cfg.get(v[1]) and v[3] in cfg["initrd"]]
    for v in variants:
        results["boot"][v[0]] = {"runs": [], "retries": [],
                                 "argv": vmm_command(*v[1:], cfg, "STATS")}
    for r in range(ROUNDS):
        live = [v for v in variants if v[0] not in results["dropped"]]
        # A different order each round: drift hits every variant alike.
        k = r % len(live) if live else 0
        for label, kind, kernel, comp, mode in live[k:] + live[:k]:
            res = results["boot"][label]
            name = f"r{r + 1}-{slug(label)}"
            run = one_run(kind, kernel, comp, mode, cfg, name)
            if not run["ok"]:
                # Once more: nested TCG loses an L2 now and then.
                res["retries"].append({"round": r + 1, **run})
                print(f"{PREFIX}round {r + 1} {label}: no marker (exit "
                      f"{run['rc']}), once more", flush=True)
                run = one_run(kind, kernel, comp, mode, cfg, name + "-again")
                if not run["ok"] and r == 0:
                    results["dropped"][label] = (
                        "no marker twice in round 1: " +
                        " | ".join(run["tail"][-4:]))
            res["runs"].append(run)
            print(f"{PREFIX}round {r + 1}/{ROUNDS} {label:<21} init "
                  f"{fig(run['init'])} s, exit {fig(run['exit'])} s, up "
                  f"{fig(run['up'])} s, rc {run['rc']} "
                  f"({time.monotonic() - t0:.0f} s in all)", flush=True)
            (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


# --- on the host ---------------------------------------------------------

def fmt(v, width, prec=2):
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{prec}f}"


def print_tiny(title, res):
    if not res:
        return
    print()
    print(title)
    hdr = f"{'tiny guest':<22}{'runs ok':>8}{'median ms':>11}" \
          f"{'min ms':>9}{'max ms':>9}"
    print(hdr)
    print("-" * len(hdr))
    best = None
    for label, r in res.items():
        walls = r.get("walls") or []
        if r.get("skipped"):
            print(f"{label:<22}skipped: {r['skipped']}")
            continue
        m = med(walls)
        lo, hi = (min(walls), max(walls)) if walls else (None, None)
        n = len(walls) + len(r.get("errors", []))
        print(f"{label:<22}{len(walls):>5}/{n:<2}"
              + "".join(fmt(None if v is None else v * 1e3, w, 1)
                        for v, w in ((m, 11), (lo, 9), (hi, 9))))
        for e in r.get("errors", [])[:2]:
            print(f"  failed run: {e}")
        if label.startswith("kvmtool") and m and (best is None or
                                                   m < best[1]):
            best = (label, m)
    lk = med(res.get("lkvm quick.elf", {}).get("walls") or [])
    if lk and best:
        print(f"lkvm / {best[0]} (the faster kvmtool guest): "
              f"{lk / best[1]:.2f}")
    prof = res.get("lkvm quick.elf", {}).get("profile")
    if prof:
        print("lkvm's own clock, one more launch with --stats (ms since its "
              "main()): " + ", ".join(
                  f"{k} {prof[k]:.1f}" for k in
                  ("inputs_open", "vm_built", "first_entry", "exit_request",
                   "wall_ms") if prof.get(k) is not None))


def print_tables(results, cfg, skipped, tiny_host, notes):
    boot = results.get("boot", {})
    print()
    print(f"boot to init of Debian's {cfg['kernel']} kernel, {CPUS} vCPU, "
          f"{MEM} MiB, busybox + guest/init initramfs loading the virtio "
          f"modules; medians of {ROUNDS} interleaved rounds")
    print("versions: " + "; ".join(f"{k}: {v}" for k, v in
                                   cfg["versions"].items()))
    print(f"lkvm command line: {cfg['append_note']}")
    print(f"*** {NESTED_NOTE} ***")
    for s in skipped:
        print(f"skipped: {s}")
    for s in notes:
        print(f"note: {s}")
    print("launch-to-init: VMM start to the guest's marker line on the VMM's"
          " stdout; launch-to-exit:\nto the VMM's end; uptime: the guest's "
          "/proc/uptime at the marker. All in s.")
    hdr = (f"{'variant':<22}{'ok':>4}{'init':>7}{'exit':>7}{'uptime':>8}"
           f"  {'launch-to-init, each round (* = second try)'}")
    print(hdr)
    print("-" * len(hdr))
    meds = {}
    for label, res in boot.items():
        runs = res["runs"]
        ok = [r for r in runs if r["ok"]]
        mi = med(r["init"] for r in ok)
        me = med(r["exit"] for r in ok)
        meds[label] = (mi, me)
        again = {t["round"] for t in res["retries"]}
        rounds = " ".join(
            (fig(r["init"]) + ("*" if i + 1 in again else ""))
            for i, r in enumerate(runs))
        print(f"{label:<22}{len(ok):>2}/{len(runs):<1}{fmt(mi, 7)}"
              f"{fmt(me, 7)}{fmt(med(r['up'] for r in ok), 8)}  {rounds}")
        if label in results.get("dropped", {}):
            print(f"  dropped after round 1: {results['dropped'][label]}")
    peers = {lb: m for lb, m in meds.items()
             if not lb.startswith("lkvm") and m[0] is not None}
    if peers:
        best_i = min(peers, key=lambda lb: peers[lb][0])
        best_e = min((lb for lb in peers if peers[lb][1] is not None),
                     key=lambda lb: peers[lb][1], default=None)
        print()
        print(f"ratios of the medians, lkvm / best peer (launch-to-init: "
              f"{best_i}; launch-to-exit: {best_e}); goal <= {GOAL}")
        hdr = f"{'':<22}{'init':>8}{'exit':>8}  goal (init)"
        print(hdr)
        print("-" * len(hdr))
        for lb, (mi, me) in meds.items():
            if not lb.startswith("lkvm"):
                continue
            ri = mi / peers[best_i][0] if mi is not None else None
            re_ = (me / peers[best_e][1]
                   if me is not None and best_e else None)
            goal = "-" if ri is None else ("met" if ri <= GOAL else
                                           "not met")
            print(f"{lb:<22}{fmt(ri, 8)}{fmt(re_, 8)}  {goal}")
    print()
    print("lkvm --stats boot milestones, medians, ms since lkvm's main()")
    hdr = f"{'variant':<22}" + "".join(f"{m:>13}" for m in MILESTONES)
    print(hdr)
    print("-" * len(hdr))
    for label, res in boot.items():
        if not label.startswith("lkvm"):
            continue
        marks = [r["marks"] for r in res["runs"]
                 if r["ok"] and r.get("marks")]
        if not marks:
            continue
        print(f"{label:<22}" + "".join(
            fmt(med(m.get(k) for m in marks), 13, 0) for k in MILESTONES))
    comp = {}
    for c in COMPRESSIONS:
        label = "lkvm PVH" if c == "gzip" else f"lkvm PVH initrd {c}"
        runs = [r["init"] for r in boot.get(label, {}).get("runs", [])
                if r["ok"]]
        if runs:
            comp[c] = runs
    if len(comp) > 1:
        print()
        print("initramfs compression, lkvm PVH (launch-to-init, s)")
        hdr = f"{'compression':<13}{'size KiB':>10}{'median':>8}" \
              f"{'min':>7}{'max':>7}"
        print(hdr)
        print("-" * len(hdr))
        order = sorted(comp, key=lambda c: med(comp[c]))
        for c in order:
            size = cfg["initrd_kib"].get(c)
            print(f"{c:<13}{size:>10}{fmt(med(comp[c]), 8)}"
                  f"{fmt(min(comp[c]), 7)}{fmt(max(comp[c]), 7)}")
        if len(order) > 1:
            win, nxt = order[0], order[1]
            # Clear: even its slowest round beats the runner-up's median.
            clear = max(comp[win]) < med(comp[nxt])
            print(f"fastest: {win} ({med(comp[nxt]) - med(comp[win]):.2f} s "
                  f"ahead of {nxt}); " +
                  ("a clear win (its slowest round beats the runner-up's "
                   "median)" if clear else "not a clear win (its rounds "
                   "overlap the runner-up's median)"))
    print_tiny(f"tiny guests in L1: launch-to-exit, {TINY_RUNS} interleaved "
               "runs each", results.get("tiny_l1"))
    print_tiny(f"tiny guests on the host ({cfg['host_kvm']}): launch-to-exit,"
               f" {TINY_RUNS} interleaved runs each", tiny_host)
    odd = []
    for label, res in boot.items():
        for t in res["retries"]:
            why = f" ({t['why']})" if t.get("why") else ""
            odd.append(f"{label}, round {t['round']}: no marker (exit "
                       f"{t['rc']}){why}, run once more; its last console "
                       "lines: " + " | ".join(t.get("tail", [])[-4:]))
        for i, r in enumerate(res["runs"]):
            if not r["ok"]:
                odd.append(f"{label}, round {i + 1}: no marker again (exit "
                           f"{r['rc']})")
            elif r["exit"] is None:
                odd.append(f"{label}, round {i + 1}: the marker came but the"
                           f" VMM ended with {r['rc']} after {r['wall']} s: "
                           + " | ".join(r.get("tail", [])[-3:]))
    for o in odd:
        print(f"note: {o}")
    cmdlines = {lb: next((r["cmdline"] for r in res["runs"]
                          if r.get("cmdline")), None)
                for lb, res in boot.items()}
    print("guest command lines (the guest's /proc/cmdline):")
    for lb, c in cmdlines.items():
        if lb in ("lkvm bzImage", "lkvm PVH", "lkvm PVH -p",
                  "kvmtool bzImage", "QEMU pc PVH", "QEMU microvm PVH"):
            print(f"  {lb:<20} {c}")
    print("QEMU -M pc gets pci=noacpi: without it, L2 user-space port I/O "
          "takes a #GP in this nested set-up\nand guest/init dies on its "
          "boot-profile write to port 0x502 (see the script's text)")
    print(f"*** {NESTED_NOTE} ***")


def other_l1s():
    """pids of QEMU TCG processes this script did not start: somebody
    else's nested L1 sharing the two cores."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if (argv and b"qemu-system" in argv[0] and b"tcg" in argv and
                ppid != os.getpid()):
            pids.append(int(d))
    return pids


def watch_others(done, seen, every=2.0):
    """Until done is set, note every few seconds which other L1s run:
    seen[pid] = seconds it was seen for."""
    while not done.wait(every):
        for pid in other_l1s():
            seen[pid] = seen.get(pid, 0) + every


def lkvm_has_append(lkvm):
    try:
        out = subprocess.run([lkvm, "run", "--help"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--append" in out.stdout + out.stderr


def host_kvm():
    """What the host's /dev/kvm is, for the tiny-guest table's title."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return None
    if os.path.exists("/sys/module/kvm_pvm"):
        return "a software KVM, kvm_pvm"
    return "/dev/kvm"


def build_initrds(kernel):
    """The guest's initramfs in each compression the host can make."""
    out, skipped = {}, []
    for c in COMPRESSIONS:
        if c in ("lz4", "zstd") and not shutil.which(c):
            skipped.append(f"initramfs {c}: the {c} tool is missing "
                           f"(apt-get install {c})")
            continue
        path = str(WORK / f"l2-boot-peers.{c}")
        nested.mkinitramfs(path, "--init", nested.GUEST_INIT,
                           "--modules-dir", kernel["modules"],
                           "--add", f"{GUEST_SCRIPT}:/boot-peers.sh",
                           "--compress", c)
        out[c] = path
    return out, skipped


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--in-l1":
        return l1_main(Path(sys.argv[2]))
    if len(sys.argv) > 1:
        print(__doc__)
        return 0 if sys.argv[1] in ("-h", "--help") else 2
    t0 = time.monotonic()
    if not LKVM.exists():
        sys.exit(f"boot-peers: {LKVM} is missing (make lkvm.static); "
                 "nothing measured")
    WORK.mkdir(parents=True, exist_ok=True)
    for p in [WORK / "results.json", *(WORK / "runs").glob("*.log")]:
        p.unlink(missing_ok=True)
    kernel = nested.fetch_kernels(["cloud"])["cloud"]
    nested.build_helpers()
    initrds, skipped = build_initrds(kernel)
    append = lkvm_has_append(str(LKVM))
    cfg = {"lkvm": str(LKVM), "vmlinux": kernel["vmlinux"],
           "bzimage": kernel["bzimage"], "initrd": initrds,
           "initrd_kib": {c: os.path.getsize(p) // 1024
                          for c, p in initrds.items()},
           "kernel": kernel["version"], "work": str(WORK), "append": append,
           "append_note": (
               "lkvm's default + --append '...' (lkvm run --help offers "
               "--append)" if append else
               "-p '" + ESSENTIALS + " ...' for every lkvm variant (this "
               "lkvm has no --append yet: 'lkvm PVH' and 'lkvm PVH -p' are "
               "the same command)")}
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
    cfg["versions"] = {"lkvm": version([str(LKVM), "version"]),
                       "guest kernel": kernel["version"]}
    if "kvmtool" in cfg:
        cfg["versions"]["kvmtool"] = version([cfg["kvmtool"], "version"])
    if "qemu" in cfg:
        cfg["versions"]["QEMU"] = version([cfg["qemu"], "--version"])
    cfg["host_kvm"] = host_kvm() or "none"
    (WORK / "config.json").write_text(json.dumps(cfg, indent=1))
    print(f"{PREFIX}{cfg['append_note']}", flush=True)
    for s in skipped:
        print(f"{PREFIX}skipped: {s}", flush=True)

    # Somebody else's L1 on the same two cores slows ours unevenly: the
    # output says so when it happens.
    watch_done, others = threading.Event(), {}
    watcher = threading.Thread(target=watch_others,
                               args=(watch_done, others), daemon=True)
    watcher.start()
    for pid in other_l1s():
        print(f"{PREFIX}note: another QEMU TCG process (pid {pid}) is "
              "running: the figures will be noisier", flush=True)

    # On the host first, while nothing else of ours runs.
    tiny_host = None
    if host_kvm():
        print(f"{PREFIX}tiny guests on the host ({cfg['host_kvm']})",
              flush=True)
        tiny_host = tiny_bench(cfg, "host")
    else:
        skipped.append("tiny guests on the host: no usable /dev/kvm")

    n = ROUNDS * len([v for v in VARIANTS
                      if cfg.get(v[1]) and v[3] in initrds])
    print(f"{PREFIX}{n} L2 boots in one nested L1 (5-15 s each); "
          f"{NESTED_NOTE}", flush=True)
    env = {"LKVM_BENCH_BOOT_PEERS_ROUNDS": str(ROUNDS),
           "LKVM_BENCH_BOOT_PEERS_TINY_RUNS": str(TINY_RUNS)}
    res = run_l1_part(__file__, WORK, env, "bench-boot-peers", PREFIX,
                      900 + 2 * n * (RUN_TIMEOUT + 10))
    results_path = WORK / "results.json"
    failed = res.status != 0
    if not results_path.exists():
        return 1
    watch_done.set()
    watcher.join()
    notes = []
    if others:
        notes.append(
            "NOISE: other QEMU TCG processes (somebody else's L1) ran "
            "during this bench: " + ", ".join(
                f"pid {p} for ~{t:.0f} s" for p, t in others.items()) +
            f" of {time.monotonic() - t0:.0f} s")
    results = json.loads(results_path.read_text())
    results["tiny_host"] = tiny_host
    results["config"] = cfg
    results["skipped"] = skipped
    results["notes"] = notes
    results_path.write_text(json.dumps(results, indent=1))
    print_tables(results, cfg, skipped, tiny_host, notes)
    print(f"({time.monotonic() - t0:.0f} s in all, L1 {res.elapsed:.0f} s; "
          f"console logs in {WORK / 'runs'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""How often does a nested L1 under QEMU's TCG freeze? Boot it many times.

Each boot is one l1shell.py L1 (the host's files over 9p, the scratch
/tmp) running a fixed workload, by default the guest kit's test_kit.py (33
tiny guests, 1 to 4 vCPUs each: the kind of load that froze L1 in CI).
Nothing is retried. A boot ends as

  ok        the workload finished and L1 powered off
  stalled   L1's kernel reported a stall or lockup (nested.L1_STUCK) but
            finished within --grace seconds after it (not a real freeze)
  frozen    it reported one and did not finish, or its console went silent
  died      QEMU exited before L1 was done (a triple fault, say)
  failed    L1 finished but the workload failed (not the emulator's fault)

and one JSON line per boot goes to build/soak/VARIANT.jsonl; the summary
gives the freeze rate. A variant is a set of QEMU and L1 kernel options:

    tests/nested/l1soak.py --boots 50 --variant base
    tests/nested/l1soak.py --boots 50 --variant smp1 --cpus 1
    tests/nested/l1soak.py --variant clock --append clocksource=hpet

Run it alone: it uses both cores for as long as it takes (~40 s a boot).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import l1shell  # noqa: E402
import nested  # noqa: E402

WORKLOAD = ["/usr/bin/python3", "-m", "pytest", "-v", "-p",
            "no:cacheprovider", "tests/kit/test_kit.py"]


def one_boot(args, kernel, i):
    name = "soak-%s" % args.variant
    initrd = l1shell.build_initramfs(
        os.path.join(l1shell.WORK, name + ".cpio"), kernel,
        l1shell.command_script(args.workload, l1shell.TOP, {}),
        hold=not args.no_hold)
    log = os.path.join(l1shell.WORK, "%s-%d.console.log" % (name, i))
    scratch = l1shell.make_scratch(os.path.join(l1shell.WORK,
                                                name + ".scratch.img"))
    qemu = l1shell.qemu_args(scratch) + args.qemu_arg
    res = nested.boot_l1(kernel.get("vmlinux") or kernel["bzimage"], initrd,
                         args.timeout, log=log, mem=l1shell.L1_MEM,
                         cpus=args.cpus, qemu_args=qemu,
                         append=" ".join(["nokaslr"] + args.append),
                         silence=args.silence, stuck_grace=args.grace,
                         kallsyms=l1shell.kallsyms_path(kernel))
    os.unlink(scratch)
    job = res.jobs.get("run")
    if res.completed and job and job.exit == 0:
        outcome = "stalled" if res.stalled_at is not None else "ok"
    elif res.completed:
        outcome = "failed"
    elif res.stuck or res.timed_out:
        outcome = "frozen"
    else:
        outcome = "died"
    if outcome in ("ok", "failed"):
        os.unlink(log)          # keep the consoles worth reading
    return {"boot": i, "outcome": outcome, "seconds": round(res.elapsed, 1),
            "stalled_at": res.stalled_at, "workload_exit":
            job.exit if job else None, "log": log}


def summarize(path):
    rows = [r for r in map(json.loads, filter(str.strip, open(path)))
            if r["outcome"] != "header"]
    counts = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    bad = counts.get("frozen", 0) + counts.get("died", 0)
    print("%s: %d boots: %s; L1 lost in %d (%.0f%%)" % (
        os.path.basename(path), len(rows),
        ", ".join("%s %d" % kv for kv in sorted(counts.items())), bad,
        100.0 * bad / max(len(rows), 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--boots", type=int, default=50)
    ap.add_argument("--variant", default="base")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--append", action="append", default=[],
                    help="more L1 kernel command line")
    ap.add_argument("--qemu-arg", action="append", default=[])
    ap.add_argument("--grace", type=int, default=120,
                    help="seconds L1 may take to recover from a stall")
    ap.add_argument("--silence", type=int, default=180)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--no-hold", action="store_true",
                    help="without kvm-hold (the set-up before it)")
    ap.add_argument("--summary", action="store_true",
                    help="only summarize the variant's results so far")
    ap.add_argument("workload", nargs="*", default=WORKLOAD)
    args = ap.parse_args()
    out_dir = os.path.join(l1shell.TOP, "build", "soak")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, args.variant + ".jsonl")
    if args.summary:
        summarize(out)
        return 0
    os.makedirs(l1shell.WORK, exist_ok=True)
    kernel = nested.fetch_kernels(["generic"])["generic"]
    nested.build_helpers()
    with open(out, "a") as f:
        f.write(json.dumps({"variant": args.variant, "cpus": args.cpus,
                            "hold": not args.no_hold,
                            "append": args.append, "qemu": args.qemu_arg,
                            "started": time.strftime("%F %T"),
                            "outcome": "header"}) + "\n")
    for i in range(args.boots):
        row = one_boot(args, kernel, i)
        print("%s boot %d: %s in %.0f s%s" % (
            args.variant, i, row["outcome"], row["seconds"],
            "" if row["stalled_at"] is None else
            " (stall reported at %.0f s)" % row["stalled_at"]), flush=True)
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
    summarize(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Run one test tier where this machine can run it, and account for it.

lkvm's tiers (unit, bad input, guest kit, nested Linux, ...) are run by the
make targets in tests/*/*.mk through this script, which

  - picks where a tier runs: on the host, or, for a tier that needs a KVM
    (--needs-kvm) when the host's /dev/kvm is missing or unusable, inside a
    nested L1 under QEMU's TCG (tests/nested/l1shell.py), with the same
    test files, the same binaries and the same assertions;
  - counts what ran (pytest's JUnit XML, cmocka's per-test lines) and says
    it in one line: where, passed, failed, skipped, seconds;
  - fails the tier when anything failed, when it ran no test, or when any
    test was skipped: on these machines every environment a test asks for
    can be had (the nested L1 provides a KVM, root provides namespaces),
    so a skip is a hole in CI, not a pass;
  - records the result in build/tiers/results.jsonl, so that `summary` can
    print every tier and fail when an expected one never reported.

    tests/tier.py run [--needs-kvm] [--sanitize] NAME PYTEST-ARGS...
    tests/tier.py run [--sanitize] --cmocka [--runner CMD] NAME BINARY...
    tests/tier.py summary [--expect NAME...]
    tests/tier.py reset
    tests/tier.py exec [--needs-kvm] NAME COMMAND...
    tests/tier.py where [--needs-kvm]

`exec` runs a command that is not a test (a benchmark) in the same place a
tier would run, and says so when that is the nested L1: figures from there
are distorted by QEMU's TCG (every guest instruction and exit emulated),
so only ratios within one run mean anything. `where` prints where a tier
would run (host or nested), for scripts/test.sh, which runs the guest kit
beside the fuzz tier only when both use one of the host's cores.

LKVM_TEST_KVM=host|nested overrides the choice (auto by default: the host
when `lkvm probe` finds a hardware or software KVM there, else nested); a
test of this script uses it to take the path the machine would not.
Stdlib only.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULTS_DIR = os.environ.get("LKVM_TIER_RESULTS",
                             os.path.join(TOP, "build", "tiers"))
RESULTS = os.path.join(RESULTS_DIR, "results.jsonl")
PYTEST = ["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]

# `lkvm probe` statuses (core/main.c).
PROBE = {0: "hardware", 2: "software", 3: "none", 1: "unusable"}


class Outcome:
    """What one tier did."""

    def __init__(self, name, where):
        self.name, self.where = name, where
        self.passed = self.failed = self.skipped = 0
        self.skip_reasons = []
        self.problems = []          # why the tier failed, beyond tests
        self.notes = []             # what the summary should say anyway
        self.seconds = 0.0

    @property
    def ok(self):
        return not self.problems and not self.failed and \
            not self.skipped and self.passed > 0

    def verdict(self):
        why = list(self.problems)
        if self.failed:
            why.append("%d failed" % self.failed)
        if self.skipped:
            why.append("%d skipped, which this machine must not: %s" % (
                self.skipped, "; ".join(sorted(set(self.skip_reasons)))))
        if not self.passed and not self.failed:
            why.append("ran no test")
        return "ok" if self.ok else "FAILED (%s)" % ", ".join(why)

    def line(self):
        return ("tier %-22s %-44s %4d passed %3d failed %3d skipped %6.0f s"
                "  %s%s" % (self.name, self.where, self.passed, self.failed,
                            self.skipped, self.seconds, self.verdict(),
                            "".join("; " + n for n in self.notes)))

    def record(self):
        os.makedirs(RESULTS_DIR, exist_ok=True)
        with open(RESULTS, "a") as f:
            f.write(json.dumps({
                "name": self.name, "where": self.where,
                "passed": self.passed, "failed": self.failed,
                "skipped": self.skipped, "skip_reasons": self.skip_reasons,
                "problems": self.problems, "notes": self.notes,
                "seconds": round(self.seconds, 1),
                "ok": self.ok}) + "\n")


def lkvm_probe(lkvm):
    """'hardware', 'software', 'none' or 'unusable', and lkvm's sentence."""
    try:
        p = subprocess.run([lkvm, "probe"], capture_output=True, text=True,
                           timeout=30)
    except OSError as e:
        return "unusable", "cannot run %s: %s" % (lkvm, e)
    return PROBE.get(p.returncode, "unusable"), p.stdout.strip()


def choose_place(needs_kvm, lkvm):
    """('host' or 'nested', a label saying why)."""
    if not needs_kvm:
        return "host", "host (needs no KVM)"
    forced = os.environ.get("LKVM_TEST_KVM", "auto")
    if forced not in ("auto", "host", "nested"):
        raise SystemExit("tier: LKVM_TEST_KVM=%s: host, nested or auto"
                         % forced)
    kind, _ = lkvm_probe(lkvm)
    if forced == "nested" or (forced == "auto" and
                              kind in ("none", "unusable")):
        why = "forced" if forced == "nested" else "host KVM: %s" % kind
        return "nested", "nested L1, QEMU TCG (%s)" % why
    return "host", "host KVM (%s%s)" % (kind,
                                        ", forced" if forced == "host" else "")


def read_junit(path, out):
    """Add a pytest JUnit XML file's counts to out."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        out.problems.append("no test report (%s)" % e)
        return
    for case in root.iter("testcase"):
        kids = {c.tag: c for c in case}
        if "failure" in kids or "error" in kids:
            out.failed += 1
        elif "skipped" in kids:
            out.skipped += 1
            out.skip_reasons.append(kids["skipped"].get("message", "?"))
        else:
            out.passed += 1


CMOCKA_LINE = re.compile(r"^\[ *(OK|FAILED|SKIPPED|ERROR) *\] (\S+)\s*$")


def read_cmocka(text, out):
    """Add a cmocka binary's per-test results to out (a failed test is
    listed twice by cmocka: once as it runs, once in the summary)."""
    results = {}
    for line in text.splitlines():
        m = CMOCKA_LINE.match(line)
        if m and "test(s)" not in line:
            results.setdefault(m.group(2), m.group(1))
    for name, kind in results.items():
        if kind == "OK":
            out.passed += 1
        elif kind == "SKIPPED":
            out.skipped += 1
            out.skip_reasons.append("cmocka skip in " + name)
        else:
            out.failed += 1


def run_cmocka(binaries, out, runner=""):
    """runner: a command line each binary runs under (qemu-user for the
    cross-built arm64 ones, which binfmt_misc is not set up to start)."""
    for b in binaries:
        print("== %s" % b, flush=True)
        p = subprocess.run(shlex.split(runner) + [b], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(p.stdout)
        before = out.failed
        read_cmocka(p.stdout, out)
        if p.returncode and out.failed == before:
            out.problems.append("%s exited %d" % (os.path.basename(b),
                                                  p.returncode))


def junit_path(name):
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, name.replace(":", "-") + ".xml")
    if os.path.exists(path):
        os.unlink(path)
    return path


def run_pytest_host(args, junit, env):
    return subprocess.run(PYTEST + ["--junitxml=" + junit] + args, cwd=TOP,
                          env=env).returncode


def run_pytest_nested(args, junit, env, out):
    sys.path.insert(0, os.path.join(TOP, "tests", "nested"))
    import l1shell  # noqa: E402  (only the nested path needs QEMU)
    # One line per test: the console shows L1 is alive, and where it froze.
    verbose = [a if a != "-q" else "-v" for a in PYTEST]
    # L1 sees the host's files read-only but the work tree: the report is
    # written there and moved where it was asked for.
    staged = os.path.join(TOP, "build", "tiers", "l1-" +
                          os.path.basename(junit))
    os.makedirs(os.path.dirname(staged), exist_ok=True)
    if os.path.exists(staged):
        os.unlink(staged)
    res = l1shell.run(verbose + ["--junitxml=" + staged] + args, cwd=TOP,
                      env={k: env[k] for k in ("LKVM", "ASAN_OPTIONS",
                                               "UBSAN_OPTIONS")
                           if k in env},
                      name=out.name.replace(":", "-"))
    if res.retried:
        out.notes.append("L1 booted twice, the first %s" %
                         res.retried.split(";")[0].replace("L1 ", "", 1))
        print("tier %s: L1 was booted again: %s" % (out.name, res.retried),
              flush=True)
    if res.status is None:
        out.problems.append("L1 did not finish: %s" % res.why)
    elif os.path.exists(staged):
        shutil.move(staged, junit)
    return res.status


def run_tier(args):
    lkvm = os.environ.get("LKVM") or os.path.join(TOP, "lkvm")
    name = args.name + (":sanitize" if args.sanitize else "")
    place, label = choose_place(args.needs_kvm, lkvm)
    out = Outcome(name, label)
    start = time.monotonic()
    print("tier %s: running on %s" % (name, label), flush=True)
    if args.cmocka:
        run_cmocka(args.command, out, args.runner)
    else:
        junit = junit_path(name)
        env = dict(os.environ, LKVM=lkvm)
        if place == "nested":
            status = run_pytest_nested(args.command, junit, env, out)
        else:
            status = run_pytest_host(args.command, junit, env)
        if status is not None:
            read_junit(junit, out)
            if status not in (0, 1) and not out.problems:
                out.problems.append("pytest exited %d" % status)
    out.seconds = time.monotonic() - start
    out.record()
    print(out.line(), flush=True)
    return 0 if out.ok else 1


TCG_NOTE = ("no usable KVM on this host: these figures come from a nested L1 "
            "under QEMU's TCG, where every guest instruction and every exit "
            "is emulated; read them as ratios within this run, not as "
            "absolute times")


def exec_command(args):
    lkvm = os.environ.get("LKVM") or os.path.join(TOP, "lkvm")
    place, label = choose_place(args.needs_kvm, lkvm)
    if place == "host":
        return subprocess.run(args.command, cwd=TOP).returncode
    print("%s: %s" % (args.name, TCG_NOTE), flush=True)
    sys.path.insert(0, os.path.join(TOP, "tests", "nested"))
    import l1shell  # noqa: E402
    env = {k: os.environ[k] for k in os.environ
           if k.startswith("LKVM") and k != "LKVM_TEST_KVM"}
    env["LKVM"] = lkvm
    res = l1shell.run(args.command, cwd=TOP, env=env, name=args.name)
    if res.status is None:
        print("%s: L1 did not finish: %s" % (args.name, res.why))
        return 1
    print("%s: [%s] %s" % (args.name, label, TCG_NOTE), flush=True)
    return res.status


def load_results():
    try:
        with open(RESULTS) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def summary(args):
    results = load_results()
    print("== lkvm test tiers (%s)" % RESULTS)
    bad = 0
    for r in results:
        o = Outcome(r["name"], r["where"])
        o.passed, o.failed, o.skipped = r["passed"], r["failed"], r["skipped"]
        o.skip_reasons, o.problems = r["skip_reasons"], r["problems"]
        o.notes = r.get("notes", [])
        o.seconds = r["seconds"]
        print(o.line())
        bad += not o.ok
    seen = {r["name"] for r in results}
    for name in args.expect or []:
        if name not in seen:
            print("tier %-22s never ran: FAILED (a tier this machine can "
                  "run reported nothing)" % name)
            bad += 1
    total = sum(r["passed"] for r in results)
    print("== %d tiers, %d tests passed; %s" % (
        len(results), total, "all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("name")
    r.add_argument("--needs-kvm", action="store_true")
    r.add_argument("--sanitize", action="store_true")
    r.add_argument("--cmocka", action="store_true")
    r.add_argument("--runner", default="")
    r.add_argument("command", nargs=argparse.REMAINDER)
    s = sub.add_parser("summary")
    s.add_argument("--expect", nargs="*")
    sub.add_parser("reset")
    w = sub.add_parser("where")
    w.add_argument("--needs-kvm", action="store_true")
    e = sub.add_parser("exec")
    e.add_argument("--needs-kvm", action="store_true")
    e.add_argument("name")
    e.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.cmd == "run":
        if args.command[:1] == ["--"]:
            args.command = args.command[1:]
        return run_tier(args)
    if args.cmd == "summary":
        return summary(args)
    if args.cmd == "exec":
        return exec_command(args)
    if args.cmd == "where":
        lkvm = os.environ.get("LKVM") or os.path.join(TOP, "lkvm")
        print(choose_place(args.needs_kvm, lkvm)[0])
        return 0
    if os.path.exists(RESULTS):
        os.unlink(RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())

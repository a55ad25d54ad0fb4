# SPDX-License-Identifier: GPL-2.0
"""tests/tier.py's rules, which keep CI honest: a tier fails on a failed
test, on any skip and on no test at all; the summary fails when an
expected tier never reported; a tier that needs a KVM runs on the host's
or in a nested L1, and LKVM_TEST_KVM forces either. The last two tests run
one real kit test each way, so both paths work on whatever machine this
is (one of them is the path the machine would not take by itself)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIER = ROOT / "tests" / "tier.py"
LKVM = os.environ.get("LKVM") or str(ROOT / "lkvm")
sys.path.insert(0, str(ROOT / "tests"))
import tier  # noqa: E402


def outcome(passed=0, failed=0, skipped=0):
    o = tier.Outcome("t", "here")
    o.passed, o.failed, o.skipped = passed, failed, skipped
    o.skip_reasons = ["why"] * skipped
    return o


def test_what_fails_a_tier():
    assert outcome(passed=3).ok
    assert not outcome(passed=3, failed=1).ok
    assert not outcome(passed=3, skipped=1).ok
    assert "skipped" in outcome(passed=3, skipped=1).verdict()
    assert not outcome().ok
    assert "ran no test" in outcome().verdict()


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite
 name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="a" name="ok1"/><testcase classname="a" name="ok2"/>
<testcase classname="a" name="bad"><failure message="x"/></testcase>
<testcase classname="a" name="err"><error message="y"/></testcase>
<testcase classname="a" name="skip"><skipped message="no /dev/kvm"/>
</testcase></testsuite></testsuites>"""


def test_junit_counts(tmp_path):
    (tmp_path / "r.xml").write_text(JUNIT)
    o = tier.Outcome("t", "here")
    tier.read_junit(tmp_path / "r.xml", o)
    assert (o.passed, o.failed, o.skipped) == (2, 2, 1)
    assert o.skip_reasons == ["no /dev/kvm"]
    assert not o.ok


def test_missing_report_is_a_failure(tmp_path):
    o = tier.Outcome("t", "here")
    tier.read_junit(tmp_path / "none.xml", o)
    assert o.problems and not o.ok


CMOCKA = """[==========] 4 test(s) run.
[ RUN      ] test_a
[       OK ] test_a
[ RUN      ] test_b
[  FAILED  ] test_b
[ RUN      ] test_c
[  SKIPPED ] test_c
[ RUN      ] test_d
[  ERROR   ] test_d
[  PASSED  ] 1 test(s).
[  FAILED  ] 2 test(s), listed below:
[  FAILED  ] test_b
"""


def test_cmocka_counts():
    o = tier.Outcome("t", "here")
    tier.read_cmocka(CMOCKA, o)
    # test_b is listed twice (as it runs, and below the summary)
    assert (o.passed, o.failed, o.skipped) == (1, 2, 1)


def run_tier(tmp_path, *args, env=None):
    e = dict(os.environ, LKVM_TIER_RESULTS=str(tmp_path / "results"),
             **(env or {}))
    return subprocess.run([sys.executable, str(TIER), *args],
                          capture_output=True, text=True, env=e,
                          timeout=1800)


def results(tmp_path):
    path = tmp_path / "results" / "results.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines()]


@pytest.fixture
def suite(tmp_path):
    d = tmp_path / "suite"
    d.mkdir()
    (d / "test_s.py").write_text(textwrap.dedent("""
        import os, pytest
        def test_passes():
            pass
        @pytest.mark.skipif(os.environ.get("SKIP_ONE") == "1",
                            reason="no such thing here")
        def test_may_skip():
            pass
        """))
    return d


def test_a_skip_fails_the_tier(tmp_path, suite):
    p = run_tier(tmp_path, "run", "plain", str(suite))
    assert p.returncode == 0, p.stdout + p.stderr
    p = run_tier(tmp_path, "run", "skipping", str(suite),
                 env={"SKIP_ONE": "1"})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "no such thing here" in p.stdout
    r = {x["name"]: x for x in results(tmp_path)}
    assert r["plain"]["ok"] and r["plain"]["passed"] == 2
    assert not r["skipping"]["ok"] and r["skipping"]["skipped"] == 1


def test_no_test_fails_the_tier(tmp_path, suite):
    p = run_tier(tmp_path, "run", "empty", str(suite), "-k", "nothing")
    assert p.returncode == 1 and "ran no test" in p.stdout, p.stdout


def test_a_tier_that_never_ran_fails_the_summary(tmp_path, suite):
    """What make check does with the tiers it expected: a tier whose
    target never got as far as running is a failure, not a gap."""
    assert run_tier(tmp_path, "run", "unit", str(suite)).returncode == 0
    p = run_tier(tmp_path, "summary", "--expect", "unit")
    assert p.returncode == 0, p.stdout
    p = run_tier(tmp_path, "summary", "--expect", "unit", "kit")
    assert p.returncode == 1, p.stdout
    assert "kit" in p.stdout and "never ran" in p.stdout


def fake_lkvm(tmp_path, status):
    f = tmp_path / ("lkvm-probe-%d" % status)
    f.write_text("#!/bin/sh\necho 'verdict: made up'\nexit %d\n" % status)
    f.chmod(0o755)
    return str(f)


@pytest.mark.parametrize("status,place", [(0, "host"), (2, "host"),
                                          (3, "nested"), (1, "nested")])
def test_where_a_kvm_tier_runs(tmp_path, monkeypatch, status, place):
    monkeypatch.delenv("LKVM_TEST_KVM", raising=False)
    assert tier.choose_place(True, fake_lkvm(tmp_path, status))[0] == place
    assert tier.choose_place(False, fake_lkvm(tmp_path, status))[0] == "host"


@pytest.mark.parametrize("forced", ["host", "nested"])
def test_the_switch_overrides(tmp_path, monkeypatch, forced):
    monkeypatch.setenv("LKVM_TEST_KVM", forced)
    for status in (0, 3):
        where = tier.choose_place(True, fake_lkvm(tmp_path, status))
        assert where[0] == forced and "forced" in where[1]


KIT_TEST = ["tests/kit/test_kit.py", "-k", "test_exit_status and 7"]


def test_kit_forced_into_nested_l1(tmp_path):
    """One kit test through the nested path, whatever this machine has:
    it must run in L1 and pass there."""
    p = run_tier(tmp_path, "run", "--needs-kvm", "kit-nested", *KIT_TEST,
                 env={"LKVM_TEST_KVM": "nested", "LKVM": LKVM})
    r = results(tmp_path)[-1]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert r["ok"] and r["passed"] == 1 and "nested L1" in r["where"], r


def test_kit_forced_onto_the_host(tmp_path):
    """The same test on the host, whatever this machine has: it passes
    where the host has a KVM, and where it has none the kit says so and
    the tier fails (never a skip)."""
    kind, _ = tier.lkvm_probe(LKVM)
    p = run_tier(tmp_path, "run", "--needs-kvm", "kit-host", *KIT_TEST,
                 env={"LKVM_TEST_KVM": "host", "LKVM": LKVM})
    r = results(tmp_path)[-1]
    assert "host KVM" in r["where"], r
    if kind in ("hardware", "software"):
        assert p.returncode == 0 and r["passed"] == 1, p.stdout
    else:
        assert p.returncode == 1 and not r["ok"] and not r["skipped"], r
        assert "needs a KVM" in p.stdout + p.stderr, p.stdout

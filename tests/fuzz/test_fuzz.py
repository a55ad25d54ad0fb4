"""The fuzz tier: every libFuzzer target (tests/fuzz/fuzz_*.c) replays the
crash inputs kept for it, then fuzzes for FUZZ_CI_TIME seconds (60 by
default) from its seed corpus. A crash, a leak, a sanitizer report or a
broken invariant (the targets trap on those) fails the test; libFuzzer's
final stats (executions, coverage) are printed for the record.

`make fuzz` runs the same targets for longer; this tier is the part CI can
afford on every change.
"""

import glob
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FUZZ_DIR = os.path.join(TOP, "build", "fuzz")
SOURCES = sorted(glob.glob(os.path.join(TOP, "tests", "fuzz", "fuzz_*.c")))
NAMES = [os.path.basename(s)[len("fuzz_"):-len(".c")] for s in SOURCES]
CI_TIME = int(os.environ.get("FUZZ_CI_TIME", "60"))


def binary(name):
    path = os.path.join(FUZZ_DIR, "fuzz_" + name)
    assert os.access(path, os.X_OK), f"{path} not built (make fuzz-targets)"
    return path


def seeds(name):
    return os.path.join(TOP, "tests", "fuzz", "corpus", name)


def test_every_target_has_seeds():
    assert NAMES, "no fuzz targets found"
    for name in NAMES:
        files = glob.glob(os.path.join(seeds(name), "*"))
        assert files, f"tests/fuzz/corpus/{name}/ has no seed inputs"


@pytest.mark.parametrize("name", NAMES)
def test_kept_crashes_replay_clean(name):
    kept = sorted(glob.glob(os.path.join(TOP, "tests", "fuzz", "crashes",
                                         name, "*")))
    # Replaying the seeds too makes this test meaningful for a target
    # with no crash kept yet: every seed must run clean on its own.
    inputs = kept + sorted(glob.glob(os.path.join(seeds(name), "*")))
    run = subprocess.run([binary(name), "-runs=1"] + inputs,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]


def final_stats(text):
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", text, re.M))
    cov = re.findall(r"\bcov: (\d+) ft: (\d+)", text)
    return stats, cov[-1] if cov else ("?", "?")


@pytest.mark.parametrize("name", NAMES)
def test_fuzz_for_a_while(name, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(seeds(name), corpus)
    run = subprocess.run(
        [binary(name), f"-max_total_time={CI_TIME}", "-print_final_stats=1",
         "-timeout=10", "-rss_limit_mb=2048",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True, text=True, timeout=CI_TIME + 240)
    stats, (cov, ft) = final_stats(run.stderr)
    print(f"fuzz_{name}: {stats.get('number_of_executed_units', '?')} execs,"
          f" {stats.get('average_exec_per_sec', '?')}/s, cov {cov} ft {ft}")
    crashes = [p.name for p in tmp_path.iterdir() if p.is_file()]
    assert run.returncode == 0 and not crashes, \
        f"crash inputs {crashes}:\n" + run.stderr[-4000:]
    assert int(stats.get("number_of_executed_units", 0)) > 0

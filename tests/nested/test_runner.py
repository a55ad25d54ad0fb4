"""The nested runner's own decisions (nested.run_l1), with QEMU replaced by
canned L1 consoles: an L1 that dies is booted once more; a job whose L2
triple-faulted without a word from its kernel runs once more in a fresh L1
and only that result counts; an L2 whose kernel panicked first is a
failure as it is, never run again. Takes well under a second."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

FAULT = "lkvm: warning: guest triple fault on vCPU 0 (exit status 2)"


def console(jobs, done=True):
    """An L1 console: per job (name, its lines, exit status)."""
    out = ["@@L1 kvm=1"]
    for name, lines, rc in jobs:
        out += ["@@BEGIN " + name] + lines + [
            "@@END " + name, "@@L2 %s exit=%d time=1.0" % (name, rc)]
    if done:
        out.append("@@L1 done=1")
    return "\n".join(out) + "\n"


@pytest.fixture
def boots(monkeypatch, tmp_path):
    """Queue canned consoles; record which jobs each boot was given."""
    state = {"consoles": [], "images": []}

    def fake_image(out, l1_kernel, jobs, files, lkvm, extra):
        state["images"].append([j.name for j in jobs])
        return out

    def fake_boot(kernel, initrd, timeout, log=None, echo=False,
                  silence=None, **kw):
        text, rc = state["consoles"].pop(0)
        open(log, "w").write(text)
        res = nested.L1Result(text, rc, 1.0, False)
        res.stuck = False
        return res

    monkeypatch.setattr(nested, "build_l1_initramfs", fake_image)
    monkeypatch.setattr(nested, "boot_l1", fake_boot)
    state["run"] = lambda jobs: nested.run_l1(
        jobs, {}, l1_kernel={"bzimage": "k"}, workdir=str(tmp_path))
    return state


JOBS = [nested.Job("a", ["true"]), nested.Job("b", ["true"])]


def test_silent_l2_triple_fault_runs_once_more(boots):
    boots["consoles"] = [
        (console([("a", ["@@FACT x=1"], 0),
                  ("b", ["@@FACT x=1", FAULT, "@@FACT l1_lkvm_rc=2"], 0)]), 0),
        (console([("b", ["@@FACT x=2", "@@FACT l1_lkvm_rc=0"], 0)]), 0),
    ]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"], ["b"]]
    assert res.completed
    assert res.jobs["b"].facts == {"x": "2", "l1_lkvm_rc": "0"}
    assert res.jobs["a"].facts == {"x": "1"}
    assert FAULT in res.reruns["b"]


def test_twice_lost_fails(boots):
    bad = ("b", ["@@FACT l1_lkvm_rc=2", FAULT], 0)
    boots["consoles"] = [(console([("a", [], 0), bad]), 0),
                         (console([bad]), 0)]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"], ["b"]]
    assert res.jobs["b"].facts["l1_lkvm_rc"] == "2"


def test_l2_that_panicked_is_not_run_again(boots):
    panic = ["Kernel panic - not syncing: Fatal exception", FAULT]
    boots["consoles"] = [(console([("a", [], 0), ("b", panic, 0)]), 0)]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"]]
    assert FAULT in res.jobs["b"].tail()


def test_rerun_l1_that_never_finishes_is_a_failure(boots):
    boots["consoles"] = [
        (console([("a", [], 0), ("b", [FAULT], 0)]), 0),
        (console([("b", ["half"], 0)], done=False), 1),
        (console([("b", ["half"], 0)], done=False), 1),
    ]
    res = boots["run"](JOBS)
    assert not res.completed
    assert "once more" in res.describe()


def test_dead_l1_boots_once_more(boots):
    boots["consoles"] = [
        (console([("a", ["@@FACT x=1"], 0)], done=False), 1),
        (console([("a", ["@@FACT x=3"], 0), ("b", [], 0)]), 0),
    ]
    res = boots["run"](JOBS)
    assert res.completed and res.jobs["a"].facts == {"x": "3"}
    assert "QEMU exited 1" in res.first_attempt

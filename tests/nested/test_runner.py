"""The nested runner's own decisions (nested.run_l1), with QEMU replaced by
canned L1 consoles: an L1 that dies is booted once more; a job whose L2
triple-faulted without a word from its kernel (or reported a fault no CPU
raises) runs once more in a fresh L1 and only that result counts; an L2
whose kernel panicked first is a failure as it is, never run again. Takes well under a second."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

FAULT = "lkvm: warning: guest triple fault on vCPU 0 (exit status 2)"
STALL = ["lkvm: warning: timeout: stopped after 90 s (exit status 124)",
         "lkvm: warning: vcpu0: rip 0xffffffff81e73744 (64-bit, cs 0x10),"
         " rsp 0xffffc90000013e30, interrupts on, runnable, 5 exits to lkvm",
         "lkvm: warning: vcpu1: rip 0xfff0 (real mode, cs 0xf000), rsp 0,"
         " interrupts off, INIT received, 0 exits to lkvm"]


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

    # the canned reruns stay out of the real ones the summary prints
    monkeypatch.setattr(nested, "RERUNS", [])
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


def test_silent_l2_stall_runs_once_more(boots):
    """An L2 stopped by lkvm's --timeout with no kernel message: run once
    more, and the first attempt's vCPUs are in the rerun notes."""
    boots["consoles"] = [
        (console([("a", ["@@FACT x=1"], 0), ("b", STALL, 124)]), 0),
        (console([("b", ["@@FACT x=2"], 0)]), 0),
    ]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"], ["b"]]
    assert res.jobs["b"].facts == {"x": "2"}
    assert len(nested.RERUNS) == 1 and "timed out" in nested.RERUNS[0]
    assert ("vcpu0 rip=0xffffffff81e73744 (64-bit) runnable; "
            "vcpu1 rip=0xfff0 (real mode) INIT received") in nested.RERUNS[0]


def test_silent_l2_stall_after_l1_side_facts_runs_once_more(boots):
    """The job's own L1 lines (l1_*) before lkvm started are not the
    guest's checks: nested-blk's pci-legacy boot in the CI of 2026-12-02."""
    stall = ["@@FACT l1_data_alloc_kb_before=0"] + STALL + [
        "@@FACT l1_lkvm_rc=124"]
    boots["consoles"] = [
        (console([("a", ["@@FACT x=1"], 0), ("b", stall, 0)]), 0),
        (console([("b", ["@@FACT x=2"], 0)]), 0),
    ]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"], ["b"]]
    assert res.jobs["b"].facts == {"x": "2"}


def test_l2_vcpus_named_from_system_map(tmp_path):
    smap = tmp_path / "System.map"
    smap.write_text("ffffffff81e73700 T native_write_msr\n"
                    "ffffffff81e73800 T native_read_msr\n")
    job = nested.JobResult("b")
    job.console = STALL
    assert nested.l2_vcpus(job, str(smap)).startswith(
        "vcpu0 rip=0xffffffff81e73744 native_write_msr+0x44 (64-bit)")


def test_l2_stall_in_its_checks_is_not_run_again(boots):
    """A timeout after the guest's checks began may be lkvm's lost kick:
    it fails as it is."""
    stall = ["@@FACT t_start=5.1"] + STALL
    boots["consoles"] = [(console([("a", [], 0), ("b", stall, 124)]), 0)]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"]]
    assert res.jobs["b"].facts == {"t_start": "5.1"}


def test_l2_stall_after_a_panic_is_not_run_again(boots):
    stall = ["Kernel panic - not syncing: VFS: Unable to mount root"] + STALL
    boots["consoles"] = [(console([("a", [], 0), ("b", stall, 124)]), 0)]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"]]


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


DOUBLE_FAULT = [
    "[   11.943193] traps: PANIC: double fault, error_code: 0x0",
    "[   11.943218] double fault: 0000 [#1] PREEMPT SMP NOPTI",
    "[   11.943218] CPU: 0 PID: 96 Comm: ld.so Not tainted 6.1.0-57-amd64 #1",
    "[   11.943218] RIP: 0010:entry_SYSCALL_64+0x0/0x29",
    "[   11.943218] Call Trace:",
    "lkvm: warning: guest panicked (exit status 4)"]


def test_double_fault_at_syscall_entry_runs_once_more(boots):
    """The CI run of 2026-12-02: a fault on swapgs, which cannot fault."""
    boots["consoles"] = [
        (console([("a", [], 0), ("b", DOUBLE_FAULT, 0)]), 0),
        (console([("b", ["@@FACT x=2"], 0)]), 0),
    ]
    res = boots["run"](JOBS)
    assert boots["images"] == [["a", "b"], ["b"]]
    assert res.jobs["b"].facts == {"x": "2"}
    assert "double fault at the syscall entry" in nested.RERUNS[0]


def test_double_fault_elsewhere_is_not_run_again(boots):
    other = [line.replace("entry_SYSCALL_64+0x0/0x29",
                          "virtqueue_add_split+0x1a/0x400")
             for line in DOUBLE_FAULT]
    boots["consoles"] = [(console([("a", [], 0), ("b", other, 0)]), 0)]
    boots["run"](JOBS)
    assert boots["images"] == [["a", "b"]]

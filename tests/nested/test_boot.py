"""Boot Debian kernels under lkvm, nested in one QEMU TCG L1 guest.

The matrix: {generic, cloud} kernel x {1, 2} vCPUs x {bzImage, PVH vmlinux},
eight L2 boots in a single L1 run (shared by every test here through a
module-scope fixture). Each L2 guest runs tests/nested/check.sh under
guest/init and ends with a status: half of the boots power off (lkvm must
exit 0), the other half report 42 through the debug-exit port (lkvm must
exit 42); every flavour, format and vCPU count sees both.

Each boot also gets a virtio-blk disk, on the three transports in turn
(modern virtio-pci, legacy virtio-pci, virtio-mmio described in ACPI), so
that each flavour sees all three.

Per boot: lkvm's exit code, the CPU count, MemTotal against -m, no ACPI
errors, no XSAVE/CPUID consistency warnings, no kernel WARN/BUG, the right
kernel, the disk found on the right bus and read/written through; the boot
time is recorded (printed in pytest's summary).

Environment: LKVM_NESTED_WORK keeps the L1 image and console log in a
directory of your choice; LKVM_NESTED_JOB_TIMEOUT bounds each L2 boot;
LKVM_NESTED_REPLAY=console.log re-checks a saved L1 console without booting;
LKVM_NESTED_LKVM=path tests another static lkvm build than ./lkvm.static.
"""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

FLAVOURS = ("generic", "cloud")
CPUS = (1, 2)
FORMATS = ("bzimage", "vmlinux")
MEM_MIB = 256
STATUS = 42
# An L2 boot takes 15-35 s in L1 on a loaded 2-core machine (45 s seen).
JOB_TIMEOUT = int(os.environ.get("LKVM_NESTED_JOB_TIMEOUT", "90"))

# Below -m, the kernel keeps its image, page structures and firmware
# reservations out of MemTotal: ~50 MiB for Debian's generic kernel at
# 256 MiB under QEMU. More missing than this means lost RAM.
MEM_SLACK_MIB = 64


TRANSPORTS = ("pci", "pci-legacy", "mmio")
DISK = "/l2/disk.img"
DISK_MIB = 4
DISK_SIGNATURE = "LKVMDISK"


def _combos():
    i = 0
    for flavour in FLAVOURS:
        for cpus in CPUS:
            for fmt in FORMATS:
                status = STATUS if (cpus == 2) != (fmt == "vmlinux") else 0
                name = "%s-%s-c%d" % (flavour, fmt, cpus)
                yield name, flavour, cpus, fmt, status, TRANSPORTS[i % 3]
                i += 1


COMBOS = list(_combos())

# Read by conftest.py for the timing summary.
TIMINGS = []


def default_params(lkvm):
    """lkvm's own default kernel command line, as `lkvm run --help` says."""
    out = subprocess.run([lkvm, "run", "--help"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    lines = out.splitlines()
    i = lines.index("lkvm's default kernel command line:")
    return lines[i + 1].strip()


def uses_defaults(cpus):
    """The 1-vCPU boots take lkvm's default command line (--append), the
    2-vCPU ones a plain -p; every flavour and format sees both."""
    return cpus == 1


def _l2_words(status):
    # nokaslr: where lkvm's --timeout found the vCPUs is then a System.map
    # name (see test_l2_boot)
    return "quiet nokaslr lkvm.run=/check.sh,%d" % status


def _l2_job(name, flavour, cpus, fmt, status, transport):
    kernel = "/l2/%s/%s" % (flavour, "bzImage" if fmt == "bzimage"
                            else "vmlinux")
    if uses_defaults(cpus):
        cmdline = ["--append", _l2_words(status)]
    else:
        cmdline = ["-p", "console=ttyS0 panic=-1 " + _l2_words(status)]
    argv = ["lkvm", "run", "-k", kernel, "-i", "/l2/%s/initrd" % flavour,
            "-m", str(MEM_MIB), "-c", str(cpus), "--name", name,
            "--timeout", str(JOB_TIMEOUT), "-d", DISK, "--rng",
            "--virtio-transport", transport] + cmdline
    # The shell's bound is later than lkvm's, so that lkvm's own --timeout
    # (exit 124) is what normally fires.
    return nested.Job(name, argv, timeout=JOB_TIMEOUT + 15)


# One more boot for --boot-profile: without `quiet`, so that the kernel
# prints the lines whose times the profile takes ("Linux version", "Run
# /init as init process"), with the stats on stderr.
PROFILE_JOB = "profile-generic-bzimage"


def _profile_job():
    params = "console=ttyS0 nokaslr panic=-1 lkvm.run=/check.sh,0"
    argv = ["lkvm", "run", "-k", "/l2/generic/bzImage",
            "-i", "/l2/generic/initrd", "-m", str(MEM_MIB),
            "--timeout", str(JOB_TIMEOUT), "--boot-profile", "--stats", "-",
            "-p", params]
    return nested.Job(PROFILE_JOB, argv, timeout=JOB_TIMEOUT + 15)


# One more: a guest whose kernel panics after its checks, with lkvm's
# default command line (panic=-1) and the initramfs's pvpanic module.
PANIC_JOB = "panic-cloud-vmlinux"
EXIT_PANIC = 4


def _panic_job():
    argv = ["lkvm", "run", "-k", "/l2/cloud/vmlinux", "-i", "/l2/cloud/initrd",
            "-m", str(MEM_MIB), "--timeout", str(JOB_TIMEOUT),
            "--append", "quiet lkvm.run=/check.sh,panic"]
    return nested.Job(PANIC_JOB, argv, timeout=JOB_TIMEOUT + 15)


# One more: the console on virtio-console (hvc0). check.sh's facts can only
# reach the test through it: lkvm's default line then names hvc0 alone.
CONSOLE_JOB = "console-cloud-vmlinux"


def _console_job():
    argv = ["lkvm", "run", "-k", "/l2/cloud/vmlinux", "-i", "/l2/cloud/initrd",
            "-m", str(MEM_MIB), "--timeout", str(JOB_TIMEOUT),
            "--console", "virtio", "--stats", "-",
            "--append", "quiet lkvm.run=/check.sh,0"]
    return nested.Job(CONSOLE_JOB, argv, timeout=JOB_TIMEOUT + 15)


def system_map(kernel):
    """The guest kernel's System.map, next to its vmlinuz in the package."""
    return os.path.join(os.path.dirname(kernel["bzimage"]),
                        "System.map-" + kernel["version"])


@pytest.fixture(scope="module")
def l1(tmp_path_factory):
    work = nested.work_dir(tmp_path_factory, "nested")
    replay = os.environ.get("LKVM_NESTED_REPLAY")
    lkvm = os.environ.get("LKVM_NESTED_LKVM") or nested.LKVM_STATIC
    if replay:
        res = nested.replay(replay)
        res.kernels = nested.fetch_kernels(FLAVOURS)
        res.default_params = default_params(lkvm)
        return res
    if not os.path.exists(lkvm):
        pytest.fail("%s is missing: run 'make lkvm.static'" % lkvm)
    nested.build_helpers()
    kernels = nested.fetch_kernels(FLAVOURS)
    files = {}
    for f in FLAVOURS:
        files["/l2/%s/bzImage" % f] = kernels[f]["bzimage"]
        files["/l2/%s/vmlinux" % f] = kernels[f]["vmlinux"]
        files["/l2/%s/initrd" % f] = nested.build_l2_initramfs(
            os.path.join(work, "l2-%s.gz" % f), kernels[f])
    disk = os.path.join(work, "disk.img")
    with open(disk, "wb") as f:
        f.write(DISK_SIGNATURE.encode())
        f.truncate(DISK_MIB << 20)
    files[DISK] = disk
    jobs = [nested.Job("probe", ["lkvm", "probe"], timeout=20)]
    jobs += [_l2_job(*c) for c in COMBOS]
    jobs.append(_profile_job())
    jobs.append(_panic_job())
    jobs.append(_console_job())
    res = nested.run_l1(jobs, files, l1_kernel=kernels["generic"],
                        workdir=work, lkvm=lkvm)
    res.kernels = kernels
    res.workdir = work
    res.default_params = default_params(lkvm)
    TIMINGS.append("nested: L1 %s in %.1f s on the host (L1 init at %s s);"
                   " console log %s/console.log" % (
                       "completed" if res.completed else "FAILED",
                       res.elapsed, res.l1.get("boot_time"), work))
    for name, *_, transport in COMBOS:
        j = res.jobs.get(name)
        if j:
            TIMINGS.append("nested: %-20s %-10s exit=%s  %s s in L1, guest"
                           " uptime at check %s s" % (
                               name, transport, j.exit, j.time,
                               j.facts.get("uptime")))
    return res


def test_l1_boots_with_kvm(l1):
    assert l1.l1.get("kvm") == "1", l1.describe()
    assert not l1.timed_out, l1.describe()
    assert l1.completed, l1.describe()


def test_probe_says_accelerated(l1):
    j = l1.jobs.get("probe")
    assert j is not None and j.exit is not None, l1.describe()
    assert j.exit == 0, "lkvm probe in L1 (nested SVM):\n" + j.tail()


@pytest.mark.parametrize("name,flavour,cpus,fmt,status,transport", COMBOS,
                         ids=[c[0] for c in COMBOS])
def test_l2_boot(l1, name, flavour, cpus, fmt, status, transport):
    j = l1.jobs.get(name)
    if j is None or j.exit is None:
        pytest.fail("L2 boot %s did not %s.\n%s" % (
            name, "start" if j is None else "finish", l1.describe()))
    vcpus = nested.l2_vcpus(j, system_map(l1.kernels[flavour]))
    where = "\n--- %s console (exit %s, %s s) ---\n%s%s" % (
        name, j.exit, j.time, j.tail(),
        "\n--- where lkvm stopped the vCPUs: " + vcpus if vcpus else "")
    assert j.facts.get("done") == "1", "check.sh did not finish" + where
    assert j.exit == status, "lkvm exit code" + where

    # Everything else is gathered so that one run names every problem.
    facts, problems = j.facts, []
    if facts["kernel"] != l1.kernels[flavour]["version"]:
        problems.append("kernel %s, expected %s" % (
            facts["kernel"], l1.kernels[flavour]["version"]))
    if facts["cpus"] != str(cpus):
        problems.append("%s CPUs in /proc/cpuinfo for -c %d" % (
            facts["cpus"], cpus))
    online = "0" if cpus == 1 else "0-%d" % (cpus - 1)
    if facts["cpus_online"] != online:
        problems.append("CPUs online %s, expected %s" % (
            facts["cpus_online"], online))
    mem_kib = int(facts["memtotal_kb"])
    if not (MEM_MIB - MEM_SLACK_MIB) * 1024 < mem_kib <= MEM_MIB * 1024:
        problems.append("MemTotal %d KiB for -m %d" % (mem_kib, MEM_MIB))
    if facts.get("xsave_ok") != "1":
        problems.append("XSAVE %s, CPUID 0xD.0 EBX %s, %s expected for"
                        " XCR0 %s (%s)" % (
            facts.get("xsave"), facts.get("xsave_size"),
            facts.get("xsave_size_expected"), facts.get("xcr0"), ", ".join(
                "%s=%s" % (k, v) for k, v in sorted(facts.items())
                if k.startswith("cpuid_d_"))))
    # The disk: on PCI for both virtio-pci flavours, on the ACPI-described
    # virtio-mmio device (LNRO0005) otherwise.
    if facts.get("disk_sectors") != str(DISK_MIB * 2048):
        problems.append("disk (%s): %s sectors, expected %d" % (
            transport, facts.get("disk_sectors"), DISK_MIB * 2048))
    else:
        path = facts.get("disk_path", "")
        on_pci = "/pci0000:" in path
        if on_pci != (transport != "mmio"):
            problems.append("disk (%s) at %s" % (transport, path))
        if facts.get("disk_head") != DISK_SIGNATURE:
            problems.append("disk (%s) starts with %r" % (
                transport, facts.get("disk_head")))
        if facts.get("disk_rw") != "same":
            problems.append("disk (%s): data read back %s" % (
                transport, facts.get("disk_rw")))
    # --rng: the kernel's hardware RNG is lkvm's virtio-rng, and gives bytes
    if not facts.get("hwrng", "").startswith("virtio_rng") or \
            facts.get("hwrng_bytes") != "64":
        problems.append("hwrng %r, %s of 64 bytes read from /dev/hwrng" % (
            facts.get("hwrng"), facts.get("hwrng_bytes")))
    # What the guest no longer waits for: the TSC rate from kvmclock, never
    # calibrated; with lkvm's default command line (all of it, no_timer_check
    # included: its effect leaves no trace in dmesg), no early PCI scans and
    # one UART probed; with a plain -p, the four UARTs that line saves.
    if (facts.get("kvmclock"), facts.get("tsc_detected"),
            facts.get("tsc_calibrated")) != ("1", "1", "0"):
        problems.append("TSC rate: kvmclock %s, 'tsc: Detected' %s, "
                        "calibrations %s" % (
                            facts.get("kvmclock"), facts.get("tsc_detected"),
                            facts.get("tsc_calibrated")))
    if uses_defaults(cpus):
        want = "%s %s" % (l1.default_params, _l2_words(status))
        if facts.get("cmdline", "").strip() != want:
            problems.append("cmdline %r, expected %r" % (
                facts.get("cmdline"), want))
        if (facts.get("agp_searches"), facts.get("uart_ports")) != ("0", "1"):
            problems.append("with lkvm's default command line: %s AGP "
                            "searches, %s UARTs probed" % (
                                facts.get("agp_searches"),
                                facts.get("uart_ports")))
    elif facts.get("uart_ports") != "4":
        problems.append("with a plain -p: %s UARTs probed, 4 expected" %
                        facts.get("uart_ports"))
    for key, what in (("acpi_errors", "ACPI errors"),
                      ("cpuid_warnings", "XSAVE/CPUID consistency warnings"),
                      ("kernel_warnings", "kernel WARN/BUG/Oops lines")):
        if facts[key] != "0":
            problems.append("%s %s in dmesg" % (facts[key], what))
    assert not problems, "%s: %s\n%s%s" % (
        name, "; ".join(problems), "\n".join(j.dmesg), where)


def test_guest_panic_is_reported(l1):
    """A Linux panic ends lkvm with its panic status at once: the
    initramfs loads pvpanic, whose notifier runs before panic=-1's reboot."""
    j = l1.jobs.get(PANIC_JOB)
    assert j is not None and j.exit is not None, l1.describe()
    assert j.facts.get("done") == "1", j.tail()
    assert any("Kernel panic" in ln for ln in j.console), j.tail()
    assert j.exit == EXIT_PANIC, j.tail()


def test_boot_profile_milestones(l1):
    """--boot-profile on a Linux boot: every milestone there, in the order a
    boot reaches them, with the kernel's own timestamps increasing and the
    exits growing, all within the run."""
    j = l1.jobs.get(PROFILE_JOB)
    assert j is not None and j.exit == 0, l1.describe()
    stats = [ln[ln.index("{"):] for ln in j.console
             if '"boot":[' in ln and "{" in ln]
    assert stats, "no --stats line in the job's output\n" + j.tail()
    st = json.loads(stats[-1])
    marks = {m["mark"]: m for m in st["boot"]}
    order = ["vmm_start", "inputs_open", "vm_built", "first_entry",
             "first_exit", "first_console_byte", "kernel_banner",
             "kernel_run_init", "init_start", "exit_request"]
    assert sorted(marks) == sorted(order), st["boot"]
    times = [marks[m]["ms"] for m in order]
    assert times == sorted(times), st["boot"]
    assert times[-1] <= st["wall_ms"] + 50, st
    exits = [marks[m]["exits"] for m in order]
    assert exits == sorted(exits) and exits[-1] > exits[4], st["boot"]
    k_banner = float(marks["kernel_banner"]["kernel_s"])
    k_init = float(marks["kernel_run_init"]["kernel_s"])
    assert 0 <= k_banner < k_init, st["boot"]
    # The kernel's clock starts near lkvm's first entry (after the bzImage's
    # decompression) and runs at real speed: at its "Run /init", no more
    # time can have passed for it than for lkvm since that entry. (The
    # banner itself is replayed when the console registers, so its lkvm
    # time says little.)
    lkvm_s = (marks["kernel_run_init"]["ms"] - marks["first_entry"]["ms"]) / 1e3
    assert 0.8 * k_init <= lkvm_s <= k_init + 30, st["boot"]
    assert any("boot profile" in ln for ln in j.console), j.tail()
    TIMINGS.append("nested: boot profile: " + ", ".join(
        "%s %.0f ms" % (m, marks[m]["ms"]) for m in order[3:]))


def test_console_on_hvc0(l1):
    """--console virtio: the guest's console is hvc0, the facts came over
    it, the ttyS0 console is gone from the command line, and the device
    was driven with nothing dropped or cut."""
    j = l1.jobs.get(CONSOLE_JOB)
    if j is None or j.exit is None:
        pytest.fail("the hvc0 boot did not run.\n" + l1.describe())
    where = "\n--- %s (exit %s) ---\n%s" % (CONSOLE_JOB, j.exit, j.tail())
    assert j.facts.get("done") == "1" and j.exit == 0, where
    assert j.facts.get("console_active") == "hvc0", where
    words = j.facts.get("cmdline", "").split()
    assert "console=hvc0" in words and "console=ttyS0" not in words, where
    lines = [ln[ln.index("{"):] for ln in j.console
             if '"exit_code"' in ln and "{" in ln]
    assert lines, "no --stats line in the job's output" + where
    stats = json.loads(lines[-1])
    dev = [d for d in stats["devices"] if d["type"] == "virtio-console"]
    assert dev and dev[0]["driver_seen"], stats["devices"]
    assert dev[0]["queues"][1]["requests"] > 0, dev
    assert dev[0]["output_cut"] == 0 and stats["console"]["dropped"] == 0

"""lkvm sandbox with a real Linux guest: Debian's generic kernel (9p and
overlayfs as modules in its initrd) under lkvm, nested in one QEMU TCG L1
guest, where "the host" whose files the sandbox shows is L1 itself. The L1
side is tests/nested/sandbox-job.sh; each job boots one or more sandboxes.

  status   `lkvm sandbox -- sh -c '...; exit 7'` prints the guest's
           kernel release, its CPU count and command line and the working
           directory, and exits 7; `-- true` exits 0, a missing command 127
  user     run by an unprivileged L1 user over virtio-mmio: the command
           runs as that uid/gid, and what it writes in the working
           directory appears in L1 with that owner
  overlay  over legacy virtio-pci: writes and deletions on the read-only
           root land in the guest's overlay only, never in L1
  rootdir  `lkvm setup t1` makes a busybox root folder (a second time
           is refused); `lkvm run -d t1` boots into it over 9p: the guest
           writes there, sees nothing outside it; `-d t1,ro` refuses writes
  doctor   the kernel doctor's words at exit: a disk left alone because
           the initramfs lacks virtio_blk (CONFIG_VIRTIO_BLK=m, from the
           config-VERSION beside vmlinuz-VERSION), and a kernel that
           panics with console=tty0 and so says nothing on lkvm's console
  balloon  `lkvm balloon NAME --inflate 64` against a sandbox run with
           --balloon: Linux's virtio_balloon gives the pages and its
           MemTotal drops by 64 MiB
  files    a file-heavy workload (unpack a source tarball, checksum every
           file, rename and delete half of them) gives the same listings
           and checksums as the same workload run in L1 directly, and L1
           sees the guest's files byte for byte
  isolation  a guest that mounts a read-only share of L1's / itself
           (--9p /,hostroot,ro) reads neither lkvm's nor another
           process's memory or environment through /proc and lists
           nothing of /sys, nor through its own root's overlay; a read
           lock it holds there is no lock in L1; and open, unlink,
           fstat, ftruncate works on the working directory's share

Environment: LKVM_NESTED_WORK keeps the images and the console log;
LKVM_NESTED_LKVM=path tests another static lkvm than ./lkvm.static.
"""

import io
import os
import subprocess
import sys
import tarfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
JOB = os.path.join(HERE, "sandbox-job.sh")
P9_CHECK = os.path.join(HERE, "p9-check")
JOB_TIMEOUT = 240
# the workload forks a few hundred busybox processes in L2: 80 s on a
# quiet machine, 120 s when the other core is busy too
FILES_TIMEOUT = 400
STATUS = 7

TIMINGS = []


def source_tarball(path):
    """lkvm's own C sources and headers as a tarball (a few hundred
    files in nested folders), under src/."""
    files = subprocess.run(["git", "ls-files", "*.c", "*.h", "*.mk"],
                           cwd=TOP, capture_output=True, text=True,
                           check=True).stdout.split()
    with tarfile.open(path, "w") as tar:
        for f in sorted(files):
            tar.add(os.path.join(TOP, f), arcname="src/" + f)
    return path


def l1_files(work, kernel):
    """What L1 gets: the guest kernel (PVH vmlinux, and the bzImage with
    its config beside it, Debian's layout), initrds, the tarball and the
    job script."""
    return {
        "/l2/vmlinux": kernel["vmlinux"],
        "/l2/initrd": nested.mkinitramfs(os.path.join(work, "l2.gz"),
                                         "--init", nested.GUEST_INIT,
                                         "--modules-dir", kernel["modules"]),
        "/l1/src.tar": source_tarball(os.path.join(work, "src.tar")),
        "/l1/sandbox-job.sh": JOB,
        "/l1/balloon-guest.sh": os.path.join(HERE, "balloon-guest.sh"),
        "/l1/isolation-guest.sh": os.path.join(HERE, "isolation-guest.sh"),
        "/l1/p9-check": P9_CHECK,
        # Debian's layout, for the kernel doctor: the config beside it
        "/l2/boot/vmlinuz-" + kernel["version"]: kernel["bzimage"],
        "/l2/boot/config-" + kernel["version"]: os.path.join(
            os.path.dirname(kernel["bzimage"]),
            "config-" + kernel["version"]),
        "/l2/initrd-noblk": nested.mkinitramfs(
            os.path.join(work, "l2-noblk.gz"), "--init", nested.GUEST_INIT,
            "--modules-dir", kernel["modules"], "--modules",
            "virtio,virtio_ring,virtio_pci_modern_dev,"
            "virtio_pci_legacy_dev,virtio_pci"),
    }


@pytest.fixture(scope="module")
def l1(tmp_path_factory):
    work = nested.work_dir(tmp_path_factory, "sandbox")
    lkvm = os.environ.get("LKVM_NESTED_LKVM") or nested.LKVM_STATIC
    if not os.path.exists(lkvm):
        pytest.fail("%s is missing: run 'make lkvm.static'" % lkvm)
    nested.build_helpers([P9_CHECK])
    kernel = nested.fetch_kernels(["generic"])["generic"]
    files = l1_files(work, kernel)
    jobs = [nested.Job(name, ["sh", "/l1/sandbox-job.sh", name],
                       timeout=FILES_TIMEOUT + 60 if name == "files" else
                       JOB_TIMEOUT)
            for name in ("status", "user", "overlay", "files", "rootdir",
                         "doctor", "balloon", "isolation")]
    res = nested.run_l1(jobs, files, l1_kernel=kernel, workdir=work,
                        lkvm=lkvm)
    TIMINGS.append("sandbox: L1 %s in %.1f s; console log %s/console.log"
                   % ("completed" if res.completed else "FAILED",
                      res.elapsed, work))
    for name in res.order:
        TIMINGS.append("sandbox: job %-8s exit=%s %s s in L1" % (
            name, res.jobs[name].exit, res.jobs[name].time))
    return res


def facts(l1, name):
    j = l1.jobs.get(name)
    assert j is not None and j.ended, l1.describe()
    return j.facts, j.tail()


def test_l1_completed(l1):
    assert l1.l1.get("kvm") == "1" and l1.completed, l1.describe()


def test_status_and_output(l1):
    f, tail = facts(l1, "status")
    assert f.get("sb_status_rc") == str(STATUS), tail
    # the guest's kernel, not L1's running it (the same package here:
    # the command line and CPU count tell them apart)
    assert f.get("sb_release") == f.get("sb_l1_release"), tail
    assert f.get("sb_nproc") == "1", tail
    assert f.get("sb_guest_cmdline_has_loglevel") == "1", tail
    assert f.get("sb_pwd") == "/tmp/sb-status", tail
    assert f.get("sb_true_rc") == "0", tail
    assert f.get("sb_missing_rc") == "127", tail
    # and Landlock confined it (L1's kernel: Debian 12's 6.1, ABI 2)
    assert f.get("sb_landlock") == "2", tail


def test_runs_as_the_caller(l1):
    f, tail = facts(l1, "user")
    assert f.get("sb_user_rc") == "0", tail
    assert f.get("sb_user_ids") == "1000 1000", tail
    assert f.get("sb_user_file") == "made", tail
    assert f.get("sb_user_owner") == "1000:1000", tail
    assert f.get("sb_user_dir_owner") == "1000:1000", tail
    assert f.get("sb_user_deep") == "deep", tail


def test_root_changes_stay_in_the_overlay(l1):
    f, tail = facts(l1, "overlay")
    assert f.get("sb_overlay_rc") == "0", tail
    assert f.get("sb_overlay_guest_read") == "guest", tail
    assert f.get("sb_overlay_guest_removed") == "removed", tail
    assert f.get("sb_overlay_guest_gone") == "1", tail
    assert f.get("sb_overlay_host_marker") == "0", tail
    assert f.get("sb_overlay_host_tar") == "1", tail
    assert f.get("sb_overlay_host_tmp") == "host", tail


def test_file_heavy_workload_matches_the_host(l1):
    f, tail = facts(l1, "files")
    assert f.get("sb_files_host_rc") == "0", tail
    assert f.get("sb_files_rc") == "0", tail
    assert int(f.get("sb_files_nr", "0")) > 100, tail
    for what in ("list", "sums", "after", "sums_after", "count"):
        assert f.get("sb_files_same_" + what) == "1", (what, tail)
    assert f.get("sb_files_l1_view") == "1", tail


def test_setup_and_a_directory_as_root(l1):
    f, tail = facts(l1, "rootdir")
    assert f.get("sb_setup_rc") == "0", tail
    assert f.get("sb_setup_busybox") == "1", tail
    assert f.get("sb_setup_again") == "1", tail
    assert f.get("sb_rootdir_rc") == "0", tail
    # (then the kernel's "reboot: Power down", which is pr_emerg)
    assert f.get("sb_rootdir_out", "").startswith("lkvm confined"), tail
    assert f.get("sb_rootdir_made") == "inside", tail
    # the write fails, so the command's status is the shell's 1... and
    # nothing reaches the folder
    assert f.get("sb_rootdir_ro_rc") not in (None, "0"), tail
    assert f.get("sb_rootdir_ro_made") == "0", tail


def test_kernel_doctor(l1):
    f, tail = facts(l1, "doctor")
    assert f.get("sb_doctor_rc") == "0", tail
    assert f.get("sb_doctor_blk") == "1", tail
    assert f.get("sb_doctor_console_rc") not in (None, "0"), tail
    assert f.get("sb_doctor_console") == "1", tail


def test_balloon_with_linux(l1):
    f, tail = facts(l1, "balloon")
    assert f.get("sb_balloon_cmd_rc") == "0", tail
    assert f.get("sb_balloon_rc") == "0", tail
    drop = int(f["sb_balloon_before"]) - int(f["sb_balloon_after"])
    assert 61440 <= drop <= 65536, (drop, tail)


EACCES = "refused 13"


def test_a_guest_reaches_no_kernel_interface(l1):
    """Through a share of / it mounts itself, the guest sees /proc and
    /sys as the mount points they are (lkvm sandbox's own guest mounts
    its proc and sysfs there) and reaches nothing in them: not lkvm's
    memory or environment, not another process's (before: all of it)."""
    f, tail = facts(l1, "isolation")
    assert f.get("sb_iso_rc") == "0", tail
    assert f.get("sb_iso_mounted") == "1", tail
    assert f.get("sb_iso_procdir") == "1", tail
    assert f.get("sb_iso_env_lkvm") == EACCES, tail
    assert f.get("sb_iso_env_other") == EACCES, tail
    assert f.get("sb_iso_mem_lkvm") == EACCES, tail
    assert f.get("sb_iso_sys_names") == "0", tail
    # nor through the sandbox's own root, the overlay over lkvm-root
    assert f.get("sb_iso_root_env") == EACCES, tail
    assert f.get("sb_iso_root_mem") == EACCES, tail


def test_a_guest_lock_on_a_read_only_share_is_no_host_lock(l1):
    """The guest holds a read lock on an L1 file through the read-only
    share; L1 sees no lock there (before: a read lock, for as long as the
    guest held it)."""
    f, tail = facts(l1, "isolation")
    assert f.get("sb_iso_lock_held") == "held", tail
    assert f.get("sb_iso_lock_probe") == "none", tail


def test_open_unlink_fstat_ftruncate(l1):
    """A file the guest opened and unlinked is still its file: fstat,
    ftruncate, fchmod and read work (before: fstat failed, ENOENT)."""
    f, tail = facts(l1, "isolation")
    assert f.get("sb_iso_unlinked") == "ok", tail

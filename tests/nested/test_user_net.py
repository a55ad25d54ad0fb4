"""User-mode networking (-n user, libslirp) with a real Linux guest: Debian's
generic kernel under lkvm, nested in one QEMU TCG L1 guest
(tests/nested/nested.py), one L2 boot.

libslirp is a shared library, so L1 gets the dynamic ./lkvm (not
lkvm.static), libslirp (which lkvm loads for -n user), the libraries ldd
names for both, and util-linux's setpriv. In L1
(tests/nested/user-net-job.sh) lkvm runs as uid/gid 1000, allowed
/dev/kvm through its group and nothing else. The guest
(tests/nested/user-net-check.sh) gets its address from slirp's DHCP,
pings the gateway alias, downloads 2 MiB from an httpd on L1's loopback
through 10.0.2.2, and serves 2 MiB that L1 fetches through
hostfwd=tcp::8080-:80; a second rule with an explicit guest address
(127.0.0.1:2323-10.0.2.15:23) carries L1's "go" that ends the guest.
The guest then addresses L1's loopback itself, as a hostile guest may
(127.0.0.1 routed out of eth0), which by default, as in QEMU, reaches it.
Two more boots run the same with host_loopback=off and with restrict=on:
then neither 10.0.2.2 nor 127.0.0.1 reaches L1's loopback, and hostfwd
still comes in. Nothing leaves L1, which has no network but its loopback.

The same L1 then runs the same job once more under valgrind's memcheck
(issue 10), with a disk added that the guest writes and reads back: a
whole Linux boot with a disk and a network card must end with no memcheck
error and no definite leak.
"""

import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "user-net-check.sh")
JOB = os.path.join(HERE, "user-net-job.sh")
LKVM = os.path.join(nested.TOP, "lkvm")
SETPRIV = "/usr/bin/setpriv"
VALGRIND = "/usr/bin/valgrind.bin"     # Debian's valgrind is a shell wrapper
VALGRIND_LIB = "/usr/libexec/valgrind"
VALGRIND_FILES = ["memcheck-amd64-linux", "vgpreload_core-amd64-linux.so",
                  "vgpreload_memcheck-amd64-linux.so", "default.supp"]
VALGRIND_ARGS = [VALGRIND, "--error-exitcode=99", "--leak-check=full",
                 "--errors-for-leak-kinds=definite", "--track-fds=no"]
TIMINGS = []


def shared_libs(binary):
    """{path the loader looks for: host file} for a dynamic binary (ldd)."""
    out = subprocess.run(["ldd", binary], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(?:\S+ => )?(/\S+) \(0x", line)
        if m:
            libs[m.group(1)] = os.path.realpath(m.group(1))
    return libs


def libslirp_path():
    """Where the host's loader finds libslirp.so.0 (ldconfig's cache)."""
    out = subprocess.run(["ldconfig", "-p"], check=True,
                         stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    for line in out.splitlines():
        if "libslirp.so.0 " in line and " => " in line:
            return line.split(" => ")[1].strip()
    pytest.fail("libslirp0 is not installed (scripts/install-deps.sh)")


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], check=True,
                         stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def ld_so_debuginfo(libs):
    """memcheck must redirect ld.so's strlen, and Debian's ld.so has no
    symbol table of its own: it needs libc6-dbg's detached one, found
    by build ID."""
    for path in libs.values():
        if "/ld-linux" in path:
            bid = build_id(path)
            dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
            if not os.path.exists(dbg):
                pytest.fail("%s missing: install libc6-dbg "
                            "(scripts/install-deps.sh)" % dbg)
            return {dbg: dbg}
    return {}


def valgrind_files():
    files = {VALGRIND: VALGRIND}
    for name in VALGRIND_FILES:
        path = os.path.join(VALGRIND_LIB, name)
        if not os.path.exists(path):
            pytest.fail("%s missing: install valgrind "
                        "(scripts/install-deps.sh)" % path)
        files[path] = path
    files.update(shared_libs(VALGRIND))
    files.update(ld_so_debuginfo(files))
    return files


@pytest.fixture(scope="module")
def l1(tmp_path_factory):
    work = nested.work_dir(tmp_path_factory, "nested-user-net")
    lkvm = os.environ.get("LKVM_NESTED_LKVM") or LKVM
    if not os.path.exists(lkvm):
        pytest.fail("%s is missing: run 'make lkvm'" % lkvm)
    nested.build_helpers()
    kernel = nested.fetch_kernels(["generic"])["generic"]
    initrd = nested.build_l2_initramfs(
        os.path.join(work, "l2-user-net.gz"), kernel,
        ["--add", CHECK + ":/net/user-net-check.sh"])
    files = {"/l2/vmlinux": kernel["vmlinux"], "/l2/user-net-initrd": initrd,
             "/l1/user-net-job.sh": JOB, "/l1/bin/setpriv": SETPRIV}
    files.update(shared_libs(lkvm))
    # lkvm loads libslirp (and glib with it) when -n user asks for it
    slirp = libslirp_path()
    files[slirp] = os.path.realpath(slirp)
    files.update(shared_libs(slirp))
    files.update(shared_libs(SETPRIV))
    files.update(valgrind_files())
    job_sh = ["sh", "/l1/user-net-job.sh", "/l1/bin/setpriv"]
    jobs = [nested.Job("user-net", job_sh + ["150", "0", "-"], timeout=200),
            nested.Job("loopback-off",
                       job_sh + ["150", "0", ",host_loopback=off"],
                       timeout=200),
            nested.Job("restrict", job_sh + ["150", "0", ",restrict=on"],
                       timeout=200),
            nested.Job("valgrind", job_sh + ["400", "16", "-"] +
                       VALGRIND_ARGS, timeout=450)]
    l1 = nested.run_l1(jobs, files, l1_kernel=kernel, workdir=work,
                       lkvm=lkvm)
    assert l1.completed, l1.describe()
    TIMINGS.append("user-net: L1 run %.1f s" % l1.elapsed)
    return l1


def _job(l1, name):
    j = l1.jobs.get(name)
    assert j is not None and j.ended, "no result:\n%s" % l1.tail()
    TIMINGS.append("%s: L2 job %.1f s" % (name, j.time or 0))
    return j


@pytest.fixture(scope="module")
def job(l1):
    return _job(l1, "user-net")


@pytest.fixture(scope="module")
def vg_job(l1):
    return _job(l1, "valgrind")


@pytest.fixture(scope="module", params=["loopback-off", "restrict"])
def guarded_job(l1, request):
    return _job(l1, request.param)


def _ctx(j):
    return "facts %s\n%s" % (j.facts, j.tail(60))


def test_runs_unprivileged_and_exits_cleanly(job):
    f = job.facts
    assert f.get("lkvm_comm") == "lkvm", _ctx(job)
    assert f.get("lkvm_uid") == "1000,1000", _ctx(job)
    assert f.get("lkvm_gid") == "1000,1000", _ctx(job)
    assert f.get("lkvm_groups", "") == "", _ctx(job)
    assert f.get("lkvm_rc") == "0", _ctx(job)
    # confined by Landlock (L1's kernel: Debian 12's 6.1, ABI 2) all along
    assert f.get("landlock") == "2", _ctx(job)


def test_dhcp_lease(job):
    f = job.facts
    assert f.get("eth0") == "yes", _ctx(job)
    assert f.get("udhcpc_rc") == "0", _ctx(job)
    assert f.get("dhcp_ip") == "10.0.2.15", _ctx(job)
    assert f.get("dhcp_mask") == "24", _ctx(job)
    assert f.get("dhcp_router") == "10.0.2.2", _ctx(job)
    assert f.get("dhcp_dns") == "10.0.2.3", _ctx(job)
    assert f.get("addr") == "10.0.2.15/24", _ctx(job)


def test_gateway_reaches_l1_loopback(job):
    f = job.facts
    assert f.get("ping_rc") == "0", _ctx(job)
    assert f.get("gw_rc") == "0", _ctx(job)
    assert f.get("fetch_rc") == "0", _ctx(job)
    assert f.get("fetch_bytes") == str(2 << 20), _ctx(job)
    assert f.get("fetch_md5") == f.get("l1_blob_md5"), _ctx(job)


def test_guest_addressing_loopback_itself_reaches_it_by_default(job):
    """The probe the guarded boots must fail is sound: unguarded, a guest
    that routes 127.0.0.1 out of eth0 gets L1's loopback service."""
    f = job.facts
    assert f.get("direct_rc") == "0", _ctx(job)
    assert f.get("direct_got") == "l1", _ctx(job)


def test_guarded_guest_cannot_reach_l1_loopback(guarded_job):
    """host_loopback=off and restrict=on: neither the gateway alias nor
    127.0.0.1 itself reaches the httpd on L1's loopback, while DHCP and
    hostfwd into the guest work as before."""
    f = guarded_job.facts
    assert f.get("dhcp_ip") == "10.0.2.15", _ctx(guarded_job)
    assert f.get("gw_rc") not in (None, "0"), _ctx(guarded_job)
    assert "fetch_rc" not in f, _ctx(guarded_job)
    assert f.get("direct_rc") not in (None, "0"), _ctx(guarded_job)
    assert f.get("direct_got") == "", _ctx(guarded_job)
    check_hostfwd(guarded_job)
    assert f.get("lkvm_rc") == "0", _ctx(guarded_job)
    assert f.get("landlock") == "2", _ctx(guarded_job)


def check_hostfwd(job):
    f = job.facts
    assert f.get("fwd_ready") == "ready", _ctx(job)
    assert f.get("fwd_rc") == "0", _ctx(job)
    assert f.get("fwd_bytes") == str(2 << 20), _ctx(job)
    assert f.get("fwd_md5") == f.get("guest_blob_md5"), _ctx(job)
    # The rule with the explicit guest address: L1's word arrived.
    assert f.get("go_rc") == "0", _ctx(job)
    assert f.get("go") == "go", _ctx(job)


def test_hostfwd_reaches_guest(job):
    check_hostfwd(job)


def test_ipv6_router_advertisement(job):
    assert job.facts.get("addr6", "").startswith("fec0::"), _ctx(job)


def test_valgrind_memcheck_of_a_boot_with_disk_and_net_is_clean(vg_job):
    f, log = vg_job.facts, "\n".join(vg_job.console)
    assert "Memcheck" in log, _ctx(vg_job)
    assert "ERROR SUMMARY: 0 errors" in log, _ctx(vg_job)
    assert f.get("lkvm_rc") == "0", _ctx(vg_job)
    # The guest really used both devices while memcheck watched.
    assert f.get("fetch_md5") == f.get("l1_blob_md5"), _ctx(vg_job)
    assert f.get("fwd_md5") == f.get("guest_blob_md5"), _ctx(vg_job)
    assert f.get("disk_write_rc") == "0", _ctx(vg_job)
    assert f.get("disk_read_md5") == f.get("disk_pattern_md5"), _ctx(vg_job)

"""guest/initramfs/mkinitramfs on its own: no VM, a second or two.

Module order comes from each module's .modinfo (dependencies first), the
archive is a newc cpio that GNU cpio reads back, /init, busybox applets and
the console node are where the kernel and guest/init expect them.
"""

import gzip
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nested  # noqa: E402


@pytest.fixture(scope="module")
def kernel():
    nested.build_helpers()
    return nested.fetch_kernels(["generic"])["generic"]


def _listing(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out = subprocess.run(["cpio", "-itv", "--quiet"], input=data, check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return {line.split()[-1] if " -> " not in line
            else line.split(" -> ")[0].split()[-1]: line
            for line in out.splitlines()}, data


def test_kvm_amd_dependencies_first(kernel, tmp_path):
    out = str(tmp_path / "l1.cpio")
    order = subprocess.run(
        [nested.MKINITRAMFS, "-o", out, "--compress", "none",
         "--modules-dir", kernel["modules"], "--modules", "kvm_amd",
         "--print-modules"], check=True, stdout=subprocess.PIPE,
        universal_newlines=True).stdout.split()
    assert order[-1] == "kvm_amd"
    assert order.index("kvm") < order.index("kvm_amd")
    assert order.index("irqbypass") < order.index("kvm")
    # /etc/lkvm/modules, what guest/init loads, follows the same order.
    listed = subprocess.run(
        ["cpio", "-i", "--quiet", "--to-stdout", "etc/lkvm/modules"],
        stdin=open(out, "rb"), check=True, stdout=subprocess.PIPE,
        universal_newlines=True).stdout.split()
    names = [os.path.basename(p)[:-3].replace("-", "_") for p in listed]
    assert names == order
    assert all(p.startswith("/lib/modules/%s/" % kernel["version"])
               for p in listed)


def test_default_image_layout(kernel, tmp_path):
    out = str(tmp_path / "l2.gz")
    run = tmp_path / "run.sh"
    run.write_text("#!/bin/sh\necho hi\n")
    subprocess.run([nested.MKINITRAMFS, "-o", out,
                    "--modules-dir", kernel["modules"],
                    "--run", str(run), "--add", "%s:/data/x" % run],
                   check=True)
    files, data = _listing(out)
    assert files["init"].startswith("-rwxr-xr-x")
    assert files["dev/console"].startswith("c")
    assert files["bin/sh"].startswith("l")
    assert files["etc/lkvm/run"].startswith("-rwxr-xr-x")
    assert "data/x" in files
    ko = [f for f in files if f.endswith(".ko")]
    assert any(f.endswith("/virtio_pci.ko") for f in ko)
    assert any(f.endswith("/virtio_blk.ko") for f in ko)


def test_missing_module_is_an_error(kernel, tmp_path):
    res = subprocess.run(
        [nested.MKINITRAMFS, "-o", str(tmp_path / "x"),
         "--modules-dir", kernel["modules"], "--modules", "no_such_mod"],
        stderr=subprocess.PIPE, universal_newlines=True)
    assert res.returncode == 1
    assert "no_such_mod not found" in res.stderr


def test_binary_brings_its_libraries(tmp_path):
    """--binary: a dynamic program, the libraries ldd names and the loader,
    stored as plain files where the guest's loader looks for them."""
    prog = "/usr/bin/iperf3"
    if not os.path.exists(prog):
        pytest.skip("iperf3 is not installed (scripts/install-deps.sh)")
    out = str(tmp_path / "x.cpio")
    subprocess.run([nested.MKINITRAMFS, "-o", out, "--compress", "none",
                    "--busybox", "none", "--binary", prog], check=True)
    files, _ = _listing(out)
    assert files["usr/bin/iperf3"].startswith("-rwxr-xr-x")
    assert files["lib64/ld-linux-x86-64.so.2"].startswith("-")
    for lib in ("libiperf.so.0", "libc.so.6", "libcrypto.so.3"):
        assert files["lib/x86_64-linux-gnu/" + lib].startswith("-"), lib
    # A static program comes alone, under the name asked for.
    subprocess.run([nested.MKINITRAMFS, "-o", out, "--compress", "none",
                    "--busybox", "none", "--binary", "/bin/busybox:/sbin/bb"],
                   check=True)
    files, _ = _listing(out)
    assert files["sbin/bb"].startswith("-rwxr-xr-x")
    assert not [f for f in files if f.startswith("lib") and
                files[f].startswith("-")]


@pytest.mark.parametrize("method, magic, unpack", [
    ("lz4", b"\x02\x21\x4c\x18", ["lz4", "-dc"]),   # the legacy frame
    ("zstd", b"\x28\xb5\x2f\xfd", ["zstd", "-dc"]),
])
def test_compress_with_a_tool(tmp_path, method, magic, unpack):
    """--compress lz4|zstd: the same archive as --compress none, through
    the tool, in a frame format the kernel unpacks; no tool, a clear
    error and no output."""
    args = ["--busybox", "none", "--modules", ""]
    plain = str(tmp_path / "x.cpio")
    subprocess.run([nested.MKINITRAMFS, "-o", plain, "--compress", "none"] +
                   args, check=True)
    out = str(tmp_path / ("x." + method))
    # PATH without the tool (python named here: env finds none there).
    res = subprocess.run([sys.executable, nested.MKINITRAMFS, "-o", out,
                          "--compress", method] + args,
                         env=dict(os.environ, PATH="/nonexistent"),
                         stderr=subprocess.PIPE, universal_newlines=True)
    assert res.returncode == 1
    assert "needs the %s tool" % method in res.stderr
    assert not os.path.exists(out) and not os.path.exists(out + ".tmp")
    if not shutil.which(method):
        pytest.skip("%s is not installed" % method)
    subprocess.run([nested.MKINITRAMFS, "-o", out, "--compress", method] +
                   args, check=True)
    data = open(out, "rb").read()
    assert data[:4] == magic
    assert subprocess.run(unpack, input=data, check=True,
                          stdout=subprocess.PIPE).stdout == \
        open(plain, "rb").read()

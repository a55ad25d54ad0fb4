"""Bad input from a fallible user: every case is one line on stderr that
names the problem, a non-zero exit status, and no crash.

lkvm checks everything it is given before it opens /dev/kvm, so these
tests need no KVM: each runs lkvm in a mount namespace of its own whose
/dev has no kvm node (or the node a test asks for), on every machine alike.
That also proves the order: a check made after /dev/kvm would be reported
as "/dev/kvm does not exist" here. Needs root (for the namespace), as the
machines this runs on give.
"""

import os
import random
import shutil
import struct
import subprocess

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LKVM = os.environ.get("LKVM", os.path.join(TOP, "lkvm"))
EXIT_ELF = os.path.join(TOP, "guest", "kit", "exit.elf")
NO_KVM = "/dev/kvm does not exist"

if os.geteuid() != 0:
    pytest.fail("tests/errors needs root: each case runs lkvm in a mount "
                "namespace of its own (unshare -m)", pytrace=False)

# A /dev of our own: what lkvm may open besides /dev/kvm, and the kvm node
# a test asks for ($KVM_NODE: "" none, else mknod arguments).
NAMESPACE_SH = r"""
mount --make-rprivate / &&
mount -t tmpfs -o mode=755 lkvm-test-dev /dev || exit 96
mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/zero c 1 5 &&
mknod -m 666 /dev/urandom c 1 9 && mkdir /dev/net &&
mknod -m 600 /dev/net/tun c 10 200 || exit 96
if [ -n "$KVM_NODE" ]; then
	mknod $KVM_NODE || exit 96
fi
exec "$@"
"""


def unused_misc_minor():
    """A misc-device minor no driver registered: opens fail with ENODEV."""
    with open("/proc/misc") as f:
        used = {int(line.split()[0]) for line in f if line.strip()}
    return next(m for m in range(200, 255) if m not in used)


KVM_NODES = {
    "none": "",
    "no-permission": "-m 600 /dev/kvm c 10 232",
    "not-kvm": "-m 666 /dev/kvm c 1 3",             # /dev/null's numbers
    "unregistered": "-m 666 /dev/kvm c 10 %d" % unused_misc_minor(),
}


def run(args, user=None, timeout=20, kvm="none", lkvm=LKVM, prefix=(),
        env=None):
    """lkvm with args in a namespace whose /dev/kvm is KVM_NODES[kvm];
    as user (a uid) if given; after prefix (a command that execs the
    rest), with env added to the environment."""
    cmd = [lkvm] + args
    if user:
        cmd = ["setpriv", "--reuid", str(user), "--regid", str(user),
               "--clear-groups"] + cmd
    cmd = ["unshare", "-m", "sh", "-c", NAMESPACE_SH, "sh"] + \
        list(prefix) + cmd
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout,
                       env=dict(os.environ, KVM_NODE=KVM_NODES[kvm],
                                **(env or {})))
    assert p.returncode != 96, "cannot set up the namespace: " + p.stderr
    return p


def assert_one_line_error(p, *words):
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("lkvm: error: ")]
    assert len(errors) == 1, p.stderr
    for w in words:
        assert w in errors[0], (w, errors[0])
    assert p.stdout == ""


def make_bzimage(kernel_size=1 << 16, truncate_to=None):
    """A setup header that lkvm accepts, then zeroes: the shape of a bzImage."""
    setup_sects = 4
    img = bytearray((setup_sects + 1) * 512 + kernel_size)
    img[0x1f1] = setup_sects
    struct.pack_into("<H", img, 0x1fe, 0xAA55)
    img[0x200:0x202] = b"\xeb\x66"
    struct.pack_into("<I", img, 0x202, 0x53726448)
    struct.pack_into("<H", img, 0x206, 0x020F)
    img[0x211] = 0x01                                   # LOADED_HIGH
    struct.pack_into("<I", img, 0x22C, 0x7FFFFFFF)      # initrd_addr_max
    struct.pack_into("<H", img, 0x236, 0x0001)          # XLF_KERNEL_64
    struct.pack_into("<I", img, 0x238, 2047)            # cmdline_size
    struct.pack_into("<I", img, 0x248, 0x100)           # payload_offset
    struct.pack_into("<I", img, 0x24C, kernel_size - 0x200)
    struct.pack_into("<I", img, 0x260, 4 * kernel_size)  # init_size
    return bytes(img[:truncate_to] if truncate_to else img)


@pytest.fixture
def tmp():
    """A folder another user can enter (pytest's own is root-only)."""
    import pathlib
    import tempfile
    d = tempfile.mkdtemp(prefix="lkvm-errors-")
    os.chmod(d, 0o755)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_missing_kernel(tmp):
    assert_one_line_error(run(["run", "-k", str(tmp / "nope")]),
                          "kernel", "nope", "No such file")


def test_random_bytes_kernel(tmp):
    k = tmp / "random"
    k.write_bytes(random.Random(1).randbytes(1 << 20))
    assert_one_line_error(run(["run", "-k", str(k)]),
                          "neither a bzImage nor an ELF")


def test_empty_kernel(tmp):
    k = tmp / "empty"
    k.write_bytes(b"")
    assert_one_line_error(run(["run", "-k", str(k)]), "empty")


def test_truncated_bzimage(tmp):
    k = tmp / "bzImage"
    k.write_bytes(make_bzimage(truncate_to=0x1000))
    assert_one_line_error(run(["run", "-k", str(k)]), "truncated")


def test_real_bzimage_truncated(tmp):
    """Same check on a real Debian kernel when the cache has one."""
    cache = os.path.expanduser(os.environ.get(
        "LKVM_CACHE", "~/.cache/lkvm")) + "/kernels"
    real = None
    for root, _, files in os.walk(cache):
        for f in files:
            if f.startswith("vmlinuz-"):
                real = os.path.join(root, f)
    if not real:
        pytest.fail("no Debian kernel in the cache: run scripts/fetch-kernel.sh"
                    " (make check-errors does)")
    data = open(real, "rb").read()
    k = tmp / "vmlinuz"
    k.write_bytes(data[: len(data) // 2])
    assert_one_line_error(run(["run", "-k", str(k)]), "truncated")


def test_elf_without_pvh_note(tmp):
    assert_one_line_error(run(["run", "-k", "/bin/true"]), "x86 executable")


@pytest.mark.parametrize("mem", ["0", "1", "-5", "lots", "99999999999"])
def test_bad_mem(mem):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-m", mem]), "-m")


@pytest.mark.parametrize("cpus", ["0", "256", "100000", "two"])
def test_bad_cpus(cpus):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-c", cpus]), "-c")


def test_absurd_but_valid_mem_passes_the_checks():
    """1 TiB of guest RAM is allowed (mapped lazily): the checks let it
    through to /dev/kvm. (test_kit.py boots it.)"""
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-m", str(1024 * 1024)]),
                          NO_KVM)


def test_valid_input_reaches_kvm_last(tmp):
    """The control case: a good kernel, initrd, disk and user-mode card
    pass every check, and only then is /dev/kvm opened."""
    img = tmp / "d.img"
    img.write_bytes(b"\0" * 65536)
    initrd = tmp / "initrd"
    initrd.write_bytes(b"x" * 4096)
    p = run(["run", "-k", EXIT_ELF, "-i", str(initrd), "-d", str(img),
             "-n", "mode=user,hostfwd=tcp::%d-:22" % free_port()])
    assert_one_line_error(p, NO_KVM)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreadable_initrd_directory(tmp):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-i", str(tmp)]),
                          "initrd", "not a regular file")


def test_unreadable_initrd_permissions(tmp):
    initrd = tmp / "initrd"
    initrd.write_bytes(b"x" * 100)
    os.chmod(initrd, 0o600)
    kernel = tmp / "exit.elf"
    shutil.copy(EXIT_ELF, kernel)
    os.chmod(kernel, 0o644)
    p = run(["run", "-k", str(kernel), "-i", str(initrd)], user=65534)
    assert_one_line_error(p, "initrd", "Permission denied")


@pytest.mark.parametrize("node,words", [
    ("none", ["/dev/kvm", "does not exist"]),
    ("no-permission", ["/dev/kvm", "Permission denied", "kvm group"]),
    ("not-kvm", ["/dev/kvm", "not a KVM device"]),
    ("unregistered", ["/dev/kvm", "no KVM registered"]),
])
def test_kvm_unusable(tmp, node, words):
    """Each way /dev/kvm can fail, made on purpose in the namespace; lkvm
    probe tells the same story with its own exit status."""
    kernel = tmp / "exit.elf"
    shutil.copy(EXIT_ELF, kernel)
    os.chmod(kernel, 0o644)
    user = 65534 if node == "no-permission" else None
    assert_one_line_error(run(["run", "-k", str(kernel)], user=user,
                              kvm=node), *words)
    p = run(["probe"], user=user, kvm=node)
    verdict = "none" if node in ("none", "unregistered") else "unusable"
    assert p.returncode == (3 if verdict == "none" else 1), p
    assert p.stdout.startswith(verdict + ": "), p
    for w in words:
        assert w in p.stdout, (w, p.stdout)


def test_unknown_option():
    assert_one_line_error(run(["run", "--frobnicate"]), "--frobnicate")


def test_unknown_command():
    assert_one_line_error(run(["fly"]), "fly")


def test_firmware_too_big(tmp):
    fw = tmp / "fw.bin"
    fw.write_bytes(b"\xf4" * (512 * 1024))
    assert_one_line_error(run(["run", "-f", str(fw)]), "firmware", "256 KiB")


def test_kernel_too_big_for_memory(tmp):
    k = tmp / "bzImage"
    k.write_bytes(make_bzimage(kernel_size=8 << 20))
    assert_one_line_error(run(["run", "-k", str(k), "-m", "16"]), "raise -m")


def test_help_and_version():
    p = run(["run", "--help"])
    assert p.returncode == 0
    for code in ("124", "0x501", "pvpanic", "reboot"):
        assert code in p.stdout
    p = run(["version"])
    assert p.returncode == 0 and p.stdout.startswith("lkvm version")


def test_disk_missing(tmp):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", str(tmp / "no.img")]),
                          "disk", "no.img", "No such file")


def test_disk_bad_option(tmp):
    img = tmp / "d.img"
    img.write_bytes(b"\0" * 4096)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", f"{img},fast"]),
                          "unknown disk option", "fast")


def test_disk_bad_aio(tmp):
    img = tmp / "d.img"
    img.write_bytes(b"\0" * 4096)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", f"{img},aio=posix"]),
                          "aio must be io_uring or sync")


def test_disk_bad_format(tmp):
    img = tmp / "d.img"
    img.write_bytes(b"\0" * 4096)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", f"{img},format=vmdk"]),
                          "format must be raw or qcow2")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", f"{img},format=qcow2"]),
                          "not a qcow2 image", "d.img")


@pytest.mark.parametrize("make,words", [
    (["snapshot", "-c", "s1"], ["internal snapshots", "not support"]),
    (None, ["direct is for raw images"]),
], ids=["snapshot", "direct"])
def test_qcow2_refused(tmp, make, words):
    img = tmp / "d.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(img), "16M"],
                   check=True)
    opt = ""
    if make:
        subprocess.run(["qemu-img", *make, str(img)], check=True)
    else:
        opt = ",direct"
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", f"{img}{opt}"]),
                          "d.qcow2", *words)


@pytest.mark.parametrize("backing,opt,words", [
    ("{tmp}/home/secret", "", ["outside the image's directory",
                               "backing-dir="]),
    ("../home/secret", "", ["outside the image's directory"]),
    ("/dev/null", ",backing-dir=/dev", ["a character device"]),
    ("base.raw", ",backing-dir={tmp}/nowhere", ["backing-dir", "nowhere"]),
], ids=["absolute", "dotdot", "device", "no-backing-dir"])
def test_qcow2_backing_refused(tmp, backing, opt, words):
    """A backing file the image names is not opened just anywhere."""
    (tmp / "vm").mkdir()
    (tmp / "home").mkdir()
    (tmp / "home" / "secret").write_bytes(b"\0" * 4096)
    img = tmp / "vm" / "top.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b",
                    backing.format(tmp=tmp), "-F", "raw", str(img), "16M"],
                   check=True)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d",
                               f"{img}{opt.format(tmp=tmp)}"]),
                          "top.qcow2", *words)


def test_qcow2_corrupt_refused(tmp):
    """A qcow2 whose L1 table sits on its header (a hostile image): one
    line naming what is wrong, before anything runs."""
    img = tmp / "d.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(img), "16M"],
                   check=True)
    with open(img, "r+b") as f:
        f.seek(40)              # l1_table_offset
        f.write(bytes(8))
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", str(img)]),
                          "d.qcow2", "corrupt",
                          "the header and the L1 table overlap")


def test_disk_empty_path():
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", ",ro"]),
                          "no image path")


def test_a_directory_is_a_9p_root(tmp):
    """-d DIR is the guest's root over 9p (kvmtool's -d): the checks let
    it through; a disk option on it is refused, and so is a second."""
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", str(tmp)]),
                          NO_KVM)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", str(tmp)
                               + ",direct"]), "takes only ro")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", str(tmp),
                               "-d", str(tmp) + ",ro"]),
                          "has a root directory already")


@pytest.mark.parametrize("arg,words", [
    ("{tmp}/nope,tag", ["--9p", "No such file"]),
    ("{tmp}/file,tag", ["--9p", "not a directory"]),
    ("{tmp}", ["expected HOSTDIR,TAG"]),
    ("{tmp},", ["the tag is 1-64 characters"]),
    (",tag", ["expected HOSTDIR,TAG"]),
    ("{tmp},a b", ["unprintable"]),
    ("{tmp}," + "t" * 65, ["the tag is 1-64"]),
    ("{tmp},tag,rw", ["unknown option 'rw'"]),
    # a kernel interface, by the file system it is on, not by its name
    ("/proc/self,tag", ["--9p", "on proc, a kernel interface"]),
    ("/sys/kernel,tag", ["--9p", "on sysfs, a kernel interface"]),
])
def test_bad_9p(tmp, arg, words):
    (tmp / "file").write_text("x")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--9p",
                               arg.format(tmp=tmp)]), *words)


def test_9p_tags_are_unique_and_shares_pass_the_checks(tmp):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--9p", "%s,t" % tmp,
                               "--9p", "%s,t,ro" % tmp]),
                          "tag 't' is already used")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--9p", "%s,t" % tmp,
                               "--9p", "%s,u,ro" % tmp]), NO_KVM)


@pytest.mark.parametrize("args,words", [
    (["sandbox", "-f", "{fw}", "--", "true"], ["drop --firmware"]),
    (["sandbox", "-k", "{elf}", "-d", "{tmp}", "--", "true"],
     ["drop -d DIR"]),
    (["sandbox", "-k", "{elf}", "--9p", "{tmp},lkvm-root", "--", "true"],
     ["lkvm sandbox's own"]),
    (["sandbox", "-k", "{elf}", "--bogus", "--", "true"],
     ["unknown option '--bogus'"]),
    (["sandbox", "-k", "{elf}", "--"] + ["x" * 100] * 3000,
     ["over 256 KiB"]),
])
def test_bad_sandbox(tmp, args, words):
    fw = tmp / "fw.bin"
    fw.write_bytes(b"\0" * 4096)
    p = run([a.format(tmp=tmp, elf=EXIT_ELF, fw=fw) for a in args])
    assert_one_line_error(p, *words)


def test_sandbox_passes_the_checks(tmp):
    """A good sandbox gets as far as /dev/kvm: its shares and initrd made."""
    p = run(["sandbox", "-k", EXIT_ELF, "--", "sh", "-c", "exit 7"],
            prefix=["env", "-C", str(tmp)])
    assert_one_line_error(p, NO_KVM)


def test_setup(tmp):
    env = {"LKVM_HOME": str(tmp / "home")}
    p = run(["setup", "t1"], env=env)
    assert p.returncode == 0 and "lkvm run -d t1" in p.stdout, p
    root = tmp / "home" / "t1"
    assert os.access(root / "bin" / "busybox", os.X_OK)
    assert os.readlink(root / "bin" / "sh") == "/bin/busybox"
    assert os.readlink(root / "sbin" / "init") == "/bin/busybox"
    assert (root / "etc" / "passwd").read_text().startswith("root:")
    assert_one_line_error(run(["setup", "t1"], env=env), "already exists")
    assert_one_line_error(run(["setup"], env=env), "usage: lkvm setup")
    assert_one_line_error(run(["setup", "../x"], env=env),
                          "usage: lkvm setup")
    # and run -d NAME finds it there, through to /dev/kvm
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d", "t1"], env=env),
                          NO_KVM)


@pytest.mark.parametrize("poll,words", [
    ("fast", ["--poll", "fast"]), ("on,max_us=0", ["--poll", "max_us"]),
    ("auto,max_us=10001", ["max_us", "10000"]),
    ("auto,start_rate=x", ["start_rate"]), ("on,stop_idle_ms=", ["stop_idle_ms"]),
    ("on,window=5", ["window=5"]), ("", ["--poll"]),
])
def test_bad_poll(poll, words):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--poll", poll]), *words)


@pytest.mark.parametrize("n", ["0", "65", "many"])
def test_bad_iothreads(n):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--iothreads", n]),
                          "--iothreads")


def test_bad_device_poll(tmp):
    img = tmp / "d.img"
    img.write_bytes(b"\0" * 4096)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-d",
                               f"{img},poll=fast"]), "poll", "off, auto or on")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-n",
                               "mode=user,poll=1"]), "poll", "'1'")


def test_bad_transport():
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--virtio-transport",
                               "usb"]), "--virtio-transport", "usb")


@pytest.mark.parametrize("value", ["gicv4", "", "v3"])
def test_bad_irqchip(value):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--irqchip", value]),
                          "--irqchip")


@pytest.mark.parametrize("value", ["gicv3", "gicv2"])
def test_irqchip_on_x86(value):
    """arm64's GIC choice on an x86 VM is refused before /dev/kvm is
    opened, not ignored."""
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--irqchip", value]),
                          "--irqchip", "x86")


def test_dump_dtb_on_x86(tmp):
    out = os.path.join(tmp, "x.dtb")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--dump-dtb", out]),
                          "--dump-dtb", "ACPI")
    assert not os.path.exists(out)


# User-mode networking (-n user): the parser's and libslirp's refusals.
@pytest.mark.parametrize("net", [
    "mode=user,hostfwd=tcp::0-:22", "mode=user,hostfwd=tcp::2222",
    "mode=user,hostfwd=tcp::2222-:65536", "mode=user,hostfwd=sctp::2222-:22",
    "mode=user,hostfwd=tcp:1.2.3:2222-:22"])
def test_net_user_bad_hostfwd(net):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-n", net]),
                          "hostfwd", net)


def test_net_user_tapif():
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "-n",
                               "mode=user,tapif=x"]), "tapif", "mode=tap")


def test_net_user_hostfwd_port_busy():
    """The host port is taken: lkvm names it and stops before the guest
    runs."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = run(["run", "-k", EXIT_ELF, "-n",
                 "mode=user,hostfwd=tcp::%d-:22" % port])
    assert_one_line_error(p, "hostfwd", "127.0.0.1:%d" % port,
                          "Address already in use")


def test_net_user_without_libslirp():
    """lkvm.static cannot have libslirp (a shared library only)."""
    static = os.environ.get("LKVM_STATIC", os.path.join(TOP, "lkvm.static"))
    p = run(["run", "-k", EXIT_ELF, "-n", "user"], lkvm=static)
    assert_one_line_error(p, "built without libslirp",
                          "user-mode networking")


def libslirp_paths():
    """Where the dynamic loader would find libslirp.so.0 (ldconfig's
    cache), with the file each name resolves to."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True,
                         text=True, check=True).stdout
    paths = {l.split(" => ")[1].strip() for l in out.splitlines()
             if "libslirp.so.0 " in l and " => " in l}
    return sorted(paths | {os.path.realpath(p) for p in paths})


def test_net_user_libslirp_loaded_only_when_asked():
    """lkvm links neither libslirp nor glib: a run without -n user does
    not pay for loading them."""
    out = subprocess.run(["readelf", "-d", LKVM], capture_output=True,
                         text=True, check=True).stdout
    needed = [l for l in out.splitlines() if "(NEEDED)" in l]
    assert needed and not any("slirp" in l or "glib" in l for l in needed), \
        needed


def test_net_user_libslirp_missing():
    """libslirp gone (each of its paths a bind mount of /dev/null): -n
    user is a one-line error naming it, before /dev/kvm, while a run
    without -n user goes as far as /dev/kvm."""
    paths = libslirp_paths()
    assert paths, "libslirp0 is not installed (scripts/install-deps.sh)"
    hide = ["sh", "-c", 'for p in $LIBSLIRP; do mount --bind /dev/null "$p"'
            ' || exit 96; done; exec "$@"', "sh"]
    env = {"LIBSLIRP": " ".join(paths)}
    p = run(["run", "-k", EXIT_ELF, "-n", "user"], prefix=hide, env=env)
    assert_one_line_error(p, "-n user needs libslirp", "libslirp.so.0")
    assert_one_line_error(run(["run", "-k", EXIT_ELF], prefix=hide, env=env),
                          NO_KVM)


def test_net_missing_tap_without_cap_net_admin():
    """A tap that does not exist, and no right to create one: lkvm says
    what is missing and how to make the tap. CAP_NET_ADMIN is dropped
    from the bounding set (root keeps /dev/kvm); the empty network
    namespace of unshare -n keeps anything from being created outside."""
    p = run(["run", "-k", EXIT_ELF, "-n", "mode=tap,tapif=lkvm-nosuch0"],
            prefix=["unshare", "-n", "setpriv", "--bounding-set=-net_admin"])
    assert_one_line_error(p, "lkvm-nosuch0", "CAP_NET_ADMIN",
                          "ip tuntap add")


def test_stats_file_that_cannot_be_made(tmp):
    """--stats is made at set-up (Landlock then allows writing it): a path
    that cannot be written is an error before /dev/kvm, not after the VM."""
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--stats",
                               str(tmp / "no" / "such.json")]),
                          "--stats", "no/such.json", "No such file")


# The management commands and the VM's name (core/control.c, core/vmctl.c).

def rundir_env(tmp):
    d = tmp / "run"
    d.mkdir(mode=0o700, exist_ok=True)
    return d, {"LKVM_RUNTIME_DIR": str(d)}


@pytest.mark.parametrize("name", ["bad/name", ".hidden", "a" * 65, "sp ace"])
def test_bad_vm_name(name):
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--name", name]),
                          "--name", "VM name")


def test_name_in_use_is_refused_before_kvm(tmp):
    """A socket that answers is a live VM's: refused, and left alone."""
    import socket
    d, env = rundir_env(tmp)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(d / "taken.sock"))
        s.listen(1)
        assert_one_line_error(run(["run", "-k", EXIT_ELF, "--name", "taken"],
                                  env=env), "'taken' is already running")
        assert (d / "taken.sock").exists()


def test_stale_socket_is_taken_over(tmp):
    """One nobody answers on is a dead VM's: the new VM gets as far as
    /dev/kvm, and removes the socket again when it ends."""
    import socket
    d, env = rundir_env(tmp)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(d / "old.sock"))
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--name", "old"],
                              env=env), NO_KVM)
    assert not (d / "old.sock").exists()


def test_non_socket_in_the_way(tmp):
    d, env = rundir_env(tmp)
    (d / "file.sock").write_text("mine")
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--name", "file"],
                              env=env), "not a VM's socket")
    assert (d / "file.sock").read_text() == "mine"


def test_shared_runtime_directory_is_refused(tmp):
    d, env = rundir_env(tmp)
    os.chmod(d, 0o755)
    assert_one_line_error(run(["run", "-k", EXIT_ELF, "--name", "x"],
                              env=env), "not a private directory")
    assert_one_line_error(run(["list"], env=env), "not a private directory")


# With no XDG_RUNTIME_DIR the sockets go to /tmp/lkvm-UID, a name any
# user can take first. Each case gets a /tmp of its own (a tmpfs in the
# test's namespace), squatted before lkvm runs; whatever lkvm does, the
# squatter's directory must stay empty.
SQUATS = {
    "another user's": ("mkdir -m 700 /tmp/lkvm-0 && chown 4321 /tmp/lkvm-0",
                       ["uid 4321 owns it", "remove it"]),
    "open to all": ("mkdir -m 777 /tmp/lkvm-0",
                    ["mode 777", "chmod 700 /tmp/lkvm-0"]),
    "a symlink": ("mkdir -m 700 /tmp/theirs && "
                  "ln -s /tmp/theirs /tmp/lkvm-0",
                  ["symbolic link", "remove it"]),
}
SQUAT_SH = r"""
mount -t tmpfs -o mode=1777 lkvm-test-tmp /tmp && eval "$SQUAT" || exit 96
env -u XDG_RUNTIME_DIR -u LKVM_RUNTIME_DIR "$@"
rc=$?
[ -z "$(ls -A /tmp/lkvm-0/)" ] || { echo "lkvm wrote into it" >&2; exit 97; }
exit $rc
"""


@pytest.mark.parametrize("squat", sorted(SQUATS))
@pytest.mark.parametrize("args", [["run", "--name", "x", "-k", EXIT_ELF],
                                  ["list"], ["stop", "x"]])
def test_squatted_default_runtime_directory(squat, args):
    setup, words = SQUATS[squat]
    p = run(args, prefix=["sh", "-c", SQUAT_SH, "sh"],
            env={"SQUAT": setup})
    assert p.returncode != 97, p.stderr
    assert_one_line_error(p, "runtime directory /tmp/lkvm-0",
                          "not a private directory", "LKVM_RUNTIME_DIR",
                          *words)


@pytest.mark.parametrize("args,words", [
    (["stop"], ["usage: lkvm stop"]),
    (["stop", "a", "b"], ["usage: lkvm stop"]),
    (["pause"], ["usage: lkvm pause"]),
    (["resume", "-x"], ["usage: lkvm resume"]),
    (["stat", "nosuch"], ["no VM named 'nosuch'"]),
    (["pause", "../etc"], ["not a VM name"]),
    (["debug", "vm"], ["usage: lkvm debug"]),
    (["debug", "vm", "--dump", "--sysrq", "h"], ["usage: lkvm debug"]),
    (["debug", "--dump"], ["usage: lkvm debug"]),
    (["debug", "nosuch", "--dump"], ["no VM named 'nosuch'"]),
    (["list", "extra"], ["usage: lkvm list"]),
])
def test_management_usage(tmp, args, words):
    _, env = rundir_env(tmp)
    p = run(args, env=env)
    assert p.returncode == 1, p
    errors = [l for l in p.stderr.splitlines() if l.startswith("lkvm: error: ")]
    assert len(errors) == 1 and all(w in errors[0] for w in words), p.stderr


def test_list_with_no_vms(tmp):
    """No directory yet, then an empty one: a header, nothing else, 0."""
    _, env = rundir_env(tmp)
    for e in ({"LKVM_RUNTIME_DIR": str(tmp / "never-made")}, env):
        p = run(["list"], env=e)
        assert p.returncode == 0 and p.stderr == "", p
        assert p.stdout.split() == ["NAME", "PID", "STATE", "CPUS", "MEM_MIB"]

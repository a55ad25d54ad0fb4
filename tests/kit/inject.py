# SPDX-License-Identifier: GPL-2.0
"""Make a thread of a running process run one syscall of ours, as code
that took the thread over (a memory-corruption bug) would: the thread is
stopped with ptrace where it sleeps in a syscall, its registers set to
the call we want at that very syscall instruction, stepped over it, and
put back as it was. x86-64 only; the tracer needs CAP_SYS_PTRACE (root).
"""
import ctypes
import os
import platform

PTRACE_PEEKDATA = 2
PTRACE_POKEDATA = 5
PTRACE_SINGLESTEP = 9
PTRACE_GETREGS = 12
PTRACE_SETREGS = 13
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000
SYS_OPENAT = 257
AT_FDCWD = -100
SYSCALL_INSN = b"\x0f\x05"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                         ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long


class Regs(ctypes.Structure):
    """struct user_regs_struct, x86-64."""
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
        "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs",
        "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs")]


def supported():
    return platform.machine() == "x86_64" and os.geteuid() == 0


def _ptrace(req, tid, addr=0, data=0):
    ctypes.set_errno(0)
    ret = _libc.ptrace(req, tid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
    err = ctypes.get_errno()
    if ret == -1 and err:
        raise OSError(err, f"ptrace({req}, {tid}): {os.strerror(err)}")
    return ret


def _wait_stop(tid):
    _, status = os.waitpid(tid, WALL)
    if not os.WIFSTOPPED(status):
        raise OSError(f"thread {tid} did not stop: status {status:#x}")


def _poke_bytes(tid, addr, data):
    data += b"\0" * (-len(data) % 8)
    for i in range(0, len(data), 8):
        word = int.from_bytes(data[i:i + 8], "little")
        _ptrace(PTRACE_POKEDATA, tid, addr + i, word)


def syscall(tid, nr, *args, payload=b""):
    """Thread tid runs syscall nr; args may be None where payload's
    address (a copy on the thread's stack, below the red zone) goes.
    Returns what the kernel returned (a -errno on failure)."""
    _ptrace(PTRACE_SEIZE, tid)
    try:
        _ptrace(PTRACE_INTERRUPT, tid)
        _wait_stop(tid)
        saved = Regs()
        _ptrace(PTRACE_GETREGS, tid, 0, ctypes.addressof(saved))
        # stopped in a syscall: its instruction is the 2 bytes before rip
        insn = saved.rip - 2
        word = _ptrace(PTRACE_PEEKDATA, tid, insn) & 0xffff
        if word.to_bytes(2, "little") != SYSCALL_INSN or \
                saved.orig_rax == 2 ** 64 - 1:
            raise OSError(f"thread {tid} is not in a syscall")
        addr = (saved.rsp - 4096) & ~0xf
        _poke_bytes(tid, addr, payload)
        regs = Regs.from_buffer_copy(saved)
        vals = [addr if a is None else a for a in args]
        for name, val in zip(("rdi", "rsi", "rdx", "r10", "r8", "r9"), vals):
            setattr(regs, name, val & (2 ** 64 - 1))
        regs.rax = nr
        regs.orig_rax = 2 ** 64 - 1     # no restart of what it slept in
        regs.rip = insn
        _ptrace(PTRACE_SETREGS, tid, 0, ctypes.addressof(regs))
        _ptrace(PTRACE_SINGLESTEP, tid)
        _wait_stop(tid)
        _ptrace(PTRACE_GETREGS, tid, 0, ctypes.addressof(regs))
        ret = ctypes.c_longlong(regs.rax).value
        # back as it was: the interrupted syscall restarts
        _ptrace(PTRACE_SETREGS, tid, 0, ctypes.addressof(saved))
        return ret
    finally:
        try:
            _ptrace(PTRACE_DETACH, tid)
        except OSError:
            pass                        # never stopped: nothing to undo


def openat(tid, path, flags=os.O_RDONLY):
    """openat(AT_FDCWD, path, flags) in thread tid: an fd, or -errno."""
    return syscall(tid, SYS_OPENAT, AT_FDCWD, None, flags, 0,
                   payload=os.fsencode(path) + b"\0")


def close(tid, fd):
    return syscall(tid, 3, fd)

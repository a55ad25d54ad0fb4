#!/usr/bin/env python3
"""Seed inputs for the transport fuzz targets (fuzz_virtio_pci.c and
fuzz_mmio.c): a driver's life written in each harness's input encoding,
so the fuzzer starts from a negotiated device with live queues, requests
in flight, BAR moves and MSI-X set up, instead of finding all that itself.

    tests/fuzz/gen_transport_seeds.py [OUTDIR]   (default tests/fuzz/corpus)

Keep it in step with the op tables in the two harnesses.
"""

import os
import struct
import sys

u8 = lambda v: struct.pack("<B", v & 0xff)
u16 = lambda v: struct.pack("<H", v & 0xffff)
u32 = lambda v: struct.pack("<I", v & 0xffffffff)
u64 = lambda v: struct.pack("<Q", v & 0xffffffffffffffff)


def chain_read(q, sector=1):
    """Op 0xc0+q: a virtio-blk IN request, header + 512-byte buffer +
    status byte, in three descriptors (blk_vm_post_chain's encoding)."""
    return (u8(0xc0 + q) + u8(2) +
            u8(0x00) + u8(15) + u16(0x8000) + u8(0) + u8(sector) +
            u8(0x81) + u16(512) + u16(0x9000) +
            u8(0x03) + u8(0) + u16(0xa000))


def chain_write(q, sector=2):
    """An OUT request: header and data readable, status writable."""
    return (u8(0xc0 + q) + u8(2) +
            u8(0x00) + u8(15) + u16(0x8100) + u8(1) + u8(sector) +
            u8(0x82) + u16(1024) + u16(0x9000) +
            u8(0x03) + u8(0) + u16(0xa000))


def chain_get_id(q):
    return (u8(0xc0 + q) + u8(1) +
            u8(0x00) + u8(15) + u16(0x8200) + u8(8) + u8(0) +
            u8(0x01) + u8(20) + u16(0x9400))


# ---- fuzz_virtio_pci.c: ops[op % 12] ----
P_CFG_ADDR, P_CFG_DATA, P_CFG_REG, P_BAR = 0, 1, 2, 3
P_RAW, P_NEGOTIATE, P_QUEUE, P_DRIVER_OK, P_KICK, P_MSIX = 6, 7, 8, 9, 10, 11


def p_head(legacy, nr_queues):
    return u8((1 if legacy else 0) | (nr_queues - 1) << 1)


def p_negotiate(mask=~0, version_1=True):
    return u8(P_NEGOTIATE) + u64(mask) + u8(1 if version_1 else 0)


def p_queue(q, base_off, size_log2=4, avail_off=0x100, used_off=0x200,
            vector=0):
    """Modern: select, size, desc/avail/used, vector, enable."""
    return (u8(P_QUEUE) + u8(q) + u16(base_off) + u8(size_log2) +
            u16(avail_off) + u16(used_off) + u8(vector))


def p_queue_legacy(q, base_off, pfn_add=0):
    return u8(P_QUEUE) + u8(q) + u16(base_off) + u8(pfn_add)


def p_driver_ok():
    return u8(P_DRIVER_OK) + u8(0)


def p_kick(q):
    return u8(P_KICK) + u8(q)


def p_bar(sel, off, width_log2, write, value=0):
    """sel picks the region (0 common, 1 ISR, 2 device, 3 notify, 4 table,
    5 PBA); off is a byte (a 16-bit one for the table)."""
    body = u8(width_log2) + u8(sel)
    body += u16(off) if sel == 4 else u8(off)
    return u8(P_BAR) + body + u8(1 if write else 0) + u64(value)


def p_cfg_reg(reg, how, value=0):
    """how % 4: 0 all-ones (BAR sizing), 1 BAR | value << 16, else value;
    how & 4: read instead of write."""
    body = u8(P_CFG_REG) + u8(reg) + u8(how)
    if how % 4 == 1:
        body += u16(value)
    elif how % 4 >= 2:
        body += u32(value)
    return body


def p_msix(v, how, lo=0, data=0):
    body = u8(P_MSIX) + u8(v) + u8(how)
    if how & 1:
        body += u8(lo) + u8(data)
    return body


def pci_seeds():
    life = (p_negotiate() + p_queue(0, 0x0000) + p_driver_ok() +
            chain_read(0) + p_kick(0) + chain_write(0) + p_kick(0) +
            chain_get_id(0) + p_kick(0) +
            p_bar(1, 0, 0, False))                      # read the ISR
    yield "modern_life", p_head(False, 1) + life
    # MSI-X on, vectors programmed and unmasked, then a request.
    yield "modern_msix", (
        p_head(False, 2) + p_msix(0, 0b01101, 0x01, 0x41) +
        p_msix(1, 0b01101, 0x02, 0x42) + p_negotiate() +
        p_queue(0, 0x0000, vector=1) + p_queue(1, 0x4000, vector=2) +
        p_driver_ok() + chain_read(1) + p_kick(1) +
        p_bar(5, 0, 3, False) + p_msix(1, 0b01111) + chain_read(1) +
        p_kick(1) + p_bar(5, 0, 3, False) + p_msix(1, 0b01101))
    # BAR sizing, a move, decoding off and on again, under a live queue.
    yield "modern_bar_move", (
        p_head(False, 1) + p_negotiate() + p_queue(0, 0x2000) +
        p_driver_ok() + p_cfg_reg(0x20, 0) + p_cfg_reg(0x20, 6) +
        p_cfg_reg(0x20, 2, 0xd0000004) + p_cfg_reg(0x24, 2, 0x1) +
        chain_read(0) + p_kick(0) + p_cfg_reg(0x04, 2, 0x0) +
        p_kick(0) + p_cfg_reg(0x04, 2, 0x6) + chain_read(0) + p_kick(0))
    # Walk the capability list and read the common config.
    caps = b"".join(p_cfg_reg(r, 6) for r in (0x34, 0x40, 0x44, 0x48, 0x4c,
                                              0x50, 0x5c, 0x60, 0x70, 0x80))
    common = b"".join(p_bar(0, off, 2, False) for off in range(0, 0x3c, 4))
    yield "modern_read_all", p_head(False, 4) + caps + common + \
        p_bar(2, 0, 3, False) + p_bar(4, 0x10, 2, False)
    # DRIVER_OK without FEATURES_OK: the device wants a reset.
    yield "modern_no_features_ok", (
        p_head(False, 1) + p_bar(0, 20, 0, True, 3) + p_bar(0, 8, 2, True, 1) +
        p_bar(0, 12, 2, True, 1) + p_bar(0, 20, 0, True, 0x7) +
        p_bar(0, 20, 0, False) +
        p_bar(1, 0, 0, False) + p_bar(0, 20, 0, True, 0))
    legacy = (u8(P_BAR) + u8(0) + u8(18) + u8(1) + u64(3) +
              p_negotiate(0xffffffff, False) + p_queue_legacy(0, 0x0000) +
              p_driver_ok() + chain_read(0) + p_kick(0) + chain_write(0) +
              p_kick(0) + u8(P_BAR) + u8(0) + u8(19) + u8(0) + u64(0))
    yield "legacy_life", p_head(True, 1) + legacy
    yield "legacy_bar_move", (
        p_head(True, 2) + p_cfg_reg(0x10, 0) + p_cfg_reg(0x10, 6) +
        p_cfg_reg(0x10, 2, 0xd001) + legacy)
    yield "cfg_ports", (p_head(False, 1) + u8(P_CFG_ADDR) + u8(1) + u8(0) +
                        u8(P_CFG_DATA) + u8(0x02) + u32(0) +
                        u8(P_CFG_DATA) + u8(0x80 | 0x00 | 2) + u32(0) +
                        u8(P_CFG_ADDR) + u8(0) + u32(0x80000000) +
                        u8(P_CFG_DATA) + u8(0x02) + u32(0))


# ---- fuzz_mmio.c: ops[op % 11] ----
M_REG, M_CONFIG, M_RAW, M_NEGOTIATE = 0, 3, 4, 5
M_QUEUE, M_DRIVER_OK, M_KICK, M_ACK, M_READY = 6, 7, 8, 9, 10
MMIO_REGS = 26


def m_reg(idx, write, value=0):
    return u8(M_REG) + u8(0x40 if write else 0) + u8(idx) + u32(value)


def m_ring(how, where):
    """pick_ring(): 0xff and a 64-bit address, else an offset."""
    return u8(how) + (u64(where) if how == 0xff else u16(where))


def m_queue(q, base_off, size_log2=4, avail=(0, 0x100), used=(0, 0x200)):
    return (u8(M_QUEUE) + u8(q) + u16(base_off) + u8(size_log2) +
            m_ring(*avail) + m_ring(*used))


def mmio_seeds():
    base = (u8(M_NEGOTIATE) + u64(~0) + u8(1) + m_queue(0, 0x0000) +
            u8(M_DRIVER_OK) + u8(0))
    yield "mmio_life", (u8(0) + base + chain_read(0) + u8(M_KICK) + u8(0) +
                        u8(M_ACK) + u8(1) + chain_write(0) + u8(M_KICK) +
                        u8(0) + chain_get_id(0) + u8(M_KICK) + u8(0) +
                        u8(M_ACK) + u8(1))
    yield "mmio_regs", u8(3) + b"".join(m_reg(i, False)
                                        for i in range(MMIO_REGS))
    yield "mmio_config", u8(0) + b"".join(
        u8(M_CONFIG) + u8(w) + u8(off) + u64(0)
        for w, off in ((2, 0), (3, 8), (0, 0x3f), (1, 0x40)))
    yield "mmio_two_queues", (
        u8(1) + u8(M_NEGOTIATE) + u64(~0) + u8(1) + m_queue(0, 0x0000) +
        m_queue(1, 0x6000, 8) + u8(M_DRIVER_OK) + u8(0) + chain_read(1) +
        u8(M_KICK) + u8(1) + u8(M_READY) + u8(1) + u8(0) +
        u8(M_READY) + u8(1) + u8(1) + chain_read(0) + u8(M_KICK) + u8(0))
    yield "mmio_bad_ring", (
        u8(0) + u8(M_NEGOTIATE) + u64(~0) + u8(1) +
        m_queue(0, 0xfff0, 9, (0xff, 1 << 40), (0, 0x3)) + u8(M_DRIVER_OK) + u8(0) +
        m_reg(15, False) + m_reg(15, True, 0))
    yield "mmio_raw", u8(0) + u8(M_RAW) + u8(0x02) + u16(0xfff0) + u64(0) + \
        u8(M_RAW) + u8(0x42) + u16(0x0200) + u64(0)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus")
    for target, seeds in (("virtio_pci", pci_seeds()),
                          ("mmio", mmio_seeds())):
        os.makedirs(os.path.join(out, target), exist_ok=True)
        for name, data in seeds:
            with open(os.path.join(out, target, "seed_" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()

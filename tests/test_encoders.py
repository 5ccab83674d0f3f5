"""The rewriter's own instruction encoders, decoded back by capstone (an independent decoder)."""

from __future__ import annotations

import struct

import capstone
import pytest

from rewriter.arch.arm import encode as enc

T32 = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB)
A32 = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_ARM)


def one(md: capstone.Cs, data: bytes, at: int = 0x1000) -> str:
    insns = list(md.disasm(data, at))
    assert sum(i.size for i in insns) == len(data), f"{data.hex()} decodes to {insns}"
    return "; ".join(f"{i.mnemonic} {i.op_str}".strip() for i in insns)


@pytest.mark.parametrize("src, dst", [(0x1000, 0x1004), (0x1000, 0x800000), (0x900000, 0x1000), (0x2002, 0x2000)])
def test_t32_branches(src: int, dst: int) -> None:
    assert one(T32, enc.t32_b(src, dst), src) == f"b.w #{dst:#x}"
    assert one(T32, enc.t32_bl(src, dst), src) == f"bl #{dst:#x}"
    if abs(dst - src) < 1 << 20:
        assert one(T32, enc.t32_b(src, dst, enc.COND["ne"]), src) == f"bne.w #{dst:#x}"
    else:
        with pytest.raises(enc.RangeError):
            enc.t32_b(src, dst, enc.COND["ne"])


@pytest.mark.parametrize("src, dst", [(0x1000, 0x1004), (0x1010, 0x1000), (0x1000, 0x1802), (0x1800, 0x1004)])
def test_t32_narrow_branch(src: int, dst: int) -> None:
    assert one(T32, enc.t32_b_narrow(src, dst), src) == f"b #{dst:#x}"
    with pytest.raises(enc.RangeError):
        enc.t32_b_narrow(0x1000, 0x1806)


def test_t32_blx_and_range() -> None:
    assert one(T32, enc.t32_blx(0x1002, 0x2000), 0x1002) == "blx #0x2000"
    with pytest.raises(enc.RangeError):
        enc.t32_b(0, 1 << 25)


@pytest.mark.parametrize("value", [0, 1, 0xFFFF, 0x12345678, 0xFFFFFFFF])
def test_t32_mov32(value: int) -> None:
    def imm(v: int) -> str:  # capstone prints immediates below 10 in decimal
        return str(v) if v < 10 else hex(v)
    assert one(T32, enc.t32_mov32(3, value)) == f"movw r3, #{imm(value & 0xFFFF)}; movt r3, #{imm(value >> 16)}"


@pytest.mark.parametrize("start, value", [(0x1234, 0x1E5A4), (5, 0x83F58), (0xFFFFFFF0, 0x20), (0, 0x7FFFFFFF),
                                          (0x80000000, 0x80000001), (0x10, 0xFFFFF000), (7, 0x12345678), (9, 0)])
def test_t32_add_constant(start: int, value: int) -> None:
    """rd += value with no scratch register, run under unicorn: the sum mod 2^32, the
    other registers and the flags as they were; an address below 1 MiB takes two
    instructions (how `add rd, pc` is relocated)."""
    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_ARM_REG_CPSR, UC_ARM_REG_R4, UC_ARM_REG_R5

    data = enc.t32_add_constant(5, value)
    if 0 < value < 1 << 20:
        assert len(data) <= 8
    at = 0x10000
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
    uc.mem_map(at, 0x1000)
    uc.mem_write(at, data or enc.t32_nop())
    for flags in (0, 0xF0000000):
        uc.reg_write(UC_ARM_REG_CPSR, (uc.reg_read(UC_ARM_REG_CPSR) & 0x0FFFFFFF) | flags)
        uc.reg_write(UC_ARM_REG_R5, start)
        uc.reg_write(UC_ARM_REG_R4, 0x4444)
        uc.emu_start(at | 1, at + max(len(data), 2))
        assert uc.reg_read(UC_ARM_REG_R5) == (start + value) & 0xFFFFFFFF
        assert uc.reg_read(UC_ARM_REG_R4) == 0x4444
        assert uc.reg_read(UC_ARM_REG_CPSR) >> 28 == flags >> 28


def test_t32_misc() -> None:
    assert one(T32, enc.t32_push([0, 1, 2, 3, 12, 14])) == "push.w {r0, r1, r2, r3, ip, lr}"
    assert one(T32, enc.t32_pop([0, 1, 2, 3])) == "pop {r0, r1, r2, r3}"
    assert one(T32, enc.t32_mrs_apsr(4)) == "mrs r4, apsr"
    assert one(T32, enc.t32_msr_apsr(4)) == "msr apsr_nzcvqg, r4"
    assert one(T32, enc.t32_add_reg(2, 15)) == "add r2, pc"
    assert one(T32, enc.t32_ldrd(0, 1, 2)) == "ldrd r0, r1, [r2]"
    assert one(T32, enc.t32_strd(0, 1, 2)) == "strd r0, r1, [r2]"
    assert one(T32, enc.t32_stmia_wb(14, [0, 1, 2])) == "stm.w lr!, {r0, r1, r2}"
    assert one(T32, enc.t32_sub_reg(0, 0, 14)) == "sub.w r0, r0, lr"
    assert one(T32, enc.t32_cbz(0, 2), 0x1000) == "cbz r0, #0x1006"
    assert one(T32, enc.t32_cbz(5, 126), 0x1000) == "cbz r5, #0x1082"
    with pytest.raises(enc.RangeError):
        enc.t32_cbz(8, 2)
    assert one(T32, enc.t32_cbz(2, 30, nonzero=True), 0x1000) == "cbnz r2, #0x1022"
    assert one(T32, enc.t32_orr_imm(1, 0, 63)) == "orr r1, r0, #0x3f"
    assert one(T32, enc.t32_orr_imm(1, 1, 0x80000000)) == "orr r1, r1, #0x80000000"
    assert one(T32, enc.t32_orr_imm(1, 1, 0xF00)) == "orr r1, r1, #0xf00"
    assert one(T32, enc.t32_orr_imm(1, 1, 0x100)) == "orr r1, r1, #0x100"
    assert one(A32, enc.a32_orr_imm(1, 1, 0x700)) == "orr r1, r1, #0x700"
    assert one(T32, enc.t32_ubfx(2, 0, 6, 5)) == "ubfx r2, r0, #6, #5"
    assert one(T32, enc.t32_ubfx(2, 0, 0, 24)) == "ubfx r2, r0, #0, #0x18"
    assert one(T32, enc.t32_add_imm(0, 5, 32)) == "addw r0, r5, #0x20"
    assert one(T32, enc.t32_add_imm(0, 5, -8)) == "subw r0, r5, #8"
    assert one(T32, enc.t32_add_reg_shift(0, 0, 12, 0, 2)) == "add.w r0, r0, ip, lsl #2"
    assert one(T32, enc.t32_it(enc.COND["eq"]) + b"\x00\xbf") == "it eq; nopeq"


def test_t32_record_pieces() -> None:
    """The instructions of the ReHost inline record and of its stubs' stack choice."""
    assert one(T32, enc.t32_ldrex(14, 12)) == "ldrex lr, [ip]"
    assert one(T32, enc.t32_strex(0, 14, 12)) == "strex r0, lr, [ip]"
    with pytest.raises(enc.RangeError):
        enc.t32_strex(14, 14, 12)
    assert one(T32, enc.t32_ldrexd(0, 1, 14)) == "ldrexd r0, r1, [lr]"
    assert one(T32, enc.t32_strexd(12, 0, 1, 14)) == "strexd ip, r0, r1, [lr]"
    with pytest.raises(enc.RangeError):
        enc.t32_strexd(1, 0, 1, 14)
    assert one(T32, enc.t32_stmdb(14, [0, 1, 2, 3])) == "stmdb lr, {r0, r1, r2, r3}"
    with pytest.raises(enc.RangeError):
        enc.t32_stmdb(14, [0])
    assert one(T32, enc.t32_str_neg(0, 14, 4)) == "str r0, [lr, #-0x4]"
    assert one(T32, enc.t32_lsr_imm(14, 14, 14, setflags=True)) == "lsrs.w lr, lr, #0xe"
    assert one(T32, enc.t32_sub_reg(14, 13, 14)) == "sub.w lr, sp, lr"


def test_a32_filter_pieces() -> None:
    """The A32 instructions of the repeat filter (none of them sets flags)."""
    assert one(A32, enc.a32_orr_imm(1, 0, 0x3F)) == "orr r1, r0, #0x3f"
    assert one(A32, enc.a32_orr_imm(1, 1, 0x80000000)) == "orr r1, r1, #0x80000000"
    assert one(A32, enc.a32_ubfx(2, 0, 6, 7)) == "ubfx r2, r0, #6, #7"
    assert one(A32, enc.a32_sub_reg(2, 2, 1)) == "sub r2, r2, r1"
    assert one(A32, enc.a32_clz(2, 2)) == "clz r2, r2"
    assert enc.a32_modimm(0x1FF) is None


def test_t32_pc_address_is_position_independent() -> None:
    """movw/movt + add pc: the register ends up holding the target, wherever the code is."""
    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_ARM_REG_R5

    for at, target in [(0x10000, 0x12345678), (0x20002, 0x10000)]:
        code = enc.t32_pc_address(5, at, target)
        uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
        uc.mem_map(at & ~0xFFF, 0x2000)
        uc.mem_write(at, code)
        uc.emu_start(at | 1, at + len(code))
        assert uc.reg_read(UC_ARM_REG_R5) == target


def test_a32_encoders() -> None:
    assert one(A32, enc.a32_b(0x1000, 0x2000)) == "b #0x2000"
    assert one(A32, enc.a32_b(0x1000, 0x2000, enc.COND["eq"], link=True)) == "bleq #0x2000"
    assert one(A32, enc.a32_blx_imm(0x1000, 0x2002)) == "blx #0x2002"
    assert one(A32, enc.a32_push([0, 1, 14])) == "push {r0, r1, lr}"
    assert one(A32, enc.a32_pop([0, 1, 15])) == "pop {r0, r1, pc}"
    assert one(A32, enc.a32_mrs_apsr(3)) == "mrs r3, apsr"
    assert one(A32, enc.a32_msr_apsr(3)) == "msr apsr_nzcvqg, r3"
    assert one(A32, enc.a32_ldr_pc_literal()) == "ldr pc, [pc, #-4]"


def test_vfp_transfers() -> None:
    assert one(T32, enc.t32_vmov_to_d(16, 0, 1)) == "vmov d16, r0, r1"
    assert one(T32, enc.t32_vmov_from_d(12, 14, 19)) == "vmov ip, lr, d19"
    assert one(A32, enc.a32_vmov_to_d(20, 4, 5)) == "vmov d20, r4, r5"
    assert one(A32, enc.a32_vmov_from_d(0, 1, 16)) == "vmov r0, r1, d16"



def thumb_cpu_with_neon():
    """A unicorn CPU in Thumb state with VFP and NEON usable (CPACR: cp10/cp11 on; FPEXC.EN)."""
    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_ARM_REG_C1_C0_2, UC_ARM_REG_FPEXC

    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
    uc.reg_write(UC_ARM_REG_C1_C0_2, uc.reg_read(UC_ARM_REG_C1_C0_2) | (0xF << 20))
    uc.reg_write(UC_ARM_REG_FPEXC, 0x40000000)
    return uc

@pytest.mark.parametrize("vfp, atomic", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("start, flags", [(0xFFFFFFFF, 0), (5, 0xF8000000), (0x1FFFFFFFF, 0x60000000)])
def test_counter_increment_adds_without_flags(start: int, flags: int, vfp: bool, atomic: bool) -> None:
    """The inline 64-bit counter under unicorn: +1 with and without a carry into the high
    word, every register but the counter's memory and every flag as they were; with d16-d31
    free (``vfp``) the NEON form, ``atomic`` the LDREX/STREX one (firmware), otherwise the
    CBNZ one."""
    from unicorn.arm_const import (
        UC_ARM_REG_CPSR,
        UC_ARM_REG_R0,
        UC_ARM_REG_R1,
        UC_ARM_REG_R2,
        UC_ARM_REG_SP,
    )

    from rewriter.arch.arm.counters import emit_increment
    from rewriter.arch.arm.isa import T32, Scratch
    from rewriter.arch.code import Code

    at, counter = 0x10000, 0x20000
    code = Code(at)
    emit_increment(T32, code, "counter", 1, Scratch(vfp=vfp), atomic)
    data = code.finish(lambda key: counter)
    uc = thumb_cpu_with_neon()
    uc.mem_map(at, 0x1000)
    uc.mem_map(counter, 0x1000)
    uc.mem_map(0x30000, 0x1000)
    uc.reg_write(UC_ARM_REG_SP, 0x30800)
    uc.mem_write(at, data)
    uc.mem_write(counter, start.to_bytes(8, "little"))
    uc.reg_write(UC_ARM_REG_R0, 1234)
    uc.reg_write(UC_ARM_REG_R1, 5678)
    uc.reg_write(UC_ARM_REG_R2, 9012)
    uc.reg_write(UC_ARM_REG_CPSR, (uc.reg_read(UC_ARM_REG_CPSR) & 0x0FFFFFFF) | flags)
    flags = uc.reg_read(UC_ARM_REG_CPSR)
    uc.emu_start(at | 1, at + len(data))
    assert int.from_bytes(uc.mem_read(counter, 8), "little") == start + 1
    assert (uc.reg_read(UC_ARM_REG_R0), uc.reg_read(UC_ARM_REG_R1), uc.reg_read(UC_ARM_REG_R2)) == (1234, 5678, 9012)
    nzcvq_ge = 0xF80F0000  # the T bit differs only because emulation started in Thumb state
    assert uc.reg_read(UC_ARM_REG_CPSR) & nzcvq_ge == flags & nzcvq_ge


@pytest.mark.parametrize("start, amount", [(0xFFFFFFFF, 3), (0xFFFFFFFC, 4), (0xFFFFFFFB, 4), (5, 7),
                                           (0x7FFFFFFF, 2), (0x1FFFFFFFE, 9), (0x2FFFFFFF0, 15)])
@pytest.mark.parametrize("form", ["bump", "bump, other registers", "atomic add"])
def test_counter_bump_by_amount(start: int, amount: int, form: str) -> None:
    """The T32 counter += k that a shared-key test uses (counters.t32_bump), and the sums of
    a multi-register access's middle accesses (t32_bump with other registers, t32_atomic_add:
    counter at [r1], r0, r2 and r3 theirs) under unicorn: exact 64-bit sums with and without a carry into
    the high word, flags untouched."""
    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_ARM_REG_CPSR, UC_ARM_REG_R1

    from rewriter.arch.arm.counters import t32_atomic_add, t32_bump

    at, counter = 0x10000, 0x20000
    data = {"bump": lambda: t32_bump(1, 0, amount),
            "bump, other registers": lambda: t32_bump(1, 0, amount, value=3, new=0),
            "atomic add": lambda: t32_atomic_add(amount, 0, 2, 1, 3)}[form]()
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
    uc.mem_map(at, 0x1000)
    uc.mem_map(counter, 0x1000)
    uc.mem_write(at, data)
    uc.mem_write(counter, start.to_bytes(8, "little"))
    uc.reg_write(UC_ARM_REG_R1, counter)
    uc.reg_write(UC_ARM_REG_CPSR, (uc.reg_read(UC_ARM_REG_CPSR) & 0x0FFFFFFF) | 0xA0000000)
    flags = uc.reg_read(UC_ARM_REG_CPSR)
    uc.emu_start(at | 1, at + len(data))
    assert int.from_bytes(uc.mem_read(counter, 8), "little") == start + amount
    assert uc.reg_read(UC_ARM_REG_CPSR) & 0xF80F0000 == flags & 0xF80F0000


def _slot_cases(address: int, shift: int, slot_bits: int, depth: int, table: int) -> tuple[int, int, int, dict]:
    """For a repeat test of ``address``: its slot's address, its key, another key and the
    slot's contents before each case (the key most recent, new, and older at depth 2)."""
    slot = table + 4 * depth * ((address >> shift) & ((1 << slot_bits) - 1))
    key = address | ((1 << shift) - 1)
    other, older = key ^ 0x40, key ^ 0x80
    cases = {"most recent": [key, other], "new": [other, older]}
    if depth == 2:
        cases["older"] = [other, key]
    return slot, key, other, cases


def _primed(uc, slot: int, keys: list[int], counter_at: int, counter: int, address: int) -> int:
    """Set a repeat test up in ``uc``: the slot holds ``keys``, the 64-bit hit counter at
    ``counter_at`` holds ``counter``, r0 = ``address``, N and V set; returns the CPSR."""
    from unicorn.arm_const import UC_ARM_REG_CPSR, UC_ARM_REG_R0

    uc.mem_write(slot, b"".join(k.to_bytes(4, "little") for k in keys))
    uc.mem_write(counter_at, counter.to_bytes(8, "little"))
    uc.reg_write(UC_ARM_REG_R0, address)
    uc.reg_write(UC_ARM_REG_CPSR, (uc.reg_read(UC_ARM_REG_CPSR) & 0x0FFFFFFF) | 0x90000000)
    return uc.reg_read(UC_ARM_REG_CPSR)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("done_past", [0x800, 24])
@pytest.mark.parametrize("pic", [False, True])
@pytest.mark.parametrize("start", [7, 0xFFFFFFFF])
@pytest.mark.parametrize("slot_bits", [0, 5])
@pytest.mark.parametrize("hit_last", [False, True])
def test_filter_test_with_the_counter_after_the_slots(slot_bits: int, start: int, pic: bool, done_past: int,
                                                      depth: int, hit_last: bool) -> None:
    """The T32 repeat test whose counter follows its slot table (repeat_filter.t32_filter_test) and the
    code after it for a new key (repeat_filter.t32_filter_miss), under unicorn. A key the slot holds
    (either of its two at depth 2) bumps the 64-bit counter (carry included) and leaves for
    ``done``, the slot's most recent key first after it; a new key falls through, the slot
    takes it (the older one moving down at depth 2), the counter untouched, and r2 = the key
    that left; the flags stay as they were either way. ``done`` ``done_past`` bytes past
    the test: far (every hit through the final B) or near (CBNZ's reach). ``hit_last``: the
    test jumps to the hit's NEON counter (repeat_filter.neon_hit) at ``done`` instead, which runs
    on to the end."""
    from unicorn.arm_const import (
        UC_ARM_REG_CPSR,
        UC_ARM_REG_PC,
        UC_ARM_REG_R1,
        UC_ARM_REG_R2,
    )

    from rewriter.arch.arm.repeat_filter import neon_hit, t32_filter_miss, t32_filter_test

    shift, at, table = 6, 0x10000, 0x20000
    near = 4 * depth * (1 << slot_bits) + 8  # the counter's second slot
    shape = (pic, shift, slot_bits, depth, near, hit_last)
    done = at + len(t32_filter_test(*shape, at, table, at + 0x800)) + done_past
    data = t32_filter_test(*shape, at, table, done) + t32_filter_miss(slot_bits, depth, True)
    after_hit = neon_hit(near) if hit_last else b""
    address = 0x12345678
    slot, key, other, cases = _slot_cases(address, shift, slot_bits, depth, table)
    for case, before in cases.items():
        uc = thumb_cpu_with_neon()
        uc.mem_map(at, 0x1000)
        uc.mem_map(table, 0x1000)
        uc.mem_write(at, data)
        uc.mem_write(done, after_hit + b"\x00\xbf")  # (the hit's counter,) nop
        flags = _primed(uc, slot, before[:depth], table + near, start, address)
        end = at + len(data) if case == "new" else done + len(after_hit)
        uc.emu_start(at | 1, end, count=100)
        assert uc.reg_read(UC_ARM_REG_PC) == end, case
        counter = int.from_bytes(uc.mem_read(table + near, 8), "little")
        after = [int.from_bytes(uc.mem_read(slot + 4 * i, 4), "little") for i in range(depth)]
        if case == "new":
            assert counter == start
            assert after == [key, other][:depth]
            assert uc.reg_read(UC_ARM_REG_R1) == key
            assert uc.reg_read(UC_ARM_REG_R2) == before[depth - 1]  # the key that left
        else:
            assert counter == start + 1
            assert after == [key, other][:depth], case
        assert uc.reg_read(UC_ARM_REG_CPSR) & 0xF80F0000 == flags & 0xF80F0000


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("pic", [False, True])
@pytest.mark.parametrize("slot_bits", [0, 5])
@pytest.mark.parametrize("to_hit", [8, 12])
def test_filter_test_of_a_shared_call_path(slot_bits: int, pic: bool, depth: int, to_hit: int) -> None:
    """The T32 repeat test of a record site whose call path is an island
    (repeat_filter.t32_compact_test), then the island's slot update (repeat_filter.t32_filter_miss), under
    unicorn. A key the slot holds (either of its two at depth 2) goes to the hit
    ``to_hit`` bytes past the test (the hit's NEON counter runs there), the slot's most
    recent key first after it; a new key runs on past the test, and the island's first
    part makes the slot take it and leaves r2 = the key that left, r1 = the key; the
    flags stay as they were either way."""
    from unicorn.arm_const import UC_ARM_REG_CPSR, UC_ARM_REG_PC, UC_ARM_REG_R1, UC_ARM_REG_R2

    from rewriter.arch.arm.repeat_filter import neon_hit, t32_compact_test, t32_filter_miss

    shift, at, table, island = 6, 0x10000, 0x20000, 0x30000
    near = 4 * depth * (1 << slot_bits) + 8
    test = t32_compact_test(pic, shift, slot_bits, depth, to_hit, at, table)
    miss, bump = t32_filter_miss(slot_bits, depth, True), neon_hit(near)
    hit = at + len(test) + to_hit
    address = 0x12345678
    slot, key, other, cases = _slot_cases(address, shift, slot_bits, depth, table)
    for case, before in cases.items():
        uc = thumb_cpu_with_neon()
        for page in (at, table, island):
            uc.mem_map(page, 0x1000)
        uc.mem_write(at, test + b"\x00\xde" * (to_hit // 2) + bump)  # udf where the call path goes
        uc.mem_write(island, miss)
        flags = _primed(uc, slot, before[:depth], table + near, 41, address)
        end = at + len(test) if case == "new" else hit + len(bump)
        uc.emu_start(at | 1, end, count=100)
        assert uc.reg_read(UC_ARM_REG_PC) == end, case
        counter = int.from_bytes(uc.mem_read(table + near, 8), "little")
        if case == "new":
            uc.emu_start(island | 1, island + len(miss), count=20)
            assert uc.reg_read(UC_ARM_REG_R1) == key
            assert uc.reg_read(UC_ARM_REG_R2) == before[depth - 1]  # the key that left
        assert counter == (41 if case == "new" else 42), case
        after = [int.from_bytes(uc.mem_read(slot + 4 * i, 4), "little") for i in range(depth)]
        assert after == [key, other][:depth], case
        assert uc.reg_read(UC_ARM_REG_CPSR) & 0xF80F0000 == flags & 0xF80F0000


@pytest.mark.parametrize("thumb, leaving", [(True, None), (True, "site"), (True, "slot"), (False, None)])
@pytest.mark.parametrize("target", [0, 4, 0x40, 8, 0x3C, 0x44, -4, 0x1000, 0x7FFF8000, "between"])
def test_computed_jump_translation(target: int | str, thumb: bool, leaving: str | None) -> None:
    """The computed-jump translation under unicorn, against the table's meaning: an
    instruction start of the procedure maps to its copy, any other address of it to
    itself, an address outside to itself (or to the leaving stub, when given); the
    flags stay as they were. ``target`` is an offset from the procedure's start
    ("between": inside a T32 instruction, at halfword 0x42; A32 targets are words).
    Summing procedures (``leaving``) are T32 only: with PIC the stub is selected after
    the translation ("site"), without it read from the slot before the table's header
    ("slot")."""
    from types import SimpleNamespace

    from unicorn import UC_ARCH_ARM, UC_MODE_ARM, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_ARM_REG_CPSR, UC_ARM_REG_R0, UC_ARM_REG_R3

    from rewriter.arch.arm.isa import ISA
    from rewriter.arch.arm.relocate import XLATE_SLOT_TO_ENTRIES, emit_xlate, leaving_stub
    from rewriter.arch.code import Code

    if target == "between":
        target = 0x42 if thumb else 0x38
    bit = int(thumb)
    proc = SimpleNamespace(address=0x8000, size=0x44, thumb=thumb)
    copies = {0x8000: 0x11000, 0x8004: 0x11010, 0x8040: 0x11100}  # instruction starts -> relocated
    at, table, stub = 0x10000, 0x10800, 0x12344
    code = Code(at, pic=leaving != "slot")
    isa = ISA.for_mode(thumb)
    out = leaving_stub(proc) if leaving == "slot" else "out"
    emit_xlate(isa, code, proc, out if leaving else None)
    slot = table - XLATE_SLOT_TO_ENTRIES
    labels = {("xlate_entries", proc.address): table, ("with_bit", "out", bit): stub | bit,
              ("xlate_slot", proc.address): slot}
    data = code.finish(lambda key: labels[key])
    step = 2 if thumb else 4
    entries = [0] * (proc.size // step)
    for original, copy in copies.items():
        entries[(original - proc.address) // step] = (copy - original) & 0xFFFFFFFF
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB if thumb else UC_MODE_ARM)
    uc.mem_map(at, 0x3000)
    uc.mem_write(at, data)
    uc.mem_write(table, b"".join(e.to_bytes(4, "little") for e in entries))
    if leaving == "slot":  # the stub's address, then the header {start, size, shift}
        uc.mem_write(slot, struct.pack("<4I", stub | bit, proc.address, proc.size, 1))
    address = (proc.address + target) & 0xFFFFFFFF
    value = address | bit
    inside = 0 <= target < proc.size
    if address in copies:
        expected = copies[address] | bit
    elif leaving and not inside:
        expected = stub | bit
    else:
        expected = value
    for flags in (0, 0xF0000000, 0x50000000):
        uc.reg_write(UC_ARM_REG_CPSR, (uc.reg_read(UC_ARM_REG_CPSR) & 0x0FFFFFFF) | flags)
        before = uc.reg_read(UC_ARM_REG_CPSR)
        uc.reg_write(UC_ARM_REG_R0, value)
        uc.emu_start(at | bit, at + len(data))
        assert uc.reg_read(UC_ARM_REG_R3) == expected
        assert uc.reg_read(UC_ARM_REG_CPSR) >> 28 == before >> 28


@pytest.mark.parametrize("routine_sets", [0x00000000, 0xF0000000, 0x08000000, 0x000F0000])
def test_call_stub_gives_the_flags_back(routine_sets: int) -> None:
    """The shared call stub under unicorn: whatever NZCV, Q and GE the program had (all 16
    NZCV patterns, with and without Q/GE) come back after a routine that sets its own
    (only NZCV: the arithmetic way back; Q or GE too: the MSR way)."""
    from unicorn.arm_const import UC_ARM_REG_CPSR, UC_ARM_REG_LR, UC_ARM_REG_SP

    from rewriter.arch.arm.call_stubs import emit_call_stub
    from rewriter.arch.code import Code

    at, stack, done = 0x10000, 0x30000, 0x10F00
    code = Code(at)
    code.label("routine")  # sets the flags to routine_sets (msr apsr_nzcvqg, r0), returns
    code.emit(enc.t32_mov32(0, routine_sets) + enc.t32_msr_apsr(0) + enc.t32_bx(14))
    emit_call_stub(code, "f", "routine")
    data = code.finish(lambda key: code.labels[key] if key in code.labels else stack + 0x800)
    uc = thumb_cpu_with_neon()
    uc.mem_map(at, 0x1000)
    uc.mem_map(stack, 0x1000)
    uc.mem_write(at, data)
    uc.mem_write(done, enc.t32_nop())
    apsr = 0xF80F0000
    for extra in (0, 0x08000000, 0x00050000):
        for nzcv in range(16):
            uc.reg_write(UC_ARM_REG_CPSR, (uc.reg_read(UC_ARM_REG_CPSR) & ~apsr) | nzcv << 28 | extra)
            before = uc.reg_read(UC_ARM_REG_CPSR)
            uc.reg_write(UC_ARM_REG_SP, stack + 0x400)
            uc.reg_write(UC_ARM_REG_LR, done | 1)
            uc.emu_start(code.labels[("callstub", "f")] | 1, done)
            assert uc.reg_read(UC_ARM_REG_CPSR) & apsr == before & apsr, f"NZCV {nzcv:04b} extra {extra:#x}"
            assert uc.reg_read(UC_ARM_REG_SP) == stack + 0x400

"""Inline counters and running sums: the sequences that add to a 64-bit counter in
memory (plain, or with LDREX/STREX where threads or interrupt handlers count too) and
the NEON running sums of decision 0014, with the registers they borrow."""


from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from functools import cache

from ..code import Code
from . import encode as enc
from .isa import IP, ISA, LR, PC, SP, T32, Scratch


def neon_add_one(value: int, ones: int, base: int, offset: int = 0) -> bytes:
    """T32 64-bit counter at [base, #offset] += 1 in d``value`` (d``ones`` = -1): no flags, no branch."""
    return (enc.t32_vldr_d(value, base, offset) + enc.t32_vmov_all_ones(ones) + enc.t32_vsub_i64(value, value, ones)
            + enc.t32_vldr_d(value, base, offset, store=True))


def emit_increment(isa: ISA, code: Code, counter_label: Hashable, amount: int, scratch: Scratch,
                   atomic: bool = False, dead: int = 0) -> None:
    """counter (64-bit, at a label) += amount, inline, registers and flags preserved.

    ``atomic`` (+1: firmware interrupt code, programs that start threads): each word is
    added with LDREX/STREX (``T32_ATOMIC_BUMP``; A32: the pair with LDREXD/STREXD,
    ``A32_ATOMIC_BUMP``), so a handler or thread that counts at the same time is not lost.

    T32 with d16-d31 free adds 1 in a NEON register (``_neon_increment``; the address goes
    in a register of ``dead``, bit n for rn, else in r1, parked): no branch, so the block
    stays one translation block for QEMU, which ends one at every branch (decision 0003).
    Without them T32 adds 1 with ADDW and carries with CBNZ (``T32_BUMP``). Otherwise
    UMLAL adds a 64-bit product without touching the flags: lo:hi += amount * 1 (r3 =
    amount; the 1 is r3 itself when amount is 1, else ip).
    """
    if isa.thumb and amount == 1 and atomic:
        pairs = [(0, 1), (2, 3)]
        scratch.save(isa, code, pairs)
        isa.pc_address(code, 1, counter_label)
        code.emit(T32_ATOMIC_BUMP)
        scratch.restore(isa, code, pairs)
        return
    if isa.thumb and amount == 1 and scratch.vfp:
        _with_address_at(isa, code, counter_label, _neon_increment, dead)
        return
    if isa.thumb and amount == 1:
        scratch.save(isa, code, [(0, 1)])
        isa.pc_address(code, 1, counter_label)
        code.emit(T32_BUMP)
        scratch.restore(isa, code, [(0, 1)])
        return
    if not isa.thumb and amount == 1 and atomic:
        scratch.save(isa, code, [(0, 1), (2, 3)])
        isa.pc_address(code, 2, counter_label)
        code.emit(A32_ATOMIC_BUMP)
        scratch.restore(isa, code, [(0, 1), (2, 3)])
        return
    one = 3 if amount == 1 else IP
    pairs = [(0, 1), (2, 3)] + ([(IP, LR)] if one == IP else [])
    scratch.save(isa, code, pairs)
    isa.pc_address(code, 2, counter_label)
    code.emit(increment_tail(isa.thumb, amount, one))
    scratch.restore(isa, code, pairs)


SUM_REGISTER = 31  # d31: a procedure's running sum (decision 0014, emit/procedure_sums.py)


SUM_TEMP = 30  # d30: the amount being added to it


# A repeat filter's hit counts, by counter index, where a procedure keeps them (decision 0019).
HIT_REGISTERS = (28, 29)


# d24 = -1 wherever a procedure counts hits in registers: set with them where they start
# (nothing else writes d24 but with -1: the program does not use d16-d31, the analysis
# library no VFP register at all, and code the registers do not survive, a library or a
# signal handler's, is left through a store and come back from through a reset).
ONES = 24


def emit_sum_reset(code: Code, registers: Iterable[int]) -> None:
    """Each of ``registers`` = 0: a procedure's running sums start (T32); with hit counts
    among them, d24 = -1 for their adds (``register_hit``)."""
    code.emit(_zeroes(tuple(sorted(registers))))


@cache
def _zeroes(registers: tuple[int, ...]) -> bytes:
    ones = enc.t32_vmov_all_ones(ONES) if set(registers) & set(HIT_REGISTERS) else b""
    return b"".join(enc.t32_vmov_i64_zero(d) for d in registers) + ones


@cache
def _sum_add(weight: int) -> bytes:
    """d31 += ``weight`` (any 32-bit signed value), a byte at a time: VMOV.I32 puts the byte,
    shifted into place, in both halves of d30; VSRA adds d30's high half to d31 (an
    amount to subtract is shifted down first, then subtracted)."""
    out = b""
    magnitude = abs(weight)
    for k in range(4):
        byte = (magnitude >> (8 * k)) & 0xFF
        if not byte:
            continue
        out += enc.t32_vmov_imm(SUM_TEMP, byte, 2 * k)
        if weight > 0:
            out += enc.t32_vshift_right_u64(SUM_REGISTER, SUM_TEMP, 32, accumulate=True)
        else:
            out += (enc.t32_vshift_right_u64(SUM_TEMP, SUM_TEMP, 32)
                    + enc.t32_vsub_i64(SUM_REGISTER, SUM_REGISTER, SUM_TEMP))
    return out


def emit_sum_add(code: Code, weight: int) -> None:
    """d31 += ``weight`` (T32): what a counted block or branch adds to its procedure's sum."""
    assert weight and abs(weight) < 1 << 32, weight
    code.emit(_sum_add(weight))


@cache
def register_hit(register: int) -> bytes:
    """d``register`` += 1: a filter's hit counted in its procedure's sum, one instruction
    (d24 = -1 since the sums' reset)."""
    return enc.t32_vsub_i64(register, register, ONES)


Sums = dict[int, tuple[str, int]]  # D register -> (counter array, index): model.Accumulation.sums


@cache
def _store_bodies(sums: tuple[tuple[int, tuple[str, int]], ...], base: int) -> tuple[tuple[str, int, bytes], ...]:
    """How to store ``sums`` (sorted items of a Sums; T32): per counter array, its first
    slot's index, whose address goes in r``base``, and the bytes that then do ``[slot] +=
    register; register = 0`` for each of its sums (d30 holds a slot's value). A filter's
    counts share one base, the others at offsets from it."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for register, (array, index) in sums:
        groups.setdefault(array, []).append((register, index))
    out = []
    for array, members in groups.items():
        first = min(index for _, index in members)
        body = b""
        for register, index in members:
            offset = 8 * (index - first)
            body += (enc.t32_vldr_d(SUM_TEMP, base, offset) + enc.t32_vadd_i64(SUM_TEMP, SUM_TEMP, register)
                     + enc.t32_vldr_d(SUM_TEMP, base, offset, store=True) + enc.t32_vmov_i64_zero(register))
        out.append((array, first, body))
    return tuple(out)


def emit_sum_store(code: Code, sums: Sums, counter_label: Callable[[str, int], Hashable], dead: int = 0) -> None:
    """Each running sum into its slot, then zero (T32): a procedure's sums leave their registers.
    The slots' address goes in a register of ``dead`` (bit n for rn; _with_base)."""
    _with_base(code, dead, lambda base: emit_sum_store_free(code, sums, counter_label, base))


def emit_sum_store_free(code: Code, sums: Sums, counter_label: Callable[[str, int], Hashable],
                        base: int = 1) -> None:
    """The same where r``base`` is free: no parking."""
    for array, first, body in _store_bodies(tuple(sorted(sums.items())), base):
        T32.pc_address(code, base, counter_label(array, first))
        code.emit(body)


def free_register(dead: int) -> int | None:
    """A register of ``dead`` (bit n for rn) that NEON counters and sum stores may take for
    an address (any but SP and PC), the lowest; None when there is none."""
    dead &= ~((1 << SP) | (1 << PC))
    return (dead & -dead).bit_length() - 1 if dead else None


@cache
def _neon_increment(base: int) -> bytes:
    """The counter at [r``base``] += 1 in d17 (d18 = -1): a 64-bit add with no flags and no branch."""
    return neon_add_one(17, 18, base)


def _with_address_at(isa: ISA, code: Code, label: Hashable, body: Callable[[int], bytes], dead: int) -> None:
    """``body(r)`` with register r = the address of ``label`` (T32, d16-d31 free; _with_base)."""
    def emit(base: int) -> None:
        isa.pc_address(code, base, label)
        code.emit(body(base))

    _with_base(code, dead, emit)


def _with_base(code: Code, dead: int, emit: Callable[[int], None]) -> None:
    """``emit(r)`` with a core register r it may overwrite (T32, d16-d31 free): one of ``dead``
    (bit n for rn), else r1, parked in d16's low lane around it (the only core register the
    NEON counters and sums borrow)."""
    base = free_register(dead)
    if base is not None:
        emit(base)
        return
    code.emit(enc.t32_vmov_to_lane(16, 1))
    emit(1)
    code.emit(enc.t32_vmov_from_lane(1, 16))


@cache
def t32_bump(base: int, offset: int, amount: int, no_carry_to: int | None = None, value: int = 0,
             new: int = 2) -> bytes:
    """T32 64-bit counter at [base, #offset] += ``amount`` (1..4095), no flags touched.

    +1 uses r0 only: the low word is bumped and only when it wraps to zero (CBNZ falls
    through) the high word too; half the scratch traffic of the UMLAL form, with no
    multiply, on the tools' hottest path. A larger amount also uses r2: the low word's
    carry out is its old top bit without the new one ((old & ~new) >> 31).

    Without a carry the code goes past its own end, or to ``no_carry_to`` (an offset
    from the start of these bytes, forward and within CBZ's reach) when the caller's next
    step there is a branch: one translation block fewer on the path taken almost always.
    ``value``: the register used instead of r0 (a low one, for the CBNZ); ``new``: instead
    of r2 (a larger amount only).
    """
    low = t32_bump_low(base, offset, amount, value, new)
    carried = amount != 1
    high = (enc.t32_ldr_word(value, base, offset + 4) + enc.t32_add_imm(value, value, 1)
            + enc.t32_str_word(value, base, offset + 4))
    # No carry: past the high word's update (the branch reads PC as its own address + 4).
    to = len(low) + 2 + len(high) if no_carry_to is None else no_carry_to
    skip = enc.t32_cbz(value, to - (len(low) + 4), nonzero=not carried)
    return low + skip + high


def t32_bump_low(base: int, offset: int, amount: int, value: int = 0, new: int = 2) -> bytes:
    """The low word's part of :func:`t32_bump`: r``value`` = 0 exactly when there is no
    carry (+1: the new low word; more: the carry bit itself, the new word in r``new``)."""
    if amount == 1:
        return (enc.t32_ldr_word(value, base, offset) + enc.t32_add_imm(value, value, 1)
                + enc.t32_str_word(value, base, offset))
    return (enc.t32_ldr_word(value, base, offset) + enc.t32_add_imm(new, value, amount)
            + enc.t32_str_word(new, base, offset) + enc.t32_bic_reg(value, value, new)
            + enc.t32_lsr_imm(value, value, 31))


T32_BUMP = t32_bump(1, 0, 1)  # counter at [r1] += 1


def _t32_exclusive_add_one(at: int, value: int = 0, base: int = 1, status: int = 2, offset: int = 0,
                           amount: int = 1, new: int | None = None) -> bytes:
    """[r``base``, #offset] += ``amount`` with LDREX/STREX (r``value`` = the old word, r``new``
    the new one, r``value`` again unless told; r``status`` the STREX's), again from the
    LDREX when the STREX failed (an interrupt came in between); ``at``: where it starts,
    from the start of the enclosing sequence."""
    new = value if new is None else new
    out = (enc.t32_ldrex(value, base, offset) + enc.t32_add_imm(new, value, amount)
           + enc.t32_strex(status, new, base, offset))
    return out + enc.t32_cbz(status, 0) + enc.t32_b_narrow(at + len(out) + 2, at)  # stored: past the B back


@cache
def t32_atomic_bump(value: int = 0, base: int = 1, status: int = 2, offset: int = 0) -> bytes:
    """T32 64-bit counter at [r``base``, #offset] += 1 that an interrupt handler counting
    too cannot spoil: the low word with LDREX/STREX, and the high one the same way when the
    low one wrapped (a handler's own carry between the two is just another add).
    ``value`` and ``status``: low registers (CBZ/CBNZ); ``offset`` + 4 at most 1020."""
    low = _t32_exclusive_add_one(0, value, base, status, offset)
    high_at = len(low) + 2  # past the CBNZ
    high = _t32_exclusive_add_one(high_at, value, base, status, offset + 4)
    skip = enc.t32_cbz(value, high_at + len(high) - (len(low) + 4), nonzero=True)  # no carry: done
    return low + skip + high


T32_ATOMIC_BUMP = t32_atomic_bump()  # counter at [r1] += 1, interrupt-safe


@cache
def t32_atomic_add(amount: int, old: int, new: int, base: int, status: int, offset: int = 0) -> bytes:
    """T32 64-bit counter at [r``base``, #offset] += ``amount`` (1..4095), interrupt-safe as
    t32_atomic_bump, flags untouched: the low word with LDREX/STREX (r``old`` and r``new``
    its two values), its carry out the old top bit without the new one ((old & ~new) >> 31),
    then the high word += 1 the same way. ``old`` and ``status``: low registers (CBZ)."""
    low = (_t32_exclusive_add_one(0, old, base, status, offset, amount, new)
           + enc.t32_bic_reg(old, old, new) + enc.t32_lsr_imm(old, old, 31))
    high_at = len(low) + 2  # past the CBZ
    high = _t32_exclusive_add_one(high_at, old, base, status, offset + 4)
    return low + enc.t32_cbz(old, high_at + len(high) - (len(low) + 4)) + high


def _a32_atomic_bump() -> bytes:
    """A32 64-bit counter at [r2] += 1 with LDREXD/STREXD (threads), flags untouched: UMLAL
    adds 1*1; A32 has no CBZ, so the STREXD status becomes 1 when stored (``clz; lsr #5``)
    and ``add pc, pc, r3, lsl #2`` skips the B back. Uses r0-r3 (the counter 8-aligned)."""
    out = [enc._w(0xE1B20F9F),                                  # retry: ldrexd r0, r1, [r2]
           enc.a32_movw(3, 1), enc._w(0xE0A10393),              # umlal r0, r1, r3, r3 (r3 = 1)
           enc._w(0xE1A23F90),                                  # strexd r3, r0, r1, [r2]
           enc.a32_clz(3, 3), enc.a32_lsr_imm(3, 3, 5),
           enc.a32_add_reg_shift(PC, PC, 3, 0, 2), enc._w(0xE320F000)]  # stored: past the B
    return b"".join(out) + enc.a32_b(4 * len(out), 0)


A32_ATOMIC_BUMP = _a32_atomic_bump()  # counter at [r2] += 1, thread-safe


@cache
def increment_tail(thumb: bool, amount: int, one: int) -> bytes:
    """r3 = amount (and ip = 1), then the 64-bit add at [r2]: the same bytes at every site."""
    parts = []
    movw = enc.t32_movw if thumb else enc.a32_movw
    parts.append(movw(3, amount & 0xFFFF))
    if amount > 0xFFFF:
        parts.append((enc.t32_movt if thumb else enc.a32_movt)(3, amount >> 16))
    if one == IP:
        parts.append(movw(IP, 1))
    if thumb:
        parts += [enc.t32_ldrd(0, 1, 2), enc._hw(0xFBE0 | 3, (1 << 8) | one), enc.t32_strd(0, 1, 2)]
    else:
        parts += [enc._w(0xE1C200D0), enc._w(0xE0A10093 | (one << 8)), enc._w(0xE1C200F0)]  # ldrd, umlal, strd
    return b"".join(parts)

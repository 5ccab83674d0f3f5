"""The repeat filter's inline test (decisions 0006, 0015, 0017, 0019, 0022): pure
encoders of the T32/A32 bytes that look the key up in its slot table, swap a two-deep
slot, and count a hit; hooks.py places them at a site."""


from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cache

from . import encode as enc
from .counters import (
    A32_ATOMIC_BUMP,
    T32_ATOMIC_BUMP,
    T32_BUMP,
    increment_tail,
    neon_add_one,
    t32_atomic_bump,
    t32_bump,
    t32_bump_low,
)
from .isa import LR, PC


@dataclass(frozen=True)
class FilterEnd:
    """Where a filtered site ends (``label``) and, when its hit path comes last (``hit``: a
    label, ``bump``: its bytes), what the caller emits after the call path: a jump to
    ``label``, then ``hit`` and ``bump``, then ``label``."""

    label: Hashable
    hit: Hashable | None = None
    bump: bytes = b""


@cache
def filter_test_size(test: Callable[..., bytes], shape: tuple, labels: int) -> int:
    """How long ``test(*shape, at, *addresses of its labels)`` is: the same wherever it lands."""
    return len(test(*shape, 0, *[0x1000] * labels))


@cache
def t32_filter_miss(slot_bits: int, depth: int, left: bool) -> bytes:
    """After the fast T32 test (t32_filter_test) found a new key: the slot takes it; r2 = the
    key that left when the call takes it (``left``, always at depth 2).

    Depth 1: r0 = old - key, r2 = the slot index, r3 = the table. Depth 2: r2 = the slot.
    """
    if depth == 2:  # r3 = most recent, r0 = older (leaves); the slot becomes (key, most recent)
        return enc.t32_ldrd(3, 0, 2) + enc.t32_strd(1, 3, 2) + enc.t32_mov_reg(2, 0)
    store = enc.t32_str_reg_lsl(1, 3, 2, 2) if slot_bits else enc.t32_str_imm(1, 3, 0)
    if not left:
        return store
    return enc.t32_add_reg_shift(0, 0, 1, 0, 0) + store + enc.t32_mov_reg(2, 0)


@cache
def _filter_prefix(thumb: bool, shift: int, slot_bits: int, depth: int, flags: bool) -> tuple[bytes, bytes]:
    """The address-independent parts of the test: key into r1; then r3 = the slot (from r3 =
    the table), r2 = its most recent key - the key (A32 with ``flags``: SUBS, Z set when equal)."""
    slot_shift = 2 if depth == 1 else 3
    if thumb:
        key = _t32_filter_key(shift)
        index = (enc.t32_ubfx(2, 0, shift, slot_bits) + enc.t32_add_reg_shift(3, 3, 2, 0, slot_shift)
                 if slot_bits else b"")
        return key, index + enc.t32_ldr_imm(2, 3, 0) + enc.t32_sub_reg(2, 2, 1)
    if shift <= 12:
        key = b"".join(enc.a32_orr_imm(1, 0 if i == 0 else 1, part) for i, part in enumerate(_key_bits(shift)))
    else:
        key = enc.a32_lsr_imm(1, 0, shift) + enc.a32_orr_imm(1, 1, 0x80000000)
    index = (enc.a32_ubfx(2, 0, shift, slot_bits) + enc.a32_add_reg_shift(3, 3, 2, 0, slot_shift)
             if slot_bits else b"")
    return key, index + enc.a32_ldr_imm(2, 3, 0) + enc.a32_sub_reg(2, 2, 1, flags)


def _key_bits(shift: int) -> list[int]:
    """The ORR immediates that set an address's low ``shift`` bits (shift <= 12): one or two
    modified immediates."""
    mask = (1 << shift) - 1
    return [mask & 0xFF] + ([mask & 0xF00] if shift > 8 else [])


@cache
def _t32_filter_key(shift: int) -> bytes:
    """T32 r1 = the key of the address in r0: never 0, equal exactly when the addresses >> shift
    are; up to 4 KiB keys, the last address of the key's range (what Arg.FILTER_LEFT gives)."""
    if shift <= 12:  # r1 = r0 | low bits
        return b"".join(enc.t32_orr_imm(1, 0 if i == 0 else 1, part) for i, part in enumerate(_key_bits(shift)))
    return enc.t32_lsr_imm(1, 0, shift) + enc.t32_orr_imm(1, 1, 0x80000000)


def t32_filter_test(pic: bool, shift: int, slot_bits: int, depth: int, near: int, hit_last: bool, at: int,
                     memo: int, done: int) -> bytes:
    """T32 test at ``at`` when the counter lies ``near`` bytes past the slot table (api.RepeatFilter
    .counter_offset): r1 = key; r3 = the table; r2 = slot index; r0 = slot - key; if r0 != 0
    go on (depth 1: to the end of these bytes, the call path, which stores r1 at [r3, r2,
    lsl #2]); else the counter at [r3, #near] += 1 and go to ``done``. One base register for
    both: no second address to build and no slot address to add on the hot path.

    Depth 2 (slots of two words, the most recent key first): on to r2 = the slot; if its
    older key is r1, the two swap, the counter counts and the code goes to ``done``; else
    to the end of these bytes, the call path (t32_filter_miss).

    ``hit_last``: ``done`` is the hit path's counter (neon_hit), which the caller puts after
    the call path; a hit goes there (CBZ when it reaches, else CBNZ over a B.W) with r3 =
    the table, the counter untouched.
    """
    head = _t32_filter_key(shift)
    head += enc.t32_pc_address(3, at + len(head), memo) if pic else enc.t32_mov32(3, memo)
    if hit_last:
        return head + _t32_filter_body_hit_last(shift, slot_bits, depth, done - (at + len(head)))
    return head + _t32_filter_body(shift, slot_bits, depth, near, done - (at + len(head)))


def _t32_slot_compare(shift: int, slot_bits: int, depth: int) -> bytes:
    """r0 = the slot's most recent key - r1 (r3 = the table; r2 = the slot index when there is one)."""
    if slot_bits:
        out = enc.t32_ubfx(2, 0, shift, slot_bits) + enc.t32_ldr_reg_lsl(0, 3, 2, 2 if depth == 1 else 3)
    else:
        out = enc.t32_ldr_imm(0, 3, 0)
    return out + enc.t32_sub_reg(0, 0, 1)


@cache
def _t32_filter_body_hit_last(shift: int, slot_bits: int, depth: int, to_hit: int) -> bytes:
    """_t32_filter_body for a hit path that comes after the call path, ``to_hit`` bytes from the
    start of these bytes: a hit jumps there, a new key runs on past their end."""
    out = bytearray(_t32_slot_compare(shift, slot_bits, depth))
    reach = to_hit - (len(out) + 4)
    if 0 <= reach <= 126:
        out += enc.t32_cbz(0, reach) + enc.t32_nop() + enc.t32_nop()
    else:
        out += enc.t32_cbz(0, 2, nonzero=True) + enc.t32_b(len(out) + 2, to_hit)  # a new key: past the B.W
    if depth == 2:  # the older key: a hit swaps the two and counts with the others
        out += enc.t32_add_reg_shift(2, 3, 2, 0, 3) if slot_bits else enc.t32_mov_reg(2, 3)
        out += enc.t32_ldr_word(0, 2, 4) + enc.t32_sub_reg(0, 0, 1)
        swap = enc.t32_ldr_word(0, 2, 0) + enc.t32_strd(1, 0, 2)
        out += enc.t32_cbz(0, len(swap) + 2, nonzero=True) + swap  # a new key: past the swap and its B.W
        out += enc.t32_b(len(out), to_hit)
    return bytes(out)


@cache
def neon_hit(near: int) -> bytes:
    """The 64-bit counter at [r3, #near] += 1 in d23 and d24 (r0 when VLDR cannot reach it): a
    filter's hit, with r0-r3 and d16-d18 still the site's."""
    if near <= 1020 and near % 4 == 0:
        return neon_add_one(23, 24, 3, near)
    return enc.t32_add_imm(0, 3, near) + neon_add_one(23, 24, 0)


@cache
def _t32_filter_body(shift: int, slot_bits: int, depth: int, near: int, to_done: int) -> bytes:
    """What follows the key and the table's address in t32_filter_test, with ``done``
    ``to_done`` bytes from its start: the same for the many sites whose call paths have one
    length (cached: the rewrite emits it at tens of thousands of sites)."""
    out = bytearray(_t32_slot_compare(shift, slot_bits, depth))
    branch_at = len(out)
    out += bytes(2)  # CBNZ r0 past the hit, encoded below
    hit_at = len(out)
    out += _t32_hit(near, len(out), to_done)
    if depth == 2:
        out[branch_at:branch_at + 2] = enc.t32_cbz(0, len(out) - (branch_at + 4), nonzero=True)
        out += enc.t32_add_reg_shift(2, 3, 2, 0, 3) if slot_bits else enc.t32_mov_reg(2, 3)
        out += enc.t32_ldr_word(0, 2, 4) + enc.t32_sub_reg(0, 0, 1)
        branch_at = len(out)
        out += bytes(2)
        out += enc.t32_ldr_word(0, 2, 0) + enc.t32_strd(1, 0, 2)  # the older key was r1: swap
        out += enc.t32_b_narrow(len(out), hit_at)  # and count it with the other hits
    out[branch_at:branch_at + 2] = enc.t32_cbz(0, len(out) - (branch_at + 4), nonzero=True)
    return bytes(out)


def _t32_hit(near: int, at: int, done: int) -> bytes:
    """At ``at``: the counter at [r3, #near] += 1, then to ``done``. A hit without a carry goes
    straight to ``done`` when the bump's CBNZ reaches it (the B is then taken only after a
    carry); same bytes otherwise."""
    to_done = done - at
    reach = len(t32_bump_low(3, near, 1)) + 4  # the bump's CBNZ's PC, from its start
    within = to_done % 2 == 0 and reach <= to_done <= reach + 126
    bump = t32_bump(3, near, 1, to_done if within else None)
    return bump + enc.t32_b(at + len(bump), done)


def filter_test(thumb: bool, pic: bool, shift: int, slot_bits: int, atomic: bool, depth: int, flags_dead: bool,
                at: int, memo: int, counter: int, done: int) -> bytes:
    """Bytes of the test at ``at``: r1 = key; r3 = the slot; r2 = its most recent key - key; if
    r2 != 0 go on (depth 1: to the end of these bytes, the call path); else counter += 1
    and go to ``done``. Depth 2: then if the slot's older key (at [r3, #4]) is r1, the two
    swap, counter += 1 and go to ``done``; else to the end. ``atomic``: the add with
    LDREX/STREX (LDREXD/STREXD in A32), for threads.

    T32 branches with CBNZ. A32 has none: where the program's flags are dead at the site
    (``flags_dead``) the compare is a SUBS and a BNE branches; elsewhere r2 = clz(r2) >> 5
    (1 when equal) and ``add pc, pc, r2, lsl #2`` lands on a B past the hit or just past
    that B, a computed jump that ends QEMU's translation block and is looked up each time
    (decision 0157: an A32 program's cachesim ran 2.5 times as long as its T32 build).
    """
    direct = not thumb and flags_dead  # an A32 test may set the flags and branch on them
    key, compare = _filter_prefix(thumb, shift, slot_bits, depth, direct)
    branch_size = 2 if thumb else 4 if direct else 20
    out = bytearray(key)

    def address(rd: int, target: int) -> bytes:
        if thumb:
            return enc.t32_pc_address(rd, at + len(out), target) if pic else enc.t32_mov32(rd, target)
        return enc.a32_pc_address(rd, at + len(out), target) if pic else enc.a32_mov32(rd, target)

    def hit() -> None:  # the key in r1 and the address in r0 are not needed past a hit
        if thumb:
            out.extend(address(1, counter) + (T32_ATOMIC_BUMP if atomic else T32_BUMP))
            out.extend(enc.t32_b(at + len(out), done))
        else:
            out.extend(address(2, counter) + (A32_ATOMIC_BUMP if atomic else increment_tail(thumb, 1, 3)))
            out.extend(enc.a32_b(at + len(out), done))

    def branch_if_differs(branch_at: int) -> None:  # at ``branch_at``: if r2 != 0 go to the end so far
        if thumb:
            out[branch_at:branch_at + 2] = enc.t32_cbz(2, len(out) - (branch_at + 4), nonzero=True)
        elif direct:
            out[branch_at:branch_at + 4] = enc.a32_b(at + branch_at, at + len(out), enc.COND["ne"])
        else:
            out[branch_at:branch_at + 20] = (enc.a32_clz(2, 2) + enc.a32_lsr_imm(2, 2, 5)
                                             + enc.a32_add_reg_shift(PC, PC, 2, 0, 2) + enc._w(0xE320F000)  # nop
                                             + enc.a32_b(at + branch_at + 16, at + len(out)))

    out += address(3, memo)
    out += compare
    branch_at = len(out)
    out += bytes(branch_size)  # the branch past the hit, encoded below
    hit_at = len(out)
    hit()
    if depth == 2:
        branch_if_differs(branch_at)
        older = (enc.t32_ldr_imm(2, 3, 4) + enc.t32_sub_reg(2, 2, 1) if thumb
                 else enc.a32_ldr_imm(2, 3, 4) + enc.a32_sub_reg(2, 2, 1, direct))
        out += older
        branch_at = len(out)
        out += bytes(branch_size)
        # Swap: the slot becomes (key, most recent); then count it with the other hits.
        if thumb:
            out += enc.t32_ldr_word(0, 3, 0) + enc.t32_str_word(1, 3, 0) + enc.t32_str_word(0, 3, 4)
            out += enc.t32_b_narrow(at + len(out), at + hit_at)
        else:
            out += enc.a32_ldr_imm(0, 3, 0) + enc.a32_str_imm(1, 3, 0) + enc.a32_str_imm(0, 3, 4)
            out += enc.a32_b(at + len(out), at + hit_at)
    branch_if_differs(branch_at)
    return bytes(out)


def t32_most_recent_hit(pic: bool, shift: int, slot_bits: int, depth: int, skip_halfword: bool, exclusive: bool,
                        at: int, memo: int, counter: int) -> bytes:
    """A firmware shared path's first test (decision 0047), before it keeps the flags or
    masks interrupts: r1 = the key of the address in r0, r3 = the table, r0 = the slot's
    most recent key - r1. Equal: a hit that changes nothing but its count, so the hit
    counter += 1 (with LDREX/STREX when ``exclusive``: an interrupt handler that counts
    too cannot spoil it) and back to the site with BX LR (past the halfword after its BL when
    ``skip_halfword``). Else on past these bytes, r0-r3 spoilt, where the whole filter runs
    again masked. No instruction here sets the flags or touches PRIMASK, so QEMU's block
    is not ended (M-profile CPSID/MSR end it and leave for QEMU's main loop)."""
    out = bytearray(_t32_filter_key(shift))
    out += enc.t32_pc_address(3, at + len(out), memo) if pic else enc.t32_mov32(3, memo)
    out += _t32_slot_compare(shift, slot_bits, depth)
    hit_at = len(out) + 2
    hit = enc.t32_pc_address(1, at + hit_at, counter) if pic else enc.t32_mov32(1, counter)
    hit += T32_ATOMIC_BUMP if exclusive else T32_BUMP
    if skip_halfword:
        hit += enc.t32_add_imm(LR, LR, 2)
    hit += enc.t32_bx(LR)
    return bytes(out + enc.t32_cbz(0, len(hit) - 2, nonzero=True) + hit)


def t32_compact_test(pic: bool, shift: int, slot_bits: int, depth: int, to_hit: int, at: int, memo: int) -> bytes:
    """The filter's test at a site with a shared call path, at ``at``, its hit ``to_hit``
    bytes past these bytes. r1 = the key; r3 = the table; r0 = the slot's most recent key
    - r1: 0 is a hit. Depth 2: then r2 = the slot; the older key a hit too, swapped to
    the front. A new key runs on past these bytes, with t32_filter_miss's registers."""
    key = _t32_filter_key(shift)
    table = enc.t32_pc_address(3, at + len(key), memo) if pic else enc.t32_mov32(3, memo)
    return key + table + _t32_compact_body(shift, slot_bits, depth, to_hit)


@cache
def _t32_compact_body(shift: int, slot_bits: int, depth: int, to_hit: int) -> bytes:
    """t32_compact_test after the key and the table's address."""
    head = _t32_slot_compare(shift, slot_bits, depth)
    rest = b""
    if depth == 2:
        rest = enc.t32_add_reg_shift(2, 3, 2, 0, 3) if slot_bits else enc.t32_mov_reg(2, 3)
        rest += enc.t32_ldr_word(0, 2, 4) + enc.t32_sub_reg(0, 0, 1)
        swap = enc.t32_ldr_word(0, 2, 0) + enc.t32_strd(1, 0, 2)
        rest += enc.t32_cbz(0, len(swap), nonzero=True) + swap  # a new key: past the swap and its B.N
        rest += enc.t32_b_narrow(len(rest), len(rest) + 2 + to_hit)
    return head + enc.t32_cbz(0, len(rest) + to_hit - 2) + rest


def t32_site_hit_test(pic: bool, shift: int, slot_bits: int, depth: int, near: int | None,
                      regs: tuple[int, int, int], past: int, exclusive: bool, at: int, memo: int,
                      counter: int, done: int) -> bytes:
    """The test of the slot's most recent key at a firmware access site itself (decision
    0057), with the address in r``a`` (``regs`` = a, b, c; a and b low, for CBNZ) and the
    other two free: r``c`` = the table, r``b`` = the slot's most recent key - the
    address's key (in r``a``); not equal: to ``past`` bytes after the end of these bytes
    (the site's miss path); equal: the hit counter += 1 (with LDREX/STREX when
    ``exclusive``: an interrupt handler counting too cannot spoil it), at [r``c``,
    #near] when the counter lies that close past the table, and on past these bytes (a
    plain add without a carry: straight to ``done``, the end of the site's miss path, when
    CBNZ reaches it and ``past`` is the B.N there alone). The test of t32_most_recent_hit,
    without the BL there and the BX LR back, which QEMU must look up. No instruction sets
    the flags or touches PRIMASK."""
    a, b, c = regs
    out = bytearray(enc.t32_pc_address(c, at, memo) if pic else enc.t32_mov32(c, memo))
    if slot_bits:
        out += enc.t32_ubfx(b, a, shift, slot_bits) + enc.t32_ldr_reg_lsl(b, c, b, 2 if depth == 1 else 3)
    else:
        out += enc.t32_ldr_imm(b, c, 0)
    if shift <= 12:
        out += b"".join(enc.t32_orr_imm(a, a, part) for part in _key_bits(shift))
    else:
        out += enc.t32_lsr_imm(a, a, shift) + enc.t32_orr_imm(a, a, 0x80000000)
    out += enc.t32_sub_reg(b, b, a)
    hit = b""
    if near is None:  # the counter's address in r``c``
        hit = enc.t32_pc_address(c, at + len(out) + 2, counter) if pic else enc.t32_mov32(c, counter)
    if exclusive:
        hit += t32_atomic_bump(a, c, b, near or 0)
    else:
        start = at + len(out) + 2 + len(hit)
        to: int | None = done - start
        if past != 2 or not 0 <= to - (len(t32_bump_low(c, near or 0, 1, a)) + 4) <= 126:
            to = None
        hit += t32_bump(c, near or 0, 1, to, a)
    return bytes(out + enc.t32_cbz(b, len(hit) + past - 2, nonzero=True) + hit)

"""Calls and code pointers in executable bytes the descent did not decode (stripped programs).

Recursive descent finds only the code it can reach; the rest runs in place as it is.
That code may call into the middle of code that is relocated: libgcc's
``__aeabi_idivmod`` calls ``__divsi3`` past its zero test, and when nothing the descent
sees calls ``__aeabi_idivmod`` (the program reaches it through a function pointer in an
A32 table), the jump written at ``__divsi3``'s entry must not cover the instruction it
calls. So every run of executable bytes the descent left alone is read as if it were
code, in the instruction set it looks like (``_looks_a32``), and the targets of the calls
found are returned: places a patch must leave intact (``emit.patches.entered_from_elsewhere``
keeps those that start a block).

Only calls are looked for (T32 BL and BLX at every halfword; A32 BL without a condition
and BLX at every word): code calls into the middle of other code, while branches stay
within their function. A literal pool that happens to read as a call names an address
in a range of megabytes, so it rarely names the start of a block; reading Thumb code as
A32 (or the reverse) would give thousands of such calls, hence one instruction set per run.

Firmware also keeps its constant data there (``.rodata`` inside ``.text``): the Thumb code
addresses stored in those bytes (vtables, handler tables) name code nothing else reaches
(``thumb_pointers_in_gaps``, for the descent of a stripped Cortex-M image).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable

from .counted import counted, in_text
from .model import Instruction


def call_targets_in_gaps(read: Callable[[int, int], bytes], ranges: list[tuple[int, int]],
                           decoded: list[Instruction]) -> set[int]:
    """Targets of the calls in the parts of ``ranges`` (executable sections) that no
    instruction of ``decoded`` covers; ``read(address, size)`` gives the bytes."""
    spans = sorted((ins.address, ins.address + ins.size) for ins in decoded)
    targets: set[int] = set()
    for lo, hi in uncovered(ranges, spans):
        data = read(lo, hi - lo)
        targets |= _a32_targets(data, lo) if _looks_a32(data, lo) else _t32_targets(data, lo)
    return targets


def thumb_pointers_in_gaps(read: Callable[[int, int], bytes], ranges: list[tuple[int, int]],
                           decoded: list[Instruction], extents: list[tuple[int, int]]) -> set[int]:
    """Thumb code addresses (odd words, without the Thumb bit) stored word-aligned in the
    parts of ``ranges`` that no instruction of ``decoded`` covers, where code plausibly
    starts: where a firmware linker script puts .rodata inside the executable .text
    (vtables, tables of handlers), the only record of code reached through pointers.

    Firmware sits at low addresses, so any small odd number in a table reads as a place in
    its code. A word counts only if it names undecoded bytes outside every procedure's
    ``extents`` (entry, end of its last instruction: a part of a function the descent did
    not reach is no function) where a function plausibly starts: after decoded code, or
    after an instruction that does not fall through (a return, an unconditional branch),
    with nothing between but padding (zero halfwords, NOPs) and the literal pools that
    decoded code reads. (A function after a literal pool of code not decoded yet is found
    in a later round, once that code is.) Tables of numbers that count up or down are left
    out (``counted``), and so are characters of strings (``in_text``)."""
    spans = sorted((ins.address, ins.address + ins.size) for ins in decoded)
    ends = {end for _, end in spans}
    pools = {acc.disp + k for ins in decoded if ins.accesses for acc in ins.accesses
             if acc.base == 15 and not acc.is_store for k in range(acc.size)}
    gaps = uncovered(ranges, spans)
    starts = [lo for lo, _ in gaps]
    bounds = sorted(extents)
    firsts = [lo for lo, _ in bounds]
    out: set[int] = set()
    for lo, hi in gaps:
        words = _words(read(lo, hi - lo), lo)[1]
        out.update(word & ~1 for k, word in enumerate(words) if word & 1 and not counted(words, k)
                   and not in_text(words, k))
    found = set()
    for target in out:
        k = bisect.bisect_right(starts, target) - 1
        if k < 0 or target >= gaps[k][1] or target in pools:
            continue
        j = bisect.bisect_right(firsts, target) - 1
        if j >= 0 and target < bounds[j][1]:
            continue
        if _after_code(target, gaps[k][0], ends, pools, read):
            found.add(target)
    return found


def _after_code(target: int, gap_start: int, ends: set[int], pools: set[int],
                read: Callable[[int, int], bytes]) -> bool:
    """Whether decoded code or an instruction that does not fall through ends right before
    ``target`` (in a gap starting at ``gap_start``), but for padding and literal pools."""
    at = target
    while at > gap_start:
        if at - 1 in pools:
            at -= 1
        elif read(at - 2, 2) in _PADDING:
            at -= 2
        else:
            break
    if at <= gap_start:
        return at in ends
    (last,) = struct.unpack("<H", read(at - 2, 2))
    if last == 0x4770 or last & 0xFF00 == 0xBD00 or last & 0xF800 == 0xE000:  # bx lr; pop {..pc}; b.n
        return True
    if at - 4 < gap_start:
        return False
    hw1, hw2 = struct.unpack("<HH", read(at - 4, 4))
    return (hw1 & 0xF800 == 0xF000 and hw2 & 0xD000 == 0x9000  # b.w
            or hw1 == 0xE8BD and hw2 & 0x8000  # pop.w {.., pc}
            or (hw1, hw2) == (0xF85D, 0xFB04))  # ldr pc, [sp], #4


_PADDING = (b"\x00\x00", b"\x00\xbf", b"\xc0\x46")  # zeros; nop; mov r8, r8 (Thumb-1 nop)


def _looks_a32(data: bytes, base: int) -> bool:
    """Most words say "always" (condition 0xE) in their top nibble, as A32 code's do: read
    in the other instruction set, Thumb code would give a BL every few hundred bytes."""
    words = _words(data, base)[1]
    return sum(1 for word in words if word >> 28 == 0xE) * 2 > len(words)


def _words(data: bytes, base: int) -> tuple[int, tuple[int, ...]]:
    """The offset of the first word-aligned address in ``data`` (at ``base``) and the words from there."""
    skip = (-base) % 4
    return skip, struct.unpack_from(f"<{(len(data) - skip) // 4}I", data, skip) if len(data) > skip else ()


def uncovered(ranges: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``ranges`` outside the sorted ``spans``."""
    out = []
    for lo, hi in sorted(ranges):
        at = lo
        for start, end in spans:
            if end <= at or start >= hi:
                continue
            if start > at:
                out.append((at, start))
            at = max(at, end)
        if at < hi:
            out.append((at, hi))
    return out


def _sign(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def _t32_targets(data: bytes, base: int) -> set[int]:
    """Targets of T32 BL and BLX (immediate) at every halfword of ``data``."""
    out = set()
    halves = struct.unpack_from(f"<{len(data) // 2}H", data)
    for k in range(len(halves) - 1):
        hw1, hw2 = halves[k], halves[k + 1]
        if hw1 & 0xF800 != 0xF000 or hw2 & 0xC000 != 0xC000:  # not BL or BLX (B.W, B<c>.W: 10x1, 10x0)
            continue
        at = base + 2 * k
        s, j1, j2 = (hw1 >> 10) & 1, (hw2 >> 13) & 1, (hw2 >> 11) & 1
        i1, i2 = 1 - (j1 ^ s), 1 - (j2 ^ s)
        offset = _sign((s << 24) | (i1 << 23) | (i2 << 22) | ((hw1 & 0x3FF) << 12) | ((hw2 & 0x7FF) << 1), 25)
        if hw2 & 0x1000:  # BL
            out.add(at + 4 + offset)
        elif not hw2 & 1:  # BLX: to A32 code, from the word-aligned PC
            out.add(((at + 4) & ~3) + offset)
    return out


def _a32_targets(data: bytes, base: int) -> set[int]:
    """Targets of A32 BL and BLX (immediate) at every word of ``data`` (from its first
    word-aligned address)."""
    out = set()
    skip, words = _words(data, base)
    for k, word in enumerate(words):
        if word >> 24 != 0xEB and word >> 25 != 0x7D:  # BL (unconditional: a conditional one is rare), BLX
            continue
        at = base + skip + 4 * k
        offset = _sign(word & 0xFFFFFF, 24) << 2
        if word >> 28 == 0xF:  # BLX: H gives bit 1 of the Thumb target
            offset |= ((word >> 24) & 1) << 1
        out.add((at + 8 + offset) & 0xFFFFFFFF)
    return out

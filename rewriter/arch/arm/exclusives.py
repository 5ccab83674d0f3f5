"""The program's exclusive pairs as compare-and-swap, so that hooks inside its windows may lock.

A hook placed between a program's LDREX and its STREX must not use exclusives itself: its
STREX (the analysis lock's, an atomic counter's, a record reservation's) clears the
monitor, the program's STREX fails, and its retry loop runs the hook again: for ever.
Every threaded program has such windows (a static glibc's locks: the hook of the STREX's
own access stands before it), and its hooks need the lock there as everywhere else.

So in the copy of a threaded program (d16-d31 free) the pairs are emulated, as DynamoRIO
and Valgrind do on ARM: the load-exclusive runs as it is and leaves its address and the
value it read in d25; the store-exclusive becomes "load-exclusive again, compare with d25,
store-exclusive if equal, else fail" (status 1, as a lost reservation). Between the
emulated STREX's own LDREX and STREX nothing but registers is touched, so hooks anywhere
else in the window may take locks and make records. The difference with the hardware's
monitor: a value changed and changed back by another thread in between (ABA) lets the
store succeed; a compare-and-swap loop, what exclusive pairs implement, cannot tell.

Word, halfword, byte and doubleword pairs with a plain ``[rn]`` address are emulated,
conditional ones too, and so are ARMv8's acquire/release pairs (LDAEX/STLEX: what C11
atomics compile to for ``-march=armv8-a``; the store's own release is kept, its compare
reloads with a plain LDREX). Every emulated store-exclusive, and CLREX, forgets the saved
address, as both clear the hardware's monitor: a second STREX without a LDREX before it
fails. A procedure with any other exclusive (an offset, registers shared) keeps its pairs
and its windows, where hooks use no exclusives (ir.flow.exclusive_windows,
docs/decisions/0093-exclusive-pairs-emulated.md, 0096).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.flow import EXCLUSIVE_LOADS, EXCLUSIVE_STORES, exclusive_windows
from ...ir.model import Binary, Instruction, Procedure
from ..code import Code
from . import encode as enc
from .isa import AL, PC, SP, vfp_scratch

SAVED_EXCLUSIVE = 25  # d25 = (address, value or its low word) of the last emulated load-exclusive
SAVED_HIGH = 26       # d26[0] = a doubleword's high word; d26[1] parks a register of the store
PARK = 27             # d27 parks the two registers the emulated store-exclusive compares in
# (No hook keeps anything in d25-d27: arch/arm/hooks.py, counters.py, call_stubs.py, appends.py.)

WORD, BYTE, HALF, DOUBLE = 0, 1, 2, 3
# The load-exclusive of the emulated store's compare, by size: T32 (first halfword, second
# with rt = 0 and rt2 = 0) and A32 (rt = 0, rn = 0).
_T32_LOAD = {WORD: (0xE850, 0x0F00), BYTE: (0xE8D0, 0x0F4F), HALF: (0xE8D0, 0x0F5F), DOUBLE: (0xE8D0, 0x007F)}
_A32_LOAD = {WORD: 0xE1900F9F, BYTE: 0xE1D00F9F, HALF: 0xE1F00F9F, DOUBLE: 0xE1B00F9F}
_T32_CLREX = enc._hw(0xF3BF, 0x8F2F)
_A32_CLREX = enc._w(0xF57FF01F)
# VMOV.I32 d25, #0: no exclusive has address 0 (its access would fault first), so an
# emulated store-exclusive after this one fails, as after a cleared monitor.
_T32_FORGET = enc._hw(0xEFC0, 0x9010)
_A32_FORGET = enc._w(0xF2C09010)
_A32_NOP = enc._w(0xE1A00000)  # mov r0, r0: never run (the computed branch passes over it)


@dataclass(frozen=True)
class Exclusive:
    """One emulable exclusive access: a load (``rt``, ``rt2`` for a doubleword <- [``rn``]) or
    a store (``rd`` = status of [``rn``] <- ``rt``(, ``rt2``)) of ``size`` (WORD...DOUBLE)."""
    store: bool
    size: int
    rn: int
    rt: int
    rt2: int = -1
    rd: int = -1


CLEAR = Exclusive(False, WORD, -1, -1)  # CLREX: clears the monitor, so the saved address too


def emulates_exclusives(binary: Binary) -> bool:
    """Whether the copy of ``binary`` runs exclusive pairs as compare-and-swap where it can: a
    Linux program that starts threads (whose hooks lock and add atomically everywhere), with
    d16-d31 free for d25."""
    return binary.threaded and not binary.is_firmware and vfp_scratch(binary)


def emulated_exclusives(proc: Procedure, windows: frozenset[int], threads: bool) -> dict[int, Exclusive]:
    """Address -> pair member for each exclusive of ``proc`` when its pairs are emulated:
    ``threads`` (a threaded Linux program whose hooks may keep registers in d16-d31), every
    exclusive of the procedure emulable, and every store-exclusive inside one of its
    ``windows`` (exclusive_windows: a load-exclusive of the procedure comes before it; an
    emulated store whose load ran elsewhere would find no address in d25). Empty otherwise."""
    if not threads or not windows:
        return {}
    found: dict[int, Exclusive] = {}
    for ins in proc.instructions():
        if ins.name.startswith(EXCLUSIVE_LOADS + EXCLUSIVE_STORES):
            access = _exclusive(ins)
            if access is None or access.store and ins.address not in windows:
                return {}
            found[ins.address] = access
        elif ins.name == "clrex":
            found[ins.address] = CLEAR
    return found


def open_windows(proc: Procedure, threads: bool) -> frozenset[int]:
    """The addresses of ``proc`` inside the program's own exclusive windows where hooks must
    use no exclusives: none where the pairs are emulated (emulated_exclusives)."""
    windows = proc.analysis(exclusive_windows)
    return frozenset() if emulated_exclusives(proc, windows, threads) else windows


def _exclusive(ins: Instruction) -> Exclusive | None:
    """``ins`` as an emulable exclusive, from its encoding; None if it is not one."""
    found = _t32_exclusive(ins.raw) if ins.thumb else _a32_exclusive(ins.raw)
    if found is None:
        return None
    registers = [r for r in (found.rn, found.rt, found.rt2, found.rd) if r >= 0]
    if SP in registers or PC in registers or len(set(registers)) < len(registers):
        return None  # the address is kept after the load, and the compare's SUB takes no SP
    return found


def _t32_exclusive(raw: bytes) -> Exclusive | None:
    if len(raw) != 4:
        return None
    hw1, hw2 = int.from_bytes(raw[:2], "little"), int.from_bytes(raw[2:], "little")
    rn, rt, rt2, low = hw1 & 15, hw2 >> 12, hw2 >> 8 & 15, hw2 & 0xFF
    if hw1 & 0xFFF0 == 0xE850 and rt2 == 15 and low == 0:
        return Exclusive(False, WORD, rn, rt)
    if hw1 & 0xFFF0 == 0xE840 and low == 0:
        return Exclusive(True, WORD, rn, rt, rd=rt2)
    # Bits 7:4 of the second halfword: LDREXB/H/D and STREXB/H/D 0100/0101/0111, their
    # acquire/release forms (LDAEXB/H, LDAEX, LDAEXD...) 1100/1101/1110/1111.
    kind = {0x4: BYTE, 0x5: HALF, 0x7: DOUBLE, 0xC: BYTE, 0xD: HALF, 0xE: WORD, 0xF: DOUBLE}.get(low >> 4)
    if kind is None or kind != DOUBLE and rt2 != 15:
        return None
    if hw1 & 0xFFF0 == 0xE8D0 and low & 15 == 15:
        return Exclusive(False, kind, rn, rt, rt2 if kind == DOUBLE else -1)
    if hw1 & 0xFFF0 == 0xE8C0:
        return Exclusive(True, kind, rn, rt, rt2 if kind == DOUBLE else -1, low & 15)
    return None


_A32_KINDS = {0x19: (False, WORD), 0x1D: (False, BYTE), 0x1F: (False, HALF), 0x1B: (False, DOUBLE),
              0x18: (True, WORD), 0x1C: (True, BYTE), 0x1E: (True, HALF), 0x1A: (True, DOUBLE)}


def _a32_exclusive(raw: bytes) -> Exclusive | None:
    word = int.from_bytes(raw, "little")
    kind = _A32_KINDS.get(word >> 20 & 0xFF)
    if kind is None:
        return None
    store, size = kind
    rn, r12, r0 = word >> 16 & 15, word >> 12 & 15, word & 15
    # Bits 11:8: 1111 LDREX/STREX..., 1110 their acquire/release forms (LDAEX/STLEX...).
    if not store and word & 0xEFF == 0xE9F:
        return Exclusive(False, size, rn, r12, r12 + 1 if size == DOUBLE else -1)
    if store and word & 0xEF0 == 0xE90:
        return Exclusive(True, size, rn, r0, r0 + 1 if size == DOUBLE else -1, r12)
    return None


def emit_exclusive(code: Code, ins: Instruction, access: Exclusive) -> None:
    """The copy of the emulated exclusive ``ins`` (emulated_exclusives), in its own instruction
    set. A conditional one (GCC's compare-and-swap: ``cmp; it eq; strexeq``) is the same
    code behind a branch over it when its condition fails; the code keeps the flags, so the
    rest of its IT block (given an IT each, as relocated) sees the same."""
    body = _emulation(ins, access)
    if ins.cond != AL:
        # B<not cond> past the body (4 bytes in either instruction set)
        code.emit((enc.t32_b if ins.thumb else enc.a32_b)(0, 4 + len(body), enc.invert_cond(ins.cond)))
    code.emit(body)


def _emulation(ins: Instruction, access: Exclusive) -> bytes:
    """The unconditional code of emit_exclusive."""
    thumb = ins.thumb
    if access is CLEAR:
        return ins.raw + (_T32_FORGET if thumb else _A32_FORGET)
    to_d, from_d = (enc.t32_vmov_to_d, enc.t32_vmov_from_d) if thumb else (enc.a32_vmov_to_d, enc.a32_vmov_from_d)
    to_lane, from_lane = ((enc.t32_vmov_to_lane, enc.t32_vmov_from_lane) if thumb
                          else (enc.a32_vmov_to_lane, enc.a32_vmov_from_lane))
    rn, double = access.rn, access.size == DOUBLE
    if not access.store:
        # The load as it is, then what it read and where: rn differs from rt and rt2, so it is still there.
        return (ins.raw + to_d(SAVED_EXCLUSIVE, rn, access.rt)
                + (to_lane(SAVED_HIGH, access.rt2) if double else b""))
    x, x2, y = _temps(access, thumb)
    sub = enc.t32_sub_reg if thumb else enc.a32_sub_reg
    if thumb:
        hw1, hw2 = _T32_LOAD[access.size]
        load = enc._hw(hw1 | rn, hw2 | x << 12 | (x2 << 8 if double else 0))
    else:
        load = enc._w(_A32_LOAD[access.size] | rn << 16 | x << 12)
    if double:  # x, x2: the doubleword read again; y: the saved words in turn
        parts: list = [to_d(PARK, x, x2), to_lane(SAVED_HIGH, y, 1), from_d(x, y, SAVED_EXCLUSIVE), sub(x, x, rn),
                       ("if nonzero", x, "fail"), load, sub(x, x, y), from_lane(y, SAVED_HIGH),
                       sub(x2, x2, y), (enc.t32_logic_reg if thumb else enc.a32_logic_reg)(enc.T32_ORR, x, x, x2)]
        restore = from_d(x, x2, PARK) + from_lane(y, SAVED_HIGH, 1)
    else:  # x: the value read again; y: the saved one
        parts = [to_d(PARK, x, y), from_d(x, y, SAVED_EXCLUSIVE), sub(x, x, rn), ("if nonzero", x, "fail"),
                 load, sub(x, x, y)]
        restore = from_d(x, y, PARK)
    status_one = (enc.t32_movw if thumb else enc.a32_movw)(access.rd, 1)
    parts += [("if nonzero", x, "fail, clear"), ins.raw, ("branch", "done"),
              ("label", "fail, clear"), _T32_CLREX if thumb else _A32_CLREX,
              ("label", "fail"), status_one,  # movw rd, #1 (flags kept): the store did not happen
              ("label", "done"), restore, _T32_FORGET if thumb else _A32_FORGET]
    return _assemble(parts, thumb)


def _temps(access: Exclusive, thumb: bool) -> tuple[int, int, int]:
    """Registers for the emulated store's compare, none of the store's own: low ones (CBNZ
    takes r0-r7); an even pair first for an A32 doubleword (LDREXD's rule)."""
    taken = {access.rn, access.rt, access.rt2, access.rd}
    free = [r for r in range(8) if r not in taken]
    if access.size == DOUBLE and not thumb:
        x = next(r for r in range(0, 8, 2) if r not in taken and r + 1 not in taken)
        y = next(r for r in free if r not in (x, x + 1))
        return x, x + 1, y
    return free[0], free[1], free[2]


def _assemble(parts: list, thumb: bool) -> bytes:
    """The bytes of ``parts``: encodings, ("label", name), ("branch", name) and
    ("if nonzero", register, name) (a forward branch that leaves the flags alone: CBNZ;
    in A32, CLZ/LSR make the register 1 if it was 0, else 0, and ADD PC passes over the
    branch that follows when it is 1)."""
    sizes = {"branch": 2 if thumb else 4, "if nonzero": 2 if thumb else 20}
    labels, at = {}, 0
    for part in parts:
        if isinstance(part, bytes):
            at += len(part)
        elif part[0] == "label":
            labels[part[1]] = at
        else:
            at += sizes[part[0]]
    out = bytearray()
    for part in parts:
        if isinstance(part, bytes):
            out += part
        elif part[0] == "branch":
            out += enc.t32_b_narrow(len(out), labels[part[1]]) if thumb else enc.a32_b(len(out), labels[part[1]])
        elif part[0] == "if nonzero":
            reg, target = part[1], labels[part[2]]
            if thumb:
                out += enc.t32_cbz(reg, target - (len(out) + 4), nonzero=True)
            else:
                out += enc.a32_clz(reg, reg) + enc.a32_lsr_imm(reg, reg, 5) + enc.a32_add_reg_shift(PC, PC, reg, 0, 2)
                out += _A32_NOP + enc.a32_b(len(out) + 4, target)
    return bytes(out)

"""Switches through libgcc's Thumb-1 case helpers: ``bl __gnu_thumb1_case_*`` and its table.

GCC compiles a ``switch`` in Thumb code for ARMv5 and ARMv6 (no TBB/TBH) into a bounds
check on r0, then a call of a helper followed by the table of case offsets; the helper
reads the entry r0 picks at its return address and "returns" to the case
(libgcc's lib1funcs.S):

- ``_uqi``/``_sqi``: bytes, unsigned or signed; ``_uhi``/``_shi``: halfwords. The case
  is the return address plus twice the entry.
- ``_si``: words, at the return address rounded up to a word, each the case's offset in
  bytes from there.

The helper is told from its code, not its name (a stripped program has none): it copies
LR to a register, loads through it (or a register computed from it) and then writes LR
(``add lr, rX``; ``mov lr, rY`` for words) before it returns. The load's size and sign say
which kind it is.

The bounds check before the call says how long the table is: ``cmp r0, #N`` then ``bhi``
(``bcs``) to the default case and the call, which the check falls into or jumps to with
``b``, or ``bls`` (``bcc``) to the call itself. Where no check is seen, an unsigned table is
read up to its lowest case (cases follow the table); a signed one, whose cases may lie
before the call, is not read.

A copy of such a call (relocate.py) calls the helper with a table of its own after it,
whose entries lead to the copies of the cases (decision 0195).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...ir.model import Binary, Instruction
from .decode import REG_NUMBERS, DecodeCache, decode_range, shared_disassembler
from .jump_tables import entry_cases, immediate

#: How many instructions of a callee are looked at.
LOOK = 12
_HI, _CS, _LS, _CC = 8, 2, 9, 3  # a bounds check's conditions
_ALWAYS = 14


@dataclass(frozen=True)
class CaseHelper:
    """What a helper that reads a table at its return address reads: entries of ``size``
    bytes (1, 2 or 4), ``signed`` or not; size 0: some other reader, whose table is not
    understood."""

    size: int
    signed: bool

    @property
    def scale(self) -> int:
        """Bytes an entry's unit stands for: offsets in halfwords, but words' in bytes."""
        return 1 if self.size == 4 else 2

    def base(self, return_address: int) -> int:
        """Where the table starts after a call returning to ``return_address`` (the
        helper's table base: words are aligned)."""
        return (return_address + 3) & ~3 if self.size == 4 else return_address

    def case(self, base: int, entry: int) -> int:
        """The case an ``entry`` of the table at ``base`` goes to."""
        return (base + entry * self.scale) & ~1 & 0xFFFFFFFF

    def entry(self, base: int, case: int) -> int:
        """The entry that goes from a table at ``base`` to ``case`` (case's inverse)."""
        return (case - base) // self.scale

    def reach(self) -> int:
        """How far past the table's base the furthest entry goes."""
        return ((1 << (8 * self.size - self.signed)) - 1) * self.scale

    def fits(self, entry: int) -> bool:
        """Whether ``entry`` can be written in one of this table's entries."""
        bits = 8 * self.size - self.signed
        return (-(1 << bits) if self.signed else 0) <= entry < 1 << bits


#: A helper that reads at its return address in a way not modelled here.
UNKNOWN_READER = CaseHelper(0, False)


@dataclass(frozen=True)
class CaseTable:
    """The table after a call of a case helper: its bytes [start, end) and its cases in
    table order."""

    helper: CaseHelper
    start: int
    end: int
    cases: tuple[int, ...]


def return_reader(read: Callable[[int, int], bytes], cache: dict[tuple[int, bool], CaseHelper | None],
                  target: int, thumb: bool, decoding: DecodeCache | None = None) -> CaseHelper | None:
    """What the function at ``target`` (Thumb or not) reads at its return address before it
    returns past it: a CaseHelper, UNKNOWN_READER, or None when it is no such function.
    ``cache``: (target, Thumb) -> the answer, so that each callee is decoded once."""
    key = (target, thumb)
    if key in cache:
        return cache[key]
    try:
        data = read(target, 4 * LOOK)
        md = shared_disassembler(thumb)
        # Most callees copy LR (``mov rX, lr``, whose text ends ", lr") in none of the
        # instructions looked at, and then none reads through it: capstone's text tells,
        # where it reads all of them, without the decoder's facts.
        texts = list(itertools.islice(md.disasm_lite(data, target), LOOK))
        if len(texts) == LOOK and not any(op_str.endswith(", lr") for _, _, _, op_str in texts):
            code: list[Instruction] = []
        else:
            code = decode_range(md, data, target, thumb, decoding)[0]
    except Exception:  # noqa: BLE001 - unreadable bytes (outside the image): no such helper
        code = []
    cache[key] = answer = _reader(code[:LOOK])
    return answer


def _reader(code: list[Instruction]) -> CaseHelper | None:
    """return_reader's test on the callee's first instructions."""
    from_lr: set[int] = set()  # registers holding LR or a value computed from it
    load: Instruction | None = None
    for ins in code:
        operands = [o.strip(" []!") for o in ins.op_str.split(",")]
        target_reg = REG_NUMBERS.get(operands[0])
        sources = {REG_NUMBERS.get(o) for o in operands[1:]}
        if ins.name == "mov" and operands[1:] == ["lr"] and target_reg is not None:
            from_lr = {target_reg}
        elif from_lr and ins.accesses and not ins.accesses[0].is_store and ins.accesses[0].base in from_lr:
            load = load or ins
        elif load is not None and ins.name in ("add", "adds", "mov") and operands[0] == "lr":
            size = load.accesses[0].size
            words = ins.name == "mov"  # _si: mov lr, r0 (the table's base plus the entry)
            if size in (1, 2) and not words or size == 4 and words:
                # (A word's offset may go back as well as forward: signed.)
                return CaseHelper(size, size == 4 or load.name in ("ldrsb", "ldrsh"))
            return UNKNOWN_READER
        elif from_lr and target_reg is not None and sources & from_lr:
            from_lr.add(target_reg)  # lsrs r1, r1, #1 (aligning it), adds r1, #2 (skipping a word)
        if ins.is_call or ins.writes_pc:
            break
    return None


def entries_checked(call: Instruction, at: Mapping[int, Instruction]) -> int | None:
    """How many entries the bounds check before ``call`` lets r0 pick, or None where no
    check is seen (``at``: the instructions known around the call, by address). The check
    is looked for on the straight-line way into the call, through moves of the index into
    r0 (``cmp r4, #181; bls 1f; b default; 1: movs r0, r4; bl helper``), and before the
    branches into that way. The largest where they differ."""
    into: dict[int, list[Instruction]] = {}
    for other in at.values():
        if other.branch_target is not None and not other.is_call:
            into.setdefault(other.branch_target, []).append(other)
    found: list[int] = []
    place, index = call, 0
    for _ in range(_WAY_IN):
        for jump in into.get(place.address, ()):
            if jump.cond in (_LS, _CC):  # bls/bcc to the way in: the check's branch itself
                found += _checked(jump, index, at, past_branch=True)
            elif jump.cond == _ALWAYS and not jump.in_it:  # b to it, after the branch to the default
                before = _before(jump, at)
                if before is not None:
                    found += _checked(before, index, at, past_branch=False)
        before = _before(place, at)
        if before is None or not before.falls_through:
            break
        if before.is_branch:
            found += _checked(before, index, at, past_branch=False)
            break
        operands = [o.strip() for o in before.op_str.split(",")]
        if REG_NUMBERS.get(operands[0]) == index:
            if before.name not in ("mov", "movs") or len(operands) != 2 or operands[1] not in REG_NUMBERS:
                break  # the index computed here: no check of it further back
            index = REG_NUMBERS[operands[1]]
        place = before
    return max(found) if found else None


#: How many instructions back from the call the way in is followed.
_WAY_IN = 4
#: How many instructions back from a compare its bound's constant is looked for.
_CONSTANT_BACK = 8


def _before(ins: Instruction, at: Mapping[int, Instruction]) -> Instruction | None:
    """The instruction that ends where ``ins`` begins (16 or 32 bits long), if any."""
    for size in (2, 4):
        other = at.get(ins.address - size)
        if other is not None and other.end == ins.address:
            return other
    return None


def _checked(branch: Instruction, index: int, at: Mapping[int, Instruction], past_branch: bool) -> list[int]:
    """[entries] when ``branch`` is the conditional branch of a bounds check on register
    ``index`` (``cmp rI, #N`` right before it): ``past_branch`` says the call is where it
    goes (``bls``, ``bcc``), else where it does not (``bhi``, ``bcs``); [] otherwise."""
    if branch.branch_target is None or branch.in_it:
        return []
    inclusive = {(False, _HI): True, (False, _CS): False, (True, _LS): True, (True, _CC): False}.get(
        (past_branch, branch.cond))
    compare = _before(branch, at)
    if inclusive is None or compare is None or compare.name != "cmp":
        return []
    operands = [o.strip() for o in compare.op_str.split(",")]
    if len(operands) != 2 or not _same_value(REG_NUMBERS.get(operands[0]), index, compare, at):
        return []
    bound = immediate(operands[1])
    if bound is None and operands[1] in REG_NUMBERS:
        bound = _constant_in(REG_NUMBERS[operands[1]], compare, at)
    if bound is None:
        return []
    return [bound + 1 if inclusive else bound]


def _same_value(register: int | None, index: int, compare: Instruction, at: Mapping[int, Instruction]) -> bool:
    """Whether ``register``, compared by ``compare``, holds the value register ``index``
    holds right after it: the same register, or one that a move just before the compare
    made equal to it (``movs r0, r1; cmp r1, #13``; ``mov r3, sl; ... cmp r3, #10`` with
    ``sl`` the index), neither written again in between."""
    if register is None or register == index:
        return register is not None
    ins = compare
    for _ in range(_WAY_IN):
        ins = _before(ins, at)
        if ins is None or ins.is_branch or ins.is_call or ins.writes_pc:
            return False
        operands = [o.strip() for o in ins.op_str.split(",")]
        written = REG_NUMBERS.get(operands[0]) if operands else None
        if ins.name in ("mov", "movs") and len(operands) == 2 \
                and {written, REG_NUMBERS.get(operands[1])} == {register, index}:
            return True
        stores = bool(ins.accesses) and ins.accesses[0].is_store  # (its first operand is read)
        if written in (register, index) and not stores:
            return False
    return False


def _constant_in(register: int, ins: Instruction, at: Mapping[int, Instruction]) -> int | None:
    """The constant ``register`` holds at ``ins``, where the few instructions before it build
    one there: a ``movs``, then perhaps ``adds``/``subs``/``lsls`` of immediates (a bound over
    255 in Thumb-1 code: ``movs r1, #0x56; adds r1, #255``). None otherwise."""
    steps: list[tuple[str, int]] = []
    for _ in range(_CONSTANT_BACK):
        before = _before(ins, at)
        if before is None or before.is_branch or before.writes_pc:
            return None
        operands = [o.strip(" []") for o in before.op_str.split(",")]
        if REG_NUMBERS.get(operands[0]) == register and not (before.accesses and before.accesses[0].is_store):
            if before.name in ("mov", "movs") and len(operands) == 2:
                value = immediate(operands[1])
                if value is None:
                    return None
                for name, amount in reversed(steps):
                    value = value + amount if name == "add" else value - amount if name == "sub" else value << amount
                return value & 0xFFFFFFFF
            amount = immediate(operands[-1])
            same = len(operands) == 2 or len(operands) == 3 and REG_NUMBERS.get(operands[1]) == register
            name = before.name.rstrip("s")
            if amount is None or not same or name not in ("add", "sub", "lsl"):
                return None
            steps.append((name, amount))
        ins = before
    return None


def read_table(read: Callable[[int, int], bytes], helper: CaseHelper, call: Instruction, entries: int | None,
               low: int, high: int) -> CaseTable | None:
    """The table after ``call`` of ``helper``: ``entries`` long, or where that is not known
    (None) read up to its lowest case for an unsigned table. Every case must lie in
    [``low``, ``high``) (the procedure, or the code around it) outside the call and the
    table: else None."""
    if helper.size == 0:
        return None
    base = helper.base(call.end)
    size = helper.size
    cases: list[int] = []
    if entries is not None:
        if not 0 < entries <= (0x10000 if size > 1 else 0x100):
            return None
        raw = read(base, size * entries)
        if len(raw) != size * entries:
            return None
        cases = [helper.case(base, int.from_bytes(raw[k:k + size], "little", signed=helper.signed))
                 for k in range(0, len(raw), size)]
        end = base + len(raw)
    elif helper.signed:
        return None
    else:
        cases = entry_cases(read, base, size, None, 0x10000, lambda entry: helper.case(base, entry),
                            end=min(high, base + 2 * (0xFF if size == 1 else 0xFFFF) + 2))
        end = base + size * len(cases)
    if not cases or any(not low <= case < high or call.address <= case < end for case in cases):
        return None
    return CaseTable(helper, call.end, end, tuple(cases))


def helper_called(binary: Binary, call: Instruction) -> CaseHelper | None:
    """The return_reader ``call`` calls, if it is an unconditional Thumb BL of one."""
    if call.name != "bl" or not call.thumb or call.branch_target is None or call.cond != _ALWAYS or call.in_it:
        return None
    return return_reader(binary.read, binary.return_readers, call.branch_target & ~1, True)


def note_case_table(binary: Binary, call: Instruction, helper: CaseHelper, at: Mapping[int, Instruction],
                    procedure: tuple[int, int], area: tuple[int, int] | None = None) -> CaseTable | None:
    """Read the table after ``call`` of ``helper`` (``at``: the instructions known around it,
    by address, which the bounds check is looked for among) and record it in ``binary``: its
    cases as the call's (``switch_cases``), its bytes as data (``switch_tables``), the table
    itself (``case_tables``). The cases must lie in ``procedure`` ([start, end)), or, where
    the bounds check says how long the table is, in ``area`` (the code around it: a stripped
    program's procedure may have been cut short by an entry among its cases)."""
    entries = entries_checked(call, at)
    low, high = area if area is not None and entries is not None else procedure
    table = read_table(binary.read, helper, call, entries, low, high)
    if table is not None:
        binary.switch_cases[call.address] = set(table.cases)
        binary.switch_tables.add((table.start, table.end))
        binary.case_tables[call.address] = table
    return table

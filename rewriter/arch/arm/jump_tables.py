"""Where a procedure's switches go: Thumb-2 table branches (TBB, TBH), GCC's tables of
offsets for position-independent Thumb code (``adr``; ``ldr``; ``add``; ``bx``), LLVM's
for A32 code (``adr``; ``ldr``; ``add pc``) and
computed gotos through tables of label addresses (``GotoFinder``)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable

from ...ir.liveness import registers_used
from ...ir.model import Access, Binary, Instruction

CS, HI = 2, 8  # the conditions of a bounds check's branch to the default case
CC, LS = 3, 9  # ... and of an A32 table jump made only within the bound (``addls pc, ...``)
GE, LT, GT = 10, 11, 12  # A32 checks of a signed index (Free Pascal's case on an integer)
REGISTERS = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12, "lr": 14}


def table_branch_targets(binary: Binary, insns: list) -> set[int]:
    """Case addresses of the switches among ``insns``: those ``SwitchFinder`` found
    (``Binary.switch_cases``) and TBB/TBH jump tables (the byte/halfword table follows the
    instruction).

    The table has as many entries as the bounds check before it allows where that is known
    (``Binary.table_sizes``); else it ends where the first case begins (cases follow the
    table), so entries are read until the reading position reaches the lowest target seen.
    """
    targets: set[int] = set()
    for ins in insns:
        if ins.address in binary.switch_cases:
            targets |= binary.switch_cases[ins.address]
            continue
        if ins.name not in ("tbb", "tbh") or not ins.accesses or ins.accesses[0].base != 15:
            continue
        base = ins.address + 4
        _table_cases(binary.read, ins, base, binary.table_sizes.get(ins.address, 0x10000), targets)
    return targets


def _table_cases(read: Callable[[int, int], bytes], jump: Instruction, table: int, entries: int | None,
                 targets: set[int]) -> int:
    """Add to ``targets`` the cases of TBB or TBH ``jump``'s table at ``table``: at most
    ``entries`` of them (None: no bound known), and up to where the lowest case found
    begins (cases follow the table). The jump branches from its own PC (its address + 4)
    by twice each entry. Returns where reading stopped."""
    size, origin = (1 if jump.name == "tbb" else 2), jump.address + 4
    lowest = origin + 2 * (0xFF if size == 1 else 0xFFFF)
    pos = table
    end = table + size * entries if entries is not None else lowest
    while pos + size <= min(lowest, end) and len(targets) < 100000:
        target = origin + 2 * int.from_bytes(read(pos, size), "little")
        if target < pos + size:
            break
        targets.add(target)
        lowest = min(lowest, target)
        pos += size
    return pos


class SwitchFinder:
    """Finds the switches in a run of instructions, given in address order, from their bounds
    checks, and records them in ``binary``:

    - ``cmp rI, #N; bhi default`` (``bhs``: N - 1; or ``movw rK, #N; cmp rI, rK``) then
      ``tbb``/``tbh [pc, rI]``: a table of N + 1 entries (``Binary.table_sizes``);
    - the same check, then ``adr rA, table; ldr rB, [rA, rI, lsl #2]; add rA, rB; bx rA``
      (GCC's Thumb code; the adr also in its 32-bit form, ``addw``/``subw rA, pc, #n``) or
      ``add pc, rA, rB`` (LLVM's A32 code, rustc's): N + 1 words, each the offset of its
      case (Thumb bit set in Thumb code) from the table (``Binary.switch_cases``);
    - the same check, then ``adr rA, table; ldr pc, [rA, rI, lsl #2]``: N + 1 label
      addresses (GCC's Thumb-2 switch in fixed-address code where TBB/TBH do not fit);
    - A32, the PC as the table (it reads as the jump's address + 8): ``cmp rI, #N`` then
      ``addls pc, pc, rI, lsl #2`` (GCC's switch: a row of N + 1 branches) or ``ldrls pc,
      [pc, rI, lsl #2]`` (N + 1 A32 label addresses), the bound being the jump's own
      condition (``lo``: N entries), or an unconditional one after ``bhi``/``bhs``
      (``Binary.switch_cases``, the cases in A32).

    Only these exact sequences count: anything else between resets the search (but for up
    to six instructions between a bound's MOV and its CMP that leave its register alone:
    ``_past_move``). Without them a stripped binary's tables cannot be told from the code
    around them.
    """

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self._reset()

    def _reset(self) -> None:
        self.move: tuple[int, int] | None = None  # register, constant a MOV set shortly before (_past_move)
        self.since_move = 0
        self.compared: tuple[int, int | None] | None = None  # register, immediate of the last CMP (None: a register)
        self.bound: tuple[int, int | None] | None = None  # index register, entries (None: not known)
        self.table: tuple[int, int] | None = None     # register holding the table, its address
        self.entry: int | None = None                 # register holding the loaded offset
        self.computed: int | None = None              # register holding table + offset
        self.low: tuple[int, int] | None = None       # register, lowest value past a ``blo`` to the default
        self.shift = 0                                # subtracted from the index after the check
        self.aside = 0                                # instructions let by since the check (_aside)

    def see(self, ins: Instruction) -> None:
        """The next instruction of the run."""
        name = ins.name
        if name in _MOVES or (name == "ldr" and _literal_load(ins)):
            if self._aside(ins):
                return
            # Ends any check under way; what it sets is read if a CMP follows. A bound over
            # 255 is a literal where there is no MOVW (ARMv5 code: Debian's armel port).
            if self.compared is not None:
                self._reset()
            self.move = _constant(ins) if name in _MOVES else self._literal_bound(ins)
            self.since_move = 0
            return
        if self.compared is None and name != "cmp":
            if self.move is not None:
                self._past_move(ins)
            return  # the usual case: no check under way
        step = self._step(ins)
        if not step and not self._aside(ins):
            self._reset()
            if name == "cmp":  # may start the next check
                self._step(ins)

    def _aside(self, ins: Instruction) -> bool:
        """Whether ``ins``, scheduled between a switch's bounds check and its jump, leaves the
        switch under way alone: unconditional, it neither branches nor writes the index, the
        table's register or what was loaded or computed from them, and few such came before
        it (clang: ``addw r1, pc, #12; mov.w r8, #7; tbh [r1, r0, lsl #1]``; in A32, ``add
        r2, pc, #4; mov r0, #288; ldr pc, [r2, r1, lsl #2]``)."""
        if self.bound is None or ins.cond != 14 or ins.in_it or ins.is_branch or ins.is_call or ins.writes_pc \
                or self.aside >= _ASIDE:
            return False
        written = _written(ins)
        if any(register in written for register in (self.bound[0], self.table and self.table[0], self.entry,
                                                    self.computed) if register is not None):
            return False
        self.aside += 1
        return True

    def see_all(self, insns: list[Instruction]) -> None:
        """``see`` each of ``insns`` in turn, its usual case (no check under way, not a
        MOV or CMP) inline: a loader's pass over every instruction of the program."""
        see = self.see
        for ins in insns:
            name = ins.name
            if self.compared is None and name != "cmp" and name not in _MOVES \
                    and not (name == "ldr" and ins.accesses and ins.accesses[0].base == _PC and _literal_load(ins)):
                if self.move is not None:
                    self._past_move(ins)
            else:
                see(ins)

    def _literal_bound(self, ins: Instruction) -> tuple[int, int] | None:
        """(register, value) ``ldr rK, [pc, #n]`` (a _literal_load) loads, when the word may
        be a switch's bound (under 0x10000); None otherwise."""
        operands = _operands(ins)
        if ins.accesses[0].size != 4 or operands[0] not in REGISTERS:
            return None
        value = int.from_bytes(self.binary.read(ins.accesses[0].disp, 4), "little")
        return (REGISTERS[operands[0]], value) if value < 0x10000 else None

    def _past_move(self, ins: Instruction) -> None:
        """Keep the constant of the MOV before ``ins`` for the CMP of a bounds check while
        ``ins``, one of the few instructions the compiler schedules between them, does not
        touch its register and does not leave the run: GCC puts stores there (Debian's bison:
        ``movw r3, #263; strd r0, r2, [sp, #52]; cmp sl, r3; bhi``), and the switch after
        it went unknown, its cases' counts derived from a flow that missed its jump
        (decision 0086)."""
        self.since_move += 1
        if self.since_move > _MOVE_DISTANCE or ins.is_branch or ins.is_call or ins.writes_pc \
                or registers_used(ins) >> self.move[0] & 1:
            self.move = None

    def _step(self, ins: Instruction) -> bool:
        # The operands only where they are read (most steps past a CMP are its branch).
        operands = _operands(ins) if ins.name == "cmp" else None
        if operands is not None and len(operands) == 2 and operands[0] in REGISTERS:
            value = immediate(operands[1])
            if value is None and self.move is not None and REGISTERS.get(operands[1]) == self.move[0]:
                value = self.move[1]
            self.move = None
            if value is None and (ins.thumb or operands[1] not in REGISTERS):
                return False
            # (None: an A32 bound in a register set away from here, which only a row of
            # branches can stand for: _pc_table.)
            self.compared = (REGISTERS[operands[0]], value)
            self.bound = self.table = self.entry = self.computed = None  # a check again: it counts
            self.shift = 0
            if self.low is not None and self.low[0] != self.compared[0]:
                self.low = None
            return True
        if self.compared is not None and self.bound is None:
            reg, imm = self.compared
            # A32 checks may be signed: ``cmp rI, #1; blt default; cmp rI, #N; bgt default``.
            if ins.is_branch and ins.branch_target is not None \
                    and (ins.cond in (HI, CS) or (ins.cond in (GT, GE) and not ins.thumb)):
                self.bound = (reg, _entries(imm, ins.cond in (HI, GT)))
                return True
            if ins.is_branch and ins.branch_target is not None and ins.cond in (CC, LT) and not ins.thumb \
                    and imm is not None:
                self.low = self.compared  # below it to the default: the check of the upper bound may follow
                return True
            if ins.cond in (LS, CC):  # the jump checks the bound itself
                self._pc_table(ins, reg, _entries(imm, ins.cond == LS))
                return False
            return self._default_exit(ins, reg, imm)
        if self.bound is None:
            return False
        index, entries = self.bound
        if entries is None:  # only an A32 row of branches measures itself
            if ins.cond == 14:
                self._pc_table(ins, index, None)
            return False
        if operands is None:
            operands = _operands(ins)
        if self.table is None and not ins.thumb and ins.cond == 14 and self._adjusts(ins, operands, index, entries):
            return True
        if ins.name in ("tbb", "tbh"):
            if len(operands) >= 2 and REGISTERS.get(operands[1]) == index:
                size = 1 if ins.name == "tbb" else 2
                base = _REGS.get(operands[0])
                if base == _PC:
                    self.binary.table_sizes[ins.address] = entries
                    self.binary.switch_tables.add((ins.address + 4, ins.address + 4 + size * entries))
                elif self.table is not None and base == self.table[0] and self.entry is None:
                    self._register_table(ins, size, entries)
            return False
        if ins.cond == 14 and self._pc_table(ins, index, entries):
            return False
        if self.table is None:
            address = _pc_relative_address(ins, operands)
            if address is not None:
                self.table = (REGISTERS[operands[0]], address)
                return True
            return False
        if self.entry is None:
            access = ins.accesses[0] if ins.name == "ldr" and len(ins.accesses) == 1 else None
            if access is not None and access.base == self.table[0] and access.index == index and access.shift == 2 \
                    and not access.subtract and access.disp == 0:
                if operands[0] in REGISTERS:
                    self.entry = REGISTERS[operands[0]]
                    return True
                if operands[0] == "pc" and ins.cond == 14:
                    self._record_labels(ins, entries)
            return False
        if self.computed is None:
            regs = [REGISTERS.get(o) for o in operands]
            if ins.name == "add" and len(regs) == 3 and operands[0] == "pc" and None not in regs[1:] \
                    and sorted(regs[1:]) == sorted([self.table[0], self.entry]):
                self._record(ins, entries)  # A32: add pc, rA, rB jumps itself
                return False
            if ins.name == "add" and len(regs) in (2, 3) and None not in regs:
                sources = regs if len(regs) == 2 else regs[1:]
                if sorted(sources) == sorted([self.table[0], self.entry]):
                    self.computed = regs[0]
                    return True
            return False
        if ins.name == "bx" and REGISTERS.get(operands[0]) == self.computed:
            self._record(ins, entries)
        return False

    def _default_exit(self, ins: Instruction, index: int, compared: int | None) -> bool:
        """Whether ``ins``, after a bounds check's CMP, is the default case's own code, run
        under the check's condition: a return (``bxhi lr``, ``pophi {..., pc}``), which then
        is the check's branch, or what comes before it (clang: ``cmp rI, #N; bxhi lr`` in
        A32; ``itt hi; rsbhi r0, r1, #0; bxhi lr`` in Thumb, with the IT before them)."""
        if ins.thumb and not ins.name and ins.mnemonic.strip("t") == "i":  # it, itt...: all "then"
            return ins.op_str in ("hi", "hs", "cs")
        if ins.cond not in (HI, CS) or (ins.thumb and not ins.in_it) or ins.is_call:
            return False
        if ins.writes_pc:
            if ins.branch_target is not None or not (ins.is_return or ins.name in ("pop", "ldm")):
                return False
            self.bound = (index, _entries(compared, ins.cond == HI))
        return True

    def _adjusts(self, ins: Instruction, operands: list[str], index: int, entries: int) -> bool:
        """Whether ``ins``, between an A32 bounds check and its jump, only moves the index
        down (``sub rI, rI, #k``: the table's first entry is the lowest value's, Free
        Pascal's case statements) or keeps it as it is (``and rI, rI, #0xff`` of a value
        the check bounds below 256, ``sxth rI, rI`` of one it bounds below 32,768: Free
        Pascal's case on a smallint)."""
        if len(operands) == 2 and ins.name in _EXTENSIONS:
            same = REGISTERS.get(operands[0]) == index == REGISTERS.get(operands[1])
            return same and entries <= _EXTENSIONS[ins.name]
        if len(operands) != 3 or REGISTERS.get(operands[0]) != index or REGISTERS.get(operands[1]) != index:
            return False
        value = immediate(operands[2])
        if value is None:
            return False
        if ins.name == "sub" and 0 < value < 0x10000:
            self.shift += value
            return True
        return ins.name == "and" and value in (0xFF, 0xFFFF) and entries <= value + 1

    def _pc_table(self, ins: Instruction, index: int, entries: int | None) -> bool:
        """Record the cases of an A32 jump through a table at the PC indexed by ``index``
        (``add pc, pc, rI, lsl #2``: a row of instructions; ``ldr pc, [pc, rI, lsl #2]``:
        label addresses), ``entries`` long; True if ``ins`` is one. Where the index was
        moved down by ``shift`` after the check, the table holds the entries from the lowest
        value the checks let through (``low``), less the shift: some before the PC.

        ``entries`` None: the bound is in a register set away from the check (GCC's ARMv5
        code loads one over 255 from a literal, perhaps once before a loop: Debian's armel
        diff and perl). A row of branches is then as long as the unconditional ``b`` run
        after the PC; where a case's own code begins with one, it is taken too, a row
        the index never reaches, of code that is code."""
        if ins.thumb or not ins.writes_pc:
            return False
        table = ins.address + 8  # what the PC reads as
        if entries is None and ins.name == "add" and not self.shift and self.low is None:
            entries = _branch_row(self.binary.read, table)
        if entries is None or entries <= 0 or entries > 0x10000:
            return False
        operands, regs = operand_registers(ins)
        low = self.low[1] if self.low is not None and self.low[0] == index else 0
        if low >= entries:
            return False
        rows = range(low - self.shift, entries - self.shift)
        if ins.name == "add" and regs[:3] == [_PC, _PC, index] and operands[3:] == ["lsl #2"]:
            cases = {table + 4 * k for k in rows}
        elif ins.name == "ldr" and len(ins.accesses) == 1:
            access = ins.accesses[0]
            if (access.base, access.index, access.shift, access.subtract, access.disp) != (_PC, index, 2, False, 0):
                return False
            cases = {int.from_bytes(self.binary.read(table + 4 * k, 4), "little") for k in rows}
            if any(case & 3 for case in cases):  # not A32 labels: some other table
                return False
            self.binary.switch_tables.add((table + 4 * rows[0], table + 4 * (rows[-1] + 1)))
        else:
            return False
        self.binary.switch_cases.setdefault(ins.address, set()).update(cases)
        return True

    def _register_table(self, jump: Instruction, size: int, entries: int) -> None:
        """The cases of ``tbb``/``tbh [rA, rI]`` through the table at ``adr rA``: the jump
        still goes from its own PC (its address + 4), by twice each of ``entries`` bytes or
        halfwords of the table (clang's Thumb-2 switch where the ADR was scheduled apart)."""
        table = self.table[1]
        rows = [int.from_bytes(self.binary.read(table + size * k, size), "little") for k in range(entries)]
        self.binary.switch_cases.setdefault(jump.address, set()).update(jump.address + 4 + 2 * row for row in rows)
        self.binary.switch_tables.add((table, table + size * entries))

    def _record(self, jump: Instruction, entries: int) -> None:
        """The cases of the switch whose computed ``jump`` adds each of the table's ``entries``
        words to the table's address."""
        table = self.table[1]
        self._note(jump, {(table + offset) & ~1 & 0xFFFFFFFF for offset in self._words(entries, signed=True)},
                   entries)
        if jump.is_return:
            # ``bx lr`` with LR as the table's register (GCC's choice when the low ones are
            # taken; Debian's perl): a jump to a case, not a return. As a return it was
            # copied as it is and went on in the original code (decision 0086).
            jump.is_return, jump.is_indirect = False, True

    def _record_labels(self, jump: Instruction, entries: int) -> None:
        """The cases of ``jump``, ``ldr pc, [rA, rI, lsl #2]`` through the table at ``adr rA``:
        ``entries`` label addresses (GCC's switch in fixed-address Thumb-2 code where no TBB
        or TBH fits; Thumb bit set in Thumb code, word aligned in A32). Read as code, the
        table's words had run on into the first case below it, whose count the flow then
        derived from the table's (negative: decision 0086)."""
        words = self._words(entries)
        if not words or any((w & 1) != jump.thumb or (not jump.thumb and w & 3) for w in words):
            return  # not labels of this instruction set: some other table
        self._note(jump, {w & ~1 for w in words}, entries)

    def _words(self, entries: int, signed: bool = False) -> list[int]:
        """The first ``entries`` words of the table at ``adr rA`` (``self.table``)."""
        table = self.table[1]
        return [int.from_bytes(self.binary.read(table + 4 * k, 4), "little", signed=signed) for k in range(entries)]

    def _note(self, jump: Instruction, cases: set[int], entries: int) -> None:
        """``jump``'s ``cases`` and its table of ``entries`` words at ``adr rA``, in ``binary``."""
        # Switches may share their last instructions (GCC's cross-jumping): all their cases.
        self.binary.switch_cases.setdefault(jump.address, set()).update(cases)
        self.binary.switch_tables.add((self.table[1], self.table[1] + 4 * entries))


#: The ADRs capstone does not show as ``adr`` (by base name; +1 adds the offset, -1
#: subtracts it): A32's ``add``/``sub rA, pc, #off``, and T32's 32-bit encodings (``adr.w``),
#: shown as ``addw``/``subw rA, pc, #off`` (base name ``add``/``sub``): the form GCC's Thumb
#: switches take when the table's register is r8-r14 (the 16-bit ``adr`` reaches only r0-r7)
#: or the table lies behind the code (decision 0082).
_ADR_ALIASES = {"add": 1, "sub": -1, "addw": 1, "subw": -1}


#: At most this many instructions between a switch's check and its jump (_aside).
_ASIDE = 4

#: The extensions of an index that leave it as it is below a bound (name -> that bound).
_EXTENSIONS = {"sxtb": 0x80, "uxtb": 0x100, "sxth": 0x8000, "uxth": 0x10000}


def _entries(compared: int | None, inclusive: bool) -> int | None:
    """How many entries a table has whose bounds check compared with ``compared`` (None:
    not known) and let it through where equal (``inclusive``: ``bls``/``bhi``) or not."""
    return None if compared is None else compared + 1 if inclusive else compared


def _branch_row(read: Callable[[int, int], bytes], table: int) -> int:
    """How many unconditional A32 ``b`` instructions follow one another from ``table``."""
    count = 0
    while count < 0x10000 and read(table + 4 * count + 3, 1) == b"\xea":
        count += 1
    return count


def adr_target(ins: Instruction) -> int | None:
    """The address an ADR (in either instruction set, any of its forms) puts in a register,
    else None. (Only an instruction that reads PC and accesses no memory can be one: a
    caller going over every instruction tests that first, cheaply.)"""
    return _pc_relative_address(ins, _operands(ins))


def unchecked_register_tables(binary: Binary, insns: list[Instruction]) -> None:
    """The cases of each ``tbb``/``tbh [rA, rI]`` among ``insns`` (a procedure's, in
    order) that no switch found (``Binary.switch_cases``), whose table an ADR of ``rA``
    right before it names: read as a PC-based table of unknown size is, up to the lowest
    case (table_branch_targets). clang at -O0 compares the index in one register and jumps
    with a copy it reloads from its stack slot (``cmp r0, #73; bhi; ldr r1, [sp, #12];
    addw r0, pc, #88; tbh [r0, r1, lsl #1]``, the table past a literal pool), which
    SwitchFinder does not follow: the jump's block had no successors, and lost its count."""
    for k, ins in enumerate(insns):
        if ins.name not in ("tbb", "tbh") or ins.address in binary.switch_cases or not ins.accesses \
                or ins.accesses[0].base == _PC or ins.accesses[0].index is None:
            continue
        base, table = ins.accesses[0].base, None
        for before, after in zip(reversed(insns[max(k - 3, 0):k]), reversed(insns[max(k - 2, 0):k + 1])):
            if before.end != after.address or before.is_branch:
                break
            operands = _operands(before)
            if REGISTERS.get(operands[0] if operands else "") == base:
                table = _pc_relative_address(before, operands)
                break
        if table is None:
            continue
        cases: set[int] = set()
        pos = _table_cases(binary.read, ins, table, None, cases)
        if cases:
            binary.switch_cases[ins.address] = cases
            binary.switch_tables.add((table, pos))


def _pc_relative_address(ins: Instruction, operands: list[str]) -> int | None:
    """The address ``ins`` puts in a register if it is an ADR in either instruction set
    (``adr rA, #off``, or ``_ADR_ALIASES``: ``add``/``sub``/``addw``/``subw rA, pc, #off``),
    else None. In Thumb the PC reads as the instruction's address + 4 rounded down to a
    word, in A32 as its address + 8."""
    if not operands or operands[0] not in REGISTERS:
        return None
    pc = ((ins.address + 4) & ~3) if ins.thumb else ins.address + 8
    if ins.name == "adr" and len(operands) == 2 and operands[1].startswith("#"):
        return pc + int(operands[1][1:], 0)
    sign = _ADR_ALIASES.get(ins.name)
    if sign is not None and len(operands) == 3 and operands[1] == "pc" and operands[2].startswith("#"):
        return (pc + sign * int(operands[2][1:], 0)) & 0xFFFFFFFF
    return None


class GotoFinder:
    """Finds computed gotos (GCC's ``goto *table[i]``, glibc's printf) in a run of
    instructions given in order: a jump through a register loaded from a table of label
    addresses whose address the code computes::

        ldr rA, [pc, #n]; add rA, pc          (or adr, movw/movt, an absolute literal;
                                              perhaps spilled: str rA, [sp, #m] ... ldr rA, [sp, #m])
        add rB, rA, rI, lsl #2; ldr rT, [rB, #off]     (or ldr rT, [rA, rI, lsl #2])
        orr rT, rT, #1                        (Thumb: labels are stored without the bit)
        bx rT                                 (or mov pc, rT; or ldr pc, [...] itself)

    Other instructions may come between as long as they leave those registers alone. A
    position-independent executable's labels are found from its relocations instead; in a
    fixed-address one the table's words are plain numbers, and the labels nothing else
    reaches would stay undecoded (the copy's jump would miss its translation table).
    """

    def __init__(self, read: Callable[[int, int], bytes]) -> None:
        self.read = read  # the program's bytes at an address (its literals)
        self.values: dict[int, int] = {}  # register -> a constant (an address) it holds
        self.slots: dict[int, int] = {}   # register -> table address (it holds table + index * 4)
        self.loaded: dict[int, int] = {}  # register -> address of the table it was loaded from
        # Stack slot (sp offset) -> the constant stored there: under register pressure the
        # table's address is computed once and kept on the stack (glibc's vfprintf).
        self.spilled: dict[int, int] = {}
        # Registers holding an index times four (Thumb-1 has no scaled register offset:
        # ``lsls r3, r3, #2; ldr r3, [r3, r2]``, Lua's dispatch in ARMv5 Thumb code).
        self.scaled: set[int] = set()

    def see(self, ins: Instruction) -> int | None:
        """The next instruction of the run; the table's address if it jumps through one."""
        name = ins.name
        if ins.is_call:
            self.values, self.slots, self.loaded, self.spilled, self.scaled = {}, {}, {}, {}, set()
            return None
        operands, regs = operand_registers(ins)
        access = ins.accesses[0] if len(ins.accesses) == 1 and not ins.accesses[0].is_store else None
        if name in ("bx", "mov") and ins.writes_pc and not ins.is_return and len(regs) in (1, 2):
            return self.loaded.get(regs[-1])
        if ins.is_store and self._spill(ins, name, regs):
            return None
        if name == "ldr" and access is not None and access.size == 4 and regs[0] is not None:
            table = self._table(access)
            if regs[0] == _PC:
                return table
            self._forget(ins)
            if access.base == _PC and access.index is None:
                self.values[regs[0]] = int.from_bytes(self.read(access.disp, 4), "little")
            elif access.base == _SP and access.index is None and access.disp in self.spilled:
                self.values[regs[0]] = self.spilled[access.disp]
            elif table is not None:
                self.loaded[regs[0]] = table
            return None
        target = regs[0] if regs else None
        value = self._value(ins, name, operands, regs)
        if name == "orr" and target is not None and regs[1:] == [target, None] and operands[2] == "#1" \
                and target in self.loaded:
            return None  # the Thumb bit on the loaded label
        scaled = (name == "add" and len(regs) == 4 and regs[1] in self.values and regs[2] is not None
                  and operands[3] == "lsl #2")
        table = self.values[regs[1]] if scaled else None
        times_four = name in ("lsl", "lsls") and len(regs) == 3 and regs[1] is not None and operands[2] == "#2"
        self._forget(ins)
        if times_four and target is not None:
            self.scaled.add(target)
        if value is not None and target is not None:
            self.values[target] = value & 0xFFFFFFFF
        if table is not None and target is not None:
            self.slots[target] = table
        return None

    def _spill(self, ins: Instruction, name: str, regs: list[int | None]) -> bool:
        """Follow a store to the stack: ``str rA, [sp, #m]`` of a known constant fills the
        slot, any other store there empties what it overwrites. True if ``ins`` is done with."""
        stack = [a for a in ins.accesses if a.is_store and a.base == _SP]
        if not stack:
            return False
        if any(a.index is not None for a in stack) or "!" in ins.op_str or "], " in ins.op_str:
            self.spilled = {}  # where it writes is not known, or sp moves
            return False
        for a in stack:
            for slot in [slot for slot in self.spilled if slot < a.disp + a.size and a.disp < slot + 4]:
                del self.spilled[slot]
        if name == "str" and len(stack) == 1 and stack[0].size == 4 and regs[0] in self.values:
            self.spilled[stack[0].disp] = self.values[regs[0]]
        return name == "str"

    def _table(self, access: Access) -> int | None:
        """The table a load reads a label from: [rA, rI, lsl #2] or [rB, #off], rA a
        constant, rB a table plus a scaled index."""
        if access.index is not None and access.base in self.values and access.shift == 2 and not access.subtract:
            return (self.values[access.base] + access.disp) & 0xFFFFFFFF
        if access.index is None and access.base in self.slots:
            return (self.slots[access.base] + access.disp) & 0xFFFFFFFF
        if access.index is not None and not access.shift and not access.subtract and not access.disp:
            for table, index in ((access.base, access.index), (access.index, access.base)):
                if table in self.values and index in self.scaled:
                    return self.values[table]
        return None

    def _value(self, ins: Instruction, name: str, operands: list[str], regs: list[int | None]) -> int | None:
        """The constant ``ins`` puts in its first operand, where it computes one."""
        if name == "add" and ins.thumb and len(regs) == 2 and regs[1] == _PC and regs[0] in self.values:
            return self.values[regs[0]] + ins.address + 4  # add rA, pc
        if name == "add" and not ins.thumb and len(regs) == 3 and regs[1] == _PC and regs[2] in self.values:
            return self.values[regs[2]] + ins.address + 8
        if name == "adr" or (ins.thumb and name in _ADR_ALIASES):
            # Also T32's adr.w as capstone reads it (addw rA, pc, #n): GCC's switch through
            # a table of addresses when a case lies before the table.
            return _pc_relative_address(ins, operands)
        if name == "movw" and len(operands) == 2 and operands[1].startswith("#"):
            return int(operands[1][1:], 0) & 0xFFFF
        if name == "movt" and len(operands) == 2 and operands[1].startswith("#") and regs[0] in self.values:
            return (self.values[regs[0]] & 0xFFFF) | (int(operands[1][1:], 0) & 0xFFFF) << 16
        return None

    def _forget(self, ins: Instruction) -> None:
        """Drop what is known of the registers ``ins`` may write."""
        written = _written(ins)
        if _SP in written or ins.name in ("push", "pop"):  # the slots move with sp
            self.spilled = {}
        for reg in written:
            self.values.pop(reg, None)
            self.slots.pop(reg, None)
            self.loaded.pop(reg, None)
            self.scaled.discard(reg)


def a32_offset_switch(run: list[Instruction], read: Callable[[int, int], bytes],
                      ranges: list[tuple[int, int]], limit: int = 4096) -> set[int]:
    """The cases of LLVM's A32 switch that the last instruction of ``run`` (straight-line
    code, in order) ends, where SwitchFinder's exact sequence does not match::

        [cmp rI, #N ; bhi default ; ...] add rT, pc, #n ; ... ; ldr rX, [rT, rI, lsl #2] ; ... ; add pc, rT, rX
        .word case0 - table, case1 - table, ...

    Other instructions may come between as long as they leave rT and rX alone (LLVM's
    scheduler puts the constants the cases share there: ``mov r4, #0``). Offsets are
    signed: LLVM lays out cases before the table as well as after it. With the bounds check
    the table has N + 1 words; without one (the index is a byte, an enum) it ends where the
    first case after it begins (``_offset_cases``)."""
    jump = run[-1]
    operands, regs = operand_registers(jump)
    if jump.thumb or jump.name != "add" or len(regs) != 3 or operands[0] != "pc" or None in regs[1:]:
        return set()
    loaded = None  # (the table's register, the index's) once the load is seen
    checked = True  # no instruction between the table's address and the load changes the index
    for k in range(len(run) - 2, -1, -1):
        ins = run[k]
        ops, _ = operand_registers(ins)
        written = _written(ins)
        if loaded is None:
            access = ins.accesses[0] if ins.name == "ldr" and len(ins.accesses) == 1 else None
            if access is not None and written & set(regs[1:]):
                if access.index is None or access.shift != 2 or access.subtract or access.disp \
                        or {access.base, written.pop()} != set(regs[1:]):
                    return set()
                loaded = (access.base, access.index)
            elif written & set(regs[1:]):
                return set()
            continue
        if loaded[0] in written:
            table = _pc_relative_address(ins, ops)
            if table is None:
                return set()
            return _offset_cases(table, read, ranges, _bound(run[:k], loaded[1]) if checked else None, limit)
        checked = checked and loaded[1] not in written  # (a byte's ``uxtb rI, rI``: no check applies)
    return set()


def thumb_branch_row(run: list[Instruction], read: Callable[[int, int], bytes], limit: int = 4096) -> set[int]:
    """The cases of clang's Thumb switch in execute-only code (``-mexecute-only``: no table
    in the code) that the last instruction of ``run`` (straight-line code, in order) ends,
    where SwitchFinder's sequence does not match (no bounds check: the index's range is
    known; or one scheduled apart)::

        addw rB, pc, #k ; add.w rT, rB, rI, lsl #2 ; ... ; mov pc, rT
        b.w case0 ; b.w case1 ; ...

    Other instructions may come between that leave rB and rT alone (a literal's load and
    the PC added to it). The row is as long as the B.W instructions that follow one another from
    the table: one the index never reaches is code all the same."""
    jump = run[-1]
    operands, regs = operand_registers(jump)
    if not jump.thumb or jump.name != "mov" or operands[:1] != ["pc"] or len(regs) != 2 or regs[1] is None:
        return set()
    target, indexed = regs[1], False
    for ins in reversed(run[-8:-1]):
        if ins.is_branch or ins.is_call:
            return set()
        if target not in _written(ins):
            continue
        ops, found = operand_registers(ins)
        if not indexed:  # add rT, rB, rI, lsl #2: then rB's address
            if ins.name != "add" or ops[3:] != ["lsl #2"] or found[0] != target or None in found[1:3]:
                return set()
            target, indexed = found[1], True
            continue
        table = _pc_relative_address(ins, ops)
        if table is None:
            return set()
        row: list[int] = []
        while len(row) < limit and _is_wide_branch(read(table + 4 * len(row), 4)):
            row.append(table + 4 * len(row))
        return set(row)
    return set()


def thumb1_offset_switch(run: list[Instruction], read: Callable[[int, int], bytes],
                         limit: int = 4096) -> tuple[set[int], tuple[int, int]] | None:
    """The cases and the table of clang's Thumb-1 switch (ARMv5/v6 Thumb: no TBB/TBH) that
    the last instruction of ``run`` (straight-line code, in order) ends, and the table's
    [start, end); None if it is none::

        lsls rX, rI, #1 ; add rX, pc ; ldrh rX, [rX, #k] ; lsls rX, rX, #1 ; add pc, rX
            (halfwords, or bytes with ldrb, each half the distance from the jump's PC)
        lsls rS, rI, #2 ; adr rA, table ; ldr rS, [rA, rS] ; adds rA, rA, rS ; mov pc, rA
            (words, each the case's offset from the table, Thumb bit set)

    The table is read up to where the lowest case begins (cases follow it), or as long as a
    bounds check on rI just before says (``cmp rI, #N``; ``bhi``/``bls``)."""
    jump = run[-1]
    operands, regs = operand_registers(jump)
    if not jump.thumb or operands[:1] != ["pc"] or len(regs) != 2 or regs[1] is None:
        return None
    chain = _writers(run[:-1], regs[1])
    if jump.name == "add":
        # add pc, rX: the PC it adds is its address + 4.
        if chain and chain[0][0].name in ("lsl", "lsls") and chain[0][1][2:] == ["#1"]:
            scale, chain = 2, _writers(run[:run.index(chain[0][0])], regs[1])
        else:
            scale = 1
        if not chain or chain[0][0].name not in ("ldrh", "ldrb") or not chain[0][0].accesses:
            return None
        load = chain[0][0]
        access = load.accesses[0]
        base = _writers(run[:run.index(load)], access.base)
        if access.index is not None or not base or base[0][0].name != "add" or base[0][1][1:] != ["pc"]:
            return None
        table = base[0][0].address + 4 + access.disp
        size, origin = access.size, jump.address + 4
        entries = _bound_before(run[:run.index(base[0][0])])
        cases = entry_cases(read, table, size, entries, limit, lambda e: origin + scale * e)
    elif jump.name == "mov":
        if not chain or chain[0][0].name not in ("add", "adds") or len(chain[0][2]) < 2:
            return None
        add = chain[0][0]
        sources = [r for r in chain[0][2][-2:] if r is not None]
        load_at = run.index(add)
        loads = [w for r in sources for w in _writers(run[:load_at], r)[:1] if w[0].name == "ldr" and w[0].accesses]
        if len(loads) != 1 or loads[0][0].accesses[0].shift:
            return None
        load = loads[0][0]
        access = load.accesses[0]
        table = None
        for r in (access.base, access.index):
            if r is not None and r in sources:
                writer = _writers(run[:run.index(load)], r)
                if writer and table is None:
                    table = _pc_relative_address(writer[0][0], writer[0][1])
        if table is None:
            return None
        entries = _bound_before(run[:run.index(load)])
        size = 4
        cases = entry_cases(read, table, size, entries, limit, lambda e: (table + e) & ~1 & 0xFFFFFFFF, signed=True)
    else:
        return None
    if not cases:
        return None
    return set(cases), (table, table + size * len(cases))


def _writers(run: list[Instruction], register: int) -> list[tuple[Instruction, list[str], list[int | None]]]:
    """The last instruction of ``run`` that writes ``register``, with its operands (text and
    registers), as a list of one; [] if none does or a branch comes first."""
    for ins in reversed(run[-8:]):
        if ins.is_branch or ins.is_call or ins.writes_pc:
            return []
        if register in _written(ins):
            operands, regs = operand_registers(ins)
            return [(ins, operands, regs)]
    return []


def _bound_before(run: list[Instruction]) -> int | None:
    """Entries a bounds check in the last few instructions of ``run`` allows: ``cmp rI, #N``
    then ``bhi`` (N + 1) or ``bcs`` (N) to the default case; None where there is none."""
    for before, after in zip(reversed(run[-6:-1]), reversed(run[-5:])):
        if before.name == "cmp" and after.is_branch and after.cond in (HI, CS):
            value = immediate(_operands(before)[-1])
            return None if value is None else _entries(value, after.cond == HI)
    return None


def entry_cases(read: Callable[[int, int], bytes], table: int, size: int, entries: int | None, limit: int,
                case_of: Callable[[int], int], signed: bool = False, end: int | None = None) -> list[int]:
    """The cases of a table of ``size``-byte entries at ``table`` (``case_of`` an entry): as
    many as ``entries``, or up to where the lowest case begins (at most ``limit``, and not
    past ``end``)."""
    cases: list[int] = []
    lowest = table + limit * size if end is None else end
    count = entries if entries is not None else limit
    while len(cases) < count:
        pos = table + size * len(cases)
        if entries is None and pos + size > lowest:
            break
        case = case_of(int.from_bytes(read(pos, size), "little", signed=signed))
        if entries is None and case < pos + size:
            break
        cases.append(case)
        lowest = min(lowest, case) if case >= pos + size else lowest
    return cases


def _is_wide_branch(code: bytes) -> bool:
    """Whether ``code`` is a T32 ``b.w`` (encoding T4: 11110 S imm10, 10 J1 1 J2 imm11)."""
    if len(code) < 4:
        return False
    first, second = struct.unpack("<HH", code)
    return first & 0xF800 == 0xF000 and second & 0xD000 == 0x9000


def _written(ins: Instruction) -> set[int]:
    """The registers ``ins`` writes, as far as a switch's few instructions need: its first
    operand, or all of a register list (a store writes none but a write-back base)."""
    operands, regs = operand_registers(ins)
    if "{" in ins.op_str:  # ldm, pop: the list's registers (push, stm write none)
        listed = {_REGS.get(o.strip(" {}")) for o in operands[0 if operands[0].startswith("{") else 1:]}
        written = listed - {None} if not ins.is_store else set()
    else:
        written = {regs[0]} if regs and regs[0] is not None and not ins.is_store \
            and ins.name not in ("cmp", "cmn", "tst", "teq") else set()
    if ins.accesses and ("!" in ins.op_str or "], " in ins.op_str):
        written.add(ins.accesses[0].base)
    if ins.name in ("ldrd", "umull", "smull", "umlal", "smlal") and len(regs) > 1 and regs[1] is not None:
        written.add(regs[1])
    return written


def _bound(before: list[Instruction], index: int) -> int | None:
    """The number of entries the bounds check ending ``before`` allows ``index``: ``cmp rI,
    #N`` (or ``movw rK, #N; cmp rI, rK``) directly followed by ``bhi``/``bhs`` to the default,
    then instructions that neither branch nor write rI. None where there is no such check."""
    k = len(before) - 1
    while k >= 0 and not before[k].is_branch and not before[k].writes_pc and index not in _written(before[k]):
        k -= 1
    if k < 1:
        return None
    branch, cmp = before[k], before[k - 1]
    if not branch.is_branch or branch.is_call or branch.branch_target is None or branch.cond not in (HI, CS) \
            or cmp.name != "cmp" or cmp.cond != 14:
        return None
    operands, regs = operand_registers(cmp)
    if len(operands) != 2 or regs[0] != index:
        return None
    value = immediate(operands[1])
    if value is None and regs[1] is not None and k >= 2:
        constant = _constant(before[k - 2]) if before[k - 2].name in _MOVES else None
        value = constant[1] if constant is not None and constant[0] == regs[1] else None
    if value is None:
        return None
    return value + 1 if branch.cond == HI else value


def _offset_cases(table: int, read: Callable[[int, int], bytes], ranges: list[tuple[int, int]],
                  entries: int | None, limit: int) -> set[int]:
    """The cases of an A32 table of signed offsets from ``table``: ``entries`` words where a
    bounds check gives their number (none if one is no A32 code address: not such a table),
    else words up to the first case after the table or the first that is no code address."""
    cases: set[int] = set()
    after = table + 4 * (entries if entries is not None else limit)  # the lowest case after the table
    pos = table
    while pos < after:
        case = (table + int.from_bytes(read(pos, 4), "little", signed=True)) & 0xFFFFFFFF
        inside = after if entries is not None else pos + 4  # no case is in the table itself
        if case & 3 or table <= case < inside or not any(lo <= case < hi for lo, hi in ranges):
            if entries is not None:
                return set()
            break
        cases.add(case)
        if entries is None and case > pos:
            after = min(after, case)
        pos += 4
    return cases


def goto_table(run: list[Instruction], read: Callable[[int, int], bytes], window: int = 64) -> int | None:
    """The table of label addresses the last instruction of ``run`` (straight-line code, in
    order) jumps through, if it is a computed goto (GotoFinder): the run is looked at only
    when it ends in an indirect jump, rare enough that the descent need not track registers."""
    finder = GotoFinder(read)
    table = None
    for ins in run[-window:]:
        table = finder.see(ins)
    return table


def goto_labels(binary: Binary, table: int, thumb: bool, ranges: list[tuple[int, int]],
                limit: int = 4096) -> list[int]:
    """The label addresses of a computed goto's ``table``: its words up to the first that
    is no code address in ``ranges`` for the instruction set (the table's size is not known:
    a table that runs on into the next one gives that one's labels too, of the same function)."""
    labels = []
    for k in range(limit):
        word = int.from_bytes(binary.read(table + 4 * k, 4), "little")
        label = word & ~1 if thumb else word
        if label & (1 if thumb else 3) or not any(lo <= label < hi for lo, hi in ranges):
            break
        labels.append(label)
    return labels


_REGS = REGISTERS | {"pc": 15, "sp": 13}
_PC = 15
_SP = 13


def operand_registers(ins: Instruction) -> tuple[list[str], list[int | None]]:
    """``ins``'s operands as text (brackets and write-back marks dropped) and the register
    each names (None for an immediate, a shift, a register list's text)."""
    operands = [o.strip() for o in ins.op_str.replace("[", "").replace("]", "").replace("!", "").split(",")]
    return operands, [_REGS.get(o) for o in operands]


def _operands(ins: Instruction) -> list[str]:
    """The operands of ``ins`` as capstone writes them, brackets dropped."""
    return [o.strip() for o in ins.op_str.replace("[", "").replace("]", "").split(",")]


_MOVES = frozenset(("mov", "movs", "movw"))  # a constant for the CMP of a bounds check
#: The names ``SwitchFinder.see`` looks at while neither a check nor a MOV's constant is under
#: way (``compared`` and ``move`` None), besides an LDR of a literal (``_literal_load``, whose
#: only access is based on the PC): for any other, ``see`` then does nothing, so a caller that
#: walks every instruction may skip the call.
SWITCH_NAMES = _MOVES | {"cmp"}


def _literal_load(ins: Instruction) -> bool:
    """``ins`` (an LDR) loads a literal into a register, unconditionally: ``ldr rK, [pc, #n]``
    (not ``ldrls pc, [pc, rI, lsl #2]``, an A32 switch's jump)."""
    return not ins.writes_pc and ins.cond == 14 and len(ins.accesses) == 1 and ins.accesses[0].base == _PC \
        and ins.accesses[0].index is None
_MOVE_DISTANCE = 6  # instructions between that MOV and its CMP


def _constant(move: Instruction) -> tuple[int, int] | None:
    """(register, value) an unconditional ``mov rN, #imm`` sets, None for other moves."""
    if move.cond != 14:
        return None
    found = _CONSTANTS.get(move.op_str, _UNKNOWN)
    if found is _UNKNOWN:
        found = _CONSTANTS[move.op_str] = _constant_of(move.op_str)
    return found


_UNKNOWN = object()
# A MOV's operand text -> _constant_of's answer: the descent's switch finder reads every
# MOV of the program, and a few thousand texts repeat.
_CONSTANTS: dict[str, tuple[int, int] | None] = {}


def _constant_of(op_str: str) -> tuple[int, int] | None:
    """_constant's answer for an unconditional MOV with operands ``op_str``."""
    operands = [o.strip() for o in op_str.split(",")]
    if len(operands) != 2 or operands[0] not in REGISTERS:
        return None
    value = immediate(operands[1])
    return None if value is None else (REGISTERS[operands[0]], value)


def immediate(operand: str) -> int | None:
    """The value of an ``#imm`` operand, None for anything else."""
    if not operand.startswith("#"):
        return None
    try:
        return int(operand[1:], 0)
    except ValueError:
        return None


def has_computed_jump(insns: Iterable[Instruction]) -> bool:
    """True if an instruction computes the PC arithmetically (``is_computed_jump``): its target
    can be any instruction, so every instruction starts a block."""
    return any(map(is_computed_jump, insns))


def is_computed_jump(ins: Instruction) -> bool:
    """``ins`` computes the PC arithmetically (``add pc, pc, rN``, ``mov pc, rN``)."""
    return ins.is_indirect and not ins.is_call and ins.mnemonic.split(".")[0][:3] in ("add", "mov", "sub")

"""Where a procedure's switches go: Thumb-2 table branches (TBB, TBH) and GCC's tables of
offsets for position-independent Thumb code (``adr``; ``ldr``; ``add``; ``bx``)."""

from __future__ import annotations

from collections.abc import Iterable

from .model import Binary, Instruction

CS, HI = 2, 8  # the conditions of a bounds check's branch to the default case
REGISTERS = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12}


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
        size = 1 if ins.name == "tbb" else 2
        lowest = base + 2 * (0xFF if size == 1 else 0xFFFF)
        pos = base
        end = base + size * binary.table_sizes.get(ins.address, 0x10000)
        while pos + size <= min(lowest, end) and len(targets) < 100000:
            entry = int.from_bytes(binary.read(pos, size), "little")
            target = base + 2 * entry
            if target < pos + size:
                break
            targets.add(target)
            lowest = min(lowest, target)
            pos += size
    return targets


class SwitchFinder:
    """Finds the switches in a run of instructions, given in address order, from their bounds
    checks, and records them in ``binary``:

    - ``cmp rI, #N; bhi default`` (``bhs``: N - 1; or ``movw rK, #N; cmp rI, rK``) then
      ``tbb``/``tbh [pc, rI]``: a table of N + 1 entries (``Binary.table_sizes``);
    - the same check, then ``adr rA, table; ldr rB, [rA, rI, lsl #2]; add rA, rB; bx rA``:
      N + 1 words, each the offset of its case (Thumb bit set) from the table
      (``Binary.switch_cases``).

    Only these exact sequences count: anything else between resets the search. Without
    them a stripped binary's tables cannot be told from the code around them.
    """

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self._reset()

    def _reset(self) -> None:
        self.move: Instruction | None = None  # a MOV just before (what it sets: _constant)
        self.compared: tuple[int, int] | None = None  # register, immediate of the last CMP
        self.bound: tuple[int, int] | None = None     # index register, entries
        self.table: tuple[int, int] | None = None     # register holding the table, its address
        self.entry: int | None = None                 # register holding the loaded offset
        self.computed: int | None = None              # register holding table + offset

    def see(self, ins: Instruction) -> None:
        """The next instruction of the run."""
        name = ins.name
        if name in _MOVES:  # ends any check under way; what it sets is read if a CMP follows
            if self.compared is not None:
                self._reset()
            self.move = ins
            return
        if self.compared is None and name != "cmp":
            self.move = None
            return  # the usual case: no check under way
        step = self._step(ins)
        if not step:
            self._reset()
            if name == "cmp":  # may start the next check
                self._step(ins)

    def _step(self, ins: Instruction) -> bool:
        operands = [o.strip() for o in ins.op_str.replace("[", "").replace("]", "").split(",")]
        if ins.name == "cmp" and len(operands) == 2 and operands[0] in REGISTERS:
            value = _immediate(operands[1])
            constant = _constant(self.move) if value is None and self.move is not None else None
            if constant is not None and REGISTERS.get(operands[1]) == constant[0]:
                value = constant[1]
            self.move = None
            if value is None:
                return False
            self.compared = (REGISTERS[operands[0]], value)
            self.bound = self.table = self.entry = self.computed = None  # a check again: it counts
            return True
        if self.compared is not None and self.bound is None:
            if ins.is_branch and ins.branch_target is not None and ins.cond in (HI, CS):
                reg, imm = self.compared
                self.bound = (reg, imm + 1 if ins.cond == HI else imm)
                return True
            return False
        if self.bound is None:
            return False
        index, entries = self.bound
        if ins.name in ("tbb", "tbh"):
            if len(operands) >= 2 and REGISTERS.get(operands[1]) == index:
                self.binary.table_sizes[ins.address] = entries
            return False
        if self.table is None:
            if ins.name == "adr" and len(operands) == 2 and operands[0] in REGISTERS and ins.thumb:
                self.table = (REGISTERS[operands[0]], ((ins.address + 4) & ~3) + int(operands[1].lstrip("#"), 0))
                return True
            return False
        if self.entry is None:
            access = ins.accesses[0] if ins.name == "ldr" and len(ins.accesses) == 1 else None
            if access is not None and access.base == self.table[0] and access.index == index and access.shift == 2 \
                    and not access.subtract and access.disp == 0 and operands[0] in REGISTERS:
                self.entry = REGISTERS[operands[0]]
                return True
            return False
        if self.computed is None:
            regs = [REGISTERS.get(o) for o in operands]
            if ins.name == "add" and len(regs) in (2, 3) and None not in regs:
                sources = regs if len(regs) == 2 else regs[1:]
                if sorted(sources) == sorted([self.table[0], self.entry]):
                    self.computed = regs[0]
                    return True
            return False
        if ins.name == "bx" and REGISTERS.get(operands[0]) == self.computed:
            table = self.table[1]
            cases = set()
            for k in range(entries):
                offset = int.from_bytes(self.binary.read(table + 4 * k, 4), "little", signed=True)
                cases.add((table + offset) & ~1 & 0xFFFFFFFF)
            # Switches may share their last instructions (GCC's cross-jumping): all their cases.
            self.binary.switch_cases.setdefault(ins.address, set()).update(cases)
        return False


_MOVES = frozenset(("mov", "movs", "movw"))  # a constant for the CMP of a bounds check


def _constant(move: Instruction) -> tuple[int, int] | None:
    """(register, value) an unconditional ``mov rN, #imm`` sets, None for other moves."""
    operands = [o.strip() for o in move.op_str.split(",")]
    if len(operands) != 2 or operands[0] not in REGISTERS or move.cond != 14:
        return None
    value = _immediate(operands[1])
    return None if value is None else (REGISTERS[operands[0]], value)


def _immediate(operand: str) -> int | None:
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

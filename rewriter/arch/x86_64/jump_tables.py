"""Where an x86-64 procedure's switches go: the tables of gcc's and clang's two patterns.

- fixed-address code: ``jmp qword ptr [table + idx*8]``, a table of absolute addresses;
- position-independent code: ``lea rT, [rip + table]``; ``movsxd rX, dword ptr [rT + idx*4]``;
  ``add rX, rT``; ``jmp rX`` (``notrack jmp`` under CET), a table of 32-bit offsets from
  the table's own address; gcc's ``-mcmodel=large``: ``lea rT, [rip + table]``; ``add rT,
  qword ptr [rT + idx*8]``; ``jmp rT``, offsets of 64 bits; clang's: rT the sum of ``lea
  rA, [rip - 7]`` (the code's own address) and two ``movabs`` (the GOT's offset from
  there, the table's from the GOT), then the PIC pattern.

How many entries a table has comes from the bounds check before it (``cmp idx, N`` then
``ja``/``jae`` to the default): any such pair among the ``LOOK_BACK`` instructions before the
jump, else one on the index register itself up to ``FAR_LOOK_BACK`` instructions before it,
which nothing in between writes (cc1's bound of 1,704 entries is 14 instructions before its
jump, past a shrink-wrapped prologue's pushes and moves). Without one, entries are read
while they name code inside the procedure, at most ``MAX_ENTRIES``, and a table read up to
that cap may go on: its copy is not made (``SwitchTable.reader`` None), so the copied jump
reads the original table, whatever its length. With or without a bound, entries are not
read past the start of other data the code names (``referenced``): compilers put a
function's tables one after the other, and the next table's offsets, read from the wrong
base, name places inside the code that are no instruction's start (Debian's gold: the
bounds check in a block before the one with the jump read 25 entries of a 5-entry table,
and a jump written at one of them broke a real instruction).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ...ir.model import Instruction
from .decode import RSP, rip_operand

MAX_ENTRIES = 1024
# How far back from the jump the bounds check is looked for. The table's address is looked
# for much further (TABLE_LOOK_BACK): the compiler may load it once, at the start, when the
# switch is in a loop (ls's option loop keeps it in r12).
LOOK_BACK = 12
# How far back a bounds check on the switch's own index register is looked for.
FAR_LOOK_BACK = 64
#: How many instructions back from a PIC table's jump the table's address is looked for
#: (dumpsexp sets it up at the head of a loop, a few dozen before): a bound, so that the
#: retries of a large procedure's unresolved jumps do not each walk all of it.
TABLE_LOOK_BACK = 2048


@dataclass
class SwitchTable:
    """A switch's table: where it is, how wide its entries are, whether they are addresses
    (a fixed-address program's) or offsets from the table, the case each names, and the
    instruction that reads an entry (``reader``: the ``movsxd``, gcc's large model's
    ``add``, the ``jmp [table + idx*8]``; None where it is of another form). A copy's
    reader reads a table of the copies' cases instead (relocate.Copier), its operand as
    the original's but for the distance to that table: cases shorter than a jump, which no
    patch over the original sends to their copies, are reached in the copy too, and a tool
    that traces the read sees the original's address."""
    address: int
    width: int
    targets: list[int]
    reader: int | None
    absolute: bool = False


def switch_table(before: Iterable[Instruction], jump: Instruction, read: Callable[[int, int], bytes],
                 is_code: Callable[[int], bool],
                 referenced: Callable[[int], bool] = lambda address: False) -> SwitchTable | None:
    """The table of the indirect ``jump`` and its cases, whose preceding instructions (the
    nearest first) ``before`` gives; None where it is no switch of a known pattern.
    ``read(address, size)`` gives the program's bytes, ``is_code(address)`` says whether an
    address is in the program's code (a case may be in another part of the function: its
    ``.cold`` part holds the default); ``referenced(address)`` whether the code names that
    data address (an unbounded table ends before one)."""
    earlier = _Earlier(before)
    window = [ins for _, ins in itertools.islice(earlier.walk(0), LOOK_BACK)][::-1]  # address order, nearest last
    count = _bound(window, jump.address)
    access = next((a for a in jump.accesses if not a.is_store and a.base != RSP), None)
    if access is not None:  # jmp [table + idx*8]
        if access.base != -1 or access.index is None or access.shift != 3:
            return None
        if count is None:
            count = _far_bound(earlier, _index_register(jump), 0, jump.address)
        targets = _entries(lambda i: struct.unpack("<Q", read(access.disp + 8 * i, 8))[0], count, is_code,
                           lambda i: referenced(access.disp + 8 * i))
        return SwitchTable(access.disp, 8, targets, _copyable(jump.address, count, targets), absolute=True) \
            if targets else None
    found = _pic_table(earlier, jump)
    if found is None:
        return None
    table, width, read_by, read_at = found
    reader = read_by.address if read_by is not None else None
    if count is None and read_by is not None:
        count = _far_bound(earlier, _index_register(read_by), read_at + 1, jump.address)
    offset = "<i" if width == 4 else "<q"
    targets = _entries(lambda i: (table + struct.unpack(offset, read(table + width * i, width))[0]) & (1 << 64) - 1,
                       count, is_code, lambda i: referenced(table + width * i))
    return SwitchTable(table, width, targets, _copyable(reader, count, targets)) if targets else None


def _copyable(reader: int | None, count: int | None, targets: list[int] | None) -> int | None:
    """The reader to give the table's copy (see SwitchTable), or None where the entries read
    may not be all of them: read without a bound up to MAX_ENTRIES, the table may go on, and
    a copy of the part read would send the rest into whatever follows it."""
    return None if count is None and targets is not None and len(targets) >= MAX_ENTRIES else reader


def _index_register(reader: Instruction) -> str | None:
    """The 64-bit register that indexes the table in ``reader``'s memory operand
    (``[... + idx*8]``, ``[... + idx*4]``), or None."""
    inside = reader.op_str.partition("[")[2]
    for term in inside.rstrip("]").replace(" ", "").split("+"):
        if term.endswith(("*8", "*4")):
            return term[:-2]
    return None


def _far_bound(earlier: _Earlier, index: str | None, start: int, jump: int) -> int | None:
    """The bound of a check on ``index`` (or its low half) further back than LOOK_BACK:
    ``cmp index, N`` right before ``ja``/``jae``, with nothing between it and the
    instruction that reads the table (the ``start``-th before the jump is the one before
    that) writing ``index``; None where there is none within FAR_LOOK_BACK instructions."""
    if index is None:
        return None
    names = (index, _LOW_HALVES.get(index))
    following: Instruction | None = None  # the instruction after the one looked at
    for n, ins in earlier.walk(start):
        if n >= FAR_LOOK_BACK:
            return None
        if following is not None and ins.name == "cmp" and ins.op_str.split(",", 1)[0].strip() in names:
            return _bound([ins, following], jump)
        if _writes(ins, index):
            return None
        following = ins
    return None


def _entries(entry: Callable[[int], int], count: int | None, inside: Callable[[int], bool],
             other_data: Callable[[int], bool]) -> list[int] | None:
    targets = []
    for i in range(count if count is not None else MAX_ENTRIES):
        if i and other_data(i):
            # Another table (or other data the code names) starts here. A bound read from a
            # compare may be too large too: ``cmp dil, 0x2d; ja ...; sub edi, 0x21`` (perl)
            # indexes 13 entries, not 46.
            break
        target = entry(i)
        if not inside(target):
            if count is not None:
                return None  # a bounded table naming code elsewhere is not this pattern
            break
        targets.append(target)
    return targets or None


def _pic_table(earlier: _Earlier, jump: Instruction) -> tuple[int, int, Instruction | None, int] | None:
    """The table's address, the size of its entries, the instruction that reads an entry
    and where it is among ``earlier`` (the instructions before ``jump``), of the
    position-independent pattern ending at ``jump``: the ``add`` into the
    jump's register names the register holding the table's address (gcc's
    ``-mcmodel=large`` adds the entry itself, 64 bits: ``add rT, qword ptr [rT + idx*8]``,
    its table of 64-bit offsets from the table), whose value the instructions before must
    give (``_value``: a ``lea`` of the table, or clang's ``-mcmodel=large`` sum of the
    code's address, the GOT's offset from it and the table's from the GOT). A write that
    runs straight on into a ``ret`` (an epilogue's ``pop`` of that register on a path that
    leaves: dumpsexp keeps its table in r13, loaded at the start of a loop whose early exits
    restore r13) cannot reach the jump, and is passed by (decision 0123)."""
    if not jump.op_str or jump.op_str.startswith(("qword", "[")):
        return None
    reg = jump.op_str.split()[-1]
    for n, ins in earlier.walk(0):
        if n > TABLE_LOOK_BACK:
            return None
        if ins.name != "add" or not ins.op_str.startswith(reg + ","):
            continue
        source = ins.op_str.split(",", 1)[1].strip()
        if source.startswith("qword ptr ["):
            terms = source[len("qword ptr ["):].rstrip("]").replace(" ", "").split("+")
            if len(terms) != 2 or not terms[1].endswith("*8"):
                return None
            return _table_base(earlier, n + 1, terms[0], 8, ins, n)
        # ``add rX, rT`` (gcc, clang: the entry into the table's address's register), or
        # ``add rT, rX`` (OCaml: the table's address into the entry's): the one a ``lea``
        # gives is the table's, the other read from it.
        return _table_base(earlier, n + 1, source, 4, None, -1) \
            or _table_base(earlier, n + 1, reg, 4, None, -1, reader_needed=True)
    return None


def _table_base(earlier: _Earlier, start: int, base_reg: str, width: int, reader: Instruction | None,
                reader_at: int, reader_needed: bool = False) -> tuple[int, int, Instruction | None, int] | None:
    """_pic_table's result where ``base_reg`` holds the table's address at the ``start``-th
    instruction before the jump (``reader``: the instruction that reads the entry, if known
    already; else a ``movsxd`` from ``[base_reg + idx*4]`` on the way, which must be there
    where ``reader_needed``, or a ``mov`` of 64 bits from ``[base_reg + idx*8]``), or None."""
    leaves = False  # whether the code from here on runs into a ret before any branch
    for n, ins in earlier.walk(start):
        if n > TABLE_LOOK_BACK:
            return None
        if reader is None and ins.name == "movsxd" and f"[{base_reg} + " in ins.op_str and ins.op_str.endswith("*4]"):
            reader, reader_at = ins, n
        elif reader is None and ins.name == "mov" and f"qword ptr [{base_reg} + " in ins.op_str \
                and ins.op_str.endswith("*8]"):
            # gcc's -mcmodel=large: offsets of 64 bits, read whole, then the table's address added
            reader, reader_at, width = ins, n, 8
        if _writes(ins, base_reg) and not leaves:
            if reader is None and reader_needed:
                return None
            table = _value(base_reg, earlier, n)
            return (table, width, reader, reader_at) if table is not None else None
        if ins.name in ("ret", "retf"):
            leaves = True
        elif ins.is_branch and not ins.is_call:
            leaves = False
    return None


class _Earlier:
    """The instructions before a jump, the nearest first, read from ``before`` only as far
    as they are asked for (most indirect jumps are told apart in a few), each once."""

    def __init__(self, before: Iterable[Instruction]) -> None:
        self._before = iter(before)
        self._read: list[Instruction] = []

    def walk(self, start: int) -> Iterator[tuple[int, Instruction]]:
        """(n, the n-th instruction before the jump) from ``start`` on."""
        n = start  # at most one past those read so far
        while True:
            if n == len(self._read):
                following = next(self._before, None)
                if following is None:
                    return
                self._read.append(following)
            yield n, self._read[n]
            n += 1


_LOW_HALVES = {f"r{r}": f"e{r}" for r in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp")} | {
    f"r{n}": f"r{n}d" for n in range(8, 16)}


def _writes(ins: Instruction, reg: str) -> bool:
    """Whether ``ins`` writes ``reg`` (a 64-bit register) or its low half, which clears
    the rest (its first operand, Intel order; compares and tests write none)."""
    if ins.name in ("cmp", "test") or not ins.op_str:
        return False
    first = ins.op_str.split(",", 1)[0].strip()
    return first in (reg, _LOW_HALVES.get(reg))


def _value(reg: str, earlier: _Earlier, start: int, depth: int = 0) -> int | None:
    """The value of ``reg`` after the ``start``-th of the instructions ``earlier`` (that
    instruction and those before it), where it is a constant: a ``lea`` of a RIP-relative
    place, an immediate moved in, or a sum of those (``add``); None otherwise."""
    if depth > 8:
        return None
    for n, ins in earlier.walk(start):
        if not _writes(ins, reg):
            continue
        source = ins.op_str.split(",", 1)[1].strip() if "," in ins.op_str else ""
        if ins.name == "lea" and "rip" in ins.op_str:
            return rip_operand(ins)
        if ins.name in ("mov", "movabs") and ins.op_str.split(",", 1)[0].strip() == reg:
            try:
                return int(source, 0) & (1 << 64) - 1
            except ValueError:
                return None
        if ins.name == "add" and ins.op_str.split(",", 1)[0].strip() == reg:
            mine = _value(reg, earlier, n + 1, depth + 1)
            try:
                theirs: int | None = int(source, 0)
            except ValueError:
                theirs = _value(source, earlier, n + 1, depth + 1) if source in _LOW_HALVES else None
            return None if mine is None or theirs is None else (mine + theirs) & (1 << 64) - 1
        return None
    return None


def _bound(window: list[Instruction], jump: int) -> int | None:
    """Entries the bounds check allows, from the nearest ``cmp r, N`` and conditional jump
    before the ``jump`` at ``jump``: N + 1 where the path to the table has r <= N (``ja``
    not taken, ``jbe`` taken), N where it has r < N (``jae`` not taken, ``jb`` taken). The
    branch is taken toward the table where it jumps forward, past the code before the
    table's jump. A check the other way round is a lower bound (GHC's runtime: ``cmp rcx,
    8; jb ...; add rcx, -8; jmp [table + rcx*8]``, a table of 21 entries read as 8): it
    says nothing of the count, which is then read from the table.

    The instructions before the jump are those below it: past one that does not fall through
    (another switch's jump), only a branch taken to the code after that one leads to the
    table (PHP's printf engine has two switches back to back: the second took the first's
    bound, 47 of its 121 entries, and the copy's table ended early)."""
    barrier = next((ins.end for ins in reversed(window) if not ins.falls_through), None)
    for first, second in zip(reversed(window[:-1]), reversed(window[1:])):
        if first.name != "cmp" or second.name not in ("ja", "jae", "jbe", "jb"):
            continue
        operand = first.op_str.split(",")[-1].strip()
        try:
            limit = int(operand, 0)
        except ValueError:
            return None
        target = second.branch_target
        if barrier is not None and second.address < barrier:  # its fall-through cannot reach the table
            if target is None or not barrier <= target <= jump:
                continue
            taken_toward = True
        else:
            taken_toward = target is not None and second.end <= target <= jump
        if taken_toward == (second.name in ("ja", "jae")):
            return None  # the table is reached where r is above the bound
        return limit + 1 if second.name in ("ja", "jbe") else limit
    return None


"""Which x86-64 status flags are live where: an inline counter's ``add`` changes them, so
it saves them (``pushfq``/``popfq``, slow) only where a later instruction may read what
they held.

A flag is live at a point if some path from there reads it before anything writes it.
What an instruction reads and writes comes from capstone's ``eflags`` (the six status
flags: CF, PF, AF, ZF, SF, OF). The flags are dead after a call and at a procedure's
entry, exit or tail call (the calling convention keeps none of them across a call), and a
system call leaves them as they were. Where the flow goes is not known (an indirect jump
that is no switch), they are taken as live.

But for Go's ``runtime.duffzero``: Go's compiler knows it keeps the flags (cmd/compile's
AMD64 ops: DUFFZERO clobbers none) and keeps them live across a call of it (Go 1.24's
``stringtoslicerune``: ``cmp; jg; call duffzero; ja``). A call of it writes no flag, and
its own returns take the flags as live (decision 0121). So do the returns of a function
that restores flags with ``popfq`` (decision 0136).
"""

from __future__ import annotations

from functools import cache

from ...ir.model import Binary, Block, Instruction, Procedure
from .decode import ALL_FLAGS, FLAG_EFFECTS, branch_form, flag_effect, shared_disassembler


@cache
def _jcc_reads() -> tuple[int, ...]:
    """The flags each of the 16 conditions of ``jcc`` reads (capstone's, asked once)."""
    return tuple(_decoded_effect(bytes((0x70 + condition, 0)))[0] for condition in range(16))


def _effect_of(raw: bytes) -> tuple[int, int]:
    """(flags read, flags written) of the instruction encoded as ``raw``: as the lift's
    decoding noted them (FLAG_EFFECTS), a direct jump's from its bytes (most distinct
    encodings are direct branches, which the lift reads without capstone), else capstone's."""
    pair = FLAG_EFFECTS.get(raw)
    if pair is None:
        pair = _branch_effect(raw)
        if pair is None:
            return _decoded_effect(raw)
        FLAG_EFFECTS[raw] = pair
    return pair


def _branch_effect(raw: bytes) -> tuple[int, int] | None:
    """(flags read, flags written) of a direct jump or conditional jump, from its bytes;
    None for anything else (a direct call too: calls are taken apart in ``effect``)."""
    form = branch_form(raw)
    if form is None or form[0] == "call":
        return None
    return (_jcc_reads()[form[1]] if form[0] == "jcc" else 0), 0


def _decoded_effect(raw: bytes) -> tuple[int, int]:
    """(flags read, flags written) of the instruction encoded as ``raw``, from capstone."""
    for ins in shared_disassembler().disasm(raw, 0x1000, 1):
        pair = FLAG_EFFECTS[raw] = flag_effect(ins)
        return pair
    return ALL_FLAGS, 0


# Functions that keep the flags for their callers, by the names Go's PC table gives them.
_KEEPING = frozenset({"runtime.duffzero"})
_keeping_of: list = [None, ()]  # the last program asked about, and its functions that keep the flags


def _keeping(binary: Binary | None) -> tuple[tuple[int, int], ...]:
    """(start, end) of each function of ``binary`` that keeps the flags for its callers."""
    if binary is None or not binary.go_functions:
        return ()
    if _keeping_of[0] is not binary:
        entries = sorted(binary.go_functions)
        ends = dict(zip(entries, entries[1:] + [entries[-1] + 1]))
        _keeping_of[:] = [binary, tuple((entry, ends[entry]) for entry, name in binary.go_functions.items()
                                        if name in _KEEPING)]
    return _keeping_of[1]


def effect(ins: Instruction, keeping: tuple[tuple[int, int], ...] = ()) -> tuple[int, int]:
    """(flags read, flags written) by ``ins``: a call writes all of them (none survives
    it) but a call of one of ``keeping`` (functions that keep them), a system call neither."""
    if ins.is_call:
        target = ins.branch_target
        if target is not None and any(lo <= target < hi for lo, hi in keeping):
            return 0, 0
        return 0, ALL_FLAGS
    if ins.is_syscall:
        return 0, 0
    return _effect_of(ins.raw)


def live_at_blocks(proc: Procedure, switch_cases: dict[int, set[int]]) -> dict[int, int]:
    """The flags live on entry to each block of ``proc`` (by its address)."""
    return _solve(proc, switch_cases)[0]


def live_before(proc: Procedure, switch_cases: dict[int, set[int]]) -> dict[int, int]:
    """The flags live just before each instruction of ``proc`` (by its address)."""
    live, successors, effects = _solve(proc, switch_cases)
    keeps = _keeps(proc)
    before: dict[int, int] = {}
    for block in proc.blocks:
        following = successors[block.address]
        out = ALL_FLAGS if following is None or keeps and block.instructions[-1].is_return else 0
        for successor in following or ():
            out |= live[successor.address]
        for ins, (reads, writes) in zip(reversed(block.instructions), reversed(effects[block.address])):
            out = (out & ~writes) | reads
            before[ins.address] = out
    return before


def _solve(proc: Procedure, switch_cases: dict[int, set[int]]
           ) -> tuple[dict[int, int], dict[int, list[Block] | None], dict[int, list[tuple[int, int]]]]:
    """(flags live on entry to each block, each block's successors, each instruction's
    effect), by block address."""
    blocks = proc.blocks
    by_address = {block.address: block for block in blocks}
    successors: dict[int, list[Block] | None] = {}
    for index, block in enumerate(blocks):
        successors[block.address] = _successors(block, blocks[index + 1] if index + 1 < len(blocks) else None,
                                                by_address, switch_cases)
    keeping = _keeping(proc.binary)
    keeps = _keeps(proc)
    effects = {block.address: [effect(ins, keeping) for ins in block.instructions] for block in blocks}
    live = dict.fromkeys(by_address, 0)
    changed = True
    while changed:
        changed = False
        for block in reversed(blocks):
            following = successors[block.address]
            out = ALL_FLAGS if following is None or keeps and block.instructions[-1].is_return else 0
            for successor in following or ():
                out |= live[successor.address]
            for reads, writes in reversed(effects[block.address]):
                out = (out & ~writes) | reads
            if out != live[block.address]:
                live[block.address] = out
                changed = True
    return live, successors, effects


def _keeps(proc: Procedure) -> bool:
    """Whether ``proc`` keeps the flags for its callers, live where it returns: one of the
    functions known to (``_keeping``), or one that restores flags it saved (``popfq``):
    code that returns to a place the calling convention does not govern, as Go's
    runtime.asyncPreempt returns to where a signal stopped a goroutine, flags and all
    (decision 0136)."""
    return any(lo <= proc.address < hi for lo, hi in _keeping(proc.binary)) or any(
        ins.mnemonic == "popfq" for block in proc.blocks for ins in block.instructions)


def _successors(block: Block, next_block: Block | None, by_address: dict[int, Block],
                switch_cases: dict[int, set[int]]) -> list[Block] | None:
    """The blocks control may go to from ``block`` inside its procedure; None where that is
    not known (flags then count as live)."""
    last = block.instructions[-1]
    out: list[Block] = []
    if last.falls_through and next_block is not None and next_block.address == last.end:
        out.append(next_block)
    elif last.falls_through and not last.is_call:
        return None  # runs on into code the procedure does not hold
    if last.is_return or last.is_call:
        return out
    if last.is_branch and last.branch_target is not None:
        target = by_address.get(last.branch_target)
        if target is not None:
            out.append(target)  # else a tail call or a jump to other code: the flags are dead there
    elif last.is_branch and last.is_indirect:
        cases = switch_cases.get(last.address)
        if cases is None:
            return None
        out += [by_address[case] for case in cases if case in by_address]
    return out

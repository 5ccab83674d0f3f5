"""A firmware loop's block count kept in a register the loop leaves alone (decision 0053).

On a board, a counted block inside a loop adds to its 64-bit counter in memory where it is
(decision 0053's first part): 7 guest instructions and 3 memory accesses each time round,
where QEMU's inline count plugin adds one host instruction. Where a core register is dead
throughout an innermost loop and named by none of its instructions, the loop's count
can live there instead:

- each of its *preheaders* (the blocks outside the loop that enter it, each going
  nowhere else) sets the register to 0 (MOVW, after the preheader's own counter sites,
  which may borrow it);
- the loop's one counted block adds 1 to it (ADDW: no flags, no memory);
- each *exit* (a block outside the loop entered only from the loop) adds it to the
  counter first thing (UMLAL, no flags).

The loop may be one back edge's (flow.back_edge_loops), so a self loop inside a larger
loop qualifies, its other entry being the larger loop's latch (quicksort's scan loops).

What keeps it exact: the loop is entered only through its header, from its preheaders;
it is left only to its exits; nothing in it or in the preheader calls, returns, jumps
through a register or a table, traps (SVC, BKPT) or may stop the program, so the count
is in memory before anything else can look; no site in it borrows registers (one
counted block, no hooks, no edge counters from it); nothing in it writes the PC but
direct branches, and what reads it is copied using no register but its own destination
(literal loads, ADR: relocate._pc_relative). An exception handler finds the register as
the loop left it and leaves it so (the core stacks r0-r3 and ip, a handler
keeps r4-r11); images where a handler may end the program get none (it would end with a
loop's count still in its register). Not with ``ANVIL_POISON_DEAD``, which overwrites
every dead register before every instruction.

The sites are pseudo counter increments (``RESET``, ``STORE``: index = the loop sum's
number in ``Derivations.loop_sums``) added to the preheader's and the exits' blocks once
counter placement is done, which the firmware's shared counter sites emit
(shared_calls.SharedCalls.emit_increment).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.flow import ProcedureFlow, back_edge_loops, predecessors_of
from ..ir.liveness import DeadRegisters, registers_used
from ..ir.model import Procedure

RESET = "anvil-loop-sum-reset"  # pseudo counter arrays: index = the loop sum's number
STORE = "anvil-loop-sum-store"
CANDIDATES = 0x0FFF  # r0-r11: not ip (veneers may use it), SP, LR or PC
TRAPS = ("svc", "bkpt", "udf", "wfi", "wfe")


@dataclass(frozen=True)
class LoopShape:
    """An innermost loop that may keep its count in a register (block positions)."""

    header: int
    body: frozenset[int]
    preheaders: tuple[int, ...]
    exits: tuple[int, ...]


@dataclass(frozen=True)
class LoopSum:
    """A loop's count in ``register``, for the counter ``array[index]``."""

    register: int
    array: str
    index: int


def summable_loops(proc: Procedure, flow: ProcedureFlow) -> list[LoopShape]:
    """The innermost loops of ``proc`` whose shape and instructions allow a register count
    (the module's text), before counters are placed; at most one per header."""
    # Each back edge's loop, and each header's whole loop (all its back edges, as
    # flow.natural_loops merges them): the smallest that qualifies.
    loops = [(header, body) for header, _, body in back_edge_loops(flow)]
    whole: dict[int, set[int]] = {}
    for header, body in loops:
        whole.setdefault(header, set()).update(body)
    loops += whole.items()
    predecessors = [set(p) for p in predecessors_of(flow.successors)]
    headers = {header for header, _ in loops}
    out: dict[int, LoopShape] = {}
    for header, body in sorted(loops, key=lambda loop: (loop[0], len(loop[1]))):
        if header in out or headers & body != {header} or body & (flow.from_outside | flow.to_outside):
            continue
        if any(not predecessors[b] <= body for b in body if b != header):
            continue
        entries = sorted(predecessors[header] - body)
        if not entries or any(set(flow.successors[e]) != {header} or e in flow.to_outside for e in entries):
            continue
        exits = sorted({s for b in body for s in flow.successors[b]} - body)
        if any(not predecessors[e] <= body or e in flow.from_outside or e in entries for e in exits):
            continue
        if 0 in entries and proc.hooks:
            continue
        if all(_quiet(proc, b) for b in (*body, *entries)):
            out[header] = LoopShape(header, frozenset(body), tuple(entries), tuple(exits))
    return list(out.values())


def _quiet(proc: Procedure, position: int) -> bool:
    """Whether a block of ``proc`` has no hooks, leaves nowhere and writes the PC only in
    direct branches (a copy of what reads it, a literal load or an ADR, takes no register
    but its own destination: relocate._pc_relative)."""
    block = proc.blocks[position]
    if block.hooks:
        return False
    for ins in block.instructions:
        if ins.hooks or not ins.thumb or ins.is_call or ins.is_syscall or ins.is_return or ins.is_indirect:
            return False
        if ins.name in TRAPS:
            return False
        if ins.writes_pc and not (ins.is_branch and ins.branch_target is not None) or ins.name in ("tbb", "tbh"):
            return False
    return True


def sum_loops(proc: Procedure, shapes: list[LoopShape], edge_sources: set[int], sums: list[LoopSum]) -> None:
    """Give each of ``shapes`` whose loop has one counted block (after placement and
    compact_slots), counted once by 1, no edge counter leaving it (``edge_sources``: the
    blocks edge counters branch from) and a free register, its loop sum: appended to
    ``sums``, its sites added to the preheader's and the exits' increments."""
    dead = None
    blocks = proc.blocks
    for shape in shapes:
        if shape.body & edge_sources:
            continue
        counted = [b for b in shape.body if blocks[b].counter_increments]
        if len(counted) != 1 or len(blocks[counted[0]].counter_increments) != 1:
            continue
        array, index, amount = blocks[counted[0]].counter_increments[0]
        if amount != 1:
            continue
        if dead is None:
            dead = proc.analysis(DeadRegisters)
        used = 0
        free = dead.get(blocks[shape.header].address) & CANDIDATES
        for b in (*shape.body, *shape.preheaders):
            for ins in blocks[b].instructions:
                used |= registers_used(ins)
        for b in shape.preheaders:
            free &= dead.get(blocks[b].address)
        free &= ~used
        if not free:
            continue
        number = len(sums)
        sums.append(LoopSum((free & -free).bit_length() - 1, array, index))
        for b in shape.preheaders:
            blocks[b].increment(RESET, number)
        for e in shape.exits:
            blocks[e].counter_increments = [(STORE, number, 1), *blocks[e].counter_increments]

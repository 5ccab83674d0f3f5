"""Per-procedure sums of weighted block counts kept in a register (decision 0014).

A tool that reads its block counters only as each procedure's sum of count x
instructions (``Tool.sum_per_procedure``) does not need the counts: the sum itself is
what matters. Counter placement (emit/counter_placement.py) already finds a few
blocks and branches (the *carriers*) from whose counts every block count follows
linearly; so the procedure's sum is a fixed weighted sum of the carriers' counts. Here
each carrier adds its weight to a running sum in d31 (two NEON instructions, no memory,
no flags, no core register), and the sum goes into the procedure's slot in memory only
where control may leave the procedure.

What keeps it exact: d31 holds only the current procedure's additions since it was last
stored. Every way out (calls, system calls, returns, indirect jumps, branches to other
procedures, running into the next one, the program's end) stores it and clears it, so
code of this program always arrives with d31 = 0; where code from elsewhere may arrive
(the entry: from a library's callback or a signal's delivery; a return site: after a
library call, which may use d31; a landing pad: restored by the unwinder) it is reset.
A signal handler's additions are stored before it returns, and the kernel's sigreturn
then gives back the interrupted procedure's d31. Those resets must not hit the
procedure's own flow into such a block: direct branches go past the reset (the block's
``("inside", address)`` label), and a block that falls through into one stores first.

The same protocol carries a repeat filter's hit counts (decision 0019): the filter sites
of a T32 procedure add to d28/d29 instead of a counter in memory, and since they add in
the middle of blocks, the stores come right before each way out (``flush_before``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..arch.arm.counters import HIT_REGISTERS, SUM_REGISTER
from ..arch.arm.hooks import filter_hit_slots
from ..arch.arm.jump_tables import table_branch_targets
from ..arch.arm.relocate import translated_jump
from ..ir.model import Accumulation, Binary, Block, Procedure

if TYPE_CHECKING:
    from .counter_placement import Plan


# Where the program may be seen to end.
END_HOOKS = ("anvil_on_syscall", "anvil_program_end", "anvil_exit_jump", "anvil_binder_jump", "anvil_fini_array_end",
             "anvil_fini_end", "anvil_exec_jump")


def program_stops(binary: Binary) -> set[int]:
    """Addresses where the program may be seen to end (its end hooks run there): counts
    must be in memory by then."""
    stops: set[int] = set()
    for proc in binary.procedures:
        if any(h.prototype.name in END_HOOKS for h in proc.hooks):
            stops.add(proc.blocks[0].address)
        stops.update(i.address for i in proc.instructions()
                     if i.hooks and any(h.prototype.name in END_HOOKS for h in i.hooks))
    return stops


def all_thumb(proc: Procedure) -> bool:
    """Whether all of ``proc`` is T32 code (register sums are kept only there)."""
    return all(ins.thumb for ins in proc.instructions())


def accumulation(binary: Binary, proc: Procedure, plan: Plan | None, slot: tuple[str, int],
                 stops: set[int]) -> Accumulation:
    """How ``proc`` adds into ``slot`` the sum of its blocks' counts times their sizes, with
    ``plan``'s carriers (None: every block is counted); ``stops``: addresses where the
    program may be seen to end (their blocks store the sum first)."""
    weights, edge_weights = _weights(proc, plan)
    resets, leaving, flush_at_end = _ways_in_and_out(binary, proc, stops)
    return Accumulation(sums={SUM_REGISTER: slot}, weights=weights, edge_weights=edge_weights, resets=resets,
                        flush_at_start=leaving, flush_at_end=flush_at_end)


def count_hits_in_registers(binary: Binary, stops: set[int]) -> int:
    """Let T32 procedures count their repeat filters' hits in registers (decision 0019): up
    to two (counter array, index) pairs each, in HIT_REGISTERS, stored into their slots
    wherever control may leave (after the sites of the instruction that leaves) and reset
    wherever it may arrive, as decision 0014's sums are. Added to the procedure's sums if it
    has some. Only where d16-d31 are free and no other thread runs (the caller's part).
    Returns how many procedures do."""
    count = 0
    for proc in binary.procedures:
        slots_at = _filter_slots(proc)
        counters = sorted(set().union(*slots_at.values()))[:len(HIT_REGISTERS)]
        if not counters or not all_thumb(proc):
            continue
        count += 1
        resets, leaving, flush_at_end = _ways_in_and_out(binary, proc, stops)
        if proc.accumulation is None:
            proc.accumulation = Accumulation(sums={}, weights={}, edge_weights={}, resets=resets,
                                             flush_at_start=set(), flush_at_end=flush_at_end)
        proc.accumulation.sums.update(zip(HIT_REGISTERS, counters))
        proc.accumulation.flush_before = _exits(proc, leaving, stops)
        kept = set(counters)
        _drop_empty_stores(binary, proc, proc.accumulation, {a for a, slots in slots_at.items() if slots & kept})
    return count


def _filter_slots(proc: Procedure) -> dict[int, set[tuple[str, int]]]:
    """Instruction address -> the (counter array, index) pairs its repeat-filtered sites
    count hits in, for the instructions that have such sites."""
    out = {}
    for ins in proc.instructions():
        if ins.hooks:
            slots = set().union(*(filter_hit_slots(hook, ins) for hook in ins.hooks))
            if slots:
                out[ins.address] = slots
    return out


def _exits(proc: Procedure, leaving: set[int], stops: set[int]) -> set[int]:
    """The instructions before which sums added by sites inside blocks must be stored: in
    each block control may leave, the instructions where the program may be seen to end
    and the last one (those of other blocks may run on past the end unseen)."""
    out = set()
    for i in leaving:
        block = proc.blocks[i]
        out.update(ins.address for ins in block.instructions if ins.address in stops)
        out.add(block.instructions[-1].address)
    return out


def _drop_empty_stores(binary: Binary, proc: Procedure, acc: Accumulation, adds: set[int]) -> None:
    """Take out the stores that no path reaches with anything added since the procedure's
    last store or reset (a call right after a return site, with no access between):
    they would add zeros. A forward flow over the blocks: a sum *may be nonzero* after a
    weight or a filter site, and is zero after a store or a reset; calls reach their
    return sites through the callee, which stores before it returns, and the site's
    reset. Procedures with jumps inside them through tables or registers keep every store
    (their targets are not followed here)."""
    blocks = proc.blocks
    lasts = [b.instructions[-1] for b in blocks]  # jumps end blocks
    if any(ins.name in ("tbb", "tbh") or ins.address in binary.switch_cases or translated_jump(ins) for ins in lasts):
        return
    starts = {b.address: i for i, b in enumerate(blocks)}
    dirty_in = [False] * len(blocks)
    needed: set[tuple[str, int]] = set()  # ("start" | "before" | "end", block or address) that store something
    # Per block, in order, the instructions that add (True) or store before them (False).
    events = [[(ins.address, ins.address in adds) for ins in b.instructions
               if ins.address in adds or ins.address in acc.flush_before] for b in blocks]

    def run(i: int) -> list[tuple[int, bool]]:
        """Walk block ``i`` from its entry state; note the stores that store something and
        return its successors in the procedure with the state each gets."""
        state = dirty_in[i] or bool(acc.weights.get(i))
        if i in acc.flush_at_start:
            if state:
                needed.add(("start", i))
            state = False
        for address, adds_here in events[i]:
            state = state or adds_here
            if address in acc.flush_before:
                if state:
                    needed.add(("before", address))
                state = False
        last = lasts[i]
        out = []
        if last.is_branch and not last.is_call and last.branch_target in starts:
            out.append((starts[last.branch_target], state or bool(acc.edge_weights.get((i, last.branch_target)))))
        state = state or bool(acc.edge_weights.get((i, last.end)))  # the way it falls through
        if i in acc.flush_at_end and state:
            needed.add(("end", i))
        if last.falls_through and not (last.is_call or last.is_syscall) and last.end in starts:
            nxt = starts[last.end]
            if nxt not in acc.resets:  # else its reset zeroes it (stored first: flush_at_end)
                out.append((nxt, state))
        return out

    # Every block runs at least once after its entry state last changed (a change queues it
    # again), and states only go from zero to may-be-nonzero: the stores noted on the way
    # are those the final states need.
    work = list(range(len(blocks)))
    while work:
        i = work.pop()
        for j, state in run(i):
            if state and not dirty_in[j]:
                dirty_in[j] = True
                work.append(j)
    acc.flush_at_start = {i for i in acc.flush_at_start if ("start", i) in needed}
    acc.flush_before = {a for a in acc.flush_before if ("before", a) in needed}
    acc.flush_at_end = {i for i in acc.flush_at_end if ("end", i) in needed}


def _ways_in_and_out(binary: Binary, proc: Procedure, stops: set[int]) -> tuple[set[int], set[int], set[int]]:
    """Of ``proc``'s blocks (positions): those entered from elsewhere (their sums start from
    zero), those control may leave (sums stored before), and those that fall through into
    one of the first kind (sums stored after)."""
    blocks = proc.blocks
    starts = {b.address: i for i, b in enumerate(blocks)}
    resets = {0}
    for i in range(1, len(blocks)):
        before = blocks[i - 1].instructions[-1]
        if (before.is_call or before.is_syscall) and before.end == blocks[i].address:
            resets.add(i)  # a return site
        if blocks[i].address in binary.unwinder_entries:
            resets.add(i)
    for block in blocks:  # a Thumb-1 switch's cases, where its helper's call returns to
        cases = binary.case_tables.get(block.instructions[-1].address)
        if cases is not None:
            resets.update(starts[case] for case in cases.cases if case in starts)
    leaving = {i for i, block in enumerate(blocks) if _may_leave(binary, block, starts, resets, stops)}
    flush_at_end = set()
    for i in range(len(blocks) - 1):
        last = blocks[i].instructions[-1]
        if i + 1 in resets and not (last.is_call or last.is_syscall) and last.falls_through:
            flush_at_end.add(i)
    return resets, leaving, flush_at_end


def carrier_weights(plan: Plan, sizes: list[int]) -> list[int]:
    """What each of ``plan``'s carriers adds so that the additions total the sum of every
    block's count times its size (``sizes``, by block position): the derivative of that
    sum by the carrier's count, found backwards through the derivation steps (each value
    a signed sum of earlier ones)."""
    carriers = len(plan.carriers)
    adjoint = [0] * plan.values
    for position, value in enumerate(plan.block_value):
        adjoint[value] += sizes[position]
    for j in range(len(plan.steps) - 1, -1, -1):
        amount = adjoint[carriers + j]
        if amount:
            for value, sign in plan.steps[j]:
                adjoint[value] += sign * amount
    return adjoint[:carriers]


def _weights(proc: Procedure, plan: Plan | None) -> tuple[dict[int, int], dict[tuple[int, int], int]]:
    """The weights of ``plan``'s counted blocks and branches (see carrier_weights); without
    a plan every block carries its own size."""
    blocks = proc.blocks
    sizes = [len(b.instructions) for b in blocks]
    if plan is None or len(plan.carriers) >= len(blocks):
        return dict(enumerate(sizes)), {}
    weights: dict[int, int] = {}
    edge_weights: dict[tuple[int, int], int] = {}
    for carrier, weight in zip(plan.carriers, carrier_weights(plan, sizes)):
        if not weight:
            continue
        if isinstance(carrier, tuple):
            source, dest = carrier
            edge_weights[(source, blocks[dest].address)] = weight
        else:
            weights[carrier] = weight
    return weights, edge_weights


def _may_leave(binary: Binary, block: Block, starts: dict[int, int], resets: set[int], stops: set[int]) -> bool:
    """Control may leave the procedure from ``block`` (or reach a reset other than past its
    label), or the program may end in it: the sum must be stored first."""
    if any(ins.address in stops for ins in block.instructions):
        return True
    last = block.instructions[-1]
    if last.is_call or last.is_syscall or last.is_return or last.name == "udf":
        return True
    if last.name in ("tbb", "tbh") or last.address in binary.switch_cases:  # cases in the procedure, at their labels
        return any(starts.get(t) in resets for t in table_branch_targets(binary, [last]))
    if last.branch_target is not None and last.is_branch:
        if last.branch_target not in starts:
            return True  # a tail call or a branch into other code
    elif (last.is_branch or last.writes_pc) and not translated_jump(last):
        return True  # an indirect jump: where to is not known here
    # A computed goto (translated_jump) stores the sum itself when its target is not one of
    # the procedure's instructions, and goes past a reset when it is (relocate.py).
    return last.falls_through and last.end not in starts

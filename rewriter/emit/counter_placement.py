"""Fewer block counters than blocks: count some blocks, derive the rest at program end.

A block's count equals the flow into it and the flow out of it. So in a procedure's
flow graph (each block split into an in-node and an out-node joined by the *block
edge*, all flow from and to outside through one extra node, see ir/flow.py), the
edges of a spanning tree can be computed from the edges not in it (Knuth; Ball and
Larus, "Optimally profiling and tracing programs", 1994). So:

- chains through nodes with one edge in and one out carry one value and are merged;
- a chain holding a block edge is counted by that block's own counter; a branch from
  a block with several successors to one with several predecessors can be counted
  only by code on the branch itself (an *edge counter*: after a conditional branch
  for the way it falls through, on a trampoline for the way it jumps), which only
  direct conditional branches allow; other such chains must be in the tree, and when
  they form a cycle the procedure keeps a counter on every block;
- chains join the tree hottest first (by loop depth), so the counters that remain
  sit in the coldest places.

The emitter keeps the increments of counted blocks only and links a small program
(runtime_stubs/common/anvil_derive.c) that fills in the other blocks' slots when the
program ends, before any tool reads them. Counts are exact whenever every way in and
out of a procedure is in the flow model; see docs/decisions/0008-counter-placement.md.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import progress
from ..arch.arm.jump_tables import table_branch_targets
from ..ir.flow import ProcedureFlow, entries_from_elsewhere, interrupt_code, loop_depths, procedure_flow
from ..ir.fork_split import split_map
from ..ir.model import Binary, Block, Procedure
from .loop_sums import LoopShape, LoopSum, sum_loops, summable_loops
from .procedure_sums import accumulation, all_thumb, carrier_weights

_ADDRESS = operator.attrgetter("address")
_NAME = operator.attrgetter("name")
_TABLE_JUMPS = frozenset(("tbb", "tbh"))
MAX_VALUES = 0x7FFF  # values, and blocks, of a procedure with a derivation program (bounds its scratch)


def varints(numbers: list[int]) -> bytes:
    """``numbers`` as LEB128 varints: 7 bits a byte, low first, the top bit set on all but the last."""
    out = bytearray()
    for n in numbers:
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        out.append(n)
    return bytes(out)


def edge_array(array: str) -> str:
    """The array holding the edge counters placed for counter array ``array``."""
    return f"{array}__edges"


@dataclass
class Plan:
    """Counted blocks and how every block's count follows from them."""

    carriers: list[int | tuple[int, int]]  # counter k (value k): a block position or a (from, to) edge
    steps: list[list[tuple[int, int]]]  # value len(carriers)+j = sum(sign * value) over (value, sign)
    block_value: list[int]  # the value that is each block's count
    depth: list[int] = field(default_factory=list)  # how many loops contain each block
    loops: list[LoopShape] = field(default_factory=list)  # innermost loops that may count in a register

    def in_loop(self, carrier: int | tuple[int, int]) -> bool:
        """Whether a carrier runs inside a loop (an edge: both its ends are in one)."""
        if isinstance(carrier, tuple):
            return min(self.depth[carrier[0]], self.depth[carrier[1]]) > 0
        return self.depth[carrier] > 0

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [c for c in self.carriers if isinstance(c, tuple)]

    def code(self, base: int, edge_base: int) -> bytes:
        """The derivation program of one procedure whose first block has slot ``base`` and
        whose first edge counter is ``edge_base`` (format: runtime_stubs/common/anvil_derive.c)."""
        writes = [(position, value) for position, value in enumerate(self.block_value)
                  if not (value < len(self.carriers) and self.carriers[value] == position)]
        numbers = [base, edge_base, len(self.carriers), len(self.steps), len(writes)]
        edges = 0
        for carrier in self.carriers:
            if isinstance(carrier, tuple):
                numbers.append(edges << 1 | 1)
                edges += 1
            else:
                numbers.append(carrier << 1)
        for step in self.steps:
            numbers.append(len(step))
            numbers += [value << 1 | (sign < 0) for value, sign in step]
        for position, value in writes:  # counted blocks already hold their counts
            numbers += [position, value]
        return varints(numbers)

    @property
    def values(self) -> int:
        return len(self.carriers) + len(self.steps)


@dataclass
class Derivations:
    """Per counter array, the derivation program of every procedure that has one."""

    code: dict[str, bytearray]
    edges: dict[str, int]  # edge counters per array
    temps: int = 0
    counters_kept: int = 0
    counters_removed: int = 0
    counters_summed: int = 0  # carriers adding into a procedure's running sum instead (decision 0014)
    # Arrays read only as per-procedure sums (Tool.sum_per_procedure) -> (where the sums go,
    # the program that adds count x instructions of each block that may count into them).
    folds: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    # Folded arrays renumbered to hold the counting blocks' slots only -> their new length
    # (the tool's C never reads them, Tool.sum_per_procedure; decision 0034).
    sizes: dict[str, int] = field(default_factory=dict)
    # Folded array -> (procedure, its plan or None when every block keeps its counter, its
    # first edge counter), for the folds that read the counted values directly (fold_program).
    plans: dict[str, list[tuple[Procedure, Plan | None, int]]] = field(default_factory=dict)
    # The (counter array, index) of the increments kept inside loops, by their final
    # numbering (after compact_slots): the ones that run often (decision 0053).
    in_loops: set[tuple[str, int]] = field(default_factory=set)
    loop_blocks: list[Block] = field(default_factory=list)  # the blocks of those, while placing
    # Firmware loops whose count is kept in a register (loop_sums.py), numbered as the
    # pseudo increments that reset and store them say.
    loop_sums: list[LoopSum] = field(default_factory=list)
    summed_loops: list[tuple[Procedure, Plan]] = field(default_factory=list)  # candidates, while placing

    @property
    def runs_programs(self) -> bool:
        """Whether the image runs derivation or fold programs at its end (and so needs the
        runtime's interpreter of them, ``tb.DERIVE_SOURCE``)."""
        return bool(self.code or self.folds)

    def source(self) -> str:
        """Generated C: ``anvil_derive_counts()``, which fills the derived slots of the arrays
        read block by block, and folds the counted values of the arrays read as
        per-procedure sums into those sums (decision 0025)."""
        parts = ["void anvil_derive(uint64_t *slots, const uint64_t *edges, const uint8_t *code, uint32_t length,"
                 " uint64_t *tmp);\n"
                 "void anvil_fold(const uint64_t *slots, const uint64_t *edges, uint64_t *sums, const uint8_t *code,"
                 " uint32_t length);\n"]
        calls = []
        if self.temps:
            parts.append(f"static uint64_t anvil_derive_tmp[{self.temps}];\n")
        for array in sorted(set(self.code) | set(self.folds)):
            parts.append(f"uint64_t anvil_array_{edge_array(array)}[{max(1, self.edges.get(array, 0))}];\n")
        for i, (array, code) in enumerate(sorted(self.code.items())):
            edges = f"anvil_array_{edge_array(array)}"
            rows = ",".join(map(str, code))
            parts.append(f"static const uint8_t anvil_derive_code_{i}[{len(code)}] = {{{rows}}};\n")
            calls.append(f"  anvil_derive(anvil_array_{array}, {edges}, anvil_derive_code_{i}, {len(code)},"
                         " anvil_derive_tmp);\n")
        for i, (array, (into, code)) in enumerate(sorted(self.folds.items())):
            rows = ",".join(map(str, code)) or "0"
            parts.append(f"static const uint8_t anvil_fold_code_{i}[{max(1, len(code))}] = {{{rows}}};\n")
            calls.append(f"  anvil_fold(anvil_array_{array}, anvil_array_{edge_array(array)}, anvil_array_{into},"
                         f" anvil_fold_code_{i}, {len(code)});\n")
        parts.append("void anvil_derive_counts(void)\n{\n" + "".join(calls) + "}\n")
        return "".join(parts)


# Procedures (counting their blocks) worth planning on two cores: a large program's.
PARALLEL_BLOCKS = 20000


def place_counters(binary: Binary, stops: set[int], sums: dict[str, str] | None = None,
                   folds: dict[str, str] | None = None) -> Derivations:
    """Drop the block counters whose counts can be derived; returns the programs that derive them.

    A procedure qualifies for an array when each of its blocks adds 1 to that array's
    slot numbered like the block (``block.increment(array, block.index)``), which is
    what counting tools do. Each procedure is planned on its own, so the plans are made
    first (on two cores for a large program, see ir/fork_split.py), then applied in order.

    ``stops``: where the program may be seen to end (procedure_sums.program_stops).
    ``sums``: arrays read only as per-procedure sums (``Tool.sum_per_procedure``) -> where
    those go. T32 procedures then add them in a register instead (emit/procedure_sums.py;
    the caller passes them only where d16-d31 are free and no threads run).
    ``folds``: all the tool's arrays read only as per-procedure sums, and where those go:
    the blocks that still count in them are folded into the sums at program end
    (Derivations.folds).
    """
    result = Derivations(code={}, edges={})
    counted = [(proc, arrays) for proc in binary.procedures if (arrays := _counted_arrays(proc))]
    if counted:  # else a tool without block counters (cachesim, memtrace): no flow to build
        _place(binary, stops, sums, counted, set(folds or {}), result)
    for array, into in (folds or {}).items():
        result.sizes[array] = compact_slots(binary, array)
        result.folds[array] = (into, fold_program(binary, array, result.plans.get(array, [])))
    result.in_loops.update((name, index) for block in result.loop_blocks for name, index, _ in block.counter_increments)
    result.loop_blocks.clear()
    for proc, plan in result.summed_loops:  # after compact_slots: the counters' final numbers
        sum_loops(proc, plan.loops, {source for source, _ in plan.edges}, result.loop_sums)
    result.summed_loops.clear()
    return result


def compact_slots(binary: Binary, array: str) -> int:
    """Renumber ``array``'s slots so that only the blocks still counting in it have one, in
    program order; returns how many (at least 1: C has no empty arrays). For an array read
    only as per-procedure sums: placement, register sums and ``--only`` leave most blocks
    without a counter, and a slot for each of them cost RAM for nothing (decision 0034)."""
    slot = 0
    for proc in binary.procedures:
        for block in proc.blocks:
            increments = block.counter_increments
            for name, _, _ in increments:  # (a loop, not any() over a generator: every block comes here)
                if name == array:
                    block.counter_increments = [(name, slot if name == array else index, amount)
                                                for name, index, amount in increments]
                    slot += 1
                    break
    return max(1, slot)


def fold_program(binary: Binary, array: str, plans: list[tuple[Procedure, Plan | None, int]]) -> bytes:
    """The program anvil_fold runs (runtime_stubs/common/anvil_derive.c) to add each
    block's count in ``array`` times its instructions to its procedure's sum, straight
    from the values counted: a derived count is a signed sum of counted values (Plan), so
    a procedure's sum is sum(coefficient x counted value), the coefficients worked out
    here. Per procedure that counts in ``array`` (``plans``, from placement, or any other
    with an increment of it: every block counted), its index, its first slot, its first
    edge counter, its number of terms, then per term the value (a slot counted from the
    first << 1, or an edge counter << 1 | 1) and its coefficient (zigzag: a negative one
    is odd). The slots are compact_slots': the procedure's counting blocks, in order."""
    numbers: list[int] = []
    planned = {proc.address for proc, _, _ in plans}
    others = [(proc, None, 0) for proc in binary.procedures if proc.address not in planned
              and any(c[0] == array for b in proc.blocks for c in b.counter_increments)]
    for proc, plan, edge_base in sorted(plans + others, key=lambda entry: entry[0].index):
        # Block position -> its slot (compact_slots): blocks that count, numbered in order.
        slots = {position: index for position, block in enumerate(proc.blocks)
                 for name, index, _ in block.counter_increments if name == array}
        first = min(slots.values(), default=0)
        # A block position with no slot never counted in ``array``: its term adds nothing.
        terms = [(value if value & 1 else (slots[value >> 1] - first) << 1, coefficient)
                 for value, coefficient in _fold_terms(proc, plan) if value & 1 or value >> 1 in slots]
        numbers += [proc.index, first, edge_base, len(terms)]
        for value, coefficient in terms:
            numbers += [value, coefficient << 1 if coefficient >= 0 else (-coefficient << 1) - 1]
    return varints(numbers)


def _fold_terms(proc: Procedure, plan: Plan | None) -> list[tuple[int, int]]:
    """(counted value as fold_program encodes it, coefficient) whose sum is the procedure's
    count x instructions over its blocks; terms whose coefficient is 0 left out. The
    coefficients are procedure_sums.carrier_weights, the weights register sums add."""
    sizes = [block.size for block in proc.blocks]
    if plan is None or len(plan.carriers) >= len(proc.blocks):  # every block keeps its counter
        return [(position << 1, size) for position, size in enumerate(sizes) if size]
    edge_number = {edge: k for k, edge in enumerate(plan.edges)}
    return [(edge_number[c] << 1 | 1 if isinstance(c, tuple) else c << 1, weight)
            for c, weight in zip(plan.carriers, carrier_weights(plan, sizes)) if weight]


def _place(binary: Binary, stops: set[int], sums: dict[str, str] | None,
           counted: list[tuple[Procedure, set[str]]], folded: set[str], result: Derivations) -> None:
    """place_counters' work on ``counted``: procedures and the arrays every block of theirs
    counts in; ``folded``: the arrays read only as sums (folded, never derived)."""
    entered = entries_from_elsewhere(binary)
    taken = binary.address_taken
    in_registers = _loop_sums_allowed(binary, stops)
    switch_cases = binary.switch_cases.keys()
    shapes: dict[tuple, Plan | None] = {}  # small flows' plans, by the flow (_plan_of_shape)

    def plan_of(proc: Procedure) -> Plan | None:
        progress.advance()
        tables = {}
        # Most procedures have no switch: found from their names and addresses, in C loops.
        if (not switch_cases.isdisjoint(map(_ADDRESS, proc.instructions()))
                or not _TABLE_JUMPS.isdisjoint(map(_NAME, proc.instructions()))):
            tables = {ins.address: table_branch_targets(binary, [ins]) for ins in proc.instructions()
                      if ins.name in _TABLE_JUMPS or ins.address in switch_cases}
        addresses = {b.address for b in proc.blocks}
        flow = procedure_flow(proc, entered[proc.address] | (taken & addresses), tables, stops)
        plan = _plan_of_shape(flow, shapes) if flow is not None else None
        if plan is not None and in_registers(proc):
            plan.loops = summable_loops(proc, flow)
        return plan

    progress.phase("placing counters", len(counted))
    plans = split_map(plan_of, [proc for proc, _ in counted], lambda proc: len(proc.blocks), PARALLEL_BLOCKS)
    for (proc, arrays), plan in zip(counted, plans):
        if plan is not None and plan.loops:
            result.summed_loops.append((proc, plan))
        summed = sorted(a for a in arrays if a in (sums or {})) if all_thumb(proc) else []
        if summed:  # one running sum per procedure: the first such array
            array = summed[0]
            proc.accumulation = accumulation(binary, proc, plan, (sums[array], proc.index), stops)
            for block in proc.blocks:
                block.counter_increments = [c for c in block.counter_increments if c[0] != array]
            arrays = arrays - {array}
            result.counters_summed += len(proc.accumulation.weights) + len(proc.accumulation.edge_weights)
        if arrays:
            _apply(result, proc, arrays, plan, folded)


def _loop_sums_allowed(binary: Binary, stops: set[int]) -> Callable[[Procedure], bool]:
    """Which procedures may keep loop counts in registers (loop_sums.py): firmware code that
    no exception handler runs, in an image none of whose handlers may end the program;
    never with ANVIL_POISON_DEAD (it overwrites dead registers)."""
    if not binary.is_firmware or os.environ.get("ANVIL_POISON_DEAD"):
        return lambda proc: False
    handlers = interrupt_code(binary)
    if any(proc.address in handlers and any(i.address in stops for i in proc.instructions())
           for proc in binary.procedures):
        return lambda proc: False
    return lambda proc: proc.address not in handlers


def _apply(result: Derivations, proc: Procedure, arrays: set[str], plan: Plan | None, folded: set[str]) -> None:
    """Keep the increments of ``proc``'s counted blocks only, add its edge counters, and
    append its derivation program to ``result`` (or keep every counter without a plan);
    for a ``folded`` array, the plan the fold reads instead of a derivation program."""
    if plan is None or len(plan.carriers) >= len(proc.blocks):
        result.counters_kept += len(proc.blocks) * len(arrays)
        if plan is not None:
            result.loop_blocks += [block for block, depth in zip(proc.blocks, plan.depth) if depth]
        for array in arrays & folded:
            result.plans.setdefault(array, []).append((proc, None, 0))
        return
    keep = {c for c in plan.carriers if not isinstance(c, tuple)}
    for position, block in enumerate(proc.blocks):
        if position not in keep:
            block.counter_increments = [c for c in block.counter_increments if c[0] not in arrays]
    result.loop_blocks += [proc.blocks[position] for position in sorted(keep) if plan.in_loop(position)]
    base = proc.blocks[0].index
    for array in sorted(arrays):
        edge_base = result.edges.get(array, 0)
        for k, (source, dest) in enumerate(plan.edges):
            proc.blocks[source].add_edge_increment(proc.blocks[dest].address, edge_array(array), edge_base + k)
            if plan.in_loop((source, dest)):
                result.in_loops.add((edge_array(array), edge_base + k))
        result.edges[array] = edge_base + len(plan.edges)
        if array in folded:
            result.plans.setdefault(array, []).append((proc, plan, edge_base))
        else:
            result.code.setdefault(array, bytearray()).extend(plan.code(base, edge_base))
            result.temps = max(result.temps, plan.values)
    result.counters_kept += len(keep) * len(arrays)
    result.counters_removed += (len(proc.blocks) - len(keep)) * len(arrays)


def _counted_arrays(proc: Procedure) -> set[str]:
    """Arrays every block of ``proc`` increments once, by 1, at its own index."""
    arrays: set[str] | None = None
    for block in proc.blocks:
        increments = block.counter_increments
        if len(increments) == 1:  # what counting tools do: the general case below, made short
            name, index, amount = increments[0]
            mine = {name} if index == block.index and amount == 1 else set()
        else:
            mine = {name for name, index, amount in increments if index == block.index and amount == 1}
            names = [name for name, _, _ in increments]
            mine = {name for name in mine if names.count(name) == 1}
        arrays = mine if arrays is None else arrays & mine
        if not arrays:
            return set()
    return arrays or set()


class _Sets:
    """Union-find over integers (``union(a, b)`` makes b's root the root of both)."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[ra] = rb
        return True


@dataclass
class _Chain:
    """Edges that always carry the same count: from ``start`` to ``end`` (None for a closed ring)."""

    start: int | None = None
    end: int | None = None
    blocks: list[int] | None = None
    branch: tuple[int, int] | None = None  # the (from, to) blocks of a chain that is one branch


def _flow_edges(flow: ProcedureFlow) -> tuple[list[tuple[int, int, int | None]], dict[int, tuple[int, int]]]:
    """The split graph's edges (from node, to node, block of a block edge): node 0 is the
    outside, block i is in-node 2i+1 and out-node 2i+2; block edges first (edge i is
    block i's), then branches (also returned by edge, as (from, to) blocks), then the
    edges from and to the outside."""
    n = len(flow.successors)
    edges: list[tuple[int, int, int | None]] = [(1 + 2 * i, 2 + 2 * i, i) for i in range(n)]
    branches: dict[int, tuple[int, int]] = {}
    for i, succ in enumerate(flow.successors):
        for s in succ:
            branches[len(edges)] = (i, s)
            edges.append((2 + 2 * i, 1 + 2 * s, None))
    edges += [(0, 1 + 2 * i, None) for i in sorted(flow.from_outside)]
    edges += [(2 + 2 * i, 0, None) for i in sorted(flow.to_outside)]
    return edges, branches


def _chains(edges: list[tuple[int, int, int | None]], branches: dict[int, tuple[int, int]],
            nodes: int) -> tuple[_Sets, dict[int, _Chain]]:
    """Merge the edges through nodes with one edge in and one out (both carry the same count)
    into chains; returns the sets of merged edges and each set's chain, by its root edge.

    The union-find runs inline (path halving, b's root becomes the root, as _Sets does):
    this is the placement's innermost loop.
    """
    degree = [0] * nodes
    touching: list[list[int]] = [[] for _ in range(nodes)]
    for e, (u, v, _) in enumerate(edges):
        degree[u] += 1
        degree[v] += 1
        touching[u].append(e)
        touching[v].append(e)
    through = [d == 2 for d in degree]
    through[0] = False  # the outside node joins everything and passes nothing through
    same = _Sets(len(edges))
    parent = same.parent
    for node in range(1, nodes):
        if through[node]:
            a, b = touching[node]
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a != b:
                parent[a] = b
    chains: dict[int, _Chain] = {}
    for e, (u, v, block) in enumerate(edges):
        root = e
        while parent[root] != root:
            parent[root] = parent[parent[root]]
            root = parent[root]
        chain = chains.get(root)
        if chain is None:
            chain = chains[root] = _Chain(blocks=[])
        if block is not None:
            chain.blocks.append(block)
        elif e in branches:
            chain.branch = branches[e]
        if not through[u]:
            chain.start = u
        if not through[v]:
            chain.end = v
    return same, chains


#: Flows of at most this many blocks have their plans kept by shape (_plan_of_shape): two
#: thirds of a large program's procedures have the shape of an earlier one, nearly all of
#: them this small; a larger flow's key would cost more than the plans it finds again.
SHAPES_KEPT = 50


def _plan_of_shape(flow: ProcedureFlow, shapes: dict[tuple, Plan | None]) -> Plan | None:
    """``_plan(flow)``, kept in ``shapes`` for flows of the same shape (a plan is a function
    of the flow's edges alone); each procedure gets its own copy (plan_of adds its loops)."""
    if len(flow.successors) > SHAPES_KEPT:
        return _plan(flow)
    key = (tuple(map(tuple, flow.successors)), tuple(sorted(flow.from_outside)), tuple(sorted(flow.to_outside)),
           tuple(sorted(flow.splittable)))
    if key in shapes:
        plan = shapes[key]
    else:
        plan = shapes[key] = _plan(flow)
    if plan is None:
        return None
    return Plan(carriers=list(plan.carriers), steps=[list(step) for step in plan.steps],
                block_value=list(plan.block_value), depth=list(plan.depth))


def _plan(flow: ProcedureFlow) -> Plan | None:
    """Which blocks to count and how to derive the others; None when every block must be counted."""
    n = len(flow.successors)
    if n > MAX_VALUES:
        return None
    outside = 0
    edges, branches = _flow_edges(flow)
    same, chains = _chains(edges, branches, 2 * n + 1)
    depth = loop_depths(flow)
    splittable = flow.splittable

    # Chains nothing can count first (they must be in the tree), then hottest first;
    # at the same heat a block counter (no trampoline) is preferred to an edge counter.
    countable: dict[int, bool] = {}
    keys: dict[int, tuple[bool, int, bool, int]] = {}
    for c, chain in chains.items():
        if chain.blocks:
            heat = max(depth[b] for b in chain.blocks)
        else:
            heat = min(depth[b] for b in chain.branch) if chain.branch else 0
        countable[c] = bool(chain.blocks) or chain.branch in splittable
        keys[c] = (countable[c], -heat, bool(chain.blocks), c)
    order = sorted(chains, key=keys.__getitem__)
    joined = _Sets(2 * n + 1)
    tree: list[int] = []
    counted: list[int] = []
    for c in order:
        chain = chains[c]
        if chain.start is not None and joined.union(chain.start, chain.end):
            tree.append(c)
        elif countable[c]:
            counted.append(c)
        else:
            return None  # a cycle of branches between blocks that all have several ways in and out
    if len(counted) + len(tree) > MAX_VALUES:
        return None
    value = {c: k for k, c in enumerate(counted)}
    steps = _derivation_steps(chains, tree, value, 2 * n + 1, outside)
    carriers = [chains[c].blocks[0] if chains[c].blocks else chains[c].branch for c in counted]
    block_value = [value[same.find(e)] for e in range(n)]  # edge e < n is block e's own edge
    return Plan(carriers=carriers, steps=steps, block_value=block_value, depth=depth)


def _derivation_steps(chains: dict[int, _Chain], tree: list[int], value: dict[int, int], nodes: int,
                      outside: int) -> list[list[tuple[int, int]]]:
    """Tree chains in an order where each follows from values already known (leaves first).

    Each tree chain is solved at the node farther from the root (the outside node where
    it is in the component): what flows in there equals what flows out. Fills ``value``.
    """
    at: list[list[int]] = [[] for _ in range(nodes)]
    start = {c: chain.start for c, chain in chains.items()}
    end = {c: chain.end for c, chain in chains.items()}
    for c in chains:
        if start[c] is not None and start[c] != end[c]:
            at[start[c]].append(c)
            at[end[c]].append(c)
    in_tree = set(tree)
    seen = [False] * nodes
    solved: list[tuple[int, int]] = []  # (chain, node it is solved at), parents after children
    for root in [outside, *range(nodes)]:
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, None)]
        order: list[tuple[int, int | None]] = []
        while stack:
            node, via = stack.pop()
            order.append((node, via))
            for c in at[node]:
                if c not in in_tree or c == via:
                    continue
                other = end[c] if start[c] == node else start[c]
                if not seen[other]:
                    seen[other] = True
                    stack.append((other, c))
        solved += [(via, node) for node, via in reversed(order) if via is not None]
    steps = []
    for c, node in solved:
        # direction: +1 if the chain flows into node; the sum of (direction * value) at node is 0
        mine = 1 if end[c] == node else -1
        steps.append([(value[k], -mine if end[k] == node else mine) for k in at[node] if k != c])
        value[c] = len(value)
    return steps

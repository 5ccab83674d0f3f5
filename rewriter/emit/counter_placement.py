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

from dataclasses import dataclass

from ..ir.elf_loader import table_branch_targets
from ..ir.flow import ProcedureFlow, entries_from_elsewhere, loop_depths, procedure_flow
from ..ir.model import Binary, Procedure

END_HOOKS = ("anvil_on_syscall", "anvil_program_end")  # where the program may be seen to end
SUBTRACT = 0x8000  # in an operand: subtract the value; in a carrier: an edge counter
MAX_VALUES = 0x7FFF


def edge_array(array: str) -> str:
    """The array holding the edge counters placed for counter array ``array``."""
    return f"{array}__edges"


@dataclass
class Plan:
    """Counted blocks and how every block's count follows from them."""

    carriers: list[int | tuple[int, int]]  # counter k (value k): a block position or a (from, to) edge
    steps: list[list[tuple[int, int]]]  # value len(carriers)+j = sum(sign * value) over (value, sign)
    block_value: list[int]  # the value that is each block's count

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [c for c in self.carriers if isinstance(c, tuple)]

    def code(self, base: int, edge_base: int) -> list[int]:
        """The derivation program of one procedure whose first block has slot ``base`` and
        whose first edge counter is ``edge_base``."""
        out = [base & 0xFFFF, base >> 16, edge_base & 0xFFFF, edge_base >> 16,
               len(self.block_value), len(self.carriers), len(self.steps)]
        edges = 0
        for carrier in self.carriers:
            if isinstance(carrier, tuple):
                out.append(SUBTRACT | edges)
                edges += 1
            else:
                out.append(carrier)
        for step in self.steps:
            out.append(len(step))
            out += [value | (SUBTRACT if sign < 0 else 0) for value, sign in step]
        out += self.block_value
        return out

    @property
    def values(self) -> int:
        return len(self.carriers) + len(self.steps)


@dataclass
class Derivations:
    """Per counter array, the derivation program of every procedure that has one."""

    code: dict[str, list[int]]
    edges: dict[str, int]  # edge counters per array
    temps: int = 0
    counters_kept: int = 0
    counters_removed: int = 0

    def source(self) -> str:
        """Generated C: ``anvil_derive_counts()``, which fills the derived slots."""
        parts = ["void anvil_derive(uint64_t *slots, const uint64_t *edges, const uint16_t *code, uint32_t length,"
                 " uint64_t *tmp);\n"]
        calls = []
        if self.temps:
            parts.append(f"static uint64_t anvil_derive_tmp[{self.temps}];\n")
        for i, (array, code) in enumerate(sorted(self.code.items())):
            edges = f"anvil_array_{edge_array(array)}"
            parts.append(f"uint64_t {edges}[{max(1, self.edges.get(array, 0))}];\n")
            rows = ",".join(str(v) for v in code)
            parts.append(f"static const uint16_t anvil_derive_code_{i}[{len(code)}] = {{{rows}}};\n")
            calls.append(f"  anvil_derive(anvil_array_{array}, {edges}, anvil_derive_code_{i}, {len(code)},"
                         " anvil_derive_tmp);\n")
        parts.append("void anvil_derive_counts(void)\n{\n" + "".join(calls) + "}\n")
        return "".join(parts)


def place_counters(binary: Binary) -> Derivations:
    """Drop the block counters whose counts can be derived; returns the programs that derive them.

    A procedure qualifies for an array when each of its blocks adds 1 to that array's
    slot numbered like the block (``block.increment(array, block.index)``), which is
    what counting tools do.
    """
    result = Derivations(code={}, edges={})
    entered = entries_from_elsewhere(binary)
    taken = binary.address_taken
    stops: set[int] = set()
    for proc in binary.procedures:
        if any(h.prototype.name in END_HOOKS for h in proc.hooks):
            stops.add(proc.blocks[0].address)
        stops.update(i.address for i in proc.instructions() if any(h.prototype.name in END_HOOKS for h in i.hooks))
    for proc in binary.procedures:
        arrays = _counted_arrays(proc)
        if not arrays:
            continue
        tables = {ins.address: table_branch_targets(binary, [ins]) for ins in proc.instructions()
                  if ins.name in ("tbb", "tbh")}
        addresses = {b.address for b in proc.blocks}
        flow = procedure_flow(proc, entered[proc.address] | (taken & addresses), tables, stops)
        plan = _plan(flow) if flow is not None else None
        if plan is None or len(plan.carriers) >= len(proc.blocks):
            result.counters_kept += len(proc.blocks) * len(arrays)
            continue
        keep = {c for c in plan.carriers if not isinstance(c, tuple)}
        for position, block in enumerate(proc.blocks):
            if position not in keep:
                block.counter_increments = [c for c in block.counter_increments if c[0] not in arrays]
        base = proc.blocks[0].index
        for array in sorted(arrays):
            edge_base = result.edges.get(array, 0)
            for k, (source, dest) in enumerate(plan.edges):
                increments = proc.blocks[source].edge_increments.setdefault(proc.blocks[dest].address, [])
                increments.append((edge_array(array), edge_base + k, 1))
            result.edges[array] = edge_base + len(plan.edges)
            result.code.setdefault(array, []).extend(plan.code(base, edge_base))
        result.temps = max(result.temps, plan.values)
        result.counters_kept += len(keep) * len(arrays)
        result.counters_removed += (len(proc.blocks) - len(keep)) * len(arrays)
    return result


def _counted_arrays(proc: Procedure) -> set[str]:
    """Arrays every block of ``proc`` increments once, by 1, at its own index."""
    arrays: set[str] | None = None
    for block in proc.blocks:
        mine = {name for name, index, amount in block.counter_increments if index == block.index and amount == 1}
        names = [name for name, _, _ in block.counter_increments]
        mine = {name for name in mine if names.count(name) == 1}
        arrays = mine if arrays is None else arrays & mine
        if not arrays:
            return set()
    return arrays or set()


class _Sets:
    """Union-find over integers."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
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


def _plan(flow: ProcedureFlow) -> Plan | None:
    """Which blocks to count and how to derive the others; None when every block must be counted."""
    n = len(flow.successors)
    outside = 0

    def node_in(i: int) -> int:
        return 1 + 2 * i

    def node_out(i: int) -> int:
        return 2 + 2 * i

    edges: list[tuple[int, int, int | None]] = [(node_in(i), node_out(i), i) for i in range(n)]
    branches: dict[int, tuple[int, int]] = {}
    for i, succ in enumerate(flow.successors):
        for s in succ:
            branches[len(edges)] = (i, s)
            edges.append((node_out(i), node_in(s), None))
    edges += [(outside, node_in(i), None) for i in sorted(flow.from_outside)]
    edges += [(node_out(i), outside, None) for i in sorted(flow.to_outside)]
    degree = [0] * (2 * n + 1)
    touching: list[list[int]] = [[] for _ in range(2 * n + 1)]
    for e, (u, v, _) in enumerate(edges):
        degree[u] += 1
        degree[v] += 1
        touching[u].append(e)
        touching[v].append(e)

    def passes_through(node: int) -> bool:  # one edge in, one out: both carry the same count
        return node != outside and degree[node] == 2

    same = _Sets(len(edges))
    for node in range(1, 2 * n + 1):
        if passes_through(node):
            same.union(*touching[node])
    chains: dict[int, _Chain] = {}
    for e, (u, v, block) in enumerate(edges):
        chain = chains.setdefault(same.find(e), _Chain(blocks=[]))
        if block is not None:
            chain.blocks.append(block)
        elif e in branches:
            chain.branch = branches[e]
        if not passes_through(u):
            chain.start = u
        if not passes_through(v):
            chain.end = v

    depth = loop_depths(flow)

    def countable(chain: _Chain) -> bool:
        return bool(chain.blocks) or chain.branch in flow.splittable

    def heat(chain: _Chain) -> int:
        if chain.blocks:
            return max(depth[b] for b in chain.blocks)
        return min(depth[b] for b in chain.branch) if chain.branch else 0

    # Chains nothing can count first (they must be in the tree), then hottest first;
    # at the same heat a block counter (no trampoline) is preferred to an edge counter.
    order = sorted(chains, key=lambda c: (countable(chains[c]), -heat(chains[c]), bool(chains[c].blocks), c))
    joined = _Sets(2 * n + 1)
    tree: list[int] = []
    counted: list[int] = []
    for c in order:
        chain = chains[c]
        if chain.start is not None and joined.union(chain.start, chain.end):
            tree.append(c)
        elif countable(chain):
            counted.append(c)
        else:
            return None  # a cycle of branches between blocks that all have several ways in and out
    if len(counted) + len(tree) > MAX_VALUES:
        return None
    value = {c: k for k, c in enumerate(counted)}
    steps = _derivation_steps(chains, tree, value, 2 * n + 1, outside)
    carriers = [chains[c].blocks[0] if chains[c].blocks else chains[c].branch for c in counted]
    block_value = [value[same.find(e)] for e in range(n)]  # edge e < n is block e's own edge
    return Plan(carriers=carriers, steps=steps, block_value=block_value)


def _derivation_steps(chains: dict[int, _Chain], tree: list[int], value: dict[int, int], nodes: int,
                      outside: int) -> list[list[tuple[int, int]]]:
    """Tree chains in an order where each follows from values already known (leaves first).

    Each tree chain is solved at the node farther from the root (the outside node where
    it is in the component): what flows in there equals what flows out. Fills ``value``.
    """
    at: list[list[int]] = [[] for _ in range(nodes)]
    for c, chain in chains.items():
        if chain.start is not None and chain.start != chain.end:
            at[chain.start].append(c)
            at[chain.end].append(c)
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
                other = chains[c].end if chains[c].start == node else chains[c].start
                if not seen[other]:
                    seen[other] = True
                    stack.append((other, c))
        solved += [(via, node) for node, via in reversed(order) if via is not None]
    steps = []
    for c, node in solved:
        # direction: +1 if the chain flows into node; the sum of (direction * value) at node is 0
        mine = 1 if chains[c].end == node else -1
        step = []
        for k in at[node]:
            if k != c:
                theirs = 1 if chains[k].end == node else -1
                step.append((value[k], -mine * theirs))
        value[c] = len(value)
        steps.append(step)
    return steps

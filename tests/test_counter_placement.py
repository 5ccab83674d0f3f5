"""Counter placement (rewriter/emit/counter_placement.py) on flow graphs with known counts.

Random procedure-shaped flow graphs are walked at random; the walk's own block and
branch counts are the answer. The plan counts some blocks and branches; the
derivation program it encodes (the format runtime_stubs/common/anvil_derive.c runs,
read here by a small reader) must give every block's walked count from those alone.
The fold program of a tool that reads only per-procedure sums (inscount) must give the
walked counts times the blocks' sizes, summed, from those values alone. The end-to-end
tests (test_inhost, test_lua, test_firmware) check the same on real binaries against
qemu's instruction trace.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from rewriter.emit.counter_placement import Plan, _plan, _plan_of_shape, compact_slots, fold_program
from rewriter.ir.flow import ProcedureFlow, loop_depths


def _varints(code: bytes) -> list[int]:
    """The LEB128 numbers of ``code`` (decoded here independently of the encoder)."""
    numbers, value, shift = [], 0, 0
    for byte in code:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            numbers.append(value)
            value, shift = 0, 0
    assert shift == 0, "program ends inside a number"
    return numbers


def _derive(code: bytes, slots: list[int], edges: list[int]) -> list[int]:
    """Run a derivation program the way anvil_derive.c does (modulo 2^64)."""
    out = list(slots)
    numbers = iter(_varints(code))
    for base in numbers:
        edge_base, ncounted, nderived, nwrites = (next(numbers) for _ in range(4))
        tmp = []
        for _ in range(ncounted):
            at = next(numbers)
            tmp.append(edges[edge_base + (at >> 1)] if at & 1 else slots[base + (at >> 1)])
        for _ in range(nderived):
            value = 0
            for _ in range(next(numbers)):
                op = next(numbers)
                value += -tmp[op >> 1] if op & 1 else tmp[op >> 1]
            tmp.append(value % (1 << 64))
        for _ in range(nwrites):
            position = next(numbers)
            out[base + position] = tmp[next(numbers)]
    return out


def _fold(code: bytes, slots: list[int], edges: list[int], procedures: int) -> list[int]:
    """Run a fold program the way anvil_fold does: per-procedure sums (modulo 2^64)."""
    sums = [0] * procedures
    numbers = iter(_varints(code))
    for proc in numbers:
        base, edge_base, nterms = (next(numbers) for _ in range(3))
        for _ in range(nterms):
            at, zigzag = next(numbers), next(numbers)
            value = edges[edge_base + (at >> 1)] if at & 1 else slots[base + (at >> 1)]
            coefficient = -(zigzag >> 1) - 1 if zigzag & 1 else zigzag >> 1
            sums[proc] = (sums[proc] + value * coefficient) % (1 << 64)
    return sums


def _random_flow(rng: random.Random, n: int) -> ProcedureFlow:
    flow = ProcedureFlow(successors=[[] for _ in range(n)])
    flow.from_outside.add(0)
    for i in range(n):
        shape = rng.random()
        if shape < 0.15:
            flow.to_outside.add(i)  # a call or return
            if i + 1 < n:
                flow.from_outside.add(i + 1)
            continue
        after = i + 1 if i + 1 < n else rng.randrange(n)
        if shape < 0.5:  # falls through or jumps
            targets = {after if rng.random() < 0.6 else rng.randrange(n)}
        elif shape < 0.97:  # a conditional branch
            targets = {rng.randrange(n), after}
        else:  # a jump table
            targets = {rng.randrange(n) for _ in range(rng.randint(3, 5))}
        flow.successors[i] = sorted(targets)
        if len(targets) == 2:
            flow.splittable.update((i, t) for t in targets)
        if rng.random() < 0.1:
            flow.to_outside.add(i)
        if not targets:
            flow.to_outside.add(i)
    for i in range(n):
        if rng.random() < 0.05:
            flow.from_outside.add(i)
    reached = {s for succ in flow.successors for s in succ}
    flow.from_outside.update(i for i in range(n) if i not in reached)
    return flow


def _every_block_can_leave(flow: ProcedureFlow) -> None:
    """Give the blocks of a region no way out leaves (a loop the program never ends, where
    a walk would never finish) a way out, as a loop that calls out."""
    leaves = set(flow.to_outside)
    grew = True
    while grew:
        grew = False
        for i, succ in enumerate(flow.successors):
            if i not in leaves and leaves.intersection(succ):
                leaves.add(i)
                grew = True
    flow.to_outside.update(i for i in range(len(flow.successors)) if i not in leaves)


def _walk(rng: random.Random, flow: ProcedureFlow,
          steps: int) -> tuple[list[int], dict[tuple[int, int], int]] | None:
    """Block counts and branch counts of a random run that enters and leaves through outside.

    After ``steps`` blocks the run goes on until it reaches a block that may leave and
    stops inside it, as a program ends inside a system call's block (which leaves).
    None if it finds none (a loop nothing leaves).
    """
    blocks = [0] * len(flow.successors)
    branches: dict[tuple[int, int], int] = {}
    entries = sorted(flow.from_outside)
    at = rng.choice(entries)
    step = 0
    while True:
        blocks[at] += 1
        step += 1
        if step >= steps and at in flow.to_outside:
            return blocks, branches
        if step > steps + 10000:
            return None
        ways = list(flow.successors[at]) + ([None] if at in flow.to_outside else [])
        way = rng.choice(ways)
        if way is None:
            at = rng.choice(entries)
        else:
            branches[(at, way)] = branches.get((at, way), 0) + 1
            at = way


def _check(plan: Plan, blocks: list[int], branches: dict[tuple[int, int], int]) -> None:
    # Only the counted slots are known to the program: the others start at zero.
    known = [blocks[i] if i in plan.carriers else 0 for i in range(len(blocks))]
    edges = [branches.get(e, 0) for e in plan.edges]
    assert _derive(plan.code(0, 0), known, edges) == blocks


def _random_plan(rng: random.Random) -> tuple[ProcedureFlow, Plan | None]:
    """A random procedure-shaped flow graph of 1-40 blocks from which every block can leave,
    and its plan (None when it has none)."""
    flow = _random_flow(rng, rng.randint(1, 40))
    _every_block_can_leave(flow)
    return flow, _plan(flow)


@pytest.mark.parametrize("seed", range(100))
def test_random_flows_derive_every_block(seed: int) -> None:
    rng = random.Random(seed)
    flow, plan = _random_plan(rng)
    if plan is None:
        return  # counted in test_most_random_flows_have_a_plan
    for _ in range(3):
        run = _walk(rng, flow, rng.randint(0, 400))
        assert run is not None, "every block can leave: the walk ends"
        _check(plan, *run)


@pytest.mark.parametrize("seed", range(60))
def test_fold_gives_each_procedures_instructions_from_the_counted_values(seed: int) -> None:
    """fold_program's coefficients: a procedure (index 1, its first counting block at slot
    5, its first edge counter 3) whose blocks have random sizes, its counting blocks in
    consecutive slots (compact_slots); from its counted slots and edge counters alone, the
    fold adds sum(walked count x size) to its sum and nothing else."""
    rng = random.Random(seed)
    flow, plan = _random_plan(rng)
    run = _walk(rng, flow, rng.randint(0, 400))
    assert run is not None
    blocks, branches = run
    sizes = [rng.randint(0, 9) for _ in blocks]
    if plan is None or len(plan.carriers) >= len(blocks):  # placement keeps every block's counter
        counted, edge_counts = set(range(len(blocks))), []
    else:
        counted, edge_counts = {c for c in plan.carriers if not isinstance(c, tuple)}, \
            [branches.get(e, 0) for e in plan.edges]
    order = sorted(counted)
    proc = SimpleNamespace(index=1, address=0x1000,
                           blocks=[SimpleNamespace(index=i, size=size, counter_increments=[
                               ("blocks", 5 + order.index(i), 1)] if i in counted else [])
                                   for i, size in enumerate(sizes)])
    code = fold_program(SimpleNamespace(procedures=[proc]), "blocks", [(proc, plan, 3)])
    slots = [0] * 5 + [blocks[i] for i in order]
    edges = [0] * 3 + edge_counts
    expected = sum(count * size for count, size in zip(blocks, sizes))
    assert _fold(code, slots, edges, 3) == [0, expected, 0]


def test_most_random_flows_have_a_plan() -> None:
    rng = random.Random(7)
    plans = [_plan(_random_flow(rng, rng.randint(2, 40))) for _ in range(300)]
    assert sum(p is not None for p in plans) > 200


def test_loop_keeps_one_counter_inside() -> None:
    # 0 -> 1 (header) -> 2 -> 3 -> 1 ; 1 -> 4 -> outside: the loop needs one counter, the
    # straight line before and after it needs one between them.
    flow = ProcedureFlow(successors=[[1], [2, 4], [3], [1], []], from_outside={0}, to_outside={4})
    plan = _plan(flow)
    assert plan is not None
    depth = loop_depths(flow)
    assert depth == [0, 1, 1, 1, 0]
    inside = [c for c in plan.carriers if not isinstance(c, tuple) and depth[c] == 1]
    assert len(plan.carriers) == 2 and len(inside) == 1


def test_call_sandwiched_blocks_are_each_counted() -> None:
    # Every block calls out and is returned to: nothing links their counts.
    flow = ProcedureFlow(successors=[[], [], []], from_outside={0, 1, 2}, to_outside={0, 1, 2})
    plan = _plan(flow)
    assert plan is not None and sorted(plan.carriers) == [0, 1, 2]


def test_cycle_of_unsplittable_branches_has_no_plan() -> None:
    # 0 and 1 each jump to 2 or 3 through a jump table (not splittable): 0-2-1-3-0 is a
    # cycle of branches no counter can sit on.
    flow = ProcedureFlow(successors=[[2, 3], [2, 3], [], []], from_outside={0, 1}, to_outside={2, 3})
    assert _plan(flow) is None
    flow.splittable = {(0, 2), (0, 3), (1, 2), (1, 3)}
    plan = _plan(flow)
    assert plan is not None and plan.edges
    rng = random.Random(3)
    for _ in range(20):
        blocks, branches = [0] * 4, {}
        for _ in range(rng.randint(0, 50)):
            a, b = rng.choice([0, 1]), rng.choice([2, 3])
            blocks[a] += 1
            blocks[b] += 1
            branches[(a, b)] = branches.get((a, b), 0) + 1
        _check(plan, blocks, branches)


def test_report_counts_block_counters(tmp_path) -> None:
    """On a real static binary most procedures get a plan: the report says how many block
    counters stayed inline, how many are derived and how many sit on branches (the counts
    themselves are checked against qemu in test_inhost)."""
    import json

    from rewriter.ir.elf_loader import load_binary
    from tests.support.run import instrument
    from tests.support.samples import build

    binary = build("sort", "Os-thumb-static")
    out = instrument(binary, "bbcount", tmp_path)
    counters = json.loads(out.with_name("prog.anvil.json").read_text())["block_counters"]
    blocks = sum(len(p.blocks) for p in load_binary(str(binary)).procedures)
    assert counters["inline"] + counters["derived"] == blocks
    assert counters["derived"] > blocks // 20 and counters["on_branches"] > 0


def test_procedure_too_large_for_the_program_has_no_plan() -> None:
    """Block positions are 15-bit operands (bit 15 marks an edge counter): a procedure
    with more blocks keeps a counter on every block rather than a wrong derivation."""
    from rewriter.emit.counter_placement import MAX_VALUES

    n = MAX_VALUES + 1
    flow = ProcedureFlow(successors=[[i + 1] for i in range(n - 1)] + [[]], from_outside={0}, to_outside={n - 1})
    assert _plan(flow) is None
    flow = ProcedureFlow(successors=[[i + 1] for i in range(n - 2)] + [[]], from_outside={0}, to_outside={n - 2})
    plan = _plan(flow)
    assert plan is not None and len(plan.carriers) == 1


def test_compact_slots_numbers_the_counting_blocks_only() -> None:
    """compact_slots: the blocks counting in the array get slots 0, 1, ... in program
    order; blocks that do not count get none; other arrays' increments are left alone."""
    def block(*increments: tuple[str, int, int]) -> SimpleNamespace:
        return SimpleNamespace(counter_increments=list(increments))

    first = [block(("blocks", 0, 1)), block(), block(("blocks", 2, 1), ("other", 2, 1))]
    second = [block(("other", 3, 1)), block(("blocks", 4, 1))]
    binary = SimpleNamespace(procedures=[SimpleNamespace(blocks=first), SimpleNamespace(blocks=second)])
    assert compact_slots(binary, "blocks") == 3
    assert [b.counter_increments for b in first + second] == [
        [("blocks", 0, 1)], [], [("blocks", 1, 1), ("other", 2, 1)], [("other", 3, 1)], [("blocks", 2, 1)]]
    assert compact_slots(SimpleNamespace(procedures=[]), "blocks") == 1  # C has no empty arrays


def test_plans_kept_by_shape_are_the_plans() -> None:
    """Plans kept by the flow's shape (decision 0116) equal the plans made anew, flow after
    flow of random shapes that repeat, and each is a copy of its own (plan_of adds loops)."""
    rng = random.Random(11)
    shapes: dict = {}
    given = []
    for _ in range(400):
        flow = _random_flow(random.Random(rng.randint(0, 40)), rng.randint(1, 12))  # (shapes repeat)
        _every_block_can_leave(flow)
        kept, fresh = _plan_of_shape(flow, shapes), _plan(flow)
        assert kept == fresh
        if kept is not None:
            assert all(kept is not other and kept.carriers is not other.carriers for other in given)
            given.append(kept)
    assert len(shapes) < 300 and len(given) > 100

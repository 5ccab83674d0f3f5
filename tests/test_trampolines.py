"""Trampolines of short patches (emit/patches.py ``place_trampolines``) against the rule
written plainly: each patch, narrow ones first, takes the first run of the pool (in the
pool's order) with room within its reach; a narrow patch takes the lowest address in a
run it can reach and leaves what is before it as a run right after that one.

``place_trampolines`` finds narrow patches' runs by bisection and skips runs with no
room left; the plain rule looks at every run for every patch. They must agree on every
trampoline, every dropped patch, the pool left and the grown segment's end.
"""

from __future__ import annotations

import copy
import random

import pytest

from rewriter.emit.patches import TRAMPOLINE, UNPLACED, Patch, Tail, place_trampolines


def _plain(patches: list[Patch], tail: Tail) -> list[Patch]:
    """The rule as one linear scan per patch (what place_trampolines must give)."""
    dropped = []
    slack = tail.pool[0] if tail.grows_segment and tail.pool else None
    pool = tail.pool
    for patch in sorted(patches, key=lambda p: not p.narrow):
        if patch.trampoline is None:
            continue
        for k, run in enumerate(pool):
            at = run[0] if not patch.narrow else max(run[0], (patch.address + 4 - 2048 + 3) & ~3)
            if at + TRAMPOLINE > run[1] or not patch.reaches(at):
                continue
            patch.trampoline = at
            if at - run[0] >= TRAMPOLINE:
                pool.insert(k + 1, [run[0], at])
            run[0] = at + TRAMPOLINE
            if run is slack:
                tail.segment_end = max(tail.segment_end, run[0])
            break
        else:
            patches.remove(patch)
            dropped.append(patch)
    return dropped


def _case(rng: random.Random) -> tuple[list[Patch], Tail]:
    """Disjoint runs in a 64 KiB text (caves, in address order but for a few) and a slack
    run after it; patches of every kind, many narrow, some in runs' reach, some not."""
    text = 0x10000
    runs = []
    at = text
    while at < text + 0x10000:
        at += rng.choice([4, 8, 24, 200, 1500, 4000])
        size = rng.choice([4, 8, 12, 16, 40, 100, 3000])
        runs.append([at, at + size])
        at += size
    if rng.random() < 0.2:
        rng.shuffle(runs)
    grows = rng.random() < 0.7
    pool = ([[at + 0x100, at + 0x100 + rng.choice([0, 16, 400])]] if grows else []) + runs
    patches = []
    for _ in range(rng.randint(1, 120)):
        address = rng.randrange(text, at + 0x200, 2)
        kind = rng.random()
        if kind < 0.5:
            patches.append(Patch(address, True, UNPLACED, narrow=True))
        elif kind < 0.9:
            patches.append(Patch(address & ~1, rng.random() < 0.8, UNPLACED))
        else:
            patches.append(Patch(address & ~3, False))  # long: no trampoline
    return patches, Tail(text, grows, pool, at)


@pytest.mark.parametrize("seed", range(300))
def test_trampolines_follow_the_plain_rule(seed: int) -> None:
    patches, tail = _case(random.Random(seed))
    expected_patches, expected_tail = copy.deepcopy((patches, tail))
    expected_dropped = _plain(expected_patches, expected_tail)
    dropped = place_trampolines(patches, tail)
    assert [(p.address, p.trampoline) for p in dropped] == [(p.address, p.trampoline) for p in expected_dropped]
    assert [(p.address, p.trampoline) for p in patches] == [(p.address, p.trampoline) for p in expected_patches]
    assert tail.pool == expected_tail.pool
    assert tail.segment_end == expected_tail.segment_end


def test_cases_meet_every_branch() -> None:
    """The random cases place narrow patches in splits and at run starts, and drop some:
    what the comparison above needs to mean something."""
    split = start = dropped = 0
    for seed in range(300):
        patches, tail = _case(random.Random(seed))
        starts = {run[0] for run in tail.pool}
        narrow = [p for p in patches if p.narrow]
        lost = place_trampolines(patches, tail)
        dropped += sum(p.narrow for p in lost)
        for p in narrow:
            if p not in lost:
                start += p.trampoline in starts
                split += p.trampoline not in starts
    assert split > 50 and start > 50 and dropped > 20

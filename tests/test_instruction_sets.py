"""Relocation's instruction-set lookup (emit/inhost.py ``_instructions_in_other_mode``)
against the rule written plainly: a dict of every instruction's set by its address (the
last procedure's where an address is in two), and for any other address the set of the
procedure around it (found by bisection over the starts).

The lookup keeps only the instructions whose set differs from what the bisection gives;
the two must agree on every address, on random programs with A32 stubs in Thumb
procedures, procedures that overlap or share an address, and starts out of order.
"""

from __future__ import annotations

import bisect
import random

import pytest

from rewriter.emit.inhost import _instructions_in_other_mode
from rewriter.ir.model import Block, Instruction, Procedure


def _program(rng: random.Random) -> list[Procedure]:
    """Procedures of 2- and 4-byte instructions, some of them in the other set, a few
    overlapping the one after them, now and then a list not sorted by address."""
    procedures = []
    at = 0x1000
    for k in range(rng.randrange(1, 40)):
        thumb = rng.random() < 0.7
        proc = Procedure(name=f"p{k}", address=at, size=0, thumb=thumb)
        instructions = []
        cur = at
        for _ in range(rng.randrange(1, 12)):
            mode = thumb if rng.random() < 0.85 else not thumb
            size = 4 if not mode or rng.random() < 0.5 else 2
            instructions.append(Instruction(cur, size, bytes(size), mode, "nop", ""))
            cur += size
        proc.blocks = [Block(at, instructions, proc)]
        proc.size = cur - at
        procedures.append(proc)
        # The next starts after this one, at its last instruction (overlap) or at this start.
        at = rng.choice([cur, cur + rng.randrange(0, 16, 2), instructions[-1].address, at])
    if rng.random() < 0.2:
        rng.shuffle(procedures)
    return procedures


@pytest.mark.parametrize("seed", range(300))
def test_same_set_as_a_dict_of_every_instruction(seed: int) -> None:
    rng = random.Random(seed)
    procedures = _program(rng)
    starts = [p.address for p in procedures]

    def mode_of_place(address: int) -> bool:
        i = bisect.bisect_right(starts, address) - 1
        proc = procedures[i] if i >= 0 else None
        return bool(proc and proc.address <= address < proc.end and proc.thumb)

    every = {ins.address: ins.thumb for proc in procedures for ins in proc.instructions()}
    other = _instructions_in_other_mode(procedures, starts, mode_of_place)
    assert len(other) <= len(every)
    low, high = min(starts) - 8, max(p.end for p in procedures) + 8
    for address in range(low, high):
        expected = every[address] if address in every else mode_of_place(address)
        got = other.get(address)
        assert (mode_of_place(address) if got is None else got) == expected, hex(address)

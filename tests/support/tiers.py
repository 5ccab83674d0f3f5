"""Which cases of a test's matrix the default run keeps: every pair of choices, not every product.

A test parametrized over several independent choices (program, board, tool, transport)
checks each choice and each way two of them meet: a fault of one choice shows whatever
the others are, a fault of two choices together shows in any case that has that pair.
All-pairs (pairwise) testing keeps a set of cases in which every pair of values of any two
choices occurs at least once; with four choices of 4, 2, 3 and 2 values that is about a
quarter of the product. The other cases are marked ``extended`` (decision 0129): deselected
by default, run by ``pytest --extended``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any


def covering(cases: Sequence[tuple], strength: int = 2) -> list[bool]:
    """For each case (a tuple of choices, one per position), whether the default run keeps
    it: greedily, the case that covers the most combinations of ``strength`` choices not yet
    covered, the earliest of equals, until every combination that occurs is covered. With
    ``strength`` 1 every value of every choice occurs once at least; with 2, every pair."""
    combos = [set(itertools.combinations(enumerate(case), min(strength, len(case)))) for case in cases]
    wanted = set().union(*combos)
    keep = [False] * len(cases)
    while wanted:
        best = max(range(len(cases)), key=lambda i: (len(combos[i] & wanted), -i))
        keep[best] = True
        wanted -= combos[best]
    return keep


def params(cases: Sequence[tuple], strength: int = 2) -> list[Any]:
    """``cases`` as pytest parameters, those ``covering`` leaves out marked ``extended``."""
    import pytest

    return [pytest.param(*case, marks=() if kept else (pytest.mark.extended,))
            for case, kept in zip(cases, covering(cases, strength))]

"""Switches of execute-only Thumb code in stripped programs (decision 0177).

clang's ``-mexecute-only`` keeps tables out of the code: a switch is a computed jump into
a row of B.W instructions (``addw rB, pc, #k; add.w rT, rB, rI, lsl #2; mov pc, rT``),
its bounds check returning from an IT block or absent where the index's range is known.
A stripped program's descent went on after the jump only to the row's first branch: the
cases after it ran in the original code, uncounted (bzip2 built so: 64 % of its
instructions; Lua 122,823 short). Now the row is read for as many B.W as follow one
another from the address the jump computes.

Oracles: the original's behaviour, qemu's trace (every instruction it runs is one the
descent found) and its count (inscount's total).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build, stripped


@pytest.mark.parametrize("tool", ["inscount", "bbcount", "cachesim"])
def test_rows_of_branches_found_and_counted(tool: str, tmp_path: Path) -> None:
    program = stripped(build("xo_switches", "clang-O2-thumb-xo"), tmp_path / "stripped")
    assert_found_and_counted(program, tool, tmp_path, b"-34808 34300\n")

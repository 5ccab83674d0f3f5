"""A Thumb-2 table branch through a register whose bound is checked in another register
(clang -O0: the index reloaded from its stack slot after the check, the table past a literal
pool). Its cases come from the table the ADR before it names, read up to the lowest case
(decision 0173); before, the jump's block had no successors and lost its count (bzip2
built with clang -O0: 6 instructions short of qemu's count).

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build


@pytest.mark.parametrize("tool", ["inscount", "bbcount"])
def test_table_branch_without_its_own_check(tool: str, tmp_path: Path) -> None:
    assert_found_and_counted(build("tbh_unchecked", "O2-thumb-dyn"), tool, tmp_path, b"sum 22500\n")

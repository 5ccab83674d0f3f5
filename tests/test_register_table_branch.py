"""A Thumb-2 table branch through a register: clang's switch at -O3, or with -mlong-calls,
makes the table's address with ``addw rA, pc, #n``, moves a constant into another register
after it, and jumps with ``tbh [rA, rI, lsl #1]`` (Lua's llex and propagatemark). TBH
still branches from its own PC.

Such a switch's cases went unfound and the whole procedure was refused ("table branch not
based on PC"): it ran in place, uncounted (a clang build of Lua: 14,231 instructions short
on a small script). samples/tbh_register_base is the switch alone, stripped.

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_table_branch_through_a_register(tool: str, tmp_path: Path) -> None:
    program = build_stripped("tbh_register_base", ["-O2", "-mthumb"])
    assert_found_and_counted(program, tool, tmp_path, b"sum 149\n")

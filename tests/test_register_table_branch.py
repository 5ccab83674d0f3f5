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

import json
from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build_stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_table_branch_through_a_register(tool: str, tmp_path: Path) -> None:
    program = build_stripped("tbh_register_base", ["-O2", "-mthumb"])
    original, pcs, binary = traced_original(program, tmp_path)
    assert original.stdout == b"sum 149\n"
    # Every case the original runs is one the descent found.
    found = {ins.address for proc in binary.procedures for ins in proc.instructions()}
    assert not [hex(pc) for pc in pcs if pc not in found]
    image = instrument(program, tool, tmp_path)
    report = json.loads(Path(f"{image}.anvil.json").read_text())
    assert not report["not_instrumented"], report["not_instrumented"]
    run = run_prog(image)
    assert_same_behaviour(original, run)
    if tool == "inscount":
        assert results(run, tool)["total"] == sum(pcs.values())

"""A real interpreter nobody here wrote: Debian's own liblua5.4.a (armhf), statically linked.

Transparency on the benchmark script for every tool; inscount exact against qemu on a
short script (the driver pins Lua's time-based hash seed, so runs are repeatable).
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

import pytest

from rewriter.emit.sites import result_names
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import LUA_BENCH, build_lua

SMALL = Path(__file__).parent / "data" / "small.lua"


@pytest.fixture(scope="module")
def lua() -> Path:
    return build_lua()


@pytest.mark.parametrize("tool", ["inscount", "bbcount", "cachesim"])
def test_lua_benchmark_transparent(lua: Path, tool: str, tmp_path: Path) -> None:
    script = str(LUA_BENCH.resolve())
    original = run_prog(place(lua, tmp_path, "orig"), [script])
    assert original.returncode == 0 and original.stdout
    inst = run_prog(instrument(lua, tool, tmp_path), [script])
    assert_same_behaviour(original, inst)
    assert results(inst, tool)


def test_lua_inscount_exact(lua: Path, tmp_path: Path) -> None:
    script = str(SMALL.resolve())
    placed = place(lua, tmp_path, "orig")
    original = run_prog(placed, [script])
    trace = trace_pcs(placed, [script], argv0="prog")
    inst = run_prog(instrument(lua, "inscount", tmp_path), [script])
    assert_same_behaviour(original, inst)
    pcs = exe_pcs(trace, placed)
    counted = results(inst, "inscount")
    assert counted["total"] == sum(pcs.values())
    # Every procedure's own count too: T32 procedures keep their sums in a register (decision 0014).
    assert json.loads((tmp_path / "inst" / "prog.anvil.json").read_text())["block_counters"]["in_register_sums"]
    binary = load_binary(str(lua))
    starts = sorted((p.address, p.end, name) for p, name in zip(binary.procedures, result_names(binary)))
    expected: dict[str, int] = {}
    for pc, n in pcs.items():
        i = bisect.bisect_right(starts, (pc, float("inf"), "")) - 1
        if i >= 0 and pc < starts[i][1]:
            expected[starts[i][2]] = expected.get(starts[i][2], 0) + n
    assert counted["procedures"] == expected

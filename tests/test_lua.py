"""A real interpreter nobody here wrote: Debian's own liblua5.4.a (armhf), statically linked.

Transparency on the benchmark script for every tool. (Instruction-exactness is not
asserted for Lua: the interpreter reads stack memory below SP that it never wrote, and
the hooks' register saves change what it finds there; see the issue note.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import LUA_BENCH, build_lua


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

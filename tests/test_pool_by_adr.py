"""A literal pool read through ``adr`` after a call that never returns, in a stripped
program with original return addresses (Debian's gnatprep, GNAT: the default name-table
entry that Namet.Name_Find copies with ``adr; ldrd``). The descent reads on past the call
and takes the pool's first word for the call's return site; the jump written there
changed the constant, and gnatprep died of a corrupt hash chain in every tool and mode.
A word an ADR points at is now data, like a literal load's.

Oracles: the original's output, and qemu's count of the instructions it runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build_stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_pool_read_by_adr_is_not_a_return_site(tool: str, tmp_path: Path) -> None:
    program = build_stripped("pool_by_adr", ["-O2", "-mthumb"])
    original, pcs, _ = traced_original(program, tmp_path, ["x"])
    assert original.stdout == b"e8287c01 00000017\n"
    image = instrument(program, tool, tmp_path)
    assert json.loads(Path(f"{image}.anvil.json").read_text())["return_addresses"] == "original"
    run = run_prog(image, ["x"])
    assert_same_behaviour(original, run)
    if tool == "inscount":
        assert results(run, tool)["total"] == sum(pcs.values())

"""A large program's later procedures relocated by a forked child (rewriter/emit/later_part.py).

The image two processes make must behave as the original and give the same results as
the image one process makes. One process is what the rewriter does when it has one core
(``taskset -c 0``), so the same input is rewritten both ways. Every other test of a
static sample or of Lua goes through two processes too, against its own oracle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


def _report(binary: Path) -> dict:
    return json.loads(Path(f"{binary}.anvil.json").read_text())


@pytest.mark.parametrize(("variant", "tool"), [("Os-thumb-static", "cachesim"), ("O2-arm-static", "inscount")])
def test_two_processes_give_what_one_gives(variant: str, tool: str, tmp_path: Path) -> None:
    exe = build("hash", variant)
    original = run_prog(place(exe, tmp_path, "orig"))

    two = instrument(exe, tool, tmp_path, slot="twop")
    assert _report(two)["relocation_processes"] == 2

    one = tmp_path / "onep" / "prog"
    one.parent.mkdir()
    subprocess.run(["taskset", "-c", "0", sys.executable, "-m", "rewriter.cli", "instrument", "--tool", tool,
                    "--format", "json", str(exe), "-o", str(one)], check=True, capture_output=True)
    assert _report(one)["relocation_processes"] == 1
    assert one.read_bytes() != two.read_bytes()  # laid out otherwise: the later part after the first's tail

    run_two, run_one = run_prog(two), run_prog(one)
    assert_same_behaviour(original, run_two)
    assert_same_behaviour(original, run_one)
    assert results(run_two, tool) == results(run_one, tool)

"""A large program's later procedures relocated by a forked child (rewriter/emit/later_part.py).

With one process (``--jobs 1``) the rewriter emits the same later part itself and lays
it out as the child would, so the image must not depend on the number of processes
(decision 0026): the two images are compared byte for byte, and the one run must
behave as the original. Only the two-process image involves the exchange of labels,
addresses and bytes between the processes; a mistake there (a label moved, a symbol
missing, the part placed elsewhere) changes its bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


def _report(binary: Path) -> dict:
    return json.loads(Path(f"{binary}.anvil.json").read_text())


@pytest.mark.parametrize(("variant", "tool", "mode"), [("Os-thumb-static", "cachesim", "inhost"),
                                                       ("O2-arm-static", "inscount", "inhost"),
                                                       ("Os-thumb-static", "bbcount", "rehost")])
def test_two_processes_give_what_one_gives(variant: str, tool: str, mode: str, tmp_path: Path) -> None:
    exe = build("hash", variant)
    two = instrument(exe, tool, tmp_path, "--mode", mode, "--jobs", "2", slot="twop")
    assert _report(two)["relocation_processes"] == 2
    one = instrument(exe, tool, tmp_path, "--mode", mode, "--jobs", "1", slot="onep")
    assert _report(one)["relocation_processes"] == 1
    assert one.read_bytes() == two.read_bytes()
    if mode == "inhost":
        run = run_prog(one)
        assert_same_behaviour(run_prog(place(exe, tmp_path, "orig")), run)
        assert results(run, tool)

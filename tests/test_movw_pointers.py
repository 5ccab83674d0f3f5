"""A32 functions whose only reference is their address built by ``movw``/``movt`` in a
fixed-address program: a static signal handler given to sigaction, a static function stored
in a table (clang's A32 code; Debian's sbcl runtime, whose SIGSEGV handler and garbage
collector routines are named so). Stripped, they were never found: the even value was not
weighed as an A32 entry as a literal pool's word is, and they ran uncounted.

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build, stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_handler_named_by_movw_movt_found_stripped(tool: str, tmp_path: Path) -> None:
    program = stripped(build("movw_pointers", "clang-O2-arm-static-lld", ["-fno-pic"]), tmp_path / "stripped")
    original, pcs, binary = traced_original(program, tmp_path, ["x"])
    assert original.stdout == b"324 84\n"
    found = {ins.address for proc in binary.procedures for ins in proc.instructions()}
    assert not [hex(pc) for pc in pcs if pc not in found]
    run = run_prog(instrument(program, tool, tmp_path), ["x"])
    assert_same_behaviour(original, run)
    if tool == "inscount":
        assert results(run, tool)["total"] == sum(pcs.values())

"""Results of a program that changes directory (decision 0100).

The counting tools open their results file when the program ends, by the name given at
rewrite time: relative names were resolved in the directory the program was in then, so a
program that changed directory (make -C, tar -C, a daemon's chdir("/")) left its counts
there, and ``anvil run`` said no results were written. The runtime now names them from
the directory the program started in.

samples/moves_away.c makes a directory, goes into it and works there. Checked for every
tool: the copy behaves as the original (the file it makes in the new directory too), the
results file is where the program started and none is in the new directory; inscount's
total equals qemu's count of the executable's instructions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


@pytest.mark.parametrize("tool", ["inscount", "bbcount", "cachesim", "memtrace"])
def test_results_where_the_program_started(tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = build("moves_away", "O2-thumb-dyn")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 0, original.stderr
    copy = run_prog(instrument(binary, tool, tmp_path))
    assert_same_behaviour(original, copy)
    assert (copy.cwd / "elsewhere" / "made-here.txt").read_bytes() == \
        (original.cwd / "elsewhere" / "made-here.txt").read_bytes()
    assert not list((copy.cwd / "elsewhere").glob(f"*.{tool}.out*"))
    got = results(copy, tool)  # prog.<tool>.out beside the program
    if tool == "inscount":
        trace = place(binary, tmp_path, "trce")
        monkeypatch.chdir(trace.parent)  # (qemu's trace runs the program where the test runs)
        assert got["total"] == sum(exe_pcs(trace_pcs(trace, [], b"", argv0="prog"), trace).values())

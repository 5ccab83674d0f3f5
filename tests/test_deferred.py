"""InHost deferred routines (emit/deferred.py): calls kept as records in a ring in the program
and run in batches, here with a signal handler making records in the middle of the program's.

samples/ticks.c takes SIGALRM every few microseconds while it mixes a table; the handler
touches memory and runs exactly 200 times wherever the signals fall, and the only code
whose work depends on their timing (wait_for_ticks) is left uninstrumented. cachesim with
one set (size = assoc * line) lets every access to a line other than the last one through
its repeat filter, so there are records in plenty and the ring is flushed many times, by
the program and by the handler. What must hold whatever the interleaving: the original's
output and status, and the access counts, equal for two timer intervals and equal to
ReHost's, whose records the host-side dispatcher runs (rehost/), not the program.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.rehost import ServerProcess, run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build

GEOMETRY = ["--opt", "size=2k,assoc=64,line=32", "--skip", "wait_for_ticks"]
INTERVALS = ["0020", "0300"]  # microseconds; as long as each other: parsing argv costs the same accesses


def _figures(found: dict) -> dict:
    """What must not depend on where the handler ran (hits and misses do)."""
    return {key: found[key] for key in ("accesses", "loads", "stores")}


@pytest.fixture(scope="module")
def server():
    with ServerProcess() as srv:
        yield srv


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "Os-thumb-static"])
def test_records_made_by_a_signal_handler(variant: str, tmp_path: Path, server: ServerProcess) -> None:
    binary = build("ticks", variant)
    original = place(binary, tmp_path, "orig")
    inst = instrument(binary, "cachesim", tmp_path, *GEOMETRY)
    assert json.loads(Path(str(inst) + ".anvil.json").read_text())["deferred_sites"] > 0
    figures = []
    for interval in INTERVALS:
        expected = run_prog(original, [interval])
        assert expected.stdout.startswith(b"ticks=200 "), expected.stdout
        run = run_prog(inst, [interval])
        assert_same_behaviour(expected, run)
        figures.append(_figures(results(run, "cachesim")))
    rehost = instrument(binary, "cachesim", tmp_path, *GEOMETRY, "--mode", "rehost", slot="rhst")
    remote, _ = run_rehost(rehost, server.address, [INTERVALS[0]])
    assert figures == [_figures(results(remote, "cachesim"))] * len(INTERVALS)


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_deferred_trace_equals_the_direct_calls(variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """memtrace, deferred, writes the same trace, byte for byte, as with every call made at
    its site (ANVIL_NO_DEFER=1, the old path): same records, same order, also where the
    program runs A32 code (the PLT of a Thumb program; a -marm one, which is not deferred)."""
    binary = build("sort", variant)
    traces = []
    for slot, no_defer in (("dfrd", ""), ("drct", "1")):
        monkeypatch.setenv("ANVIL_NO_DEFER", no_defer)
        inst = instrument(binary, "memtrace", tmp_path, slot=slot)
        deferred = json.loads(Path(str(inst) + ".anvil.json").read_text())["deferred_sites"]
        assert (deferred > 0) == (not no_defer and "thumb" in variant)
        run = run_prog(inst)
        assert run.returncode == 0, run.stderr
        traces.append((run.cwd / "prog.memtrace.out").read_bytes())
    assert len(traces[0]) > 1000 and traces[0] == traces[1]


def test_a_deferred_routine_takes_no_string() -> None:
    """The generated loop passes every argument as a word: a string (a pointer the tool's C
    declares as such) is refused when the routine is declared."""
    from rewriter.api import Arg, Tool
    from rewriter.errors import AnvilError

    with pytest.raises(AnvilError, match="deferred routine takes no STRING"):
        Tool().prototype("note", Arg.EFFADDR, Arg.STRING, deferred=True)
    assert Tool().prototype("note", Arg.EFFADDR, Arg.STRING).deferred is False

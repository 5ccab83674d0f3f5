"""Results of a program that becomes another program (decision 0101).

A program that ends by an exec (env, nice, xargs, a shell's ``exec``) runs no exit: the
counting tools, which write their results at the end, wrote none, and memtrace's buffered
records were lost. The copy now runs the end before the exec: before the jump out of an
exec function's PLT entry (a dynamic program) or its own execve/execveat system call (a
static one), by a forked copy of the process that writes them and exits: if the exec fails,
the program goes on counting and its end writes the results again.

samples/execs.c works, then execs /bin/echo (with an argument: first a missing program,
then more work and a normal end). Checked, dynamic and static, inscount and memtrace: the
copy prints what the original prints, inscount's total equals qemu's count of the
executable's instructions, memtrace's JSON trace is one document whose count is its
records'; ReHost inscount's results equal InHost's (its end, too, comes before the exec).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "Os-thumb-static"])
@pytest.mark.parametrize("args", [[], ["fail"]], ids=["exec", "failed-exec"])
def test_results_before_an_exec(variant: str, args: list[str], tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    binary = build("execs", variant)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args)
    assert original.returncode == 0, original.stderr
    copy = run_prog(instrument(binary, "inscount", tmp_path), args)
    assert_same_behaviour(original, copy)
    trace = place(binary, tmp_path, "trce")
    monkeypatch.chdir(trace.parent)
    assert results(copy, "inscount")["total"] == sum(exe_pcs(trace_pcs(trace, args, b"", argv0="prog"), trace).values())
    traced = run_prog(instrument(binary, "memtrace", tmp_path, slot="trac"), args)
    assert_same_behaviour(original, traced)
    trace = results(traced, "memtrace")  # one JSON document: the end written once
    assert trace["accesses"] == len(trace["records"]) > 0
    if not args:  # ReHost: the end before the exec too
        rehost, outcome = run_rehost_alone(instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst"),
                                           args)
        assert_same_behaviour(original, rehost)
        assert outcome.summary is not None and outcome.summary.complete, outcome.error
        assert results(rehost, "inscount") == results(copy, "inscount")

"""memtrace's file stays whole when a fatal signal ends the program in the middle of a
record (samples/killed_by_alarm.c: SIGALRM's default action ends a loop of accesses).
The runtime writes the results from the signal's handler, and that handler had
interrupted memtrace_access. On x86-64, where each access calls it directly, the JSON
ended with the half-written record, or with the output buffer written twice (a signal
between a flush's write and the buffer's restart): broken in every run. Now the end takes
back a record it interrupted, and a flush runs with the signals blocked.

Each run must behave as the original (its line, death by SIGALRM), and the trace must be
whole JSON with as many records as it says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import samples
from tests.support.rehost import cli_run
from tests.support.run import instrument, place, run_prog

RUNS = 3


@pytest.mark.parametrize("variant", ["x64-gcc-O2", "O2-thumb-dyn"])
def test_trace_whole_when_a_fatal_signal_ends_the_program(variant: str, tmp_path: Path) -> None:
    if variant.startswith("x64"):
        original = place(samples.build_x86_64("killed_by_alarm", variant), tmp_path, "orig")
        done = subprocess.run([str(original)], capture_output=True, cwd=original.parent, env={}, timeout=60)
        behaviour = (done.returncode, done.stdout)
    else:
        original = place(samples.build("killed_by_alarm", variant), tmp_path, "orig")
        run = run_prog(original, timeout=60)
        behaviour = (run.returncode, run.stdout)
    assert behaviour[1] == b"start\n" and behaviour[0] in (-14, 128 + 14), behaviour
    copy = instrument(original, "memtrace", tmp_path, slot="trce")
    out = copy.parent / "prog.memtrace.out"
    for _ in range(RUNS):
        out.unlink(missing_ok=True)
        done = cli_run(copy)
        assert (done.returncode, done.stdout) == behaviour
        got = json.loads(out.read_text())
        assert len(got["records"]) == got["accesses"] > 0

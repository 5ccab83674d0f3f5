"""A worker's signal handler that leaves by siglongjmp or never returns
(samples/handlers_leave_or_stay.c). Before decision 0143 such a handler ran whenever the
signal found its thread inside the analysis, holding the analysis lock, which it then never
gave back: the other threads waited for it at their next call, and the program hung
(siglongjmp: in most runs of cachesim and memtrace, both modes; a parked handler: in about
half). Now the runtime wraps the program's handlers and holds such a signal back until the
analysis call returns.

Each copy runs a few times (where the signal lands differs run to run): its behaviour is the
original's, and its results are whole."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import samples
from tests.support.rehost import CLI_RUN
from tests.support.run import instrument, place, run_prog

RUNS = 2

# A static program sets its actions by system calls in its own (copied) code; a dynamic
# one through the C library's functions, bound at load (-z now) or lazily (the handler is
# wrapped at the end of the next analysis call).
BUILDS = {"static": ("O2-arm-static", ()), "dynamic-now": ("O2-thumb-dyn", ("-Wl,-z,now",)),
          "dynamic-lazy": ("O2-thumb-dyn", ())}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_handlers_that_leave_or_stay_do_not_hang_the_program(build: str, tmp_path: Path) -> None:
    variant, extra = BUILDS[build]
    original = place(samples.build("handlers_leave_or_stay", variant, extra), tmp_path, "orig")
    expected = {case: run_prog(original, [case], timeout=120) for case in ("jump", "park")}
    assert expected["jump"].stdout == b"jumps 100\n" and expected["park"].returncode == 0, expected
    copies = {("cachesim", "inhost"): instrument(original, "cachesim", tmp_path, slot="cach"),
              ("memtrace", "inhost"): instrument(original, "memtrace", tmp_path, slot="trce"),
              ("cachesim", "rehost"): instrument(original, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")}
    for (tool, mode), copy in copies.items():
        for case in ("jump", "park"):
            for _ in range(RUNS):
                out = copy.parent / f"prog.{tool}.out"
                out.unlink(missing_ok=True)
                done = subprocess.run(CLI_RUN + [str(copy), case], capture_output=True, cwd=copy.parent, env={},
                                      timeout=300)
                want = expected[case]
                assert (done.returncode, done.stdout) == (want.returncode, want.stdout), (tool, mode, case, done)
                got = json.loads(out.read_text())  # whole
                if tool == "memtrace":
                    assert len(got["records"]) == got["accesses"] > 0, (mode, case)
                else:
                    assert got["hits"] + got["misses"] == got["accesses"] > 0, (mode, case)


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_handlers_read_back_as_set(build: str, tmp_path: Path) -> None:
    """samples/handler_read_back.c reads back the handlers it set (sigaction's old action,
    signal's return value), puts a saved action back and chains to a saved handler: its
    copies print the same comparisons, so the wrapper entries the kernel was given never
    show (a static program's sigaction copies the kernel's old action out: it was the
    wrapper's entry before the hook after the system call)."""
    variant, extra = BUILDS[build]
    original = place(samples.build("handler_read_back", variant, extra), tmp_path, "orig")
    expected = run_prog(original)
    assert expected.returncode == 0 and b": 0" not in expected.stdout and b"value 4242" in expected.stdout, expected
    for tool, mode in (("cachesim", "inhost"), ("cachesim", "rehost")):
        copy = instrument(original, tool, tmp_path, "--mode", mode, slot=mode[:4])
        done = subprocess.run(CLI_RUN + [str(copy)], capture_output=True, cwd=copy.parent, env={}, timeout=300)
        assert (done.returncode, done.stdout) == (expected.returncode, expected.stdout), (mode, done)

"""A program that ends while its other threads still run instrumented code
(samples/exit_while_threads_work.c: three workers make cache misses for ever, main calls
exit). The end is reached outside any call site (a dynamic program's ``_exit``, which the
runtime leads to the end; x86-64's exit_group entry), and it holds the analysis lock the
call sites take (rewriter/emit/sites.py): before, the workers' routines ran during the end.
ReHost's stream then had records after its end record ("N bytes after the end record",
"unknown site id": no results, 19 of 20 runs on x86-64, 6 of 8 on ARM), and memtrace's
JSON was cut by the workers' records (4 of 5 runs on x86-64, 4 of 4 on ARM).

Each copy runs several times (the workers' progress at the end differs run to run): its
behaviour is the original's, memtrace's file is whole JSON holding as many records as it
says, and ReHost's cachesim results arrive, their counts adding up."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import samples
from tests.support.rehost import cli_run
from tests.support.run import instrument, place, run_prog

RUNS = 3


def _original(variant: str, tmp_path: Path) -> tuple[Path, tuple]:
    if variant.startswith("x64"):
        binary = place(samples.build_x86_64("exit_while_threads_work", variant), tmp_path, "orig")
        done = subprocess.run([str(binary)], capture_output=True, cwd=binary.parent, env={}, timeout=120)
        return binary, (done.returncode, done.stdout, done.stderr)
    binary = place(samples.build("exit_while_threads_work", variant), tmp_path, "orig")
    run = run_prog(binary, timeout=120)
    return binary, (run.returncode, run.stdout, run.stderr)


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "x64-gcc-O2"])
def test_results_whole_when_the_program_ends_while_threads_work(variant: str, tmp_path: Path) -> None:
    original, behaviour = _original(variant, tmp_path)
    assert behaviour[0] == 0 and b"3 workers started" in behaviour[1], behaviour
    trace = instrument(original, "memtrace", tmp_path, slot="trce")
    cache = instrument(original, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    for _ in range(RUNS):
        for copy, tool in ((trace, "memtrace"), (cache, "cachesim")):
            out = copy.parent / f"prog.{tool}.out"
            out.unlink(missing_ok=True)
            done = cli_run(copy)
            assert (done.returncode, done.stdout, done.stderr) == behaviour, tool
            assert out.exists(), f"{tool}: no results"
            got = json.loads(out.read_text())  # whole JSON: nothing after the end
            if tool == "memtrace":
                assert len(got["records"]) == got["accesses"] > 0
                assert {kind for *_, kind in got["records"]} == {"L", "S"}
            else:
                assert got["hits"] + got["misses"] == got["accesses"] == got["loads"] + got["stores"]
                assert got["misses"] > 0

"""A worker's signal handler that leaves by siglongjmp or never returns
(samples/handlers_leave_or_stay.c). Before decision 0143 such a handler ran whenever the
signal found its thread inside the analysis, holding the analysis lock, which it then never
gave back: the other threads waited for it at their next call, and the program hung
(siglongjmp: in most runs of cachesim and memtrace, both modes; a parked handler: in about
half). Now the runtime wraps the program's handlers and holds such a signal back until the
analysis call returns.

Each copy runs once in each case (where the signal lands differs run to run: before the
change most runs hung, so three copies in six builds show it): its behaviour is the
original's, and its results are whole."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import samples
from tests.support.rehost import CLI_RUN
from tests.support.run import instrument, place

RUNS = 1

# A static program sets its actions by system calls in its own (copied) code; a dynamic
# one through the C library's functions, bound at load (-z now) or lazily (the handler is
# wrapped at the end of the next analysis call). ARM (run under qemu-arm) and x86-64
# (natively), each run through ``anvil run``.
BUILDS = {"static": ("O2-arm-static", ()), "dynamic-now": ("O2-thumb-dyn", ("-Wl,-z,now",)),
          "dynamic-lazy": ("O2-thumb-dyn", ()),
          # Bound at load without RELRO (Debian 13's toybox): the GOT shares its pages with
          # writable data, which must stay writable once a slot is wrapped.
          "dynamic-now-norelro": ("O2-thumb-dyn", ("-Wl,-z,now", "-Wl,-z,norelro")),
          "x86-64-static": ("x64-gcc-O2-static", ()), "x86-64-dynamic-now": ("x64-gcc-O2-now", ()),
          "x86-64-dynamic-lazy": ("x64-gcc-O2", ())}


def _build(sample: str, build: str, tmp_path: Path) -> Path:
    """``sample`` built as ``build`` says, at tmp_path/orig/prog."""
    variant, extra = BUILDS[build]
    if variant.startswith("x64-"):
        return place(samples.build_x86_64(sample, variant), tmp_path, "orig")
    return place(samples.build(sample, variant, extra), tmp_path, "orig")


def _run(program: Path, *args: str) -> subprocess.CompletedProcess:
    """``program`` run by ``anvil run`` (argv[0] 'prog', no environment), in its directory."""
    return subprocess.run(CLI_RUN + [str(program), *args], capture_output=True, cwd=program.parent, env={},
                          timeout=300)


# Bound at load time in the extended tier: lazy binding has the handlers' first calls go
# through the dynamic linker's resolver too, the harder case (decision 0185).
@pytest.mark.parametrize("build", [pytest.param(b, marks=pytest.mark.extended) if "-now" in b else b
                                   for b in sorted(BUILDS)])
def test_handlers_that_leave_or_stay_do_not_hang_the_program(build: str, tmp_path: Path) -> None:
    original = _build("handlers_leave_or_stay", build, tmp_path)
    expected = {case: _run(original, case) for case in ("jump", "park")}
    assert expected["jump"].stdout == b"jumps 100\n" and expected["park"].returncode == 0, expected
    copies = {("cachesim", "inhost"): instrument(original, "cachesim", tmp_path, slot="cach"),
              ("memtrace", "inhost"): instrument(original, "memtrace", tmp_path, slot="trce"),
              ("cachesim", "rehost"): instrument(original, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")}
    for (tool, mode), copy in copies.items():
        for case in ("jump", "park"):
            for _ in range(RUNS):
                out = copy.parent / f"prog.{tool}.out"
                out.unlink(missing_ok=True)
                done = _run(copy, case)
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
    original = _build("handler_read_back", build, tmp_path)
    expected = _run(original)
    assert expected.returncode == 0 and b": 0" not in expected.stdout and b"value 4242" in expected.stdout, expected
    for tool, mode in (("cachesim", "inhost"), ("cachesim", "rehost")):
        copy = instrument(original, tool, tmp_path, "--mode", mode, slot=mode[:4])
        done = _run(copy)
        assert (done.returncode, done.stdout) == (expected.returncode, expected.stdout), (mode, done)

"""Faults in the copy, seen by the program's handler where the original raised them (decision 0202).

samples/fault_unwind.c reads a page it cannot read: its SIGSEGV handler (with siginfo)
counts the frames ``backtrace()`` unwinds through the signal frame, says where in the
faulting function the fault was, makes the page readable and returns, so that the load
runs again; a handler set by ``signal()`` (a frame without siginfo) does the same for a
store. In a copy the handler was given the copy's PC, for which the program's unwind
index has no row: ``backtrace()`` stopped at the signal frame (2 frames of 7) and the PC
was not in the faulting function; static and dynamic, A32 and Thumb. gccgo's ``recover`` of a nil dereference and GNAT's
exceptions raised by faults unwind so too.

Oracle: the original's behaviour (its output names what the handlers saw).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


def _built(variant: str) -> Path:
    """The sample with unwind tables for its C functions (Debian's compilers add none), as a
    C program that walks its stack is built."""
    return build("fault_unwind", variant, ["-funwind-tables"])


def _index_address(program: Path) -> int:
    with program.open("rb") as f:
        return next(s["p_vaddr"] for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_ARM_EXIDX")


# A dynamic program's handlers return through Anvil's restorers, which the new index
# describes; a static one's through its C library's own, whose system call is hooked.
@pytest.mark.parametrize(("variant", "tool"), [("O2-thumb-dyn", "inscount"), ("O2-thumb-dyn", "cachesim"),
                                               ("O2-arm-static", "cachesim"), ("Os-thumb-static", "inscount")])
def test_handlers_see_the_faults_where_the_original_raised_them(variant: str, tool: str, tmp_path: Path) -> None:
    program = _built(variant)
    original = run_prog(place(program, tmp_path, "orig"))
    lines = original.stdout.decode().splitlines()
    assert original.returncode == 0 and lines[0].startswith("fault 0: 7 frames, at read_words+0x")
    assert lines[1:] == ["fault 1: 5 frames", "sums 5 30"]
    copy = instrument(program, tool, tmp_path)
    run = run_prog(copy)
    assert_same_behaviour(original, run)
    assert results(run, tool)
    if "dyn" in variant:
        assert _index_address(copy) != _index_address(program)  # the index with the restorers' rows


def test_handlers_see_the_faults_in_rehost(tmp_path: Path, rehost_server: str) -> None:
    program = _built("O2-thumb-dyn")
    original = run_prog(place(program, tmp_path, "orig"))
    copy = instrument(program, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    run, outcome = run_rehost(copy, rehost_server, [])
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error

"""Inline counters that an interrupt handler interrupts while it updates the same counter.

samples/boards/tickshare.c calls mix() from its main loop and from the SysTick handler,
which fires every 100 cycles and runs exactly TARGET times, so mix() runs exactly
CALLS + TARGET times however the ticks fall. Run with ``--icount 0`` QEMU delivers the
tick between any two instructions (virtual time advances by instructions and a
translation block ends at the deadline), so ticks land inside mix()'s counter update
too; a plain load/add/store there loses the handler's increment. The known answer is
computed another way: mix() runs one block, so its instruction count is its calls times
that block's instructions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support.boards import anvil_cli, build_firmware, instrument, run_firmware

CALLS, TARGET = 4000, 300  # tickshare.c's


@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an386"])
def test_counters_in_code_the_handler_shares(board: str, tmp_path: Path) -> None:
    image = build_firmware("tickshare", board, "-O2")
    expected = run_firmware(image, board)
    assert re.match(rb"ticks=%d " % TARGET, expected[0]), expected
    mix = next(p for p in load_binary(str(image)).procedures if p.name == "mix")
    assert mix.blocks[0].instructions[-1].is_return  # one block runs (a padding NOP may follow)
    out = instrument(image, "inscount", tmp_path / "fw", "--skip", "wait_for_ticks")
    run = anvil_cli("run", "-q", "--board", board, "--icount", "0", out.name, cwd=out.parent, timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
    got = json.loads((out.parent / "fw.inscount.out").read_text())
    assert got["procedures"]["mix"] == (CALLS + TARGET) * len(mix.blocks[0].instructions)


def test_code_handlers_may_run() -> None:
    """The procedures found reachable from the vector table's handlers (their counters are
    the interrupt-safe ones): SysTick_Handler and mix(), which it calls, and the default
    handler; not main or the reset handler, which only the thread runs."""
    from rewriter.ir.flow import interrupt_code

    binary = load_binary(str(build_firmware("tickshare", "mps2-an385", "-O2")))
    names = {p.name for p in binary.procedures if p.address in interrupt_code(binary)}
    assert {"SysTick_Handler", "mix"} <= names
    assert not names & {"main", "Reset_Handler", "printf"}


@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an386"])
def test_calls_under_interrupts(board: str, tmp_path: Path) -> None:
    """cachesim InHost on tickmem, whose SysTick handler accesses memory (so calls the model
    and bumps the repeat filter's count) between any two instructions (``--icount 0``).
    Loads and stores do not depend on the cache's geometry: with a geometry where the
    handler's accesses hit and one where they miss, they equal those of a run where
    interrupts come only between translation blocks and the handler never hits (one
    set). Before call sites masked interrupts, the handler's call overwrote the frames
    of the call it interrupted and its count was lost: 27002/15599/26950 loads or stores
    against 27010/15607."""
    image = build_firmware("tickmem", board, "-O2")
    expected = run_firmware(image, board)
    figures = []
    for geometry, icount in (("size=2k,assoc=64,line=32", []), ("size=16k,assoc=8,line=64", ["--icount", "0"]),
                             ("size=1k,assoc=2,line=32", ["--icount", "0"])):
        out = instrument(image, "cachesim", tmp_path / geometry / "fw", "--opt", geometry, "--skip", "wait_for_ticks")
        run = anvil_cli("run", "-q", "--board", board, *icount, out.name, cwd=out.parent, timeout=120)
        assert (run.stdout, run.returncode) == expected, run.stderr
        got = json.loads((out.parent / "fw.cachesim.out").read_text())
        figures.append((got["loads"], got["stores"]))
    assert figures[1] == figures[0] and figures[2] == figures[0], figures


CALLS_A, CALLS_B = 3000, 2000  # tasks.c's


@pytest.mark.parametrize("board, mode", [("mps2-an385", "inhost"), ("mps2-an386", "inhost"),
                                         ("mps2-an385", "rehost")])
def test_counters_in_tasks_a_context_switch_preempts(board: str, mode: str, tmp_path: Path) -> None:
    """samples/boards/tasks.c: two tasks, switched by PendSV every 100 cycles (``--icount 0``:
    between any two instructions), both call mix(), which runs exactly CALLS_A + CALLS_B
    times. No interrupt handler calls mix(), but a task stopped inside mix()'s counter update
    resumes after the other task's updates of the same counter: a plain load/add/store loses
    them, as it would in an RTOS's tasks (decision 0085)."""
    image = build_firmware("tasks", board, "-O2")
    # The original runs as the copy does, with --icount 0: on QEMU's real-time clock a task
    # got a few instructions in between interrupts every 4 microseconds, and on a loaded
    # machine the run outlived its 60 s.
    original = anvil_cli("run", "-q", "--board", board, "--icount", "0", str(image), cwd=tmp_path, timeout=120)
    expected = (original.stdout, original.returncode)
    assert expected == (b"a=a8590d72 b=3c6bf220 switched\n", 0), original.stderr
    mix = next(p for p in load_binary(str(image)).procedures if p.name == "mix")
    assert mix.blocks[0].instructions[-1].is_return
    out = instrument(image, "inscount", tmp_path / "fw", "--skip", "idle,wait_for_b", "--mode", mode)
    run = anvil_cli("run", "-q", "--board", board, "--icount", "0", out.name, cwd=out.parent, timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
    got = json.loads((out.parent / "fw.inscount.out").read_text())
    assert got["procedures"]["mix"] == (CALLS_A + CALLS_B) * len(mix.blocks[0].instructions)

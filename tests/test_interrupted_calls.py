"""Signals that interrupt a system call of the copy, seen by the handler where the original
made the call (decision 0203).

musl's thread cancellation (and glibc's from 2.41, Debian 13's) is a handler that compares the PC it
interrupted with labels around its cancellable system call, and moves it to a label of its
own where it is between them. In the copy the PC was the copy's: the handler never found
it there, and a thread blocked in ``read`` or ``pthread_cond_wait`` was never cancelled
(samples/cancel_blocked.c built static with musl or with glibc 2.41: the copy hung). samples/interrupted_calls.c
does the same with a call of its own, in A32 and Thumb, static and dynamic, with and
without SA_RESTART (the PC at the SVC, or just past it); and both on x86-64.

Oracles: the original's behaviour (its output says where its handler found the PC, and
its exit status says whether that was where it should be), and QEMU's count of the
instructions the copy runs in place: the handler's label is an original address, where
the copy goes on, uncounted, until it reaches copied code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_native, run_prog
from tests.support.samples import build, build_musl, build_static_with_glibc_of, symbol_span
from tests.test_x86_64_musl import _build as build_musl_x86_64


@pytest.mark.parametrize(("variant", "tool"), [("O2-thumb-dyn", "inscount"), ("O0-arm-dyn", "cachesim"),
                                               ("O2-arm-static", "inscount"), ("Os-thumb-static", "cachesim")])
def test_handlers_find_the_call_where_the_original_made_it(variant: str, tool: str, tmp_path: Path) -> None:
    program = build("interrupted_calls", variant)
    original = run_prog(place(program, tmp_path, "orig"))
    assert original.returncode == 0, original.stdout  # the handler found the PC at the call, 4 times each way
    assert original.stdout.decode().splitlines()[-1] == "raised: inside 4, at its end 4, elsewhere 1"
    run = run_prog(instrument(program, tool, tmp_path), timeout=60)  # (the copy blocked for ever)
    assert_same_behaviour(original, run)
    assert results(run, tool)


def test_counts_around_the_handlers_label(tmp_path: Path) -> None:
    """The copy counts every instruction QEMU counts but those of the label the handler moved
    the PC to (the original's code, run in place: two instructions, four times)."""
    program = build("interrupted_calls", "O2-thumb-dyn")
    placed = place(program, tmp_path, "orig")
    executed = exe_pcs(trace_pcs(placed), placed)
    start, end = symbol_span(program, "cp_read")
    label, _ = symbol_span(program, "cp_cancel")
    in_place = sum(n for pc, n in executed.items() if label <= pc < end)
    assert in_place == 8
    run = run_prog(instrument(program, "inscount", tmp_path), timeout=60)
    counted = results(run, "inscount")["procedures"]
    assert counted["cp_read"] == sum(n for pc, n in executed.items() if start <= pc < end) - in_place
    assert counted["main"] == sum(n for pc, n in executed.items() if pc in _span(program, "main"))


def _span(program: Path, name: str) -> range:
    start, end = symbol_span(program, name)
    return range(start, end)


def test_interrupted_calls_in_rehost(tmp_path: Path, rehost_server: str) -> None:
    program = build("interrupted_calls", "O2-thumb-dyn")
    original = run_prog(place(program, tmp_path, "orig"))
    copy = instrument(program, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    run, outcome = run_rehost(copy, rehost_server, [])
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error


@pytest.mark.parametrize(("library", "tool"), [("musl", "inscount"), ("musl", "cachesim"),
                                               ("glibc-trixie", "inscount")])
def test_c_libraries_cancel_threads_blocked_in_the_copy(library: str, tool: str, tmp_path: Path) -> None:
    """Threads blocked in ``read`` and ``pthread_cond_wait``, cancelled, three times over:
    static, with musl, and with Debian 13's glibc 2.41 (whose cancellation works as musl's)."""
    if library == "musl":
        program = build_musl("cancel_blocked", "static")
    else:
        program = build_static_with_glibc_of("cancel_blocked", "trixie")
    original = run_prog(place(program, tmp_path, "orig"))
    assert original.returncode == 0
    assert original.stdout.decode().splitlines() == [
        f"round {n}: reader cancelled, waiter cancelled, cleaned {11 * (n + 1)}" for n in range(3)]
    run = run_prog(instrument(program, tool, tmp_path), timeout=60)
    assert_same_behaviour(original, run)
    assert results(run, tool)


@pytest.mark.parametrize(("build", "tool"), [("x64-gcc-O2-static", "inscount"), ("x64-gcc-O2", "cachesim"),
                                             ("musl-static", "inscount")])
def test_x86_64_handlers_find_the_call_where_the_original_made_it(build: str, tool: str, tmp_path: Path) -> None:
    """The same on x86-64, natively: samples/interrupted_calls.c (glibc static, and dynamic
    and lazily bound), and musl's cancellation of blocked threads (samples/cancel_blocked.c)."""
    if build == "musl-static":
        program = build_musl_x86_64("cancel_blocked", "static", tmp_path / "cancel_blocked-musl-static")
    else:
        program = samples.build_x86_64("interrupted_calls", build)
    original = run_native(place(program, tmp_path, "orig"))
    assert original.returncode == 0, original
    copy = instrument(program, tool, tmp_path)
    run = run_native(copy)  # (the copies blocked for ever)
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
    assert (copy.parent / f"prog.{tool}.out").is_file()

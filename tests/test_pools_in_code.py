"""Literal pools a stripped program's descent takes for code (decision 0048).

samples/pools: ``die`` calls a function that never returns, which nothing in the code
shows, so the descent decodes the words after each call of it as code. After ``named``'s
call they read as a call into the middle of ``victim``'s 32-bit multiply, and run on into
``hidden``, which nothing names (main computes its address) and which runs where it is,
reading the word after its own call of ``die``: its literal pool.

- A call decoded past such a call must not cut code reached surely (``victim`` was cut
  and its copy ran into the patched original: a wrong result).
- No jump may be written over bytes code reads as data: the return site of ``hidden``'s
  call of ``die`` is its pool, and ``hidden``, running in place, read the jump.

The oracles: the original program's output and qemu's trace of it (every instruction
of the executable it runs is one the descent found, and inscount counts no more).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_descent_found, assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build_stripped

FLAGS = ["-O2", "-mthumb"]


@pytest.fixture(scope="module")
def program() -> Path:
    return build_stripped("pools", FLAGS)


def test_descent_finds_what_runs_and_not_the_pool_call(program: Path, tmp_path: Path) -> None:
    placed = place(program, tmp_path, "orig")
    trace = trace_pcs(placed, [], b"", argv0="prog")
    assert trace.stdout == b"victim=16 named=7 hidden=0x12345678\n"
    binary = load_binary(str(program))
    assert_descent_found(binary, exe_pcs(trace, placed))
    procs = binary.procedures
    # No procedure starts inside an instruction another one decoded (the pool's "call").
    inside = {ins.address + 2 for proc in procs for ins in proc.instructions() if ins.size == 4}
    assert not [hex(p.address) for p in procs if p.address in inside]


@pytest.mark.parametrize("tool, extra", [("inscount", ()), ("inscount", ("--return-addresses", "original")),
                                         ("cachesim", ("--return-addresses", "original"))])
def test_pools_stay_intact(program: Path, tool: str, extra: tuple[str, ...], tmp_path: Path) -> None:
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, [])
    assert original.stdout == b"victim=16 named=7 hidden=0x12345678\n"
    image = instrument(program, tool, tmp_path, *extra)
    run = run_prog(image, [])
    assert_same_behaviour(original, run)
    if extra:
        report = json.loads(Path(str(image) + ".anvil.json").read_text())
        assert report["return_sites"]["relocated"] >= 1  # the pool's return site got no jump
    if tool == "inscount":
        qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
        assert 0 < results(run, tool)["total"] <= qemu_total


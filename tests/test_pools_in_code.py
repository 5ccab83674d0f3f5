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

samples/pool_after_reporter (decision 0153): words after calls of an error reporter that
returns for some levels (so the descent reads on past it) read as branches into the middle
of main's 32-bit instructions, in a block that loads them as literals past a call, and in a
block that reads them through ``adr`` and an index. No jump may be written inside an
instruction that runs.

The oracles: the original program's output and qemu's trace of it (every instruction
of the executable it runs is one the descent found, and inscount counts no more).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

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
    # hidden's pool word, which hidden (running in place) reads, got no jump: once a return
    # site's (decision 0048), a word its load past the call of die names as data now (0153).
    pool = program.read_bytes().index((0x12345678).to_bytes(4, "little"))
    assert image.read_bytes()[pool:pool + 4] == (0x12345678).to_bytes(4, "little")
    if tool == "inscount":
        qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
        assert 0 < results(run, tool)["total"] <= qemu_total



def _text(path: Path) -> dict[int, int]:
    """Each byte of ``path``'s executable segments, by address."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        out = {}
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1:
                out.update(zip(range(seg["p_vaddr"], seg["p_vaddr"] + seg["p_filesz"]), seg.data()))
        return out


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_no_jump_inside_an_instruction_that_runs(tool: str, tmp_path: Path) -> None:
    program = build_stripped("pool_after_reporter", FLAGS)
    placed = place(program, tmp_path, "orig")
    trace = trace_pcs(placed, [], b"", argv0="prog")
    assert trace.stdout == b"value 42 7\n"
    executed = exe_pcs(trace, placed)
    binary = load_binary(str(program))
    # The literal block's words are data (its loads say so) and name no entry; the table's
    # word names one, which keeps its bytes.
    entries = {proc.address for proc in binary.procedures}
    original = _text(program)
    wide = {pc for pc in executed if original[pc + 1] >> 3 in (0b11101, 0b11110, 0b11111)}  # (all Thumb)
    inside = {pc + 2 for pc in wide} & entries
    assert len(wide) >= 3 and len(inside) == 1 and inside == binary.straddled_entries, sorted(map(hex, entries))

    image = instrument(program, tool, tmp_path)
    run = run_prog(image, [])
    assert_same_behaviour(run_prog(placed, []), run)
    # Where a run of changed bytes starts, a jump was written: at an entry, over the
    # instructions after it (which run from the copy), never from inside one that runs.
    copy = _text(image)
    starts = {a for a, byte in original.items() if copy.get(a) != byte and copy.get(a - 1) == original.get(a - 1)}
    broken = [hex(pc) for pc in wide if pc + 2 in starts]
    assert not broken, f"jumps written inside instructions that run: {broken}"
    if tool == "inscount":
        assert 0 < results(run, tool)["total"] <= sum(executed.values())

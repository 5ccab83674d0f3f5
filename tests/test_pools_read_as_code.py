"""A stripped program's literal pool read as code must not name an entry that cuts real code
(decisions 0189 and 0191).

A literal pool after a call of a function that throws (or aborts) is read as code when the
callee returns on another path; a word of it that reads as a conditional branch names an
entry as strong as the function it lands in. In a stripped static D program one landed in
the middle of a tail call's B.W, whose second halfword reads as an IT instruction: the
function after it was decoded inside that IT block, its copy ran conditionally and every
copy crashed. (In a stripped static gccgo program such a pool of doubles read as a NEON
instruction on d16, so the hooks could not park registers there.)

samples/pools_read_as_code.c lays that out in Thumb assembly, built static and stripped two
ways: the literal loaded past another call than the one the pool follows, no unwind rows
(only the load tells: 0191); and every function with a row of ``.ARM.exidx``, the pool before
the load that reaches back to it (only the index tells: 0189). The copies print what the
original prints and inscount counts what qemu runs.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, stripped, symbol_span

VARIANT = "Os-thumb-static"
BUILDS = {"load-past-another-call": [], "indexed": ["-DINDEXED"]}


def _words(binary: Path, start: int, end: int) -> dict[int, int]:
    """The aligned words of ``binary``'s loaded image in [start, end), by address."""
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        for segment in elf.iter_segments():
            first, size = segment["p_vaddr"], segment["p_filesz"]
            if segment["p_type"] == "PT_LOAD" and first <= start < first + size:
                start = (start + 3) & ~3
                f.seek(segment["p_offset"] + start - first)
                data = f.read(end - start)
                whole = data[:len(data) // 4 * 4]
                return {start + 4 * k: word for k, (word,) in enumerate(struct.iter_unpack("<I", whole))}
    raise AssertionError(f"{start:#x} is not in {binary}")


def _pool(binary: Path) -> int:
    """The address of bt_literal's literal: the word that reads as ``bgt.n`` to the middle of
    bt_next's B.W, whose second halfword reads as ``ittet gt`` (else this tests nothing)."""
    nxt = symbol_span(binary, "bt_next")[0]
    words = _words(binary, nxt, nxt + 8)
    assert words[nxt] >> 16 == 0xF7FF and words[nxt + 4] & 0xFFFF == 0xBFC5
    pools = [at for at, word in _words(binary, *symbol_span(binary, "bt_literal")).items()
             if (word & 0xFF00) == 0xDC00 and at + 4 + 2 * (word & 0xFF) == nxt + 4]
    assert len(pools) == 1, pools
    return pools[0]


@pytest.mark.parametrize("kind", sorted(BUILDS))
def test_the_pool_is_no_code_and_the_copies_behave(kind: str, tmp_path: Path) -> None:
    built = build("pools_read_as_code", VARIANT, BUILDS[kind])
    pool = _pool(built)
    program = stripped(built, tmp_path / "stripped")
    if kind != "indexed":  # (read first, the indexed build's pool is code to the descent: the index rules)
        code = {ins.address for proc in load_binary(str(program)).procedures for ins in proc.instructions()}
        assert not code & set(range(pool, pool + 4)), "the literal was read as code"
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, [])
    assert original.returncode == 0 and original.stdout.startswith(b"literal 0xdc"), original
    for tool in ("inscount", "cachesim"):
        copy = run_prog(instrument(program, tool, tmp_path, slot=tool[:4]), [])
        assert_same_behaviour(original, copy)
        if tool == "inscount":
            qemu = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
            assert results(copy, tool)["total"] == qemu

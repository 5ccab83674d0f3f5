"""Numbers in a stripped program's tables that read as Thumb code addresses (decision 0186).

A stripped fixed-address program's constant tables hold numbers that, odd and inside the
code, read as Thumb addresses: discovery takes them as weak (DOUBTFUL) entries, and drops
one that cuts an instruction of code reached by flow. Code reached only past a call of a
procedure not known to return kept such an entry (a literal pool after a call of an error
routine reads as code), and the entry's jump was written over the middle of an
instruction there. When the callee is "not known to return" only because another number
cut it short, that code is the caller's own: its copy ran on into the broken instruction
(a static musl busybox, every applet that allocates: SIGSEGV).

samples/numbers_in_tables.c is built once to find two places, then again with them in a
table: W1 cuts ``helper`` at an instruction boundary in its middle, W2 points into the
middle of the first 32-bit instruction after ``work``'s call of ``helper``. The stripped
build's copies behave as the original, and inscount counts what qemu runs.
"""

from __future__ import annotations

from pathlib import Path

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, stripped, symbol_span

VARIANT = "Os-thumb-static"


def _code(binary: Path, start: int, end: int) -> list[capstone.CsInsn]:
    """The Thumb instructions of [start, end) in ``binary``."""
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        text = next(s for s in elf.iter_sections() if s["sh_addr"] <= start < s["sh_addr"] + s["sh_size"])
        data = text.data()[start - text["sh_addr"]:end - text["sh_addr"]]
    decoder = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB)
    decoder.detail = True
    return list(decoder.disasm(data, start))


def _places(binary: Path) -> tuple[int, int]:
    """(W1, W2) for ``binary``: an instruction boundary in the middle of helper, and the
    middle of the first 32-bit instruction after work's call of helper, each | 1."""
    helper = symbol_span(binary, "helper")
    inside = _code(binary, *helper)
    w1 = inside[len(inside) // 2].address | 1
    work = _code(binary, *symbol_span(binary, "work"))
    call = next(k for k, ins in enumerate(work) if ins.mnemonic == "bl" and ins.operands[0].imm == helper[0])
    wide = next(ins for ins in work[call + 1:] if ins.size == 4)
    return w1, (wide.address + 2) | 1


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_numbers_cutting_a_callee_and_its_callers_instruction(tool: str, tmp_path: Path) -> None:
    first = build("numbers_in_tables", VARIANT)
    w1, w2 = _places(first)
    second = build("numbers_in_tables", VARIANT, [f"-DW1={w1:#x}u", f"-DW2={w2:#x}u"])
    for name in ("helper", "work"):  # a table's numbers move no code
        assert symbol_span(second, name) == symbol_span(first, name), name
    program = stripped(second, tmp_path / "stripped")
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, ["300"])
    assert original.returncode == 0 and original.stdout.startswith(b"work "), original
    copy = run_prog(instrument(program, tool, tmp_path, slot=tool[:4]), ["300"])
    assert_same_behaviour(original, copy)
    if tool == "inscount":
        qemu = sum(exe_pcs(trace_pcs(placed, ["300"], b"", argv0="prog"), placed).values())
        assert results(copy, tool)["total"] == qemu

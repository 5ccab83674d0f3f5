"""Firmware entries with less room than a 4-byte branch (decision 0081).

samples/boards/entries.c calls, through a table in flash, ``twist``, whose second
instruction (2 bytes in) a constant in .rodata names as a Thumb code address, and
``nothing``, one 2-byte instruction. Neither entry has room for a direct branch to its
copy; each gets a B.N to a trampoline in a cave of a relocated procedure nearby. Before,
both got no jump, and the calls through the table ran the original code, uncounted.

Oracles: inscount's total and its count of each of those procedures equal the
instructions ``qemu-system-arm -singlestep`` executes in the original (in all, and at
those procedures' addresses); the copy prints what the original prints. The report names
no entry left without a jump, and the instruction a code pointer names (twist + 2) keeps
its bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import trace_firmware
from tests.support.boards import BOARDS, build_firmware, instrument, run_firmware


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_entries_without_room_are_counted(board: str, opt: str, tmp_path: Path) -> None:
    image = build_firmware("entries", board, opt)
    trace = trace_firmware(image, board)
    assert (trace.stdout, trace.returncode) == run_firmware(image, board)
    assert trace.stdout.endswith(b"near=1\n")
    binary = load_binary(str(image))
    code = [(s.vaddr, s.vaddr + s.memsz) for s in binary.segments if s.executable]
    pcs = {pc: n for pc, n in trace.pcs.items() if any(lo <= pc < hi for lo, hi in code)}

    out = instrument(image, "inscount", tmp_path / "fw")
    assert run_firmware(out, board, cwd=tmp_path) == (trace.stdout, trace.returncode)
    got = json.loads((tmp_path / "fw.inscount.out").read_text())
    assert got["total"] == sum(pcs.values())
    procs = {p.name: p for p in binary.procedures}
    for name in ("twist", "nothing"):
        proc = procs[name]
        assert got["procedures"].get(name, 0) == sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end) > 0
    report = json.loads((tmp_path / "fw.anvil.json").read_text())
    assert report["entries_run_in_place"] == [], report["entries_not_patched"]
    # The instruction the constant names is left as it was; the entry before it is not.
    twist = procs["twist"].address
    new = load_binary(str(out))
    assert new.read(twist + 2, 2) == binary.read(twist + 2, 2)
    assert new.read(twist, 2) != binary.read(twist, 2)

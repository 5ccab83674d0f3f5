"""Instruction.line (source file:line from DWARF) against binutils' addr2line.

Every instruction of a sample built with -g gets the file:line addr2line gives for its
address, and None where addr2line knows none (glibc's start-up code has no DWARF here);
``anvil inspect --proc main`` prints them.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support.samples import build


def _addr2line(path: str, addresses: list[int]) -> list[str | None]:
    out = subprocess.run(["arm-linux-gnueabihf-addr2line", "-e", path, *map(hex, addresses)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    lines: list[str | None] = []
    for text in out:
        where = text.split(" (discriminator")[0]
        name, _, number = where.rpartition(":")
        lines.append(None if name.startswith("??") or number == "?" else f"{os.path.basename(name)}:{number}")
    return lines


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O0-arm-dyn", "Os-thumb-static"])
def test_lines_equal_addr2line(variant: str) -> None:
    path = str(build("sort", variant))
    binary = load_binary(path)
    instructions = [ins for proc in binary.procedures for ins in proc.instructions()]
    expected = _addr2line(path, [ins.address for ins in instructions])
    got = [ins.line for ins in instructions]
    wrong = [(hex(i.address), g, e) for i, g, e in zip(instructions, got, expected) if g != e]
    assert not wrong, wrong[:5]
    main = next(p for p in binary.procedures if p.name == "main")
    assert all(ins.line and ins.line.startswith("sort.c:") for ins in main.instructions())


def test_inspect_prints_lines() -> None:
    path = str(build("sort", "O2-thumb-dyn"))
    shown = subprocess.run(["anvil", "inspect", path, "--proc", "main"], capture_output=True, text=True, check=True)
    binary = load_binary(path)
    main = next(p for p in binary.procedures if p.name == "main")
    rows = {line.split()[0]: line for line in shown.stdout.splitlines() if line.startswith("    0x")}
    for ins in main.instructions():
        assert rows[f"{ins.address:#010x}"].endswith(f"; {ins.line}")

"""x86-64 switches whose cases are shorter than a jump (decision 0133).

clang's cases are often one instruction and a ``ret`` (4 bytes): no 5-byte jump over the
original sends a case to its copy, and a copied switch jumped through the original table
into the original code, which ran uncounted (x64_big_switch: 13 of 20 cases). A copy's
switch now reads a table of the copies' cases, through the same instruction with only its
displacement changed: inscount counts every case as qemu does (tests/test_x86_64_counts.py
CASES, clang's builds among them), and a tool that traces the table's read sees the
original table's address, here checked against the number of times qemu runs the jump."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support import x86_64_traces as traces


def _switch_jump(program: Path) -> int:
    """The link address of big_switch's indirect jump (its symbol, capstone)."""
    with program.open("rb") as f:
        elf = ELFFile(f)
        symbol = next(s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == "big_switch")
        text = elf.get_section_by_name(".text")
        start = symbol["st_value"] - text["sh_addr"] + text["sh_offset"]
        f.seek(start)
        code = f.read(symbol["st_size"])
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return next(address for address, _, name, operand in md.disasm_lite(code, symbol["st_value"])
                if name == "jmp" and not operand.startswith("0x"))


@pytest.mark.parametrize("variant", ["x64-clang-O2", "x64-clang-O2-large", "x64-gcc-O2-large"])
def test_table_reads_traced_at_the_original_table(variant: str, tmp_path: Path) -> None:
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("x64_big_switch", variant), program)
    dispatches = exe_pcs(trace_pcs(program, [], cwd=tmp_path), program)[_switch_jump(program)]
    assert dispatches >= 20
    copied = traces.memtrace(program, tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p)], capture_output=True, timeout=60, cwd=copied.parent,
                           env={"PATH": "/usr/bin:/bin"}) for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    base = traces.load_address(["setarch", "-R", str(program)], program)
    with program.open("rb") as f:
        rodata = ELFFile(f).get_section_by_name(".rodata")
        lo, hi = rodata["sh_addr"], rodata["sh_addr"] + rodata["sh_size"]
    loads = [ea - base for _, ea, _, kind in traces.trace(copied.parent / "prog.memtrace.out") if kind == "L"]
    assert sum(lo <= ea < hi for ea in loads) == dispatches

"""LLVM's trap ends a block, and A32 entries are word-aligned (decision 0108).

``samples/llvm_trap.c`` built by clang as a PIE: ``die`` ends with ``__builtin_trap()``,
whose UDF encoding capstone names ``trap``, and its literal pool follows. Stripped, the
descent must decode none of the bytes the unstripped file's mapping symbols mark as data
($d), and the copy must count what qemu counts and trap as the original does.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build, stripped


def _data_spans(path: Path) -> list[tuple[int, int]]:
    """[start, end) of each $d span of the text (to the next mapping symbol or the section's end)."""
    with path.open("rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        lo, hi = text["sh_addr"], text["sh_addr"] + text["sh_size"]
        marks = sorted((s["st_value"] & ~1, s.name.split(".")[0])  # LLVM's assembler names them $d.1 ...
                       for s in elf.get_section_by_name(".symtab").iter_symbols()
                       if s.name.split(".")[0] in ("$a", "$t", "$d") and lo <= s["st_value"] < hi)
    ends = [address for address, _ in marks[1:]] + [hi]
    return [(start, end) for (start, name), end in zip(marks, ends) if name == "$d" and end > start]


@pytest.mark.parametrize("variant", ["clang-O2-arm-pie-bfd", "clang-O2-thumb-pie-bfd"])
def test_nothing_after_a_trap_is_decoded(variant: str, tmp_path: Path) -> None:
    built = build("llvm_trap", variant)
    spans = _data_spans(built)
    program = stripped(built, tmp_path / "prog.stripped")
    ir = load_binary(str(program))
    traps = [ins for proc in ir.procedures for ins in proc.instructions() if ins.mnemonic == "trap"]
    assert traps and all(not ins.falls_through for ins in traps)
    pools = [start for start, end in spans if any(start - 8 <= t.address < start for t in traps)]
    assert pools, "no literal pool right after a trap: the sample no longer shows the case"
    decoded = [ins.address for proc in ir.procedures for ins in proc.instructions()
               if any(start < ins.address + ins.size and ins.address < end for start, end in spans)]
    assert not decoded, [hex(a) for a in decoded[:5]]

    original, pcs, _ = traced_original(program, tmp_path)
    assert original.returncode == 0, original.stderr
    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())
    trapped = run_prog(instrument(program, "cachesim", tmp_path, slot="trap"), ["70"])
    assert trapped.returncode == -signal.SIGILL and b"gamma out of range" in trapped.stderr


def test_no_a32_entry_at_a_halfword() -> None:
    """A32 code is word-aligned: an entry guessed at a halfword (a literal's value, a garbage
    procedure's computed target) is no A32 entry; Debian's bat had two, whose entry jumps
    could not be encoded (``A32 branch from 0x214dea cannot reach``) and stopped every rewrite."""
    from rewriter.ir.discovery import _Starts

    starts = _Starts([], [], {})
    assert starts.wrong_mode(0x214DEA, False) and starts.weak_wrong(0x214DEA, False)
    assert not starts.wrong_mode(0x214DE8, False) and not starts.wrong_mode(0x214DEA, True)

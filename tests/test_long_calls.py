"""Fixed-address programs built with ``-mlong-calls`` (decision 0054).

Every call is then ``movw rN, #lo; movt rN, #hi; blx rN`` (Thumb-2) or the same in A32,
never a BL. Before,
the descent of a stripped program found none of the functions called that way: they ran
in place, uninstrumented, and samples/it_word.c's number in data that points into an IT
block became the only entry of its function: its jump, written over the SUBHS, ran as the
IT's conditional instruction (SIGILL). Oracles: the original's behaviour and qemu's trace
of it, the symbol table of the unstripped build. (it_word's case with long calls is in
test_entry_provenance.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build, stripped

VARIANTS = ["O2-nopic-longcalls", "O2-arm-nopic-longcalls"]


def _functions(binary: Path) -> dict[str, int]:
    """Name -> address of each function the symbol table sizes (the unstripped build's word)."""
    from elftools.elf.elffile import ELFFile

    with binary.open("rb") as fh:
        table = ELFFile(fh).get_section_by_name(".symtab")
        return {sym.name: sym["st_value"] & ~1 for sym in table.iter_symbols()
                if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] and sym["st_shndx"] != "SHN_UNDEF"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_long_calls_and_pointers_in_registers_are_found(variant: str, tmp_path: Path) -> None:
    """sort: its functions are reached by long calls; each must start a procedure of the
    stripped copy. (Not its comparator, which only the C library calls: its address is a
    movw/movt pair, which reads as a number as well, as glibc's sysconf returns 200809.)"""
    built = build("sort", variant)
    starts = {proc.address for proc in load_binary(str(stripped(built, tmp_path / "stripped"))).procedures}
    missed = {name: hex(address) for name, address in _functions(built).items()
              if address not in starts and name != "compare_ints"}
    assert not missed, f"functions not found: {missed}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_plt_entries_called_through_registers_count(variant: str, tmp_path: Path) -> None:
    """Unstripped, the PLT was one procedure from its first byte: a long call of printf goes
    through a register to printf's PLT entry, which had no jump to its copy, so it ran in
    place uncounted (three instructions a call). Each entry is a procedure now."""
    program = build("it_word", variant)
    original, pcs, _ = traced_original(program, tmp_path)
    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())

"""Relocation and symbol tables read whole, as arrays of numbers.

pyelftools builds a parsed container for every entry it returns (about 20 µs each): a PIE
with half a million dynamic relocations spent seconds on them. The loader asks only for
numbers (where a relocation writes, its type, its symbol; a function's address and size),
so the tables are read here with ``struct`` in one call each. elf_check has already checked
each table's entry size and that its bytes are in the file.
"""

from __future__ import annotations

import struct

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import Section

STT_FUNC = 2
SHN_UNDEF = 0


def _order(elf: ELFFile) -> str:
    return "<" if elf.little_endian else ">"


def relocations(elf: ELFFile, section: Section) -> list[tuple[int, int, int, int]]:
    """Each entry of the REL or RELA ``section`` as (offset, type, symbol index, addend);
    a REL entry's addend is 0 here (it is the word in place)."""
    wide = elf.elfclass == 64
    rela = section["sh_type"] == "SHT_RELA"
    entry = struct.Struct(_order(elf) + ("Q" if wide else "I") * 2 + (("q" if wide else "i") if rela else ""))
    shift, mask = (32, 0xFFFFFFFF) if wide else (8, 0xFF)
    rows = entry.iter_unpack(_whole(section, entry))
    if rela:
        return [(offset, info & mask, info >> shift, addend) for offset, info, addend in rows]
    return [(offset, info & mask, info >> shift, 0) for offset, info in rows]


def defined_functions(elf: ELFFile, section: Section) -> list[tuple[int, int]]:
    """(value, size) of every defined function (STT_FUNC, not SHN_UNDEF) of the symbol
    table ``section``, in table order."""
    wide = elf.elfclass == 64
    # ELF64: st_name, st_info, st_other, st_shndx, st_value, st_size;
    # ELF32: st_name, st_value, st_size, st_info, st_other, st_shndx.
    entry = struct.Struct(_order(elf) + ("IBBHQQ" if wide else "IIIBBH"))
    rows = entry.iter_unpack(_whole(section, entry))
    if wide:
        rows = ((value, size, info, shndx) for _, info, _, shndx, value, size in rows)
    else:
        rows = ((value, size, info, shndx) for _, value, size, info, _, shndx in rows)
    return [(value, size) for value, size, info, shndx in rows if info & 0xF == STT_FUNC and shndx != SHN_UNDEF]


def _whole(section: Section, entry: struct.Struct) -> bytes:
    """The section's bytes, cut to whole entries."""
    data = section.data()
    return data[: len(data) - len(data) % entry.size]

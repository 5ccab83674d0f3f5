"""Relocation and symbol tables read whole, as arrays of numbers.

pyelftools builds a parsed container for every entry it returns (about 20 µs each): a PIE
with half a million dynamic relocations spent seconds on them. The loader asks only for
numbers (where a relocation writes, its type, its symbol; a function's address and size),
so the tables are read here with ``struct`` in one call each. elf_check has already checked
each table's entry size and that its bytes are in the file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import Section, SymbolTableSection

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


_ELF32_SYM = struct.Struct("<IIIBBH")  # st_name, st_value, st_size, st_info, st_other, st_shndx
_ELF64_SYM = struct.Struct("<IBBHQQ")  # st_name, st_info, st_other, st_shndx, st_value, st_size


def symbol_entries(table: SymbolTableSection, data: bytes) -> Iterator[tuple[str, int, int, int, int]]:
    """(name, value, size, type, section index) of every symbol of ``table`` in the file
    ``data``, in order.

    Read with ``struct``: pyelftools parses each entry through construct, a tenth of the
    loading time for a static binary's seven thousand symbols. check_elf has made sure
    the table and its string table lie inside the file and entries are of their class's
    size (16 bytes, 24 in an ELF64 file); a name
    outside the string table, or not ended inside it, reads as ''.
    """
    start, size = table["sh_offset"], table["sh_size"]
    strings, strings_end = table.stringtable["sh_offset"], table.stringtable["sh_offset"] + table.stringtable["sh_size"]
    if table.elffile.elfclass == 64:  # 24-byte entries, their fields in another order
        for offset in range(start, start + size - _ELF64_SYM.size + 1, _ELF64_SYM.size):
            name_at, info, _, shndx, value, sym_size = _ELF64_SYM.unpack_from(data, offset)
            yield _c_string(data, strings + name_at, strings_end), value, sym_size, info & 0xF, shndx
        return
    for offset in range(start, start + size - _ELF32_SYM.size + 1, _ELF32_SYM.size):
        name_at, value, sym_size, info, _, shndx = _ELF32_SYM.unpack_from(data, offset)
        yield _c_string(data, strings + name_at, strings_end), value, sym_size, info & 0xF, shndx


def _c_string(data: bytes, at: int, end: int) -> str:
    """The NUL-terminated string at ``at``, ended before ``end`` ('' when it is not)."""
    stop = data.find(b"\0", at, end)
    return data[at:stop].decode("utf-8", errors="replace") if stop > at else ""

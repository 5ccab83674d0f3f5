"""Characters of strings are no code addresses (decision 0088).

GHC lays each closure's info table (small numbers: the layout, the closure type) in
``.text`` just before its code, and its runtime reads the table at the info pointer minus
a few words. In a fixed-address program whose text runs past 0x202020, three characters
of a string in ``.rodata`` and its NUL ("-16" of "UTF-16") read as an odd address in the
text: a weak Thumb entry. Where it fell on an info table (surrounded by small numbers,
which the A32 test of weak Thumb entries does not count), the entry's jump was written over
the table, and the runtime read the jump's bytes as the closure's type (Debian's HsColour:
43 tables changed).

A number in data that falls on an info table is no string, but the Thumb code there meets
a zero halfword (``movs r0, r0``, which no compiler emits) before any branch: no entry
either (alex: a pair of its 16-bit table entries, 0x003b003b).

samples/info_tables: three A32 functions with their tables before them, named by static
closures in .data; main reads each table and calls the code; a string holds the characters
of the second table's address plus one, the third closure a number naming the third table.
The oracles: the original program's output (the tables' words and the results) and qemu's
count of the instructions it runs.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

try:
    from rewriter.ir.counted import in_text
except ImportError:
    in_text = None
from rewriter.ir.elf_loader import load_binary
from tests.support.run import assert_counts_as_qemu
from tests.support.samples import build_stripped

#: Linked at 0x202000, the text's addresses have printable second and third bytes.
FLAGS = ["-O2", "-marm", "-no-pie", "-Wl,-Ttext-segment=0x202000"]
OUTPUT = (b"closure 0: layout 0x1, type 8, returns 7\n"
          b"closure 1: layout 0x20005, type 14, returns 42\n"
          b"closure 2: layout 0x3, type 15, returns 5\n")


@pytest.fixture(scope="module")
def program() -> Path:
    return build_stripped("info_tables", FLAGS)


def _text_words(path: Path) -> list[int]:
    """The odd words of .rodata that name a place in .text and whose bytes are characters."""
    with path.open("rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        lo, hi = text["sh_addr"], text["sh_addr"] + text["sh_size"]
        data = elf.get_section_by_name(".rodata").data()
    values = [v for (v,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4])]
    return [v for v in values if v & 1 and lo <= v < hi and all(32 <= b < 127 for b in v.to_bytes(4, "little")[:3])]


def test_string_naming_a_table_is_no_entry(program: Path) -> None:
    words = _text_words(program)
    assert words, "the sample's string no longer reads as a code address (link address?)"
    entries = {p.address for p in load_binary(str(program)).procedures}
    assert not {w & ~1 for w in words} & entries


def test_number_naming_zeros_is_no_entry(program: Path) -> None:
    """The number in f2's closure names t2, whose Thumb reading meets a zero halfword."""
    with program.open("rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        lo, hi = text["sh_addr"], text["sh_addr"] + text["sh_size"]
        data = elf.get_section_by_name(".data").data()
    odd = [v & ~1 for (v,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4]) if v & 1 and lo <= v < hi]
    assert odd, "the sample's closure holds no odd number in the text"
    binary = load_binary(str(program))
    assert all(binary.read(a, 2) != b"\0\0" for a in odd)  # the zero is ahead, not at the entry
    assert not set(odd) & {p.address for p in binary.procedures}


def test_tables_intact_and_every_instruction_counted(program: Path, tmp_path: Path) -> None:
    assert_counts_as_qemu(program, tmp_path, OUTPUT)


def _words(raw: bytes) -> list[int]:
    return [v for (v,) in struct.iter_unpack("<I", raw)]


@pytest.mark.parametrize("raw", [
    b"ence\x00UTF-16\x00UTF-16BE",        # HsColour's .rodata: "-16" + NUL read as 0x36312d
    b"\x00Unique\x00'US\x00UniqueSo",      # a string of three characters between two others
    b"undefined\x00\n\x00, called",        # a line feed and NULs among the characters
])
def test_characters_are_text(raw: bytes) -> None:
    assert in_text(_words(raw), 2)


@pytest.mark.parametrize("raw", [
    # HsColour's .got: code addresses, printable bytes among them but their top bytes 0
    b"t\xbcl\x00\x80>|\x00L\xbdl\x00X\xbdl\x00\xb4\xbdl\x00",
    # an address whose bytes are characters, alone among zeros (too little text)
    b"\x00" * 8 + b"A& \x00" + b"\x00" * 8,
    # a closure's words beside one that spells "HAP"
    b"\x1a+t\x00\x03\x00\x00\x00HAP\x00\x00\x00\x00\x00\xc0AP\x00",
])
def test_addresses_and_numbers_are_not_text(raw: bytes) -> None:
    assert not in_text(_words(raw), 2)


def test_too_few_words_are_not_text() -> None:
    assert not in_text(_words(b"ABCDEFG\x00"), 1)

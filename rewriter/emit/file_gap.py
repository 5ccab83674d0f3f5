"""Open a gap in an ELF file after the text segment's file bytes.

GNU ld leaves the text segment's last page partly free in the file, so the loader stub and
the trampolines go there and the segment grows over them.  LLVM's ld.lld packs the file:
the next segment's bytes (``.fini_array``, ``.dynamic`` ...) follow the text segment's last
byte directly, their addresses a page (or ``-z separate-code``'s 64 KiB) further on.  The
address space after the text segment is free; only the file is full.

``open_gap`` inserts zero bytes at that point and moves everything after it (segments,
sections, the section header table) by a multiple of every moved segment's alignment, so
each keeps ``p_offset = p_vaddr (mod p_align)`` and maps exactly as before.  Addresses do
not change: the program, run as it is, behaves the same.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

PAGE = 0x1000
_PT_LOAD = 1
_SHT_NULL = 0


def gap_size(data: bytes, at: int, at_least: int = 0) -> int | None:
    """The gap ``open_gap`` would open at file offset ``at``: the largest alignment of the
    loadable segments after it (at least a page), times what makes it ``at_least`` bytes;
    None where a segment's file bytes span ``at`` (inserting bytes there would split it) or
    nothing follows."""
    size, follows = PAGE, False
    for p_type, p_offset, p_filesz, p_align in _segments(data):
        if p_offset < at < p_offset + p_filesz:
            return None
        if p_type == _PT_LOAD and p_offset >= at:
            follows = True
            size = max(size, p_align)
    return max(1, -(-at_least // size)) * size if follows else None


class _Layout(NamedTuple):
    """Where an ELF class keeps the fields moved (struct formats, little-endian)."""

    header: str       # e_phoff, e_shoff
    header_at: int
    counts: str       # e_phentsize, e_phnum, e_shentsize, e_shnum
    counts_at: int
    segment: str      # p_type, p_offset, p_filesz, p_align (other fields skipped)
    offset_at: int    # p_offset within a program header
    section_offset_at: int  # sh_offset within a section header
    word: str


_LAYOUTS = {
    1: _Layout("<II", 28, "<HHHH", 42, "<II8xI8xI", 4, 16, "<I"),          # ELF32
    2: _Layout("<QQ", 32, "<HHHH", 54, "<I4xQ16xQ8xQ", 8, 24, "<Q"),       # ELF64
}


def _layout(data: bytes) -> _Layout:
    return _LAYOUTS[data[4]]


def open_gap(data: bytes, at: int, size: int) -> bytes:
    """``data`` with ``size`` zero bytes inserted at file offset ``at``, every program header,
    section header and table that lay at or after ``at`` moved by ``size``."""
    layout = _layout(data)
    out = bytearray(data[:at]) + bytes(size) + data[at:]
    phoff, shoff = struct.unpack_from(layout.header, data, layout.header_at)
    phentsize, phnum, shentsize, shnum = struct.unpack_from(layout.counts, data, layout.counts_at)
    new_phoff = phoff + size if phoff >= at else phoff
    new_shoff = shoff + size if shoff >= at and shnum else shoff
    struct.pack_into(layout.header, out, layout.header_at, new_phoff, new_shoff)
    for k in range(phnum):
        _, p_offset, p_filesz, _ = struct.unpack_from(layout.segment, data, phoff + k * phentsize)
        if p_offset >= at and (p_offset or p_filesz):
            struct.pack_into(layout.word, out, new_phoff + k * phentsize + layout.offset_at, p_offset + size)
    for k in range(shnum):
        entry = shoff + k * shentsize
        sh_type = struct.unpack_from("<I", data, entry + 4)[0]
        sh_offset = struct.unpack_from(layout.word, data, entry + layout.section_offset_at)[0]
        if sh_type != _SHT_NULL and sh_offset >= at:
            struct.pack_into(layout.word, out, new_shoff + k * shentsize + layout.section_offset_at, sh_offset + size)
    return bytes(out)


def _segments(data: bytes) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_filesz, p_align) of each program header."""
    layout = _layout(data)
    phoff = struct.unpack_from(layout.header, data, layout.header_at)[0]
    phentsize, phnum, _, _ = struct.unpack_from(layout.counts, data, layout.counts_at)
    return [struct.unpack_from(layout.segment, data, phoff + k * phentsize) for k in range(phnum)]

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

PAGE = 0x1000
_PT_LOAD = 1
_SHT_NULL = 0


def gap_size(data: bytes, at: int) -> int | None:
    """The gap ``open_gap`` would open at file offset ``at``: the largest alignment of the
    loadable segments after it (at least a page); None where a segment's file bytes span
    ``at`` (inserting bytes there would split it) or nothing follows."""
    size, follows = PAGE, False
    for p_type, p_offset, p_filesz, p_align in _segments(data):
        if p_offset < at < p_offset + p_filesz:
            return None
        if p_type == _PT_LOAD and p_offset >= at:
            follows = True
            size = max(size, p_align)
    return size if follows else None


def open_gap(data: bytes, at: int, size: int) -> bytes:
    """``data`` with ``size`` zero bytes inserted at file offset ``at``, every program header,
    section header and table that lay at or after ``at`` moved by ``size``."""
    out = bytearray(data[:at]) + bytes(size) + data[at:]
    phoff, shoff = struct.unpack_from("<II", data, 28)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 42)
    new_phoff = phoff + size if phoff >= at else phoff
    new_shoff = shoff + size if shoff >= at and shnum else shoff
    struct.pack_into("<II", out, 28, new_phoff, new_shoff)
    for k in range(phnum):
        p_type, p_offset, _, _, p_filesz = struct.unpack_from("<IIIII", data, phoff + k * phentsize)
        if p_offset >= at and (p_offset or p_filesz):
            struct.pack_into("<I", out, new_phoff + k * phentsize + 4, p_offset + size)
    for k in range(shnum):
        entry = shoff + k * shentsize
        sh_type, _, _, sh_offset = struct.unpack_from("<IIII", data, entry + 4)
        if sh_type != _SHT_NULL and sh_offset >= at:
            struct.pack_into("<I", out, new_shoff + k * shentsize + 16, sh_offset + size)
    return bytes(out)


def _segments(data: bytes) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_filesz, p_align) of each program header."""
    phoff = struct.unpack_from("<I", data, 28)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 42)
    rows = []
    for k in range(phnum):
        p_type, p_offset, _, _, p_filesz, _, _, p_align = struct.unpack_from("<8I", data, phoff + k * phentsize)
        rows.append((p_type, p_offset, p_filesz, p_align))
    return rows

"""Flashable forms of an ELF image: raw binary and Intel HEX.

What a flasher writes is each PT_LOAD's file bytes at its *load* address (p_paddr:
for firmware, initialised data is stored in flash and copied to RAM at reset).
Segments without file bytes (.bss, the instrumentation's RAM) are not written.
"""

from __future__ import annotations

import io

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .errors import AnvilError, malformed
from .ir.elf_check import check_elf

MAX_BIN_SPAN = 64 << 20  # a raw binary spanning more than this is almost surely two memories


def load_chunks(path: str) -> tuple[int, list[tuple[int, bytes]]]:
    """(entry point, [(load address, bytes)...]) of ``path``'s loaded segments, sorted and merged."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AnvilError(f"cannot read {path}: {e.strerror}") from None
    check_elf(path, data, executable=False)
    try:
        elf = ELFFile(io.BytesIO(data))
        pieces = []
        for seg in elf.iter_segments():
            if seg["p_type"] != "PT_LOAD" or not seg["p_filesz"]:
                continue
            start, size = seg["p_offset"], seg["p_filesz"]
            if start + size > len(data):
                raise AnvilError(f"{path}: truncated ELF file (a segment runs past the end of the file)")
            pieces.append((seg["p_paddr"], data[start:start + size]))
        entry = elf["e_entry"]
    except (ELFError, ValueError, KeyError) as e:
        raise malformed(path, e) from None
    if not pieces:
        raise AnvilError(f"{path}: no loadable bytes")
    merged: list[tuple[int, bytes]] = []
    for address, chunk in sorted(pieces):
        if merged and address < merged[-1][0] + len(merged[-1][1]):
            raise AnvilError(f"{path}: segments overlap at load address {address:#x}")
        if merged and address == merged[-1][0] + len(merged[-1][1]):
            merged[-1] = (merged[-1][0], merged[-1][1] + chunk)
        else:
            merged.append((address, chunk))
    return entry, merged


def to_bin(chunks: list[tuple[int, bytes]], fill: int = 0xFF) -> tuple[int, bytes]:
    """(start address, bytes) from the lowest load address to the highest end, gaps filled."""
    if not 0 <= fill <= 0xFF:
        raise AnvilError(f"--fill {fill:#x} is not a byte value")
    start = chunks[0][0]
    end = chunks[-1][0] + len(chunks[-1][1])
    if end - start > MAX_BIN_SPAN:
        raise AnvilError(f"the image spans {start:#x}..{end:#x} ({end - start} bytes): too far apart for a raw "
                         "binary; use --format hex")
    out = bytearray([fill]) * (end - start)
    for address, chunk in chunks:
        out[address - start:address - start + len(chunk)] = chunk
    return start, bytes(out)


def _record(kind: int, address: int, payload: bytes) -> str:
    body = bytes([len(payload), (address >> 8) & 0xFF, address & 0xFF, kind]) + payload
    return ":" + body.hex().upper() + f"{-sum(body) & 0xFF:02X}\n"


def to_ihex(entry_and_chunks: tuple[int, list[tuple[int, bytes]]]) -> bytes:
    """Intel HEX: 16-byte data records, extended linear address records when the upper
    half of the address changes, the entry point (start linear address) and end of file."""
    entry, chunks = entry_and_chunks
    lines = []
    upper = None
    for address, chunk in chunks:
        for at in range(0, len(chunk), 16):
            where = address + at
            piece = chunk[at:min(at + 16, len(chunk), at + 0x10000 - (where & 0xFFFF))]
            if where >> 16 != upper:
                upper = where >> 16
                lines.append(_record(4, 0, upper.to_bytes(2, "big")))
            lines.append(_record(0, where & 0xFFFF, piece))
            if len(piece) < min(16, len(chunk) - at):  # crossed a 64 KiB boundary: the rest follows
                rest = chunk[at + len(piece):at + 16]
                upper = (where + len(piece)) >> 16
                lines.append(_record(4, 0, upper.to_bytes(2, "big")))
                lines.append(_record(0, (where + len(piece)) & 0xFFFF, rest))
    lines.append(_record(5, 0, entry.to_bytes(4, "big")))
    lines.append(_record(1, 0, b""))
    return "".join(lines).encode()

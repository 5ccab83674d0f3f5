"""Placement and ELF output for bare-metal Cortex-M images (see
docs/decisions/0007-firmware-placement.md, 0038).

A firmware image has no loader and no kernel: whatever the instrumentation adds must
already be where the core finds it after reset. So, unlike the Linux layout (a region
mapped by a loader stub), the additions are ordinary loadable segments:

- code (analysis library text, relocated procedures, the runtime's initial data) in
  flash right after the image's last loaded byte;
- the runtime's RAM (its data, counters, tables) in RAM that neither the heap nor a
  stack reaches (firmware_placement.py), so heap and stack addresses stay as they were;
- each relocated procedure's first 4 bytes become a ``b.w`` to its copy, so the
  vector table, which stays unchanged, reaches instrumented handlers.

Both places come from the image and the board's memory map, or from the user's
``--flash-region`` / ``--ram-region``; what does not fit is a one-line error.
"""

from __future__ import annotations

import io
import struct

from elftools.elf.elffile import ELFFile

from ..errors import AnvilError
from ..ir.model import Binary
from .firmware_placement import Placement, place

__all__ = ["Placement", "place", "write_elf"]

ALIGN = 16  # of the added code in the file and in flash


def write_elf(binary: Binary, patches: dict[int, bytes], flash_at: int, flash_bytes: bytes,
              ram_at: int, ram_size: int) -> bytes:
    """The original image with ``patches`` (address -> bytes) applied, ``flash_bytes``
    loaded at ``flash_at`` and ``ram_size`` bytes of RAM at ``ram_at`` reserved.

    Two PT_LOADs and two sections (.anvil.text, .anvil.ram) are added, so tools that
    read program headers (QEMU, OpenOCD) and those that read sections (objcopy, pyOCD)
    both see the new code. The header tables move to the end of the file.
    """
    elf = ELFFile(io.BytesIO(binary.data))
    out = bytearray(binary.data)
    for address, data in patches.items():
        off = binary.file_offset(address)
        if off is None:
            raise AnvilError(f"internal error: entry patch at {address:#x} is not in the file")
        out[off:off + len(data)] = data

    def append(data: bytes, align: int) -> int:
        out.extend(bytes(-len(out) % align))
        at = len(out)
        out.extend(data)
        return at

    code_offset = append(flash_bytes, ALIGN)
    # Program headers: the originals, then the flash code (R+X) and the RAM (R+W, no file bytes).
    phoff, phnum, phsize = elf["e_phoff"], elf["e_phnum"], elf["e_phentsize"]
    table = bytearray(binary.data[phoff:phoff + phnum * phsize])
    table += struct.pack("<8I", 1, code_offset, flash_at, flash_at, len(flash_bytes), len(flash_bytes), 5, ALIGN)
    table += struct.pack("<8I", 1, code_offset + len(flash_bytes), ram_at, ram_at, 0, ram_size, 6, 8)
    new_phoff = append(bytes(table), 4)
    # Section names: a copy of .shstrtab with the two new names.
    shoff, shnum, shsize, shstrndx = elf["e_shoff"], elf["e_shnum"], elf["e_shentsize"], elf["e_shstrndx"]
    names = elf.get_section(shstrndx)
    strings = bytearray(names.data())
    text_name = len(strings)
    strings += b".anvil.text\0"
    ram_name = len(strings)
    strings += b".anvil.ram\0"
    strings_at = append(bytes(strings), 1)
    sections = bytearray(binary.data[shoff:shoff + shnum * shsize])
    struct.pack_into("<II", sections, shstrndx * shsize + 16, strings_at, len(strings))
    sections += struct.pack("<10I", text_name, 1, 0x6, flash_at, code_offset, len(flash_bytes), 0, 0, ALIGN, 0)
    sections += struct.pack("<10I", ram_name, 8, 0x3, ram_at, code_offset + len(flash_bytes), ram_size, 0, 0, 8, 0)
    new_shoff = append(bytes(sections), 4)
    struct.pack_into("<I", out, 28, new_phoff)
    struct.pack_into("<I", out, 32, new_shoff)
    struct.pack_into("<H", out, 44, phnum + 2)
    struct.pack_into("<H", out, 48, shnum + 2)
    return bytes(out)

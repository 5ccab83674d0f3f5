"""Placement and ELF output for bare-metal Cortex-M images (see
docs/decisions/0007-firmware-placement.md).

A firmware image has no loader and no kernel: whatever the instrumentation adds must
already be where the core finds it after reset. So, unlike the Linux layout (a region
mapped by a loader stub), the additions are ordinary loadable segments:

- code (analysis library text, relocated procedures, the runtime's initial data) in
  flash right after the image's last loaded byte;
- the runtime's RAM (its data, counters, tables) at the top of the free RAM between
  the heap's start and the stack, so heap and stack addresses stay as they were;
- each relocated procedure's first 4 bytes become a ``b.w`` to its copy, so the
  vector table, which stays unchanged, reaches instrumented handlers.

Both places come from the image's symbols and the board's memory map, or from the
user's ``--flash-region`` / ``--ram-region``; what does not fit is a one-line error.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

from ..boards import BOARDS, MemoryRegion
from ..errors import AnvilError
from ..ir.model import Binary

# Symbols a linker script defines where the heap ends (the stack's lowest address) and starts.
HEAP_LIMIT_SYMBOLS = ("__HeapLimit", "__StackLimit", "_sstack", "__stack_start__")
HEAP_BASE_SYMBOLS = ("__HeapBase", "end", "_end", "__end__", "_ebss", "__bss_end__")
ALIGN = 16


@dataclass
class Placement:
    """Where instrumentation may go: ``flash`` (free, after the image) and ``ram`` (free,
    between the heap's start and the stack)."""

    flash: MemoryRegion
    ram: MemoryRegion

    def ram_for(self, size: int) -> int:
        """Address of ``size`` bytes at the top of the free RAM (farthest from the heap's start)."""
        at = (self.ram.end - size) & ~7
        if size > self.ram.size or at < self.ram.start:
            raise AnvilError(f"no room for {size} bytes of instrumentation data in RAM {self.ram} "
                             f"({self.ram.size} bytes free between the heap and the stack); "
                             "give --ram-region START:SIZE or fewer/smaller tool arrays")
        return at

    def check_flash(self, end: int) -> None:
        if end > self.flash.end:
            raise AnvilError(f"no room for {end - self.flash.start} bytes of instrumented code in flash "
                             f"{self.flash} ({self.flash.size} bytes free after the image); "
                             "give --flash-region START:SIZE or instrument fewer procedures (--only)")


def _loads(binary: Binary) -> list[tuple[int, int, int, int]]:
    """(vaddr, paddr, filesz, memsz) of each PT_LOAD."""
    elf = ELFFile(io.BytesIO(binary.data))
    return [(s["p_vaddr"], s["p_paddr"], s["p_filesz"], s["p_memsz"])
            for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]


def place(binary: Binary, flash: MemoryRegion | None, ram: MemoryRegion | None) -> Placement:
    """Work out the free flash and RAM of ``binary`` (the user's regions, when given, win)."""
    loads = _loads(binary)
    image_end = max(paddr + filesz for _, paddr, filesz, _ in loads if filesz)
    lowest = min(paddr for _, paddr, filesz, _ in loads if filesz)
    if flash is None:
        memory = next((b.flash for b in BOARDS.values() if lowest in b.flash), None)
        if memory is None:
            raise AnvilError(f"the image at {lowest:#x} is not in a known board's flash: give --flash-region "
                             "START:SIZE for the instrumented code")
        start = (max(image_end, memory.start) + ALIGN - 1) & ~(ALIGN - 1)
        flash = MemoryRegion(start, max(0, memory.end - start))
    else:
        for _, paddr, filesz, _ in loads:
            if filesz and paddr < flash.end and flash.start < paddr + filesz:
                raise AnvilError(f"--flash-region {flash} overlaps the image's contents at {paddr:#x}")
    if ram is None:
        symbols = _symbol_values(binary)
        limit = next((symbols[n] for n in HEAP_LIMIT_SYMBOLS if n in symbols), None)
        base = next((symbols[n] for n in HEAP_BASE_SYMBOLS if n in symbols), None)
        if limit is None or base is None:
            raise AnvilError("cannot tell where the heap starts and the stack ends (no __HeapLimit/__StackLimit "
                             "and end/_end symbols): give --ram-region START:SIZE for the instrumentation data")
        ram = MemoryRegion(base, max(0, limit - base))
    for vaddr, _, _, memsz in loads:
        if memsz and vaddr < ram.end and ram.start < vaddr + memsz:
            raise AnvilError(f"RAM region {ram} overlaps the image's data at {vaddr:#x}")
    return Placement(flash, ram)


def _symbol_values(binary: Binary) -> dict[str, int]:
    """Every defined symbol's value (linker-script symbols are absolute or section-relative
    NOTYPE symbols, which the IR's symbol map leaves out)."""
    symtab = ELFFile(io.BytesIO(binary.data)).get_section_by_name(".symtab")
    if symtab is None:
        return {}
    return {s.name: s["st_value"] for s in symtab.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}


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

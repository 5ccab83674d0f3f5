"""Which library function each PLT entry of a dynamically linked ARM executable calls.

A stripped executable has no ``name@plt`` symbols, yet knowing that an entry is
``exit`` or ``__stack_chk_fail`` matters: the code after a call to one is not reached
(often a literal pool), and decoding on into it invents procedures and branches.

Entries are not of one size. GNU ld writes, after the 20-byte PLT0, for each entry:

- optionally a 4-byte Thumb stub (``bx pc`` and a pad) where Thumb code reaches the
  entry with a branch that cannot change state (``b.w`` tail calls);
- the A32 entry proper, either the short form
  ``add ip, pc, #A; add ip, ip, #B; ldr pc, [ip, #C]!`` (12 bytes) or the long form
  ``ldr ip, [pc, #4]; add ip, pc, ip; ldr pc, [ip]; .word offset`` (16 bytes).

ld.lld writes the short form only, PLT0 and each entry padded to 16 bytes with
``0xd4d4d4d4`` words. mold writes the long form, its 20-byte PLT0 padded to 32 bytes with
A32 ``nop`` words.

The GOT slot an entry loads its target from is named by the entry's ``R_ARM_JUMP_SLOT``
relocation, whose symbol is the function; so entries are decoded rather than counted.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Container

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .elf_tables import relocations

PLT0_SIZE = 20
#: ld.lld pads its 20-byte PLT0 to 32 bytes and each 12-byte entry to 16 with these words.
TRAP_FILL = b"\xd4" * 4
#: Other linkers' padding words: the A32 NOPs (``nop``, mold's; ``mov r0, r0``).
NOP_FILL = (b"\x00\xf0\x20\xe3", b"\x00\x00\xa0\xe1")
THUMB_STUB = 0x4778  # bx pc
# The short form, with its immediates masked out.
_ADD_IP_PC, _ADD_IP_IP, _LDR_PC_IP = 0xE28FC600, 0xE28CCA00, 0xE5BCF000
_LONG_FORM = (0xE59FC004, 0xE08CC00F, 0xE59CF000)
# PLT0 after its ``push {lr}``: ``ldr lr, [pc, #4]; add lr, pc, lr; ldr pc, [lr, #8]!``.
_PLT0_LONG_FORM = (0xE59FE004, 0xE08FE00E, 0xE5BEF008)


def plt_functions(elf: ELFFile) -> dict[int, str]:
    """Address of each PLT entry (and of its Thumb stub, if it has one) -> the function it
    calls; empty when the binary has no PLT or its entries are not of a known form."""
    plt = elf.get_section_by_name(".plt")
    rel = elf.get_section_by_name(".rel.plt")
    if plt is None or rel is None or not plt["sh_size"]:
        return {}
    symbols = elf.get_section(rel["sh_link"])
    if not isinstance(symbols, SymbolTableSection):
        return {}  # no symbols to name the functions by (check_elf allows only this or a symbol table)
    count = symbols.num_symbols()
    slots = {offset: symbols.get_symbol(index).name for offset, _, index, _ in relocations(elf, rel) if index < count}
    out: dict[int, str] = {}
    for entry, stub, slot in plt_entries(plt.data(), plt["sh_addr"], PLT0_SIZE, slots)[0]:
        for address in (entry, stub):
            if address is not None:
                out[address] = slots[slot]
    return out


def plt_entries(data: bytes, base: int, at: int,
                slots: Container[int]) -> tuple[list[tuple[int, int | None, int]], int]:
    """The PLT entries in ``data`` (at address ``base``) from offset ``at`` on, as long as each
    jumps through one of ``slots``: (entry, its Thumb stub or None, slot) each, and the
    offset where the last one ends."""
    out: list[tuple[int, int | None, int]] = []
    stub: int | None = None
    end = at
    while at + 4 <= len(data):
        if data[at:at + 4] == TRAP_FILL or data[at:at + 4] in NOP_FILL:  # padding (ld.lld's, mold's)
            at += 4
            continue
        if int.from_bytes(data[at:at + 2], "little") == THUMB_STUB:
            stub = base + at
            at += 4
            continue
        slot, size = _slot(data, at, base + at)
        if slot is None or slot not in slots:
            break
        out.append((base + at, stub, slot))
        stub = None
        at += size
        end = at
    return out, end


def plt_marks(elf: ELFFile) -> list[tuple[int, str]]:
    """Mapping symbols for a ``.plt`` whose linker wrote none (mold): A32 code from its start,
    data at PLT0's literal word and at each long entry's, as GNU ld marks its own. Empty when
    the entries are of no known form."""
    plt = elf.get_section_by_name(".plt")
    if plt is None or plt["sh_size"] < PLT0_SIZE:
        return []
    data, base = plt.data(), plt["sh_addr"]
    if tuple(w for (w,) in struct.iter_unpack("<I", data[4:16])) != _PLT0_LONG_FORM:
        return []
    entries, _ = plt_entries(data, base, PLT0_SIZE, _Anything())
    if not entries:
        return []
    return sorted({(base, "a"), (base + 16, "d"), (base + 20, "a"), *_literal_marks(data, base, entries)})


def stub_marks(data: bytes, base: int) -> list[tuple[int, str]]:
    """Mapping symbols for an executable section of PLT entries alone, without a PLT0 and
    unmarked by its linker (mold's ``.plt.got``, which a static program's calls of IFUNC'd
    functions go through): A32 code, data at each long entry's literal word. Empty when the
    section does not start with an entry of a known form."""
    entries, _ = plt_entries(data, base, 0, _Anything())
    if not entries:
        return []
    return sorted({(base, "a"), *_literal_marks(data, base, entries)})


def _literal_marks(data: bytes, base: int, entries: list[tuple[int, int | None, int]]) -> list[tuple[int, str]]:
    """``$d`` at each long entry's literal word and ``$a`` after it, as GNU ld marks them."""
    marks: list[tuple[int, str]] = []
    for entry, _, _ in entries:
        if _slot(data, entry - base, entry)[1] == 16:
            marks += [(entry + 12, "d"), (entry + 16, "a")]
    return marks


class _Anything:
    """Every GOT slot (plt_marks reads the entries' forms, not which slots they use)."""

    def __contains__(self, item: object) -> bool:
        return True


def lazy_binder(elf: ELFFile) -> int | None:
    """The address of PLT0, where the entries' GOT slots send a call until the dynamic
    linker binds them (lazy binding): the start of ``.plt``."""
    plt = elf.get_section_by_name(".plt")
    return plt["sh_addr"] if plt is not None and plt["sh_size"] >= PLT0_SIZE else None


def _slot(data: bytes, at: int, address: int) -> tuple[int | None, int]:
    """The GOT slot the A32 entry at ``address`` (``data[at:]``) jumps through, and its
    size; (None, 0) when the bytes are neither form."""
    words = [w for (w,) in struct.iter_unpack("<I", data[at:at + 16] + bytes(-len(data[at:at + 16]) % 4))]
    if len(words) >= 3 and (words[0] & ~0xFF, words[1] & ~0xFF, words[2] & ~0xFFF) == (_ADD_IP_PC, _ADD_IP_IP,
                                                                                        _LDR_PC_IP):
        # ip = pc (the entry + 8) + A + B, then pc = [ip + C]; A and B are rotated 8-bit immediates.
        return address + 8 + _rotated(words[0]) + _rotated(words[1]) + (words[2] & 0xFFF), 12
    if len(words) == 4 and tuple(words[:3]) == _LONG_FORM:
        return (address + 12 + words[3]) & 0xFFFFFFFF, 16  # pc reads as the ADD's address + 8
    return None, 0


def _rotated(word: int) -> int:
    """The value of an A32 data-processing modified immediate (imm8 rotated right by 2 * rot)."""
    imm8, rot = word & 0xFF, (word >> 8) & 0xF
    shift = 2 * rot
    return ((imm8 >> shift) | (imm8 << (32 - shift))) & 0xFFFFFFFF if shift else imm8


def thumb_stubs(entries: dict[int, str], read: Callable[[int, int], bytes]) -> set[int]:
    """The addresses among ``entries`` (plt_functions') that are Thumb stubs (``bx pc``)
    rather than A32 entries proper; ``read(address, size)`` reads the program's bytes."""
    stub = THUMB_STUB.to_bytes(2, "little")
    return {entry for entry in entries if read(entry, 2) == stub}

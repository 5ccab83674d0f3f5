"""Start the region from DT_PREINIT_ARRAY: before the libraries' initialisers call into the program.

A dynamic program's libraries run their initialisers before the program's entry, and some
call into the program there: a library interposed by an exported definition (D's Phobos
and the template instances a program exports, a program's own ``malloc`` or ``operator
new``), a callback a library's constructor runs. The program's entry patches jump into the
region, which the loader stub maps at the entry (decision 0001): too late for those calls.

The dynamic linker calls the executable's DT_PREINIT_ARRAY functions before any library's
initialiser (and after every relocation), with ``argc, argv, envp``. So, where the program
allows it, the stub's ``_anvil_preinit`` is made that function (decision 0071):

- two of the spare DT_NULL slots GNU ld leaves at the end of ``.dynamic``
  (``--spare-dynamic-tags``, five by default) become DT_PREINIT_ARRAY and
  DT_PREINIT_ARRAYSZ (one word), one DT_NULL still ending the table;
- the array is the program's first ``.init_array`` word, whose value the stub's address
  replaces: in a PIE that word already has its R_ARM_RELATIVE relocation, so the dynamic
  linker adds the load bias as it would to the original, and no relocation is added;
- the preinit call maps the region and, before it returns, writes the original word back
  (``anvil_rt.c`` give_init_slot_back; the page is made writable for that one store when
  the word lies in PT_GNU_RELRO), so libc's call of the program's initialisers is the
  original's.

A program with a preinit array of its own (ASan's ``__asan_init``, a function the program
puts in ``.preinit_array``) has its first preinit word made the stub's instead, no tag
added: the dynamic linker has read that word when it calls the stub, so the stub, once it
has written the word back, goes on to the program's function with the dynamic linker's
registers and return address (decision 0094). Before, such a program was started at its
entry, after its preinit functions had run: one in the program jumped to its copy in a
region not yet mapped (SIGSEGV), and so did ASan's in a fixed-address program, whose
``__asan_init`` is its PLT entry.

A program without spare slots (ld.lld leaves none), without ``.init_array``, or whose first
``.init_array`` (or preinit) word is relocated otherwise (a preinit function of a library,
by its symbol), is started at its entry as before.

Both ELF classes: 32-bit ARM's REL tables (the word holds what the relocation adds to) and
x86-64's RELA tables, whose R_X86_64_RELATIVE of the slot carries the value as its addend:
there the addend changes with the word (decision 0176). A word relocated through DT_RELR
(``-z pack-relative-relocs``) holds its value in place, as REL's.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

from ..ir.model import Binary

DT_NULL, DT_RELA, DT_RELASZ, DT_REL, DT_RELSZ, DT_INIT_ARRAY, DT_INIT_ARRAYSZ = 0, 7, 8, 17, 18, 25, 27
DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, DT_RELRSZ, DT_RELR = 32, 33, 35, 36
#: The relocation that adds the load bias to a word, by ELF class (REL on ARM, RELA on x86-64).
RELATIVE = {4: 23, 8: 8}  # R_ARM_RELATIVE, R_X86_64_RELATIVE


@dataclass(frozen=True)
class PreinitStart:
    """Where the program's tables change so that the dynamic linker calls the stub first."""

    free_slot: int | None  # link address of the first spare DT_NULL entry of .dynamic (None: the
    #                        program's own preinit array, whose first word is the slot)
    init_slot: int       # link address of the first .init_array (or .preinit_array) word
    init_original: int   # what that word holds (its link-time value)
    read_only: bool      # the word's page is PT_GNU_RELRO: read-only once relocated
    word: int = 4        # the word's size: 4 (ELF32) or 8 (ELF64)
    addend_at: int | None = None  # the link address of the slot's RELA addend, where it has one

    def header_words(self) -> tuple[int, int, int]:
        """The region header's init_slot, init_original, init_flags (anvil_rt.c: bit 0 the
        page is read-only, bit 1 the word is a preinit function to go on to)."""
        return self.init_slot, self.init_original, int(self.read_only) | (2 if self.free_slot is None else 0)


def plan(binary: Binary) -> PreinitStart | None:
    """How ``binary`` can be started from DT_PREINIT_ARRAY, or None (start at the entry)."""
    if not binary.is_dynamic:
        return None
    word = 8 if binary.data[4:5] == b"\x02" else 4
    entry_format = "<qQ" if word == 8 else "<iI"
    segments = list(ELFFile(io.BytesIO(binary.data)).iter_segments())
    dynamic = [seg for seg in segments if seg["p_type"] == "PT_DYNAMIC"]
    if len(dynamic) != 1:
        return None
    offset, vaddr, filesz = dynamic[0]["p_offset"], dynamic[0]["p_vaddr"], dynamic[0]["p_filesz"]
    if offset + filesz > len(binary.data):
        return None
    entries = list(struct.iter_unpack(entry_format, binary.data[offset:offset + filesz - filesz % (2 * word)]))
    tags = [tag for tag, _ in entries]
    if DT_NULL not in tags:
        return None
    first_null = tags.index(DT_NULL)
    values = dict(entries[:first_null])
    if DT_PREINIT_ARRAY in values:  # the program's own: its first word is the slot, no tag added
        if values.get(DT_PREINIT_ARRAYSZ, 0) < word:
            return None
        free_slot, init_slot = None, values[DT_PREINIT_ARRAY]
    else:
        # Two slots for the new tags and a DT_NULL after them, all spare (nothing past the end).
        if len(entries) < first_null + 3 or any(entries[first_null + k] != (DT_NULL, 0) for k in range(3)):
            return None
        if values.get(DT_INIT_ARRAYSZ, 0) < word or DT_INIT_ARRAY not in values:
            return None
        free_slot, init_slot = vaddr + first_null * 2 * word, values[DT_INIT_ARRAY]
    original = int.from_bytes(binary.read(init_slot, word), "little")  # 0 where not in the file
    relocation = _slot_relocation(binary, values, init_slot, word)
    if relocation is None:
        return None
    addend_at, addend = relocation
    if addend is not None:
        original = addend
    if original in (0, (1 << 8 * word) - 1):
        return None
    read_only = any(seg["p_type"] == "PT_GNU_RELRO" and seg["p_vaddr"] <= init_slot < seg["p_vaddr"] + seg["p_memsz"]
                    for seg in segments)
    return PreinitStart(free_slot, init_slot, original, read_only, word, addend_at)


def _table(binary: Binary, values: dict[int, int], tag: int, size_tag: int) -> bytes | None:
    """The bytes of the dynamic table ``tag`` (empty where there is none; None where it is
    not in the file)."""
    address, size = values.get(tag), values.get(size_tag, 0)
    if address is None or not size:
        return b""
    start = binary.file_offset(address)
    if start is None or start + size > len(binary.data):
        return None
    return binary.data[start:start + size]


def _slot_relocation(binary: Binary, values: dict[int, int], slot: int,
                     word: int) -> tuple[int | None, int | None] | None:
    """How the word at ``slot`` is relocated, if as the stub's address needs: in a PIE by the
    relative relocation alone (the bias added to the word in place, or to a RELA addend), not
    at all otherwise. (The RELA addend's link address and value, each None where the word holds
    the value itself); None where the slot cannot be used."""
    relative = RELATIVE[word]
    kinds, addends = [], []
    rel = _table(binary, values, DT_REL, DT_RELSZ)
    rela = _table(binary, values, DT_RELA, DT_RELASZ)
    relr = _table(binary, values, DT_RELR, DT_RELRSZ)
    if rel is None or rela is None or relr is None:
        return None
    if word == 4:
        if rela:  # not an ARM table: read only REL's
            return None
        kinds = [info & 0xFF for offset, info in struct.iter_unpack("<II", rel[:len(rel) - len(rel) % 8])
                 if offset == slot]
    else:
        if rel:
            return None
        for k, (offset, info, addend) in enumerate(struct.iter_unpack("<QQq", rela[:len(rela) - len(rela) % 24])):
            if offset == slot:
                kinds.append(info & 0xFFFFFFFF)
                addends.append((values[DT_RELA] + 24 * k + 16, addend))
    if slot in _relr_words(relr, word):
        kinds.append(relative)
    if kinds != ([relative] if binary.is_pie else []):
        return None
    return addends[0] if addends else (None, None)


def _relr_words(table: bytes, word: int) -> set[int]:
    """The addresses a DT_RELR table relocates: an even entry names a word (and starts the
    run after it), an odd one is a bitmap of the next ``8 * word - 1`` words."""
    words: set[int] = set()
    bits = 8 * word - 1
    base = 0
    for (entry,) in struct.iter_unpack("<Q" if word == 8 else "<I", table[:len(table) - len(table) % word]):
        if entry & 1 == 0:
            words.add(entry)
            base = entry + word
        else:
            words.update(base + k * word for k in range(bits) if entry >> (k + 1) & 1)
            base += bits * word
    return words


def apply(out: bytearray, start: PreinitStart, preinit_function: int, offset_of) -> None:
    """Write the two dynamic tags (unless the program has its preinit array) and the stub's
    address (``preinit_function``, with the Thumb bit where it is Thumb code) over the slot's
    word, and its RELA addend where it has one; ``offset_of(vaddr)``: its offset in ``out``."""
    entry_format, word_format = ("<qQqQ", "<Q") if start.word == 8 else ("<iIiI", "<I")
    if start.free_slot is not None:
        struct.pack_into(entry_format, out, offset_of(start.free_slot), DT_PREINIT_ARRAY, start.init_slot,
                         DT_PREINIT_ARRAYSZ, start.word)
    struct.pack_into(word_format, out, offset_of(start.init_slot), preinit_function)
    if start.addend_at is not None:
        struct.pack_into("<q", out, offset_of(start.addend_at), preinit_function)

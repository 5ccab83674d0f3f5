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
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

from ..ir.discovery import R_ARM_RELATIVE
from ..ir.model import Binary

DT_NULL, DT_RELA, DT_REL, DT_RELSZ, DT_INIT_ARRAY, DT_INIT_ARRAYSZ = 0, 7, 17, 18, 25, 27
DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ = 32, 33


@dataclass(frozen=True)
class PreinitStart:
    """Where the program's tables change so that the dynamic linker calls the stub first."""

    free_slot: int | None  # link address of the first spare DT_NULL entry of .dynamic (None: the
    #                        program's own preinit array, whose first word is the slot)
    init_slot: int       # link address of the first .init_array (or .preinit_array) word
    init_original: int   # what that word holds
    read_only: bool      # the word's page is PT_GNU_RELRO: read-only once relocated

    def header_words(self) -> tuple[int, int, int]:
        """The region header's init_slot, init_original, init_flags (anvil_rt.c: bit 0 the
        page is read-only, bit 1 the word is a preinit function to go on to)."""
        return self.init_slot, self.init_original, int(self.read_only) | (2 if self.free_slot is None else 0)


def plan(binary: Binary) -> PreinitStart | None:
    """How ``binary`` can be started from DT_PREINIT_ARRAY, or None (start at the entry)."""
    if not binary.is_dynamic:
        return None
    segments = list(ELFFile(io.BytesIO(binary.data)).iter_segments())
    dynamic = [seg for seg in segments if seg["p_type"] == "PT_DYNAMIC"]
    if len(dynamic) != 1:
        return None
    offset, vaddr, filesz = dynamic[0]["p_offset"], dynamic[0]["p_vaddr"], dynamic[0]["p_filesz"]
    if offset + filesz > len(binary.data):
        return None
    entries = list(struct.iter_unpack("<iI", binary.data[offset:offset + filesz - filesz % 8]))
    tags = [tag for tag, _ in entries]
    if DT_NULL not in tags:
        return None
    first_null = tags.index(DT_NULL)
    values = dict(entries[:first_null])
    if DT_PREINIT_ARRAY in values:  # the program's own: its first word is the slot, no tag added
        if values.get(DT_PREINIT_ARRAYSZ, 0) < 4:
            return None
        free_slot, init_slot = None, values[DT_PREINIT_ARRAY]
    else:
        # Two slots for the new tags and a DT_NULL after them, all spare (nothing past the end).
        if len(entries) < first_null + 3 or any(entries[first_null + k] != (DT_NULL, 0) for k in range(3)):
            return None
        if values.get(DT_INIT_ARRAYSZ, 0) < 4 or DT_INIT_ARRAY not in values:
            return None
        free_slot, init_slot = vaddr + first_null * 8, values[DT_INIT_ARRAY]
    original = int.from_bytes(binary.read(init_slot, 4), "little")  # 0 where not in the file
    if original in (0, 0xFFFFFFFF) or not _relocated_as_expected(binary, values, init_slot):
        return None
    read_only = any(seg["p_type"] == "PT_GNU_RELRO" and seg["p_vaddr"] <= init_slot < seg["p_vaddr"] + seg["p_memsz"]
                    for seg in segments)
    return PreinitStart(free_slot, init_slot, original, read_only)


def _relocated_as_expected(binary: Binary, values: dict[int, int], slot: int) -> bool:
    """The word at ``slot`` is relocated as the stub's address needs: by R_ARM_RELATIVE
    alone in a PIE (the bias added to the word in place), not at all otherwise."""
    if DT_RELA in values:  # not an ARM table: read only REL's
        return False
    kinds = []
    table, size = values.get(DT_REL), values.get(DT_RELSZ, 0)
    if table is not None and size:
        start = binary.file_offset(table)
        if start is None or start + size > len(binary.data):
            return False
        kinds = [info & 0xFF for offset, info in struct.iter_unpack("<II", binary.data[start:start + size - size % 8])
                 if offset == slot]
    return kinds == ([R_ARM_RELATIVE] if binary.is_pie else [])


def apply(out: bytearray, start: PreinitStart, preinit_function: int, offset_of) -> None:
    """Write the two dynamic tags (unless the program has its preinit array) and the stub's
    address (``preinit_function``, Thumb bit set) over the slot's word; ``offset_of(vaddr)``:
    its offset in ``out``."""
    if start.free_slot is not None:
        struct.pack_into("<iIiI", out, offset_of(start.free_slot), DT_PREINIT_ARRAY, start.init_slot,
                         DT_PREINIT_ARRAYSZ, 4)
    struct.pack_into("<I", out, offset_of(start.init_slot), preinit_function | 1)

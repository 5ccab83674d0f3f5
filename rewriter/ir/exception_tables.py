"""Where the unwinder enters code (C++ exceptions, C cleanups), read from the ARM EHABI tables.

When an exception passes through a function, the unwinder looks the function up in
``.ARM.exidx`` (pairs of words: the function's start as a 31-bit place-relative offset,
then 1 = cannot unwind, an inline entry with bit 31 set, or an offset to its
``.ARM.extab`` entry). A generic ``.ARM.extab`` entry (GCC's, bit 31 clear) holds the
personality routine's offset, then a word whose top byte counts the further words of
unwinding opcodes, those words, and then the language-specific data area (LSDA) that
``__gxx_personality_v0`` and ``__gcc_personality_v0`` read: a header (landing-pad base,
type table, call-site encoding and length) and call-site records (start, length,
landing pad, action), the landing pad an offset from the base (the function's start
unless the header names one).

The unwinder calls the personality routine and, as it says, jumps to a landing pad:
code addresses the program's own flow does not reach that way, so the rewriter must know
them (a block starts there, it is entered from outside, and with original return
addresses it gets a jump to its relocated copy). Entries this module cannot read (indirect or unknown encodings) are
skipped; the caller keeps only addresses where an instruction starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import NamedTuple

from elftools.elf.elffile import ELFFile

OMIT = 0xFF


def unwinder_entries(elf: ELFFile, read: Callable[[int, int], bytes]) -> set[int]:
    """Where the unwinder enters the program's code (bit 0 clear): the landing pads of every
    function with a generic ``.ARM.extab`` entry, and the personality routines it calls
    (in a dynamic program, PLT entries); ``read(address, size)`` reads the loaded image."""
    entries: set[int] = set()
    for personality, pads in handlers(elf, read).values():
        entries |= pads | {personality}
    return entries


def personality_routines(elf: ELFFile, read: Callable[[int, int], bytes]) -> set[int]:
    """The personality routines generic ``.ARM.extab`` entries name, with their Thumb bit
    (the unwinder calls them through these words: in a static program nothing else may)."""
    out = set()
    for entry in _extab_entries(elf, read).values():
        try:
            head = int.from_bytes(read(entry, 4), "little")
        except (ValueError, IndexError):
            continue  # outside the image: a corrupt table
        if not head & 0x80000000:
            out.add(prel31(entry, head))
    return out


def index_rows(base: int, table: bytes) -> Iterator[tuple[int, int]]:
    """(the function it names, its second word) for each row of the index table ``table``
    at address ``base``; the function's address as the row's 31-bit place-relative offset
    gives it."""
    for at in range(0, len(table) - 7, 8):
        first, second = (int.from_bytes(table[at + k:at + k + 4], "little") for k in (0, 4))
        yield prel31(base + at, first), second


def indexed_functions(elf: ELFFile, read: Callable[[int, int], bytes]) -> frozenset[int]:
    """The starts (bit 0 clear) of the functions ``.ARM.exidx`` names, one per row: the
    compiler's own boundaries. Not every function has a row (the linker merges the rows of
    neighbours that cannot unwind, and its last row, EXIDX_CANTUNWIND, names the end of the
    code the table covers), and a row says nothing of the instruction set."""
    return frozenset(function & ~1 for base, size in _exidx_tables(elf)
                     for function, _ in index_rows(base, read(base, size)))


def _extab_entries(elf: ELFFile, read: Callable[[int, int], bytes]) -> dict[int, int]:
    """Function start (bit 0 clear) -> the address of its ``.ARM.extab`` entry, for each
    ``.ARM.exidx`` row that has one."""
    out = {}
    for base, size in _exidx_tables(elf):
        for at, (function, second) in enumerate(index_rows(base, read(base, size))):
            if second == 1 or second & 0x80000000:
                continue  # cannot unwind, or an inline compact entry: no LSDA
            out[function & ~1] = prel31(base + 8 * at + 4, second)
    return out


def _exidx_tables(elf: ELFFile) -> list[tuple[int, int]]:
    """Where the index tables are ([address, size) each): every section of type
    SHT_ARM_EXIDX, whatever a linker script named it (NXP's Kinetis scripts put
    ``.ARM.exidx`` in an output section called ``.ARM``; GNU ld then writes no
    PT_ARM_EXIDX), else the PT_ARM_EXIDX segment (an image without section headers)."""
    tables = [(section["sh_addr"], section["sh_size"]) for section in elf.iter_sections()
              if section["sh_type"] == "SHT_ARM_EXIDX" and section["sh_size"] and section["sh_flags"] & 2]
    if tables:
        return tables
    return [(segment["p_vaddr"], segment["p_filesz"]) for segment in elf.iter_segments()
            if segment["p_type"] == "PT_ARM_EXIDX" and segment["p_filesz"]]


def handlers(elf: ELFFile, read: Callable[[int, int], bytes]) -> dict[int, tuple[int, set[int]]]:
    """Function start (bit 0 clear) -> its personality routine and landing pads, for the
    functions with a generic ``.ARM.extab`` entry that this module can read."""
    found: dict[int, tuple[int, set[int]]] = {}
    for function, entry in _extab_entries(elf, read).items():
        try:
            handler = _handler_of(read, entry, function)
        except (ValueError, IndexError):
            continue  # not readable as GCC's layout: nothing known to land there
        if handler is not None:
            found[function] = handler
    return found


def prel31(place: int, word: int) -> int:
    """The address a 31-bit place-relative offset at ``place`` names."""
    offset = word & 0x7FFFFFFF
    if offset & 0x40000000:
        offset -= 0x80000000
    return (place + offset) & 0xFFFFFFFF


def _handler_of(read: Callable[[int, int], bytes], entry: int, function: int) -> tuple[int, set[int]] | None:
    """The personality routine of an ``.ARM.extab`` entry and the landing pads of its LSDA."""
    head = int.from_bytes(read(entry, 4), "little")
    if head & 0x80000000:
        return None  # compact model (__aeabi_unwind_cpp_pr0/1/2): no GCC LSDA
    personality = prel31(entry, head) & ~1
    opcodes = int.from_bytes(read(entry + 4, 4), "little")
    lsda = entry + 8 + 4 * (opcodes >> 24)
    return personality, _pads_of_lsda(_Reader(read, lsda), function)


def landing_pads(read: Callable[[int, int], bytes], lsda: int, function: int) -> set[int]:
    """The landing pads of a 64-bit program's function whose LSDA (``.eh_frame``'s
    augmentation names it) is at ``lsda``; the same call-site records as ARM's."""
    return _pads_of_lsda(_Reader(read, lsda, bits=64), function, keep=(1 << 64) - 1)


class FrameDescription(NamedTuple):
    """What ``.eh_frame`` says of one function."""

    first: int  # the first address its FDE covers
    lsda: int  # its LSDA's address, or 0
    # Its CIE's augmentation has 'S': a signal handler's return trampoline, whose FDE may
    # start one byte before its code (glibc's ``__restore_rt``: ``.LSTART - 1``, so that an
    # unwinder that looks up a return address less one finds it).
    signal_frame: bool = False
    size: int = 0  # how many bytes from ``first`` the FDE covers


def eh_frame_functions(data: bytes, base: int) -> list[FrameDescription]:
    """What a 64-bit program's ``.eh_frame`` (``data``, loaded at ``base``) says of each
    function it has an FDE for. ValueError where the section is malformed.

    The section is a run of records, each a length (4 bytes, or 0xffffffff and 8) and an id
    (0: a CIE; else the distance back from the id to the FDE's CIE), ending at its end or at
    a zero length. A CIE's augmentation string says what its augmentation data holds, in
    order ('L': the LSDA's pointer encoding, 'P': the personality's encoding and pointer,
    'R': the FDEs' pointer encoding; 'S', 'B': nothing); an FDE starts with its function's
    first address and size in that encoding, then, with 'z', its own augmentation data: the
    LSDA's pointer. Only these fields are read: the call-frame instructions after them are
    skipped (pyelftools parses them all: most of the time it took on a big program)."""
    read = partial(_slice, data, base)
    cies: dict[int, tuple[int, int, bool]] = {}  # CIE's offset -> (FDE encoding, LSDA encoding, signal frame)
    found = []
    at = 0
    while at + 4 <= len(data):
        record = _record(data, base, at)
        if record is None:
            break
        id_at, cie_id, body, end = record
        r = _Reader(read, base + body, bits=64)
        if not cie_id:
            cies[at] = _cie_encodings(r)
        else:
            fde_encoding, lsda_encoding, signal_frame = (cies.get(id_at - cie_id)
                                                         or _cie_at(data, base, id_at - cie_id, cies))
            first = r.encoded(fde_encoding)
            size = r.encoded(fde_encoding & 0x0F)  # (no application: a size)
            lsda = 0
            if lsda_encoding != OMIT:  # (only with 'z': its data's length first)
                r.uleb128()
                try:
                    lsda = r.encoded(lsda_encoding)
                except ValueError:  # an encoding not read here: its landing pads stay unknown
                    lsda = 0
            found.append(FrameDescription(first, lsda, signal_frame, size))
        at = end
    return found


def _record(data: bytes, base: int, at: int) -> tuple[int, int, int, int] | None:
    """(where its id is, the id, where the fields after the id start, where it ends) of the
    ``.eh_frame`` record at offset ``at``; None for the zero length that ends the records.
    ValueError where it runs past the section."""
    length = int.from_bytes(_slice(data, base, base + at, 4), "little")
    if not length:
        return None
    id_size, id_at = (8, at + 12) if length == 0xFFFFFFFF else (4, at + 4)
    if id_size == 8:
        length = int.from_bytes(_slice(data, base, base + at + 4, 8), "little")
    end = id_at + length
    if end > len(data) or length < id_size:
        raise ValueError(f".eh_frame record at {base + at:#x} runs past the section")
    return id_at, int.from_bytes(data[id_at:id_at + id_size], "little"), id_at + id_size, end


def _cie_at(data: bytes, base: int, at: int, cies: dict[int, tuple[int, int, bool]]) -> tuple[int, int, bool]:
    """The encodings of the CIE at offset ``at`` (one after the FDE that names it, which the
    format allows), and whether it is a signal frame's."""
    record = _record(data, base, at) if 0 <= at <= len(data) - 8 else None
    if record is None or record[1]:
        raise ValueError(f"an FDE of .eh_frame names no CIE at {base + at:#x}")
    cies[at] = _cie_encodings(_Reader(partial(_slice, data, base), base + record[2], bits=64))
    return cies[at]


def _slice(data: bytes, base: int, at: int, size: int) -> bytes:
    """``size`` bytes of ``data`` (loaded at ``base``) from address ``at``; ValueError past its end."""
    if not base <= at <= at + size <= base + len(data):
        raise ValueError(f".eh_frame is cut short at {at:#x}")
    return data[at - base:at - base + size]


def _cie_encodings(r: _Reader) -> tuple[int, int, bool]:
    """(FDE pointer encoding, LSDA encoding or OMIT, whether a signal frame's: 'S') of the
    CIE whose version byte ``r`` is at."""
    version = r.byte()
    augmentation = bytearray()
    while (c := r.byte()) != 0:
        augmentation.append(c)
    if augmentation.startswith(b"eh"):
        r.at += 8
    r.uleb128()  # code alignment
    r.sleb128()  # data alignment
    r.byte() if version == 1 else r.uleb128()  # return address register
    fde_encoding, lsda_encoding = 0x00, OMIT
    signal_frame = b"S" in augmentation
    if augmentation[:1] != b"z":
        return fde_encoding, lsda_encoding, signal_frame
    r.uleb128()  # the augmentation data's length
    for c in augmentation[1:].decode("latin-1"):
        if c == "L":
            lsda_encoding = r.byte()
        elif c == "R":
            fde_encoding = r.byte()
        elif c == "P":
            encoding = r.byte()
            r.skip_encoded(encoding)
        elif c not in "SB":
            raise ValueError(f"unknown .eh_frame augmentation {augmentation.decode('latin-1')!r}")
    return fde_encoding, lsda_encoding, signal_frame


def _pads_of_lsda(r: _Reader, function: int, keep: int = 0xFFFFFFFE) -> set[int]:
    """``keep``: the bits of an address that are the address (not ARM's Thumb bit 0)."""
    lp_encoding = r.byte()
    lp_start = function if lp_encoding == OMIT else r.encoded(lp_encoding)
    ttype_encoding = r.byte()
    if ttype_encoding != OMIT:
        r.uleb128()
    cs_encoding = r.byte()
    length = r.uleb128()
    end = r.at + length
    pads = set()
    while r.at < end:
        r.encoded(cs_encoding)  # start of the region the record covers
        r.encoded(cs_encoding)  # its length
        pad = r.encoded(cs_encoding)
        r.uleb128()  # action
        if pad:
            pads.add((lp_start + pad) & keep)
    return pads


class _Reader:
    """DWARF exception-header values read one after another from the image."""

    def __init__(self, read: Callable[[int, int], bytes], at: int, bits: int = 32) -> None:
        self.read = read
        self.at = at
        self.bits = bits  # a pointer's width: an absptr's size, and what values wrap at

    def byte(self) -> int:
        value = self.read(self.at, 1)[0]
        self.at += 1
        return value

    def uleb128(self) -> int:
        return self._leb128(signed=False)

    def sleb128(self) -> int:
        return self._leb128(signed=True)

    def _leb128(self, signed: bool) -> int:
        """7 bits a byte, low first, the top bit set on all but the last; signed: the last
        byte's bit 6 is the sign."""
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value - (1 << shift) if signed and b & 0x40 else value
            if shift > 35:
                raise ValueError("LEB128 value too long")

    def skip_encoded(self, encoding: int) -> None:
        """Step over a DW_EH_PE-encoded value of any application (a personality's pointer,
        often indirect), without reading what it names."""
        form = encoding & 0x0F
        if encoding == OMIT:
            return
        if form in (0x01, 0x09):
            self.uleb128()
            return
        size = self.bits // 8 if form == 0x00 else _FORMS.get(form, (0, False))[0]
        if not size:
            raise ValueError(f"unsupported pointer format {form:#x}")
        self.read(self.at, size)  # (inside the image)
        self.at += size

    def encoded(self, encoding: int) -> int:
        """A DW_EH_PE-encoded value: the low nibble is the format, 0x10 makes it PC-relative;
        indirect (0x80) and other applications are not read."""
        if encoding == OMIT:
            return 0
        place = self.at
        form, application = encoding & 0x0F, encoding & 0x70
        if encoding & 0x80 or application not in (0x00, 0x10):
            raise ValueError(f"unsupported pointer encoding {encoding:#x}")
        if form == 0x01:
            value = self.uleb128()
        elif form == 0x09:
            value = self.sleb128()
        else:
            size, signed = (self.bits // 8, False) if form == 0x00 else _FORMS.get(form, (0, False))
            if not size:
                raise ValueError(f"unsupported pointer format {form:#x}")
            value = int.from_bytes(self.read(self.at, size), "little", signed=signed)
            self.at += size
        if application == 0x10:
            value += place
        return value & (1 << self.bits) - 1


# DW_EH_PE format -> (size, signed): udata2/4/8, sdata2/4/8 (absptr: a pointer's size).
_FORMS = {0x02: (2, False), 0x03: (4, False), 0x04: (8, False), 0x0A: (2, True),
          0x0B: (4, True), 0x0C: (8, True)}

"""Section headers for a program that has none (``sstrip``, ``llvm-objcopy --strip-sections``).

The kernel and the dynamic linker run a program from its program headers alone; the
section header table is for linkers and debuggers, and tools that shrink programs drop
it. Anvil's loader, descent and writers read a program through its sections (where the
code is, the PLT, the dynamic symbols and relocations, the init and fini arrays, the
unwinding tables), so such a program was refused. Everything they read is also named by
the program headers and the dynamic table, and this module writes it back as sections
(decision 0132):

- the code: each executable segment's bytes but those the tables below name, from the
  first to the last place known to be code (``_code_span``); the rest of those segments
  read-only data (``.rodata``, not decoded: its words are looked at as data);
- from PT_INTERP, PT_NOTE, PT_DYNAMIC, PT_ARM_EXIDX, PT_GNU_EH_FRAME and PT_TLS their
  sections, and the ``.eh_frame`` that ``.eh_frame_hdr`` points at (its records walked);
- from the dynamic table: ``.dynsym`` (as many entries as DT_HASH or DT_GNU_HASH and the
  relocations name), ``.dynstr``,
  the relocations (``.rel[a].dyn``, ``.rel[a].plt``) and the init, fini and preinit arrays;
- the PLT, where its entries jump through the slots the PLT's relocations name;
- each writable segment's bytes as ``.data`` and the memory past them as ``.bss``.

The table and its names go where the bytes the headers describe end; bytes after that (a
payload appended to the program, decision 0102) follow them, so the file still ends as
it did. Nothing loaded moves.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import AnvilError
from .elf_check import (
    PT_DYNAMIC,
    PT_INTERP,
    PT_LOAD,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHT_ARM_EXIDX,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_HASH,
    SHT_NOBITS,
    SHT_PROGBITS,
    SHT_REL,
    SHT_RELA,
    SHT_STRTAB,
    layout_of,
)
from .exception_tables import index_rows
from .gaps import uncovered
from .plt import PLT0_SIZE, TRAP_FILL, plt_entries

PT_NOTE, PT_TLS, PT_GNU_EH_FRAME, PT_ARM_EXIDX = 4, 7, 0x6474E550, 0x70000001
PF_X, PF_W = 1, 2
SHT_NOTE, SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY = 7, 14, 15, 16
SHF_WRITE, SHF_INFO_LINK, SHF_LINK_ORDER, SHF_TLS = 1, 0x40, 0x80, 0x400
A, AX, WA = SHF_ALLOC, SHF_ALLOC | SHF_EXECINSTR, SHF_WRITE | SHF_ALLOC
EM_ARM = 40
#: The relocations that fill GOT slots (GLOB_DAT, JUMP_SLOT), by machine (ARM, x86-64).
GOT_RELOCATIONS = {EM_ARM: (21, 22), 62: (6, 7)}
DT = {"PLTGOT": 3, "HASH": 4, "STRTAB": 5, "SYMTAB": 6, "RELA": 7, "RELASZ": 8, "STRSZ": 10, "INIT": 12,
      "FINI": 13, "REL": 17, "RELSZ": 18, "PLTREL": 20, "JMPREL": 23, "PLTRELSZ": 2, "INIT_ARRAY": 25, "FINI_ARRAY": 26,
      "INIT_ARRAYSZ": 27, "FINI_ARRAYSZ": 28, "PREINIT_ARRAY": 32, "PREINIT_ARRAYSZ": 33, "GNU_HASH": 0x6FFFFEF5}
#: glibc's ``_init`` and ``_fini`` on ARM (crti.o's A32 ``push {r3, lr}``, crtn.o's ``pop {r3,
#: pc}``): ``.init`` starts the code before ``.text``, ``.fini`` ends it after.
_PUSH, _POP = struct.pack("<I", 0xE92D4008), struct.pack("<I", 0xE8BD8008)
#: UPX's loader header (``l_info``), right after a packed program's program headers, holds
#: this magic; the packed program has no section headers.
UPX_MAGIC, UPX_HEADER_END = b"UPX!", 0x400
#: The end of glibc's ``_fini`` on x86-64: ``add rsp, 8; ret``.
_X86_64_FINI_END = bytes.fromhex("4883c408c3")
#: How far before the first function and after the last one ``.init`` and ``.fini`` are
#: looked for where the dynamic table does not name them (a static program).
_NEAR = 1 << 16


@dataclass
class _Section:
    name: str
    kind: int
    flags: int
    address: int
    offset: int
    size: int
    link: str = ""  # the name of the section sh_link names
    info: str = ""
    entsize: int = 0
    align: int = 1


class _Program:
    """The program headers and dynamic table of one ELF file, and reading at addresses."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.layout = layout_of(data)
        self.wide = self.layout.bits == 64
        self.word = 8 if self.wide else 4
        (_, self.machine, _, self.entry, phoff, _, _, _, phentsize, phnum, _, _,
         _) = struct.unpack_from(self.layout.header, data, 16)
        self.headers = []
        for i in range(phnum):
            fields = struct.unpack_from(self.layout.program_header, data, phoff + i * phentsize)
            flags, align = (fields[1], fields[7]) if self.wide else (fields[6], fields[7])
            self.headers.append((*self.layout.segment(fields), flags, align))
        self.table_end = phoff + phnum * phentsize
        self.loads = [h for h in self.headers if h[0] == PT_LOAD]
        self.tags: dict[int, int] = {}
        dynamic = self.segment(PT_DYNAMIC)
        if dynamic is not None:
            pair = "<qQ" if self.wide else "<iI"
            for at in range(dynamic[1], dynamic[1] + dynamic[3] - struct.calcsize(pair) + 1, struct.calcsize(pair)):
                tag, value = struct.unpack_from(pair, data, at)
                if tag == 0:
                    break
                self.tags.setdefault(tag, value)

    def segment(self, kind: int) -> tuple[int, int, int, int, int, int, int] | None:
        """The first program header of type ``kind``: (type, offset, address, file size,
        memory size, flags, alignment)."""
        return next((h for h in self.headers if h[0] == kind), None)

    def offset(self, address: int, size: int = 1) -> int | None:
        """The file offset of ``size`` bytes at ``address``, if a loaded segment's file bytes hold them."""
        for _, offset, vaddr, filesz, _, _, _ in self.loads:
            if vaddr <= address and address + size <= vaddr + filesz:
                return offset + address - vaddr
        return None

    def read(self, address: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``address``: fewer where its segment's file bytes end."""
        for _, offset, vaddr, filesz, _, _, _ in self.loads:
            if vaddr <= address < vaddr + filesz:
                at = offset + address - vaddr
                return self.data[at:at + min(size, vaddr + filesz - address)]
        return b""

    def tag(self, name: str) -> int | None:
        return self.tags.get(DT[name])


def with_section_headers(path: str, data: bytes) -> bytes:
    """``data`` (read from ``path``) with a section header table made from its program
    headers and dynamic table, if it has none (``e_shnum`` 0); ``data`` itself otherwise,
    and where the program headers do not describe what the sections need (then nothing is
    read). A program UPX packed is refused (AnvilError): its code is made at run time."""
    layout = layout_of(data)
    if layout is None or struct.unpack_from(layout.header, data, 16)[11]:
        return data
    if UPX_MAGIC in data[:UPX_HEADER_END]:
        raise AnvilError(f"{path}: packed by UPX (its code is unpacked as it runs, where a rewrite of the file "
                         "cannot see it): unpack it with 'upx -d' first")
    try:
        program = _Program(data)
        sections = _sections(program)
    except (struct.error, ValueError, IndexError):  # headers the check let through, oddly laid out
        return data
    if not any(s.flags & SHF_EXECINSTR for s in sections):
        return data
    return _with_table(program, sections)


def _sections(p: _Program) -> list[_Section]:
    """The sections ``p``'s headers and dynamic table name, ordered by address."""
    out: list[_Section] = []

    def add(name: str, kind: int, flags: int, address: int | None, size: int, **more: object) -> None:
        if address is None or size <= 0:
            return
        at = p.offset(address, size) if kind != SHT_NOBITS else 0
        if at is None:
            return
        out.append(_Section(name, kind, flags, address, at, size, **more))  # type: ignore[arg-type]

    for kind, name, section_kind in ((PT_INTERP, ".interp", SHT_PROGBITS), (PT_NOTE, ".note", SHT_NOTE)):
        if (h := p.segment(kind)) is not None:
            add(name, section_kind, A, h[2], h[3], align=4)
    rela = p.tag("PLTREL") == DT["RELA"] or (p.wide and p.tag("PLTREL") is None)
    kind, dyn, plt = (SHT_RELA, ".rela.dyn", ".rela.plt") if rela else (SHT_REL, ".rel.dyn", ".rel.plt")
    relsize = (24 if p.wide else 12) if rela else (16 if p.wide else 8)
    jmprel, jmpsize = p.tag("JMPREL"), p.tag("PLTRELSZ") or 0
    start, size = (p.tag("RELA"), p.tag("RELASZ") or 0) if rela else (p.tag("REL"), p.tag("RELSZ") or 0)
    if start is not None and jmprel is not None and start < jmprel < start + size:
        size = jmprel - start  # a linker that counts the PLT's relocations in DT_RELSZ too
    referenced = [_relocated_symbols(p, at, n, relsize) for at, n in ((start, size), (jmprel, jmpsize))]
    symbols = p.tag("SYMTAB")
    entry = 24 if p.wide else 16
    count = max(_hashed_symbols(p), *(max(indexes, default=-1) + 1 for indexes in referenced))
    add(".dynsym", SHT_DYNSYM, A, symbols, count * entry, link=".dynstr", info="1", entsize=entry, align=p.word)
    add(".dynstr", SHT_STRTAB, A, p.tag("STRTAB"), p.tag("STRSZ") or 0)
    if (table := p.tag("HASH")) is not None:
        add(".hash", SHT_HASH, A, table, 8 + 4 * sum(struct.unpack("<II", p.read(table, 8))), link=".dynsym",
            entsize=4, align=4)
    link = ".dynsym" if count else ""
    add(dyn, kind, A, start, size, link=link, entsize=relsize, align=p.word)
    plt_range = _plt(p, jmprel, jmpsize, relsize, rela)
    add(plt, kind, A | SHF_INFO_LINK, jmprel, jmpsize, link=link, info=".plt" if plt_range else "", entsize=relsize,
        align=p.word)
    for name, array, kind_ in (("init_array", "INIT_ARRAY", SHT_INIT_ARRAY), ("fini_array", "FINI_ARRAY",
                                                                               SHT_FINI_ARRAY),
                               ("preinit_array", "PREINIT_ARRAY", SHT_PREINIT_ARRAY)):
        add(f".{name}", kind_, WA, p.tag(array), p.tag(array + "SZ") or 0, entsize=p.word, align=p.word)
    if (h := p.segment(PT_DYNAMIC)) is not None:
        add(".dynamic", SHT_DYNAMIC, WA, h[2], h[3], link=".dynstr", entsize=2 * p.word, align=p.word)
    if (h := p.segment(PT_ARM_EXIDX)) is not None:
        add(".ARM.exidx", SHT_ARM_EXIDX, A | SHF_LINK_ORDER, h[2], h[3], link=".text", entsize=8, align=4)
    if (h := p.segment(PT_GNU_EH_FRAME)) is not None:
        add(".eh_frame_hdr", SHT_PROGBITS, A, h[2], h[3], align=4)
        frames = _eh_frame(p, h[2])
        if frames is not None:
            add(".eh_frame", SHT_PROGBITS, A, frames[0], frames[1], align=p.word)
    if (h := p.segment(PT_TLS)) is not None:
        add(".tdata", SHT_PROGBITS, WA | SHF_TLS, h[2], h[3], align=h[6] or 1)
        add(".tbss", SHT_NOBITS, WA | SHF_TLS, h[2] + h[3], h[4] - h[3], align=h[6] or 1)
    if plt_range is not None:
        add(".plt", SHT_PROGBITS, AX, plt_range[0], plt_range[1] - plt_range[0], entsize=16 if p.wide else 4, align=4)
    named = sorted((s.address, s.address + s.size) for s in out if s.kind != SHT_NOBITS)
    starts, ends = _code_places(p, out, plt_range)
    span_start, code_end = _code_span(p, starts, ends)
    got_end = _got_end(p, [(start, size), (jmprel, jmpsize)], relsize)
    entry = p.entry & ~1
    for _, offset, vaddr, filesz, memsz, flags, _ in p.loads:
        first = vaddr + max(0, p.table_end - offset) if offset < p.table_end else vaddr  # past the ELF headers
        code_start = span_start
        if flags & PF_X and flags & PF_W:
            # A segment of data and code (a linker script that puts .text after .data): its
            # code starts at the first function an unwind table names in it where one comes
            # before the entry, else after the GOT. The GOT and .data before the code are
            # data, not code a pointer to them would make a procedure of (decision 0188).
            inside = [s for s in starts if vaddr <= s < entry]
            if inside:
                code_start = max(span_start, min(inside))
            elif got_end is not None and vaddr <= got_end <= entry < vaddr + filesz:
                code_start = max(span_start, got_end)
        for lo, hi in uncovered([(first, vaddr + filesz)], named):
            if flags & PF_X:
                add(".rodata", SHT_PROGBITS, A, lo, min(hi, code_start) - lo, align=4)
                add(".text", SHT_PROGBITS, AX, max(lo, code_start), min(hi, code_end) - max(lo, code_start), align=4)
                add(".rodata", SHT_PROGBITS, A, max(lo, code_end), hi - max(lo, code_end), align=4)
            elif flags & PF_W:
                add(".data", SHT_PROGBITS, WA, lo, hi - lo, align=p.word)
            else:
                add(".rodata", SHT_PROGBITS, A, lo, hi - lo, align=4)
        if flags & PF_W and memsz > filesz:
            add(".bss", SHT_NOBITS, WA, vaddr + filesz, memsz - filesz, align=p.word)
    return sorted(out, key=lambda s: (s.address, s.kind == SHT_NOBITS))


def _relocations(p: _Program, at: int | None, size: int, entry: int) -> Iterator[tuple[int, int, int]]:
    """(place, type, symbol index) of each REL or RELA entry (``entry`` bytes) of the
    ``size`` bytes of relocations at ``at``."""
    if at is None or not size:
        return
    table = p.read(at, size)
    form, shift = ("<QQ", 32) if p.wide else ("<II", 8)
    for i in range(0, len(table) - entry + 1, entry):
        place, info = struct.unpack_from(form, table, i)
        yield place, info & ((1 << shift) - 1), info >> shift


def _relocated_symbols(p: _Program, at: int | None, size: int, entry: int) -> set[int]:
    """The symbol indexes of the ``size`` bytes of relocations at ``at``."""
    return {symbol for _, _, symbol in _relocations(p, at, size, entry)}


def _got_end(p: _Program, tables: list[tuple[int | None, int]], entry: int) -> int | None:
    """Where the GOT ends: past DT_PLTGOT's three reserved words and the words the
    relocations of ``tables`` ((address, size) of REL or RELA entries of ``entry`` bytes)
    fill with symbols' addresses (GLOB_DAT, JUMP_SLOT); None without DT_PLTGOT."""
    base = p.tag("PLTGOT")
    if base is None:
        return None
    kinds = GOT_RELOCATIONS.get(p.machine, ())
    return max([base + 3 * p.word, *(place + p.word for at, size in tables
                                     for place, kind, _ in _relocations(p, at, size, entry) if kind in kinds)])


def _hashed_symbols(p: _Program) -> int:
    """How many ``.dynsym`` entries the hash table covers: DT_HASH's chain count, or past
    the last symbol DT_GNU_HASH's buckets and chains reach (the symbols before its first
    hashed one, imports, are only known by the relocations that name them)."""
    if (table := p.tag("HASH")) is not None:
        return struct.unpack("<II", p.read(table, 8))[1]
    gnu = p.tag("GNU_HASH")
    if gnu is None:
        return 0
    buckets, first, blooms, _ = struct.unpack("<IIII", p.read(gnu, 16))
    at = gnu + 16 + blooms * p.word
    last = max(struct.unpack(f"<{buckets}I", p.read(at, 4 * buckets)) or (0,))
    if last < first:
        return first
    chains = at + 4 * buckets
    while not struct.unpack("<I", p.read(chains + 4 * (last - first), 4))[0] & 1:
        last += 1
    return last + 1


def _plt(p: _Program, jmprel: int | None, size: int, entry: int, rela: bool) -> tuple[int, int] | None:
    """[start, end) of the PLT: the entries that jump through the GOT slots the PLT's
    relocations name, and PLT0 before them."""
    if jmprel is None or not size:
        return None
    fields = "<QQq" if rela and p.wide else ("<IIi" if rela else "<II")
    table = p.read(jmprel, size)
    slots = {struct.unpack_from(fields, table, i)[0] for i in range(0, len(table) - entry + 1, entry)}
    for _, offset, vaddr, filesz, _, flags, _ in p.loads:
        if flags & PF_X:
            code = p.data[offset:offset + filesz]
            found = _x86_64_plt(code, vaddr, slots) if p.wide else _arm_plt(code, vaddr, slots)
            if found is not None:
                return found
    return None


_ARM_PLT_JUMPS = re.compile(rb"(?s)..\xbc\xe5|\x00\xf0\x9c\xe5")  # ldr pc, [ip, #n]! and ldr pc, [ip]


def _arm_plt(code: bytes, base: int, slots: set[int]) -> tuple[int, int] | None:
    """The ARM PLT in ``code`` (at ``base``): the first entry whose jump goes through one of
    ``slots``, PLT0 (GNU ld's 20 bytes, ld.lld's 32) and a Thumb stub before it, the entries
    after it (plt.plt_entries)."""
    for match in _ARM_PLT_JUMPS.finditer(code):
        at = match.start() - 8
        if at < PLT0_SIZE or at % 4:
            continue
        entries, end = plt_entries(code, base, at, slots)
        if not entries:
            continue
        first = at - 4 if code[at - 4:at - 2] == b"\x78\x47" else at  # bx pc
        start = first - (32 if code[first - 4:first] == TRAP_FILL else PLT0_SIZE)
        if start >= 0 and code[start:start + 4] == b"\x04\xe0\x2d\xe5":  # str lr, [sp, #-4]!
            return base + start, base + end
        return base + first, base + end
    return None


_X86_64_JUMPS = re.compile(rb"(?s)\xff\x25(....)")  # jmp [rip + disp32]


def _x86_64_plt(code: bytes, base: int, slots: set[int]) -> tuple[int, int] | None:
    """The x86-64 PLT in ``code`` (at ``base``): from PLT0 (``push [rip + n]; jmp [rip +
    m]``, 16 bytes before the first entry) or the first entry to the end of the last one
    that jumps through one of ``slots``; entries of 16 bytes (``.plt``, ``.plt.sec``)."""
    jumps = [m.start() for m in _X86_64_JUMPS.finditer(code)
             if base + m.end() + struct.unpack("<i", m.group(1))[0] in slots]
    if not jumps:
        return None
    first = jumps[0] & ~15
    if first >= 16 and code[first - 16:first - 14] == b"\xff\x35":
        first -= 16
    return base + first, base + ((jumps[-1] & ~15) + 16)


def _eh_frame(p: _Program, header: int) -> tuple[int, int] | None:
    """[start, size) of ``.eh_frame``: where ``.eh_frame_hdr``'s pointer (encoded
    absolute or PC-relative, 4 or 8 bytes) says, up to its zero terminator."""
    version, encoding = p.read(header, 2) or (0, 0)
    if version != 1:
        return None
    form, relative = encoding & 0x0F, encoding & 0x70
    size = {0x03: 4, 0x0B: 4, 0x04: 8, 0x0C: 8}.get(form)
    if size is None or relative not in (0x00, 0x10):
        return None
    value = int.from_bytes(p.read(header + 4, size), "little", signed=bool(form & 0x08))
    start = (value + (header + 4 if relative else 0)) & ((1 << (8 * p.word)) - 1)
    at = start
    while len(length := p.read(at, 4)) == 4:
        n = int.from_bytes(length, "little")
        if not n:
            return (start, at + 4 - start) if at > start else None  # the terminator
        at += 4 + (n if n != 0xFFFFFFFF else 8 + int.from_bytes(p.read(at + 4, 8), "little"))
    return (start, at - start) if at > start and p.offset(start, at - start) is not None else None


def _code_places(p: _Program, named: list[_Section], plt: tuple[int, int] | None) -> tuple[list[int], list[int]]:
    """The places known to start code and to end it: the entry, the PLT, DT_INIT, the
    functions the ARM exception index or ``.eh_frame_hdr``'s table names, ``_fini`` up to
    its ``pop {r3, pc}``."""
    starts, ends = [p.entry & ~1], []
    if plt is not None:
        starts.append(plt[0])
        ends.append(plt[1])
    if (init := p.tag("INIT")) is not None:
        starts.append(init & ~1)
    if (fini := p.tag("FINI")) is not None:
        ends.append(_fini_end(p, fini))
    index = next((s for s in named if s.kind == SHT_ARM_EXIDX), None)
    if index is not None and index.size >= 8:
        # Each entry names a function by a signed 31-bit offset from itself; the last one,
        # the linker's EXIDX_CANTUNWIND, names the end of the code the table covers.
        functions = [function for function, _ in index_rows(index.address, p.read(index.address, index.size))]
        starts.extend(functions)
        ends.append(max(functions))
    header = next((s for s in named if s.name == ".eh_frame_hdr"), None)
    if header is not None:
        functions = _eh_frame_functions(p, header.address)
        if functions is not None:
            starts.extend(functions[0])
            ends.append(functions[1])
    return starts, ends


def _code_span(p: _Program, starts: list[int], ends: list[int]) -> tuple[int, int]:
    """[start, end) of the code in the executable segments: from the first to the last
    place known to be code (``_code_places``). The rest of those segments is read-only
    data (the dynamic symbols' tables before, the constants after): decoding it would take
    strings for code. Every executable byte is code where nothing says more than the entry."""
    if not ends or max(ends) <= p.entry & ~1:
        return 0, 1 << 64
    start, end = min(starts) & ~3, max(ends)
    if p.machine == EM_ARM and p.tag("INIT") is None:
        start = _aligned(p, start - _NEAR, start, _PUSH, last=True) or start
    if p.machine == EM_ARM and p.tag("FINI") is None:
        found = _aligned(p, end, end + _NEAR, _PUSH + _POP)
        end = found + 8 if found is not None else end
    return start, end


def _fini_end(p: _Program, fini: int) -> int:
    """Where DT_FINI's function ends: after glibc's A32 ``pop {r3, pc}`` or x86-64 epilogue,
    after the first Thumb ``pop {..., pc}`` of a Thumb one (musl's crtn: ``pop {r0, pc}``),
    else after its first instruction (never inside it: a cut there, at no entry, was found
    again in every round of the descent)."""
    code = p.read(fini & ~1, 64)
    if p.machine == EM_ARM and fini & 1:
        for at in range(0, len(code) - 1, 2):
            if code[at + 1] == 0xBD:  # pop {..., pc} (16-bit)
                return (fini & ~1) + at + 2
        return (fini & ~1) + 2
    last = _POP if p.machine == EM_ARM else _X86_64_FINI_END
    stop = code.find(last)
    return (fini & ~1) + (stop + len(last) if stop >= 0 else 4 if p.machine == EM_ARM else 1)


def _aligned(p: _Program, lo: int, hi: int, pattern: bytes, last: bool = False) -> int | None:
    """The first (or ``last``) word-aligned address in [lo, hi) of an executable segment
    where ``pattern`` is."""
    for _, offset, vaddr, filesz, _, flags, _ in p.loads:
        if not flags & PF_X or hi <= vaddr or lo >= vaddr + filesz:
            continue
        a, b = max(lo, vaddr), min(hi, vaddr + filesz)
        code = p.data[offset + a - vaddr:offset + b - vaddr]
        at = code.rfind(pattern) if last else code.find(pattern)
        while at >= 0 and (a + at) % 4:
            at = code.rfind(pattern, 0, at) if last else code.find(pattern, at + 1)
        if at >= 0:
            return a + at
    return None


def _eh_frame_functions(p: _Program, header: int) -> tuple[list[int], int] | None:
    """The functions ``.eh_frame_hdr``'s search table names and the end of the last one
    (its FDE's range), for the usual encodings (a 4-byte count, 4-byte entries relative to
    the header); None for others."""
    version, _, count_form, table_form = p.read(header, 4) or b"\0\0\0\0"
    if version != 1 or count_form != 0x03 or table_form != 0x3B:
        return None
    count = struct.unpack("<I", p.read(header + 8, 4))[0]
    if not count:
        return None
    mask = (1 << 8 * p.word) - 1
    table = p.read(header + 12, 8 * count)
    if len(table) != 8 * count:  # (a count past the segment's bytes: not a table to trust)
        return None
    functions = [(header + location) & mask for location, _ in struct.iter_unpack("<ii", table)]
    last, fde = struct.unpack_from("<ii", table, 8 * (count - 1))
    size = struct.unpack("<I", p.read(header + fde + 12, 4))[0]
    return functions, (header + last + size) & mask


def _with_table(p: _Program, sections: list[_Section]) -> bytes:
    """``p``'s bytes with ``sections`` (and a name table) in a section header table where
    the bytes its headers describe end; the bytes after that follow it."""
    described = max([p.table_end, *(offset + filesz for _, offset, _, filesz, _, _, _ in p.headers)])
    head, tail = p.data[:described], p.data[described:]
    names_table = _Section(".shstrtab", SHT_STRTAB, 0, 0, len(head), 0)
    every = [_Section("", 0, 0, 0, 0, 0), *sections, names_table]
    names = b"\0"
    where: dict[str, int] = {}
    offsets: list[int] = []
    for s in every:
        where.setdefault(s.name, len(offsets))
        found = names.find(s.name.encode() + b"\0") if s.name else 0
        if found < 0:
            found = len(names)
            names += s.name.encode() + b"\0"
        offsets.append(found)
    names_table.size = len(names)
    names_at = len(head)
    table_at = -(-(names_at + len(names)) // p.word) * p.word
    rows = []
    for name_at, s in zip(offsets, every):
        link, info = where.get(s.link, 0), where.get(s.info, int(s.info) if s.info.isdigit() else 0)
        # ELF32 and ELF64 section headers hold their fields in the same order.
        rows.append(struct.pack(p.layout.section_header, name_at, s.kind, s.flags, s.address, s.offset, s.size,
                                link, info, s.align, s.entsize))
    table = b"".join(rows)
    out = bytearray(head + names + bytes(table_at - names_at - len(names)) + table + tail)
    fields = list(struct.unpack_from(p.layout.header, out, 16))
    fields[5], fields[10], fields[11], fields[12] = table_at, p.layout.shdr_size, len(every), len(every) - 1
    struct.pack_into(p.layout.header, out, 16, *fields)
    return bytes(out)

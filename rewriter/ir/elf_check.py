"""Check an ELF file's structure before anything parses it.

pyelftools and the loader trust the headers: an offset past the end of the file, an entry
size of 0, a count too large or a link to the wrong kind of section gives a
``struct.error``, a ``ZeroDivisionError``, an ``ELFParseError`` or a wrong answer wherever
the field happens to be read, often deep in the rewriter. One pass here, over raw bytes,
checks what the rest relies on and names the first problem found:

- the identification: ELF magic, 32-bit little-endian ARM or 64-bit little-endian x86-64,
  an executable;
- the program headers: entry size, table inside the file, each loaded segment's bytes
  inside the file and its memory inside the address space;
- the section headers: entry size, table inside the file, the section-name table, each
  section's bytes inside the file and, for a loaded one, inside a loaded segment at the
  address the segment gives them, its name inside the name table, the type its name
  promises (``.symtab`` a symbol table, ``.rel.plt`` relocations, ...), the section its
  ``sh_link`` names being of the kind its type needs, and the entry sizes of the tables
  that are read entry by entry (symbols, relocations, dynamic tags).

What the check passes, pyelftools can parse without reading outside the file. Contents
(symbols, unwinding tables, DWARF) are read later by code that checks its own indices.
"""

from __future__ import annotations

import struct

from ..errors import AnvilError

EM_ARM, EM_X86_64 = 40, 62
_MACHINES = {62: "x86-64", 3: "x86", 183: "AArch64", 243: "RISC-V", 8: "MIPS", 21: "PowerPC64", 20: "PowerPC",
             2: "SPARC", 43: "SPARC64", 22: "S/390"}
_TYPES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}


class _Layout:
    """Where an ELF class keeps the fields read here, and how large its tables' entries are."""

    def __init__(self, bits: int, header: str, program_header: str, section_header: str,
                 entry_sizes: tuple[int, int, int, int]) -> None:
        self.bits = bits
        self.header, self.program_header, self.section_header = header, program_header, section_header
        self.ehdr_size = 16 + struct.calcsize(header)
        self.phdr_size = struct.calcsize(program_header)
        self.shdr_size = struct.calcsize(section_header)
        symbol, rel, rela, dynamic = entry_sizes
        self.entry_sizes = {**{t: symbol for t in _SYMBOL_TABLES}, SHT_REL: rel, SHT_RELA: rela,
                            SHT_DYNAMIC: dynamic}

    def segment(self, fields: tuple[int, ...]) -> tuple[int, int, int, int, int]:
        """(p_type, p_offset, p_vaddr, p_filesz, p_memsz) of an unpacked program header."""
        if self.bits == 32:
            p_type, offset, vaddr, _, filesz, memsz, _, _ = fields
        else:
            p_type, _, offset, vaddr, _, filesz, memsz, _ = fields
        return p_type, offset, vaddr, filesz, memsz
PT_LOAD = 1
SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_HASH, SHT_DYNAMIC, SHT_NOBITS, SHT_REL, SHT_DYNSYM = (
    0, 2, 3, 4, 5, 6, 8, 9, 11)
SHT_GNU_HASH, SHT_SUNW_LDYNSYM, SHT_SUNW_SYMINFO = 0x6FFFFFF6, 0x6FFFFFF3, 0x6FFFFFFC
SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
SHN_XINDEX = 0xFFFF
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
_SYMBOL_TABLES = (SHT_SYMTAB, SHT_DYNSYM, SHT_SUNW_LDYNSYM)
# Section type -> the types its sh_link may name (pyelftools follows these links when it
# makes the section object, that is whenever sections are listed or looked up by name);
# 0 in the tuple: no link at all is fine too.
_LINKS: dict[int, tuple[int, ...]] = {
    **{t: (SHT_STRTAB,) for t in (*_SYMBOL_TABLES, SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_DYNAMIC)},
    **{t: _SYMBOL_TABLES for t in (SHT_HASH, SHT_GNU_HASH, SHT_GNU_VERSYM, SHT_SUNW_SYMINFO)},
    # The PLT's relocations name their symbols through the link; a static program's
    # IRELATIVE relocations have none.
    SHT_REL: (0, *_SYMBOL_TABLES), SHT_RELA: (0, *_SYMBOL_TABLES),
}
SHT_PROGBITS, SHT_ARM_EXIDX, SHT_ARM_ATTRIBUTES = 1, 0x70000001, 0x70000003
# Sections Anvil (and pyelftools) look up by name, and the type the name promises: what
# is read from them depends on it (a ".symtab" of another type has no string table).
_NAMED: dict[str, int] = {
    ".symtab": SHT_SYMTAB, ".dynsym": SHT_DYNSYM, ".strtab": SHT_STRTAB, ".dynstr": SHT_STRTAB,
    ".rel.plt": SHT_REL, ".rel.dyn": SHT_REL, ".dynamic": SHT_DYNAMIC, ".plt": SHT_PROGBITS, ".text": SHT_PROGBITS,
    ".ARM.exidx": SHT_ARM_EXIDX, ".ARM.attributes": SHT_ARM_ATTRIBUTES,
}
# The two classes: the header after e_ident, a program header, a section header, and the
# entries of the tables read entry by entry (symbols, REL, RELA, dynamic tags).
_ELF32 = _Layout(32, "<HHIIIIIHHHHHH", "<8I", "<10I", (16, 8, 12, 8))
_ELF64 = _Layout(64, "<HHIQQQIHHHHHH", "<IIQQQQQQ", "<IIQQQQIIQQ", (24, 16, 24, 16))


def layout_of(data: bytes) -> _Layout | None:
    """The layout of the ELF file ``data`` (which check_elf passed): 32-bit ARM or 64-bit
    x86-64; None for anything shorter than its ELF header."""
    layout = _ELF64 if data[4:5] == b"\x02" else _ELF32
    return layout if len(data) >= layout.ehdr_size else None


def check_elf(path: str, data: bytes, executable: bool = True, sections: bool = True) -> None:
    """Raise AnvilError naming the first structural problem of the ELF file ``data`` (read
    from ``path``), or return if it is a well-formed 32-bit little-endian ARM or 64-bit
    little-endian x86-64 ELF file (an executable, unless ``executable`` is False).

    ``sections=False`` checks only what a loader (the kernel's, qemu's) reads to run the
    file: the identification, the program headers and the loaded segments' bytes; a
    program whose section table is odd or gone still runs, so ``anvil run`` asks no more.
    """
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise AnvilError(f"{path}: not an ELF file")
    ei_class, ei_data = data[4], data[5]
    if ei_data not in (1, 2):
        raise AnvilError(f"{path}: malformed ELF file (unknown byte order {ei_data} in e_ident)")
    if len(data) < 20:
        raise AnvilError(f"{path}: truncated ELF file (the ELF header runs past the end of the file)")
    machine = int.from_bytes(data[18:20], "little" if ei_data == 1 else "big")
    if machine not in (EM_ARM, EM_X86_64):
        name = _MACHINES.get(machine, f"machine {machine}")
        raise AnvilError(f"{path}: unsupported ISA {name}; this build reads 32-bit ARM and x86-64 ELF only")
    if machine == EM_ARM and (ei_class != 1 or ei_data != 1):
        raise AnvilError(f"{path}: only 32-bit little-endian ARM ELF is supported")
    if machine == EM_X86_64 and (ei_class != 2 or ei_data != 1):
        raise AnvilError(f"{path}: an x86-64 ELF file must be 64-bit little-endian (ELFCLASS64, ELFDATA2LSB)")
    layout = _ELF32 if machine == EM_ARM else _ELF64
    if len(data) < layout.ehdr_size:
        raise AnvilError(f"{path}: truncated ELF file (the ELF header runs past the end of the file)")
    (e_type, _, _, entry, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
     shstrndx) = struct.unpack_from(layout.header, data, 16)
    if executable and e_type not in (2, 3):
        raise AnvilError(f"{path}: not an executable ({_TYPES.get(e_type, f'type {e_type:#x}')})")
    headers = _check_segments(path, data, phoff, phnum, phentsize, layout)
    loads = [(vaddr, offset, filesz) for p_type, offset, vaddr, filesz, _ in headers if p_type == PT_LOAD]
    if executable and e_type == 3 and _shared_library(data, headers, entry, layout):
        raise AnvilError(f"{path}: a shared library, not a program (no program interpreter, not marked PIE"
                         f"{', no entry' if not entry else ', a DT_SONAME'}): Anvil rewrites executables")
    if executable and headers:
        _check_runnable(path, data, headers, loads, entry)
    if sections:
        _check_sections(path, data, shoff, shnum, shentsize, shstrndx, loads, layout)


PT_DYNAMIC, PT_INTERP = 2, 3


def _placed(loads: list[tuple[int, int, int]], address: int, offset: int, size: int) -> bool:
    """Whether ``size`` bytes at file ``offset`` are where a loaded segment (of ``loads``:
    address, file offset, file size) puts ``address``."""
    return any(vaddr <= address and address + size <= vaddr + filesz and offset - at == address - vaddr
               for vaddr, at, filesz in loads)


def _check_runnable(path: str, data: bytes, headers: list[tuple[int, int, int, int, int]],
                    loads: list[tuple[int, int, int]], entry: int) -> None:
    """AnvilError unless the program's entry lies in a loaded segment's bytes from the file
    and its program interpreter, if it names one, is a path: a file of debug information
    (``objcopy --only-keep-debug``) keeps the program headers but no bytes under them, and
    qemu-arm died of SIGSEGV itself on one."""
    entry &= ~1  # (a Thumb entry)
    in_file = False
    for p_type, offset, vaddr, filesz, _ in headers:
        if p_type == PT_LOAD and vaddr <= entry < vaddr + filesz:
            in_file = True
        # The dynamic linker reads the dynamic table where PT_DYNAMIC's address says, and the
        # rewrite edits it there (a preinit entry): its bytes in the file must be those.
        if p_type == PT_DYNAMIC and filesz and not _placed(loads, vaddr, offset, filesz):
            raise _malformed(path, "its dynamic table (PT_DYNAMIC) is not where a loaded segment puts its bytes")
        if p_type == PT_INTERP and (filesz < 2 or offset + filesz > len(data) or data[offset] == 0
                                    or data[offset + filesz - 1] != 0):
            raise _malformed(path, "its program interpreter (PT_INTERP) names no path")
    if not in_file:
        raise AnvilError(f"{path}: its entry {entry:#x} is in no bytes the file loads (a file of debug "
                         "information, or one cut short?)")


DT_NULL, DT_SONAME, DT_FLAGS_1, DF_1_PIE = 0, 14, 0x6FFFFFFB, 0x08000000


def _shared_library(data: bytes, headers: list[tuple[int, int, int, int, int]], entry: int,
                    layout: _Layout) -> bool:
    """Whether an ET_DYN file (its program headers checked) is a shared library rather than
    a position-independent program: no program interpreter (a dynamic PIE has one), no
    DF_1_PIE (a static PIE has it), and no entry or a DT_SONAME. (A library that also runs,
    as libc.so.6 does, has an interpreter: it is taken for a program.)"""
    interp, dynamic = False, None
    for p_type, offset, _, filesz, _ in headers:
        interp |= p_type == PT_INTERP
        if p_type == PT_DYNAMIC and offset + filesz <= len(data):
            dynamic = data[offset:offset + filesz]
    if interp:
        return False
    soname, pie = False, False
    word = "<i" if layout.bits == 32 else "<q"
    size = struct.calcsize(word)
    for at in range(0, len(dynamic or b"") - 2 * size + 1, 2 * size):
        tag = struct.unpack_from(word, dynamic, at)[0]
        if tag == DT_NULL:
            break
        soname |= tag == DT_SONAME
        pie |= tag == DT_FLAGS_1 and bool(struct.unpack_from(word.upper(), dynamic, at + size)[0] & DF_1_PIE)
    return not pie and (not entry or soname)


def _malformed(path: str, why: str) -> AnvilError:
    return AnvilError(f"{path}: malformed ELF file ({why})")


def _truncated(path: str, what: str) -> AnvilError:
    return AnvilError(f"{path}: truncated ELF file ({what} runs past the end of the file)")


def _check_segments(path: str, data: bytes, phoff: int, phnum: int,
                    phentsize: int, layout: _Layout) -> list[tuple[int, int, int, int, int]]:
    """Check the program headers; each one's (p_type, p_offset, p_vaddr, p_filesz, p_memsz)."""
    headers: list[tuple[int, int, int, int, int]] = []
    if not phnum:
        return headers
    if phentsize != layout.phdr_size:
        raise _malformed(path, f"program header entries of {phentsize} bytes, not {layout.phdr_size}")
    if phoff + phnum * layout.phdr_size > len(data):
        raise _truncated(path, "the program header table")
    for i in range(phnum):
        header = layout.segment(struct.unpack_from(layout.program_header, data, phoff + i * layout.phdr_size))
        headers.append(header)
        p_type, offset, vaddr, filesz, memsz = header
        if p_type != PT_LOAD:
            continue
        if offset + filesz > len(data):
            raise _truncated(path, f"segment {i}")
        if filesz > memsz:
            raise _malformed(path, f"segment {i} has more bytes in the file ({filesz:#x}) than in memory "
                                   f"({memsz:#x})")
        if vaddr + memsz > 1 << layout.bits:
            raise _malformed(path, f"segment {i} at {vaddr:#x} runs past the end of the {layout.bits}-bit "
                                   "address space")
    return headers


def _check_sections(path: str, data: bytes, shoff: int, shnum: int, shentsize: int, shstrndx: int,
                    loads: list[tuple[int, int, int]], layout: _Layout) -> None:
    if not shoff and not shnum:
        return  # no section table: nothing for anyone to read
    if not shnum or shstrndx == SHN_XINDEX:
        raise _malformed(path, "extended section numbering (e_shnum 0 or e_shstrndx 0xffff) is not supported")
    if shentsize != layout.shdr_size:
        raise _malformed(path, f"section header entries of {shentsize} bytes, not {layout.shdr_size}")
    if shoff + shnum * layout.shdr_size > len(data):
        raise _truncated(path, "the section header table")
    headers = [struct.unpack_from(layout.section_header, data, shoff + i * layout.shdr_size) for i in range(shnum)]
    if shstrndx >= shnum or headers[shstrndx][1] != SHT_STRTAB:
        raise _malformed(path, f"e_shstrndx {shstrndx} is not a string table")
    names_at, names_size = headers[shstrndx][4], headers[shstrndx][5]
    for i, (name_at, kind, flags, address, offset, size, link, _, _, entsize) in enumerate(headers):
        if name_at >= names_size:
            raise _malformed(path, f"the name of section {i} lies outside the section-name table")
        end = data.find(b"\0", names_at + name_at, names_at + names_size)
        name = data[names_at + name_at:end].decode("latin-1") if end >= 0 else ""
        promised = _NAMED.get(name)
        if promised is not None and kind != promised:
            raise _malformed(path, f"section {i} ({name}) is of type {kind:#x}, not {promised:#x}")
        if kind == SHT_NULL:
            continue
        if kind != SHT_NOBITS and offset + size > len(data):
            raise _truncated(path, f"section {i}")
        # The loader finds code and data by the sections and reads and patches them through
        # the segments: the two must agree on where each loaded section's bytes are.
        # (A section stamped in after linking, ``objcopy --add-section`` with the alloc flag,
        # has address 0 and no segment: the program never sees it, nor does the loader.)
        if loads and flags & SHF_ALLOC and kind != SHT_NOBITS and size and (address or flags & SHF_EXECINSTR) \
                and not _placed(loads, address, offset, size):
            raise _malformed(path, f"section {i} ({name}) at {address:#x} is not where a loaded segment puts it")
        wanted = _LINKS.get(kind)
        if wanted is not None and not ((link == 0 and 0 in wanted) or (link < shnum and headers[link][1] in wanted)):
            raise _malformed(path, f"section {i} links to section {link}, not a {_kind_names(wanted)}")
        need = layout.entry_sizes.get(kind)
        if need is not None and entsize != need:
            raise _malformed(path, f"section {i} has entries of {entsize} bytes, not {need}")


def _kind_names(kinds: tuple[int, ...]) -> str:
    return "string table" if kinds == (SHT_STRTAB,) else "symbol table"

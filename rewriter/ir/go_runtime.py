"""Recognise a program built by Go's toolchain and read its functions from its PC table
(decisions 0060, 0089).

Go's runtime reads the code addresses it meets and looks each one up in the program's own
PC table (``.gopclntab``): the return addresses on every goroutine stack, to scan them
for the garbage collector and to copy them when a stack grows, and the PC of a fault or
of a preemption signal. A Go program is therefore rewritten with original return
addresses (calls push the original's, whose return sites jump back to the copy), and
the same table gives every function's entry, end and name, which the descent starts
from: exact, and minutes faster than finding the code of a stripped A32 program from
its data. A program whose table cannot be read is refused with one line (``refusal``).

A Go executable is known by sections its linker names (``.gopclntab``, ``.go.buildinfo``,
``.note.go.buildid``) or, with the section table gone, by the build information's magic
(``\\xff Go buildinf:``, 16-aligned in the data since Go 1.13), which also names the version.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

from .model import Binary, Procedure

_SECTIONS = (".gopclntab", ".go.buildinfo", ".note.go.buildid")

# Go's signal handler, which the kernel enters for every signal the runtime handles (cgo's
# handler jumps to it), and the routine the handler makes a goroutine it preempts call,
# which returns to where the goroutine stopped (decisions 0089, 0134).
SIGNAL_HANDLER = "runtime.sigtramp"
ASYNC_PREEMPT = "runtime.asyncPreempt"
_MAGIC = b"\xff Go buildinf:"
_VERSION = re.compile(rb"go1\.\d+(?:\.\d+)?")


def go_version(data: bytes, elf: ELFFile) -> str | None:
    """The Go version (``"go1.19.8"``, or ``"version unknown"``) if ``data`` (the ELF file
    ``elf``) was built by Go's toolchain, else None."""
    start = data.find(_MAGIC)
    while start != -1 and start % 16:
        start = data.find(_MAGIC, start + 1)
    named = any(elf.get_section_by_name(name) is not None for name in _SECTIONS)
    if start == -1 and not named:
        return None
    # The version follows the magic inline (Go 1.18 on) or behind a pointer: look near it.
    version = _VERSION.search(data, start, start + 64) if start != -1 else None
    return version.group().decode() if version else "version unknown"


def refusal(path: str, version: str) -> str:
    """The one-line error for the Go program at ``path``."""
    return (f"{path}: a Go program ({version}) whose PC table (.gopclntab) cannot be read: its runtime "
            f"looks up every return address in that table, and without it the functions cannot be "
            f"found; not supported")


@dataclass(frozen=True)
class GoFunction:
    """One function of a Go program's PC table: its entry (link-time), its end (the next
    function's entry, or the text's end), its name (``runtime.goexit``) and, for a function
    with deferred calls, where a recovered panic resumes it (``resume``: its call of
    ``runtime.deferreturn``, which the runtime jumps to; else 0)."""

    entry: int
    end: int
    name: str
    resume: int = 0
    # Whether Go's handler may stop it by signal at its safe points (runtime/preempt.go's
    # isAsyncSafePoint: compiled Go code outside the runtime, with a map of its frame's
    # pointers) and a poll can ask whether Go wants it stopped: from Go 1.14 on ARM, from
    # Go 1.17 on x86-64 (_preemptible).
    preemptible: bool = False


# The PC table's header magic by the Go versions that wrote it (the layout changed with each;
# facts from Go's runtime/symtab.go and debug/gosym).
_MAGIC_12 = 0xFFFFFFFB   # Go 1.2-1.15: functab of (entry, funcoff) pointers after an 8-byte header
_MAGIC_116 = 0xFFFFFFFA  # Go 1.16-1.17: header with table offsets; functab of pointer pairs
_MAGIC_118 = 0xFFFFFFF0  # Go 1.18-1.19: header adds textStart; functab of uint32 offsets from it
_MAGIC_120 = 0xFFFFFFF1  # Go 1.20 on: as 1.18


def go_functions(elf: ELFFile) -> list[GoFunction]:
    """Every function of the Go program ``elf`` in address order, from its PC table
    (``.gopclntab``, or in a position-independent program the table found by its header in
    the read-only data); [] where there is none or it cannot be read (a layout not known, a
    table that does not fit its section)."""
    section = elf.get_section_by_name(".gopclntab")
    if section is not None and section["sh_type"] != "SHT_NOBITS":
        return _functions_or_none(section.data()) or []
    # A position-independent Go program (``-buildmode=pie``) has no .gopclntab: its linker
    # puts the table in .data.rel.ro (the header's textStart is relocated at load), and a
    # stripped one names it nowhere. Find it by its header, as Go's own debug/buildinfo
    # readers do: a known magic, two zero bytes, a PC quantum and a pointer size, and a
    # table whose every function lies in the executable code.
    code = [(seg["p_vaddr"], seg["p_vaddr"] + seg["p_memsz"]) for seg in elf.iter_segments()
            if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1]
    for candidate in elf.iter_sections():
        if candidate["sh_type"] != "SHT_PROGBITS" or not candidate["sh_flags"] & 2 or candidate["sh_flags"] & 4:
            continue  # allocated, not executable: where a linker puts read-only data
        data = candidate.data()
        for magic in (_MAGIC_12, _MAGIC_116, _MAGIC_118, _MAGIC_120):
            start = data.find(struct.pack("<IH", magic, 0))
            while start != -1:
                if start % 4 == 0:
                    functions = _functions_or_none(data[start:])
                    if functions and all(any(lo <= f.entry and f.end <= hi for lo, hi in code) for f in functions):
                        return functions
                start = data.find(struct.pack("<IH", magic, 0), start + 1)
    return []


def _functions_or_none(table: bytes) -> list[GoFunction] | None:
    """_read_functions, or None where ``table`` is not a PC table it can read."""
    try:
        return _read_functions(table)
    except (struct.error, IndexError, UnicodeDecodeError, ValueError):
        return None


# The packages Go never stops by signal (runtime/preempt.go's isAsyncSafePoint).
_NEVER_PREEMPTED = ("runtime.", "internal/runtime/", "runtime/internal/", "reflect.")
_FUNC_FLAG_TOPFRAME = 1  # _func.flag (Go 1.17 on): the outermost frame (runtime.goexit's)
_FUNC_FLAG_ASM = 4      # _func.flag (Go 1.18 on): written in assembly
_LOCALS_POINTER_MAPS = 1  # the funcdata index of a frame's map of its pointers
# A function whose frame's map of pointers is runtime.no_pointers_stackmap (runtime/asm.s,
# which assembly functions name with NO_LOCAL_POINTERS) is not stopped by signal either
# (Go 1.17 and before); reflectcall's runtime.call32 is such a function in every program.
_NO_POINTERS_NAMED_BY = "runtime.call32"


def _record_layout(magic: int, size: int) -> tuple[int, int]:
    """A PC table's function record (runtime/runtime2.go's _func) by the table's version and
    pointer size: where its pcdata count is and how long it is before its pcdata offsets.
    Go 1.2-1.15: the entry pointer, 7 words (name to pcdata count), the function id, 2
    bytes, the funcdata count; Go 1.16-1.17 add the compile unit (and 1.17 a flags byte in
    the pad); Go 1.18 and 1.19: the entry as a 32-bit offset, 7 words, the compile unit,
    id, flags, a byte, the count; Go 1.20 adds the start line."""
    if magic == _MAGIC_12:
        return size + 24, size + 32
    if magic == _MAGIC_116:
        return size + 24, size + 36
    return 28, 44 if magic == _MAGIC_120 else 40


def _locals_map(table: bytes, record: int, magic: int, size: int) -> int | None:
    """The map of a function's frame's pointers that its record (at ``record``) names: a
    32-bit offset from Go 1.18 on, a pointer before; None where it names none."""
    count_at, fixed = _record_layout(magic, size)
    npcdata = struct.unpack_from("<I", table, record + count_at)[0]
    if table[record + fixed - 1] <= _LOCALS_POINTER_MAPS:  # the count of funcdata
        return None
    at = record + fixed + 4 * npcdata
    if magic in (_MAGIC_118, _MAGIC_120):
        offset = struct.unpack_from("<I", table, at + 4 * _LOCALS_POINTER_MAPS)[0]
        return None if offset == 0xFFFFFFFF else offset
    at += at % size  # pointers are aligned (the table is, as the runtime reads it)
    pointer = struct.unpack_from("<I" if size == 4 else "<Q", table, at + size * _LOCALS_POINTER_MAPS)[0]
    return pointer or None


def _preemptible(table: bytes, record: int, magic: int, size: int, name: str, no_pointers: int | None) -> bool:
    """Whether Go's handler may preempt a function of a PC table (its record at ``record``)
    by signal: not the runtime's or reflect's, not assembly (the 1.18 flag; before, a frame
    map that is no_pointers_stackmap, at ``no_pointers``), with a map of its frame's
    pointers."""
    if name.startswith(_NEVER_PREEMPTED):
        return False
    locals_map = _locals_map(table, record, magic, size)
    if magic in (_MAGIC_118, _MAGIC_120) and table[record + _record_layout(magic, size)[1] - 3] & _FUNC_FLAG_ASM:
        return False
    return locals_map is not None and locals_map != no_pointers


def _read_functions(table: bytes) -> list[GoFunction]:
    magic, _pad, quantum, size = struct.unpack_from("<IHBB", table, 0)
    if size not in (4, 8) or quantum not in (1, 2, 4):
        return []
    word = "<I" if size == 4 else "<Q"

    def pointer(offset: int) -> int:
        return struct.unpack_from(word, table, offset)[0]

    def name_at(offset: int) -> str:
        return table[offset: table.index(0, offset)].decode()

    # Each layout says where the i-th function's entry is (the count-th: the text's end),
    # where its record is, and where the name offset sits in a record and counts from.
    if magic == _MAGIC_12:
        count, names, text, functab, pair, read = pointer(8), 0, 0, 8 + size, 2 * size, pointer
        records, name_field = 0, size
    elif magic in (_MAGIC_116, _MAGIC_118, _MAGIC_120):
        fields = 8 if magic != _MAGIC_116 else 7
        header = [pointer(8 + size * k) for k in range(fields)]
        if magic == _MAGIC_116:
            count, _files, names, _cu, _files_tab, _pc_tab, functab = header
            text, pair, read, name_field = 0, 2 * size, pointer, size
        else:
            count, _files, text, names, _cu, _files_tab, _pc_tab, functab = header
            pair, name_field = 8, 4
            read = lambda offset: struct.unpack_from("<I", table, offset)[0]  # noqa: E731
        records = functab
    else:
        return []
    found: list[tuple[int, str, int, int]] = []
    for i in range(count):
        record = records + read(functab + pair * i + pair // 2)
        name_offset = struct.unpack_from("<i", table, record + name_field)[0]
        # The record's deferreturn offset follows the name's and the arguments' size
        # (runtime/runtime2.go's _func; debug/gosym reads it so for every version).
        resume = struct.unpack_from("<I", table, record + name_field + 8)[0]
        found.append((text + read(functab + pair * i), name_at(names + name_offset), resume, record))
    end = text + read(functab + pair * count)
    # Go stops goroutines by signal from Go 1.14 (whose runtime has asyncPreempt). The
    # goroutine is in r10 on ARM, in r14 on x86-64 from Go 1.17 on: known from 1.17's
    # table, whose goexit is the first with the top-frame flag.
    _, fixed = _record_layout(magic, size)
    by_name = {name: record for _, name, _, record in found}
    registered = ASYNC_PREEMPT in by_name and (size == 4 or magic in (_MAGIC_118, _MAGIC_120) or (
        magic == _MAGIC_116 and "runtime.goexit" in by_name
        and table[by_name["runtime.goexit"] + fixed - 3] & _FUNC_FLAG_TOPFRAME))
    named = by_name.get(_NO_POINTERS_NAMED_BY) if magic in (_MAGIC_12, _MAGIC_116) else None
    no_pointers = _locals_map(table, named, magic, size) if named is not None else None
    ends = [entry for entry, *_ in found[1:]] + [end]
    functions = [GoFunction(entry, stop, name, entry + resume if resume else 0,
                            registered and _preemptible(table, record, magic, size, name, no_pointers))
                 for (entry, name, resume, record), stop in zip(found, ends)]
    if any(f.end < f.entry for f in functions):
        raise ValueError("PC table not in address order")
    return functions


def loop_heads(binary: Binary, procs: list[Procedure]) -> frozenset[int]:
    """The loop heads of a Go program's functions among ``procs`` that Go's handler may
    preempt (the targets of their backward branches): where their copies ask whether Go
    wants the goroutine stopped (decision 0134). Not the entry, which the tail of the stack
    check jumps back to after the stack has grown: the check before it is where Go stops
    a goroutine itself, and the entry is no safe point."""
    preemptible = binary.go_preemptible
    return frozenset(ins.branch_target for proc in procs if proc.address in preemptible
                     for ins in proc.instructions()
                     if ins.branch_target is not None and not ins.is_call
                     and proc.address < ins.branch_target <= ins.address)

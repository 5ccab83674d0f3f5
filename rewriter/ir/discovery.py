"""Recursive descent for binaries without symbols or mapping symbols (stripped).

Code is found by following control flow from known entry points: the ELF entry, the
init/fini functions and arrays, and code addresses the program computes PC-relatively
(``ldr rX, =offset; add rX, pc``, ``adr``) or stores in data with the Thumb bit set.
Call targets become procedure entries; a procedure spans from its entry to the next
one. Bytes never reached are left alone as data.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import Section

from .. import progress
from ..arch.arm.case_helpers import helper_called, note_case_table
from ..arch.arm.decode import DecodeCache, decode_range, encoded_size, is_link_move, make_disassembler
from ..arch.arm.jump_tables import (
    REGISTERS,
    SWITCH_NAMES,
    SwitchFinder,
    a32_offset_switch,
    goto_labels,
    goto_table,
    is_computed_jump,
    operand_registers,
    table_branch_targets,
    thumb1_offset_switch,
    thumb_branch_row,
)
from .constants import ends_process
from .counted import counted, in_offset_column, in_text
from .elf_tables import defined_functions, relocations
from .exception_tables import handlers, indexed_functions, personality_routines
from .gaps import call_targets_in_gaps, thumb_pointers_in_gaps
from .model import STOPS, Binary, Instruction, Procedure
from .plt import TRAP_FILL, thumb_stubs
from .start_args import register_call_target, start_arguments

if TYPE_CHECKING:
    import capstone

CHUNK = 256
ENTRY_CODE = 128  # bytes of the entry's code looked at for the addresses it passes (start_args)
R_ARM_RELATIVE, R_ARM_IRELATIVE = 23, 160
SHF_ALLOC = 0x2  # a section loaded with the program (the dynamic relocations)


def _exec_ranges(elf: ELFFile) -> list[tuple[int, int]]:
    return sorted((s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections()
                  if s["sh_flags"] & 0x4 and s["sh_type"] == "SHT_PROGBITS" and s["sh_size"])


def _inside(ranges: list[tuple[int, int]], addr: int) -> bool:
    for lo, hi in ranges:  # a loop, not any(): the descent asks for every instruction
        if lo <= addr < hi:
            return True
    return False


def _seeds(binary: Binary, elf: ELFFile, ranges: list[tuple[int, int]], relocated: list[int], stubs: set[int],
           returns: set[int]) -> list[tuple[int, bool]]:
    """Entry points known without decoding: ELF entry, DT_INIT/DT_FINI, init/fini arrays,
    the PLT, exported functions and, in a PIE, the Thumb code addresses its dynamic
    relocations put in data (``relocated``: a PIE's every code pointer in data has one)
    but for the return addresses among them (``returns``, _return_addresses)."""
    seeds = [(binary.entry & ~1, bool(binary.entry & 1))]
    # Every PLT entry, in its instruction set (one of the Thumb ``stubs``, bx pc, or A32):
    # seeded first, an entry keeps it whatever a descent into garbage later calls it.
    seeds += [(entry, entry in stubs) for entry in sorted(binary.plt)]
    for sec in elf.iter_sections():
        if sec.name == ".plt" and sec["sh_size"]:  # PLT0 and the entries are A32 (lazy binding jumps to PLT0)
            seeds.append((sec["sh_addr"], False))
        if sec["sh_type"] in ("SHT_INIT_ARRAY", "SHT_FINI_ARRAY", "SHT_PREINIT_ARRAY"):
            data = sec.data()
            for (value,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4]):
                if _inside(ranges, value & ~1):
                    seeds.append((value & ~1, bool(value & 1)))
        if sec["sh_type"] == "SHT_DYNAMIC":
            for tag in sec.iter_tags():
                if tag.entry.d_tag in ("DT_INIT", "DT_FINI") and _inside(ranges, tag.entry.d_val & ~1):
                    seeds.append((tag.entry.d_val & ~1, bool(tag.entry.d_val & 1)))
        if sec["sh_type"] == "SHT_DYNSYM":
            seeds += [(value & ~1, bool(value & 1)) for value, _ in defined_functions(elf, sec)
                      if _inside(ranges, value & ~1)]
    seeds += [(value & ~1, True) for value in relocated
              if value & 1 and _inside(ranges, value & ~1) and value & ~1 not in returns]
    return [(addr, thumb) for addr, thumb in seeds if _inside(ranges, addr)]


def _return_addresses(binary: Binary, ranges: list[tuple[int, int]], relocated: list[int]) -> dict[int, int | None]:
    """The Thumb code addresses in relocated data right after a call (``_call_before``), ->
    what that call calls (None: through a register). Return addresses, such as OCaml's
    frame tables hold for every call (the GC and the exception backtraces look frames up by
    them), or functions after one that ends in a call that never returns: entries, but as
    sure as the seeds only once that call is known never to return (_entries_and_code)."""
    out = {}
    for value in relocated:
        if value & 1:
            is_call, target = _call_before(binary, value & ~1, ranges)
            if is_call:
                out[value & ~1] = target
    return out


def _call_before(binary: Binary, address: int, ranges: list[tuple[int, int]]) -> tuple[bool, int | None]:
    """Whether the bytes before the Thumb ``address`` encode a call that returns there, and
    its target: a 16-bit BLX through a register (None), or a 32-bit BL or BLX to the
    program's code (after the PLT's A32 code, bytes may read as a BLX out of range)."""
    if not _inside(ranges, address) or not _inside(ranges, address - 4):
        return False, None
    first, second = struct.unpack("<HH", binary.read(address - 4, 4))
    if second & 0xFF87 == 0x4780:
        return True, None
    if first & 0xF800 != 0xF000 or second & 0xC000 != 0xC000:
        return False, None
    sign = (first >> 10) & 1
    i1 = ~((second >> 13) ^ sign) & 1
    i2 = ~((second >> 11) ^ sign) & 1
    offset = (sign << 24 | i1 << 23 | i2 << 22 | (first & 0x3FF) << 12 | (second & 0x7FF) << 1) - (sign << 25)
    target = ((address & ~3) if not second & 0x1000 else address) + offset  # BLX: from Align(PC, 4)
    return _inside(ranges, target), target


def relocated_words(elf: ELFFile, binary: Binary, kind: int = R_ARM_RELATIVE) -> list[int]:
    """The link-time values of the words relocations of type ``kind`` adjust (REL: the
    addend is the word in place; R_ARM_IRELATIVE's is its IFUNC resolver)."""
    out = []
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_REL":
            continue
        for offset, rel_type, _, _ in relocations(elf, sec):
            if rel_type == kind:
                out.append(int.from_bytes(binary.read(offset, 4), "little"))
    return out


def text_relocations(elf: ELFFile) -> set[int]:
    """The places in executable segments that dynamic relocations (of any type) write to:
    a program linked with text relocations (DT_TEXTREL) has them in its literal pools."""
    ranges = _exec_ranges(elf)
    out = set()
    for sec in elf.iter_sections():
        if sec["sh_type"] in ("SHT_REL", "SHT_RELA") and sec["sh_flags"] & SHF_ALLOC:
            out.update(offset for offset, _, _, _ in relocations(elf, sec) if _inside(ranges, offset))
    return out


#: Sections of data whose words are offsets and opcodes, never addresses: the exception
#: tables (an ``.ARM.extab`` entry starts with its personality routine's place-relative
#: offset, which in a static program often falls in the text's range of addresses).
OFFSET_TABLES = frozenset((".ARM.extab", ".eh_frame", ".eh_frame_hdr", ".gcc_except_table"))
#: Sections of code addresses that no code jumps to: ``-fpatchable-function-entry``'s list
#: of the ``nop`` pads a tracer may patch, which start before each function (a Thumb pad's
#: even address read as an A32 function took the Thumb code after it for A32).
PATCH_SITES = frozenset(("__patchable_function_entries",))


def _pointer_sections(elf: ELFFile) -> Iterator[Section]:
    """The sections of loaded data that may hold code addresses: not executable, or also
    writable (GCL's image dumped by unexec keeps its Lisp heap, compiled code and the
    function objects of the C primitives, in a ``.data`` flagged WAX)."""
    for sec in elf.iter_sections():
        flags = sec["sh_flags"]
        if sec["sh_type"] == "SHT_PROGBITS" and flags & 0x2 and (not flags & 0x4 or flags & 0x1) \
                and sec.name not in OFFSET_TABLES and sec.name not in PATCH_SITES:
            yield sec


def _pointer_words(elf: ELFFile) -> list[list[int]]:
    """The words of each of the ``_pointer_sections``, read once for the odd and the even ones."""
    out = []
    for sec in _pointer_sections(elf):
        data = sec.data()
        out.append([value for (value,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4])])
    return out


def _data_words(sections: list[list[int]], ranges: list[tuple[int, int]]) -> list[tuple[int, bool]]:
    """Odd words in code found in a fixed-address binary's data (GOT, .data.rel.ro, vtables,
    but also any table of numbers, without those counting up or down or running through the
    text in small steps, and characters of strings, ``in_text``): Thumb code addresses, perhaps. Weak entries: one found
    inside an instruction of code reached otherwise is dropped (``discover``)."""
    out = []
    for values in sections:
        out += [(value & ~1, True) for k, value in enumerate(values)
                if value & 1 and _inside(ranges, value & ~1) and not counted(values, k) and not in_text(values, k)
                and not in_offset_column(values, k, lambda v: _inside(ranges, v & ~1))]
    return out


def _even_data_words(sections: list[list[int]], ranges: list[tuple[int, int]]) -> dict[int, tuple[int, ...]]:
    """Even words in code found in a fixed-address binary's data: A32 code addresses (the
    word-aligned ones: function tables, vtables), perhaps, or numbers, or the labels of a
    computed goto in Thumb code. Looked at only where the descent found no code (``_a32_in_gaps``).

    Each maps to its table: the even code addresses of the run of consecutive words of code
    addresses it is in (the same tuple for every word of one run; several runs may name a word)."""
    out: dict[int, tuple[int, ...]] = {}
    # (most words are no code address: numbers, data addresses)
    low, high = (min(lo for lo, _ in ranges), max(hi for _, hi in ranges)) if ranges else (0, 0)
    for values in sections:
        run: list[int] = []
        for k, value in enumerate([*values, 0]):  # (the 0 ends the last run)
            if low <= value & ~1 < high and _inside(ranges, value & ~1) and not counted(values, k) \
                    and not in_text(values, k):
                if not value & 1:
                    run.append(value)
                continue
            table = tuple(run)
            for word in run:
                out[word] = max(out.get(word, ()), table, key=len)
            run = []
    return out


def _even_literals(found: dict[int, Descent], binary: Binary, ranges: list[tuple[int, int]],
                   known: dict[int, tuple[dict[int, Instruction], list[int]]]) -> set[int]:
    """The word-aligned code addresses the code found loads from its literal pools, in a
    fixed-address program: A32 functions whose address is taken (Free Pascal stores its
    handlers' in variables so), or data in the text (``_a32_in_gaps`` tells).

    ``known``: each descent's, by its instructions (which a descent found again shares),
    from the calls before: most descents are the same from one call to the next."""
    out = set()
    for descent in found.values():
        insns = descent.instructions
        got = known.get(id(insns))
        if got is None or got[0] is not insns:
            got = known[id(insns)] = (insns, _addresses_loaded(insns, binary, ranges))
        out.update(got[1])
    return out


def _addresses_loaded(insns: dict[int, Instruction], binary: Binary, ranges: list[tuple[int, int]]) -> list[int]:
    """The word-aligned text addresses ``insns`` (a descent's) load from literal pools or build
    with ``movw``/``movt`` (clang's A32 code and sbcl's: a signal handler's address given to
    sigaction, a routine stored in a table), less those a PC-relative add then takes (``ldr
    rX, =n; add rX, pc, rX``): an offset, whatever it looks like (decision 0113: GHC's code
    addresses its strings so, and offsets that equal a place in the middle of a function
    became A32 entries there, cutting it in two)."""
    pending: dict[int, int] = {}  # register -> the literal it was loaded with, not yet taken
    low: dict[int, int] = {}  # register -> the half a movw set
    out = []
    for address in sorted(insns):
        ins = insns[address]
        value = _literal(ins, binary) if ins.accesses else None
        if value is None and ins.name in ("movw", "movt") and (moved := _wide_move(ins)) is not None:
            rd, half, top = moved
            if not top:
                low[rd] = half
                continue
            if rd not in low:
                continue
            value = low.pop(rd) | half << 16
        if value is not None:
            rd = _dest(ins)
            if rd in pending:
                out.append(pending.pop(rd))
            if not value & 3 and _inside(ranges, value):
                pending[rd] = value
        elif pending and ins.name == "add":
            pending.pop(_pc_add_operand(ins), None)
    return out + list(pending.values())


def _pc_add_operand(ins: Instruction) -> int | None:
    """The register a PC-relative ``add`` adds to the PC (A32 ``add rD, pc, rM`` or ``add rD,
    rM, pc``; T32 ``add rD, pc``), else None."""
    if ins.thumb:
        if ins.size == 2 and (int.from_bytes(ins.raw, "little") & 0xFF78) == 0x4478:
            return _dest(ins)
        return None
    word = int.from_bytes(ins.raw, "little")
    # Data processing, register operand without shift: cond 000 0100 S Rn Rd 00000 000 Rm.
    if word & 0x0FE00FF0 != 0x00800000:
        return None
    rn, rm = (word >> 16) & 0xF, word & 0xF
    return rm if rn == 15 else rn if rm == 15 else None


def _literal(ins: Instruction, binary: Binary) -> int | None:
    """The word a literal load (``ldr rX, [pc, #n]``) reads, else None."""
    if ins.accesses and ins.name == "ldr" and ins.accesses[0].base == 15 and ins.accesses[0].index is None:
        return int.from_bytes(binary.read(ins.accesses[0].disp, 4), "little")
    return None


def _a32_in_gaps(words: set[int], found: dict[int, Descent], starts: list[int], streams: _Streams,
                 tables: dict[int, tuple[int, ...]] | None = None) -> dict[int, bool]:
    """The ``words`` (even words in data) that name code no descent reached and that reads as
    the start of an A32 function: a function called only through a pointer in a
    fixed-address program, where an A32 pointer has no Thumb bit to tell it from a number
    (calls's table of operations, a C++ class's virtual destructor; compiled with -marm).
    Its first two words decode, the first unconditional (condition AL), as nearly every A32
    function's first instruction is (the second may be a conditional branch), while a
    literal pool's addresses and Thumb code rarely are.

    A word of a table (``tables``: a word in data -> the even code addresses of its run of
    words) whose other words are mostly places in Thumb code that the descent found is a
    label of that code, not an A32 function: GCC's computed goto in Thumb code keeps its
    labels even in data and sets the Thumb bit when it jumps (``orr rX, rX, #1; bx rX``,
    glibc's printf in a static program, where the table's address is on the stack and no
    table is seen). Those come back as Thumb entries, where they decode as Thumb.

    Returns the entries: address -> Thumb.

    ``starts``: the entries of ``found``, sorted. Each descent's instructions lie between
    its entry and the next, so an address is covered by the instructions of the entry at or
    before it."""
    if not words:
        return {}

    def at(address: int) -> Instruction | None:
        """The instruction found at ``address`` or the one of the two before that spans it."""
        for start in (address, address - 2):  # an instruction is 2 or 4 bytes long
            k = bisect.bisect_right(starts, start) - 1
            ins = found[starts[k]].instructions.get(start) if k >= 0 else None
            if ins is not None and start + ins.size > address:
                return ins
        return None

    def in_thumb_table(word: int) -> bool:
        table = tables.get(word, ()) if tables else ()
        if len(table) < 3:
            return False
        places = [at(other) for other in table if other != word]
        thumb = sum(1 for ins in places if ins is not None and ins.thumb)
        return 2 * thumb > len(places)

    def one_word_function(word: int) -> bool:
        """Whether the word at ``word``, right before code found, is a whole A32 function:
        ``bx lr`` (an empty one) or ``b`` to code found (a tail call: python3.11's ``main: b
        Py_BytesMain``, called through a pointer in data)."""
        value = int.from_bytes(streams.binary.read(word, 4), "little")
        if value == 0xE12FFF1E:
            return True
        ins = streams.at(word, False)[0] if value >> 24 == 0xEA else None
        return ins is not None and ins.branch_target is not None and at(ins.branch_target) is not None

    uncovered = {word for word in words if at(word) is None}
    labels = {word: True for word in uncovered if in_thumb_table(word) and streams.at(word, True)[0] is not None}
    if labels:  # the A32 readings are weighed once the labels' code is decoded (it may cover them)
        return labels
    out: dict[int, bool] = {}
    for word in uncovered:  # (in the order of ``words - covered``)
        if word & 3 or in_thumb_table(word) or (at(word + 4) is not None and not one_word_function(word)):
            continue
        if _reads_as_a32_start(word, streams):
            out[word] = False
    return out


def _reads_as_a32_start(word: int, streams: _Streams) -> bool:
    """Whether the bytes at ``word`` read as an A32 function's start: its first two words
    decode, the first unconditional (condition AL), as nearly every A32 function's first
    instruction is, while a literal pool's addresses and Thumb code rarely are."""
    return streams.at(word, False)[0] is not None and streams.binary.read(word, 4)[3] >> 4 == 0xE \
        and streams.at(word + 4, False)[0] is not None


def _labels_of_sized_functions(elf: ELFFile, words: list[tuple[int, bool]]) -> set[int]:
    """The ``words`` (address, Thumb) strictly inside a function that the dynamic symbol
    table gives a size, in that function's instruction set."""
    functions = []
    for sec in elf.iter_sections():
        if sec["sh_type"] == "SHT_DYNSYM":
            functions += [(value & ~1, size, bool(value & 1)) for value, size in defined_functions(elf, sec) if size]
    if not functions or not words:
        return set()
    functions.sort()
    starts = [start for start, _, _ in functions]
    out = set()
    for address, thumb in words:
        k = bisect.bisect_right(starts, address) - 1
        if k >= 0:
            start, size, function_thumb = functions[k]
            if start < address < start + size and thumb == function_thumb:
                out.add(address)
    return out


def _split_it(got: list[Instruction]) -> list[Instruction]:
    """Drop a trailing IT block cut by the end of the chunk (decode it again from its IT)."""
    for k, ins in enumerate(got):
        if ins.is_it:
            mask = ins.raw[0] & 0xF
            count = 4 - ((mask & -mask).bit_length() - 1)
            if k + count >= len(got):
                return got[:k]
    return got


NORETURN = {"abort", "exit", "_exit", "_Exit", "quick_exit", "__stack_chk_fail", "__assert_fail",
            "__libc_start_main", "longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit", "__chk_fail",
            "__fortify_fail", "err", "errx", "verr", "verrx",
            # The C++ runtime's (libstdc++, libsupc++): throwing, terminating, bad casts.
            # __cxa_end_cleanup ends every cleanup landing pad of ARM EHABI code: it resumes unwinding.
            "__cxa_throw", "__cxa_rethrow", "_Unwind_Resume", "__cxa_end_cleanup", "__cxa_bad_cast", "__cxa_bad_typeid",
            "__cxa_throw_bad_array_new_length", "__cxa_pure_virtual", "__cxa_deleted_virtual",
            "__cxa_call_terminate", "__cxa_call_unexpected", "_ZSt9terminatev", "_ZSt10unexpectedv"}
#: libstdc++'s ``std::__throw_*`` helpers (``_ZSt20__throw_length_errorPKc``, ...) and
#: ``std::rethrow_exception``, by their mangled names: all [[noreturn]].
NORETURN_MANGLED = re.compile(r"_ZSt\d+(__throw_\w+|rethrow_exception\w*)$")
#: Other languages' run-time failures, which a compiler calls where a check fails and which
#: end in an exception or the process: D's (druntime: array bounds, assert, unittest,
#: throw), Ada's (GNAT's checks and raises) and Fortran's (libgfortran's stops and
#: errors). Code after a call of one is a literal pool or the next function: read as code,
#: dustmite's ``blx _d_arraybounds_indexp`` ran on into a pool whose word read as ``b.n``
#: into the middle of a BL, and cut D's shortSort there (decision 0086).
NORETURN_RUNTIMES = re.compile(r"(_d_(arraybounds|assert|unittest|throw)\w*|__gnat_(rcheck|raise_exception|reraise)\w*"
                               r"|_gfortran_(runtime_error|stop|error_stop|os_error)\w*)$")


def _noreturn_plt(binary: Binary) -> set[int]:
    """PLT entries (and their Thumb stubs) of functions that do not return."""
    return {entry for entry, name in binary.plt.items()
            if name in NORETURN or NORETURN_MANGLED.match(name) or NORETURN_RUNTIMES.match(name)}


def discover(binary: Binary, elf: ELFFile) -> tuple[list[Procedure], dict[int, list[Instruction]]]:
    """Procedures and their instructions, found by recursive descent.

    Entries are collected to a fixpoint; each procedure is decoded from its entry
    without running into the next entry, so a fall-through after a call that does not
    return (into a literal pool, or the next function) cannot claim another
    procedure's bytes in the wrong instruction set.

    A weak entry (a number in a fixed-address binary's data that looks like a Thumb code
    address, ``_data_words``) that turns out to lie inside an instruction of the procedure
    before it, or where that procedure runs on in the other instruction set, is dropped,
    and that procedure decoded on: real code never branches into
    the middle of an instruction, while a table of numbers easily names such a place.
    """
    ranges = _exec_ranges(elf)
    md = {True: make_disassembler(True), False: make_disassembler(False)}
    cache = DecodeCache()
    streams = _Streams(binary, md, cache)
    streams.code_size = sum(hi - lo for lo, hi in ranges)
    progress.phase("decoding", streams.code_size, "bytes")
    relocated = relocated_words(elf, binary) if binary.is_pie else []
    # Even code addresses in relocated data: computed-goto labels (Lua's dispatch).
    labels = {v for v in relocated if not v & 1 and _inside(ranges, v)}
    # (a PIE's code addresses are relocated; a Go program's entries are all in its PC table)
    pointer_words = [] if binary.is_pie or binary.go_functions else _pointer_words(elf)
    data_words = _data_words(pointer_words, ranges)
    # A fixed-address program's computed-goto labels (Python's opcode table) are words in
    # data too: inside an exported function of known size, in its instruction set, one is
    # a place in that function, not the start of another.
    inside = _labels_of_sized_functions(elf, data_words)
    labels |= inside
    streams.labels = sorted(labels)
    stubs = thumb_stubs(binary.plt, binary.read)
    entry_thumb = bool(binary.entry & 1)
    at_entry = decode_range(md[entry_thumb], binary.read(binary.entry & ~1, ENTRY_CODE), binary.entry & ~1,
                            entry_thumb, cache)[0]
    # What the entry passes to the calls it makes: main, which in A32 reads as no Thumb address.
    passed = start_arguments(at_entry, binary.read, lambda address: _inside(ranges, address))
    unwound = handlers(elf, binary.read)
    # The personality routines the unwinder calls (the Thumb bit kept: an A32 one is even).
    personalities = [(r & ~1, bool(r & 1)) for r in personality_routines(elf, binary.read) if _inside(ranges, r & ~1)]
    returns = _return_addresses(binary, ranges, relocated)
    fixed_a32 = not binary.is_pie and not binary.is_firmware  # where an even word may name an A32 function
    go_entries = [(entry, False) for entry in binary.go_functions]
    starts = _Starts(_seeds(binary, elf, ranges, relocated, stubs, set(returns)) + go_entries + passed + personalities,
                     [w for w in data_words if w[0] not in inside], unwound, _a32_only(elf, stubs),
                     even_words=_even_data_words(pointer_words, ranges) if fixed_a32 else {},
                     returns=returns, thumb_only=binary.is_firmware, indexed=indexed_functions(elf, binary.read),
                     no_thumb_code=_no_thumb_code(binary.read, binary.is_firmware,
                                                  _zero_ahead(binary.read, md[True], cache)))
    noreturn = _noreturn_plt(binary)
    memo: dict[int, dict[int, Descent]] = {}
    literals: dict[int, tuple[dict[int, Instruction], list[int]]] = {}
    namings = _Namings()
    while True:  # until no more procedures are found never to return (or pointed to in A32)
        entries, descents = _entries_and_code(starts, ranges, binary, streams, noreturn, memo, literals, namings)
        found = {entry: descent.instructions for entry, descent in descents.items()}
        pointed = _a32_entries_in_data(labels - inside, entries, found, streams.goto_labels, streams)
        if pointed:
            starts = dataclasses.replace(starts, seeds=starts.seeds + [(address, False) for address in pointed])
            labels -= pointed
            streams.labels = sorted(labels)
            continue
        if binary.is_firmware:  # code pointers in .rodata that a firmware script put inside .text
            known = {address for address, _ in starts.data_words}
            extents = [(e, max(i.address + i.size for i in d.values())) for e, d in found.items() if d]
            stored = thumb_pointers_in_gaps(binary.read, ranges, [i for d in found.values() for i in d.values()],
                                            extents)
            stored -= known | entries.keys()
            if stored:
                starts = dataclasses.replace(starts, data_words=starts.data_words + [(a, True) for a in sorted(stored)])
                continue
        # Go's scheduler resumes a goroutine at the return address its mcall saved (gopark's
        # callers go on after the call when the goroutine runs again), though mcall's own
        # code never returns: in a Go program every call is taken to return (decision 0089).
        more = set() if binary.go_functions else _never_return(descents, noreturn)
        if not more:
            break
        _close_noreturn(more, noreturn, descents, entries, memo, binary, streams, ranges)
    starts = sorted(entries)
    # Where computed jumps run on into the code after them (decoded there, see _descend).
    continued = {ins.end for insns in found.values() for ins in insns.values() if is_computed_jump(ins)}
    procs = []
    decoded: dict[int, list[Instruction]] = {}
    for start in starts:
        insns = sorted(found.get(start, {}).values(), key=lambda i: i.address)
        if not insns:
            continue
        last = insns[-1]
        # A Go program's PC table names its functions (``main.main``, ``runtime.mallocgc``).
        name = binary.go_functions.get(start) or ("_start" if start == binary.entry & ~1 else f"sub_{start:x}")
        proc = Procedure(name=name, address=start, size=last.address + last.size - start,
                         thumb=entries[start], jumped_into=start in continued)
        for at, thumb in _undecodable(insns, streams):
            proc.notes.append(f"undecodable instruction at {at:#x}: runs in place, uncounted")
            proc.undecodable.append((at, at + encoded_size(binary.read(at, 2), thumb)))
        procs.append(proc)
        decoded[start] = insns
    binary.gap_targets = call_targets_in_gaps(binary.read, ranges, [i for got in decoded.values() for i in got])
    binary.goto_labels = set(streams.goto_labels)
    return procs, decoded


def _a32_entries_in_data(words: set[int], entries: dict[int, bool], found: dict[int, dict[int, Instruction]],
                         goto: set[int], streams: _Streams) -> set[int]:
    """The ``words`` (a PIE's relocated words without the Thumb bit) that are A32 procedure
    entries: code pointers in data (vtables, function tables), not computed-goto labels.

    Without the Thumb bit a word names either a label (in Thumb or A32 code) or an A32
    function; the descent tells which. One in a procedure decoded as A32, at one of its
    instructions, that no computed goto of the program jumps through (``goto``, the labels
    the descent read from their tables) is a function of its own: a compiler whose output
    is A32 (rustc's armv7 target) calls most functions through such pointers, and taken as
    places inside the procedure before them, their original entries got no jump and ran
    uninstrumented, into that procedure's patched return sites.

    One after a Thumb procedure's entry that the procedure did not decode (it has no
    computed jump to take labels: _descend) is an A32 function where its bytes read as the
    start of one (as _a32_in_gaps weighs a fixed-address program's even words)."""
    starts = sorted(entries)
    out = set()
    for word in words:
        k = bisect.bisect_right(starts, word) - 1
        if k < 0 or starts[k] == word or word in goto:
            continue
        if entries[starts[k]]:
            if word not in found.get(starts[k], {}) and not word & 3 and _reads_as_a32_start(word, streams):
                out.add(word)
        elif word in found.get(starts[k], {}):
            out.add(word)
    return out


def _undecodable(insns: list[Instruction], streams: _Streams) -> list[tuple[int, bool]]:
    """Where ``insns`` (a procedure's, in order) run on into bytes that no decoder reads:
    the next address of an instruction that falls through is not decoded, and reads as
    nothing. Not past calls: code after a call that never returns is often no code."""
    have = {ins.address for ins in insns}
    out = []
    for ins in insns:
        after = ins.address + ins.size
        if after not in have and not ins.is_call and ins.falls_through \
                and streams.at(after, ins.thumb)[0] is None and any(streams.binary.read(after, 2)):
            out.append((after, ins.thumb))
    return out


@dataclass(frozen=True)
class _Starts:
    """What the descent starts from, read from the file once: entries known without decoding
    (``_seeds``), weak ones (``_data_words``), and each function's landing pads."""

    seeds: list[tuple[int, bool]]
    data_words: list[tuple[int, bool]]
    unwound: dict[int, tuple[int, set[int]]]
    # Ranges holding only A32 code (the PLT, but for its Thumb stubs), and those stubs: a
    # Thumb entry elsewhere in them is data read as an address or garbage's call.
    a32_only: tuple[list[tuple[int, int]], set[int]] = ([], set())
    # Even words in a fixed-address binary's data, each with its table: A32 entries (or
    # Thumb labels) where no code was found (_a32_in_gaps).
    even_words: dict[int, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    # Thumb addresses in data right after a call (_return_addresses) -> the call's target.
    returns: dict[int, int | None] = dataclasses.field(default_factory=dict)
    # Cortex-M firmware: the core has no A32 state (a branch to an even address faults), so
    # an even word that reads as an A32 entry (a constant in a literal pool) is no code.
    thumb_only: bool = False
    # Whether a weak Thumb entry's bytes are no Thumb code (_no_thumb_code).
    no_thumb_code: Callable[[int], bool] | None = None
    # The functions the unwind index names (indexed_functions): boundaries no instruction or
    # IT block crosses.
    indexed: frozenset[int] = frozenset()

    def wrong_mode(self, address: int, thumb: bool) -> bool:
        """Whether an entry at ``address`` cannot be in this instruction set (A32 code is
        word-aligned: a guess from a literal or a computed target at a halfword is no A32 entry)."""
        if not thumb:
            return self.thumb_only or bool(address & 3)
        ranges, stubs = self.a32_only
        return address not in stubs and _inside(ranges, address)

    def weak_wrong(self, address: int, thumb: bool) -> bool:
        """Whether a weak entry (a word in data, a literal) at ``address`` is no code."""
        return self.wrong_mode(address, thumb) or (thumb and self.no_thumb_code is not None
                                                   and self.no_thumb_code(address))


def _no_thumb_code(read: Callable[[int, int], bytes], firmware: bool,
                   zero_ahead: Callable[[int], bool] | None = None) -> Callable[[int], bool]:
    """Whether the bytes at a weak Thumb entry are no Thumb code: they read as A32 code
    (``a32_looking``), or their straight-line code meets a zero halfword (``zero_ahead``,
    _zero_ahead), or, in firmware, which keeps its strings inside .text too, the odd
    word (the entry + 1) is where a C string starts: that string's address (a literal passed
    to printf), over which a jump would rewrite the text."""
    names_string = _string_at(read) if firmware else None
    # The answer depends on the image's bytes alone, and the same data words are weighed
    # again in every pass of the outer loop (_thumb_words): each decoded once.
    answers: dict[int, bool] = {}

    def no_thumb_code(address: int) -> bool:
        answer = answers.get(address)
        if answer is None:
            answer = answers[address] = (names_string is not None and names_string(address)) \
                or a32_looking(read, address) or (zero_ahead is not None and zero_ahead(address))
        return answer
    return no_thumb_code


#: Bytes of straight-line code from a weak Thumb entry that _zero_ahead reads.
ZERO_AHEAD = 16


def _zero_ahead(read: Callable[[int, int], bytes], md: capstone.Cs, cache: DecodeCache) -> Callable[[int], bool]:
    """Whether the Thumb code from an address, read in a straight line for ``ZERO_AHEAD``
    bytes up to the first instruction that does not fall through, calls or is a system
    call, holds the halfword 0 (``movs r0, r0``, which no compiler emits): zeros of data,
    not code.

    GHC lays each info table (small numbers, zero fields: 0x00020005, 0, 0x0001000e) in
    .text before its A32 code, and those words are too small to count in ``a32_looking``:
    a weak Thumb entry on one (a number in data that reads as an address in it: a pair of
    alex's 16-bit table entries, 0x003b003b) got its jump written over the table the runtime
    reads. (The second halfword of a 32-bit instruction may be 0: only 16-bit ones count.)"""
    def zero(address: int) -> bool:
        try:
            code = read(address, ZERO_AHEAD)
        except Exception:  # noqa: BLE001 - past the loaded bytes: nothing to read
            return False
        for ins in decode_range(md, code, address, True, cache)[0]:
            if ins.raw == b"\0\0":
                return True
            if not ins.falls_through or ins.is_call or ins.is_syscall:
                return False  # (a system call may not return: sigreturn's restorer, before padding)
        return False
    return zero


def _string_at(read: Callable[[int, int], bytes]) -> Callable[[int], bool]:
    """Whether a C string of at least 3 printable characters starts at ``address + 1``."""
    def names_string(address: int) -> bool:
        try:
            text = read(address + 1, 64)
        except Exception:  # noqa: BLE001 - past the loaded bytes: no string
            return False
        end = text.find(0)
        return end >= 3 and all(32 <= c < 127 or c in (9, 10, 13) for c in text[:end])
    return names_string


def a32_looking(read: Callable[[int, int], bytes], address: int) -> bool:
    """Whether the bytes around ``address`` read as A32 code: of the twelve words about it
    that are not small numbers (literals, tables), at least ``A32_LOOKING`` and two in three
    have the condition AL (0xE in their top four bits), as nearly every instruction of
    compiled A32 code does. A word of Thumb code has that nibble where its second halfword
    starts 0xE (an unconditional B, or some 32-bit encodings): one in five or so. A Thumb
    ``bx pc`` stub (0x4778, then A32 code) is Thumb all the same.

    Only for entries on weak evidence (numbers in data, literals that look like addresses):
    GHC's code is A32, reached through even info pointers the descent does not follow, and
    odd numbers in its data taken for Thumb functions put Thumb jumps over its instructions
    (hspec-discover: 1,078 Thumb procedures, where the program has a few dozen)."""
    if read(address, 2) == b"\x78\x47":
        return False
    base = (address & ~3) - 24
    words = [word for word in struct.unpack("<12I", read(base, 48).ljust(48, b"\0")) if word >> 24]
    always = sum(1 for word in words if word >> 28 == 0xE)
    return always >= A32_LOOKING and 3 * always >= 2 * len(words)


#: How many words about an address, at least, read as A32 instructions that always run (a32_looking).
A32_LOOKING = 5


def _a32_only(elf: ELFFile, stubs: set[int]) -> tuple[list[tuple[int, int]], set[int]]:
    """The PLT's range and its Thumb ``stubs`` (see _Starts.a32_only)."""
    plt = elf.get_section_by_name(".plt")
    if plt is None or not plt["sh_size"]:
        return [], set()
    return [(plt["sh_addr"], plt["sh_addr"] + plt["sh_size"])], stubs


class _Logged(dict):
    """A dict that notes the keys set and removed since ``changes`` was last asked: a round
    of the descent looks at what changed alone, where a large program has a hundred
    thousand entries and takes hundreds of rounds. It keeps its keys sorted too (``order``),
    for the limits of the descents."""

    def __init__(self, ordered: bool = True) -> None:
        super().__init__()
        self._set: set[int] = set()
        self._removed: set[int] = set()
        self._ordered = ordered
        self._order: list[int] = []

    def __setitem__(self, key: int, value: object) -> None:
        super().__setitem__(key, value)
        self._set.add(key)

    def __delitem__(self, key: int) -> None:
        super().__delitem__(key)
        self._removed.add(key)

    def setdefault(self, key: int, value: object = None) -> object:
        if key not in self:
            self[key] = value
        return self[key]

    def update(self, other: dict) -> None:  # (only dicts are passed)
        for key, value in other.items():
            self[key] = value

    def pop(self, key: int, *default: object) -> object:
        if key in self:
            self._removed.add(key)
        return super().pop(key, *default)

    def changes(self) -> tuple[set[int], set[int]]:
        """The keys set and those removed since the last call (a key may be in both), and
        ``order`` brought up to date."""
        got, gone = self._set, self._removed
        self._set, self._removed = set(), set()
        order = self._order
        if not self._ordered:
            return got, gone
        if 8 * (len(got) + len(gone)) > len(order):  # many: sorting is cheaper than moving
            self._order = sorted(self)
            return got, gone
        for key in gone:
            if key not in self:
                k = bisect.bisect_left(order, key)
                if k < len(order) and order[k] == key:
                    del order[k]
        for key in got:
            if key in self:
                k = bisect.bisect_left(order, key)
                if k == len(order) or order[k] != key:
                    order.insert(k, key)
        return got, gone

    def order(self) -> list[int]:
        """The keys, sorted, as of the last ``changes``."""
        return self._order


class _Namings:
    """Which entries' descents name each address (``named_by``: call it or branch to it,
    ``Descent.calls``, ``after_calls``, ``after``), and the descents indexed so (``indexed``:
    entry -> their calls, which a descent found again from the memo shares). Kept for all the
    passes of ``discover``: each pass finds the same descents again from the memo, and a
    namer is only a candidate (_Found)."""

    def __init__(self) -> None:
        self.named_by: dict[int, set[int]] = {}
        self.indexed: dict[int, list[dict[int, bool]]] = {}


class _Found(_Logged):
    """Each entry's descent (a ``_Logged`` dict), and which entries name each address, for
    the strength of one entry (``_Evidence``): the functions it is a landing pad of
    (``unwound``), and the entries whose descents call it or branch to it (``Descent.calls``,
    ``after_calls``, ``after``), or once did: the descent an entry has now tells
    (``named_by`` is never pruned, as the same descents come and go round after round, and
    pass after pass of ``discover``: ``namings``, kept by the caller)."""

    def __init__(self, unwound: dict[int, tuple[int, set[int]]], namings: _Namings | None = None) -> None:
        super().__init__(ordered=False)
        namings = _Namings() if namings is None else namings
        self.named_by = namings.named_by
        # entry -> the calls of its descents in named_by (kept: a descent found again shares them)
        self._indexed = namings.indexed
        self.pad_of: dict[int, list[int]] = {}
        for start, (_, pads) in unwound.items():
            for pad in pads:
                self.pad_of.setdefault(pad, []).append(start)

    def __setitem__(self, key: int, value: Descent) -> None:
        # (Set about ten times per descent, a descent found again from the memo far more
        # often than a new one: the test is a plain loop over the few kept, no generator.)
        indexed = self._indexed.get(key)
        if indexed is None:
            indexed = self._indexed[key] = []
        calls = value.calls
        for before in indexed:
            if before is calls:
                break
        else:
            indexed.append(calls)
            named_by = self.named_by
            for target in (*calls, *value.after_calls, *value.after):
                namers = named_by.get(target)
                if namers is None:  # (no empty set made for every target named before)
                    named_by[target] = {key}
                else:
                    namers.add(key)
        super().__setitem__(key, value)


class _Evidence:
    """The strength of single entries (as ``_strengths`` gives them all) and whether single
    procedures return (as ``_returning``), each found by walking back from it alone: a
    round that weighs a few cuts need not walk every descent (a hundred thousand, in
    hundreds of rounds). The descents must not change while it is used."""

    def __init__(self, roots: set[int], entries: dict[int, bool], found: _Found, plt: dict[int, str],
                 noreturn: set[int]) -> None:
        self.roots, self.entries, self.found, self.plt, self.noreturn = roots, entries, found, plt, noreturn
        self._returns: dict[int, bool] = {}
        self._at_least: dict[tuple[int, int], bool] = {}  # (entry, level) -> reached at that level

    def returns(self, address: int) -> bool:
        """Whether ``address`` is in ``_returning``: it returns (the PLT, or a descent that
        returns), or branches to one that does, through procedures not in ``noreturn``."""
        got = self._returns.get(address)
        if got is not None:
            return got
        work, seen = [address], {address}
        while work:
            at = work.pop()
            known = self._returns.get(at)
            if known is False or at in self.noreturn:
                continue
            descent = self.found.get(at)
            if known or at in self.plt or (descent is not None and descent.returns):
                self._returns[address] = True
                return True
            if descent is not None:
                for target in _goes_on_to(descent):
                    if target not in seen:
                        seen.add(target)
                        work.append(target)
        for at in seen:  # none of them reaches a procedure that returns
            self._returns[at] = False
        return False

    def all_return(self, calls: frozenset[int]) -> bool:
        """Whether every one of ``calls`` returns (``calls <= _returning(...)``)."""
        return all(self.returns(call) for call in calls)

    def strength(self, entry: int) -> int:
        """``_strengths(...).get(entry, DOUBTFUL)``."""
        if entry not in self.entries:
            return DOUBTFUL
        for level in (SURE, CALLED):
            if self._reached(entry, level):
                return level
        return DOUBTFUL

    def _reached(self, entry: int, level: int) -> bool:
        """Whether a root reaches ``entry`` by namings at least ``level`` strong (_strengths),
        through entries: a walk back over what names it."""
        got = self._at_least.get((entry, level))
        if got is not None:
            return got
        found, entries = self.found, self.entries
        work, seen = [entry], {entry}
        while work:
            at = work.pop()
            known = self._at_least.get((at, level))
            if known is False:
                continue
            if known or at in self.roots:
                self._at_least[entry, level] = True
                return True
            namers = [by for by in found.named_by.get(at, ()) if by not in seen and by in found
                      and self._names(found[by], at, level)]
            namers += [by for by in found.pad_of.get(at, ()) if by not in seen and by in found]
            for by in namers:
                if by in entries and by not in seen:
                    seen.add(by)
                    work.append(by)
        for at in seen:  # nothing that reaches them so is a root
            self._at_least[at, level] = False
        return False

    def _names(self, descent: Descent, target: int, level: int) -> bool:
        """Whether ``descent`` names ``target`` at least ``level`` strongly (_strengths)."""
        if target in descent.calls:
            return True
        if target in descent.after_calls and (level == CALLED or self.all_return(descent.via[target])):
            return True
        return target in descent.after and self.all_return(descent.via[target])


def _entries_and_code(starts: _Starts, ranges: list[tuple[int, int]], binary: Binary, streams: _Streams,
                      noreturn: set[int], memo: dict[int, dict[int, Descent]],
                      literals: dict[int, tuple[dict[int, Instruction], list[int]]], namings: _Namings
                      ) -> tuple[dict[int, bool], dict[int, Descent]]:
    """The procedure entries (-> Thumb) found from ``starts`` to a fixpoint, and each one's
    descent, with calls to ``noreturn`` taken as never returning. ``memo``: the descents
    (_descend_all), ``literals``: their even literals (_even_literals), ``namings``: what their
    descents name (_Found), from the calls before."""
    entries = _Logged()
    for addr, thumb in starts.seeds:
        if not starts.wrong_mode(addr, thumb):
            entries.setdefault(addr, thumb)
    # A code address in data after a call that never returns is a function's (one after
    # ``bl abort`` in C); after any other call, a return address, an entry no surer than what
    # names it: the one after OCaml's ``bl caml_raise_exn`` (which "returns" to the exception
    # handler) is followed by a literal pool, which read as code reached by flow from a sure
    # entry cut the next function's instruction in two (ocp-indent).
    for addr, target in starts.returns.items():
        if target in noreturn and not starts.wrong_mode(addr, True):
            entries.setdefault(addr, True)
    sure_roots = set(entries)
    roots = set(entries)  # entries no descent needs to name: seeds, data words, landing pads
    for addr in starts.returns:
        if addr not in entries and not starts.wrong_mode(addr, True):
            entries[addr] = True
            roots.add(addr)
    # Odd numbers in data are looked at once flow has found what it can (_thumb_words).
    words_pending = True
    # Entries a word in data names (their reading's only evidence, where no code names them).
    data_named = {addr for addr, _ in starts.data_words} | {w for w in starts.even_words if not w & 3}  # (A32's)
    finders: dict[int, set[int]] = {}  # entry -> the entries whose descents named it
    rejected: set[int] = set()
    flipped: set[int] = set()  # entries whose instruction set _other_mode changed (once each)
    unwound = starts.unwound
    found = _Found(unwound, namings)
    # Cuts kept so far: ``_wrong`` keeps an entry that cuts code reached past calls not known
    # to return, and a callee not decoded yet (named by the very descent that is cut) is not
    # known to. Once nothing more is found they are weighed again, every callee decoded.
    kept: dict[int, Descent] = {}
    tables = -1  # how many switch tables the entries were all looked for in (_in_tables)
    # Rounds can cycle: an entry dropped takes what only it found with it, another entry
    # names that again, and it cuts what it cut before (clang's static A32 Lua: a cycle of
    # 60 rounds, for ever). Once a round's entries repeat an earlier round's, an entry once
    # dropped is rejected as the entries that cut were, and the rounds end.
    seen: set[int] = set()
    dropped: set[int] = set()
    while True:
        state = hash((frozenset(entries.items()), len(rejected), len(flipped)))
        if state in seen:
            rejected |= dropped
        seen.add(state)
        changed, new, guesses, cut, fresh = _descend_all(binary, streams, ranges, entries, noreturn, memo, found)
        # (Only entries can be dropped: a cut at the code's end, which is no entry, would
        # drop nothing and be found again, round after round.)
        wrong = _wrong(cut, sure_roots, entries, found, binary.plt, noreturn, starts.indexed) & entries.keys() \
            if cut else set()
        # An entry found outside the tables known when it was new stays outside until more are known.
        if len(binary.switch_tables) != tables:
            tables = len(binary.switch_tables)
            fresh = entries.keys()
        wrong |= _in_tables(fresh - sure_roots, binary.switch_tables)
        if wrong:  # drop those, with what only they found, and decode again
            rejected |= wrong
            dropped |= _drop(wrong, entries, roots, finders, found)
            for entry in changed:  # what they call is looked at in the next round
                found.pop(entry, None)
            continue
        kept.update(cut)
        clash = {a: t for a, t in _other_mode(changed, sure_roots, entries, found, binary.plt, noreturn,
                                              unwound, data_named).items()
                 if a not in flipped and not starts.wrong_mode(a, t)}
        if clash:  # entries read in the instruction set weaker evidence gave them: read them again
            flipped |= clash.keys()
            _drop(set(clash), entries, roots, finders, found)
            for entry, thumb in clash.items():
                memo.pop(entry, None)  # (descents are kept by entry and limit, not instruction set)
                entries[entry] = thumb
            for entry in changed:
                found.pop(entry, None)
            continue
        for entry in changed:
            for target in found[entry].targets():
                finders.setdefault(target, set()).add(entry)
        added = {a: t for a, t in new.items() if a not in entries and a not in rejected and not starts.wrong_mode(a, t)}
        added |= {a: t for a, t in guesses.items()
                  if a not in entries and a not in rejected and a not in added and not starts.weak_wrong(a, t)}
        if not added:  # then the landing pads of the functions found, which only the unwinder enters
            added = {pad: entries[start] for start, (_, pads) in unwound.items() if start in entries
                     for pad in pads if pad not in entries and _inside(ranges, pad)}
            roots |= added.keys()  # (as strong as their function: _strengths)
        if not added and words_pending:  # then odd words in data: Thumb code addresses, perhaps
            words_pending = False
            added = _thumb_words(starts, entries, rejected, sure_roots, found, binary, noreturn)
            roots |= added.keys()
        if not added and not binary.is_pie and not starts.thumb_only:
            # then A32 functions named only by even words in data or literal pools, where no code was found
            words = starts.even_words.keys() | _even_literals(found, binary, ranges, literals)
            added = _a32_in_gaps(words - entries.keys() - rejected, found, entries.order(), streams,
                                 starts.even_words)
            roots |= added.keys()  # (named by data, as the odd data words)
            data_named |= added.keys()
        if not added:
            kept = {e: d for e, d in kept.items() if e in entries and found.get(d.entry) is d}
            wrong = _wrong(kept, sure_roots, entries, found, binary.plt, noreturn, starts.indexed) if kept else set()
            if wrong:
                rejected |= wrong
                dropped |= _drop(wrong, entries, roots, finders, found)
                for entry in wrong:  # the code they cut is decoded on
                    found.pop(kept[entry].entry, None)
                continue
            binary.straddled_entries = _straddled(kept, sure_roots, entries, found, binary.plt, noreturn)
            return dict(entries), dict(found)
        entries.update(added)


def _thumb_words(starts: _Starts, entries: dict[int, bool], rejected: set[int], sure_roots: set[int],
                 found: dict[int, Descent], binary: Binary, noreturn: set[int]) -> dict[int, bool]:
    """The odd words in data (``starts.data_words``) to take as Thumb entries, now that flow
    has found what it can: none where the code the surest evidence reaches (SURE or CALLED,
    ``_strengths``) has no Thumb procedure at all. A program of A32 code alone (Free
    Pascal's, whose run-time library is A32 and does not start through glibc) calls nothing
    through an odd address, and an odd number in its data read as one made garbage Thumb
    procedures over its A32 functions: an A32 call into one could not be emitted."""
    strength = _strengths(sure_roots, entries, found, _returning(found, binary.plt, noreturn), starts.unwound)
    if not any(entries[entry] for entry, level in strength.items() if level >= CALLED and entry in entries):
        return {}
    return {addr: thumb for addr, thumb in starts.data_words
            if addr not in entries and addr not in rejected and not starts.weak_wrong(addr, thumb)}


def _in_tables(candidates: set[int], tables: set[tuple[int, int]]) -> set[int]:
    """The ``candidates`` (entries on no symbol's or export's word) inside a switch's table:
    data, which no real code branches into. A literal pool decoded as code (after a call of
    a function not known never to return: libstdc++'s ``__throw_length_error``) reads as
    branches to anywhere; one into a table made a procedure there, and its entry's jump,
    written over the table, sent the switch astray (ninja)."""
    if not tables or not candidates:
        return set()
    spans = sorted(tables)
    starts = [lo for lo, _ in spans]
    reach = list(itertools.accumulate((hi for _, hi in spans), max))  # tables may overlap or nest
    out = set()
    for entry in candidates:
        k = bisect.bisect_right(starts, entry) - 1
        if k >= 0 and entry < reach[k]:
            out.add(entry)
    return out


def _wrong(cut: dict[int, Descent], roots: set[int], entries: dict[int, bool], found: _Found,
           plt: dict[int, str], noreturn: set[int], indexed: frozenset[int]) -> set[int]:
    """The entries of ``cut`` (entry -> the descent it cuts) to drop: real code never
    branches into the middle of an instruction, so one of the two readings is wrong, and
    the one on weaker evidence goes.

    Entries are SURE, CALLED or DOUBTFUL (``_strengths``). ``roots`` (symbols, exports, the
    PLT, the ELF entry, init/fini) are SURE, and so is what SURE code calls or branches to.
    Code a descent reached only past a direct call of something not known to return (a
    literal pool after an error routine, perhaps) names its calls CALLED (a static
    program reaches most of its C library past ``_start``'s call of ``__libc_start_main``,
    and a pool rarely reads as a BL to code) and its branches DOUBTFUL (a pool's words read
    as B or CBZ often), unless every callee it passed returns. What CALLED code names is
    CALLED at best; what past a computed jump names, literal guesses and numbers in data
    are DOUBTFUL.

    A DOUBTFUL entry that cuts code reached by flow is dropped, and so is a CALLED one that
    cuts SURE code reached by flow (git: a pool read as a BL into the middle of a
    function). An entry inside an IT block that code at least as strong runs into is
    dropped too. Where the code cut lies past a call not known to return, the entry is kept
    and that code ends there (``_start`` runs on past ``__libc_start_main`` into an A32
    function). ``found``'s landing pads are ``_strengths``' ``unwound``.

    Above all these, the compiler's own boundaries (decision 0189): a function the unwind
    index names (``indexed``) is never dropped, and where the cut code is reached by flow,
    past no call, from such a function, an entry that is not a root and that an
    instruction or IT block of it crosses is dropped, whatever named it. (A stripped static
    D program: a literal pool after a call of a function that throws, which the descent
    takes to return, read as ``bgt.n`` to the middle of the next function's tail call, as
    strong as the function it cut; its IT reading made the function after that
    conditional, and every copy crashed.)"""
    evidence = _Evidence(roots, entries, found, plt, noreturn)  # (found's landing pads: unwound's)
    out = set()
    for entry, descent in cut.items():
        if entry in indexed:  # the code that crosses it is read wrong, whatever its evidence
            continue
        if descent.entry in indexed and descent.cut_doubt == FLOW and (descent.straddles or descent.cuts_it) \
                and entry not in roots:
            out.add(entry)
            continue
        if _cut_past_unknown_call(descent, evidence):
            continue
        mine = evidence.strength(entry)
        if mine == DOUBTFUL or (mine == CALLED and evidence.strength(descent.entry) == SURE):
            out.add(entry)
        elif descent.cuts_it and not descent.straddles and evidence.strength(descent.entry) >= mine:
            # Branching into an IT block is not permitted (ARM ARM), so code as surely known
            # as the entry that runs into it inside its IT block rules, whatever names the
            # entry: a PIE's relocated pointer to a place in it is an address, not an entry.
            out.add(entry)
    return out


def _straddled(kept: dict[int, Descent], roots: set[int], entries: dict[int, bool], found: _Found,
               plt: dict[int, str], noreturn: set[int]) -> set[int]:
    """The entries ``_wrong`` kept although an instruction of the code they cut straddles
    them, where that code is not past a call that may not return, or the entry is no more
    than DOUBTFUL (a number in data): the code's reading is as sure as the entry's. One is
    wrong, and which one nothing tells; a jump written at the entry would break that
    instruction where it runs in place (the code cut runs on there, from its copy's end).
    So the entry keeps its bytes: its procedure is copied and instrumented for direct
    calls, and runs in place when entered from elsewhere (decision 0153). (A stripped
    static musl busybox: a table's number cut ``__malloc_alloc_meta`` short, which made its
    caller's code past the call "past a call not known to return", and another number cut
    an instruction there: the jump written over its second half ran as a BL into nowhere;
    decision 0186.)"""
    evidence = _Evidence(roots, entries, found, plt, noreturn)
    return {entry for entry, descent in kept.items()
            if descent.straddles and (not _cut_past_unknown_call(descent, evidence)
                                      or evidence.strength(entry) == DOUBTFUL)}


def _cut_past_unknown_call(descent: Descent, evidence: _Evidence) -> bool:
    """Whether the code ``descent`` has cut (it straddles, runs on or cuts an IT block) was
    reached only past a call not known to return: a literal pool, perhaps, whose reading
    gives way to the entry's."""
    return descent.cut_doubt == PAST_CALL and not evidence.all_return(descent.cut_via)


def _other_mode(changed: list[int], roots: set[int], entries: dict[int, bool], found: dict[int, Descent],
                plt: dict[int, str], noreturn: set[int], unwound: dict[int, tuple[int, set[int]]],
                data_named: set[int] = frozenset()) -> dict[int, bool]:
    """Entries that the ``changed`` descents call or branch to in the other instruction set
    (-> that one) where that reading has the stronger evidence: an address holds code of
    one instruction set. The evidence for a reading is the strongest code naming the entry
    in it (``_strengths``: a call from code reached by flow as strong as its caller, one
    past a call at most CALLED, a branch past a call DOUBTFUL, a literal's guess DOUBTFUL),
    and for the entry's own reading its being a root. (memset, A32, at 0x20000 was read as
    Thumb for a 0x20001 in a table of numbers, while A32 callers and an interworking stub's
    ``b`` named it.)

    A word in data (``data_named``) that no code names in its reading is weaker than any
    code: a number read as an address. Code that branches there in the other instruction
    set, even code found from data itself, is the better reading (Free Pascal's ptop, all
    A32: an A32 function's branch named a place an odd number had made a Thumb procedure;
    kept both, the A32 branch to Thumb code could not be emitted)."""
    named = {target for entry in changed for target, thumb in found[entry].calls.items()
             if target in entries and entries[target] != thumb}
    if not named:
        return {}
    strength = _strengths(roots, entries, found, _returning(found, plt, noreturn), unwound)
    best: dict[tuple[int, bool], int] = {(t, entries[t]): SURE for t in named if t in roots}
    for entry, descent in found.items():
        level = strength.get(entry, DOUBTFUL)
        for targets, cap in ((descent.calls, SURE), (descent.after_calls, CALLED), (descent.after, DOUBTFUL),
                             (descent.guesses, DOUBTFUL)):
            for target in named.intersection(targets):
                key = (target, targets[target])
                best[key] = max(best.get(key, DOUBTFUL), min(level, cap))
    return {t: not entries[t] for t in named
            if best.get((t, not entries[t]), DOUBTFUL)
            > best.get((t, entries[t]), _DATA if t in data_named else DOUBTFUL)}


def _goes_on_to(descent: Descent) -> Iterable[int]:
    """The procedures ``descent``'s code goes on into: those it branches to (tail calls) and
    the next one where code reached by flow runs on into it. A procedure cut short by an
    entry, a number in a table perhaps, returns where its code past the cut does (decision
    0186). Not code that runs on past a call not known to return: a literal pool after a
    call of an error routine reads as code running on into the next function, which
    returns."""
    return (*descent.tails, descent.limit) if descent.runs_on and descent.cut_doubt == FLOW else descent.tails


def _returning(found: dict[int, Descent], plt: dict[int, str], noreturn: set[int]) -> set[int]:
    """The procedures known to return: the PLT's and those with a return instruction (or a
    jump through a register), and those that branch or run on to one of them (a tail call,
    code cut by an entry), but not ``noreturn``."""
    known = {entry for entry, descent in found.items() if descent.returns and entry not in noreturn}
    known |= plt.keys() - noreturn
    callers: dict[int, list[int]] = {}
    for entry, descent in found.items():
        if entry not in known and entry not in noreturn:
            for target in _goes_on_to(descent):
                callers.setdefault(target, []).append(entry)
    work = [entry for entry in known if entry in callers]
    while work:
        for caller in callers.pop(work.pop(), ()):
            if caller not in known:
                known.add(caller)
                if caller in callers:
                    work.append(caller)
    return known


#: How strongly an entry is known to be one (see _wrong).
DOUBTFUL, CALLED, SURE = 0, 1, 2
#: A reading only a word in data gives (_other_mode): weaker than any code's.
_DATA = -1


def _strengths(roots: set[int], entries: dict[int, bool], found: dict[int, Descent],
               returning: set[int], unwound: dict[int, tuple[int, set[int]]]) -> dict[int, int]:
    """The SURE and CALLED entries (``_wrong``): for each level, the entries reached from
    the roots (and from the entries of the levels above) by namings at least that strong."""
    strength: dict[int, int] = {}
    for level in (SURE, CALLED):
        work = [entry for entry in roots if entry in entries and entry not in strength] + list(strength)
        seen = set(work)
        while work:
            entry = work.pop()
            strength.setdefault(entry, level)
            descent = found.get(entry)
            if descent is None:
                continue
            named = list(descent.calls)
            named += [t for t in descent.after_calls if level == CALLED or descent.via[t] <= returning]
            named += [t for t in descent.after if descent.via[t] <= returning]
            pads = unwound.get(entry)
            if pads is not None:  # landing pads are as strong as their function
                named += pads[1]
            work += [target for target in named if target in entries and target not in seen]
            seen.update(named)
    return strength


def _drop(dropped: set[int], entries: dict[int, bool], roots: set[int], finders: dict[int, set[int]],
          found: dict[int, Descent]) -> set[int]:
    """Remove the ``dropped`` entries and, transitively, every entry that only they named;
    returns the entries removed."""
    removed = set()
    work = list(dropped)
    while work:
        gone = work.pop()
        if entries.pop(gone, None) is not None:
            removed.add(gone)
        roots.discard(gone)
        descent = found.pop(gone, None)
        if descent is None:
            continue
        for target in descent.targets():
            named_by = finders.get(target)
            if named_by is None:
                continue
            named_by.discard(gone)
            if not named_by and target not in roots and target in entries:
                work.append(target)
    return removed


def _never_return(found: dict[int, Descent], noreturn: set[int]) -> set[int]:
    """Entries, not yet in ``noreturn``, of procedures that cannot return: no instruction of
    theirs returns, jumps through a register, branches out of the procedure other than to
    ``noreturn`` or runs on past its last instruction (what a call to ``noreturn`` is
    followed by is not decoded). Error reporters that end in ``exit`` are the usual case;
    until they are known, the literal pools after calls to them are decoded as code."""
    out = set()
    for entry, descent in found.items():
        insns = descent.instructions
        # (One that returns or jumps through a register, Descent.returns, stops the loop below.)
        if entry in noreturn or not insns or descent.returns:
            continue
        own = set(insns)
        last = max(insns)
        if insns[last].falls_through and not _ends(insns[last], noreturn):
            continue
        for ins in insns.values():
            if ins.is_return or (ins.writes_pc and ins.branch_target is None and not ins.is_call):
                break
            target = ins.branch_target
            leaves = target is not None and target not in own and target not in noreturn
            if ins.is_branch and not ins.is_call and leaves:
                break
            if ins.falls_through and ins.end not in own and not _ends(ins, noreturn) and ins.address != last:
                break
        else:
            out.add(entry)
    return out


def _close_noreturn(more: set[int], noreturn: set[int], descents: dict[int, Descent], entries: dict[int, bool],
                    memo: dict[int, dict[int, Descent]], binary: Binary, streams: _Streams,
                    ranges: list[tuple[int, int]]) -> None:
    """Add ``more`` to ``noreturn``, and with it the callers that cannot return either once
    what follows their calls to ``more`` is no longer decoded, in turn, to a fixpoint.

    Each caller is decoded again up to the limit it had (``memo`` keeps that descent for the
    next pass of ``discover``): an error reporter that ends by calling another is found in
    the same pass as it, not in a pass of its own. A pass walks every entry again (OCaml's
    why3: 121k entries, nine passes before this), while this looks at the callers alone.
    The next pass still checks every procedure, so what the limits it moves change is found
    there, as before.
    """
    descents = dict(descents)
    named_by: dict[int, list[int]] = {}  # callee -> the entries whose descents call or branch to it
    for entry, descent in descents.items():
        for target in itertools.chain(descent.calls, descent.after_calls, descent.tails):
            named_by.setdefault(target, []).append(entry)
    added = set()
    while more:
        noreturn |= more
        added |= more
        callers = {}
        # (Callers known not to return are decoded again too: their code stops earlier as well.)
        for entry in {entry for callee in more for entry in named_by.get(callee, ())}:
            descent = descents[entry]
            if more & (descent.calls.keys() | descent.after_calls.keys()):
                descent = _descend(binary, streams, ranges, entry, entries[entry], descent.limit, noreturn)
                memo.setdefault(entry, {})[descent.limit] = descent
                descents[entry] = descent
            callers[entry] = descent
        more = _never_return(callers, noreturn)
    # Descents kept for other limits stop earlier now too (those decoded above already do).
    for entry, known in memo.items():
        current = descents.get(entry)
        for limit in [limit for limit, d in known.items()
                      if d is not current and added & (d.calls.keys() | d.after_calls.keys())]:
            del known[limit]


def _ends(ins: Instruction, noreturn: set[int]) -> bool:
    """``ins`` is an unconditional call that does not return."""
    return ins.is_call and ins.cond == 14 and not ins.in_it and ins.branch_target in noreturn


def _descend_all(binary: Binary, streams: _Streams, ranges: list[tuple[int, int]], entries: _Logged,
                 noreturn: set[int], memo: dict[int, dict[int, Descent]], found: _Logged
                 ) -> tuple[list[int], dict[int, bool], dict[int, bool], dict[int, Descent], set[int]]:
    """Decode every procedure from its entry into ``found`` (each entry's descent, kept from
    the round before); returns the entries whose descent changed and, from those alone, the
    call targets seen, the weak entries guessed from literals and the entries that cut an
    instruction of the procedure before them in two, or that it runs on into in the other
    instruction set, and the entries that had no descent. (A descent that did not change was
    looked at in an earlier round: what it calls is an entry already, or was rejected.)

    A procedure's descent depends only on its entry, its instruction set and its limit (the
    next entry): ``memo`` keeps each one's results from the rounds before, by limit, so a
    round decodes only the new procedures and those a new entry now cuts short (and not
    again those a weak entry cut for a round before it was dropped).
    """
    set_, removed = entries.changes()
    lost = found.changes()[1]
    starts = entries.order()
    end = max(hi for _, hi in ranges)
    # Only the entries without a descent (new, or dropped from ``found``) and those whose
    # limit moved, the entry before each new or gone one, can have changed: a round looks at
    # those alone (a large program has thousands of entries and takes dozens of rounds).
    # Every round leaves ``found`` with a descent of each entry, so those are among the
    # entries set or removed, and the descents dropped, since the round before.
    gone = {entry for entry in removed if entry not in entries and entry in found}
    for entry in gone:
        del found[entry]
    fresh = {entry for entry in set_ | lost if entry in entries and entry not in found}
    look = set(fresh)
    look.update(starts[k - 1] for k in (bisect.bisect_left(starts, e) for e in (*fresh, *gone)) if k)
    changed = []
    calls: dict[int, bool] = {}
    guesses: dict[int, bool] = {}
    cut: dict[int, Descent] = {}
    for entry in sorted(look):
        k = bisect.bisect_left(starts, entry)
        limit = starts[k + 1] if k + 1 < len(starts) else end
        by_limit = memo.setdefault(entry, {})
        known = by_limit.get(limit)
        if known is None:
            wider = next((d for d in by_limit.values() if limit < d.limit and d.fits_below(limit)), None)
            if wider is not None:  # the new entry cut nothing (and nothing ran on to it)
                known = dataclasses.replace(wider, limit=limit)
            else:
                known = _descend(binary, streams, ranges, entry, entries[entry], limit, noreturn)
            by_limit[limit] = known
        if found.get(entry) is known:
            continue
        found[entry] = known
        changed.append(entry)
        for target, thumb in known.calls.items():
            calls.setdefault(target, thumb)
        for target, thumb in (*known.after_calls.items(), *known.after.items()):
            calls.setdefault(target, thumb)
        for target, thumb in known.guesses.items():
            guesses.setdefault(target, thumb)
        # Code never runs on into the other instruction set: an entry there is as wrong as
        # one inside an instruction.
        # Nor into the middle of an IT block (the entry's reading would lose the condition).
        if known.straddles or known.cuts_it or (known.runs_on and entries.get(limit, entries[entry]) != entries[entry]):
            cut[limit] = known
    return (changed, {a: t for a, t in calls.items() if _inside(ranges, a)},
            {a: t for a, t in guesses.items() if _inside(ranges, a)}, cut, fresh)


@dataclass(frozen=True)
class Descent:
    """What decoding a procedure from its entry up to ``limit`` found: its instructions, the
    calls and other procedures' addresses they name (target -> Thumb), and whether it
    reached an instruction that runs past the limit."""

    entry: int
    limit: int
    instructions: dict[int, Instruction]
    calls: dict[int, bool]
    guesses: dict[int, bool]  # weak entries (_targets)
    straddles: bool
    reach: int = 0  # the end of the highest instruction, and of what the descent went to
    runs_on: bool = False  # an instruction falls through to the limit (into the next procedure)
    cuts_it: bool = False  # ... from inside an IT block, so the limit is inside it
    # Targets named only by code reached past direct calls (``via``: those not known to
    # return: the bytes after it may be a literal pool), by branches (``after``) and by calls
    # (``after_calls``); as strong as the entry only if all of those return (_wrong).
    after: dict[int, bool] = dataclasses.field(default_factory=dict)
    after_calls: dict[int, bool] = dataclasses.field(default_factory=dict)
    via: dict[int, frozenset[int]] = dataclasses.field(default_factory=dict)  # those -> the calls passed
    returns: bool = False  # an instruction returns or jumps through a register
    cut_doubt: int = 0  # how surely the code that straddles, runs on or cuts an IT block was reached
    cut_via: frozenset[int] = frozenset()  # ... and past which calls, where PAST_CALL
    tails: frozenset[int] = frozenset()  # other procedures it branches to (tail calls)

    def targets(self) -> list[int]:
        """Every entry this descent names."""
        return [*self.calls, *self.after_calls, *self.after, *self.guesses]

    def fits_below(self, limit: int) -> bool:
        """Decoding up to ``limit`` would find the same: nothing found or gone to reaches it."""
        return (not self.straddles and not self.cuts_it and self.reach <= limit
                and not any(limit <= t < self.limit for t in (*self.calls, *self.after_calls, *self.after)))


def _descend(binary: Binary, streams: _Streams, ranges: list[tuple[int, int]], entry: int,
             entry_thumb: bool, limit: int, noreturn: set[int]) -> Descent:
    """The instructions reachable from ``entry`` below ``limit`` (see Descent)."""
    mine: dict[int, Instruction] = {}
    calls: dict[int, bool] = {}
    after: dict[int, bool] = {}
    after_calls: dict[int, bool] = {}
    tails: set[int] = set()  # procedures this one branches to (tail calls, perhaps)
    guesses: dict[int, bool] = {}
    via: dict[int, frozenset[int]] = {}  # after's and after_calls' targets -> the calls passed to them
    straddles = runs_on = cuts_it = returns = False
    cut_doubt = FLOW
    cut_via: frozenset[int] = frozenset()
    passed_at: dict[int, frozenset[int]] = {}  # instructions reached only past calls -> those calls
    reach = entry
    inside: set[int] = set()  # the second halfwords of 32-bit instructions
    pooled: set[int] = set()  # the bytes instructions reached by flow load PC-relatively
    # ... and instructions past calls: they stop the guess that code follows a computed
    # jump, and code reached past calls, whichever calls the load passed (decision 0191:
    # compilers put pools where flow does not go; a load that reads the bytes right after a
    # call says that call does not return). (gprof's -pg starts every function with a call
    # of __gnu_mcount_nc, so all its loads are past a call: the guess read on into the pool
    # after a computed goto, then into the next function, a Thumb one read as A32, where a
    # return site's jump was written: SIGILL. PostgreSQL's ereport(ERROR) blocks call
    # errstart before their loads, and end with a call of errfinish, which does not return
    # there though it returns elsewhere: the pool after it, read as code, named a false
    # entry inside main's next instruction, and its patch broke main: decision 0153. A
    # gccgo panic's pool of doubles, loaded past another call, read as an instruction on
    # d16; a D raise's, as a branch into the next function's tail call.)
    pooled_past_call: set[int] = set()
    # (address, Thumb, doubt, passed): doubt is FLOW, PAST_CALL (reached only past the direct
    # calls ``passed``, which may not return) or PAST_JUMP (the bytes after a computed jump:
    # a table, perhaps).
    nothing: frozenset[int] = frozenset()
    work: deque[tuple[int, bool, int, frozenset[int]]] = deque([(entry, entry_thumb, FLOW, nothing)])
    # The relocated words inside this procedure: computed-goto labels, perhaps, but also
    # the bounds of code (OCaml's ``caml_system__code_end``, one past a function's last
    # instruction, before a literal pool) and return addresses (OCaml's frame tables). What
    # only they reach is decoded as after a computed jump: what it branches to out of the
    # procedure is a guess, which gives way where it cuts code reached by flow.
    # They are taken after all that flow reaches (which keeps its surer reading).
    first = bisect.bisect_left(streams.labels, entry)
    labelled = deque((label, entry_thumb, PAST_JUMP, nothing)
                     for label in streams.labels[first:bisect.bisect_left(streams.labels, limit)])
    literal_regs: dict[int, int] = {}
    # Where each run that a branch of this procedure started came from: the run the branch
    # was in, its length at the branch and where that one came from (the first branch to
    # name the target). A computed goto looks back along it past the run's start (_path).
    came_from: dict[int, _From] = {}
    # Literals that look like Thumb code addresses, by the register they were loaded into:
    # guesses once the register is loaded again or the descent ends, unless a PC-relative
    # add takes the literal for an offset first (_targets).
    looks: dict[int, int] = {}
    plt = binary.plt
    switch_cases = binary.switch_cases
    # Whether all of entry..limit is executable (the usual case): then no address need be looked up.
    within = any(lo <= entry and limit <= hi for lo, hi in ranges)
    at = streams.at
    while work or labelled:
        if not work and entry_thumb and not any(ins.is_indirect and not ins.is_return and not ins.is_call
                                                for ins in mine.values()):
            # A relocated word without the Thumb bit is a Thumb label only for a computed
            # jump that sets the bit itself (``orr rX, #1; bx rX``, ``mov pc, rX``): a Thumb
            # procedure without one has no labels, and the word names an A32 function after
            # it (_a32_entries_in_data). Read as this procedure's labels, the A32 functions
            # of a PIE whose start-up code is Thumb (rustc's, after crt's frame_dummy) became
            # Thumb garbage and ran in place, uncounted (decision 0104).
            break
        cur, thumb, doubt, passed = (work or labelled).popleft()
        readings = streams.known[thumb]  # (streams.at's usual case, inline: this runs per instruction)
        switches = SwitchFinder(binary)
        run: list[Instruction] = []  # this run's instructions, for a computed goto's table
        source = came_from.get(cur)
        stream = None
        in_block = 0  # instructions of the current IT block still to come
        while entry <= cur < limit and (within or _inside(ranges, cur)):
            if cur in mine and not (in_block and not mine[cur].in_it):
                # Decoded before; again only if this way passes fewer calls (its names are surer).
                before = passed_at.get(cur)
                if before is None or doubt == PAST_JUMP or not passed < before:
                    break
                if passed:
                    passed_at[cur] = passed
                else:
                    del passed_at[cur]
            # (Else a branch from elsewhere started here, inside this IT block, and took the
            # reading no IT governs: real code never branches into an IT block, the IT rules.)
            reading = readings.get(cur)
            if reading.__class__ is tuple and (reading[1] == stream or reading[0] is None
                                               or not reading[0].in_it):
                ins, stream = reading
            else:
                ins, stream = at(cur, thumb, stream)
            if ins is None:
                break
            writes_pc = ins.writes_pc
            if writes_pc and not ins.is_call and not thumb and cur - 4 in mine \
                    and is_link_move(mine[cur - 4], ins):
                ins.is_call = True  # as decode_range marks it, where a chunk of the stream began here
            size = ins.size
            end = cur + size  # (ins.address is cur)
            if end > limit:
                straddles = True
                cut_doubt = max(cut_doubt, doubt)
                cut_via |= passed
                break
            if cur in inside or (size == 4 and cur + 2 in mine and cur not in mine):
                break  # overlaps an instruction found before: one of the two is data
            if pooled and not pooled.isdisjoint(range(cur, end)):
                # A literal pool that code reached by flow reads: data, also where flow runs
                # on into it, past a library call that never returns (D's _d_assert_msg,
                # which no list of names knows: the pool read as code named a false entry
                # that cut the next function in two).
                break
            if doubt and pooled_past_call and not pooled_past_call.isdisjoint(range(cur, end)):
                break
            if ins.raw[0] == 0xD4 and _linker_fill(ins, binary.read):
                break
            mine[cur] = ins
            accesses = ins.accesses
            # A literal load (ldr rX, [pc, #n]): _targets' own test, cheaper than its call.
            literal = accesses and accesses[0].base == 15 and accesses[0].index is None
            if literal and doubt <= PAST_CALL:
                loaded = range(accesses[0].disp, accesses[0].disp + accesses[0].size)
                (pooled if doubt == FLOW else pooled_past_call).update(loaded)
            if doubt == PAST_CALL:
                passed_at[cur] = passed
            if end > reach:
                reach = end
            if size == 4:
                inside.add(cur + 2)
            if ins.is_it:
                mask = ins.raw[0] & 0xF
                in_block = 4 - ((mask & -mask).bit_length() - 1)
            elif in_block:
                in_block -= 1
            branch_target = ins.branch_target
            if not returns and (ins.is_return or (writes_pc and branch_target is None and not ins.is_call)):
                returns = True
            name = ins.name
            # (see does nothing for other names, nor for an LDR that is not of a literal, while
            # no check or constant is under way)
            if name in SWITCH_NAMES or (literal and name == "ldr") or switches.compared is not None \
                    or switches.move is not None:
                switches.see(ins)
            # A Thumb-1 switch: a case helper's call, its table after it (never run on into),
            # its cases where the table says.
            reader = helper_called(binary, ins) if name == "bl" and thumb else None
            if reader is not None and not reader.size:
                reader = None  # (some other reader at its return address: read on as before)
            if reader is not None and cur not in switch_cases:
                # (Cases past the procedure's limit, where another entry cut it, are entries.)
                area = next(((lo, hi) for lo, hi in ranges if lo <= cur < hi), None)
                note_case_table(binary, ins, reader, mine, (entry, limit), area)
            if writes_pc and not thumb and name == "add" and cur not in switch_cases:
                cases = a32_offset_switch([*run, ins], binary.read, ranges)
                if cases:
                    switch_cases[cur] = cases
            elif writes_pc and thumb and name in ("mov", "add") and cur not in switch_cases:
                offsets = thumb1_offset_switch([*run, ins], binary.read)
                if offsets is not None:
                    switch_cases[cur], table_bytes = offsets
                    binary.switch_tables.add(table_bytes)
                cases = thumb_branch_row([*run, ins], binary.read) if offsets is None and name == "mov" else None
                if cases:
                    switch_cases[cur] = cases
            # Most instructions name no place (the tests are _targets' own, cheaper than a call:
            # of the accesses, only a literal load's).
            if branch_target is not None and not accesses and name not in _NAMING and cur not in switch_cases:
                named = (_branch_target(ins, branch_target, thumb),)  # a direct branch: _targets' answer
            elif branch_target is not None or (literal and name == "ldr") or name in _NAMING or cur in switch_cases:
                named = _targets(ins, thumb, literal_regs, looks, binary, ranges)
            else:
                named = ()
            if named:
                for target, tthumb, is_call, weak in named:
                    if weak and thumb and not tthumb and entry <= target < limit:
                        # An even address in its own Thumb code: a label (goto *, mov pc). A
                        # lower limit must look again (reach), where it may be another's.
                        reach = max(reach, target + 1)
                        continue
                    local = entry <= target < limit and not is_call
                    if (weak or doubt == PAST_JUMP) and not local:
                        guesses.setdefault(target, tthumb)
                    elif not local:
                        if doubt == FLOW:
                            calls.setdefault(target, tthumb)
                        else:
                            (after_calls if is_call else after).setdefault(target, tthumb)
                            if target not in via or passed < via[target]:
                                via[target] = passed
                        if not is_call:  # a branch (or a table's case) out of the procedure
                            tails.add(target)
                    else:
                        work.append((target, tthumb, doubt, passed))
                        reach = max(reach, target + 1)
                        if target not in came_from:
                            came_from[target] = (run, len(run), source)
            run.append(ins)
            known = None
            if branch_target is None and (name == "blx" or name == "bx" or (writes_pc and name in ("add", "ldr"))) \
                    and not ins.is_return:
                # A long call (or jump) through a register loaded with a constant: a call as
                # sure as a BL (a jump: a tail call; ``add pc, ip, pc``, ``ldr pc, [pc, #-4]``: a
                # linker's veneers).
                known = register_call_target(run, binary.read, lambda a: _inside(ranges, a))
                # (Into the other instruction set: another procedure, wherever it is. mold's
                # Thumb-to-A32 veneer, mov ip, pc; bx ip, has its A32 part right after it.)
                if known is not None and (not entry <= known[0] < limit or known[1] != thumb):
                    (calls if doubt == FLOW else after_calls if ins.is_call else after).setdefault(*known)
                    if doubt != FLOW and (known[0] not in via or passed < via[known[0]]):
                        via[known[0]] = passed
                    if not ins.is_call:
                        tails.add(known[0])
                elif known is not None and not ins.is_call:
                    work.append((known[0], thumb, doubt, passed))
                    reach = max(reach, known[0] + 1)
            # (A call through a register is no goto: GotoFinder forgets all at a call.)
            indirect = ins.is_indirect
            table = goto_table(_path(run, source), binary.read) if indirect and not ins.is_return \
                and not ins.is_call else None
            if table is not None:
                # A computed goto's labels: nothing else may reach them. The table's end is
                # a guess, so are labels read past it (as the code after a computed jump).
                for label in goto_labels(binary, table, thumb, ranges):
                    streams.goto_labels.add(label)
                    if entry <= label < limit:
                        work.append((label, thumb, PAST_JUMP, passed))
                        reach = max(reach, label + 1)
                    else:
                        guesses.setdefault(label, thumb)
            if indirect and is_computed_jump(ins) and known is None:
                # add/mov pc computed from a register: what it jumps into follows it, a table
                # of branches (A32 switches) or unrolled code (libgcc's division), from the
                # PC it reads: in A32 the jump's address + 8, past the instruction after it.
                # (After LLVM's A32 switch, read as such, is its table of offsets: not code.)
                if thumb or _reads_pc(ins) or ins.address not in binary.switch_cases:
                    work.append((end, thumb, PAST_JUMP, passed))
                if not thumb and _reads_pc(ins):
                    work.append((ins.address + 8, thumb, PAST_JUMP, passed))
            # (falls_through is False only for these: asked inline, as for every instruction)
            if (ins.is_branch or writes_pc or name in STOPS) and not ins.falls_through:
                break
            is_call = ins.is_call
            if (is_call and _ends(ins, noreturn)) or (ins.is_syscall and ends_process(ins, run)) \
                    or reader is not None:
                break
            if is_call and branch_target is not None and ins.cond == 14 and not ins.in_it \
                    and (branch_target & ~1) not in plt:
                passed = passed | {branch_target & ~1}
                doubt = doubt or PAST_CALL
            cur = end
            if cur == limit:
                runs_on = True
                cuts_it |= in_block > 0
                cut_doubt = max(cut_doubt, doubt)
                cut_via |= passed
    for target in looks.values():
        guesses.setdefault(target, True)
    after = {t: th for t, th in after.items() if t not in calls}
    after_calls = {t: th for t, th in after_calls.items() if t not in calls}
    return Descent(entry, limit, mine, calls, guesses, straddles, reach, runs_on, cuts_it, after, after_calls,
                   {t: via[t] for t in (*after, *after_calls)}, returns, cut_doubt, cut_via, frozenset(tails))


FLOW, PAST_CALL, PAST_JUMP = 0, 1, 2

# A run's way in (_descend's came_from): the run the branch to it was in, that run's length
# at the branch, and that run's own way in.
_From = tuple[list[Instruction], int, "_From | None"]


def _path(run: list[Instruction], source: _From | None, window: int = 64) -> list[Instruction]:
    """The last ``window`` instructions on the way to the end of ``run``: its own, after
    those of the runs whose branches led to it. GCC 14 computes a computed goto's table
    once, keeps it on the stack and reaches the jump by a branch (glibc 2.41's printf):
    the run that ends in the jump does not have the spill (decision 0205)."""
    parts, total = [run], len(run)
    while source is not None and total < window:
        before, length, source = source
        parts.append(before[:length])
        total += length
    return [ins for part in reversed(parts) for ins in part][-window:] if len(parts) > 1 else run


def _linker_fill(ins: Instruction, read: Callable[[int, int], bytes]) -> bool:
    """Whether ``ins`` begins ld.lld's fill between two functions (plt.TRAP_FILL: the word
    0xd4d4d4d4, A32 ``ldrble sp, [r4], #0x4d4``; in Thumb two ``bmi`` to one place, the
    second never reached). No compiler emits either, and the bytes after are the next function: a
    stripped program's reading past a call of a function that does not return (clang's
    ``luaD_throw`` ends ``luaM_malloc_``) ran on through them into a function reached only
    through a pointer, whose entry then got no jump of its own and ran uncounted."""
    if ins.size == 4:
        return ins.raw == TRAP_FILL
    return ins.raw == TRAP_FILL[:2] and read(ins.address + 2, 2) == TRAP_FILL[:2]


class _Streams:
    """Each address's instruction (in one instruction set), decoded once for all descents:
    asking for one that is not known yet decodes a chunk (a *stream*) from there and keeps
    all of it, as descents run on and others come back (every round decodes the procedures
    a new entry cuts short again).

    What an instruction decodes to depends on an IT instruction before it, so each is kept
    with its stream: a descent going on in one stream gets that stream's; one starting at an
    address, or going on past the end of its stream (which never ends inside an IT block,
    ``_split_it``), gets any stream's instruction that no IT governs (an IT that is data,
    decoded in some stream from a literal pool, must not make the code after it
    conditional) or else decodes a new stream from there.
    """

    def __init__(self, binary: Binary, md: dict, cache: DecodeCache) -> None:
        self.binary, self.md, self.cache = binary, md, cache
        # Instruction set -> address -> its reading (instruction or None, stream), or a list of
        # readings where streams differ (an IT before it; rare): one tuple, not a list and a
        # key of its own, per decoded address (a large program decodes millions).
        self.known: dict[bool, dict[int, Reading | list[Reading]]] = {True: {}, False: {}}
        self.streams = 0
        self.starts: dict[bool, list[int]] = {True: [], False: []}  # where streams start, sorted
        # Code addresses the program keeps in data that are no procedure's entry (a PIE's
        # relocated words without the Thumb bit): places in the procedure that holds them
        # where a descent starts too, in that procedure's instruction set.
        self.labels: list[int] = []
        self.goto_labels: set[int] = set()  # labels read from computed gotos' tables (_descend)
        self.code_size = 0  # for the progress bar: bytes decoded (counted up to this)
        self._shown = 0

    def at(self, address: int, thumb: bool, stream: int | None = None) -> tuple[Instruction | None, int]:
        """The instruction at ``address`` (None where nothing decodes) and its stream;
        ``stream``: the stream of the instruction that falls through to it, if any."""
        known = self.known[thumb]
        readings = known.get(address)
        if readings is not None:
            # The stream falling through here first: its reading follows the IT before it, where
            # another stream that starts here (a doubtful entry, a guess) read it IT-free.
            if type(readings) is tuple:
                if readings[1] == stream or readings[0] is None or not readings[0].in_it:
                    return readings
            else:
                for reading in readings:
                    if reading[1] == stream:
                        return reading
                for reading in readings:
                    if reading[0] is None or not reading[0].in_it:
                        return reading
        self.streams += 1
        number = self.streams
        got = self._decode(address, thumb)
        for ins in got:
            if ins.address in known:
                _note(known, ins.address, (ins, number))
            else:  # (most addresses: inline)
                known[ins.address] = (ins, number)
        if not got or got[0].address != address:
            _note(known, address, (None, number))
            return None, number
        return got[0], number

    def _decode(self, address: int, thumb: bool) -> list[Instruction]:
        """A stream's instructions from ``address``: up to CHUNK bytes, but only up to the next
        stream's start, where a descent going on finds that stream's instructions (half the
        decoding of a stripped program was of code decoded before), unless that cuts an IT
        block (``_split_it``), or it would decode no instruction at all."""
        starts = self.starts[thumb]
        at = bisect.bisect_right(starts, address)
        size = CHUNK if at == len(starts) else max(4, min(CHUNK, starts[at] - address))
        starts.insert(at, address)
        while True:
            got = decode_range(self.md[thumb], self.binary.read(address, size), address, thumb, self.cache,
                               self.binary.is_firmware)[0]
            kept = _split_it(got)
            if size == CHUNK or (len(kept) == len(got) and got):
                shown = min(self.code_size, self._shown + size)
                progress.advance(shown - self._shown)
                self._shown = shown
                return kept
            size = CHUNK


Reading = tuple[Instruction | None, int]  # (instruction or None, stream): _Streams.known


def _note(known: dict[int, Reading | list[Reading]], address: int, reading: Reading) -> None:
    """Add ``reading`` to the readings of ``address`` (_Streams.known), after those before."""
    before = known.get(address)
    if before is None:
        known[address] = reading
    elif type(before) is tuple:
        known[address] = [before, reading]
    else:
        before.append(reading)


def _targets(ins: Instruction, thumb: bool, literal_regs: dict[int, int], looks: dict[int, int], binary: Binary,
             ranges: list[tuple[int, int]]) -> list[tuple[int, bool, bool, bool]]:
    """(address, thumb, is_entry, weak) of places control can go from ``ins``, and code
    addresses it computes; weak: a literal that only looks like a Thumb code address, or a
    case of a table whose size is not known.

    ``literal_regs``: the literal each register was last loaded with. ``looks``: those that
    look like Thumb code addresses and are not taken as guesses yet: a literal that a
    PC-relative add then takes is an offset, whatever it looks like (GHC's runtime, A32 in a
    fixed-address program, loads ``0x52d6d`` to add the PC to it and reach a flag in .bss;
    taken for a Thumb entry, the A32 code at 0x52d6c got a Thumb jump written over it)."""
    out = []
    if ins.name in ("tbb", "tbh") or ins.address in binary.switch_cases:
        # A table read up to its lowest case (no bounds check seen) may run on into the code
        # after it: its cases outside the procedure are guesses.
        sized = ins.address in binary.table_sizes or ins.address in binary.switch_cases
        # (Cases are in the jump's instruction set: T32 tables, A32 ``addls/ldrls pc``.)
        out += [(target, thumb, False, not sized) for target in table_branch_targets(binary, [ins])]
    if ins.branch_target is not None:
        out.append(_branch_target(ins, ins.branch_target, thumb))
    # PC-relative code addresses (function pointers in PIE code): ldr rX, [pc, #n]; add rX, pc.
    value = _literal(ins, binary) if ins.accesses else None
    if value is not None:
        rd = _dest(ins)
        literal_regs[rd] = value
        if rd in looks:  # the literal loaded before was not an offset
            out.append((looks.pop(rd), True, True, True))
        # In a fixed-address binary the literal may itself be a code address; in a PIE it is
        # an offset from the PC (taken below), never an address.
        if value & 1 and not binary.is_pie and _inside(ranges, value & ~1):
            looks[rd] = value & ~1
    elif ins.name in ("movw", "movt"):
        # A constant built in two halves: GCC's Thumb-2 code for a fixed-address program
        # builds every address so, function pointers too (cc1 passes its static callbacks
        # to walk_tree so, and nothing else names them); in a PIE, the offset the ``add rX,
        # pc`` below takes. Like a literal, it is a guess unless a PC-relative add takes it.
        moved = _wide_move(ins)
        if moved is not None:
            rd, half, top = moved
            if not top:
                literal_regs[rd] = half
                if rd in looks:  # the value built before was not an offset
                    out.append((looks.pop(rd), True, True, True))
            elif rd in literal_regs:
                value = literal_regs[rd] & 0xFFFF | half << 16
                literal_regs[rd] = value
                if value & 1 and not binary.is_pie and _inside(ranges, value & ~1):
                    looks[rd] = value & ~1
    elif thumb and ins.size == 2 and (int.from_bytes(ins.raw, "little") & 0xFF78) == 0x4478:
        rd = _dest(ins)
        looks.pop(rd, None)
        if rd in literal_regs:
            value = (literal_regs.pop(rd) + ins.address + 4) & 0xFFFFFFFF
            # An even address is an A32 function (glibc's IFUNC resolvers return
            # __memcpy_neon so), or data in the text: a guess (weak), as in A32 below.
            if _inside(ranges, value & ~1):
                out.append((value & ~1, bool(value & 1), True, not value & 1))
    elif not thumb and ins.name == "add":
        # A32: add rD, pc, rM (LLVM's; rustc passes closures and formatters so). An even
        # address is an A32 function, or perhaps data in the text: a guess (weak).
        value = _a32_pc_relative(ins, literal_regs, looks)
        if value is not None and _inside(ranges, value & ~1):
            out.append((value & ~1, bool(value & 1), True, not value & 1))
    return out


def _branch_target(ins: Instruction, target: int, thumb: bool) -> tuple[int, bool, bool, bool]:
    """``_targets``' answer for the direct branch or call ``ins`` to ``target``."""
    if ins.name == "blx":
        return target & ~1, not thumb, True, False
    if ins.name == "bx":  # bx pc
        return target, False, False, False
    return target, thumb, ins.is_call, False


#: The instructions (besides branches, tables and PC-relative loads) that ``_targets``
#: looks at: PC-relative sums and the halves of a constant.
_NAMING = frozenset(("tbb", "tbh", "add", "movw", "movt"))


def _wide_move(ins: Instruction) -> tuple[int, int, bool] | None:
    """(destination, 16-bit immediate, whether the top half) of an unconditional ``movw``
    or ``movt`` (T32 or A32 encoding), else None."""
    if ins.cond != 14 or ins.in_it:
        return None
    if ins.thumb:
        if ins.size != 4:
            return None
        first, second = int.from_bytes(ins.raw[:2], "little"), int.from_bytes(ins.raw[2:4], "little")
        if first & 0xFB70 != 0xF240 or second & 0x8000:  # MOVW T3 (0xF240) and MOVT T1 (0xF2C0)
            return None
        half = (first & 0xF) << 12 | (first >> 10 & 1) << 11 | (second >> 12 & 7) << 8 | second & 0xFF
        return second >> 8 & 0xF, half, bool(first & 0x80)
    word = int.from_bytes(ins.raw, "little")
    if word & 0x0FB00000 != 0x03000000:  # MOVW A2 (0x030), MOVT A1 (0x034)
        return None
    return word >> 12 & 0xF, (word >> 4 & 0xF000) | word & 0xFFF, bool(word & 0x00400000)


def _reads_pc(ins: Instruction) -> bool:
    """Whether a data-processing ``ins`` that writes the PC reads it too (``add pc, pc, rN``)."""
    return 15 in operand_registers(ins)[1][1:]  # r15, the PC, among the sources


def _a32_pc_relative(ins: Instruction, literal_regs: dict[int, int], looks: dict[int, int]) -> int | None:
    """The address A32's ``add rD, pc, rM`` (or ``add rD, rM, pc``) computes from a literal
    ``rM`` was loaded with (``literal_regs``), else None; that literal is no guess (``looks``)."""
    if (int.from_bytes(ins.raw, "little") >> 12) & 0xF == 15:  # add pc, pc, rM: a jump
        return None
    other = _pc_add_operand(ins)
    if other is None or other not in literal_regs:
        return None
    looks.pop(other, None)
    return (literal_regs.pop(other) + ins.address + 8) & 0xFFFFFFFF


def _dest(ins: Instruction) -> int:
    return REGISTERS.get(ins.op_str.split(",", 1)[0].strip(), -1)

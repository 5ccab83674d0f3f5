"""A 64-bit ELF program with its procedures copied into a region of its own (x86-64 today).

The image keeps every original byte where it was but the jumps written over the entries
(arch/<isa>/patches.py) and the loader stub, in pieces: after the text segment where they
fit (the segment grows over them), else in dead runs of the copied procedures, else after
a gap opened in the file; the stub is the ELF entry. The region (the copies, the library,
and where a runtime writes them at the start, the table of jumps) is appended to the file
at a page boundary; the stub maps it from the file at its fixed offset from the image when
the program starts (runtime_stubs/x86_64/stub.S).

Where the region goes: below the image, so that the heap, which the kernel starts after
the image's last segment, stays where it was, and within a 32-bit displacement of all of
it, so that every copy reaches the original data and code directly. A fixed-address
program whose first segment is too low for that (the usual 0x400000 leaves about 2 MiB
for a region, past a gap of 2 MiB) gets its region above the image, as far past it as
2 GiB from its start allows: the heap, which the kernel starts up to 1 GiB after the image
with address-space randomisation, grows towards it.
"""

from __future__ import annotations

import io
import operator
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from elftools.elf.elffile import ELFFile

from ..arch.x86_64 import loader
from ..arch.x86_64.code64 import Code64
from ..arch.x86_64.patches import EntryPatch, dead_runs, entry_patches, past_the_end, return_sites
from ..arch.x86_64.relocate import Copier, Hooks, system_call_label
from ..errors import AnvilError
from ..files import atomic_write
from ..ir.caller_sensitive import caller_sensitive_returns
from ..ir.model import Binary, Procedure
from . import file_gap, preinit
from .inhost import described_end, offset_in

PAGE = 0x1000
# The lowest address a program may map (Linux's default vm.mmap_min_addr).
LOWEST = 0x10000
# Room left between the region and the image above it (or, at the least, below it).
GAP = 0x200000
REACH = 1 << 31


@dataclass
class CopyReport:
    """What was copied and what runs in place."""

    copied: int = 0
    instructions: int = 0
    region: int = 0
    region_size: int = 0
    in_place: list[str] = field(default_factory=list)  # procedures left in the original, with why
    short_entries: list[int] = field(default_factory=list)  # entries and return sites without room for a jump
    jumps: set[int] = field(default_factory=set)  # where a jump was written over the original (and trampolines)
    hooks: object = None  # what lowered the hooks (their counts)
    branches_in_place: list[int] = field(default_factory=list)  # direct branches out of the program, run in place
    untraced: list[int] = field(default_factory=list)  # instructions copied without the tool's calls (past_return)
    loader_stub: list[str] = field(default_factory=list)  # where the stub's pieces went
    started_from_preinit: bool = False  # the stub is the first preinit function (preinit.py)


def copyable(binary: Binary) -> tuple[list[Procedure], list[str]]:
    """The procedures to copy, and why each other one runs in place."""
    chosen, left = [], []
    for proc in binary.procedures:
        if proc.undecodable or proc.jumped_into:
            left.append(f"{proc.name}: code the descent cannot follow")
            continue
        if any(lo <= proc.address < hi for lo, hi in binary.code_read_as_data):
            left.append(f"{proc.name}: code the program reads as data (copies it to run it elsewhere)")
            continue
        chosen.append(proc)
    return chosen, left


def _image_span(binary: Binary) -> tuple[int, int]:
    return (min(s.vaddr for s in binary.segments) & ~(PAGE - 1),
            max(s.vaddr + s.memsz for s in binary.segments))


def region_address(binary: Binary, size: int) -> int:
    """The region's link address (see the module's docstring)."""
    low, high = _image_span(binary)
    if high > 1 << 32:  # the library is linked at 32-bit addresses (elf64_inhost._library)
        raise AnvilError(f"{binary.path}: linked at or above 4 GiB (its addresses reach {high:#x}); x86-64 "
                         "programs there cannot be rewritten yet")
    span = (size + PAGE - 1) & ~(PAGE - 1)
    below = (low - span - GAP) & ~((GAP if binary.is_pie else PAGE) - 1)
    if binary.is_pie or below >= LOWEST:
        address = below
    else:
        # Above: as far past the image as 2 GiB from its start allows, the heap's room.
        address = (low + REACH - span - PAGE) & ~(PAGE - 1)
        if address < high + GAP:
            raise AnvilError(f"{binary.path}: the program spans {high - low:#x} bytes from {low:#x}: with room "
                             f"for its heap and its copies ({span:#x} bytes) after it, it does not fit in the "
                             "2 GiB a copy reaches")
    if max(high, address + span) - min(low, address) >= REACH:
        raise AnvilError(f"{binary.path}: the program spans {high - low:#x} bytes from {low:#x}: with its "
                         f"copies ({span:#x} bytes) it does not fit in the 2 GiB a copy reaches")
    return address


#: The runtime's table of jumps: a jump's length with this bit is in a segment the program
#: may write too, whose pages keep that right once the jump is written (anvil_rt.c).
PATCH_IN_WRITABLE = 0x80


def _in_writable(address: int, writable: list[tuple[int, int]]) -> int:
    """PATCH_IN_WRITABLE if ``address`` is in one of the ``writable`` [start, end) spans, else 0."""
    return PATCH_IN_WRITABLE if any(lo <= address < hi for lo, hi in writable) else 0


def _text_segment(elf: ELFFile, entry: int) -> tuple[int, dict]:
    return _code_segments(elf, entry)[0]


def _code_segments(elf: ELFFile, entry: int) -> list[tuple[int, dict]]:
    """The executable PT_LOAD segments (index, header) where the stub may go: the entry's
    first, then the others in the file's order. (A linker script that puts .text after
    .data leaves the entry in a last, writable segment whose end the section headers
    follow, and room after the segment with .init and the PLT.)"""
    code = [(index, seg.header) for index, seg in enumerate(elf.iter_segments())
            if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1]
    holding = [c for c in code if c[1]["p_vaddr"] <= entry < c[1]["p_vaddr"] + c[1]["p_memsz"]]
    if not holding:
        raise AnvilError("no executable segment holds the program's entry")
    return [holding[0], *(c for c in code if c is not holding[0])]


def _stub_room(elf: ELFFile, entry: int, preinit: bool) -> tuple[int, dict, int | None]:
    """The first code segment (``_code_segments``) with room after it for the stub, and
    where the stub goes; the entry's segment and None if none has."""
    segments = _code_segments(elf, entry)
    for index, text in segments:
        stub_at = _slack(elf, text, preinit)
        if stub_at is not None:
            return index, text, stub_at
    return *segments[0], None


def _slack(elf: ELFFile, text: dict, preinit: bool = False) -> int | None:
    """Where the stub's pieces go, one after the other, if there is room after the text
    segment's last byte: in memory up to the next segment, and in the file before anything
    else the file holds there (a linker that pads segments to pages leaves room; lld,
    which packs them, leaves none). ``preinit``: the stub with a preinit function."""
    end = text["p_vaddr"] + text["p_memsz"]
    places, last = loader.consecutive(end, preinit)
    file_end = text["p_offset"] + (last - text["p_vaddr"])
    limit = (end + PAGE - 1) & ~(PAGE - 1)  # the segment's last page; the next one starts after it at the earliest
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] >= end:
            limit = min(limit, seg["p_vaddr"])
    taken = [(s["p_offset"], s["p_offset"] + s["p_filesz"]) for s in elf.iter_segments()
             if s["p_type"] == "PT_LOAD" and s["p_offset"] != text["p_offset"]]
    taken += [(s["sh_offset"], s["sh_offset"] + s["sh_size"]) for s in elf.iter_sections()
              if s["sh_type"] != "SHT_NOBITS" and s["sh_size"]]
    taken.append((elf["e_shoff"], elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"]))
    # From the segment's file end: a segment whose memory goes on past its file bytes (a .bss
    # in the code's segment: ld -N) holds those zeros in the file once it grows.
    file_from = text["p_offset"] + text["p_filesz"]
    clear = file_end <= described_end(elf) and all(hi <= file_from or lo >= file_end for lo, hi in taken)
    return places[0] if last <= limit and clear else None


def _caves(procs: list[Procedure], patches: list[EntryPatch], short: set[int],
           preinit: bool = False) -> list[int] | None:
    """Places for the stub's pieces in original bytes that nothing runs any more: in copied
    procedures none of whose entries runs in place (on into a piece), on runs of their own
    instructions that no entry starts and no patch or trampoline covers."""
    patched = {patch.address for patch in patches}
    used = sorted(span for patch in patches for span in patch.spans())
    runs = []
    for proc in procs:
        instructions = list(proc.instructions())
        if proc.address not in patched or any(ins.address in short for ins in instructions):
            continue
        runs += dead_runs(instructions, patched, used, min(loader.piece_sizes(preinit)))
    return loader.spread(sorted(runs, key=lambda run: run[0] - run[1]), preinit)


def _copy(code: Code64, address: int) -> int:
    """Where the copy of the instruction at ``address`` is (every patched entry is one of a
    copied procedure's)."""
    copy = code.copy_of(address)
    if copy is None:
        raise AssertionError(f"a jump over {address:#x} to a copy that was not made")
    return copy


def _system_call_map(code: Code64, originals: Iterable[int], at: int) -> bytes:
    """The map, placed at ``at``, of the copies of the system calls at ``originals`` to the
    originals, sorted by the copy's address: the copy's distance from the map (int32) and the
    original's link address (uint32). A signal that interrupts a system call of the copy is
    given the original's PC with it (the runtime's ``to_original``, decision 0203)."""
    rows = sorted((code.labels[system_call_label(address)] - at, address) for address in originals)
    if max(address for _, address in rows) >= 1 << 32:
        return b""  # (code above 4 GiB: no map, and signals keep the copy's PC)
    return b"".join(struct.pack("<iI", copy, address) for copy, address in rows)


def _pc_map(code: Code64, procs: list[Procedure], at: int, starts: list[int]) -> bytes:
    """A Go program's map, placed at ``at``, of each instruction the copies of ``procs`` hold
    to the original, sorted by the copy's address: the copy's distance from the table
    (int32) and the original's link address (uint32); then, in the same order, how many
    instructions follow it in its block (uint16, at most 65,535); then, 4-aligned, the
    procedures' ``starts`` (uint32, in their index order); then the pairs again, sorted by the
    original's address. The runtime's hook at the entry of Go's signal handler gives Go the
    original PC of a fault with it, and takes the instructions its block's counter counted
    that the fault skipped off the procedure's sums (decision 0121); of a preemption signal
    that stopped a copy at an instruction's start; asyncPreempt's return finds the copy of
    the original PC it goes back to (decision 0134)."""
    rows = sorted((_copy(code, ins.address) - at, ins.address, min(len(block.instructions) - k - 1, 0xFFFF))
                  for proc in procs for block in proc.blocks for k, ins in enumerate(block.instructions))
    if rows and max(max(row[1] for row in rows), *starts) >= 1 << 32:
        raise AnvilError("a Go program whose code lies above 4 GiB: its map of copied instructions cannot hold it")
    table = b"".join(struct.pack("<iI", copy, address) for copy, address, _ in rows)
    table += b"".join(struct.pack("<H", after) for _, _, after in rows)
    table += b"\0" * (-len(table) % 4)
    table += struct.pack(f"<{len(starts)}I", *starts)
    return table + b"".join(struct.pack("<iI", copy, address)
                            for copy, address, _ in sorted(rows, key=operator.itemgetter(1)))


@dataclass
class Library:
    """Code and data the region holds after the copies (the analysis library, the runtime),
    linked where ``link(text_address)`` says; ``symbol(name)`` then gives their addresses."""

    size: int  # bytes from the library's start to the end of its zero-filled data, however linked
    link: Callable[[int], tuple[bytes, dict[str, int]]]


def write_copied(binary: Binary, output: str, original_returns: bool | None = None,
                 hooks: Callable[[Callable[[str], int]], Hooks] | None = None,
                 library: Callable[[], Library] | None = None) -> CopyReport:
    """Copy every procedure of ``binary`` that can be into a region and write the program,
    which runs the copies, to ``output``. ``original_returns``: calls push the original
    return addresses (default: where the program's stack may be unwound). ``hooks(symbol)``:
    what goes between the copied instructions, given the library's symbols; ``library()``:
    what the region holds after the copies (the stub then calls its ``anvil_start``), built
    once they are made (the tables of their call sites are part of it)."""
    procs, left = copyable(binary)
    report = CopyReport(in_place=left)
    if original_returns is None:
        original_returns = binary.unwinds
    # (Not a ret that __morestack goes on past: it adds 1 to the return address it is given.)
    # Calls of a function that looks at its caller's address push the original one anyway.
    returns = (return_sites(procs) if original_returns else caller_sensitive_returns(binary, procs)) \
        - binary.past_return
    patches, report.short_entries = entry_patches(binary, procs, returns)
    report.jumps = {patch.address for patch in patches} | {p.trampoline for p in patches if p.trampoline is not None}
    symbols: dict[str, int] = {}
    lowering = hooks(symbols.__getitem__) if hooks is not None else None
    code = Code64(0)
    # A return site without room for a jump keeps the copy's return address, but in a Go
    # program: there such a site follows a call that never returns (the compiler's
    # one-byte nop after `call runtime.panicIndex`), and a copy's address on a goroutine
    # stack is fatal when the panic's unwinding or the collector's scan meets it. Nor
    # where only padding follows the call: it never returns either (a call that raises),
    # and the unwinder, which finds no frame for a copy's address, would end the search
    # for a handler there (a stripped static Ada program's exceptions went uncaught).
    short = set() if binary.go_functions else set(report.short_entries)
    short -= past_the_end(binary, procs, returns & short)
    original = binary.data
    elf = ELFFile(io.BytesIO(original))
    copier = Copier(code, returns - short, lowering, _image_span(binary), binary.past_return, binary.table_readers,
                    loader.interpreter_code(binary, elf))
    for proc in procs:
        copier.copy_procedure(proc)
        report.instructions += sum(len(b.instructions) for b in proc.blocks)
    copier.emit_tables()
    report.copied = len(procs)
    report.branches_in_place = copier.in_place
    report.untraced = copier.untraced
    report.hooks = lowering
    library_offset = (code.size + 63) & ~63
    built = library() if library is not None else None
    # The region ends with the table of the jumps the runtime writes (below): its room is
    # the region's too, or a program with many entries (cmake: 2.4 MiB of them, more than
    # the gap below the image) gets a region that runs into its own image.
    jumps = sum(1 if patch.trampoline is None else 2 for patch in patches) if built is not None else 0
    locks = getattr(lowering, "lockable", 0)  # the counters' prefixes to make lock (hooks.py), 4 bytes each
    table_room = 8 + 8 + 16 * jumps + 4 + 4 + 4 * locks if built is not None else 0
    # A Go program's map of the copies' instructions to the originals (8 bytes each, twice,
    # and 2 more for each: _pc_map).
    mapped = sum(len(block.instructions) for proc in procs for block in proc.blocks) \
        if binary.go_functions and built is not None else 0
    table_room += 4 + 18 * mapped + 4 + 4 * len(binary.procedures) if mapped else 0
    counters = getattr(lowering, "thread_counters", None)
    table_room += 4 + 4 + 8 * len(counters.used) if counters is not None else 0
    # Any other program's map of its system calls' copies (decision 0203), 8 bytes each.
    system_calls = copier.system_calls if not binary.go_functions and built is not None else []
    table_room += 4 + 8 * len(system_calls)
    region = region_address(binary, library_offset + (built.size if built is not None else 0) + table_room)
    code.rebase(region)
    tail = b""
    if built is not None:
        tail, linked = built.link(region + library_offset)
        symbols.update(linked)
    data = code.finish(lambda key: code.labels[key])
    data += b"\0" * (library_offset - len(data)) + tail
    report.region, report.region_size = region, len(data)

    # Started from the preinit array where the program allows it and the larger stub finds
    # room (the stub calls anvil_start, so only with a runtime), else at the entry.
    early = preinit.plan(binary) if built is not None else None
    plain = elf
    for plan in (early, None) if early is not None else (None,):
        original, elf, grows = binary.data, plain, True
        text_index, text, stub_at = _stub_room(elf, binary.entry, plan is not None)
        places = loader.consecutive(stub_at, plan is not None)[0] if stub_at is not None else None
        if places is None:
            grows = False
            places = _caves(procs, patches, set(report.short_entries), plan is not None)
        if places is None:
            text_index, text = _text_segment(elf, binary.entry)
            # A linker that packs the file (ld.lld) leaves no slack there and a small program
            # may have too few dead runs: a gap opened in the file after the text (file_gap.py).
            end = text["p_offset"] + text["p_filesz"]
            gap = file_gap.gap_size(original, end)
            if gap is not None:
                opened = file_gap.open_gap(original, end, gap)
                elf_opened = ELFFile(io.BytesIO(opened))
                index_opened, text_opened = _text_segment(elf_opened, binary.entry)
                stub_at = _slack(elf_opened, text_opened, plan is not None)
                if stub_at is not None:
                    original, elf, text_index, text, grows = opened, elf_opened, index_opened, text_opened, True
                    places = loader.consecutive(stub_at, plan is not None)[0]
        if places is not None:
            break
    if places is None:
        raise AnvilError(f"{binary.path}: no room for the loader stub (after the text segment, or in the copied "
                         "procedures' dead code)")
    early = plan
    described = described_end(elf)
    out, overlay = bytearray(original[:described]), original[described:]
    if grows and text["p_memsz"] > text["p_filesz"]:  # the zero-filled memory, in the file from now on
        zeros_at = text["p_offset"] + text["p_filesz"]
        out[zeros_at:zeros_at + text["p_memsz"] - text["p_filesz"]] = bytes(text["p_memsz"] - text["p_filesz"])
    region_offset = (len(out) + PAGE - 1) & ~(PAGE - 1)
    writes = sorted(write for patch in patches for write in patch.writes(_copy(code, patch.address)))
    # With a runtime to write them, the jumps go over the original code once the region is
    # mapped (the stub's anvil_start): a library's initialiser that calls into the program
    # before its entry runs the original code, not a jump into a region not mapped yet
    # (Debian's gdb). Not where the stub's pieces lie in dead runs of that code, which the
    # original would run into.
    table = 0
    if "anvil_start" in symbols and grows:
        table = region + ((len(data) + 7) & ~7)
        data += b"\0" * (table - region - len(data)) + struct.pack("<Q", len(writes))
        writable = [(s["p_vaddr"], s["p_vaddr"] + s["p_memsz"]) for s in elf.iter_segments()
                    if s["p_type"] == "PT_LOAD" and s["p_flags"] & 2]
        data += b"".join(struct.pack("<QB7s", address, len(jump) | _in_writable(address, writable), jump)
                         for address, jump in writes)
        writes = []
    sites = getattr(lowering, "lock_sites", [])
    if sites and "anvil_lock_table" in symbols:
        # The prefixes the runtime makes lock when the program starts a thread: the table's
        # distance goes into the runtime's anvil_lock_table, each site's from the table.
        at = region + ((len(data) + 3) & ~3)
        data += b"\0" * (at - region - len(data)) + struct.pack(f"<i{len(sites)}i", len(sites),
                                                                *(site - at for site in sorted(sites)))
        variable = symbols["anvil_lock_table"]
        data[variable - region:variable - region + 8] = struct.pack("<q", at - variable)
    counters = getattr(lowering, "thread_counters", None)
    if counters is not None and counters.used and "anvil_thread_counters" in symbols:
        # Where each thread's copy of the counters starts, how long it is, and the arrays in
        # it (offset, bytes), for the runtime: its distances go into anvil_thread_counters.
        base = min(symbols[name] for name in counters.used)
        ranges = sorted((symbols[name] - base, counters.arrays[name]) for name in counters.used)
        at = region + ((len(data) + 3) & ~3)
        data += b"\0" * (at - region - len(data)) + struct.pack(f"<I{2 * len(ranges)}I", len(ranges),
                                                                *(word for pair in ranges for word in pair))
        variable = symbols["anvil_thread_counters"]
        data[variable - region:variable - region + 24] = struct.pack("<qqq", base - variable,
                                                                     max(o + n for o, n in ranges), at - variable)
    if mapped and "anvil_pc_map" in symbols:
        # Its distance from the runtime's anvil_pc_map and its length go there.
        at = region + ((len(data) + 3) & ~3)
        starts = [proc.address for proc in binary.procedures]
        data += b"\0" * (at - region - len(data)) + _pc_map(code, procs, at, starts)
        variable = symbols["anvil_pc_map"]
        data[variable - region:variable - region + 24] = struct.pack("<qqq", at - variable, mapped, len(starts))
    if system_calls and "anvil_system_call_map" in symbols:
        at = region + ((len(data) + 3) & ~3)
        rows = _system_call_map(code, system_calls, at)
        data += b"\0" * (at - region - len(data)) + rows
        variable = symbols["anvil_system_call_map"]
        data[variable - region:variable - region + 16] = struct.pack("<qq", at - variable, len(rows) // 8)
    if "anvil_program_entry" in symbols:
        at = symbols["anvil_program_entry"] - region
        data[at:at + 8] = struct.pack("<Q", binary.entry)
    if "anvil_started_by" in symbols and binary.entry_called_as_main:
        data[symbols["anvil_started_by"] - region] = 1
    if len(data) > library_offset + (built.size if built is not None else 0) + table_room:
        raise AnvilError(f"{binary.path}: the region outgrew the room it was placed with")
    report.region_size = len(data)
    defines = {"ANVIL_REGION": region, "ANVIL_LENGTH": len(data), "ANVIL_OFFSET": region_offset,
               "ANVIL_ENTRY": binary.entry, "ANVIL_INIT": symbols.get("anvil_start", 0), "ANVIL_PATCHES": table}
    if early is not None:
        defines.update(ANVIL_INIT_SLOT=early.init_slot, ANVIL_GO_ON=symbols["anvil_go_on"])
    stub = loader.assemble(places, defines, early is not None)
    if early is not None:
        # The runtime's anvil_preinit: the slot, its word, the flags, the way back.
        at = symbols["anvil_preinit"] - region
        data[at:at + 32] = struct.pack("<QQQQ", early.init_slot, early.init_original,
                                       early.header_words()[2], stub.go_back)
    for address, jump in writes:
        at = offset_in(elf, address)
        out[at:at + len(jump)] = jump
    for address, piece in stub.pieces:
        at = text["p_offset"] + (address - text["p_vaddr"]) if grows else offset_in(elf, address)
        out[at:at + len(piece)] = piece
    if grows:
        grown = max(address + len(piece) for address, piece in stub.pieces) - text["p_vaddr"]
        header = elf["e_phoff"] + text_index * elf["e_phentsize"]
        struct.pack_into("<QQ", out, header + 32, grown, max(grown, text["p_memsz"]))
    report.loader_stub = [f"{address:#x}" for address, _ in stub.pieces]
    struct.pack_into("<Q", out, 24, stub.entry)
    if early is not None:
        preinit.apply(out, early, stub.preinit, lambda address: offset_in(elf, address))
    report.started_from_preinit = early is not None
    # Written in parts: joined, the image and the region (a large program's: a hundred MB
    # each) would be held twice at the end.
    atomic_write(output, [out, bytes(region_offset - len(out)), data, overlay])
    return report

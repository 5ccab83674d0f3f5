"""Lift an x86-64 ELF executable into the IR: procedures, blocks and instructions.

Where procedures start: function symbols (``.symtab``, else ``.dynsym``), the FDEs of
``.eh_frame`` (gcc and clang emit one for every function by default on x86-64, stripped
or not, since the unwinder needs them), the ELF entry, the functions of
``.init_array``/``.fini_array``, every direct call's target, and the code addresses the
found code computes (``_Descent.pointers``: a RIP-relative ``lea``, and in a fixed-address
program an immediate moved or pushed), which are all a program built without unwind
tables (``-fno-asynchronous-unwind-tables``, tcc, assembly) says of the functions it calls
through pointers (``main`` given to ``__libc_start_main``, a ``qsort`` comparator). Each
PLT section (``.plt``, ``.plt.sec``, ``.plt.got``) is a procedure of its own.

Inside a procedure, a recursive descent from its entry follows fall-through, direct jumps
and switch tables (``jump_tables.py``), and stops at returns, unconditional jumps, HLT and
UD2; a call falls through unless its callee is one of the C library's functions that never
return. The descent never leaves the procedure: it ends at the next start (or at the end
its symbol gives). Bytes no path reaches (alignment padding, data) are not instructions.
Blocks start at the entry, at targets of branches and at switch cases, and after branches,
calls and system calls.
"""

from __future__ import annotations

import bisect
import os
import re
import struct
from collections.abc import Iterable, Iterator, Set

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ...errors import AnvilError
from ...ir import elf_tables
from ...ir.elf_loader import code_read_as_data, read_runtime_facts
from ...ir.exception_tables import eh_frame_functions, landing_pads
from ...ir.go_runtime import go_functions, go_version, refusal
from ...ir.model import Binary, Block, Instruction, Procedure, Segment, own_instructions
from .decode import RIP, decode_measured, decode_one, immediate_operand, make_disassembler, rip_operand
from .jump_tables import SwitchTable, switch_table

SHF_EXECINSTR = 0x4
# REX.W lea/mov/movsxd r64, [rip + disp32] (ModRM mod 00, r/m 101), looked at every byte.
_RIP_DATA = re.compile(rb"(?=[\x48-\x4f][\x8d\x8b\x63][\x05\x0d\x15\x1d\x25\x2d\x35\x3d](....))", re.S)
# jmp qword ptr [disp32 + index*8] (SIB with no base).
_TABLE_JUMP = re.compile(rb"(?=\xff\x24[\xc5\xcd\xd5\xdd\xe5\xed\xf5\xfd](....))", re.S)
R_X86_64_RELATIVE = 8
_PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got")
# Bytes capstone measures at once while the lift follows a run of instructions.
_RUN = 256
#: Functions that go on at their return address + 1, past a one-byte ``ret`` there: gcc's
#: -fsplit-stack prologue calls __morestack, which runs the rest of the function on a new
#: stack from there (decision 0131). Named only: a stripped program's is not known.
PAST_RETURN = frozenset({"__morestack", "__morestack_non_split"})
_RET = b"\xc3"
_SYSCALL = b"\x0f\x05"
#: Instructions whose immediate may be a fixed-address program's code pointer (``mov edi,
#: 0x401660`` giving ``main`` to ``__libc_start_main``, ``push 0x401200``).
_IMMEDIATE_MOVES = frozenset({"mov", "movabs", "push"})
#: How many times the functions called inside procedures without a size may start
#: procedures of their own (_Descents.run): each time more code is found, whose calls the
#: next time starts.
CALL_ROUNDS = 4
#: The C library's functions that never return: the instruction after a call of one is
#: not reached through it.
NO_RETURN = frozenset({"exit", "_exit", "_Exit", "abort", "__assert_fail", "__stack_chk_fail", "err", "errx",
                       "verr", "verrx", "__libc_start_main", "pthread_exit", "longjmp", "siglongjmp",
                       "__longjmp_chk", "__cxa_throw", "__cxa_rethrow", "_Unwind_Resume", "quick_exit",
                       "__fortify_fail", "__chk_fail", "error_exit"})


def lift(path: str, data: bytes, elf: ELFFile) -> Binary:
    """The IR of the checked x86-64 ELF file ``data``."""
    binary = _make_binary(path, data, elf)
    code = _code_sections(elf)
    if not code:
        raise AnvilError(f"{path}: no code to read (no executable section in the section table)")
    sizes = _function_symbols(elf, code)
    go_resumes = _go_functions(path, data, elf, binary, sizes)
    binary.symbols = {name: address for address, (name, _) in sizes.items()}
    md = make_disassembler()
    reader = _Reader(binary, code)
    # Each PLT section, decoded once: its entries' names come from its jumps.
    plt_code = [(name, lo, hi, entry_size, _linear(md, reader, lo, hi))
                for name, lo, hi, entry_size in _plt_sections(elf)]
    plt = [(lo, hi) for _, lo, hi, _, _ in plt_code]
    binary.import_slots = _import_slots(elf)
    binary.plt = _plt_names(binary.import_slots, plt_code)
    fde_starts, pads, fde_spans = _unwinding(elf, binary)
    pads |= go_resumes
    binary.unwinder_entries = pads
    # The start of each section of code is one too: .init and .fini have no FDE, and a
    # stripped program names them only through DT_INIT and DT_FINI.
    starts = set(sizes) | fde_starts | {binary.entry} | _array_functions(elf, binary) | {lo for lo, _ in code}
    # A start inside a function its symbol sizes (a second FDE of one function) is no procedure.
    sized = sorted((a, a + size) for a, (_, size) in sizes.items() if size)
    starts = {s for s in starts if _in(code, s) and not _in(plt, s) and not _strictly_inside(sized, s)}
    names = {**{address: name for address, (name, _) in sizes.items()}, **binary.plt}
    taken = sorted(_code_addresses_in_data(elf, code) | pads)
    binary.address_taken = set(taken)
    # The code the unwind tables and function symbols describe, where the tables describe
    # any: a computed address outside it is not taken for code (_Descents._computed_pointers).
    described = _merged(fde_spans + sized) if fde_spans else []
    descents = _Descents(md, reader, names, sizes, code, plt, taken, starts, described)
    procedures = descents.run()
    binary.switch_cases = {jump: cases for d in descents.descents.values() for jump, cases in d.switches.items()}
    binary.table_readers = {at: table for d in descents.descents.values() for at, table in d.tables.items()}
    binary.past_return = descents.past_return
    binary.code_pointers = set(taken) | descents.pointers
    binary.address_taken |= descents.pointers
    for name, lo, hi, _, instructions in plt_code:
        proc = Procedure(name, lo, hi - lo, thumb=False)
        entries = _plt_entries(instructions)
        _make_blocks(proc, instructions, entries)
        binary.code_pointers |= entries
        procedures[lo] = proc
    binary.procedures = [procedures[a] for a in sorted(procedures) if procedures[a].blocks]
    blocks = 0
    for index, proc in enumerate(binary.procedures):
        proc.index = index
        proc.binary = binary
        for block in proc.blocks:  # numbered through the program: a tool's slot of each block
            block.index = blocks
            blocks += 1
    read_runtime_facts(path, binary, elf, stripped=not sizes)
    binary.code_read_as_data = code_read_as_data(elf, data)
    return binary


class _Descents:
    """Every procedure's descent, again where another procedure's code enters it.

    A descent that leaves its procedure (a call, a jump to a cold part, a switch case or a
    pad elsewhere) names an entry of other code: where no procedure starts there and none
    holds it, a new procedure starts; where one holds it between its instructions (a jump
    into the middle: GCC's hot part continuing in its ``.cold`` part), that procedure's
    descent goes on from there too. Entries only add, so this ends.
    """

    def __init__(self, md, reader: _Reader, names: dict[int, str], sizes: dict[int, tuple[str, int]],
                 code: list[tuple[int, int]], plt: list[tuple[int, int]], taken: list[int], starts: set[int],
                 described: list[tuple[int, int]]) -> None:
        self.md, self.reader, self.names, self.sizes = md, reader, names, sizes
        self.described = described
        self.read_through: set[int] = set()  # every descent's (_Descent.read_through)
        self.code, self.plt, self.taken = code, plt, taken
        self.known = sorted(starts | {start for start, _ in plt})
        self.roots: dict[int, set[int]] = {start: set() for start in starts}
        self.descents: dict[int, _Descent] = {}
        self.pending: dict[int, set[int]] = {}  # entries of descended procedures not followed yet
        self.work = sorted(starts)
        self.encodings: dict[bytes, Instruction] = {}  # decode_measured's: facts shared by encoding
        self.past_return: set[int] = set()  # every procedure's (_Descent.past_return)
        self.pointers: set[int] = set()  # the code pointers the code computes, at instructions found

    def run(self) -> dict[int, Procedure]:
        # A program without symbols or unwind tables (Free Pascal's, tcc's, assembly) names
        # no function but its entry, whose procedure then reached to the end of the code and
        # took every function it called for its own code: one procedure for all. Once every
        # descent has ended, the functions called inside procedures without a size start
        # procedures of their own, and those procedures are descended again, cut there.
        self._descend()
        for _ in range(CALL_ROUNDS):
            if not self._split_at_callees():
                break
            self._descend()
        return self._procedures()

    def _split_at_callees(self) -> bool:
        """Start a procedure at each function called inside a procedure without a size
        (_unsized_callees), and descend each such procedure again (from every place it was
        entered, which may now be one of the new procedures'). True if any was."""
        called = self._unsized_callees()
        owners = {self.known[bisect.bisect_right(self.known, target) - 1] for target in called}
        for target in called:
            bisect.insort(self.known, target)
            self.roots[target] = set()
            self.work.append(target)
        for owner in owners:
            del self.descents[owner]
            self.pending.pop(owner, None)
            entered, self.roots[owner] = self.roots[owner], set()
            self.work.append(owner)
            for target in entered:
                self._enter(target)
        return bool(called)

    def _descend(self) -> None:
        """Descend from the work's entries until no descent leaves for code not found."""
        while self.work or self._computed_pointers():
            start = self.work.pop()
            descent = self.descents.get(start)
            if descent is None:
                end = _end_of(start, self.known, self.sizes, self.code)
                name = self.sizes[start][0] if start in self.sizes else f"sub_{start:x}"
                descent = _Descent(Procedure(name, start, end - start, thumb=False), self.md, self.reader, self.names,
                                   self.encodings)
                self.descents[start] = descent
                inner = self.taken[bisect.bisect_right(self.taken, start):bisect.bisect_left(self.taken, end)]
                leaving = descent.extend([start, *sorted(self.roots[start])], inner)
            else:  # entered again from elsewhere: on from there only
                leaving = descent.extend(sorted(self.pending.pop(start, ())), ())
            if descent.keys and start not in self.sizes:
                last = descent.found[descent.keys[-1]]
                descent.proc.size = last.end - start  # to its last instruction: what follows may be others'
            for target in leaving:
                self._enter(target)

    def _procedures(self) -> dict[int, Procedure]:
        """Every descent's procedure, with its blocks."""
        procedures = {}
        for start, descent in self.descents.items():
            proc = descent.proc
            _make_blocks(proc, descent.instructions(), descent.cases | self.roots[start], descent.past_return)
            self.past_return |= descent.past_return
            if descent.cases:
                proc.notes.append(f"entered at {len(descent.cases)} places from switches, addresses in data "
                                  "or the unwinder")
            procedures[start] = proc
        return procedures

    def _unsized_callees(self) -> set[int]:
        """The functions that the code found calls inside the ranges of procedures without
        a size, where no procedure starts (each was taken for code of the procedure)."""
        unsized = {start for start, descent in self.descents.items()
                   if not (start in self.sizes and self.sizes[start][1])}
        called = set()
        for descent in self.descents.values():
            for ins in descent.found.values():
                target = ins.branch_target
                # A call outside the code (damaged bytes decoded as a call) starts nothing.
                if ins.is_call and target is not None and target not in self.roots and _in(self.code, target):
                    i = bisect.bisect_right(self.known, target) - 1
                    if i >= 0 and self.known[i] in unsized:
                        called.add(target)
        return called

    def _computed_pointers(self) -> bool:
        """Enter the code addresses that the code found so far computes (``_Descent.pointers``)
        once every descent has ended, and say whether that gave more work.

        Only then, so that a number that only looks like an address cannot cut a function
        short by starting a procedure in its middle before its own descent has run (a
        procedure without a size ends at the next start): one that lands inside an instruction
        found is dropped; one at an instruction found starts a block there (a label whose
        address the code keeps, GCC's labels as values); one in code nothing reached yet
        starts a procedure."""
        computed: set[int] = set()
        for descent in self.descents.values():
            computed |= descent.pointers
            descent.pointers = set()
            self.read_through |= descent.read_through
        for target in sorted(computed - self.pointers):
            if not _in(self.code, target) or _in(self.plt, target):
                continue
            if self.described and not _covered(self.described, target) \
                    and (target in self.read_through or not _decodes(self.md, self.reader, target)):
                # Outside every function the unwind tables and symbols describe, and read
                # as data or no code: a table the code keeps in its text (OpenSSL's
                # constants beside their functions), whose bytes an entry's jump would
                # overwrite (decision 0209). (A program's own functions without tables,
                # beside the C library's with them, are neither.)
                continue
            i = bisect.bisect_right(self.known, target) - 1
            owner = self.descents.get(self.known[i]) if i >= 0 else None
            if owner is not None and target not in owner.found and owner._covers(target):
                continue  # inside an instruction: not an address of code
            self.pointers.add(target)
            self._enter(target)
        return bool(self.work)

    def _enter(self, target: int) -> None:
        """Control arrives at ``target`` from another procedure."""
        if not _in(self.code, target) or _in(self.plt, target) or target in self.roots:
            return
        i = bisect.bisect_right(self.known, target) - 1
        owner = self.known[i] if i >= 0 else None
        if owner is not None and owner in self.descents:
            descent = self.descents[owner]
            if target < descent.proc.end:
                # A block starts there (control arrives from elsewhere: a count at the
                # block's start must see it), and where its code is not found yet the
                # descent goes on from there.
                self.roots[owner].add(target)
                if target not in descent.found:
                    self.pending.setdefault(owner, set()).add(target)
                    self.work.append(owner)
                return
        elif owner in self.roots and not (owner in self.sizes and self.sizes[owner][1]
                                          and target >= owner + self.sizes[owner][1]):
            # Inside the range of a procedure not descended yet: its descent starts there too.
            # (A new procedure here would cut the one below it short: the order of descents
            # must not decide where functions end.)
            self.roots[owner].add(target)
            return
        bisect.insort(self.known, target)
        self.roots[target] = set()
        self.work.append(target)


def _go_functions(path: str, data: bytes, elf: ELFFile, binary: Binary, sizes: dict[int, tuple[str, int]]) -> set[int]:
    """For a Go program: its PC table's functions (``Binary.go_functions``, and each a sized
    procedure of its name where no symbol gives one: a stripped Go program has none), and
    the places Go's runtime resumes code other than by a return to a call (decision 0121):
    ``runtime.goexit + 1``, where every goroutine's first frame returns (after a one-byte
    ``nop``: no call precedes it), and each function's disconnected ``call
    runtime.deferreturn``, where a recovered panic goes on (no path of the function's own
    reaches it). They are entered like landing pads. A Go program whose table cannot be
    read is refused. Other programs: nothing."""
    go = go_version(data, elf)
    if go is None:
        return set()
    functions = go_functions(elf)
    if not functions:
        raise AnvilError(refusal(path, go))
    binary.go_functions = {f.entry: f.name for f in functions}
    binary.go_preemptible = {f.entry for f in functions if f.preemptible}
    for f in functions:
        if f.entry not in sizes or not sizes[f.entry][1]:
            sizes[f.entry] = (f.name, f.end - f.entry)
    return {f.resume for f in functions if f.resume} | {f.entry + 1 for f in functions if f.name == "runtime.goexit"}


def _make_binary(path: str, data: bytes, elf: ELFFile) -> Binary:
    segments = [Segment(s["p_vaddr"], s["p_memsz"], s["p_offset"], s["p_filesz"], s["p_flags"], s["p_align"])
                for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
    if not any(s.executable for s in segments):
        raise AnvilError(f"{path}: no executable segment")
    kinds = {s["p_type"] for s in elf.iter_segments()}
    interp = "PT_INTERP" in kinds
    return Binary(path=os.path.abspath(path), data=data, machine="x86-64", is_pie=elf["e_type"] == "ET_DYN",
                  is_dynamic=interp, entry=elf["e_entry"], segments=segments,
                  entry_called_as_main=interp and "PT_DYNAMIC" not in kinds)


def _code_sections(elf: ELFFile) -> list[tuple[int, int]]:
    return sorted((s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections()
                  if s["sh_flags"] & SHF_EXECINSTR and s["sh_type"] == "SHT_PROGBITS" and s["sh_size"])


def _in(ranges: list[tuple[int, int]], address: int) -> bool:
    return any(lo <= address < hi for lo, hi in ranges)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, those that overlap or touch made one."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def _covered(merged: list[tuple[int, int]], address: int) -> bool:
    """``address`` lies in one of the sorted, disjoint spans ``merged`` (_merged's)."""
    i = bisect.bisect_right(merged, (address, 1 << 64)) - 1
    return i >= 0 and merged[i][0] <= address < merged[i][1]


def _strictly_inside(spans: list[tuple[int, int]], address: int) -> bool:
    """``address`` lies inside one of the sorted ``spans`` and is not its start."""
    i = bisect.bisect_right(spans, (address, 1 << 64)) - 1
    return any(lo < address < hi for lo, hi in spans[max(0, i - 8):i + 1])


def _function_symbols(elf: ELFFile, code: list[tuple[int, int]]) -> dict[int, tuple[str, int]]:
    """Address -> (name, size) of the function symbols in code (``.symtab``, else ``.dynsym``)."""
    table = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
    found: dict[int, tuple[str, int]] = {}
    if not isinstance(table, SymbolTableSection):
        return found
    for symbol in table.iter_symbols():
        if symbol["st_info"]["type"] not in ("STT_FUNC", "STT_GNU_IFUNC") or symbol["st_shndx"] == "SHN_UNDEF":
            continue
        address = symbol["st_value"]
        if _in(code, address) and (address not in found or not found[address][1]):
            found[address] = (symbol.name, symbol["st_size"])
    return found


def _unwinding(elf: ELFFile, binary: Binary) -> tuple[set[int], set[int], list[tuple[int, int]]]:
    """The first addresses of the functions ``.eh_frame`` describes, the landing pads their
    LSDAs name (where the unwinder enters code: C++ catch blocks and cleanups) and the
    [start, end) of each function it describes."""
    section = elf.get_section_by_name(".eh_frame")
    if section is None or section["sh_type"] == "SHT_NOBITS":
        return set(), set(), []
    try:
        entries = eh_frame_functions(section.data(), section["sh_addr"])
    except ValueError:  # a malformed .eh_frame names no functions; the symbols still do
        return set(), set(), []
    pads: set[int] = set()
    for entry in entries:
        if entry.lsda:
            try:
                pads |= landing_pads(binary.read, entry.lsda, entry.first)
            except (ValueError, IndexError):  # an LSDA this cannot read: its pads stay unknown
                continue
    starts = {_code_start(binary, entry.first) if entry.signal_frame else entry.first for entry in entries}
    return starts, pads, [(entry.first, entry.first + entry.size) for entry in entries if entry.size]


def _code_start(binary: Binary, first: int) -> int:
    """Where the code of a signal frame's FDE starting at ``first`` starts: one byte on
    where the FDE starts before its ``rt_sigreturn`` (glibc's ``__restore_rt``, whose FDE
    starts at the last byte of the padding before it). Taken as the start, that byte made a
    procedure whose entry's jump was written over the start of ``__restore_rt``, where
    every signal handler returns: a stripped static program crashed at its first handled
    signal."""
    if not _sigreturn_at(binary, first) and _sigreturn_at(binary, first + 1):
        return first + 1
    return first


def _sigreturn_at(binary: Binary, address: int) -> bool:
    """Whether the code at ``address`` is ``mov $15, %eax`` (or ``%rax``) then ``syscall``:
    the ``rt_sigreturn`` system call a handler's return trampoline makes."""
    code = binary.read(address, 9)
    return code[:7] == b"\x48\xc7\xc0\x0f\x00\x00\x00" and code[7:9] == _SYSCALL \
        or code[:5] == b"\xb8\x0f\x00\x00\x00" and code[5:7] == _SYSCALL


def _array_functions(elf: ELFFile, binary: Binary) -> set[int]:
    """The functions ``.init_array`` and ``.fini_array`` name (their words, where the file
    holds them; a PIE's are relocations' addends, read from ``.rela.dyn``)."""
    found: set[int] = set()
    arrays = []
    for name in (".init_array", ".fini_array", ".preinit_array"):
        section = elf.get_section_by_name(name)
        if section is None or section["sh_type"] == "SHT_NOBITS":
            continue
        words = section.data()
        found |= {struct.unpack_from("<Q", words, i)[0] for i in range(0, len(words) - 7, 8)}
        arrays.append((section["sh_addr"], section["sh_addr"] + section["sh_size"]))
    relocations = elf.get_section_by_name(".rela.dyn")
    if arrays and relocations is not None:
        found |= {addend for offset, _, _, addend in elf_tables.relocations(elf, relocations) if _in(arrays, offset)}
    return found


def _code_addresses_in_data(elf: ELFFile, code: list[tuple[int, int]]) -> set[int]:
    """Code addresses the program keeps in data: the 8-byte words of its other loaded
    sections that fall in code, and a PIE's R_X86_64_RELATIVE addends that do (the words of
    a PIE's tables are filled in by the dynamic linker). Function pointers, and the labels
    of computed gotos (GCC's labels as values)."""
    found: set[int] = set()
    for section in elf.iter_sections():
        if not section["sh_flags"] & 0x2 or section["sh_flags"] & SHF_EXECINSTR or section["sh_type"] == "SHT_NOBITS":
            continue
        words = section.data()
        skew = -section["sh_addr"] % 8
        found |= {w for (w,) in struct.iter_unpack("<Q", words[skew:len(words) - (len(words) - skew) % 8])
                  if _in(code, w)}
    relocations = elf.get_section_by_name(".rela.dyn")
    if relocations is not None and hasattr(relocations, "iter_relocations"):
        found |= {addend for _, kind, _, addend in elf_tables.relocations(elf, relocations)
                  if kind == R_X86_64_RELATIVE and _in(code, addend)}
    return found


def _plt_sections(elf: ELFFile) -> list[tuple[str, int, int, int]]:
    """(name, start, end, entry size) of each PLT section the program has."""
    return sorted(((name, s["sh_addr"], s["sh_addr"] + s["sh_size"], s["sh_entsize"] or 16) for name in _PLT_SECTIONS
                   if (s := elf.get_section_by_name(name)) is not None and s["sh_size"]), key=lambda p: p[1])


def _plt_entries(instructions: list[Instruction]) -> set[int]:
    """Where a PLT section's entries start: its first instruction and each one after an
    unconditional jump and the padding that follows it (nops, int3, zeros). Calls and function pointers (and a
    lazily bound GOT slot, pointing back at its entry's ``push``) enter there; the sizes
    the section header gives are not always the entries' (a static program's IFUNC PLT
    has 8-byte entries)."""
    starts: set[int] = set()
    after_jump = True
    for ins in instructions:
        # Padding: nops, int3, and zeros (GNU ld leaves a static PIE's unused slot of zeros,
        # which decode as ``add [rax], al``, before the IFUNC entries).
        if ins.name in ("nop", "int3") or ins.name == "xchg" and ins.op_str == "ax, ax" or ins.raw == b"\0\0":
            continue
        if after_jump:
            starts.add(ins.address)
        after_jump = ins.is_branch and not ins.is_call and not ins.falls_through
    return starts


def _import_slots(elf: ELFFile) -> dict[int, str]:
    """GOT slot -> the symbol its relocation (JUMP_SLOT, GLOB_DAT...) names."""
    slots: dict[int, str] = {}
    for name in (".rela.plt", ".rela.dyn"):
        section = elf.get_section_by_name(name)
        if section is None or not hasattr(section, "iter_relocations"):
            continue
        symbols = elf.get_section(section["sh_link"]) if section["sh_link"] else None
        if not isinstance(symbols, SymbolTableSection):
            continue
        symbol_names: dict[int, str] = {}  # (a C++ program's relocations name the same symbols often)
        for offset, _, index, _ in elf_tables.relocations(elf, section):
            if index:
                if index not in symbol_names:
                    symbol_names[index] = symbols.get_symbol(index).name
                slots[offset] = symbol_names[index]
    return slots


def _plt_names(slots: dict[int, str], plt_code: list[tuple[str, int, int, int, list[Instruction]]]) -> dict[int, str]:
    """PLT entry -> the function it calls: each entry jumps through its GOT slot, and the
    slot's JUMP_SLOT (or GLOB_DAT, for ``.plt.got``) relocation names the symbol."""
    names: dict[int, str] = {}
    for _, lo, _, entry_size, instructions in plt_code:
        for ins in instructions:
            slot = next((a.disp for a in ins.accesses if a.base == RIP and not a.is_store), None)
            if ins.name == "jmp" and slot in slots:
                names[lo + (ins.address - lo) // entry_size * entry_size] = slots[slot]
    return names


class _Reader:
    """The program's bytes by link address, from the executable sections."""

    def __init__(self, binary: Binary, code: list[tuple[int, int]]) -> None:
        self.binary = binary
        self.code = code
        self._referenced: set[int] | None = None

    def bytes_at(self, address: int, size: int) -> bytes:
        return self.binary.read(address, size)

    def is_code(self, address: int) -> bool:
        return _in(self.code, address)

    def referenced(self, address: int) -> bool:
        """Whether the code names ``address`` as data: a RIP-relative ``lea``, ``mov`` or
        ``movsxd`` of a 64-bit register, or a jump through a table of absolute addresses,
        found by their bytes in the code sections (an unbounded switch table ends before
        the next such address; a match that is no instruction only ends one sooner)."""
        if self._referenced is None:
            found = set()
            for lo, hi in self.code:
                data = self.binary.read(lo, hi - lo)
                for match in _RIP_DATA.finditer(data):
                    found.add(lo + match.start() + 7 + struct.unpack("<i", match.group(1))[0])
                for match in _TABLE_JUMP.finditer(data):
                    found.add(struct.unpack("<I", match.group(1))[0])
            self._referenced = found
        return address in self._referenced


def _end_of(start: int, known: list[int], sizes: dict[int, tuple[str, int]], code: list[tuple[int, int]]) -> int:
    """Where the procedure at ``start`` ends: where its symbol's size says, else at the next
    start or the end of its section."""
    section_end = next(hi for lo, hi in code if lo <= start < hi)
    if start in sizes and sizes[start][1]:
        return min(section_end, start + sizes[start][1])
    following = bisect.bisect_right(known, start)
    return min(section_end, known[following]) if following < len(known) else section_end


class _Descent:
    """One procedure's recursive descent, which more entries may extend later.

    It stays inside the procedure's range, follows fall-through, direct jumps and switch
    cases, and collects where control leaves (direct calls, jumps and cases elsewhere) and
    where it arrives other than by falling through or a direct branch (``cases``).
    """

    def __init__(self, proc: Procedure, md, reader: _Reader, names: dict[int, str],
                 encodings: dict[bytes, Instruction] | None = None) -> None:
        self.proc, self.md, self.reader, self.names = proc, md, reader, names
        self.encodings = encodings
        self.lo, self.hi = proc.address, proc.end  # the range as first given (the procedure may be cut back)
        self.found: dict[int, Instruction] = {}
        self.keys: list[int] = []  # the addresses of found, in order
        self.cases: set[int] = set()
        self.switches: dict[int, set[int]] = {}  # each switch's jump -> its cases
        self.tables: dict[int, SwitchTable] = {}  # the instruction that reads a table's entry -> the table
        self.unresolved: list[Instruction] = []  # indirect jumps whose cases are not known (yet)
        self.past_return: set[int] = set()  # the ``ret`` after each call of a PAST_RETURN function
        self.given_up: list[Instruction] = []
        self.tried: dict[int, int] = {}  # unresolved jump -> how many instructions lay below it then
        # Code addresses the found code computes: RIP-relative ``lea`` targets, and in a
        # fixed-address program immediates moved into a register or pushed (_Descents
        # enters them once every descent has ended).
        self.pointers: set[int] = set()
        # Those of ``lea``s whose register the code after them reads memory through (a
        # table's base: _reads_through).
        self.read_through: set[int] = set()
        self.fixed_address = not reader.binary.is_pie

    def instructions(self) -> list[Instruction]:
        return [self.found[a] for a in self.keys]

    def extend(self, roots: Iterable[int], taken: Iterable[int]) -> set[int]:
        """Descend from ``roots``, then from ``taken``: the code addresses inside the
        procedure that data holds (computed gotos' labels), only where they start no
        instruction already found in the middle (a number that only looks like an address
        must not add overlapping code). Returns where control leaves the procedure.
        ``names``: function names by address (the PLT's too), for the calls that never return."""
        leaving: set[int] = set()
        work = list(roots)[::-1]  # the first root first
        # The most aligned first (popped from the end): where two of them cannot both be
        # code (one's first instruction covers the other), the one a function's alignment
        # puts there wins over a number that only looks like an address (Free Pascal's
        # opcode table holds 0x487c0f, the zero padding before a method at 0x487c10).
        later = sorted(taken, key=lambda label: (min(label & -label, _MOST_ALIGNED), -label))
        while work or later or self.unresolved:
            if not work and self.unresolved:
                # Jumps reached before what sets their table up: again, now more is found.
                retry, self.unresolved = self.unresolved, []
                for jump in retry:
                    # Its table is looked for again only where code was found below it
                    # since (a large procedure's retries each walked back over it all).
                    below = bisect.bisect_left(self.keys, jump.address)
                    if self.tried.get(jump.address) == below:
                        self.unresolved.append(jump)
                        continue
                    self.tried[jump.address] = below
                    self._switch(jump, work, leaving)
                if work:
                    continue
                self.given_up.extend(self.unresolved)
                self.unresolved = []
                continue
            if not work:
                label = later.pop()
                if label not in self.found and (self._covers(label) or not self._plausible(label)):
                    continue
                self.cases.add(label)
                work.append(label)
            self._follow(work.pop(), work, leaving)
        self.unresolved, self.given_up = self.given_up, []  # a later entry may find their set-up
        return leaving

    def _switch(self, jump: Instruction, work: list[int], leaving: set[int]) -> None:
        """Follow the cases of the indirect ``jump``; keep it for later where none are found."""
        table = switch_table(self._before(jump.address), jump, self.reader.bytes_at, self.reader.is_code,
                             self.reader.referenced)
        if table is None:
            self.unresolved.append(jump)
            return
        cases = table.targets
        self.switches[jump.address] = set(cases)
        if table.reader is not None:
            self.tables[table.reader] = table
        for case in cases:
            if self.lo <= case < self.hi:
                self.cases.add(case)  # a block starts there, found already or not
                if case not in self.found:
                    work.append(case)
            else:
                leaving.add(case)

    def _follow(self, address: int, work: list[int], leaving: set[int]) -> None:
        """Decode on from ``address`` until control cannot fall through."""
        found, keys, lo, hi = self.found, self.keys, self.lo, self.hi
        run: Iterator[tuple[int, int, str, str]] = iter(())
        chunk, chunk_at = b"", address
        while lo <= address < hi and address not in found and not self._covers(address):
            # Capstone measures a run of instructions in one call (a call per instruction
            # cost as much as the decoding): the next one of the run, or a new run.
            measured = next(run, None)
            if measured is None or measured[0] != address:
                chunk, chunk_at = self.reader.bytes_at(address, min(_RUN, hi - address)), address
                run = self.md.disasm_lite(chunk, address)
                measured = next(run, None)
                if measured is None:
                    return  # no instruction
            _, size, mnemonic, op_str = measured
            raw = chunk[address - chunk_at:address - chunk_at + size]
            ins = decode_measured(self.md, raw, address, mnemonic, op_str, self.encodings)
            # Found instructions never overlap and none covers ``address``: one starting
            # inside this one's bytes would overlap it.
            following = bisect.bisect_right(keys, address)
            if following < len(keys) and keys[following] < address + ins.size:
                return  # an instruction that would overlap one already found
            found[address] = ins
            keys.insert(following, address)
            target = ins.branch_target
            if ins.is_call:
                if target is not None:
                    leaving.add(target)
                    if self.names.get(target) in NO_RETURN:
                        return
                    if self.names.get(target) in PAST_RETURN and self.reader.bytes_at(ins.end, 1) == _RET:
                        # __morestack runs the rest of the function from its return
                        # address + 1, past the ``ret`` there: code no branch names.
                        self.past_return.add(ins.end)
                        work.append(ins.end + 1)
            elif ins.is_branch and not ins.is_return:
                if target is not None:
                    (work.append if lo <= target < hi else leaving.add)(target)
                elif ins.is_indirect:
                    self._switch(ins, work, leaving)
            elif ins.reads_pc:
                if ins.name == "lea":
                    pointer = rip_operand(ins)
                    # (Its own address is clang's large-model GOT anchor, ``lea rax, [rip -
                    # 7]``, a base for offsets: no place anything jumps to.)
                    if pointer is not None and pointer != ins.address and self.reader.is_code(pointer):
                        self.pointers.add(pointer)
                        if _reads_through(self.md, self.reader, ins, self.hi):
                            self.read_through.add(pointer)
            elif self.fixed_address and ins.name in _IMMEDIATE_MOVES and "0x" in ins.op_str and "[" not in ins.op_str:
                pointer = immediate_operand(ins)
                if pointer is not None and self.reader.is_code(pointer):
                    self.pointers.add(pointer)
            if not ins.falls_through:
                return
            address += ins.size

    def _plausible(self, address: int) -> bool:
        """Whether the code from ``address`` on, up to its first branch, may be code: a word in
        data that only looks like an address of code (Free Pascal's string 'TMP', 0x504d54, 3
        bytes into an instruction) decodes into operands no program has, a RIP-relative
        address outside its memory or a branch out of its code, whose copy cannot be written
        (the program was refused: a displacement that cannot reach below address 0)."""
        for ins in _straight_line(self.md, self.reader, address, self.hi, _PLAUSIBLE_RUN):
            target = ins.branch_target if ins.is_branch else rip_operand(ins) if ins.reads_pc else None
            if target is not None and not (self.reader.is_code(target) if ins.is_branch
                                           else self.reader.binary.in_memory(target)):
                return False
        return True

    def _covers(self, address: int) -> bool:
        """Whether an instruction found holds the byte at ``address``: the one found
        nearest below it, as found instructions never overlap (a set of every byte they
        cover took a third of the lift's memory)."""
        below = bisect.bisect_right(self.keys, address)
        return below > 0 and self.found[self.keys[below - 1]].end > address

    def _before(self, address: int) -> Iterator[Instruction]:
        """The instructions found below ``address``, the nearest first."""
        for i in range(bisect.bisect_left(self.keys, address) - 1, -1, -1):
            yield self.found[self.keys[i]]


#: The alignment past which a label's address says no more (a function's, at most a cache line).
_MOST_ALIGNED = 64
#: How many instructions from a code address found in data ``_Descent._plausible`` reads.
_PLAUSIBLE_RUN = 16


#: How far _reads_through looks after a ``lea`` (instructions), and _decodes from an address.
_READ_THROUGH_RUN = 128
_DECODES_RUN = 16
#: The names of each general register's parts, by the part's name: a register's uses.
_REGISTER_OF = {part: full for full, *parts in (
    ("rax", "eax", "ax", "al"), ("rbx", "ebx", "bx", "bl"), ("rcx", "ecx", "cx", "cl"), ("rdx", "edx", "dx", "dl"),
    ("rsi", "esi", "si", "sil"), ("rdi", "edi", "di", "dil"), ("rbp", "ebp", "bp", "bpl"),
    ("rsp", "esp", "sp", "spl"), *((f"r{n}", f"r{n}d", f"r{n}w", f"r{n}b") for n in range(8, 16)))
    for part in (full, *parts)}
_MEMORY_OPERAND = re.compile(r"\[([^\]]*)\]")
_WORD = re.compile(r"[a-z0-9]+")


def _reads_through(md, reader: _Reader, lea: Instruction, end: int) -> bool:
    """Whether the code after ``lea`` (before ``end``) addresses memory through the register
    it sets before setting that register again, up to a call, a return or an indirect jump
    (on past conditional jumps, and on at direct jumps' targets): the address is a table's
    base, as OpenSSL's assembly reads the constants it keeps in its text (``lea rbp,
    [rip + K256]; vpaddd xmm4, xmm0, [rbp]``), not a function's that the code passes on or
    calls."""
    register = _REGISTER_OF.get(lea.op_str.split(",", 1)[0].strip())
    if register is None:
        return False
    address = lea.end
    for _ in range(_READ_THROUGH_RUN):
        if address >= end:
            return False
        ins = decode_one(md, reader.bytes_at(address, min(15, end - address)), address)
        if ins is None:
            return False
        if any(_REGISTER_OF.get(word) == register for operand in _MEMORY_OPERAND.findall(ins.op_str)
               for word in _WORD.findall(operand)):
            return True
        written = ins.op_str.split(",", 1)[0].strip()
        if _REGISTER_OF.get(written) == register and ins.name not in ("cmp", "test", "push") \
                or ins.is_call or ins.is_return:
            return False
        if ins.is_branch and not ins.is_conditional:  # on at a direct jump's target
            if ins.is_indirect or ins.branch_target is None:
                return False
            address = ins.branch_target
        elif not ins.falls_through:
            return False
        else:
            address = ins.end
    return False


def _decodes(md, reader: _Reader, start: int) -> bool:
    """Whether the bytes from ``start`` read as _DECODES_RUN instructions one after another
    (data in the text most often holds a byte no 64-bit instruction starts with)."""
    address = start
    for _ in range(_DECODES_RUN):
        ins = decode_one(md, reader.bytes_at(address, 15), address)
        if ins is None:
            return False
        address = ins.end
    return True


def _straight_line(md, reader: _Reader, start: int, end: int, most: int) -> Iterator[Instruction]:
    """The instructions from ``start`` on (before ``end``, at most ``most``) up to the first
    that does not fall through or branches, or where the bytes are no instruction."""
    address = start
    for _ in range(most):
        if address >= end:
            return
        ins = decode_one(md, reader.bytes_at(address, min(15, end - address)), address)
        if ins is None:
            return
        yield ins
        if ins.is_branch or not ins.falls_through:
            return
        address = ins.end


def _linear(md, reader: _Reader, start: int, end: int) -> list[Instruction]:
    """Every instruction from ``start`` to ``end``, one after the other (PLT entries)."""
    out = []
    address = start
    while address < end:
        ins = decode_one(md, reader.bytes_at(address, min(15, end - address)), address)
        if ins is None:
            address += 1
            continue
        out.append(ins)
        address += ins.size
    return out


def _make_blocks(proc: Procedure, instructions: list[Instruction], cases: set[int] = frozenset(),
                 past_return: Set[int] = frozenset()) -> None:
    """Cut the procedure's instructions into blocks (``cases``: where its switches go;
    ``past_return``: ``ret`` instructions that stay in the block of the call before them, so
    that nothing comes between the two in the copy)."""
    if not instructions:
        return
    leaders = {instructions[0].address, *cases}
    previous = None
    for ins in instructions:
        if previous is not None and (ins.address != previous.end or previous.is_branch or previous.is_syscall
                                     or not previous.falls_through) and ins.address not in past_return:
            leaders.add(ins.address)
        if ins.branch_target is not None and proc.address <= ins.branch_target < proc.end:
            leaders.add(ins.branch_target)
        previous = ins
    blocks: list[Block] = []
    current: list[Instruction] = []
    for ins in instructions:
        if ins.address in leaders and current:
            blocks.append(Block(current[0].address, current, proc))
            current = []
        current.append(ins)
    blocks.append(Block(current[0].address, current, proc))
    for index, block in enumerate(blocks):
        block.index = index
        own_instructions(block)
    proc.blocks = blocks

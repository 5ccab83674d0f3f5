"""The IR: Binary -> Procedure -> Block -> Instruction, plus the hooks a tool attaches.

Tools walk these objects and call ``call`` on them; the emitter reads the hooks back.
Addresses are link-time (virtual addresses from the ELF); for PIE binaries the
runtime address is link-time + load bias, and hooks hand the runtime value to the
analysis routines.
"""

from __future__ import annotations

import fnmatch
import itertools
import operator
import re
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import AnvilError

if TYPE_CHECKING:
    from ..api import Prototype
    from .lines import LineTable


class Point(Enum):
    """Where a hook runs relative to its object."""

    BEFORE = "before"
    AFTER = "after"


def check_call(what: str, point: object, points: tuple[Point, ...], prototype: object, args: tuple) -> None:
    """A tool's ``call`` on ``what`` checked where the tool makes it: a point that is not one
    of ``points``, a prototype that is not one, arguments that do not fit it. A tool file's
    mistake is then one line naming it (AnvilError), not an exception deep in the emitter
    that says it is Anvil's bug, nor a call silently placed nowhere."""
    if point not in points:
        names = " or ".join(f"Point.{p.name}" for p in points)
        raise AnvilError(f"a call on {what} takes {names}, not {point!r}")
    check = getattr(prototype, "check_args", None)
    if check is None:
        raise AnvilError(f"a call on {what} takes a prototype (self.prototype(name, Arg...)), not {prototype!r}")
    check(args)


@dataclass(frozen=True, slots=True)
class Access:
    """One memory access of an instruction: the address is base + disp (+/- index << shift).

    For multi-register transfers there is one Access per register, each with its own
    ``disp``. ``base`` the PC (15 on ARM, RIP 16 on x86-64) means a literal: ``disp`` is
    then the absolute link-time address and ``index`` is None; -1: no base register.
    ``segment``: x86-64's ``fs`` or ``gs`` (thread-local data) when the address is relative
    to that segment's base.
    """

    is_store: bool
    size: int
    base: int
    disp: int = 0
    index: int | None = None
    shift: int = 0
    shift_type: int = 0  # 0 LSL, 1 LSR, 2 ASR, 3 ROR
    subtract: bool = False
    segment: str | None = None


@dataclass(slots=True)
class Hook:
    """A call of an analysis routine at a point, with the argument kinds and values."""

    point: Point
    prototype: Prototype
    args: tuple
    # Sets up the memory counters live in (firmware start-up): emitted before the block's
    # inline counters; every other entry call comes after them, so it sees them counted.
    setup: bool = False


@dataclass(slots=True)
class Instruction:
    """One decoded machine instruction and the facts tools and the emitter need.

    With slots, not a dict per instance: a program's IR holds one per instruction (674k
    for a 4.7 MB program), and a dict of this many fields takes four times the memory.
    """

    address: int
    size: int
    raw: bytes
    thumb: bool
    mnemonic: str
    op_str: str
    name: str = ""  # base mnemonic without condition or width suffix ("ldr" for "ldreq.w")
    cond: int = 14
    is_it: bool = False
    in_it: bool = False
    # Tuples: the empty one is shared, and so are those of the instructions the decoder
    # gives from its cache (the same encoding: Access is frozen).
    accesses: tuple[Access, ...] = ()
    is_branch: bool = False
    is_call: bool = False
    is_return: bool = False
    is_indirect: bool = False
    branch_target: int | None = None
    reads_pc: bool = False
    writes_pc: bool = False
    is_syscall: bool = False
    # The shared empty tuple until a hook is added (add_hook): most instructions get none,
    # and an empty list each took 56 bytes.
    hooks: list[Hook] | tuple[()] = ()
    # The block (a weak reference: ``block``, below); no constructor argument.
    _block_ref: object = field(default=None, init=False, repr=False, compare=False)
    # Capstone's instruction with operand details, where the facts or relocation need them.
    # Instructions with the same encoding may share one, whose address is then another's.
    detail: object = field(default=None, repr=False)

    @property
    def is_load(self) -> bool:
        return any(not a.is_store for a in self.accesses)

    @property
    def is_store(self) -> bool:
        return any(a.is_store for a in self.accesses)

    @property
    def access_sizes(self) -> list[int]:
        return [a.size for a in self.accesses]

    @property
    def is_conditional(self) -> bool:
        return self.cond != 14

    @property
    def falls_through(self) -> bool:
        """Execution may go on at the next address: anything but an unconditional branch
        or PC write (CBZ/CBNZ test a register, so they may not branch) and UDF. A call
        falls through (its callee returns there)."""
        if self.name in STOPS:
            return False
        if self.is_call or self.is_syscall:
            return True
        if self.is_branch or self.writes_pc:  # asked of every instruction, often: is_conditional inline
            return self.cond != 14 or self.in_it or self.name in ("cbz", "cbnz")
        return True

    @property
    def is_pc_relative(self) -> bool:
        return self.reads_pc

    @property
    def line(self) -> str | None:
        """The source 'file:line' DWARF gives for this instruction, or None (no DWARF, or no
        row for its address). The binary's line table is read the first time one is asked."""
        block = self.block
        procedure = block.procedure if block is not None else None
        binary = procedure.binary if procedure is not None else None
        return binary.source_line(self.address) if binary is not None else None

    @property
    def end(self) -> int:
        return self.address + self.size

    def call(self, point: Point, prototype: Prototype, *args: object) -> None:
        """Ask for ``prototype`` to be called before (or after) this instruction runs."""
        check_call("an instruction", point, (Point.BEFORE,), prototype, args)
        self.add_hook(Hook(point, prototype, args))

    def add_hook(self, hook: Hook) -> None:
        """Add ``hook`` after those the instruction has."""
        if self.hooks:
            self.hooks.append(hook)
        else:
            self.hooks = [hook]

    def __str__(self) -> str:
        return f"{self.address:#x}: {self.mnemonic} {self.op_str}".rstrip()


# A block's edge increments where it has none (most blocks): one shared empty mapping.
_NO_EDGES: Mapping[int, list[tuple[str, int, int]]] = MappingProxyType({})


def _no_edges() -> Mapping[int, list[tuple[str, int, int]]]:
    return _NO_EDGES


@dataclass
class Block:
    """A basic block: entered only at its first instruction, left only after its last.

    Its hooks, counter increments and edge increments are shared empty ones until it gets
    some (``call``, ``increment``, ``add_edge_increment``): a large program's IR holds a
    block for every three instructions or so, and an empty list and dict each took 120 bytes.
    """

    address: int
    instructions: list[Instruction]
    procedure: Procedure
    index: int = 0
    hooks: list[Hook] | tuple[()] = ()
    counter_increments: list[tuple[str, int, int]] | tuple[()] = ()
    # Increments made only when control goes from this block to the block at the key
    # (set by counter placement on branches it cannot do without).
    edge_increments: dict[int, list[tuple[str, int, int]]] | Mapping[int, list[tuple[str, int, int]]] = \
        field(default_factory=_no_edges)

    @property
    def end(self) -> int:
        last = self.instructions[-1]
        return last.address + last.size

    @property
    def size(self) -> int:
        return len(self.instructions)

    def call(self, point: Point, prototype: Prototype, *args: object) -> None:
        """Call ``prototype`` when the block is entered (Point.BEFORE)."""
        check_call("a block", point, (Point.BEFORE,), prototype, args)
        hook = Hook(point, prototype, args)
        if self.hooks:
            self.hooks.append(hook)
        else:
            self.hooks = [hook]

    def increment(self, counter: str, index: int, amount: int = 1) -> None:
        """Add ``amount`` to 64-bit slot ``index`` of counter array ``counter``, inline."""
        if self.counter_increments:
            self.counter_increments.append((counter, index, amount))
        else:
            self.counter_increments = [(counter, index, amount)]

    def add_edge_increment(self, target: int, counter: str, index: int, amount: int = 1) -> None:
        """Add ``amount`` to slot ``index`` of ``counter`` when control goes from this block
        to the block at ``target``."""
        if not self.edge_increments:
            self.edge_increments = {}
        self.edge_increments.setdefault(target, []).append((counter, index, amount))


@dataclass
class Accumulation:
    """How a procedure adds counts into memory slots through registers (decisions 0014,
    0019): running sums in D registers, reset where the procedure is entered, added to
    at the counted blocks and edges (weights, d31) or at filter sites (a repeat filter's
    hits), and moved into their slots before control may leave. Block positions are
    indexes into ``blocks``."""

    sums: dict[int, tuple[str, int]]  # D register -> (counter array, index) its sum goes to
    weights: dict[int, int]  # counted block -> what its execution adds to d31
    edge_weights: dict[tuple[int, int], int]  # (block, original target address) -> what that way adds
    resets: set[int]  # blocks whose entry from outside starts the sums from zero
    flush_at_start: set[int]  # blocks that move the sums into the slots after their own weight
    flush_at_end: set[int]  # blocks that move them after falling through (into a block with a reset)
    # Instructions before which the sums move (after the instruction's own filter sites):
    # where sites add inside blocks, the ways out of a block that may leave.
    flush_before: set[int] = field(default_factory=set)


@dataclass
class Procedure:
    """A function: a named range of code in one instruction set."""

    name: str
    address: int
    size: int
    thumb: bool
    blocks: list[Block] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    index: int = 0
    notes: list[str] = field(default_factory=list)
    data_ranges: list[tuple[int, int]] = field(default_factory=list)
    accumulation: Accumulation | None = None
    # A computed jump (add/mov pc) in the code before it runs on into it (stripped code where
    # an entry cut the jump's targets off, libgcc's division): any instruction may be entered.
    jumped_into: bool = False
    # Places its code runs into that no decoder reads (an instruction newer than capstone's
    # tables): (start, end) of the bytes. They run in place, in the original, uncounted.
    undecodable: list[tuple[int, int]] = field(default_factory=list)
    # What analyses of its instructions alone found (liveness, exclusive windows), by the
    # function that found it: see ``analysis``.
    analyses: dict[Callable[[Procedure], Any], Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def end(self) -> int:
        return self.address + self.size

    def analysis(self, make: Callable[[Procedure], _Result]) -> _Result:
        """``make(self)``, worked out once for this procedure. For analyses whose answer
        depends on the procedure's instructions alone, which every emission asks again: a
        program instrumented by several tools or modes from one IR (the API, the test
        suite) has them computed by the first. Their answers are not to be changed."""
        found = self.analyses.get(make, _MISSING)
        if found is _MISSING:
            found = self.analyses[make] = make(self)
        return found

    def instructions(self) -> Iterator[Instruction]:
        """The instructions of every block, in order (chained in C: the emitter walks them often)."""
        return itertools.chain.from_iterable(map(_INSTRUCTIONS, self.blocks))

    def call(self, point: Point, prototype: Prototype, *args: object) -> None:
        """Call ``prototype`` on entry to the procedure (Point.BEFORE)."""
        check_call("a procedure", point, (Point.BEFORE,), prototype, args)
        self.hooks.append(Hook(point, prototype, args))


_INSTRUCTIONS = operator.attrgetter("instructions")
_Result = TypeVar("_Result")
_MISSING = object()
# Instructions that stop the program where they are: ARM's UDF, x86-64's HLT and UD2
# (falls_through; the descent tests them inline).
STOPS = frozenset({"udf", "hlt", "ud2", "ud1", "ud0"})


def _owner_reference(name: str, owner: str) -> property:
    """A field ``name`` that refers to the object owning this one (its ``owner``) weakly."""
    slot = f"_{name}_ref"

    def get(self: object) -> object:
        ref = getattr(self, slot)
        return None if ref is None else ref()

    def put(self: object, value: object) -> None:
        setattr(self, slot, None if value is None else weakref.ref(value))

    return property(get, put, doc=f"The {owner} this belongs to (None once the {owner} is gone).")


# The IR is owned downwards: a Binary holds its procedures, a procedure its blocks, a
# block its instructions. The references back up (an instruction's block, a block's
# procedure) are weak, so that the IR has no reference cycles: it is freed as soon as
# it is dropped, not later by the cycle collector, which needs most of a second to walk
# the IR of a large program (at the latest when the interpreter exits).
Instruction.block = _owner_reference("block", "block")  # type: ignore[assignment]
Block.procedure = _owner_reference("procedure", "procedure")  # type: ignore[assignment]
Procedure._binary_ref = None  # type: ignore[attr-defined]  # until the loader sets it
Procedure.binary = _owner_reference("binary", "binary")  # type: ignore[attr-defined]


def own_instructions(block: Block) -> None:
    """Make ``block`` the block of each of its instructions (``Instruction.block``): one
    weak reference for all of them, set without the property (a loader does this for
    every instruction of the program)."""
    ref = weakref.ref(block)
    for ins in block.instructions:
        ins._block_ref = ref


@dataclass
class Segment:
    """A PT_LOAD program header."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int
    flags: int
    align: int

    @property
    def executable(self) -> bool:
        return bool(self.flags & 1)


_HIGH_VFP = re.compile(r"\b(d(1[6-9]|2\d|3[01])|q([89]|1[0-5]))\b")


def _names_high_vfp(ins: Instruction) -> bool:
    """``ins`` reads or writes one of d16-d31 (a whole-bank save or restore aside)."""
    # The test for a 'd' or 'q' first: most instructions name neither, and a regular
    # expression search costs ten times more.
    if not ("d" in ins.op_str or "q" in ins.op_str) or not _HIGH_VFP.search(ins.op_str):
        return False
    return not (ins.mnemonic.startswith(("vldm", "vstm")) and "d16" in ins.op_str and "d31" in ins.op_str)


@dataclass
class Binary:
    """A loaded executable: its procedures and the facts the emitter needs."""

    path: str
    data: bytes
    machine: str
    is_pie: bool
    is_dynamic: bool
    entry: int
    segments: list[Segment]
    # The program's interpreter calls its entry as ``main(argc, argv, envp)`` instead of
    # entering it on the kernel's stack, as a dynamic linker does: klibc's shared library,
    # which a program names as its interpreter (PT_INTERP) without a dynamic section.
    entry_called_as_main: bool = False
    procedures: list[Procedure] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    symbols: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    address_taken: set[int] = field(default_factory=set)  # code addresses found as words in data
    code_pointers: set[int] = field(default_factory=set)  # those with the right Thumb bit: real pointers
    unwinder_entries: set[int] = field(default_factory=set)  # landing pads, personality routines
    # Entries inside an instruction that code as surely known runs into (discovery's
    # ``_straddled``): one of the two readings is wrong, and no jump is written there.
    straddled_entries: set[int] = field(default_factory=set)
    # Targets of calls in executable bytes discovery did not decode (ir/gaps.py).
    gap_targets: set[int] = field(default_factory=set)
    # TBB/TBH address -> entries of its table, where the bounds check before it says (found by
    # discovery in stripped code, where nothing else marks where a table ends).
    table_sizes: dict[int, int] = field(default_factory=dict)
    # BX address -> its cases, for GCC's PIC switches (jump_tables.SwitchFinder).
    switch_cases: dict[int, set[int]] = field(default_factory=dict)
    # x86-64: the instruction that reads a switch table's entry -> the table
    # (arch/x86_64/jump_tables.SwitchTable), whose copy reads a table of the copies' cases.
    table_readers: dict[int, Any] = field(default_factory=dict)
    # x86-64: ``ret`` instructions after a call that goes on at their address + 1
    # (__morestack): copied with nothing before or after them (arch/x86_64/lift.py PAST_RETURN).
    past_return: set[int] = field(default_factory=set)
    # The [start, end) of each switch's table whose bounds check says how long it is: data in
    # the middle of code, where no procedure begins (discovery).
    switch_tables: set[tuple[int, int]] = field(default_factory=set)
    # Words in executable segments that the dynamic linker rewrites at load time (a program
    # with text relocations, DT_TEXTREL: OCaml's PIEs): their literal pools hold addresses
    # known only then, so a copy must load them where they are, not take the file's value.
    text_relocations: set[int] = field(default_factory=set)
    plt: dict[int, str] = field(default_factory=dict)  # PLT entry (and Thumb stub) -> the function it calls
    import_slots: dict[int, str] = field(default_factory=dict)  # GOT slot -> the symbol its relocation names (x86-64)
    # Computed gotos' labels a stripped program's descent read from their tables (ARM):
    # the copies jump to the original labels, whose entries may run in place.
    goto_labels: set[int] = field(default_factory=set)
    binder: int | None = None  # PLT0: where an entry whose GOT slot is not bound yet jumps (lazy binding)
    # The program's stack may be unwound (decision 0013): it throws C++ exceptions or calls
    # backtrace (elf_loader._unwinds) or, with no symbol table to tell, has landing pads.
    unwinds: bool = False
    # The program starts threads (names pthread_create or thrd_create, or its code builds a
    # thread's clone flags): counters then add with LDREX/STREX, as in firmware interrupt
    # code (decision 0003).
    threaded: bool = False
    # Where a program that names no thread start builds the flags of a clone that starts
    # one (thread_flags.py): the entries of those procedures.
    thread_flag_procedures: set[int] = field(default_factory=set)
    # The program may make a process that runs its code: it names fork, vfork, clone, a
    # library function that forks and returns in the child (daemon, forkpty), the generic
    # syscall(), or an atfork handler's registration, or it is static and stripped, or Go
    # (read_runtime_facts). ReHost keeps each process's stream for the children it may fork
    # only then (rehost/bridge.py).
    forks: bool = True
    # Code the program reads as its data (V8's embedded builtins, which node copies next to
    # its JIT code to run them there): left as it is, neither copied nor jumped from.
    code_read_as_data: list[tuple[int, int]] = field(default_factory=list)
    fini: int | None = None  # DT_FINI: the last code of the executable to run at exit (dynamic)
    init: int | None = None  # DT_INIT: run at start by glibc's dynamic programs, never by musl's on ARM
    # The first DT_FINI_ARRAY function (link address, no Thumb bit): the last of the array
    # to run at exit, and the executable's last code where the dynamic linker skips DT_FINI.
    fini_array_first: int | None = None
    # IFUNC resolvers of a dynamic program (R_ARM_IRELATIVE): the dynamic linker calls them
    # while it relocates the executable, before even DT_PREINIT_ARRAY, so before the region
    # of copies is mapped; their entries stay as they were (they run in place).
    resolvers: set[int] = field(default_factory=set)
    profile: str = "A"  # ARM architecture profile: "A" (Linux programs) or "M" (Cortex-M firmware)
    dsp: bool = True    # the core has the DSP extension (APSR.GE bits): all but plain ARMv7-M
    # A Go program's functions from its PC table, entry -> name (decision 0089): every entry
    # is known, all A32; empty for any other program.
    go_functions: dict[int, str] = field(default_factory=dict)
    # The entries of those Go's handler may preempt by signal (GoFunction.preemptible).
    go_preemptible: set[int] = field(default_factory=set)
    _high_vfp: bool | None = field(default=None, repr=False, compare=False)  # uses_high_vfp, once known
    _literal_bytes: set[int] | None = field(default=None, repr=False, compare=False)  # literal_bytes, once known
    # ir.inline_data's answers, (callee, Thumb) -> bytes read after its calls: each callee
    # decoded once for the literal bytes, the return sites and the relocation alike.
    inline_data_sizes: dict[tuple[int, bool], int] = field(default_factory=dict, repr=False, compare=False)
    # arch/arm/case_helpers' answers, (callee, Thumb) -> what it reads at its return address
    # (a CaseHelper, or None): each callee decoded once for discovery and the relocation.
    return_readers: dict[tuple[int, bool], Any] = field(default_factory=dict, repr=False, compare=False)
    # Thumb-1 switches: the call of a case helper -> its table (arch/arm/case_helpers.CaseTable).
    case_tables: dict[int, Any] = field(default_factory=dict)
    _lines: LineTable | None = field(default=None, repr=False, compare=False)  # source_line's, once read

    def source_line(self, address: int) -> str | None:
        """The source 'file:line' DWARF gives for ``address`` (link-time), or None."""
        if self._lines is None:
            from .lines import read_line_table
            self._lines = read_line_table(self.path)
        return self._lines.at(address)

    @property
    def source_lines_problem(self) -> str | None:
        """Why source_line found nothing, where the file's DWARF could not be read."""
        return self._lines.problem if self._lines is not None else None

    @property
    def address_bytes(self) -> int:
        """How wide the program's addresses are: 8 on x86-64, 4 on ARM."""
        return 8 if self.machine == "x86-64" else 4

    @property
    def is_firmware(self) -> bool:
        """A bare-metal Cortex-M image: vector table, no kernel, entered at reset."""
        return self.profile == "M"

    def uses_high_vfp(self) -> bool:
        """Whether an instruction depends on d16-d31 (else hooks may keep registers there).

        Saving or restoring the whole bank (the unwinder's vstm/vldm {d16-d31}) does not
        depend on the values and does not count. A scan of every instruction, made once.
        """
        if self._high_vfp is None:
            self._high_vfp = any(_names_high_vfp(ins) for proc in self.procedures for ins in proc.instructions())
        return self._high_vfp

    def literal_bytes(self) -> set[int]:
        """The bytes of code that instructions read as data (PC-relative loads: literal
        pools; and the word an ADR points at, where no procedure starts: GNAT's ``adr r2,
        pool; ldrd r2, r3, [r2]``). No jump may be written over them: the code that reads
        them may run in place, and its copy reads them where they are. Where a descent
        decoded a pool as code (past a call that never returns), its "return site" is one
        of these."""
        if self._literal_bytes is None:
            from ..arch.arm.jump_tables import adr_target
            from .inline_data import inline_data_bytes

            # The unwinder's table says the instructions where it enters are code: a load that
            # reads one is itself data decoded as code (a literal pool past a call that never
            # returns, decision 0106), and its "pool" must not keep a landing pad from its jump.
            code = {byte for proc in self.procedures for ins in proc.instructions()
                    if ins.address in self.unwinder_entries for byte in range(ins.address, ins.end)}
            entries = {proc.address for proc in self.procedures}
            self._literal_bytes = set()
            for proc in self.procedures:
                for ins in proc.instructions():
                    for acc in ins.accesses or ():
                        if acc.base == 15 and not acc.is_store:
                            read = range(acc.disp, acc.disp + acc.size)
                            if code.isdisjoint(read):
                                self._literal_bytes.update(read)
                    pointed = adr_target(ins) if ins.reads_pc and not ins.accesses else None
                    if pointed is not None and pointed not in entries:
                        read = range(pointed, pointed + 4)  # (how much is read there is not known: a word)
                        if code.isdisjoint(read):
                            self._literal_bytes.update(read)
            # And the data after calls whose callees read it there (klibc's system call numbers).
            self._literal_bytes |= inline_data_bytes(self.procedures, self.read, self.inline_data_sizes)
        return self._literal_bytes

    def call(self, point: Point, prototype: Prototype, *args: object) -> None:
        """Program start (Point.BEFORE) or program end (Point.AFTER)."""
        check_call("the program", point, (Point.BEFORE, Point.AFTER), prototype, args)
        self.hooks.append(Hook(point, prototype, args))

    def bracket_program_calls(self, first: Prototype, last: Prototype) -> None:
        """Make ``first()`` the first program-start call and ``last()`` the first program-end
        call: what the tool's start routines may make is ready before them, and what its
        calls left pending is done before its end routines read the results."""
        start = [hook for hook in self.hooks if hook.point is Point.BEFORE]
        end = [hook for hook in self.hooks if hook.point is not Point.BEFORE]
        self.hooks = [Hook(Point.BEFORE, first, ()), *start, Hook(Point.AFTER, last, ()), *end]

    def clear_hooks(self) -> None:
        """Remove every hook and inline counter, so another tool can instrument the same IR."""
        self.hooks.clear()
        for proc in self.procedures:
            proc.hooks.clear()
            proc.accumulation = None
            for block in proc.blocks:
                block.hooks = ()
                block.counter_increments = ()
                block.edge_increments = _NO_EDGES
                for ins in block.instructions:
                    if ins.hooks:
                        ins.hooks = ()

    def select(self, only: list[str] | None = None, skip: list[str] | None = None) -> list[Procedure]:
        """Procedures whose names match any ``only`` glob (all if none) and no ``skip`` glob."""
        chosen = []
        for proc in self.procedures:
            if only and not any(fnmatch.fnmatchcase(proc.name, g) for g in only):
                continue
            if skip and any(fnmatch.fnmatchcase(proc.name, g) for g in skip):
                continue
            chosen.append(proc)
        return chosen

    def blocks(self) -> Iterator[Block]:
        for proc in self.procedures:
            yield from proc.blocks

    def instruction_count(self) -> int:
        return sum(len(b.instructions) for b in self.blocks())

    def in_memory(self, address: int) -> bool:
        """Whether ``address`` is in a loaded segment's memory, or its end's address."""
        return any(seg.vaddr <= address <= seg.vaddr + seg.memsz for seg in self.segments)

    def file_offset(self, vaddr: int) -> int | None:
        """File offset of link-time address ``vaddr``, if it is backed by file bytes."""
        for seg in self.segments:
            if seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                return seg.offset + (vaddr - seg.vaddr)
        return None

    def read(self, vaddr: int, size: int) -> bytes:
        off = self.file_offset(vaddr)
        if off is None:
            return b"\0" * size
        return self.data[off:off + size]

"""The instrumentation API: tools, prototypes of analysis routines, argument kinds.

A tool is a class with a name, options and an ``instrument`` method. It declares the
analysis routines it calls (``prototype``) with typed argument kinds, then walks the
IR and attaches calls::

    class InsCount(Tool):
        name = "inscount"
        def instrument(self, binary, opts):
            for proc in binary.select(opts.only, opts.skip):
                for block in proc.blocks:
                    block.increment("blocks", block.index)

The analysis routines themselves are C in ``analysis_libs/<tool>/<tool>.c`` (a tool that
ships) or beside a tool file (``mytool.py`` and ``mytool.c``, rewriter/tool_files.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any

from .errors import AnvilError
from .ir.model import Binary, Point

__all__ = ["Arg", "Option", "Options", "Point", "Prototype", "RepeatFilter", "Tool"]


class Arg(Enum):
    """Kinds of argument an analysis routine can receive (each one 32-bit word)."""

    CONST = "const"              # an integer given at instrumentation time
    STRING = "string"            # a string given at instrumentation time (const char *)
    INST_ADDR = "inst_addr"      # runtime address of the instruction
    EFFADDR = "effaddr"          # effective address of one memory access
    ACCESS_SIZE = "access_size"  # size in bytes of that access
    ACCESS_IS_STORE = "is_store"  # 1 for a store, 0 for a load
    BLOCK_INSNS = "block_insns"  # number of instructions in the enclosing block
    REG_VALUE = "reg_value"      # value of a register before the instruction (number given)
    SITE_ID = "site_id"          # ReHost: the record's site number (given; + access index per access)
    # The key that left the call's repeat filter slot on this call (RepeatFilter.depth),
    # as the last address of its range (key << shift | low bits); 0 when the slot held none.
    FILTER_LEFT = "filter_left"

    @property
    def dynamic(self) -> bool:
        """Kinds whose value is only known when the program runs (ReHost ships these)."""
        return self is Arg.EFFADDR or self is Arg.REG_VALUE or self is Arg.FILTER_LEFT  # no hashing: hot

    @property
    def per_access(self) -> bool:
        """Kinds that make one call per memory access of the instruction."""
        return self in (Arg.EFFADDR, Arg.ACCESS_SIZE, Arg.ACCESS_IS_STORE)


STATIC_INDEX_KINDS = (Arg.CONST, Arg.ACCESS_IS_STORE, Arg.ACCESS_SIZE, Arg.BLOCK_INSNS)


@dataclass(frozen=True)
class RepeatFilter:
    """An inline test that skips a call whose key repeats (Pin's ``InsertIfCall``, declared).

    The key is argument ``key_arg`` (a run-time address or register value) shifted right
    by ``shift``; it lands in slot ``key % slots`` of a small table the instrumented code
    keeps. When the slot already holds that key, the routine is *not* called and the
    64-bit counter ``counter[v]`` is bumped instead, ``v`` being the call's static argument
    ``count_by`` (a CONST, ACCESS_IS_STORE, ...). Otherwise the slot takes the key and
    the routine runs. So the routine sees every call except immediate repeats within a
    slot, and the counters say how many it did not see. A cache simulator uses it with
    ``shift`` = log2(line size) and ``slots`` = number of sets: an access to the line
    that is already most recently used in its set changes no LRU state and is a hit.
    The test is a dozen instructions inline, flags untouched; the call it saves costs
    far more under an emulator (two returns are two indirect-jump lookups in QEMU).

    ``depth`` 2: the slot keeps its two most recent distinct keys, most recent first. A
    call whose key is either one is skipped and counted, and its key becomes the most
    recent (the two swap). Otherwise the key becomes the most recent, the older one
    leaves, and the routine runs with an argument of kind ``Arg.FILTER_LEFT`` saying
    which key left (required at that depth; with depth 1 it is the key replaced). A
    cache simulator then keeps only the lines below the two most recent of each set:
    an access to the second most recent line changes only the order of the two, which
    the slot keeps (docs/decisions/0015-two-deep-repeat-filter.md). Keys of a depth-2
    filter span at most 4 KiB (``shift`` <= 12).
    """

    shift: int
    slots: int
    counter: str
    count_by: int
    key_arg: int = 0
    memo: str = ""   # the slot table's array name (set by Tool.prototype)
    counts: int = 0  # length of ``counter`` (set by Tool.prototype)
    # Byte offset of ``counter`` from the slot table when the counter array lives right
    # after it (set by Tool.prototype for the first filter of a counter): the inline test
    # then reaches both from one base register.
    counter_offset: int | None = None
    depth: int = 1  # keys a slot remembers (1 or 2)
    # The routine reads its key argument only as ``arg >> shift`` (a cache simulator's line):
    # a record may then carry the key (the last address of its range, shift <= 12) in its
    # place, which the test already holds, and the site's call path can be shared code.
    key_suffices: bool = False

    @property
    def slot_bits(self) -> int:
        return self.slots.bit_length() - 1


@dataclass
class Prototype:
    """An analysis routine's name and the kinds of its arguments (at most four)."""

    name: str
    kinds: tuple[Arg, ...]
    filter: RepeatFilter | None = None
    # The routine computes on its arguments only (it reads no program memory or registers
    # when it runs), so InHost may keep its calls as records in a buffer in the program and
    # run them in order, in batches, before the program-end routines (emit/deferred.py).
    deferred: bool = False

    def check_args(self, args: tuple) -> None:
        """Check the values given at a call site: one per kind, in order.

        CONST takes an int, STRING a str, REG_VALUE a register number 0-15; every
        other kind is computed by the hook and is given as the kind itself.
        """
        if len(args) != len(self.kinds):
            raise AnvilError(f"{self.name}: expected {len(self.kinds)} arguments, got {len(args)}")
        for kind, value in zip(self.kinds, args):
            if kind is Arg.CONST or kind is Arg.SITE_ID:  # identity tests, no dict: called per site
                # A word of the widest target (x86-64's 64 bits), signed or not: wider would be cut.
                ok = isinstance(value, int) and -(1 << 63) <= value < 1 << 64
            elif kind is Arg.STRING:
                ok = isinstance(value, str)
            elif kind is Arg.REG_VALUE:
                ok = isinstance(value, int) and 0 <= value <= 15
            else:
                ok = value is kind
            if not ok:
                raise AnvilError(f"{self.name}: argument {value!r} does not fit kind {kind.name}")
        flt = self.filter
        if flt is not None and self.kinds[flt.count_by] is Arg.CONST and not 0 <= args[flt.count_by] < flt.counts:
            raise AnvilError(f"{self.name}: counter index {args[flt.count_by]} is outside {flt.counter}[{flt.counts}]")

    @property
    def per_access(self) -> bool:
        return any(k.per_access for k in self.kinds)


@dataclass
class Option:
    """A tool option given as ``--opt name=value``; ``check`` returns a problem or None."""

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = int
    check: Callable[[Any], str | None] = lambda v: None


@dataclass
class Options:
    """The options a tool's ``instrument`` sees: its own values plus the common ones."""

    values: dict[str, Any] = field(default_factory=dict)
    only: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    out: str = ""
    format: str = "text"
    flash_region: Any = None  # boards.MemoryRegion: where firmware instrumentation code may go
    ram_region: Any = None    # boards.MemoryRegion: where firmware instrumentation data may go
    transport: str | None = None    # ReHost on boards: how records leave the target (None: semihosting)
    uart_base: int | None = None    # ReHost over a UART: its MMIO base (None: the board's UART0)
    board: str | None = None        # firmware: the board whose memory map places it (None: the best fit)
    ring_size: int | None = None    # ReHost: bytes of records kept between flushes (None: the platform's default)
    return_addresses: str = "auto"  # what calls leave in LR: "original", "relocated" or "auto" (decision 0013)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None


class Tool:
    """Base class of instrumentation tools."""

    name: str = ""
    description: str = ""
    options: list[Option] = []
    # A tool file's analysis C, relative to the file (default: the file's stem + ".c";
    # rewriter/tool_files.py). Shipped tools keep theirs in analysis_libs/<name>/.
    analysis_files: list[str] = []
    # The C files resolved (set by tool_files.load_tool); None for shipped tools.
    analysis_sources: list[Path] | None = None

    def __init__(self) -> None:
        self.prototypes: dict[str, Prototype] = {}
        self.arrays: dict[str, tuple[str, int]] = {}
        # Block counter array -> the per-procedure array its weighted sums may go to (sum_per_procedure).
        self.procedure_sums: dict[str, str] = {}

    def prototype(self, name: str, *kinds: Arg, filter: RepeatFilter | None = None,
                  deferred: bool = False) -> Prototype:
        """Declare (or fetch) the analysis routine ``name`` taking arguments of ``kinds``.

        ``filter``: skip calls whose key repeats (see RepeatFilter); its counter array
        must be declared first. ``deferred``: the routine looks at nothing but its
        arguments, so its calls may run later, in order, in batches (Prototype.deferred):
        a call then costs a few stores instead of a jump to the library and back.
        """
        if not (isinstance(name, str) and name.isidentifier() and name.isascii()):
            raise AnvilError(f"prototype name {name!r} is not a C identifier (the analysis routine's name)")
        if len(kinds) > 4:
            raise AnvilError(f"{name}: analysis routines take at most 4 arguments")
        wrong = [kind for kind in kinds if not isinstance(kind, Arg)]
        if wrong:  # a tool file's mistake, found where it is made, not when a call is planned
            raise AnvilError(f"{name}: argument kind {wrong[0]!r} is not an Arg (Arg.EFFADDR, Arg.CONST, ...)")
        if deferred and Arg.STRING in kinds:
            raise AnvilError(f"{name}: a deferred routine takes no STRING argument")
        if Arg.FILTER_LEFT in kinds and filter is None:
            raise AnvilError(f"{name}: a FILTER_LEFT argument needs a repeat filter")
        proto = self.prototypes.get(name)
        if proto is None:
            if filter is not None:
                filter = self._checked_filter(name, kinds, filter)
            proto = self.prototypes[name] = Prototype(name, tuple(kinds), filter, deferred)
        return proto

    def _checked_filter(self, name: str, kinds: tuple[Arg, ...], flt: RepeatFilter) -> RepeatFilter:
        def bad(problem: str) -> AnvilError:
            return AnvilError(f"{name}: repeat filter: {problem}")

        if not 0 <= flt.key_arg < len(kinds) or kinds[flt.key_arg] not in (Arg.EFFADDR, Arg.REG_VALUE):
            raise bad("the key must be an EFFADDR or REG_VALUE argument")
        if not 0 <= flt.count_by < len(kinds) or kinds[flt.count_by] not in STATIC_INDEX_KINDS:
            raise bad("count_by must be a static argument (CONST, ACCESS_IS_STORE, ACCESS_SIZE, BLOCK_INSNS)")
        if not 1 <= flt.shift <= 31:
            raise bad("shift must be between 1 and 31")
        if flt.slots < 1 or flt.slots & (flt.slots - 1) or flt.slots > 1 << 24:
            raise bad("slots must be a power of two, at most 2^24")
        if flt.depth not in (1, 2):
            raise bad("depth must be 1 or 2")
        if flt.depth == 2 and Arg.FILTER_LEFT not in kinds:
            raise bad("a depth-2 filter needs a FILTER_LEFT argument")
        if Arg.FILTER_LEFT in kinds and (kinds.count(Arg.FILTER_LEFT) > 1 or flt.shift > 12):
            raise bad("FILTER_LEFT: one argument, and shift at most 12")
        ctype, length = self.arrays.get(flt.counter, ("", 0))
        if ctype != "uint64_t":
            raise bad(f"counter array '{flt.counter}' must be declared (uint64_t) before the prototype")
        taken = any(p.filter and p.filter.counter_offset is not None and p.filter.counter == flt.counter
                    for p in self.prototypes.values())
        offset = None if taken else (4 * flt.slots * flt.depth + 7) & ~7
        return replace(flt, memo=f"filter_{name}", counts=length, counter_offset=offset)

    def filter_arrays(self) -> dict[str, tuple[str, int]]:
        """The slot tables of the routines' repeat filters (target memory only, never reported),
        each with room for the counter array placed after it (``filter_placement``)."""
        out = {}
        for flt in (p.filter for p in self.prototypes.values() if p.filter):
            words = flt.slots * flt.depth if flt.counter_offset is None else flt.counter_offset // 4 + 2 * flt.counts
            out[flt.memo] = ("uint32_t", words)
        return out

    def filter_placement(self) -> dict[str, tuple[str, int]]:
        """Counter arrays that live inside a filter's slot table: name -> (table, byte offset)."""
        return {p.filter.counter: (p.filter.memo, p.filter.counter_offset) for p in self.prototypes.values()
                if p.filter and p.filter.counter_offset is not None}

    def array(self, name: str, length: int, ctype: str = "uint64_t") -> str:
        """Declare a zero-filled array visible to the C code as ``<ctype> anvil_array_<name>[length]``.

        Arrays of the default type are 64-bit counters that ``Block.increment`` can bump inline.
        """
        self.arrays[name] = (ctype, max(length, 1))
        return name

    def sum_per_procedure(self, blocks: str, into: str) -> None:
        """Say that block counter array ``blocks`` (each block adds 1 to its own slot) is read
        only as each procedure's sum of count x instructions, in slot ``proc.index`` of
        ``into``. The emitter then puts those sums there: straight from the program where it
        can (decision 0014: a running sum in a register, stored when control leaves the
        procedure, which costs far less than memory counters), and at program end, before
        any routine runs, from the blocks that counted in ``blocks`` (decision 0025). The
        tool's C code reads ``into`` only; the image needs no per-block tables for it."""
        for name in (blocks, into):
            if self.arrays.get(name, ("", 0))[0] != "uint64_t":
                raise AnvilError(f"sum_per_procedure: '{name}' must be a declared uint64_t array")
        self.procedure_sums[blocks] = into

    def instrument(self, binary: Binary, opts: Options) -> None:  # pragma: no cover - abstract
        """Attach hooks to ``binary``."""
        raise NotImplementedError

    def parse_options(self, pairs: dict[str, str]) -> dict[str, Any]:
        """Turn ``name=value`` strings into checked option values, defaults filled in."""
        known = {o.name: o for o in self.options}
        values = {o.name: o.default for o in self.options}
        for key, raw in pairs.items():
            opt = known.get(key)
            if opt is None:
                names = ", ".join(known) or "none"
                raise AnvilError(f"unknown option '{key}' for tool {self.name} (options: {names})")
            try:
                value = opt.parse(raw)
            except (ValueError, TypeError):
                raise AnvilError(f"bad value '{raw}' for option {key} of tool {self.name}") from None
            values[key] = value
        for opt in self.options:
            problem = opt.check(values[opt.name])
            if problem:
                raise AnvilError(f"option {opt.name}={values[opt.name]} of tool {self.name}: {problem}")
        return values

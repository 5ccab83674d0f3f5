"""Where a Cortex-M image's instrumentation goes: free flash for the code, RAM that
neither the heap nor a stack reaches for the data (docs/decisions/0038-firmware-placement-from-the-memory-map.md).

Everything comes from the board's memory map (its flash and RAM banks) and the image:
its program headers (what is loaded where: by load address, where the bytes are, and
by address, where the program uses them), the word the core loads its stack pointer
from, the linker-script symbols that name where the heap starts and where heap and
stack stop, and whether the image asks the debugger or emulator for its heap and stack
(a semihosting SYS_HEAPINFO call, as newlib's rdimon-crt0 makes).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

from ..boards import BOARDS, Board, MemoryRegion
from ..boards import board as named_board
from ..errors import AnvilError
from ..ir.constants import constant_before
from ..ir.model import Binary

ALIGN = 16  # of the code in flash
DATA_ALIGN = 8  # of the data in RAM
# QEMU's softmmu TLB is direct-mapped by page number: 1 KiB pages on M-profile, 256 entries
# (its default size, which a busy run keeps). Two pages whose numbers agree modulo 256 evict
# each other: the instrumentation's data is moved (decision 0080) so that its pages fall on
# other entries than the program's data, heap start and stack top.
TLB_PAGE = 1 << 10
TLB_ENTRIES = 256
HOT_SPAN = 32 << 10  # how much of the heap's start and the stack's top counts as the program's
SYS_HEAPINFO = 0x16

# Linker-script symbols. The heaps a script names, each style's (start, limit or None): every
# one present is a heap the image may grow (a project's _sbrk may use any of them, and a heap
# in a bank of its own is as much the program's as one after .bss); of those that start at
# one address, the first listed says where that heap stops.
HEAP_SYMBOLS = (
    ("__HeapBase", "__HeapLimit"),  # CMSIS
    ("__heap_start", "__heap_end"),  # picolibc
    ("__heap_start__", "__heap_end__"),
    ("__heap_start__", "__heap_limit__"),
    ("_heap_start", "_heap_end"),  # libopencm3-style and hand-written scripts
    ("_sheap", "_eheap"),
    ("_pvHeapStart", "_pvHeapLimit"),  # NXP MCUXpresso
    ("end", None), ("_end", None), ("__end__", None),  # newlib's _sbrk grows from "end" up to the stack
)
# Where the stack stops (its lowest address):
STACK_LIMIT_SYMBOLS = ("__StackLimit", "_sstack", "__stack_start__")
# The initial stack pointer, when the image's vector table is not where the board reads it:
STACK_TOP_SYMBOLS = ("__StackTop", "_estack", "__stack", "__initial_sp")


@dataclass(frozen=True)
class Load:
    """A PT_LOAD: where its bytes are loaded (``paddr``) and where the program uses them (``vaddr``)."""

    vaddr: int
    paddr: int
    filesz: int
    memsz: int


@dataclass
class Placement:
    """Where instrumentation may go: ``flash`` (free, after the image) and RAM: the user's
    ``ram`` region (data at its top), or else what ``find_ram`` chooses for a size; on
    which ``board``."""

    flash: MemoryRegion
    ram: MemoryRegion | None = None
    find_ram: Callable[[int], int] | None = None
    board: str | None = None  # whose memory map placed it (None: the user's regions and no known board)
    # Known boards with more free flash after the image, when image_board chose this one
    # (the hint of check_flash's error).
    roomier: tuple[str, ...] = ()

    def ram_for(self, size: int) -> int:
        """Address of ``size`` bytes of RAM for the instrumentation's data."""
        if self.ram is None:
            assert self.find_ram is not None
            return self.find_ram(size)
        at = (self.ram.end - size) & ~(DATA_ALIGN - 1)
        if size > self.ram.size or at < self.ram.start:
            raise AnvilError(f"no room for {size} bytes of instrumentation data in RAM {self.ram} "
                             f"({self.ram.size} bytes); give --ram-region START:SIZE or fewer/smaller tool arrays")
        return at

    def check_flash(self, end: int) -> None:
        """A one-line error unless the code ending at ``end`` fits the free flash."""
        if end > self.flash.end:
            where = f"{self.board}'s flash" if self.board is not None else "flash"
            other = f"--board {self.roomier[0]} (more flash), " if self.roomier else ""
            raise AnvilError(f"no room for {end - self.flash.start} bytes of instrumented code in {where} "
                             f"{self.flash} ({self.flash.size} bytes free after the image); give {other}"
                             "--flash-region START:SIZE or instrument fewer procedures (--only)")


def image_board(binary: Binary, name: str | None = None) -> Board | None:
    """The board the image is for: the one called ``name`` (``--board``), or else the known
    board that fits it best, or None.

    A board fits when its CPU runs what the build attributes say the image uses (its
    architecture, the DSP extension, a single- or double-precision FPU), every byte the
    program headers load (by load address and by address) lies in its flash or one of its
    RAMs, and the initial stack pointer (the word where its core reads the vector table,
    when the image has one there) lies in one of its RAMs. Of the boards that fit, the best
    is the one whose CPU the build attributes name (Tag_CPU_name, e.g. ``cortex-m4``), then
    one whose CPU has the architecture they name (Tag_CPU_arch), then one whose RAM ends
    where the stack starts (a linker script's usual stack top), then the first in BOARDS.
    When none fits, the CPU is not asked; when none fits still, the first board whose flash
    holds the image's lowest load address, ranked the same way.
    """
    if name is not None:
        return named_board(name)
    loads = _loads(binary)
    lowest = min((load.paddr for load in loads if load.filesz), default=None)
    if lowest is None:
        return None
    cpu, arch, dsp, fpu = _cpu_attributes(binary)

    def stack_top(target: Board) -> int | None:
        return vector_table_sp(binary, loads, target)

    def fits(target: Board) -> bool:
        if outside(loads, target):
            return False
        top = stack_top(target)
        return top is None or any(bank.start < top <= bank.end for bank in target.ram_banks)

    def rank(target: Board) -> tuple[bool, bool, bool]:
        top = stack_top(target)
        return (target.cpu != cpu, target.features.arch != arch,
                not any(top == bank.end for bank in target.ram_banks))

    fitting = [b for b in BOARDS.values() if fits(b)]
    fitting = ([b for b in fitting if b.features.runs(arch, dsp, fpu)] or fitting
               or [b for b in BOARDS.values() if lowest in b.flash])
    # min keeps the first of equal ranks: an image that fits AN386 and AN500 alike (same
    # architecture, same stack top, no double precision) is placed for AN386, one that fits
    # AN521 and AN524 for AN521.
    return min(fitting, key=rank, default=None)


def outside(loads: list[Load], target: Board) -> list[MemoryRegion]:
    """What ``loads`` put (by load address or by address) where ``target`` has no memory:
    an image linked or instrumented for a board with more, which QEMU's model of this one
    would load into nothing (writes there vanish, reads give 0)."""
    memories = (target.flash, target.ram, *target.ram_banks)
    return [MemoryRegion(start, load.memsz) for load in loads if load.memsz for start in {load.paddr, load.vaddr}
            if not any(start in m and start + load.memsz <= m.end for m in memories)]


def check_runs_on(image: bytes, target: Board) -> None:
    """A one-line error unless every byte ``image`` loads lies in ``target``'s memories."""
    missing = outside(loads_of(image), target)
    if missing:
        raise AnvilError(f"the image loads {missing[0]}, where {target.name} has no memory: it was linked or "
                         f"instrumented for another board (anvil instrument --board {target.name} places it "
                         "for this one)")


def vector_table_sp(binary: Binary, loads: list[Load], target: Board) -> int | None:
    """The initial stack pointer ``target``'s core would load from the image: the word its
    file bytes hold at the board's vector table, or None when they hold none there."""
    at = target.vector_table
    for load in loads:
        if load.filesz >= 4 and load.paddr <= at <= load.paddr + load.filesz - 4:
            return struct.unpack_from("<I", binary.read(load.vaddr + at - load.paddr, 4))[0] & ~3
    return None


def _cpu_attributes(binary: Binary) -> tuple[str | None, int | None, bool, str]:
    """What the build attributes say of the image's CPU: its name (Tag_CPU_name, lower case)
    and architecture (Tag_CPU_arch), each None when they do not; whether it uses the DSP
    extension (ARMv7E-M, or Tag_DSP_extension); its FPU (as boards.Core: "" when there is no
    Tag_FP_arch, "sp" when Tag_ABI_HardFP_use says single precision only, else "dp")."""
    section = ELFFile(io.BytesIO(binary.data)).get_section_by_name(".ARM.attributes")
    found: dict[str, object] = {}
    try:
        for sub in section.iter_subsections() if section is not None else ():
            for subsub in sub.iter_subsubsections():
                for attr in subsub.iter_attributes():
                    found.setdefault(attr.tag, attr.value)
    except Exception:  # pyelftools' parser fails in many ways on bad bytes; elf_loader has reported those
        pass
    name, arch = found.get("TAG_CPU_NAME"), found.get("TAG_CPU_ARCH")
    dsp = arch == 13 or found.get("TAG_DSP_EXTENSION") == 1
    fpu = "" if not found.get("TAG_FP_ARCH") else "sp" if found.get("TAG_ABI_HARDFP_USE") == 1 else "dp"
    return (str(name).lower() if name is not None else None), (arch if isinstance(arch, int) else None), dsp, fpu


def place(binary: Binary, flash: MemoryRegion | None, ram: MemoryRegion | None,
          board_name: str | None = None) -> Placement:
    """Work out the free flash and RAM of ``binary`` (the user's regions, when given, win)
    on its board (``board_name``, else image_board's choice)."""
    loads = _loads(binary)
    lowest = min((load.paddr for load in loads if load.filesz), default=None)
    if lowest is None:
        raise AnvilError("the image loads nothing (no PT_LOAD with file bytes)")
    board = image_board(binary, board_name)
    if board is not None and lowest not in board.flash:
        if board_name is not None:
            raise AnvilError(f"the image at {lowest:#x} is not in {board.name}'s flash {board.flash}: "
                             "link it for that board, or give --flash-region START:SIZE")
        board = None
    if flash is None:
        if board is None:
            raise AnvilError(f"the image at {lowest:#x} is not in a known board's flash: give --flash-region "
                             "START:SIZE for the instrumented code")
        flash = free_flash(board.flash, loads)
    else:
        for load in loads:
            for start in {load.paddr, load.vaddr}:
                if load.memsz and start < flash.end and flash.start < start + load.memsz:
                    raise AnvilError(f"--flash-region {flash} overlaps the image's contents at {start:#x}")
    if ram is not None:
        for load in loads:
            if load.memsz and load.vaddr < ram.end and ram.start < load.vaddr + load.memsz:
                raise AnvilError(f"RAM region {ram} overlaps the image's data at {load.vaddr:#x}")
        return Placement(flash, ram, board=board.name if board is not None else None)
    roomier = _roomier(board, loads, flash) if board is not None and board_name is None else ()
    return Placement(flash, find_ram=RamUse(binary, board, loads).place,
                     board=board.name if board is not None else None, roomier=roomier)


def _roomier(chosen: Board, loads: list[Load], flash: MemoryRegion) -> tuple[str, ...]:
    """The known boards other than ``chosen`` whose flash holds every byte the image loads
    there and leaves more free after it than ``flash``, the roomiest first."""
    placed = [(load.paddr, load.paddr + load.filesz) for load in loads if load.filesz and load.paddr in chosen.flash]
    others = []
    for target in BOARDS.values():
        if target.name == chosen.name or not all(lo in target.flash and hi <= target.flash.end for lo, hi in placed):
            continue
        free = free_flash(target.flash, loads)
        if free.size > flash.size:
            others.append((-free.size, target.name))
    return tuple(name for _, name in sorted(others))


def free_flash(memory: MemoryRegion, loads: list[Load]) -> MemoryRegion:
    """The flash after the last byte any PT_LOAD puts in ``memory``, by load address or
    by address (whole memory sizes: a loader zero-fills the rest of a segment, and QEMU
    refuses to start when two segments overlap)."""
    used = [start + load.memsz for load in loads if load.memsz for start in (load.paddr, load.vaddr)
            if start in memory]
    start = (max(used, default=memory.start) + ALIGN - 1) & ~(ALIGN - 1)
    return MemoryRegion(start, max(0, memory.end - start))


class RamUse:
    """The RAM an image may touch on a board, and where new data can go that it never touches.

    Touched: every PT_LOAD's RAM (by address and by load address); the heap, from its
    start up to its limit or, with none named, up to the stack (every heap the linker
    script names: HEAP_SYMBOLS); each stack (the one the core starts on, and the one
    SYS_HEAPINFO hands out when the image asks for it), from its top down to its limit
    or, with none named, down to the heap. A heap or a stack
    never leaves its RAM bank (past a bank's end lie its mirror or nothing: a program
    that grew that far would already fail). Limits are trusted: a linker script's
    (``__HeapLimit``, ``__StackLimit``, ST's ``_estack - _Min_Stack_Size``) and
    SYS_HEAPINFO's.
    """

    def __init__(self, binary: Binary, board: Board | None, loads: list[Load]) -> None:
        self.board = board
        self.loads = loads
        self.banks = board.ram_banks if board is not None else ()
        symbols = _symbol_values(binary)
        st_limit = None  # ST-style scripts: the heap stops at the stack's reserve below _estack
        if "_estack" in symbols and "_Min_Stack_Size" in symbols:
            st_limit = symbols["_estack"] - symbols["_Min_Stack_Size"]
        #: Each heap: where it starts -> where it stops (None: up to the stack above it, or its bank's end).
        self.heaps: dict[int, int | None] = {}
        for start, limit in HEAP_SYMBOLS:
            if start in symbols and symbols[start] not in self.heaps:
                self.heaps[symbols[start]] = symbols.get(limit) if limit else st_limit
        if not self.heaps:  # no heap named: it would start after the highest RAM the image loads
            in_ram = [load.vaddr + load.memsz for load in loads if load.memsz and self._bank(load.vaddr)]
            if in_ram:
                self.heaps[max(in_ram)] = None
        # The first named (CMSIS's, picolibc's, ..., newlib's): what the rule of no known board uses.
        self.heap_start, self.heap_limit = next(iter(self.heaps.items()), (None, None))
        self.stack_limit = next((symbols[n] for n in STACK_LIMIT_SYMBOLS if n in symbols), st_limit)
        self.stack_top = self._initial_sp(binary, symbols)
        self.asks_heapinfo = board is not None and any(
            ins.is_syscall and ins.mnemonic == "bkpt" and constant_before(ins, 0) == SYS_HEAPINFO
            for proc in binary.procedures for ins in proc.instructions())

    def _bank(self, address: int) -> MemoryRegion | None:
        return next((bank for bank in self.banks if address in bank), None)

    def _initial_sp(self, binary: Binary, symbols: dict[str, int]) -> int | None:
        """The stack pointer the core starts with: word 0 of the vector table where the board
        reads it, or else the linker script's stack top."""
        top = vector_table_sp(binary, self.loads, self.board) if self.board is not None else None
        return top if top is not None else next((symbols[n] for n in STACK_TOP_SYMBOLS if n in symbols), None)

    def touched(self, extra: MemoryRegion | None = None) -> list[MemoryRegion]:
        """What the image may touch when ``extra`` is loaded with it (as a PT_LOAD: it
        changes what SYS_HEAPINFO answers)."""
        regions = [MemoryRegion(start, load.memsz) for load in self.loads if load.memsz
                   for start in {load.vaddr, load.paddr} if self._bank(start)]
        stacks = [(self.stack_top, self.stack_limit)]
        heaps = dict(self.heaps)
        if self.asks_heapinfo:
            assert self.board is not None
            info = self.board.heapinfo(self._loaded(extra))
            if info.stack_base:
                stacks.append((info.stack_base, info.stack_limit or None))
            if info.heap_limit:
                heaps = {start: info.heap_limit if limit is None else limit for start, limit in heaps.items()}
        for start, heap_limit in heaps.items():
            heap_bank = self._bank(start)
            if heap_bank is None:
                continue
            # Up to its limit, else up to the stack that starts above it in its bank.
            tops = [top for top, _ in stacks if top is not None and start < top <= heap_bank.end]
            end = heap_limit if heap_limit is not None else min(tops, default=heap_bank.end)
            regions.append(MemoryRegion(start, max(0, min(end, heap_bank.end) - start)))
        for top, limit in stacks:
            bank = self._bank(top - 1) if top else None
            if bank is None:
                continue
            if limit is None:  # down to the highest heap below it in its bank, else to the bank's start
                limit = max((heap for heap in heaps if bank.start <= heap < top), default=bank.start)
            limit = max(limit, bank.start)
            regions.append(MemoryRegion(limit, max(0, top - limit)))
        return [r for r in regions if r.size]

    def _loaded(self, extra: MemoryRegion | None) -> list[MemoryRegion]:
        loaded = [MemoryRegion(load.paddr, load.memsz) for load in self.loads if load.memsz]
        return loaded + [extra] if extra is not None else loaded

    def fits(self, candidate: MemoryRegion) -> bool:
        """Whether ``candidate`` is untouched by the image loaded with it, and leaves
        SYS_HEAPINFO's heap limit and stack base as they were (same heap, same stack)."""
        if any(r.start < candidate.end and candidate.start < r.end for r in self.touched(candidate)):
            return False
        if self.asks_heapinfo:
            assert self.board is not None
            before, after = self.board.heapinfo(self._loaded(None)), self.board.heapinfo(self._loaded(candidate))
            return (before.heap_limit, before.stack_base) == (after.heap_limit, after.stack_base)
        return True

    def candidates(self, size: int) -> list[MemoryRegion]:
        """Every place for ``size`` bytes at an end of a stretch of RAM between what the
        image touches (or of a bank) that it does not touch."""
        edges = self.touched()
        found: list[MemoryRegion] = []
        bottoms = {*(bank.start for bank in self.banks), *(r.end for r in edges)}
        tops = {*(bank.end for bank in self.banks), *(r.start for r in edges)}
        starts = {(a + DATA_ALIGN - 1) & ~(DATA_ALIGN - 1) for a in bottoms} | {(a - size) & ~(DATA_ALIGN - 1)
                                                                              for a in tops}
        for start in sorted(starts):
            region, bank = MemoryRegion(start, size), self._bank(start)
            if bank is not None and region.end <= bank.end and self.fits(region):
                found.append(region)
        return found

    def place(self, size: int) -> int:
        """Where ``size`` bytes of instrumentation data go: in a RAM bank the image does not
        touch at all if there is one (the largest; its start), else at the lowest place it
        does not touch; or a one-line error."""
        if not self.banks:
            return self._between_limits(size)
        found = self.candidates(size)
        if not found:
            raise AnvilError(f"no room for {size} bytes of instrumentation data in RAM that neither the heap nor "
                             "the stack reaches: give --ram-region START:SIZE or fewer/smaller tool arrays")

        def rank(region: MemoryRegion) -> tuple[bool, int, int]:
            bank = self._bank(region.start)
            assert bank is not None
            shared = any(r.start < bank.end and bank.start < r.end for r in self.touched(region))
            return shared, -bank.size, region.start
        return self._clear_of_program_pages(min(found, key=rank))

    def _clear_of_program_pages(self, region: MemoryRegion) -> int:
        """Where ``region`` (a place that fits) starts, moved up by whole pages where it
        still fits so that its pages share as few TLB entries (TLB_ENTRIES) as may with
        the program's pages: its data, the heap's start and the stack's top (weight 4),
        and what it loads elsewhere, constants and literal pools in flash (weight 1).
        The first shift with the least weight."""
        hot = {page for load in self.loads if load.memsz and self._bank(load.vaddr)
               for page in _pages(load.vaddr, load.memsz)}
        hot |= {page for start in self.heaps for page in _pages(start, HOT_SPAN)}
        if self.stack_top:
            hot |= set(_pages(self.stack_top - HOT_SPAN, HOT_SPAN))
        weights: dict[int, int] = {}
        for load in self.loads:
            for page in _pages(load.vaddr, load.memsz) if load.memsz else ():
                weights[page % TLB_ENTRIES] = max(weights.get(page % TLB_ENTRIES, 0), 1)
        for page in hot:
            weights[page % TLB_ENTRIES] = 4

        def shared(start: int) -> int:
            return sum(weights.get(page % TLB_ENTRIES, 0) for page in _pages(start, region.size))

        best, fewest = region.start, shared(region.start)
        for shift in range(TLB_PAGE, TLB_ENTRIES * TLB_PAGE, TLB_PAGE):
            if not fewest:
                break
            moved = MemoryRegion(region.start + shift, region.size)
            bank = self._bank(moved.start)
            if bank is None or moved.end > bank.end:
                break
            count = shared(moved.start)
            if count < fewest and self.fits(moved):
                best, fewest = moved.start, count
        return best

    def _between_limits(self, size: int) -> int:
        """No board known: the top of the RAM between the heap's start and its limit (or
        the stack's), as the linker script names them."""
        limit = self.heap_limit if self.heap_limit is not None else self.stack_limit
        if self.heap_start is None or limit is None:
            raise AnvilError("cannot tell where the heap starts and the stack ends (the image is on no known board, "
                             "and has no __HeapLimit/__StackLimit and end/_end symbols): give --ram-region "
                             "START:SIZE for the instrumentation data")
        return Placement(MemoryRegion(0, 0), MemoryRegion(self.heap_start, max(0, limit - self.heap_start))
                         ).ram_for(size)


def _pages(start: int, size: int) -> range:
    """The TLB pages (numbers) of [start, start + size)."""
    return range(start // TLB_PAGE, (start + max(size, 1) - 1) // TLB_PAGE + 1)


def _loads(binary: Binary) -> list[Load]:
    """Each PT_LOAD."""
    return loads_of(binary.data)


def loads_of(data: bytes) -> list[Load]:
    """Each PT_LOAD of the ELF file ``data``."""
    elf = ELFFile(io.BytesIO(data))
    return [Load(s["p_vaddr"], s["p_paddr"], s["p_filesz"], s["p_memsz"])
            for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]


def _symbol_values(binary: Binary) -> dict[str, int]:
    """Every defined symbol's value (linker-script symbols are absolute or section-relative
    NOTYPE symbols, which the IR's symbol map leaves out)."""
    symtab = ELFFile(io.BytesIO(binary.data)).get_section_by_name(".symtab")
    if symtab is None:
        return {}
    return {s.name: s["st_value"] for s in symtab.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}

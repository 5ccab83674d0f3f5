"""The boards ``anvil`` knows: their memory maps (for placing instrumentation in
Cortex-M images) and how to run an image on QEMU's model of them.

Both MPS2 boards have the same map in QEMU 7.2 (hw/arm/mps2.c, the monitor's ``info
mtree``): 4 MiB of code memory at 0 (SSRAM1, where the core reads the vector table;
treated as flash), and three RAMs: 16 KiB of block RAM at 0x01000000, 4 MiB of SRAM
at 0x20000000 (SSRAM2/3) and 16 MiB of PSRAM at 0x21000000 (the mirrors of SSRAM1 and
SSRAM2/3 at +4 MiB are not listed: writing there writes the original); five CMSDK APB
UARTs, UART0 at 0x40004000 (QEMU's ``-serial`` options connect them in order).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import AnvilError


@dataclass(frozen=True)
class MemoryRegion:
    """[start, start + size) of the target's address space."""

    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size

    def __contains__(self, address: int) -> bool:
        return self.start <= address < self.end

    def __str__(self) -> str:
        return f"{self.start:#x}..{self.end:#x}"


@dataclass(frozen=True)
class HeapInfo:
    """An answer to the semihosting SYS_HEAPINFO call: the heap's base and limit, the
    stack's base (its initial pointer) and limit; 0 where the host does not know."""

    heap_base: int
    heap_limit: int
    stack_base: int
    stack_limit: int


@dataclass(frozen=True)
class Board:
    """A board: its QEMU machine, CPU, memories and UARTs.

    ``flash``: where the code goes; ``ram``: the main RAM; ``ram_banks``: every RAM the
    board has (``ram`` among them), where instrumentation data may go;
    ``heapinfo_ram``: the RAM QEMU's SYS_HEAPINFO divides between heap and stack (its
    largest RAM region); ``vector_table``: where the core reads the initial stack pointer
    and the reset vector.
    """

    name: str
    cpu: str
    flash: MemoryRegion
    ram: MemoryRegion
    uarts: tuple[int, ...]  # MMIO bases of UART0, UART1, ... (QEMU's serial ports 0, 1, ...)
    description: str
    ram_banks: tuple[MemoryRegion, ...] = ()
    heapinfo_ram: MemoryRegion | None = None
    vector_table: int = 0

    def heapinfo(self, loaded: Iterable[MemoryRegion]) -> HeapInfo:
        """What QEMU 7.2 answers to SYS_HEAPINFO for an image whose program headers load
        ``loaded`` (each PT_LOAD's load address and memory size: QEMU zero-fills past the
        file bytes, so the whole of it counts): the largest stretch of ``heapinfo_ram``
        no PT_LOAD touches (the first of equal ones) is both the heap and the stack, the
        stack growing down from its top (semihosting/arm-compat-semi.c, hw/core/loader.c
        rom_find_largest_gap_between)."""
        if self.heapinfo_ram is None:
            return HeapInfo(0, 0, 0, 0)
        ram = self.heapinfo_ram
        best = MemoryRegion(ram.start, 0)
        at = ram.start
        for region in sorted(r for r in loaded if r.size and r.start < ram.end and ram.start < r.end):
            if region.start > at and region.start - at > best.size:
                best = MemoryRegion(at, region.start - at)
            at = max(at, region.end)
        if ram.end > at and ram.end - at > best.size:
            best = MemoryRegion(at, ram.end - at)
        return HeapInfo(best.start, best.end, best.end, best.start)

    @property
    def uart(self) -> int:
        """The MMIO base of UART0."""
        return self.uarts[0]

    def uart_port(self, base: int) -> int:
        """The number of the UART at ``base`` (QEMU's serial port), or a one-line error."""
        if base not in self.uarts:
            raise AnvilError(f"{self.name} has no UART at {base:#x} (UARTs at "
                             f"{', '.join(f'{u:#x}' for u in self.uarts)}): instrument with another --uart-base")
        return self.uarts.index(base)

    def qemu_command(self, image: str, semihosting: bool = True, serial: tuple[int, str] | None = None,
                     icount: int | None = None) -> list[str]:
        """qemu-system-arm running ``image``: console and exit through semihosting, no UART on stdio.

        ``serial``: (UART base, QEMU character device) connects that UART, e.g.
        ``(0x40004000, "file:/tmp/x/uart")``; the others stay unconnected.
        ``icount``: virtual time advances 2**icount ns per instruction (``-icount
        shift=N,sleep=off``) instead of with the host's clock, so timers (SysTick) fire at
        the same instruction in every run, and between any two instructions: QEMU ends a
        translation block early to deliver an interrupt on time.
        """
        ports = ["none"]
        if serial is not None:
            base, device = serial
            # "none" takes no serial port number in QEMU: the UARTs before it get "null" (output dropped).
            ports = ["null"] * self.uart_port(base) + [device]
        cmd = ["qemu-system-arm", "-M", self.name, "-nographic", "-monitor", "none",
               *(arg for port in ports for arg in ("-serial", port)), "-no-reboot"]
        if semihosting:
            cmd += ["-semihosting-config", "enable=on,target=native"]
        if icount is not None:
            cmd += ["-icount", f"shift={icount},sleep=off"]
        return [*cmd, "-kernel", image]


_MPS2_FLASH = MemoryRegion(0x00000000, 4 << 20)
_MPS2_RAM = MemoryRegion(0x20000000, 4 << 20)
_MPS2_PSRAM = MemoryRegion(0x21000000, 16 << 20)
_MPS2_RAM_BANKS = (MemoryRegion(0x01000000, 16 << 10), _MPS2_RAM, _MPS2_PSRAM)  # block RAM, SSRAM2/3, PSRAM
_MPS2_UARTS = (0x40004000, 0x40005000, 0x40006000, 0x40007000, 0x40009000)  # QEMU 7.2 hw/arm/mps2.c
DEFAULT_UART_BASE = _MPS2_UARTS[0]  # ReHost over a UART, unless --uart-base says otherwise
UART_SPAN = 0x14  # the registers the ReHost UART channel uses: DATA, STATE, CTRL, INTSTATUS, BAUDDIV

BOARDS: dict[str, Board] = {
    "mps2-an385": Board("mps2-an385", "cortex-m3", _MPS2_FLASH, _MPS2_RAM, _MPS2_UARTS,
                        "ARM MPS2 with AN385 (Cortex-M3), QEMU machine mps2-an385",
                        ram_banks=_MPS2_RAM_BANKS, heapinfo_ram=_MPS2_PSRAM),
    "mps2-an386": Board("mps2-an386", "cortex-m4", _MPS2_FLASH, _MPS2_RAM, _MPS2_UARTS,
                        "ARM MPS2 with AN386 (Cortex-M4F), QEMU machine mps2-an386",
                        ram_banks=_MPS2_RAM_BANKS, heapinfo_ram=_MPS2_PSRAM),
}


def board(name: str) -> Board:
    """The board called ``name``, or a one-line error listing the known ones."""
    try:
        return BOARDS[name]
    except KeyError:
        raise AnvilError(f"unknown board '{name}' (boards: {', '.join(sorted(BOARDS))})") from None


def parse_region(text: str, what: str) -> MemoryRegion:
    """``START:SIZE`` (numbers in C syntax; SIZE may end in K or M) as a region."""
    start, sep, size = text.partition(":")
    try:
        if not sep:
            raise ValueError
        scale = 1
        if size[-1:].upper() in ("K", "M"):
            scale = 1024 if size[-1].upper() == "K" else 1 << 20
            size = size[:-1]
        region = MemoryRegion(int(start, 0), int(size, 0) * scale)
    except ValueError:
        raise AnvilError(f"--{what}-region '{text}' is not START:SIZE (e.g. 0x20300000:64K)") from None
    if region.size <= 0 or region.start < 0 or region.end > 1 << 32:
        raise AnvilError(f"--{what}-region '{text}' is empty or outside the 32-bit address space")
    return region


def parse_uart_base(text: str) -> int:
    """``--uart-base ADDR`` (C syntax): a word-aligned MMIO address with the UART's registers below 4 GiB."""
    try:
        base = int(text, 0)
    except ValueError:
        raise AnvilError(f"--uart-base '{text}' is not an address (e.g. {DEFAULT_UART_BASE:#x})") from None
    if base < 0 or base + UART_SPAN > 1 << 32 or base % 4:
        raise AnvilError(f"--uart-base {text} is out of range: a word-aligned address up to "
                         f"{(1 << 32) - UART_SPAN:#x} (the UART's registers below 4 GiB)")
    return base


MAX_ICOUNT_SHIFT = 10  # QEMU's limit: at most 1024 ns of virtual time per instruction


def parse_icount(text: str) -> int:
    """``--icount SHIFT``: QEMU's ``-icount shift=SHIFT``, 0 to MAX_ICOUNT_SHIFT."""
    try:
        shift = int(text, 10)
    except ValueError:
        shift = -1
    if not 0 <= shift <= MAX_ICOUNT_SHIFT:
        raise AnvilError(f"--icount '{text}' is not a shift from 0 to {MAX_ICOUNT_SHIFT} "
                         "(2**SHIFT ns of virtual time per instruction)")
    return shift

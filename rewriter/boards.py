"""The boards ``anvil`` knows: their memory maps (for placing instrumentation in
Cortex-M images) and how to run an image on QEMU's model of them.

Every ARMv7-M and ARMv8-M mainline machine of QEMU 7.2 that runs a plain bare-metal
image (docs/boards.md has the table, docs/decisions/0091-more-boards.md how each was
checked). The maps are what QEMU 7.2 builds (hw/arm/mps2.c, mps2-tz.c, stellaris.c,
stm32f205_soc.c, stm32f405_soc.c, stm32f100_soc.c; the monitor's ``info mtree`` shows
them, tests/test_more_boards.py checks every region against it):

- MPS2 AN385/AN386: 4 MiB of code memory at 0 (SSRAM1, where the core reads the vector
  table; treated as flash), 16 KiB of block RAM at 0x01000000, 4 MiB of SRAM at
  0x20000000 (SSRAM2/3) and 16 MiB of PSRAM at 0x21000000 (mirrors of SSRAM1 and
  SSRAM2/3 at +4 MiB are not listed: writing there writes the original). AN500
  (Cortex-M7): the same but no block RAM, and the PSRAM at 0x60000000. AN511: 256 KiB
  of block RAM at 0 holds the vector table and code, 8 MiB SSRAM1 at 0x00400000, 128 KiB
  SRAM at 0x20000000, 4 MiB SSRAM2/3 at 0x20400000, PSRAM at 0x21000000. All have five
  CMSDK APB UARTs (QEMU's ``-serial`` options connect them in order).
- The TrustZone boards (AN505, AN521, AN524, AN547) start Secure, reading the vector
  table at 0x10000000 (the SSE's INITSVTOR; AN547's is 0, the same ITCM): an image runs
  from the Secure aliases (bit 28 set) of the code memory, RAMs and UARTs; the Non-secure
  aliases are behind protection controllers that block Secure code's accesses there.
- Stellaris LM3S6965/LM3S811: flash at 0, SRAM at 0x20000000, PL011 UARTs.
- STM32F205 (netduino2), STM32F405 (netduinoplus2), STM32F100 (stm32vldiscovery):
  flash at 0x08000000 (aliased at 0, where the core reads the vector table), SRAM at
  0x20000000, STM32 USARTs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import AnvilError

# The kinds of UART a board has (Board.uart_kind).
CMSDK_UART = "CMSDK APB UARTs"
PL011 = "PL011 UARTs"
STM32_USART = "STM32 USARTs"


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
class Core:
    """What a CPU runs: its architecture (the build attributes' Tag_CPU_arch value), whether
    it has the DSP extension, and its FPU ("": none, "sp": single precision, "dp": double too)."""

    arch: int
    dsp: bool
    fpu: str

    def runs(self, arch: int | None, dsp: bool, fpu: str) -> bool:
        """Whether an image built for ``arch`` that uses the DSP extension (``dsp``) and an FPU
        (``fpu``, as above) can run here: a later M-profile architecture runs an earlier one's."""
        order = (10, 13, 17, 21)  # ARMv7-M, ARMv7E-M, ARMv8-M.mainline, ARMv8.1-M.mainline
        if arch in order and self.arch in order and order.index(arch) > order.index(self.arch):
            return False
        levels = {"": 0, "sp": 1, "dp": 2}
        return (self.dsp or not dsp) and levels[fpu] <= levels[self.fpu]


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
    largest RAM region, in the CPU's Non-secure view); ``vector_table``: where in the
    image the core reads the initial stack pointer and the reset vector (through an alias
    on STM32: the flash at 0x08000000 shows at 0 too).
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
    uart_kind: str = CMSDK_UART  # ReHost's --transport uart drives CMSDK APB UARTs only
    secure: bool = False  # TrustZone: the core starts Secure; addresses are the Secure aliases
    core: Core | None = None  # None: CORES[cpu]; else this one (a CPU QEMU builds without FPU or DSP)

    @property
    def features(self) -> Core:
        """What the board's CPU runs."""
        return self.core if self.core is not None else CORES[self.cpu]

    @property
    def transports(self) -> tuple[str, ...]:
        """The ReHost transports that work on this board (semihosting works everywhere)."""
        return ("semihosting", "uart") if self.uart_kind == CMSDK_UART and self.uarts else ("semihosting",)

    def check_transport(self, transport: str) -> None:
        """A one-line error unless ReHost's ``transport`` works on this board."""
        if transport not in self.transports:
            raise AnvilError(f"{self.name} supports --transport {', '.join(self.transports)} only: its UARTs are "
                             f"{self.uart_kind}, and ReHost drives only CMSDK APB UARTs")

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


def _k(size: int) -> int:
    """``size`` KiB in bytes."""
    return size << 10


def _m(size: int) -> int:
    """``size`` MiB in bytes."""
    return size << 20


# Each board CPU's core (QEMU 7.2's models): ARMv7-M, ARMv7E-M, ARMv8-M.mainline,
# ARMv8.1-M.mainline as the build attributes name them (Tag_CPU_arch).
CORES: dict[str, Core] = {"cortex-m3": Core(10, False, ""), "cortex-m4": Core(13, True, "sp"),
                          "cortex-m7": Core(13, True, "dp"), "cortex-m33": Core(17, True, "sp"),
                          "cortex-m55": Core(21, True, "dp")}


_MPS2_FLASH = MemoryRegion(0x00000000, _m(4))
_MPS2_RAM = MemoryRegion(0x20000000, _m(4))
_MPS2_PSRAM = MemoryRegion(0x21000000, _m(16))
_MPS2_RAM_BANKS = (MemoryRegion(0x01000000, _k(16)), _MPS2_RAM, _MPS2_PSRAM)  # block RAM, SSRAM2/3, PSRAM
_MPS2_UARTS = (0x40004000, 0x40005000, 0x40006000, 0x40007000, 0x40009000)  # QEMU 7.2 hw/arm/mps2.c
_AN500_PSRAM = MemoryRegion(0x60000000, _m(16))
_AN511_SRAM = MemoryRegion(0x20000000, _k(128))
_AN511_PSRAM = MemoryRegion(0x21000000, _m(16))
# TrustZone boards: Secure aliases. SSRAM1 (code) at 0x10000000, SSRAM2 and SSRAM3 (2 MiB each,
# one after the other) at 0x38000000, the SSE's SRAM at 0x30000000, PSRAM (no gate) at 0x80000000.
_TZ_CODE = MemoryRegion(0x10000000, _m(4))
_TZ_SSRAM = MemoryRegion(0x38000000, _m(4))
_TZ_PSRAM = MemoryRegion(0x80000000, _m(16))
_SSE200_CPU0 = Core(17, False, "")  # CPU 0 of an SSE-200 (AN521, AN524): no FPU, no DSP in QEMU
_MPS3_DDR = MemoryRegion(0x70000000, _m(256))  # the first Secure 256 MiB of the DDR (MPS3)
_STELLARIS_SRAM = MemoryRegion(0x20000000, _k(64))
_LM3S811_SRAM = MemoryRegion(0x20000000, _k(8))
# STM32F2/F4 USART1-3, UART4-5, USART6 (tests/test_more_boards.py finds each in QEMU's map;
# their serial-port order is not needed: ReHost has no channel through them).
_F2_F4_USARTS = (0x40011000, 0x40004400, 0x40004800, 0x40004C00, 0x40005000, 0x40011400)
DEFAULT_UART_BASE = _MPS2_UARTS[0]  # ReHost over a UART, unless --uart-base or the image's board say otherwise
UART_SPAN = 0x14  # the registers the ReHost UART channel uses: DATA, STATE, CTRL, INTSTATUS, BAUDDIV


def _stm32(name: str, cpu: str, flash_size: int, ram_size: int, uarts: tuple[int, ...], description: str) -> Board:
    """An STM32: flash at 0x08000000 (aliased at 0: the core reads the vector table through the alias, so the
    image's table is at 0x08000000), SRAM at 0x20000000 (QEMU's largest RAM: SYS_HEAPINFO's)."""
    ram = MemoryRegion(0x20000000, ram_size)
    return Board(name, cpu, MemoryRegion(0x08000000, flash_size), ram, uarts, description, ram_banks=(ram,),
                 heapinfo_ram=ram, vector_table=0x08000000, uart_kind=STM32_USART)


def _stellaris(name: str, flash_size: int, ram: MemoryRegion, uarts: tuple[int, ...], description: str) -> Board:
    """A Stellaris (Cortex-M3): flash at 0, one SRAM (SYS_HEAPINFO's), PL011 UARTs."""
    return Board(name, "cortex-m3", MemoryRegion(0, flash_size), ram, uarts, description, ram_banks=(ram,),
                 heapinfo_ram=ram, uart_kind=PL011)


def _secure(name: str, cpu: str, flash: MemoryRegion, ram: MemoryRegion, banks: tuple[MemoryRegion, ...],
            heapinfo_ram: MemoryRegion | None, uart0: int, uarts: int, description: str,
            core: Core | None = None) -> Board:
    """A TrustZone board: the image runs Secure from ``flash`` (its vector table at its start,
    INITSVTOR). Its ``uarts`` CMSDK UARTs, 4 KiB apart from ``uart0``, at their Secure aliases
    (behind peripheral protection controllers that leave them to Secure code after reset)."""
    return Board(name, cpu, flash, ram, tuple(uart0 + 0x1000 * i for i in range(uarts)), description,
                 ram_banks=banks, heapinfo_ram=heapinfo_ram, vector_table=flash.start, secure=True, core=core)


# In the order placement prefers boards that fit an image equally well (firmware_placement.image_board):
# the MPS2 boards of old first, a smaller map before a larger one of the same shape.
BOARDS: dict[str, Board] = {b.name: b for b in (
    Board("mps2-an385", "cortex-m3", _MPS2_FLASH, _MPS2_RAM, _MPS2_UARTS,
          "ARM MPS2 with AN385 (Cortex-M3)", ram_banks=_MPS2_RAM_BANKS, heapinfo_ram=_MPS2_PSRAM),
    Board("mps2-an386", "cortex-m4", _MPS2_FLASH, _MPS2_RAM, _MPS2_UARTS,
          "ARM MPS2 with AN386 (Cortex-M4F)", ram_banks=_MPS2_RAM_BANKS, heapinfo_ram=_MPS2_PSRAM),
    Board("mps2-an500", "cortex-m7", _MPS2_FLASH, _MPS2_RAM, _MPS2_UARTS,
          "ARM MPS2 with AN500 (Cortex-M7)", ram_banks=(_MPS2_RAM, _AN500_PSRAM), heapinfo_ram=_AN500_PSRAM),
    Board("mps2-an511", "cortex-m3", MemoryRegion(0, _k(256)), _AN511_SRAM,
          (0x40004000, 0x40005000, 0x4002C000, 0x4002D000, 0x4002E000),
          "ARM MPS2 with AN511 DesignStart (Cortex-M3)",
          ram_banks=(MemoryRegion(0x00400000, _m(8)), _AN511_SRAM, MemoryRegion(0x20400000, _m(4)), _AN511_PSRAM),
          heapinfo_ram=_AN511_PSRAM),
    _secure("mps2-an505", "cortex-m33", _TZ_CODE, _TZ_SSRAM,
            (MemoryRegion(0x30000000, _k(32)), _TZ_SSRAM, _TZ_PSRAM), _TZ_PSRAM, 0x50200000, 5,
            "ARM MPS2 with AN505 (Cortex-M33, TrustZone; the image runs Secure)"),
    _secure("mps2-an521", "cortex-m33", _TZ_CODE, _TZ_SSRAM,
            (MemoryRegion(0x30000000, _k(128)), _TZ_SSRAM, _TZ_PSRAM), _TZ_PSRAM, 0x50200000, 5,
            "ARM MPS2 with AN521 (dual Cortex-M33, TrustZone; the image runs Secure on CPU 0)", _SSE200_CPU0),
    _secure("mps3-an524", "cortex-m33", MemoryRegion(0x10000000, _k(512)), MemoryRegion(0x30000000, _k(128)),
            (MemoryRegion(0x30000000, _k(128)), _MPS3_DDR), None, 0x51303000, 6,
            "ARM MPS3 with AN524 (dual Cortex-M33, TrustZone; the image runs Secure on CPU 0)", _SSE200_CPU0),
    # SYS_HEAPINFO: QEMU takes the largest RAM of the Non-secure view, of two equal ones the
    # first: the ITCM's Non-secure alias at 0 (where the Secure image's code is, at 0x10000000).
    _secure("mps3-an547", "cortex-m55", MemoryRegion(0x10000000, _k(512)), MemoryRegion(0x30000000, _k(512)),
            (MemoryRegion(0x30000000, _k(512)), MemoryRegion(0x31000000, _m(4)), _MPS3_DDR),
            MemoryRegion(0, _k(512)), 0x59303000, 6,
            "ARM MPS3 with AN547 (Cortex-M55, TrustZone; the image runs Secure)"),
    _stellaris("lm3s811evb", _k(64), _LM3S811_SRAM, (0x4000C000, 0x4000D000),
               "Stellaris LM3S811EVB (Cortex-M3)"),
    _stellaris("lm3s6965evb", _k(256), _STELLARIS_SRAM, (0x4000C000, 0x4000D000, 0x4000E000),
               "Stellaris LM3S6965EVB (Cortex-M3; Zephyr's qemu_cortex_m3)"),
    _stm32("stm32vldiscovery", "cortex-m3", _k(128), _k(8), (0x40013800, 0x40004400, 0x40004800),
           "ST STM32VLDISCOVERY (STM32F100, Cortex-M3)"),
    _stm32("netduino2", "cortex-m3", _m(1), _k(128), _F2_F4_USARTS, "Netduino 2 (STM32F205, Cortex-M3)"),
    _stm32("netduinoplus2", "cortex-m4", _m(1), _k(192), (*_F2_F4_USARTS, 0x40007800),
           "Netduino Plus 2 (STM32F405, Cortex-M4F; QEMU's SRAM is 192 KiB in one piece)"),
)}

# QEMU machines that are not in BOARDS, and why (named in the error for them).
REFUSED_BOARDS: dict[str, str] = {
    "microbit": "its nRF51 is a Cortex-M0 (ARMv6-M), whose images Anvil refuses: the instrumentation needs "
                "ARMv7-M (Cortex-M3 and up)",
}


def board(name: str) -> Board:
    """The board called ``name``, or a one-line error listing the known ones."""
    try:
        return BOARDS[name]
    except KeyError:
        if name in REFUSED_BOARDS:
            raise AnvilError(f"board '{name}' is not supported: {REFUSED_BOARDS[name]}") from None
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

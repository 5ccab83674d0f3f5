"""Build the bare-metal Cortex-M firmware samples on demand, cached, and run them under qemu-system-arm.

The programs are ``samples/boards/<name>.c``, linked with ``samples/boards/startup.c``
(vector table and reset code, replacing newlib's crt0) and the board's linker script
``samples/boards/<board>.ld``, against newlib with semihosting (``--specs=rdimon.specs``).
Two boards, both QEMU machines with the same memory map (4 MiB code memory at
0x00000000, 4 MiB SRAM at 0x20000000):

* ``mps2-an385``: Cortex-M3, soft float;
* ``mps2-an386``: Cortex-M4 with the single-precision FPU, hard-float ABI.

Builds are keyed by a hash of the sources, the linker script, the flags and the
compiler's identity, and kept in a cache directory (``<repo>/.cache/boards`` unless the
environment variable ``ANVIL_BOARD_CACHE`` names another).  Writes are atomic
(temporary file, then rename), so concurrent test workers may build the same firmware
at once without harm.

Typical use::

    from tests.support.boards import build_firmware, run_firmware

    elf = build_firmware("crc", "mps2-an385", "-O0")
    stdout, status = run_firmware(elf, "mps2-an385")

Running this module (``python -m tests.support.boards``) builds every program for every
board at -O0 and -O2, runs each and reports the output, exit status and time taken.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rewriter import boards as anvil_boards
from tests.support import build_cache

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
BOARDS_DIR: Path = REPO_ROOT / "samples" / "boards"
STARTUP: Path = BOARDS_DIR / "startup.c"

CC = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"

#: Bump when the way firmware is built changes in a way the cache key cannot see.
_BUILD_SCHEMA = "1"

#: Board (QEMU machine name, also the linker script's stem) -> CPU flags.
BOARDS: dict[str, list[str]] = {
    "mps2-an385": ["-mthumb", "-mcpu=cortex-m3"],
    "mps2-an386": ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
}

#: gcc's CPU flags for the other boards rewriter/boards.py knows (the same sources, linked by
#: samples/boards/board.ld from the board's memory map: build_on_board), for the core QEMU
#: models: the CPU 0 of AN521 and AN524 (an SSE-200's) has neither FPU nor DSP extension;
#: the AN547's Cortex-M55 is built without MVE and low-overhead loops (decision 0091).
M3 = ["-mthumb", "-mcpu=cortex-m3"]
M4F = ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]
MORE_BOARDS: dict[str, list[str]] = {
    "mps2-an500": ["-mthumb", "-mcpu=cortex-m7", "-mfpu=fpv5-d16", "-mfloat-abi=hard"],
    "mps2-an511": M3,
    "mps2-an505": ["-mthumb", "-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"],
    "mps2-an521": ["-mthumb", "-mcpu=cortex-m33+nodsp", "-mfloat-abi=soft"],
    "mps3-an524": ["-mthumb", "-mcpu=cortex-m33+nodsp", "-mfloat-abi=soft"],
    # -fno-branch-count-reg: no ARMv8.1-M low-overhead loops (DLS/LE), which capstone 5 does not decode.
    "mps3-an547": ["-mthumb", "-mcpu=cortex-m55+nomve", "-mfloat-abi=hard", "-fno-branch-count-reg"],
    "lm3s6965evb": M3,
    "lm3s811evb": M3,
    "stm32vldiscovery": M3,
    "netduino2": M3,
    "netduinoplus2": M4F,
}

#: The firmware programs, each ``samples/boards/<name>.c``. (tickmem.c, whose interrupts fall
#: wherever host time puts them, has a test of its own: tests/test_rehost_interrupts.py.)
PROGRAMS: list[str] = ["crc", "sort", "filter", "irq"]

#: Flags common to every build.  ``-nostartfiles``: startup.c replaces rdimon-crt0.o.
BASE_FLAGS: list[str] = ["-g", "-Wall", "-Wextra", "--specs=rdimon.specs"]
COMMON_FLAGS: list[str] = [*BASE_FLAGS, "-nostartfiles"]

LAYOUTS_DIR: Path = BOARDS_DIR / "layouts"

#: Linker scripts in other styles than the boards' own (CMSIS-style: __HeapBase, __HeapLimit,
#: __StackLimit, __StackTop), each with its start-up: name -> (script, sources, flags).
#: newlib: end/_end only, .data loaded straight into RAM, startup.c; st: ST's _estack,
#: _Min_Heap_Size, _Min_Stack_Size and a heap that stops at the stack's reserve; rdimon:
#: the newlib script started by newlib's rdimon-crt0 (stack and heap limit from SYS_HEAPINFO).
#: The newlib script's ENTRY(_start) names rdimon-crt0's symbol: with startup.c the ELF
#: entry is not the reset handler (the core starts at the vector table's, and so must Anvil).
LAYOUTS: dict[str, tuple[Path, list[Path], list[str]]] = {
    "newlib": (LAYOUTS_DIR / "newlib.ld", [STARTUP],
               ["-nostartfiles", "-DSTACK_TOP=__stack"]),
    "st": (LAYOUTS_DIR / "st.ld", [STARTUP, LAYOUTS_DIR / "st_sbrk.c"], ["-nostartfiles", "-DSTACK_TOP=_estack"]),
    "rdimon": (LAYOUTS_DIR / "newlib.ld", [LAYOUTS_DIR / "vectors.c"], []),
}

#: Optimisation levels build_firmware accepts.
OPT_LEVELS: tuple[str, ...] = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og")


class FirmwareBuildError(RuntimeError):
    """A firmware image could not be built (unknown name or board, missing toolchain, compiler error)."""


def cache_dir() -> Path:
    """Return the cache directory for built firmware, creating it if needed."""
    return build_cache.cache_dir("ANVIL_BOARD_CACHE", "boards")


def _require_tool(name: str) -> str:
    """Return the full path of an executable, or raise a FirmwareBuildError naming the fix."""
    return build_cache.require_tool(name, FirmwareBuildError, "install gcc-arm-none-eabi, libnewlib-arm-none-eabi "
                                    "and qemu-system-arm with scripts/bootstrap.sh")


def _cache_key(*parts: bytes | str) -> str:
    """Hash the build inputs (with the schema and the compiler's identity) into a short hex key."""
    return build_cache.cache_key(_BUILD_SCHEMA, build_cache.compiler_identity(_require_tool(CC)), *parts)


def linker_script(board: str) -> Path:
    """Return the linker script of a board."""
    if board not in BOARDS:
        raise FirmwareBuildError(f"unknown board {board!r}; known: {', '.join(BOARDS)}")
    return BOARDS_DIR / f"{board}.ld"


def firmware_flags(board: str, opt: str = "-O2") -> list[str]:
    """Return the gcc flags (without sources and output) build_firmware uses for a board and level."""
    script = linker_script(board)  # rejects unknown boards
    if opt not in OPT_LEVELS:
        raise FirmwareBuildError(f"unknown optimisation level {opt!r}; known: {', '.join(OPT_LEVELS)}")
    return [*BOARDS[board], opt, *COMMON_FLAGS, "-L", str(BOARDS_DIR), "-T", str(script)]


def build_firmware(name: str, board: str, opt: str = "-O2", extra: Sequence[str] = ()) -> Path:
    """Build ``samples/boards/<name>.c`` for a board at an optimisation level (cached); return the ELF's path.
    ``extra``: more gcc flags, e.g. ``-DREPEAT=500`` for a benchmark's longer run.

    Raises FirmwareBuildError when the program, board or level is unknown, the cross
    compiler is missing or compilation fails.
    """
    source = BOARDS_DIR / f"{name}.c"
    if name == STARTUP.stem or not source.is_file():
        raise FirmwareBuildError(f"unknown firmware program {name!r}: {source} does not exist")
    return _build(f"{name}-{board}-{opt.lstrip('-')}", [STARTUP, source], sorted(BOARDS_DIR.glob("*.ld")),
                  [*firmware_flags(board, opt), *extra])


#: Boards with less RAM than this (8 KiB: lm3s811evb, stm32vldiscovery) get newlib-nano (its
#: printf and malloc need a few hundred bytes, newlib's several KiB), a 1 KiB stack and a
#: 1.5 KiB heap: what is left is for the instrumentation's data.
SMALL_RAM = 32 << 10


def small_ram(board: str) -> bool:
    """Whether ``board``'s main RAM is under SMALL_RAM."""
    return anvil_boards.board(board).ram.size < SMALL_RAM


def board_memory_flags(board: str) -> list[str]:
    """The linker flags that give samples/boards/board.ld ``board``'s memory map (rewriter/boards.py):
    its flash and its main RAM, with a stack and a heap of a quarter of that RAM each (at most
    64 KiB; on SMALL_RAM boards 1 and 1.5 KiB), which leaves RAM the program never touches for
    the instrumentation's data."""
    target = anvil_boards.board(board)
    stack = heap = min(target.ram.size // 4, 0x10000)
    if small_ram(board):
        stack, heap = 0x400, 0x600
    symbols = {"FLASH_START": target.flash.start, "FLASH_SIZE": target.flash.size, "RAM_START": target.ram.start,
               "RAM_SIZE": target.ram.size, "STACK_SIZE": stack, "HEAP_SIZE": heap}
    return ["-Wl," + ",".join(f"--defsym={name}={value:#x}" for name, value in symbols.items())]


def build_on_board(name: str, board: str, opt: str = "-O2") -> Path:
    """Build ``samples/boards/<name>.c`` for one of MORE_BOARDS (cached), linked by board.ld
    for that board's memory map; return the ELF's path."""
    source = BOARDS_DIR / f"{name}.c"
    if name == STARTUP.stem or not source.is_file() or board not in MORE_BOARDS or opt not in OPT_LEVELS:
        raise FirmwareBuildError(f"unknown program {name!r}, board {board!r} or level {opt!r}")
    nano = ["--specs=nano.specs"] if small_ram(board) else []
    flags = [*MORE_BOARDS[board], opt, *nano, *COMMON_FLAGS, "-L", str(BOARDS_DIR), "-T",
             str(BOARDS_DIR / "board.ld"), *board_memory_flags(board)]
    return _build(f"{name}-{board}-{opt.lstrip('-')}", [STARTUP, source], sorted(BOARDS_DIR.glob("*.ld")), flags)


def build_layout(layout: str, name: str, board: str, opt: str = "-O2") -> Path:
    """Build ``samples/boards/<name>.c`` for a board with the linker script and start-up of
    ``LAYOUTS[layout]`` (cached); return the ELF's path."""
    source = BOARDS_DIR / f"{name}.c"
    if layout not in LAYOUTS or not source.is_file():
        raise FirmwareBuildError(f"unknown layout {layout!r} or program {name!r}")
    firmware_flags(board, opt)  # rejects unknown boards and levels
    script, sources, extra = LAYOUTS[layout]
    flags = [*BOARDS[board], opt, *BASE_FLAGS, *extra, "-T", str(script)]
    return _build(f"{name}-{layout}-{board}-{opt.lstrip('-')}", [*sources, source], [script], flags)


def _build(stem: str, sources: list[Path], scripts: list[Path], flags: list[str]) -> Path:
    """Compile and link ``sources`` with ``flags`` into the cache (keyed by the sources,
    the linker scripts and the flags); return the ELF's path."""
    cc = _require_tool(CC)
    key = _cache_key(*(path.read_bytes() for path in [*sources, *scripts]),
                     "\0".join(flags).replace(str(REPO_ROOT), ""))
    out = cache_dir() / f"{stem}-{key}.elf"
    if out.is_file():
        return out
    return build_cache.compile_to([cc, *flags], [str(path) for path in sources], out, FirmwareBuildError)


def qemu_command(elf: Path | str, board: str) -> list[str]:
    """Return the qemu-system-arm command line that runs a firmware ELF on a board.

    Semihosting is handled by QEMU itself (``target=native``): the program's console
    output (newlib's ``:tt`` stdout) goes to QEMU's stdout, and SYS_EXIT_EXTENDED, which
    newlib's ``_exit`` uses once QEMU reports the feature, ends QEMU with the program's
    status (low 8 bits).  ``-monitor none -serial none`` keep the monitor and the UARTs
    off stdout; ``-no-reboot`` makes a guest-requested reset end QEMU instead of
    restarting the program.
    """
    if board not in anvil_boards.BOARDS:
        raise FirmwareBuildError(f"unknown board {board!r}; known: {', '.join(anvil_boards.BOARDS)}")
    _require_tool(QEMU)
    return anvil_boards.board(board).qemu_command(str(elf))


def run_firmware(elf: Path | str, board: str, timeout: float = 60, cwd: Path | str | None = None) -> tuple[bytes, int]:
    """Run a firmware ELF under qemu-system-arm (in ``cwd``, where semihosting opens files);
    return its stdout and QEMU's exit status.

    Raises subprocess.TimeoutExpired (after killing QEMU) when the firmware has not
    exited within ``timeout`` seconds, e.g. when it is stuck in Default_Handler.
    """
    proc = subprocess.run(
        qemu_command(elf, board), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False,
        cwd=cwd,
    )
    return proc.stdout, proc.returncode


def _main() -> int:
    """Build every program for every board at -O0 and -O2, run each and print what it did."""
    start = time.monotonic()
    for board in BOARDS:
        for opt in ("-O0", "-O2"):
            for name in PROGRAMS:
                elf = build_firmware(name, board, opt)
                began = time.monotonic()
                stdout, status = run_firmware(elf, board)
                took = time.monotonic() - began
                print(f"== {name} {board} {opt}: exit {status}, {took:.2f}s, {elf.name}")
                sys.stdout.write(stdout.decode(errors="replace"))
    print(f"total {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(_main())


def instrument(image: Path, tool: str, out: Path, *extra: str) -> Path:
    """``anvil instrument --tool TOOL --format json IMAGE -o OUT [extra]`` in this process; returns OUT."""
    from rewriter.cli import main as anvil_main
    from tests.support import loaded_binaries

    out.parent.mkdir(parents=True, exist_ok=True)
    with loaded_binaries.shared():
        status = anvil_main(["instrument", "--tool", tool, "--format", "json", str(image), "-o", str(out), *extra])
    assert status == 0
    return out


def anvil_cli(*args: str, cwd: Path, text: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """``anvil ARGS`` as a user runs it: a fresh interpreter on this checkout's code, in ``cwd``,
    output captured."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "rewriter.cli", *args], capture_output=True, text=text, cwd=cwd,
                          env=env, timeout=timeout)

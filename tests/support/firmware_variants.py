"""Build the firmware samples in variants the board tests do not use (cached).

What scripts/firmware_sweep.py sweeps and tests/test_firmware_variants.py checks: each
program of samples/boards/ (the boards' own four, and fpu.c, ctors.cpp, big.c, which
only these variants build) compiled object by object, then linked, in one of VARIANTS:
other optimisation levels and code-size options, LTO, newlib-nano, clang (linked by
GNU ld through arm-none-eabi-gcc, or by ld.lld), layouts of samples/boards/variants.ld
(the vector table copied into RAM, the image at a flash offset behind a boot table,
functions run from RAM, .data's initial values far from the code), and picolibc
(Debian's picolibc-arm-none-eabi: its crt0, vector table, semihosting and picolibc.ld
instead of startup.c, newlib and the boards' script).

    from tests.support.firmware_variants import build_variant
    elf = build_variant("crc", "mps2-an385", "clang-O2-lld")
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support import build_cache
from tests.support.boards import BOARDS, BOARDS_DIR, MORE_BOARDS, STARTUP, FirmwareBuildError, cache_dir

#: The programs, each ``samples/boards/<name>.c`` or ``.cpp``.
PROGRAMS: list[str] = ["crc", "sort", "filter", "irq", "fpu", "ctors", "big"]
#: Programs whose SysTick handler runs (unicorn, the cache oracle, has no SysTick).
INTERRUPTS: set[str] = {"irq", "fpu"}
#: Procedures whose work depends on where timer ticks fall (left uninstrumented, not counted).
TIMING: dict[str, str] = {"fpu": "wait_for_ticks"}

_GCC, _GXX, _CLANG, _CLANGXX, _LLD = "arm-none-eabi-gcc", "arm-none-eabi-g++", "clang", "clang++", "ld.lld"
_STRIP = "arm-none-eabi-strip"
_NEWLIB = Path("/usr/lib/arm-none-eabi")
#: Board -> clang's target and CPU flags (the same code the GCC flags of boards.BOARDS ask for).
CLANG_TARGETS: dict[str, list[str]] = {
    "mps2-an385": ["--target=thumbv7m-none-eabi", "-mcpu=cortex-m3"],
    "mps2-an386": ["--target=thumbv7em-none-eabihf", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
}
#: picolibc (docs/decisions/0067-other-c-libraries-and-linker-scripts.md): its specs add its
#: headers, crt0 and picolibc.ld; semihosting is its OS layer; crt0-semihost passes main's
#: status to exit. picolibc.ld takes the memories from __flash/__ram symbols (the boards' code
#: memory and SSRAM2/3, as in mps2-an385.ld). Its vector table names SysTick arm_systick_isr.
_PICOLIBC = Path("/usr/lib/picolibc/arm-none-eabi")
_PICO_SPECS = ("--specs=picolibc.specs", "--oslib=semihost", "--crt0=semihost")
_PICO_MEMORY = ("__flash=0", "__flash_size=0x400000", "__ram=0x20000000", "__ram_size=0x400000")
_PICO_DEFINES = ("-DSysTick_Handler=arm_systick_isr",)
_RAMFUNC = '-DRAMFUNC=__attribute__((section(".ramfunc"),noinline))'
#: MCUXpresso's name for code copied into the tightly coupled RAM beside the flash (layouts/mcux.ld).
_RAMFUNC_DTC = '-DRAMFUNC=__attribute__((section(".ramfunc.$SRAM_DTC"),noinline))'
#: gcc's CPU flags of every board a variant may be built for.
_CPU_FLAGS: dict[str, list[str]] = {**MORE_BOARDS, **BOARDS}


@dataclass(frozen=True)
class Variant:
    """How to build: ``compiler`` (gcc or clang) with ``flags`` for every object (and the
    GCC link), ``link`` flags for the link only, ``linker`` gcc (GNU ld) or lld,
    ``script`` (a file of samples/boards/, '' for the board's own), the programs it
    applies to ('': every one), the C library: ``newlib`` (with startup.c) or
    ``picolibc`` (its own start-up; its picolibc.ld unless ``script`` names another),
    the start-up (a file of samples/boards/; '': startup.c with newlib, picolibc's crt0),
    more ``sources`` (files of samples/boards/) to build with the program, and whether the
    image is ``stripped`` (``arm-none-eabi-strip``: no symbols, no mapping symbols, as a
    vendor's release image comes); whether C++ is built with ``exceptions`` (and linked by
    g++, with libstdc++: Debian's libstdc++-arm-none-eabi-newlib); ``boards``: the boards it is linked for ('': the MPS2
    AN385 and AN386 of tests/support/boards.BOARDS); ``instrument``: the ``anvil
    instrument`` options its images need (where the defaults cannot know the board or the
    RAM free: decision 0122's Limits)."""

    flags: tuple[str, ...] = ("-O2",)
    link: tuple[str, ...] = ()
    compiler: str = "gcc"
    linker: str = "gcc"
    script: str = ""
    programs: tuple[str, ...] = ()
    libc: str = "newlib"
    startup: str = ""
    sources: tuple[str, ...] = ()
    stripped: bool = False
    exceptions: bool = False
    boards: tuple[str, ...] = ()
    instrument: tuple[str, ...] = ()


VARIANTS: dict[str, Variant] = {
    "O2": Variant(),
    "O0": Variant(("-O0",)),
    "O1": Variant(("-O1",)),
    "O3": Variant(("-O3",)),
    "Os": Variant(("-Os",)),
    "Og": Variant(("-Og",)),
    "O3-unroll": Variant(("-O3", "-funroll-loops")),
    "O2-lto": Variant(("-O2", "-flto")),
    "Os-lto": Variant(("-Os", "-flto")),
    "O2-gc-sections": Variant(("-O2", "-ffunction-sections", "-fdata-sections"), ("-Wl,--gc-sections",)),
    "O2-nano": Variant(("-O2", "--specs=nano.specs")),
    "clang-O0": Variant(("-O0",), compiler="clang"),
    "clang-O2": Variant(("-O2",), compiler="clang"),
    "clang-Os": Variant(("-Os",), compiler="clang"),
    "clang-O3": Variant(("-O3",), compiler="clang"),
    "clang-O2-lld": Variant(("-O2",), compiler="clang", linker="lld"),
    "clang-Oz-lld": Variant(("-Oz",), compiler="clang", linker="lld"),
    "vectors-in-ram": Variant(("-O2", "-DVECTORS_IN_RAM"), script="variants.ld", programs=("irq", "fpu")),
    "app-at-64k": Variant(("-O2", "-DBOOT_TABLE"), ("-Wl,--defsym=APP_BASE=0x10000",), script="variants.ld"),
    "ramfunc": Variant(("-O2", _RAMFUNC), script="variants.ld", programs=("crc", "filter")),
    "data-lma-high": Variant(("-O2",), ("-Wl,--defsym=DATA_LMA=0x300000",), script="variants.ld"),
    "pico-O0": Variant(("-O0",), libc="picolibc"),
    "pico-O2": Variant(("-O2",), libc="picolibc"),
    "pico-Os": Variant(("-Os",), libc="picolibc"),
    "pico-clang-O2": Variant(("-O2",), compiler="clang", libc="picolibc"),
    "pico-clang-Os-lld": Variant(("-Os",), compiler="clang", linker="lld", libc="picolibc"),
    "pico-noheap": Variant(("-O2",), libc="picolibc", script="layouts/picolibc-noheap.ld",
                           programs=("crc", "filter", "irq", "fpu", "ctors", "big")),
    # (fpu's timing-dependent wait_for_ticks, left uncounted by name, has none here)
    "O2-stripped": Variant(stripped=True, programs=("crc", "sort", "filter", "irq", "ctors", "big")),
    "pico-O2-stripped": Variant(("-O2",), libc="picolibc", stripped=True,
                                programs=("crc", "sort", "filter", "irq", "ctors", "big")),
    "opencm3": Variant(("-O2", "-DSTACK_TOP=_stack"), script="layouts/opencm3.ld"),
    "zephyr": Variant(("-O2", "-DBOOT_TABLE", "-DSTACK_TOP=z_main_stack_top"), script="layouts/zephyr.ld",
                      sources=("layouts/sbrk.c",)),
    "asm-startup": Variant(startup="layouts/startup.S"),
    "psram-heap": Variant(("-O2", "-DSTACK_TOP=_stack", "-DHEAP_START=_heap_start", "-DHEAP_END=_heap_end"),
                          script="layouts/psram-heap.ld", sources=("layouts/sbrk.c",)),
    # Styles of decision 0122: Rust's cortex-m-rt (link.x and its sections, linked by ld.lld
    # from clang -Oz objects, with and without LTO), NXP MCUXpresso (a section table the
    # start-up walks, data and code in a tightly coupled RAM, heap and stack as sections),
    # TI TivaWare on the Stellaris board (the stack an array in .bss, orphan sections).
    "cmrt-lld": Variant(("-Oz", "-DHEAP_START=__sheap", "-DHEAP_END=_stack_start"), compiler="clang",
                        linker="lld", script="layouts/cortex-m-rt.ld", startup="layouts/cmrt.c",
                        sources=("layouts/sbrk.c",)),
    "cmrt-lto": Variant(("-Oz", "-flto", "-DHEAP_START=__sheap", "-DHEAP_END=_stack_start"), compiler="clang",
                        linker="lld", script="layouts/cortex-m-rt.ld", startup="layouts/cmrt.c",
                        sources=("layouts/sbrk.c",)),
    "mcux": Variant(("-O2", _RAMFUNC_DTC, "-DHEAP_START=_pvHeapStart", "-DHEAP_END=_pvHeapLimit"),
                    script="layouts/mcux.ld", startup="layouts/mcux_startup.c", sources=("layouts/sbrk.c",)),
    # (the heap is 1 KiB, the SDK's default: sort's array is 4 KiB; --defsym can give more)
    "kinetis": Variant(("-O2",), ("-Wl,--defsym=__heap_size__=0x10000",), script="layouts/kinetis.ld",
                       sources=("layouts/flash_config.c",)),
    "tcm": Variant(("-O2", _RAMFUNC, "-DHEAP_START=__heap_start", "-DHEAP_END=__heap_end"), script="layouts/tcm.ld",
                   sources=("layouts/sbrk.c", "layouts/ramfunc_copy.c"), boards=("mps3-an547",)),
    # C++ exceptions thrown through instrumented frames (samples/boards/throw.cpp, only these build it).
    "eh-O2": Variant(("-O2",), exceptions=True, programs=("throw",)),
    "eh-Os": Variant(("-Os",), exceptions=True, programs=("throw",)),
    "eh-O2-stripped": Variant(("-O2",), exceptions=True, programs=("throw",), stripped=True),
    "eh-kinetis": Variant(("-O2",), ("-Wl,--defsym=__heap_size__=0x10000",), script="layouts/kinetis.ld",
                          sources=("layouts/flash_config.c",), exceptions=True, programs=("throw",)),
    # (librdimon's _sbrk fails below the stack pointer: no sort; no constructors run: no ctors)
    # (it fits the MPS2 maps too, and its heap has no limit: the board and a RAM region are
    # named; big instrumented fits neither the part's 64 KiB of RAM nor its 256 KiB of flash)
    "tiva": Variant(script="layouts/tiva.ld", startup="layouts/tiva_startup.c", boards=("lm3s6965evb",),
                    programs=("crc", "filter", "irq", "fpu"),
                    instrument=("--board", "lm3s6965evb", "--ram-region", "0x20004000:0xc000")),
}


def source(program: str) -> Path:
    """The source file of ``program``."""
    for suffix in (".c", ".cpp"):
        path = BOARDS_DIR / f"{program}{suffix}"
        if path.is_file() and program != STARTUP.stem:
            return path
    raise FirmwareBuildError(f"unknown firmware program {program!r}")


def applies(program: str, variant: str, board: str | None = None) -> bool:
    """Whether ``variant`` builds ``program`` (for ``board``, when given)."""
    spec = VARIANTS[variant]
    return (not spec.programs or program in spec.programs) and (
        board is None or board in (spec.boards or BOARDS))


def _compile_command(path: Path, board: str, variant: Variant) -> list[str]:
    cxx = path.suffix == ".cpp"
    pico = variant.libc == "picolibc"
    if variant.compiler == "clang":
        tool = build_cache.require_tool(_CLANGXX if cxx else _CLANG, FirmwareBuildError, "install clang")
        headers = ["-isystem", str(_PICOLIBC / "include")] if pico else [f"--sysroot={_NEWLIB}"]
        cpu = [*CLANG_TARGETS[board], *headers, "-fshort-enums"]
    else:
        tool = build_cache.require_tool(_GXX if cxx else _GCC, FirmwareBuildError, "run scripts/bootstrap.sh")
        cpu = [*_CPU_FLAGS[board], *(_PICO_SPECS[:1] if pico else ())]
    language = ["-fno-exceptions", "-fno-rtti"] if cxx and not variant.exceptions else []
    defines = _PICO_DEFINES if pico else ()
    return [tool, *cpu, *variant.flags, *defines, *language, "-g", "-Wall", "-Wextra", "-c", str(path)]


def _link_command(board: str, variant: Variant, script: Path, objects: list[str]) -> list[str]:
    pico = variant.libc == "picolibc"
    if variant.linker == "lld":
        multi = subprocess.run([_GCC, *_CPU_FLAGS[board], "-print-multi-directory"], capture_output=True, text=True,
                               check=True).stdout.strip()
        libgcc = subprocess.run([_GCC, *_CPU_FLAGS[board], "-print-libgcc-file-name"], capture_output=True, text=True,
                                check=True).stdout.strip()
        lld = build_cache.require_tool(_LLD, FirmwareBuildError, "install lld")
        if pico:
            libs = _PICOLIBC / "lib" / multi
            return [lld, "-T", str(script), *(f"--defsym={d}" for d in _PICO_MEMORY), str(libs / "crt0-semihost.o"),
                    *objects, "-L", str(libs), "--start-group", "-lc", "-lsemihost", libgcc, "--end-group"]
        return [lld, "-L", str(BOARDS_DIR), "-T", str(script), *objects, "-L", str(_NEWLIB / "lib" / multi),
                "--start-group", "-lc", "-lrdimon", libgcc, "--end-group"]
    flags = [f for f in variant.flags if not f.startswith("-D")]
    if pico:
        return [_GCC, *_CPU_FLAGS[board], *flags, *variant.link, *_PICO_SPECS,
                *(f"-Wl,--defsym={d}" for d in _PICO_MEMORY), "-T", str(script), *objects]
    return [_GXX if variant.exceptions else _GCC, *_CPU_FLAGS[board], *flags, *variant.link, "--specs=rdimon.specs",
            "-nostartfiles",
            "-L", str(BOARDS_DIR), "-T", str(script), *objects]


def _lld_readable(script: Path, tmp: Path) -> Path:
    """A copy of picolibc.ld without ALIGN_WITH_INPUT, the one GNU-only word in it, which
    ld.lld 14 does not parse: what a user linking picolibc with lld writes by hand."""
    copy = tmp / "picolibc-lld.ld"
    copy.write_text(script.read_text().replace("ALIGN_WITH_INPUT", ""))
    return copy


def build_variant(program: str, board: str, variant: str) -> Path:
    """Build ``program`` for ``board`` in ``variant`` (cached); return the ELF's path.

    Raises FirmwareBuildError when the program, board or variant is unknown, the
    variant does not apply to the program, a tool is missing or the build fails.
    """
    if variant not in VARIANTS or board not in _CPU_FLAGS:
        raise FirmwareBuildError(f"unknown variant {variant!r} or board {board!r}")
    if not applies(program, variant, board):
        raise FirmwareBuildError(f"variant {variant} is not for {program} on {board}")
    spec = VARIANTS[variant]
    pico = spec.libc == "picolibc"
    if spec.script:
        script = BOARDS_DIR / spec.script
    else:
        script = _PICOLIBC / "lib" / "picolibc.ld" if pico else BOARDS_DIR / f"{board}.ld"
    if not script.is_file():
        raise FirmwareBuildError(f"{script} is missing: run scripts/bootstrap.sh")  # picolibc-arm-none-eabi
    startup = [BOARDS_DIR / spec.startup] if spec.startup else [] if pico else [STARTUP]
    sources = [*startup, *(BOARDS_DIR / s for s in spec.sources), source(program)]
    compilers = {_GCC} | ({_CLANG} if spec.compiler == "clang" else set())
    key = build_cache.cache_key(
        "fwvariant-1", *(build_cache.compiler_identity(build_cache.require_tool(
            c, FirmwareBuildError, "install the cross compilers")) for c in sorted(compilers)),
        *(p.read_bytes() for p in [*sources, script, *BOARDS_DIR.glob("*.ld")]), repr(spec), board)
    out = cache_dir() / f"{program}-{variant}-{board}-{key}.elf"
    if out.is_file():
        return out
    with tempfile.TemporaryDirectory(prefix="fwvariant.") as tmp:
        objects = []
        for path in sources:
            obj = Path(tmp) / f"{path.stem}.o"
            proc = subprocess.run([*_compile_command(path, board, spec), "-o", str(obj)], capture_output=True,
                                  text=True)
            if proc.returncode:
                raise FirmwareBuildError(f"compiling {path.name} failed:\n{proc.stderr}")
            objects.append(str(obj))
        if pico and spec.linker == "lld" and not spec.script:
            script = _lld_readable(script, Path(tmp))
        command = _link_command(board, spec, script, objects)
        if not spec.stripped:
            return build_cache.compile_to(command, [], out, FirmwareBuildError)
        linked = build_cache.compile_to(command, [], Path(tmp) / "linked.elf", FirmwareBuildError)
        return build_cache.compile_to([_STRIP, str(linked)], [], out, FirmwareBuildError)

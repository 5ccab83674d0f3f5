"""Build the firmware samples in variants the board tests do not use (cached).

What scripts/firmware_sweep.py sweeps and tests/test_firmware_variants.py checks: each
program of samples/boards/ (the boards' own four, and fpu.c, ctors.cpp, big.c, which
only these variants build) compiled object by object, then linked, in one of VARIANTS:
other optimisation levels and code-size options, LTO, newlib-nano, clang (linked by
GNU ld through arm-none-eabi-gcc, or by ld.lld), and layouts of samples/boards/variants.ld
(the vector table copied into RAM, the image at a flash offset behind a boot table,
functions run from RAM, .data's initial values far from the code).

    from tests.support.firmware_variants import build_variant
    elf = build_variant("crc", "mps2-an385", "clang-O2-lld")
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support import build_cache
from tests.support.boards import BOARDS, BOARDS_DIR, STARTUP, FirmwareBuildError, cache_dir

#: The programs, each ``samples/boards/<name>.c`` or ``.cpp``.
PROGRAMS: list[str] = ["crc", "sort", "filter", "irq", "fpu", "ctors", "big"]
#: Programs whose SysTick handler runs (unicorn, the cache oracle, has no SysTick).
INTERRUPTS: set[str] = {"irq", "fpu"}
#: Procedures whose work depends on where timer ticks fall (left uninstrumented, not counted).
TIMING: dict[str, str] = {"fpu": "wait_for_ticks"}

_GCC, _GXX, _CLANG, _CLANGXX, _LLD = "arm-none-eabi-gcc", "arm-none-eabi-g++", "clang", "clang++", "ld.lld"
_NEWLIB = Path("/usr/lib/arm-none-eabi")
#: Board -> clang's target and CPU flags (the same code the GCC flags of boards.BOARDS ask for).
CLANG_TARGETS: dict[str, list[str]] = {
    "mps2-an385": ["--target=thumbv7m-none-eabi", "-mcpu=cortex-m3"],
    "mps2-an386": ["--target=thumbv7em-none-eabihf", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
}
_RAMFUNC = '-DRAMFUNC=__attribute__((section(".ramfunc"),noinline))'


@dataclass(frozen=True)
class Variant:
    """How to build: ``compiler`` (gcc or clang) with ``flags`` for every object (and the
    GCC link), ``link`` flags for the link only, ``linker`` gcc (GNU ld) or lld,
    ``script`` (a file of samples/boards/, '' for the board's own), and the programs
    it applies to ('': every one)."""

    flags: tuple[str, ...] = ("-O2",)
    link: tuple[str, ...] = ()
    compiler: str = "gcc"
    linker: str = "gcc"
    script: str = ""
    programs: tuple[str, ...] = ()


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
}


def source(program: str) -> Path:
    """The source file of ``program``."""
    for suffix in (".c", ".cpp"):
        path = BOARDS_DIR / f"{program}{suffix}"
        if path.is_file() and program != STARTUP.stem:
            return path
    raise FirmwareBuildError(f"unknown firmware program {program!r}")


def applies(program: str, variant: str) -> bool:
    """Whether ``variant`` builds ``program``."""
    chosen = VARIANTS[variant].programs
    return not chosen or program in chosen


def _compile_command(path: Path, board: str, variant: Variant) -> list[str]:
    cxx = path.suffix == ".cpp"
    if variant.compiler == "clang":
        tool = build_cache.require_tool(_CLANGXX if cxx else _CLANG, FirmwareBuildError, "install clang")
        cpu = [*CLANG_TARGETS[board], f"--sysroot={_NEWLIB}", "-fshort-enums"]
    else:
        tool = build_cache.require_tool(_GXX if cxx else _GCC, FirmwareBuildError, "run scripts/bootstrap.sh")
        cpu = BOARDS[board]
    language = ["-fno-exceptions", "-fno-rtti"] if cxx else []
    return [tool, *cpu, *variant.flags, *language, "-g", "-Wall", "-Wextra", "-c", str(path)]


def _link_command(board: str, variant: Variant, script: Path, objects: list[str]) -> list[str]:
    if variant.linker == "lld":
        multi = subprocess.run([_GCC, *BOARDS[board], "-print-multi-directory"], capture_output=True, text=True,
                               check=True).stdout.strip()
        libgcc = subprocess.run([_GCC, *BOARDS[board], "-print-libgcc-file-name"], capture_output=True, text=True,
                                check=True).stdout.strip()
        lld = build_cache.require_tool(_LLD, FirmwareBuildError, "install lld")
        return [lld, "-L", str(BOARDS_DIR), "-T", str(script), *objects, "-L", str(_NEWLIB / "lib" / multi),
                "--start-group", "-lc", "-lrdimon", libgcc, "--end-group"]
    flags = [f for f in variant.flags if not f.startswith("-D")]
    return [_GCC, *BOARDS[board], *flags, *variant.link, "--specs=rdimon.specs", "-nostartfiles",
            "-L", str(BOARDS_DIR), "-T", str(script), *objects]


def build_variant(program: str, board: str, variant: str) -> Path:
    """Build ``program`` for ``board`` in ``variant`` (cached); return the ELF's path.

    Raises FirmwareBuildError when the program, board or variant is unknown, the
    variant does not apply to the program, a tool is missing or the build fails.
    """
    if variant not in VARIANTS or board not in BOARDS:
        raise FirmwareBuildError(f"unknown variant {variant!r} or board {board!r}")
    if not applies(program, variant):
        raise FirmwareBuildError(f"variant {variant} is not for {program}")
    spec = VARIANTS[variant]
    script = BOARDS_DIR / (spec.script or f"{board}.ld")
    sources = [STARTUP, source(program)]
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
        command = _link_command(board, spec, script, objects)
        return build_cache.compile_to(command, [], out, FirmwareBuildError)

"""Build the analysis library for the target with the cross toolchain.

The tool's C, the runtime and the generated site tables are compiled freestanding
(no libc, general registers only, position independent with hidden symbols so all
addresses are PC-relative) and linked by a generated linker script at the region's
addresses. Object files of fixed sources are cached by content hash.

Two toolchains: arm-linux-gnueabihf for Linux programs (ARMv7-A) and arm-none-eabi
for Cortex-M firmware (ARMv7-M, or ARMv7E-M when the image's core has the DSP
extension; soft-float, since the analysis code uses no FP registers anyway).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from elftools.elf.elffile import ELFFile

from ..errors import AnvilError
from ..files import move_whole

if TYPE_CHECKING:
    from ..api import Tool

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_DIR = ROOT / "runtime_stubs" / "arm"
COMMON_DIR = ROOT / "runtime_stubs" / "common"  # shared by the target and host runtimes
HIDDEN = COMMON_DIR / "anvil_hidden.h"  # force-included in every unit of the analysis library
ANALYSIS_DIR = ROOT / "analysis_libs"
# The generated unit puts each image fact (block and procedure tables) in a section of
# this prefix; the link keeps only the ones the tool's code reads (--gc-sections, all
# else KEEP), so a tool that never looks at block addresses does not carry them.
FACTS_SECTION = ".anvil_fact"
CFLAGS = [
    "-O2", "-mthumb", "-mgeneral-regs-only", "-ffreestanding", "-fno-builtin",
    "-nostdlib", "-fPIE", "-fvisibility=hidden", "-fno-stack-protector", "-fno-unwind-tables",
    "-fno-asynchronous-unwind-tables", "-fno-exceptions", "-fno-common", "-Wall",
]


@dataclass(frozen=True)
class Toolchain:
    """A cross toolchain (its tools' prefix) and the architecture flags the library is built with."""

    prefix: str
    arch_flags: tuple[str, ...]
    runtime: str  # directory under runtime_stubs/ with the platform's start-up and output code
    defines: tuple[str, ...] = ()  # -D flags the platform's runtime is built with
    isa: str = "arm"  # directory under runtime_stubs/ with the instruction set's shared runtime
    base_flags: tuple[str, ...] = tuple(CFLAGS)

    def tool(self, name: str) -> str:
        path = shutil.which(self.prefix + name)
        if path is None:
            raise AnvilError(f"{self.prefix}{name} not found: run scripts/bootstrap.sh to install the toolchains")
        return path

    @property
    def flags(self) -> list[str]:
        return [*self.base_flags, *self.arch_flags, *self.defines]

    @property
    def isa_dir(self) -> Path:
        return ROOT / "runtime_stubs" / self.isa


LINUX = Toolchain("arm-linux-gnueabihf-", ("-march=armv7-a+fp",), "arm")
# x86-64 Linux programs: the machine's own compiler; no CET marks (the copies' jumps land
# on no end-branch), no red zone needed (the hooks step over the program's).
X86_64 = Toolchain("", ("-fcf-protection=none",), "x86_64", isa="x86_64",
                   base_flags=tuple(flag for flag in CFLAGS if flag != "-mthumb"))
# A Go program's: Go's signal handler takes its goroutine from r10 whatever code the signal
# interrupted, the analysis's included (libgcc's routines the library links leave it alone).
LINUX_KEEPING_R10 = Toolchain("arm-linux-gnueabihf-", ("-march=armv7-a+fp", "-ffixed-r10"), "arm")
# On boards the results' output buffer is 1 KiB, not 4: 3 KiB less RAM, which boards with
# 8 KiB of it need (decision 0091).
_CORTEX_M_DEFINES = ("-DANVIL_OUT_BUF_SIZE=1024", "-DANVIL_BARE_METAL")
CORTEX_M = Toolchain("arm-none-eabi-", ("-march=armv7-m", "-mfloat-abi=soft"), "cortexm", _CORTEX_M_DEFINES)
CORTEX_M_DSP = Toolchain("arm-none-eabi-", ("-march=armv7e-m", "-mfloat-abi=soft"), "cortexm", _CORTEX_M_DEFINES)


def toolchain_for(firmware: bool, dsp: bool, keep_r10: bool = False) -> Toolchain:
    """The toolchain for a Linux program (``keep_r10``: whose library must never write r10,
    a Go program's) or (``firmware``) a Cortex-M image."""
    if not firmware:
        return LINUX_KEEPING_R10 if keep_r10 else LINUX
    return CORTEX_M_DSP if dsp else CORTEX_M


def platform_dir(toolchain: Toolchain) -> Path:
    """The runtime sources particular to the toolchain's platform (Linux or bare metal)."""
    return ROOT / "runtime_stubs" / toolchain.runtime


def analysis_sources(tool: Tool) -> list[Path]:
    """A tool's analysis C: beside its tool file, or ``analysis_libs/<name>/*.c`` for one that ships."""
    if tool.analysis_sources is not None:
        return list(tool.analysis_sources)
    tool_dir = ANALYSIS_DIR / tool.name
    sources = sorted(tool_dir.glob("*.c"))
    if not sources:
        raise AnvilError(f"tool {tool.name} has no analysis sources in {tool_dir}")
    return sources


#: The interpreter of counter derivation and fold programs (decisions 0008, 0025): left out
#: of an image that runs none (``Derivations.runs_programs``), such as cachesim's.
DERIVE_SOURCE = COMMON_DIR / "anvil_derive.c"


def runtime_sources(toolchain: Toolchain, results: bool = True) -> list[Path]:
    """Linked into every instrumented image: start-up, string helpers, jump translation, the
    flag-saving entries, and (``results``: the image writes results itself, InHost) the
    formatted output the tools' report routines use. A ReHost image leaves that out: its
    results are written on the host (2 KB less of a firmware image's flash, 4 KB of RAM)."""
    platform = platform_dir(toolchain)
    output = [COMMON_DIR / "anvil_format.c"] if results else []
    return [platform / "anvil_rt.c", RUNTIME_DIR / "anvil_target.c", COMMON_DIR / "anvil_string.c", *output,
            DERIVE_SOURCE, toolchain.isa_dir / "anvil_entry.S"]


def compiler_environment() -> dict[str, str]:
    """The environment compilers run in: ours, with a PATH even where we were started without
    one (``env -i anvil run ...``): gcc finds ``ld`` and its other programs through it."""
    return {**os.environ, "PATH": os.environ.get("PATH") or os.defpath}


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=compiler_environment())
    if proc.returncode != 0:
        lines = proc.stderr.splitlines()
        errors = [line for line in lines if "error" in line or "undefined" in line] or lines
        raise AnvilError(f"{os.path.basename(cmd[0])} failed: {errors[0] if errors else exit_said(proc.returncode)}")


def exit_said(returncode: int) -> str:
    """A command's exit status in words: ``status N``, or the signal that killed it (a
    full disk's SIGXFSZ, the OOM killer's SIGKILL)."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}"
        return f"killed by signal {-returncode}"
    return f"status {returncode}"


def cache_dir() -> Path:
    base = os.environ.get("ANVIL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "anvil")
    path = Path(base) / "objects"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compile_c(source: Path | str, include: list[Path], text: str | None = None,
              toolchain: Toolchain = LINUX) -> Path:
    """Compile one C (or .S) file for the target; cached by content, toolchain, flags and includes."""
    data = text.encode() if text is not None else Path(source).read_bytes()
    suffix = Path(source).suffix or ".c"  # a generated unit's name says its language too
    digest = hashlib.sha256(data + " ".join([toolchain.prefix, *toolchain.flags]).encode()
                            + HIDDEN.read_bytes())
    for inc in include:
        for header in sorted(inc.glob("*.h")):
            digest.update(header.read_bytes())
    obj = cache_dir() / f"{digest.hexdigest()[:24]}.o"
    if obj.exists():
        return obj
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"unit{suffix}"
        src.write_bytes(data)
        out = Path(tmp) / "unit.o"
        force = ["-include", str(HIDDEN)] if suffix == ".c" else []
        _run([toolchain.tool("gcc"), *toolchain.flags, *force, *[f"-I{p}" for p in include],
              "-c", str(src), "-o", str(out)])
        move_whole(str(out), str(obj))  # never half a file: the next build would take it
    return obj


@dataclass(frozen=True)
class Generated:
    """A C unit made by the emitter (``name`` for messages), compiled like a source file."""

    name: str
    text: str


def compile_unit(unit: Path | Generated, include: list[Path], toolchain: Toolchain = LINUX) -> Path:
    """Compile a source file or a generated unit (compile_c)."""
    if isinstance(unit, Generated):
        return compile_c(unit.name, include, text=unit.text, toolchain=toolchain)
    return compile_c(unit, include, toolchain=toolchain)


@dataclass
class LinkedLibrary:
    """The analysis library linked at fixed addresses."""

    text: bytes
    text_addr: int
    data: bytes
    data_addr: int
    bss_end: int
    symbols: dict[str, int]


@cache  # one question to the compiler per toolchain, not one per link
def libgcc(toolchain: Toolchain = LINUX) -> str:
    thumb = ["-mthumb"] if toolchain.isa == "arm" else []
    out = subprocess.run([toolchain.tool("gcc"), *toolchain.arch_flags, *thumb, "-print-libgcc-file-name"],
                         capture_output=True, text=True, env=compiler_environment())
    return out.stdout.strip()


def link(objects: list[Path], text_addr: int, data_addr: int, toolchain: Toolchain = LINUX,
         data_image: int = 0) -> LinkedLibrary:
    """Link ``objects`` with .text at ``text_addr`` and .data/.bss at ``data_addr``.

    ``data_image``: where a copy of .data's initial bytes is kept (firmware: in flash,
    copied to RAM at reset by the runtime, which finds it as ``anvil_data_image``).
    """
    script = f"""
SECTIONS
{{
  . = {text_addr:#x};
  .text : {{ KEEP(*(.text.anvil_first)) KEEP(*(.text*)) KEEP(*(.rodata*)) *({FACTS_SECTION}.*) }}
  . = {data_addr:#x};
  anvil_data_start = .;
  .data : {{ KEEP(*(.data*)) }}
  anvil_data_end = .;
  anvil_data_image = {data_image:#x};
  .got : {{ *(.got*) }}
  .bss : {{ KEEP(*(.bss*)) KEEP(*(COMMON)) }}
  anvil_bss_end = .;
  /DISCARD/ : {{ *(.ARM.exidx*) *(.ARM.extab*) *(.comment) *(.note*) *(.ARM.attributes) }}
}}
"""
    with tempfile.TemporaryDirectory() as tmp:
        ld_script = Path(tmp) / "lib.ld"
        ld_script.write_text(script)
        out = Path(tmp) / "lib.elf"
        _run([toolchain.tool("ld"), "-T", str(ld_script), "--no-dynamic-linker", "-static", "-e", "0", "--gc-sections",
              "-o", str(out), *map(str, objects), libgcc(toolchain)])
        with open(out, "rb") as f:
            elf = ELFFile(f)
            text = elf.get_section_by_name(".text")
            data = elf.get_section_by_name(".data")
            bss = elf.get_section_by_name(".bss")
            got = elf.get_section_by_name(".got")
            if got is not None and got["sh_size"] > 12 and any(got.data()[12:]):
                raise AnvilError("analysis library needs a GOT: declare globals hidden")
            symbols = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()
                       if s.name}
            data_bytes = data.data() if data is not None else b""
            bss_end = (bss["sh_addr"] + bss["sh_size"]) if bss is not None else data_addr + len(data_bytes)
            return LinkedLibrary(text.data(), text["sh_addr"], data_bytes,
                                 data["sh_addr"] if data is not None else data_addr, bss_end, symbols)


STUB_DEFINES = ("ANVIL_REGION", "ANVIL_LENGTH", "ANVIL_PGOFF", "ANVIL_HEADER", "ANVIL_INIT", "ANVIL_ENTRY_STAGE",
                "ANVIL_INIT_SLOT")  # the stub's link-time constants (--defsym)


@dataclass(frozen=True)
class StubCode:
    """The loader stub linked: its pieces (address, bytes), in order, the first holding its
    entry (``entry``, a Thumb address), and its preinit function's address, if it has one."""

    pieces: list[tuple[int, bytes]]
    entry: int
    preinit_function: int | None


def _stub_object(preinit: bool, pieces: bool) -> Path:
    """runtime_stubs/arm/stub.S assembled: with its preinit function, in pieces (or whole)."""
    source = RUNTIME_DIR / "stub.S"
    defines = ("#define ANVIL_PREINIT 1\n" if preinit else "") + ("#define ANVIL_PIECES 1\n" if pieces else "")
    return compile_c(source, [], text=defines + source.read_text()) if defines else compile_c(source, [])


@cache
def _stub_sections(preinit: bool, pieces: bool) -> int:
    """How many sections (.anvil_stub1, ...) the stub has: 1 whole."""
    with open(_stub_object(preinit, pieces), "rb") as f:
        return sum(1 for sec in ELFFile(f).iter_sections() if sec.name.startswith(".anvil_stub"))


@cache
def stub_size(preinit: bool) -> int:
    """The bytes of the loader stub whole (a multiple of 4, wherever it is linked, 4-aligned)."""
    return len(assemble_stub([0x100000], dict.fromkeys(STUB_DEFINES, 0), preinit).pieces[0][1])


@cache
def stub_piece_sizes(preinit: bool) -> tuple[int, ...]:
    """The bytes of each piece of the loader stub in pieces (each a multiple of 4, wherever
    it is linked, 4-aligned)."""
    far_apart = [0x100000 * (k + 1) for k in range(_stub_sections(preinit, True))]
    return tuple(len(data) for _, data in assemble_stub(far_apart, dict.fromkeys(STUB_DEFINES, 0), preinit).pieces)


def assemble_stub(places: list[int], defs: dict[str, int], preinit: bool) -> StubCode:
    """The loader stub with its constants ``defs``: whole at ``places[0]`` if that is the
    only place, else in pieces, each linked at its place (one 4-aligned address per piece,
    stub_piece_sizes), with a preinit function if ``preinit`` (rewriter/emit/preinit.py).
    Raises AnvilError where a piece's jump to the next cannot reach it (16 MiB)."""
    pieces = len(places) > 1
    if len(places) != (_stub_sections(preinit, True) if pieces else 1):
        raise AssertionError(f"{len(places)} places for the stub's {_stub_sections(preinit, True)} pieces")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stub.elf"
        cmd = [LINUX.tool("ld"), "-e", "_anvil_stub", "-o", str(out), str(_stub_object(preinit, pieces))]
        for k, place in enumerate(places):
            cmd += [f"--section-start=.anvil_stub{k + 1}={place:#x}"]
        for name, value in defs.items():
            cmd += ["--defsym", f"{name}={value:#x}"]
        _run(cmd)
        with open(out, "rb") as f:
            elf = ELFFile(f)
            code = [(sec["sh_addr"], sec.data()) for k in range(len(places))
                    if (sec := elf.get_section_by_name(f".anvil_stub{k + 1}")) is not None]
            symbols = elf.get_section_by_name(".symtab")
            preinit_symbol = symbols.get_symbol_by_name("_anvil_preinit")
            entry = symbols.get_symbol_by_name("_anvil_stub")[0]["st_value"] | 1
    return StubCode(code, entry, preinit_symbol[0]["st_value"] & ~1 if preinit_symbol else None)

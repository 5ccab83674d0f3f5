"""The x86-64 loader stub (runtime_stubs/x86_64/stub.S), assembled and linked where it goes:
in pieces, each linked at its own place (decision 0109)."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ...emit.target_build import cache_dir
from ...errors import AnvilError
from ...ir.model import Binary

SOURCE = Path(__file__).resolve().parents[3] / "runtime_stubs" / "x86_64" / "stub.S"
DEFINES = ("ANVIL_REGION", "ANVIL_LENGTH", "ANVIL_OFFSET", "ANVIL_ENTRY", "ANVIL_INIT", "ANVIL_PATCHES")
#: What the stub with a preinit function also needs (stub.S, rewriter/emit/preinit.py).
PREINIT_DEFINES = ("ANVIL_INIT_SLOT", "ANVIL_GO_ON")
ALIGN = 16  # each piece's place


@dataclass(frozen=True)
class Stub:
    pieces: list[tuple[int, bytes]]  # (link address, bytes) of each piece
    entry: int                       # the stub's entry (_anvil_stub)
    preinit: int | None = None       # its preinit function (_anvil_preinit), where it has one
    go_back: int | None = None       # its `ret` into the dynamic linker (_anvil_go_back)


def _run(cmd: list[str]) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise AnvilError(f"{cmd[0]} not found: x86-64 programs need the host's binutils and gcc "
                         "(scripts/bootstrap.sh installs them)") from None
    except subprocess.CalledProcessError as e:
        raise AnvilError(f"{cmd[0]} failed on the loader stub: {e.stderr.strip()}") from None


@cache
def _object(preinit: bool = False) -> Path:
    """The stub assembled, with its preinit function or without (cached by its source)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    obj = cache_dir() / f"x86_64-stub-{digest}{'-preinit' if preinit else ''}.o"
    if not obj.exists():
        with tempfile.TemporaryDirectory() as tmp:
            made = Path(tmp) / "stub.o"
            _run(["gcc", *(["-DANVIL_PREINIT"] if preinit else []), "-c", str(SOURCE), "-o", str(made)])
            made.replace(obj)
    return obj


@cache
def _sections(preinit: bool = False) -> tuple[tuple[str, int], ...]:
    """The pieces' sections (``.anvil_stubN``, by N: a variant may lack some N) and sizes."""
    with open(_object(preinit), "rb") as f:
        found = [(int(section.name[len(".anvil_stub"):]), section.name, section["sh_size"])
                 for section in ELFFile(f).iter_sections() if section.name.startswith(".anvil_stub")]
    return tuple((name, size) for _, name, size in sorted(found))


def piece_sizes(preinit: bool = False) -> tuple[int, ...]:
    """The size of each piece, in order (the same wherever they go: every reference between
    them is a 32-bit displacement); ``preinit``: of the stub with a preinit function."""
    return tuple(size for _, size in _sections(preinit))


def assemble(places: list[int], defines: dict[str, int], preinit: bool = False) -> Stub:
    """The stub's pieces linked at ``places`` (one a piece) with the constants ``defines``;
    ``preinit``: the stub with a preinit function."""
    sections = _sections(preinit)
    if len(places) != len(sections):
        raise AssertionError(f"{len(places)} places for {len(sections)} pieces")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stub.elf"
        cmd = ["ld", "-e", "_anvil_stub", "-o", str(out), str(_object(preinit))]
        cmd += [f"--section-start={name}={place & (1 << 64) - 1:#x}" for (name, _), place in zip(sections, places)]
        for name in DEFINES + (PREINIT_DEFINES if preinit else ()):
            cmd += ["--defsym", f"{name}={defines[name] & (1 << 64) - 1:#x}"]
        _run(cmd)
        with open(out, "rb") as f:
            elf = ELFFile(f)
            pieces = [(place, elf.get_section_by_name(name).data()) for (name, _), place in zip(sections, places)]
            symbols = elf.get_section_by_name(".symtab")
            entry = symbols.get_symbol_by_name("_anvil_stub")[0]["st_value"]
            if not preinit:
                return Stub(pieces, entry)
            return Stub(pieces, entry, symbols.get_symbol_by_name("_anvil_preinit")[0]["st_value"],
                        symbols.get_symbol_by_name("_anvil_go_back")[0]["st_value"])


def consecutive(start: int, preinit: bool = False) -> tuple[list[int], int]:
    """The pieces one after the other from ``start``: their places and where the last ends."""
    places, at = [], start
    for size in piece_sizes(preinit):
        at = (at + ALIGN - 1) & ~(ALIGN - 1)
        places.append(at)
        at += size
    return places, at


def spread(runs: list[tuple[int, int]], preinit: bool = False) -> list[int] | None:
    """Places for the pieces in the free ``runs`` ([start, end)), the largest piece first;
    None where they do not all fit."""
    free = [[(lo + ALIGN - 1) & ~(ALIGN - 1), hi] for lo, hi in runs]
    places: dict[int, int] = {}
    sizes = piece_sizes(preinit)
    for k in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
        size = sizes[k]
        run = next((r for r in free if r[1] - r[0] >= size), None)
        if run is None:
            return None
        places[k] = run[0]
        run[0] = (run[0] + size + ALIGN - 1) & ~(ALIGN - 1)
    return [places[k] for k in range(len(sizes))]


def interpreter_code(binary: Binary, elf: ELFFile) -> list[tuple[int, int]]:
    """The [start, end) of the code of an interpreter that calls the program's entry as main
    (``Binary.entry_called_as_main``) and is linked at fixed addresses, as klibc's library
    is: the program calls its functions there. Empty where there is none, or it cannot be
    read."""
    if not binary.entry_called_as_main:
        return []
    interpreter = next(segment for segment in elf.iter_segments() if segment["p_type"] == "PT_INTERP")
    try:
        with open(interpreter.get_interp_name(), "rb") as f:
            library = ELFFile(f)
            if library["e_type"] != "ET_EXEC":
                return []
            return [(segment["p_vaddr"], segment["p_vaddr"] + segment["p_memsz"]) for segment in library.iter_segments()
                    if segment["p_type"] == "PT_LOAD" and segment["p_flags"] & 1]
    except (OSError, ELFError):
        return []

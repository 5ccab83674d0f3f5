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

SOURCE = Path(__file__).resolve().parents[3] / "runtime_stubs" / "x86_64" / "stub.S"
DEFINES = ("ANVIL_REGION", "ANVIL_LENGTH", "ANVIL_OFFSET", "ANVIL_ENTRY", "ANVIL_INIT", "ANVIL_PATCHES")
ALIGN = 16  # each piece's place


@dataclass(frozen=True)
class Stub:
    pieces: list[tuple[int, bytes]]  # (link address, bytes) of each piece
    entry: int                       # the stub's entry (_anvil_stub)


def _run(cmd: list[str]) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise AnvilError(f"{cmd[0]} not found: x86-64 programs need the host's binutils and gcc "
                         "(scripts/bootstrap.sh installs them)") from None
    except subprocess.CalledProcessError as e:
        raise AnvilError(f"{cmd[0]} failed on the loader stub: {e.stderr.strip()}") from None


@cache
def _object() -> Path:
    obj = cache_dir() / f"x86_64-stub-{hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]}.o"
    if not obj.exists():
        with tempfile.TemporaryDirectory() as tmp:
            made = Path(tmp) / "stub.o"
            _run(["gcc", "-c", str(SOURCE), "-o", str(made)])
            made.replace(obj)
    return obj


@cache
def piece_sizes() -> tuple[int, ...]:
    """The size of each piece, in order (the same wherever they go: every reference between
    them is a 32-bit displacement)."""
    with open(_object(), "rb") as f:
        elf = ELFFile(f)
        sizes = []
        while (section := elf.get_section_by_name(f".anvil_stub{len(sizes) + 1}")) is not None:
            sizes.append(section["sh_size"])
    return tuple(sizes)


def assemble(places: list[int], defines: dict[str, int]) -> Stub:
    """The stub's pieces linked at ``places`` (one a piece) with the constants ``defines``."""
    if len(places) != len(piece_sizes()):
        raise AssertionError(f"{len(places)} places for {len(piece_sizes())} pieces")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stub.elf"
        cmd = ["ld", "-e", "_anvil_stub", "-o", str(out), str(_object())]
        cmd += [f"--section-start=.anvil_stub{k + 1}={place & (1 << 64) - 1:#x}" for k, place in enumerate(places)]
        for name in DEFINES:
            cmd += ["--defsym", f"{name}={defines[name] & (1 << 64) - 1:#x}"]
        _run(cmd)
        with open(out, "rb") as f:
            elf = ELFFile(f)
            pieces = [(place, elf.get_section_by_name(f".anvil_stub{k + 1}").data())
                      for k, place in enumerate(places)]
            entry = elf.get_section_by_name(".symtab").get_symbol_by_name("_anvil_stub")[0]["st_value"]
    return Stub(pieces, entry)


def consecutive(start: int) -> tuple[list[int], int]:
    """The pieces one after the other from ``start``: their places and where the last ends."""
    places, at = [], start
    for size in piece_sizes():
        at = (at + ALIGN - 1) & ~(ALIGN - 1)
        places.append(at)
        at += size
    return places, at


def spread(runs: list[tuple[int, int]]) -> list[int] | None:
    """Places for the pieces in the free ``runs`` ([start, end)), the largest piece first;
    None where they do not all fit."""
    free = [[(lo + ALIGN - 1) & ~(ALIGN - 1), hi] for lo, hi in runs]
    places: dict[int, int] = {}
    for k in sorted(range(len(piece_sizes())), key=lambda k: -piece_sizes()[k]):
        size = piece_sizes()[k]
        run = next((r for r in free if r[1] - r[0] >= size), None)
        if run is None:
            return None
        places[k] = run[0]
        run[0] = (run[0] + size + ALIGN - 1) & ~(ALIGN - 1)
    return [places[k] for k in range(len(piece_sizes()))]


def entry_called_as_main(elf: ELFFile) -> bool:
    """Whether the program's interpreter calls its entry as ``main(argc, argv, envp)``
    instead of entering it on the kernel's stack, as a dynamic linker does: klibc's shared
    library, which a program names as its interpreter (PT_INTERP) without a dynamic
    section."""
    kinds = {segment["p_type"] for segment in elf.iter_segments()}
    return "PT_INTERP" in kinds and "PT_DYNAMIC" not in kinds


def interpreter_code(elf: ELFFile) -> list[tuple[int, int]]:
    """The [start, end) of the code of an interpreter that calls the program's entry as main
    (``entry_called_as_main``) and is linked at fixed addresses, as klibc's library is: the
    program calls its functions there. Empty where there is none, or it cannot be read."""
    if not entry_called_as_main(elf):
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

"""Feed mutated ELF files to Anvil and check that bad input never crashes it.

Each mutant is a real ARM ELF file (by default a dynamic glibc program, a static one and
a Cortex-M firmware image, built by ``tests/support``) with one or two faults put in:
random bit flips; an ELF-header field (``e_ident`` class and byte order, ``e_machine``,
``e_entry``, ``e_phoff``, ``e_shoff``, ``e_shnum``, ``e_shstrndx``, ...); a program-header
or section-header field; string-table bytes; a symbol's fields (``st_name``,
``st_value``, ``st_size``, ...); bytes of the DWARF, unwinding, dynamic, relocation or PLT
sections; or truncation. The mutant goes through ``anvil instrument`` (inscount, sometimes
cachesim, sometimes ``--mode rehost``), ``anvil inspect`` or ``anvil image``, and what
the user would see is classified:

- ``ok``: exit status 0, no traceback, and for ``instrument``/``image`` the output written;
- ``refused``: exit status 2, exactly one line on stderr starting ``anvil: error:``, and
  nothing left in the output's directory (no output, report, site table or temporary file);
- anything else is a FAILURE: a traceback, another status (``internal error``'s 70
  included), more than one line, files left behind, or no answer within ``--timeout``.

Every mutant runs in a child process of its own, forked from this one once Anvil is
imported (``--exec`` runs ``python3 -m rewriter.cli`` instead, slower by Python's
start-up): the child does what the ``anvil`` command does, with its stdout and stderr in
files, so the status, the stderr and the files are exactly the user's. A mutant is made
from ``(--seed, its number)`` alone, so ``--first N --count 1`` remakes mutant N; with
``--keep DIR`` failing mutants are kept there with the command that fails.

    python3 benchmarks/fuzz_elf.py --seed 1 --count 3000 --jobs 2 --timeout 60
    python3 benchmarks/fuzz_elf.py --count 200 my.elf other.elf   # your own inputs
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# --- ELF32 little-endian layout (the inputs are valid; only their mutants are not) -------

# (offset, size) of the ELF header fields.
EHDR_FIELDS: dict[str, tuple[int, int]] = {
    "EI_CLASS": (4, 1), "EI_DATA": (5, 1), "EI_VERSION": (6, 1), "e_type": (16, 2), "e_machine": (18, 2),
    "e_version": (20, 4), "e_entry": (24, 4), "e_phoff": (28, 4), "e_shoff": (32, 4), "e_flags": (36, 4),
    "e_ehsize": (40, 2), "e_phentsize": (42, 2), "e_phnum": (44, 2), "e_shentsize": (46, 2), "e_shnum": (48, 2),
    "e_shstrndx": (50, 2),
}
PHDR_FIELDS: dict[str, tuple[int, int]] = {
    "p_type": (0, 4), "p_offset": (4, 4), "p_vaddr": (8, 4), "p_paddr": (12, 4), "p_filesz": (16, 4),
    "p_memsz": (20, 4), "p_flags": (24, 4), "p_align": (28, 4),
}
SHDR_FIELDS: dict[str, tuple[int, int]] = {
    "sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 4), "sh_addr": (12, 4), "sh_offset": (16, 4),
    "sh_size": (20, 4), "sh_link": (24, 4), "sh_info": (28, 4), "sh_addralign": (32, 4), "sh_entsize": (36, 4),
}
SYM_FIELDS: dict[str, tuple[int, int]] = {
    "st_name": (0, 4), "st_value": (4, 4), "st_size": (8, 4), "st_info": (12, 1), "st_other": (13, 1),
    "st_shndx": (14, 2),
}
# The same fields in an ELF64 file (x86-64 programs).
EHDR64_FIELDS: dict[str, tuple[int, int]] = {
    "EI_CLASS": (4, 1), "EI_DATA": (5, 1), "EI_VERSION": (6, 1), "e_type": (16, 2), "e_machine": (18, 2),
    "e_version": (20, 4), "e_entry": (24, 8), "e_phoff": (32, 8), "e_shoff": (40, 8), "e_flags": (48, 4),
    "e_ehsize": (52, 2), "e_phentsize": (54, 2), "e_phnum": (56, 2), "e_shentsize": (58, 2), "e_shnum": (60, 2),
    "e_shstrndx": (62, 2),
}
PHDR64_FIELDS: dict[str, tuple[int, int]] = {
    "p_type": (0, 4), "p_flags": (4, 4), "p_offset": (8, 8), "p_vaddr": (16, 8), "p_paddr": (24, 8),
    "p_filesz": (32, 8), "p_memsz": (40, 8), "p_align": (48, 8),
}
SHDR64_FIELDS: dict[str, tuple[int, int]] = {
    "sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 8), "sh_addr": (16, 8), "sh_offset": (24, 8),
    "sh_size": (32, 8), "sh_link": (40, 4), "sh_info": (44, 4), "sh_addralign": (48, 8), "sh_entsize": (56, 8),
}
SYM64_FIELDS: dict[str, tuple[int, int]] = {
    "st_name": (0, 4), "st_info": (4, 1), "st_other": (5, 1), "st_shndx": (6, 2), "st_value": (8, 8),
    "st_size": (16, 8),
}
SHT_SYMTAB, SHT_STRTAB, SHT_DYNSYM = 2, 3, 11
# Sections whose contents the loader reads beyond the headers and symbols.
CONTENT_SECTIONS = (".ARM.exidx", ".ARM.extab", ".eh_frame", ".dynamic", ".rel.plt", ".rel.dyn", ".plt", ".got",
                    ".ARM.attributes", ".init_array", ".data", ".rodata", ".rela.plt", ".rela.dyn", ".plt.sec",
                    ".gcc_except_table", ".eh_frame_hdr", ".data.rel.ro")


@dataclass
class Section:
    """One section header of the original file."""

    index: int
    name: str
    type: int
    offset: int
    size: int
    header: int  # file offset of the header itself
    entsize: int


@dataclass
class Layout:
    """Where the headers and tables of a valid little-endian ELF file (32- or 64-bit) are,
    and where its class keeps each header's fields."""

    phoff: int
    phnum: int
    phentsize: int
    shoff: int
    shnum: int
    shentsize: int
    sections: list[Section] = field(default_factory=list)
    ehdr_fields: dict[str, tuple[int, int]] = field(default_factory=lambda: EHDR_FIELDS)
    phdr_fields: dict[str, tuple[int, int]] = field(default_factory=lambda: PHDR_FIELDS)
    shdr_fields: dict[str, tuple[int, int]] = field(default_factory=lambda: SHDR_FIELDS)
    sym_fields: dict[str, tuple[int, int]] = field(default_factory=lambda: SYM_FIELDS)
    sym_size: int = 16

    @classmethod
    def of(cls, data: bytes) -> Layout:
        """Read the layout of ``data`` (a valid little-endian ELF file of either class)."""
        if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] != 1:
            raise ValueError("not a little-endian ELF file")
        if data[4] == 1:
            phoff, shoff = struct.unpack_from("<II", data, 28)
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 42)
            layout = cls(phoff, phnum, phentsize, shoff, shnum, shentsize)
            header = "<10I"
        else:
            phoff, shoff = struct.unpack_from("<QQ", data, 32)
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
            layout = cls(phoff, phnum, phentsize, shoff, shnum, shentsize, [], EHDR64_FIELDS, PHDR64_FIELDS,
                         SHDR64_FIELDS, SYM64_FIELDS, 24)
            header = "<IIQQQQIIQQ"
        headers = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
        names_at = headers[shstrndx][4] if shstrndx < shnum else 0
        for i, h in enumerate(headers):
            end = data.find(b"\0", names_at + h[0])
            name = data[names_at + h[0]:end].decode(errors="replace") if names_at else ""
            layout.sections.append(Section(i, name, h[1], h[4], h[5], shoff + i * shentsize, h[9]))
        return layout

    def named(self, *names: str) -> list[Section]:
        """The sections with any of these names (that have bytes in the file)."""
        return [s for s in self.sections if s.name in names and s.size and s.type != 8]  # 8: SHT_NOBITS


# --- mutations ----------------------------------------------------------------------------

def _interesting(rng: random.Random, size: int, original: int, file_size: int) -> int:
    """A value likely to break a parser: 0, 1, the extremes, the file's size and near it, a
    small step from the original, a multiple of it, or noise."""
    top = (1 << (8 * size)) - 1
    choices = [0, 1, 2, top, top >> 1, (top >> 1) + 1, file_size, file_size - 1, file_size + 1,
               original + rng.choice((-8, -4, -1, 1, 4, 8, 64, 4096)), original * 2, original >> 1,
               original ^ (1 << rng.randrange(8 * size)), rng.randrange(top + 1), rng.randrange(min(top, 256) + 1)]
    return rng.choice(choices) & top


def _put(data: bytearray, at: int, size: int, value: int) -> None:
    if 0 <= at and at + size <= len(data):
        data[at:at + size] = value.to_bytes(size, "little")


def _get(data: bytes | bytearray, at: int, size: int) -> int:
    return int.from_bytes(data[at:at + size], "little")


def _set_field(data: bytearray, rng: random.Random, base: int, fields: dict[str, tuple[int, int]],
               what: str) -> str:
    name = rng.choice(sorted(fields))
    offset, size = fields[name]
    original = _get(data, base + offset, size)
    value = _interesting(rng, size, original, len(data))
    _put(data, base + offset, size, value)
    return f"{what}.{name} {original:#x}->{value:#x}"


def bit_flips(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Flip 1-16 random bits anywhere in the file."""
    flips = [rng.randrange(len(data) * 8) for _ in range(rng.randint(1, 16))]
    for bit in flips:
        data[bit >> 3] ^= 1 << (bit & 7)
    return f"bit flips at {', '.join(f'{b >> 3:#x}.{b & 7}' for b in flips[:4])}{' ...' if len(flips) > 4 else ''}"


def elf_header(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Set one ELF-header field to an interesting value."""
    return _set_field(data, rng, 0, layout.ehdr_fields, "ehdr")


def program_header(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Set one field of one program header."""
    i = rng.randrange(max(layout.phnum, 1))
    return _set_field(data, rng, layout.phoff + i * layout.phentsize, layout.phdr_fields, f"phdr[{i}]")


def section_header(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Set one field of one section header (the symbol, string and code sections' more often)."""
    favoured = [s for s in layout.sections if s.type in (SHT_SYMTAB, SHT_STRTAB, SHT_DYNSYM) or s.name in
                (".text", ".plt", ".rel.plt", ".ARM.exidx", ".dynamic")]
    sec = rng.choice(favoured if favoured and rng.random() < 0.6 else layout.sections)
    return _set_field(data, rng, sec.header, layout.shdr_fields, f"shdr[{sec.index}]{sec.name}")


def string_table(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Spoil a string table: its terminators turned into letters, noise, or zeros."""
    tables = [s for s in layout.sections if s.type == SHT_STRTAB and s.size]
    if not tables:
        return bit_flips(data, layout, rng)
    sec = rng.choice(tables)
    start = sec.offset + rng.randrange(sec.size)
    end = min(sec.offset + sec.size, start + rng.choice((1, 8, 64, sec.size)), len(data))
    how = rng.choice(("unterminated", "noise", "zeros"))
    for at in range(start, end):
        if how == "unterminated":
            data[at] = data[at] or 0x41
        else:
            data[at] = rng.randrange(256) if how == "noise" else 0
    return f"{sec.name} {how} {start:#x}..{end:#x}"


def symbol_entry(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Set one field of one .symtab or .dynsym entry."""
    tables = [s for s in layout.sections if s.type in (SHT_SYMTAB, SHT_DYNSYM) and s.size >= layout.sym_size]
    if not tables:
        return bit_flips(data, layout, rng)
    sec = rng.choice(tables)
    i = rng.randrange(sec.size // layout.sym_size)
    return _set_field(data, rng, sec.offset + layout.sym_size * i, layout.sym_fields, f"{sec.name}[{i}]")


def section_bytes(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Spoil bytes or words of a section the loader reads: DWARF, unwinding tables, dynamic
    section, relocations, PLT, build attributes, data."""
    candidates = [s for s in layout.sections if s.size and s.type != 8 and
                  (s.name.startswith(".debug_") or s.name in CONTENT_SECTIONS)]
    if not candidates:
        return bit_flips(data, layout, rng)
    sec = rng.choice(candidates)
    changed = []
    for _ in range(rng.randint(1, 6)):
        at = sec.offset + (rng.randrange(sec.size) & ~3)
        size = min(4, sec.offset + sec.size - at)
        value = _interesting(rng, size, _get(data, at, size), len(data))
        _put(data, at, size, value)
        changed.append(f"{at:#x}={value:#x}")
    return f"{sec.name} words {', '.join(changed)}"


def truncation(data: bytearray, layout: Layout, rng: random.Random) -> str:
    """Cut the file: in the headers, inside the section table, or anywhere."""
    where = rng.choice(("headers", "section table", "anywhere"))
    if where == "headers":
        cut = rng.randrange(0, min(len(data), max(layout.phoff + layout.phnum * layout.phentsize, 53)))
    elif where == "section table" and layout.shoff < len(data):
        cut = rng.randrange(layout.shoff, len(data))
    else:
        cut = rng.randrange(len(data))
    del data[cut:]
    return f"truncated at {cut:#x} ({where})"


MUTATORS: dict[str, Callable[[bytearray, Layout, random.Random], str]] = {
    "bit flips": bit_flips, "ELF header": elf_header, "program header": program_header,
    "section header": section_header, "string table": string_table, "symbol": symbol_entry,
    "section bytes": section_bytes, "truncation": truncation,
}


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str, str]:
    """(mutant, its kind, what was changed): one mutation, sometimes two; the file is
    never left unchanged."""
    layout = Layout.of(data)
    out = bytearray(data)
    kinds = [rng.choice(sorted(MUTATORS)) for _ in range(2 if rng.random() < 0.2 else 1)]
    notes = []
    # Truncation last: the other mutations find the tables where the layout says.
    for kind in sorted(kinds, key=lambda k: k == "truncation"):
        notes.append(MUTATORS[kind](out, layout, rng))
    if bytes(out) == data:  # an "interesting" value that was the original one
        out[rng.randrange(len(out))] ^= 0xFF
        notes.append("and one byte inverted")
    return bytes(out), kinds[0], "; ".join(notes)


# --- running a mutant ----------------------------------------------------------------------

@dataclass
class Case:
    """One mutant and the command it is given to."""

    number: int
    source: str
    kind: str
    change: str
    data: bytes
    command: list[str]  # anvil's arguments; INPUT and OUTPUT stand for the paths


@dataclass
class Outcome:
    """How a case ended, as the user would see it."""

    case: Case
    verdict: str  # ok, refused, or FAILURE: <why>
    signature: str = ""  # for failures: what went wrong where (groups one fault's mutants)
    stderr: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        """True unless ok or refused."""
        return self.verdict not in ("ok", "refused")


def make_case(number: int, seed: int, inputs: Sequence[tuple[str, bytes, float]]) -> Case:
    """Mutant ``number`` of the run with ``seed``: an input (by weight), its mutation and a command."""
    rng = random.Random(f"{seed}:{number}")
    source, original, _ = rng.choices(inputs, weights=[w for _, _, w in inputs])[0]
    data, kind, change = mutate(original, rng)
    roll = rng.random()
    if roll < 0.08:
        command = ["inspect", "INPUT"] + (["--proc", "*"] if rng.random() < 0.5 else [])
    elif roll < 0.14:
        command = ["image", "INPUT", "-o", "OUTPUT", "--format", rng.choice(("bin", "hex"))]
    else:
        tool = "cachesim" if rng.random() < 0.2 else "inscount"
        command = ["instrument", "--tool", tool, "INPUT", "-o", "OUTPUT", "-j", "2" if rng.random() < 0.1 else "1"]
        if rng.random() < 0.25:
            command += ["--mode", "rehost"]
    return Case(number, source, kind, change, data, command)


def _argv(case: Case, directory: Path) -> list[str]:
    paths = {"INPUT": str(directory / "input.elf"), "OUTPUT": str(directory / "out.inst")}
    return [paths.get(word, word) for word in case.command]


def _child(argv: list[str], directory: Path) -> None:
    """In the forked child: be ``anvil ARGV``, stdout and stderr to files; never returns."""
    status = 1
    try:
        os.setpgid(0, 0)  # its own group: a timeout ends it with everything it started
        os.chdir(directory)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(directory.parent / f"{directory.name}.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                    fd)
        # New streams on those descriptors: the parent's may be another program's (pytest's capture).
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.argv = ["anvil", *argv]
        from rewriter import cli
        cli.console()
        status = 0
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()  # what the interpreter prints for an uncaught exception, status 1
        status = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


def _start(case: Case, work: Path, use_exec: bool) -> tuple[int | subprocess.Popen, Path]:
    directory = work / f"case{case.number}"
    directory.mkdir()
    (directory / "input.elf").write_bytes(case.data)
    argv = _argv(case, directory)
    if use_exec:
        out = open(work / f"case{case.number}.stdout", "wb")
        err = open(work / f"case{case.number}.stderr", "wb")
        with out, err:
            proc = subprocess.Popen([sys.executable, "-m", "rewriter.cli", *argv], stdout=out, stderr=err,
                                    cwd=directory, start_new_session=True)
        return proc, directory
    sys.stdout.flush()  # or the child would write what this process has buffered
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(argv, directory)
    return pid, directory


def classify(case: Case, directory: Path, status: int | None, stderr: str) -> tuple[str, str]:
    """(verdict, signature) of a finished case; ``status`` None: it timed out."""
    left = sorted(p.name for p in directory.iterdir() if p.name != "input.elf")
    lines = stderr.strip().splitlines()
    if status is None:
        return "FAILURE: timeout", "timeout"
    if "Traceback (most recent call last)" in stderr:
        return "FAILURE: traceback", _traceback_signature(stderr)
    if status == 0:
        wants_output = case.command[0] in ("instrument", "image")
        if wants_output and "out.inst" not in left:
            return "FAILURE: status 0 without output", "status 0 without output"
        return "ok", ""
    if status == 2 and len(lines) == 1 and lines[0].startswith("anvil: error:"):
        if left:
            return "FAILURE: files left", f"files left after refusal: {' '.join(left)}"
        return "refused", ""
    if status == 2:
        return "FAILURE: stderr", f"status 2 with {len(lines)} stderr lines: {(lines or [''])[-1][:100]}"
    return f"FAILURE: status {status}", f"status {status}: {(lines or [''])[-1][:100]}"


def _traceback_signature(stderr: str) -> str:
    """The exception and the innermost frame in Anvil's own code: one fault, one signature."""
    lines = stderr.strip().splitlines()
    last = next((ln for ln in reversed(lines) if ln and not ln.startswith(" ")), "?")
    frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")]
    own = [f for f in frames if "/rewriter/" in f or "/rehost/" in f]
    where = (own or frames or ["?"])[-1]
    where = where.replace(str(REPO_ROOT) + "/", "")
    return f"{last[:120]} @ {where}"


def run_cases(cases: Sequence[Case], jobs: int = 1, timeout: float = 60.0, use_exec: bool = False,
              keep: Path | None = None, report: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run every case, ``jobs`` at a time, each in a process of its own (killed after
    ``timeout`` seconds, with what it started); the outcomes in case order."""
    if not use_exec:
        # Imported once here, before forking: children start at once, and all run the same code.
        import rewriter.cli  # noqa: F401
        import rewriter.emit.inhost  # noqa: F401
        import rewriter.emit.rehost  # noqa: F401
        import rewriter.image  # noqa: F401
        import rewriter.ir.elf_loader  # noqa: F401
        import rewriter.tool_files  # noqa: F401
    outcomes: dict[int, Outcome] = {}
    pending = list(reversed(cases))
    running: dict[int, tuple[Case, int | subprocess.Popen, Path, float]] = {}
    with tempfile.TemporaryDirectory(prefix="anvil-fuzz-") as tmp:
        work = Path(tmp)
        while pending or running:
            while pending and len(running) < jobs:
                case = pending.pop()
                handle, directory = _start(case, work, use_exec)
                running[case.number] = (case, handle, directory, time.monotonic())
            time.sleep(0.01)
            for number, (case, handle, directory, started) in list(running.items()):
                status = _poll(handle)
                elapsed = time.monotonic() - started
                if status is _RUNNING and elapsed < timeout:
                    continue
                if status is _RUNNING:
                    _kill(handle)
                    status = None
                del running[number]
                streams = [work / f"{directory.name}.{name}" for name in ("stdout", "stderr")]
                stderr = streams[1].read_text(errors="replace") if streams[1].exists() else ""
                verdict, signature = classify(case, directory, status, stderr)
                outcome = Outcome(case, verdict, signature, stderr, elapsed)
                outcomes[number] = outcome
                if outcome.failed and keep is not None:
                    _keep(outcome, keep)
                if report is not None:
                    report(outcome)
                shutil.rmtree(directory, ignore_errors=True)
                for stream in streams:
                    stream.unlink(missing_ok=True)
    return [outcomes[c.number] for c in cases]


_RUNNING = object()


def _poll(handle: int | subprocess.Popen) -> object:
    """The exit status (a negative one: killed by that signal), or _RUNNING."""
    if isinstance(handle, subprocess.Popen):
        code = handle.poll()
        return _RUNNING if code is None else code
    pid, status = os.waitpid(handle, os.WNOHANG)
    if pid == 0:
        return _RUNNING
    return os.waitstatus_to_exitcode(status)


def _kill(handle: int | subprocess.Popen) -> None:
    """End a case that took too long, with every process it started (its own process group)."""
    pid = handle.pid if isinstance(handle, subprocess.Popen) else handle
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if isinstance(handle, subprocess.Popen):
        handle.wait()
    else:
        os.waitpid(pid, 0)


def _keep(outcome: Outcome, keep: Path) -> None:
    """Save a failing mutant and how to reproduce it."""
    keep.mkdir(parents=True, exist_ok=True)
    case = outcome.case
    path = keep / f"mutant{case.number}.elf"
    path.write_bytes(case.data)
    argv = [str(path) if w == "INPUT" else f"{path}.out" if w == "OUTPUT" else w for w in case.command]
    (keep / f"mutant{case.number}.txt").write_text(
        f"{outcome.verdict}\n{case.source}: {case.change}\npython3 -m rewriter.cli {shlex.join(argv)}\n\n"
        f"{outcome.stderr}")


# --- the campaign --------------------------------------------------------------------------

def default_inputs() -> list[tuple[str, bytes, float]]:
    """The sample programs (name, bytes, weight): dynamic glibc (often: it rewrites in a
    fraction of a second), firmware, and static glibc (rarely: seconds each)."""
    from tests.support.boards import build_firmware
    from tests.support.samples import build

    return [("sort O2-thumb-dyn", build("sort", "O2-thumb-dyn").read_bytes(), 6.0),
            ("crc mps2-an385 firmware", build_firmware("crc", "mps2-an385").read_bytes(), 3.0),
            ("sort Os-thumb-static", build("sort", "Os-thumb-static").read_bytes(), 1.0)]


def table(outcomes: Sequence[Outcome]) -> str:
    """Counts per mutation kind and verdict, as Markdown, then each distinct failure."""
    verdicts = ["ok", "refused", "FAILURE"]
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for o in outcomes:
        counts[o.case.kind]["FAILURE" if o.failed else o.verdict] += 1
    rows = ["| mutation | mutants | " + " | ".join(verdicts) + " |", "|---|---:|" + "---:|" * len(verdicts)]
    for kind in sorted(counts) + ["all"]:
        c = sum(counts.values(), collections.Counter()) if kind == "all" else counts[kind]
        rows.append(f"| {kind} | {sum(c.values())} | " + " | ".join(str(c[v]) for v in verdicts) + " |")
    failures: dict[str, list[Outcome]] = collections.defaultdict(list)
    for o in outcomes:
        if o.failed:
            failures[o.signature].append(o)
    for signature, group in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        first = group[0].case
        rows.append(f"\n{len(group)} x {signature}\n    e.g. mutant {first.number}: {first.source}: {first.change}; "
                    f"anvil {' '.join(first.command)}")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """The command: make the mutants, run them, print the table; status 1 if any failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="*", help="ELF files to mutate, ARM or x86-64 (default: the samples)")
    parser.add_argument("--seed", type=int, default=1, help="the run's seed (default 1)")
    parser.add_argument("--count", type=int, default=300, help="mutants to make (default 300)")
    parser.add_argument("--first", type=int, default=0, help="number of the first mutant (default 0)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one mutant may take (default 60)")
    parser.add_argument("--exec", dest="use_exec", action="store_true",
                        help="run 'python3 -m rewriter.cli' for each mutant instead of a forked child")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="save failing mutants here")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per failing mutant while running")
    args = parser.parse_args(argv)
    inputs = [(p, Path(p).read_bytes(), 1.0) for p in args.inputs] if args.inputs else default_inputs()
    cases = [make_case(n, args.seed, inputs) for n in range(args.first, args.first + args.count)]
    started = time.monotonic()
    done = [0]

    def report(o: Outcome) -> None:
        done[0] += 1
        if o.failed and not args.quiet:
            print(f"[{done[0]}/{len(cases)}] mutant {o.case.number} {o.verdict}: {o.signature}", file=sys.stderr,
                  flush=True)
        if done[0] % 100 == 0:
            print(f"[{done[0]}/{len(cases)}] {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    outcomes = run_cases(cases, jobs=args.jobs, timeout=args.timeout, use_exec=args.use_exec, keep=args.keep,
                         report=report)
    print(f"seed {args.seed}, mutants {args.first}..{args.first + args.count - 1}, "
          f"{time.monotonic() - started:.0f} s, jobs {args.jobs}, timeout {args.timeout:g} s")
    print(table(outcomes))
    return 1 if any(o.failed for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())

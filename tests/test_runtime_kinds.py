"""Kinds of program the corpus lacked before decision 0066: GHC's Haskell, whose code is A32
entered through info pointers, in a fixed-address program whose data holds odd numbers
that read as Thumb code addresses.

- hspec-discover (Debian's, stripped): Thumb jumps were written over its A32 code where an
  odd literal (an offset the code adds the PC to) or an odd number in its data (the offsets
  of GHC's ``Text`` literals) was taken for a Thumb function: SIGILL, then GHC's "strange
  closure type" and SIGSEGV. Its A32 code, entered through even info pointers in data, is
  found by the rule for even words in data (decision 0069).
- Small programs assembled here show each rule with the assembler as the oracle: a literal
  that a PC-relative add takes is no Thumb entry; the A32 test (``a32_looking``) never
  takes a Thumb function for A32 code.

The oracle of counts is qemu's (``qemu-arm -singlestep -d exec``). GHC's runtime ticks a
timer (SIGVTALRM) whose ticks move its scheduling, so both runs here block that signal: the
runtime installs its handler but the ticks never arrive, and the count repeats.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.counted import in_offset_column
from rewriter.ir.discovery import a32_looking
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.corpus import CORPUS, environment, fetch, prepare
from tests.support.run import assert_same_behaviour, instrument, instrument_ir, place, results, run_prog
from tests.support.samples import CC, SAMPLES_DIR, stripped


@pytest.fixture
def no_timer_ticks():
    """Block SIGVTALRM and SIGALRM in this process, so that the programs it starts inherit
    the mask (GHC's runtime never unblocks them)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGVTALRM, signal.SIGALRM])
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)



def _corpus_original(name: str, tmp_path: Path):
    """The corpus program ``name``: its Program, executable, environment, the original placed
    in ``tmp_path`` with its workload's files, and the original's run."""
    program = CORPUS[name]
    binary, root = fetch(program)
    env = environment(program, root)
    placed = place(binary, tmp_path, "orig")
    prepare(program, placed.parent, binary, env)
    return program, binary, env, placed, run_prog(placed, program.args, program.stdin, env=env)

def test_haskell_program_transparent_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 no_timer_ticks: None) -> None:
    program, binary, env, placed, original = _corpus_original("hspec-discover", tmp_path)
    assert original.returncode == 0 and b"import qualified Data.Map.StrictSpec" in original.stdout
    monkeypatch.chdir(placed.parent)  # the trace runs where the workload's files are
    trace = trace_pcs(placed, program.args, program.stdin, env=env)
    assert trace.stdout == original.stdout
    executed = exe_pcs(trace, placed)

    loaded = load_binary(str(binary))  # once: the descent of 200k instructions is most of the test's time
    found = {ins.address for proc in loaded.procedures for ins in proc.instructions()}
    copy = instrument_ir(loaded, "inscount", tmp_path)
    prepare(program, copy.parent, binary, env)
    run = run_prog(copy, program.args, program.stdin, env=env, like_trace=True)
    assert_same_behaviour(original, run)
    # Every instruction found is counted exactly as often as qemu ran it, and nearly all that
    # ran is found (about 46 % was before the even info pointers in data were followed).
    counted = sum(n for pc, n in executed.items() if pc in found)
    assert results(run, "inscount")["total"] == counted
    assert counted >= 0.99 * sum(executed.values())



def test_d_program_started_before_its_libraries_identical(tmp_path: Path) -> None:
    """dustmite (gdc 12, Phobos a shared library; decision 0071): Phobos calls templates the
    program exports while the libraries initialise (the loader runs from DT_PREINIT_ARRAY);
    a descent ran past ``_d_assert_msg`` into a literal pool (flow stops at its own literals);
    the uncaught exception's message prints the return addresses it unwinds through (a D
    personality routine keeps the original ones). Stdout, stderr and exit status identical."""
    program, binary, env, _, original = _corpus_original("dustmite", tmp_path)
    assert original.returncode == 1 and b"Initial test fails" in original.stderr
    assert b"??:? ???[0x" in original.stderr  # the return addresses
    copy = instrument(binary, "inscount", tmp_path)
    prepare(program, copy.parent, binary, env)
    run = run_prog(copy, program.args, program.stdin, env=env)
    assert_same_behaviour(original, run)
    assert results(run, "inscount")["total"] > 1_000_000

LITERAL_OFFSET_ASM = """\
    .syntax unified
    .arm
    .text
    .global main
    .type main, %function
main:
    push {r4, lr}
    ldr r3, 1f              @ an odd number that reads as a Thumb address in the text,
0:  add r3, pc, r3          @ but an offset the PC is added to
    ldr r2, 2f              @ work's address, computed: no descent follows it
    add r2, r2, #64
    mov r0, #0
    blx r2
    pop {r4, pc}
1:  .word inside + 1
2:  .word work - 64
    .type work, %function
work:
    mov r1, #3
inside:
    add r0, r0, r1          @ A32 code, run in place, at the address the offset names
    add r0, r0, #39
    bx lr
    .section .note.GNU-stack,"",%progbits
"""


def _symbol(path: Path, name: str) -> int:
    with path.open("rb") as f:
        return next(s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols() if s.name == name)


def test_literal_taken_as_offset_is_no_thumb_entry(tmp_path: Path) -> None:
    """``ldr r3, =N; add r3, pc, r3`` with N odd and in the text: N is an offset, and the A32
    code at N - 1 gets no Thumb procedure (whose entry's jump would be written over it)."""
    source = tmp_path / "literal.s"
    source.write_text(LITERAL_OFFSET_ASM)
    built = tmp_path / "literal"
    subprocess.run([CC, "-no-pie", "-marm", str(source), "-o", str(built)], check=True, capture_output=True)
    inside = _symbol(built, "inside")
    binary = stripped(built, tmp_path / "literal.stripped")
    procedures = load_binary(str(binary)).procedures
    assert not any(p.address == inside and p.thumb for p in procedures)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 42
    executed = exe_pcs(trace_pcs(placed), placed)
    run = run_prog(instrument(binary, "inscount", tmp_path), like_trace=True)
    assert_same_behaviour(original, run)
    found = {ins.address for proc in procedures for ins in proc.instructions()}
    assert results(run, "inscount")["total"] == sum(n for pc, n in executed.items() if pc in found)


def _functions(path: Path) -> tuple[list[int], list[int], Callable[[int, int], bytes]]:
    """(Thumb function addresses, A32 ones, a reader of the loaded image) of an ELF file."""
    data = path.read_bytes()
    with path.open("rb") as f:
        elf = ELFFile(f)
        loads = [(s["p_vaddr"], s["p_offset"], s["p_filesz"]) for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        symbols = [s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()
                   if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s["st_shndx"] != "SHN_UNDEF"]

    def read(address: int, size: int) -> bytes:
        for vaddr, offset, filesz in loads:
            if vaddr <= address < vaddr + filesz:
                return data[offset + address - vaddr:offset + min(address - vaddr + size, filesz)]
        return b""
    return [s & ~1 for s in symbols if s & 1], [s for s in symbols if not s & 1], read


@pytest.mark.parametrize("sample", ["calls.c", "hash.c", "sort.c"])
def test_a32_looking_tells_the_compilers_instruction_sets(sample: str, tmp_path: Path) -> None:
    """The symbols of a -marm and a -mthumb build say which functions are A32: no Thumb
    function reads as A32 code (it would lose an entry found in data), and most A32 ones do
    (those next to the C runtime's tables may not: the test is for weak evidence only)."""
    thumb_entries: list[int] = []
    a32_entries: list[int] = []
    for isa in ("arm", "thumb"):
        out = tmp_path / f"{sample}.{isa}"
        subprocess.run([CC, "-O2", f"-m{isa}", "-no-pie", str(SAMPLES_DIR / sample), "-o", str(out)], check=True,
                       capture_output=True)
        thumb, a32, read = _functions(out)
        assert not [hex(a) for a in thumb if a32_looking(read, a)]
        thumb_entries += thumb
        a32_entries += [a for a in a32 if a32_looking(read, a)]
        if isa == "arm":
            assert len([a for a in a32 if a32_looking(read, a)]) >= 0.6 * len(a32)
    assert thumb_entries and a32_entries


def test_offset_columns() -> None:
    """GHC's static Text literals, (info pointer, offset, length) records, as they are in
    hspec-discover's data: the odd offsets are numbers; a table of Thumb function pointers,
    or of pairs (pointer, number), is not taken for one."""
    text = range(0xACE8, 0x103C84)

    def in_code(value: int) -> bool:
        return value & ~1 in text
    records = [0x107048, 0x10800, 6, 0x107048, 0x10808, 1, 0x107048, 0x1080A, 0x2C, 0x107048, 0x10837, 2,
               0x107048, 0x1083C, 1, 0x107048, 0x1083F, 0x17]
    assert in_offset_column(records, 10, in_code) and in_offset_column(records, 16, in_code)
    functions = [0x10121, 0x10189, 0x101F5, 0x10231, 0x102A9]
    assert not any(in_offset_column(functions, k, in_code) for k in range(len(functions)))
    pairs = [0x10121, 7, 0x10180, 8, 0x101F5, 9]  # an A32 function among Thumb ones, not as close as offsets
    assert not any(in_offset_column(pairs, k, in_code) for k in (0, 4))

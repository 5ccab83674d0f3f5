"""Firmware built in variants the other board tests do not use (tests/support/firmware_variants.py),
one test per class of fault scripts/firmware_sweep.py found (docs/decisions/0059-firmware-build-variants.md).

fpu.c calls wave() from its main loop and from the SysTick handler, which fires every 100
cycles and runs exactly TARGET times, so wave() runs ROUNDS + TARGET times however the
ticks fall; run with ``--icount 0`` the ticks land between any two instructions, inside
wave()'s counter updates too. The known answer is computed another way: wave()'s first
block is all it runs (straight-line float code), so its count is its calls times that
block's instructions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support.boards import anvil_cli, instrument, run_firmware
from tests.support.firmware_variants import build_variant

ROUNDS, TARGET = 3000, 200  # fpu.c's


@pytest.mark.parametrize("variant", ["app-at-64k", "vectors-in-ram"])
def test_handlers_of_a_table_vtor_points_at(variant: str, tmp_path: Path) -> None:
    """The image starts at 0x10000 behind a boot table at 0 (initial SP and reset vector
    only) and its reset handler points VTOR at the image's own table; or the table is
    copied into RAM and VTOR points there. The handler's code is found either way, so
    the counters of wave(), which the handler shares with main, are updated atomically
    (with only the table at the lowest address looked at, 11 of its 35200 instructions
    were lost behind a boot table)."""
    board = "mps2-an386"
    image = build_variant("fpu", board, variant)
    expected = run_firmware(image, board)
    assert expected[1] == 0 and expected[0].startswith(b"ticks=%d " % TARGET), expected
    wave = next(p for p in load_binary(str(image)).procedures if p.name == "wave")
    assert wave.blocks[0].instructions[-1].is_return  # one block runs (a padding NOP may follow)
    out = instrument(image, "inscount", tmp_path / "fw", "--skip", "wait_for_ticks")
    run = anvil_cli("run", "-q", "--board", board, "--icount", "0", out.name, cwd=out.parent, timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
    got = json.loads((out.parent / "fw.inscount.out").read_text())
    assert got["procedures"]["wave"] == (ROUNDS + TARGET) * len(wave.blocks[0].instructions)


def test_code_run_from_ram(tmp_path: Path) -> None:
    """The hot functions are linked to run from RAM (.ramfunc, copied there with .data at
    start-up, reached through the linker's long-branch veneers): 0x20000000 is beyond a
    4-byte branch's reach from their copies in flash, so their entries get the long jump
    (the whole image was refused: "B.W from 0x200009b8 cannot reach ..."). Output and exit
    status are the original's, inscount's total is QEMU's (ReHost's too), cachesim's figures
    are the reference cache's fed unicorn's accesses."""
    from tests.support.firmware_judge import Original, judge_firmware

    program, board = "crc", "mps2-an385"
    image = build_variant(program, board, "ramfunc")
    ram_code = [p for p in load_binary(str(image)).procedures if p.address >= 0x20000000]
    assert ram_code, "no function runs from RAM"
    original = Original(program, board, image)
    assert original.cache is not None and any(pc >= 0x20000000 for pc in original.pcs)
    outcomes = judge_firmware(original, ["inscount"], ["inhost", "rehost"], tmp_path / "i")
    outcomes += judge_firmware(original, ["cachesim"], ["inhost"], tmp_path / "c")
    assert outcomes == [("inscount/inhost", "ok"), ("inscount/rehost", "ok"), ("cachesim/inhost", "ok")], outcomes


def test_stripped_picolibc_image_has_no_a32_code(tmp_path: Path) -> None:
    """A stripped image (no symbols, no mapping symbols) built with picolibc: its crt0
    passes even constants to the calls it makes (1024 to sys_semihost_get_cmdline,
    __bss_size to memset), which the descent of stripped programs took for A32 entries
    (as main passed to __libc_start_main is, on Linux). A Cortex-M core has no A32 state,
    so no procedure of a firmware image is A32; cachesim refused the image ("A32 branch
    from 0x8424 cannot reach 0x84fa": a hook skipped in an A32 "procedure" inside
    skip_to_arg). Now cachesim's figures are the reference cache's fed unicorn's
    accesses, and output and exit status are the original's."""
    from tests.support.firmware_judge import Original, judge_firmware

    program, board = "crc", "mps2-an385"
    image = build_variant(program, board, "pico-O2-stripped")
    binary = load_binary(str(image))
    assert not binary.symbols and binary.is_firmware and all(p.thumb for p in binary.procedures)
    original = Original(program, board, image)
    assert original.cache is not None, original.cache_note
    assert judge_firmware(original, ["cachesim"], ["inhost"], tmp_path) == [("cachesim/inhost", "ok")]


def test_heap_in_a_bank_of_its_own(tmp_path: Path) -> None:
    """The heap is in the PSRAM, between _heap_start and _heap_end (as projects put it in
    external RAM); .data, .bss, "end" and the stack are in SSRAM2/3. Only the heap after
    "end" was known, so the PSRAM looked untouched and the counters went to its start,
    where sort's malloc'd array then overwrote them (inscount: 13542032002199 instructions
    for QEMU's 117911). Every heap the script names is the program's: the added RAM is
    outside [_heap_start, _heap_end), output and exit status are the original's, and
    inscount's total is QEMU's."""
    from elftools.elf.elffile import ELFFile

    from tests.support.firmware_judge import Original, judge_firmware

    program, board = "sort", "mps2-an385"
    image = build_variant(program, board, "psram-heap")
    with open(image, "rb") as f:
        elf = ELFFile(f)
        symbols = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}
        before = sum(1 for s in elf.iter_segments() if s["p_type"] == "PT_LOAD")
    heap = range(symbols["_heap_start"], symbols["_heap_end"])
    original = Original(program, board, image)
    assert b"heap=0x21" in original.expected[0]  # the program's heap is in the PSRAM
    assert judge_firmware(original, ["inscount"], ["inhost"], tmp_path) == [("inscount/inhost", "ok")]
    with open(tmp_path / "inscount-inhost" / "fw", "rb") as f:
        added = [s for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"][before:]
    data = [(s["p_vaddr"], s["p_memsz"]) for s in added if not s["p_flags"] & 1]
    assert data and all(start >= heap.stop or start + size <= heap.start for start, size in data), data


def test_stripped_image_virtual_calls_through_rodata_in_text(tmp_path: Path) -> None:
    """A stripped C++ image whose vtables are in .rodata, which the boards' script (as
    picolibc's and most firmware scripts do) puts inside the executable .text: the virtual
    step() methods are named by nothing but those vtables, so the descent never found them
    and they ran uninstrumented (inscount: 209769 of QEMU's 379769). Code pointers stored
    in the undecoded bytes of a firmware image's code, naming where code resumes after the
    code before it, are entries now: both methods (addresses from the unstripped build's
    symbols) are procedures, and inscount's total is QEMU's."""
    from elftools.elf.elffile import ELFFile

    from tests.support.firmware_judge import Original, judge_firmware

    program, board = "ctors", "mps2-an385"
    with open(build_variant(program, board, "O2"), "rb") as f:
        methods = {s["st_value"] & ~1 for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                   if s.name.endswith("4stepEm")}
    image = build_variant(program, board, "O2-stripped")
    assert len(methods) == 2 and methods <= {p.address for p in load_binary(str(image)).procedures}
    original = Original(program, board, image)
    assert judge_firmware(original, ["inscount"], ["inhost"], tmp_path) == [("inscount/inhost", "ok")]


def test_stripped_picolibc_image_strings_are_no_code(tmp_path: Path) -> None:
    """picolibc's crt0 keeps the format strings of its fault handler in .rodata, which
    picolibc.ld puts inside the executable .text; they are byte-aligned, so the literals
    that name them are odd, and read as Thumb code addresses they made procedures of
    text ("R0: 0x%08x"): the jumps written at their entries rewrote the strings, and sort
    printed garbage after its last line. A weak entry whose odd word starts a C string is
    that string's address: every procedure of the stripped image starts where a function
    of the unstripped build does, and sort prints what it printed, its count QEMU's."""
    from elftools.elf.elffile import ELFFile

    from tests.support.firmware_judge import Original, judge_firmware

    program, board = "sort", "mps2-an385"
    with open(build_variant(program, board, "pico-O2"), "rb") as f:
        functions = {s["st_value"] & ~1 for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                     if s["st_info"]["type"] == "STT_FUNC"}
    image = build_variant(program, board, "pico-O2-stripped")
    assert {p.address for p in load_binary(str(image)).procedures} <= functions
    original = Original(program, board, image)
    assert judge_firmware(original, ["inscount"], ["inhost"], tmp_path) == [("inscount/inhost", "ok")]

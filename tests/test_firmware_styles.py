"""Firmware linked in the styles of other toolchains and vendors (docs/decisions/0122-firmware-of-other-styles.md):
Rust's cortex-m-rt (its link.x sections and names, clang -Oz objects linked by ld.lld, with
and without LTO), NXP's MCUXpresso IDE (a section table the start-up walks, code and data in
a tightly coupled RAM), NXP's SDK for Kinetis (flash configuration words between the vector
table and the code, .data in one RAM bank and the rest in another) and TI's TivaWare on the
Stellaris board (the stack an array in .bss). Each runs through every tool and is judged
as scripts/firmware_sweep.py judges it (tests/support/firmware_judge.py): output and exit
status the original's, counts QEMU's, cache figures and the access trace unicorn's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.support.boards import anvil_cli, instrument
from tests.support.firmware_judge import TOOLS, Original, console, judge_firmware
from tests.support.firmware_variants import build_variant

BOARD = "mps2-an385"


@pytest.mark.parametrize("variant", ["cmrt-lld", "cmrt-lto"])
def test_cortex_m_rt_layout(variant: str, tmp_path: Path) -> None:
    """crc in cortex-m-rt's layout: the vector table's word 0 a LONG() of the script, the
    reset handler in .Reset, .rodata a PT_LOAD of its own, .uninit, the heap from __sheap
    (4-aligned: newlib's malloc then takes a path where unicorn 2.1.4 strays, running
    instructions less often than QEMU, and its chunks moved by 0x414 bytes; cachesim
    "differed" by a miss, the reference's fault). Every tool InHost, cachesim ReHost too, as
    QEMU and unicorn see the original."""
    original = Original("crc", BOARD, build_variant("crc", BOARD, variant))
    assert original.cache is not None, original.cache_note
    outcomes = judge_firmware(original, TOOLS, ["inhost"], tmp_path / "i")
    outcomes += judge_firmware(original, ["cachesim"], ["inhost", "rehost"], tmp_path / "r")
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes


def test_mcuxpresso_section_table_and_tightly_coupled_ram(tmp_path: Path) -> None:
    """crc in MCUXpresso's layout: the start-up copies .data and .data_RAM2 and zeroes the
    .bss sections from a table of LONG()s right after the vector table (no mapping symbol
    marks them as data), and crc's hot functions run from the tightly coupled RAM (the
    block RAM at 0x01000000, copied there with .data_RAM2), which a 4-byte branch from
    flash reaches. They are instrumented in their copies, and every tool's results are
    the original's."""
    image = build_variant("crc", BOARD, "mcux")
    binary = load_binary(str(image))
    in_dtc = [p for p in binary.procedures if 0x01000000 <= p.address < 0x01004000]
    assert in_dtc, "no function runs from the tightly coupled RAM"
    with open(image, "rb") as f:
        symbols = {s.name: s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    table = range(symbols["__section_table_start"], symbols["__section_table_end"])
    assert not any(p.address < table.stop and table.start < p.end for p in binary.procedures)
    original = Original("crc", BOARD, image)
    outcomes = judge_firmware(original, TOOLS, ["inhost"], tmp_path / "i")
    outcomes += judge_firmware(original, ["inscount"], ["rehost"], tmp_path / "r")
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes
    assert any(pc in range(0x01000000, 0x01004000) for pc in original.pcs)


def test_kinetis_flash_config_and_data_in_another_bank(tmp_path: Path) -> None:
    """sort in the Kinetis SDK's layout: 16 bytes of flash configuration at 0x400, between
    the vector table and the code, are no procedure; .data is in the block RAM, .bss, heap
    and stack in SSRAM2/3. Every tool's results are the original's (heap and stack
    addresses printed included)."""
    image = build_variant("sort", BOARD, "kinetis")
    assert not any(p.address < 0x410 and p.end > 0x400 for p in load_binary(str(image)).procedures)
    original = Original("sort", BOARD, image)
    outcomes = judge_firmware(original, TOOLS, ["inhost"], tmp_path)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes


def test_image_run_on_a_board_it_was_not_placed_for(tmp_path: Path) -> None:
    """TivaWare's layout for the Stellaris LM3S6965 fits the MPS2 boards' memories too, and
    nothing in the image names its part: without --board its instrumentation data goes
    where MPS2 has RAM (0x21000000), which the LM3S6965 lacks. `anvil run --board
    lm3s6965evb` ran it there anyway: the program's output, an empty results file. Now the
    run is refused in one line naming the board to instrument for; instrumented with
    `--board lm3s6965evb` (and a RAM region: librdimon's heap after .bss has no limit), it
    runs there with the original's output and QEMU's count."""
    board = "lm3s6965evb"
    image = build_variant("crc", board, "tiva")
    for mode in ("inhost", "rehost"):
        placed_elsewhere = instrument(image, "inscount", tmp_path / mode / "fw", "--mode", mode)
        run = anvil_cli("run", "-q", "--board", board, "fw", cwd=placed_elsewhere.parent, text=True)
        assert run.returncode == 2 and run.stdout == "", run
        assert run.stderr.count("\n") == 1 and f"--board {board}" in run.stderr, run.stderr
        assert not (placed_elsewhere.parent / "fw.inscount.out").exists()

    original = Original("crc", board, image)
    out = instrument(image, "inscount", tmp_path / "lm3s" / "fw", "--board", board, "--ram-region",
                     "0x20004000:0xc000")
    run = anvil_cli("run", "-q", "--board", board, "fw", cwd=out.parent)
    assert (console(run.stdout, run.stderr), run.returncode) == original.expected, run
    results = json.loads((out.parent / "fw.inscount.out").read_text())
    assert original.judge("inscount", results) == "ok", results["total"]


def test_cxx_exceptions_thrown_through_instrumented_frames(tmp_path: Path) -> None:
    """throw.cpp: C++ exceptions thrown three calls deep and caught by type, destructors run
    while unwinding. libgcc's unwinder finds each frame's function in .ARM.exidx by its
    return address; firmware calls used to leave relocated return addresses, in no table,
    and every throw ended in std::terminate (exit status 1, no output, every tool and mode).
    Calls in an image that throws now leave the original return address, and its return
    sites and landing pads jump to their copies (4-byte branches on a board), as on Linux:
    output and exit status are the original's, inscount's total (InHost and ReHost) and
    bbcount's blocks QEMU's."""
    image = build_variant("throw", BOARD, "eh-O2")
    original = Original("throw", BOARD, image)
    assert b"bad=" in original.expected[0] and b"range=" in original.expected[0]
    outcomes = judge_firmware(original, ["inscount"], ["inhost", "rehost"], tmp_path / "i")
    outcomes += judge_firmware(original, ["bbcount"], ["inhost"], tmp_path / "b")
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes
    report = json.loads((tmp_path / "i" / "inscount-inhost" / "fw.anvil.json").read_text())
    assert report["return_addresses"] == "original" and report["return_sites"]["unwinder_entries"] > 0


def test_exception_index_table_under_another_name(tmp_path: Path) -> None:
    """throw.cpp linked by the Kinetis SDK's script, which puts .ARM.exidx in an output
    section called .ARM (GNU ld then writes no PT_ARM_EXIDX either): the landing pads were
    looked for in a section called .ARM.exidx only, none was found, so none got a jump, and
    the first caught exception resumed in the original code (the run hung). The table is
    the section of type SHT_ARM_EXIDX: the landing pads are found, and inscount's run is
    the original's, its total QEMU's."""
    image = build_variant("throw", BOARD, "eh-kinetis")
    with open(image, "rb") as f:
        names = [s.name for s in ELFFile(f).iter_sections() if s["sh_type"] == "SHT_ARM_EXIDX"]
    assert names == [".ARM"]
    original = Original("throw", BOARD, image)
    assert judge_firmware(original, ["inscount"], ["inhost"], tmp_path) == [("inscount/inhost", "ok")]
    report = json.loads((tmp_path / "inscount-inhost" / "fw.anvil.json").read_text())
    assert report["return_sites"]["unwinder_entries"] > 0


def test_stripped_cxx_image_return_sites_in_data(tmp_path: Path) -> None:
    """throw.cpp stripped: its landing pads make it an image that unwinds (original return
    addresses, as unstripped), but without mapping symbols the descent runs on past a call
    that never returns (__cxa_begin_catch's caller calls std::terminate) into the exception
    class's bytes, which code reads as data: that call's return site had no room for a
    jump, and the rewrite stopped with an internal error. Return sites in data are left to
    their calls' relocated return addresses, as on Linux: output and exit status are the
    original's. (Its count is short by the code the stripped descent misses: Limits.)"""
    image = build_variant("throw", BOARD, "eh-O2-stripped")
    original = Original("throw", BOARD, image)
    out = instrument(image, "inscount", tmp_path / "fw")
    report = json.loads((tmp_path / "fw.anvil.json").read_text())
    assert report["return_addresses"] == "original" and report["return_sites"]["relocated"] > 0
    run = anvil_cli("run", "-q", "--board", BOARD, "fw", cwd=out.parent)
    assert (console(run.stdout, run.stderr), run.returncode) == original.expected

"""Layouts of other linkers and scripts (decision 0130).

Programs whose executable segment also holds their zero-filled data:
lld's ``-N`` (one segment for code, data and ``.bss``) and a GNU ld script that puts
``.data`` before ``.text``. The segment's memory goes on past its file bytes; the loader
stub used to be placed right after the file bytes, on the program's ``.bss``, which the
copy then started with non-zero (and the segment's memory size could shrink). Every tool
in both modes must behave as the original (samples/bss_zero.c prints where its ``.bss``
is not zero, and its address) and count as qemu does (tests/support/sweep.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument_ir, place, results, run_prog
from tests.support.samples import build, stripped
from tests.support.sweep import judge_build


def _code_segment_holds_bss(binary: Path) -> bool:
    with binary.open("rb") as f:
        return any(seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1 and seg["p_memsz"] > seg["p_filesz"]
                   for seg in ELFFile(f).iter_segments())


@pytest.mark.parametrize("variant", ["O2-data-first", "clang-O2-omagic-static-lld"])
def test_bss_in_the_code_segment_stays_zero(variant: str, rehost_server: str, tmp_path: Path) -> None:
    binary = build("bss_zero", variant)
    assert _code_segment_holds_bss(binary), "the build no longer has the layout this test is about"
    outcomes = judge_build("bss_zero", binary, False, ["inscount", "cachesim"], ["inhost", "rehost"],
                           tmp_path, server=rehost_server)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes


@pytest.mark.parametrize("variant", ["O2-text-at-2g", "O2-data-at-3g"])
def test_images_over_the_regions_usual_place(variant: str, rehost_server: str, tmp_path: Path) -> None:
    """A program linked at 2 GiB, or with its data at 3 GiB (qemu-arm reserves the whole span
    from its lowest segment to its highest): the region's offset keeps clear of the image
    (region_place.claimed_ranges). Before, the copy stopped at once: "cannot map the
    instrumented code", status 127."""
    outcomes = judge_build("addresses", build("addresses", variant), False, ["inscount", "cachesim"],
                           ["inhost", "rehost"], tmp_path, server=rehost_server)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes


def test_pie_with_code_above_its_data(rehost_server: str, tmp_path: Path) -> None:
    """samples/far_code.c, a PIE whose second code segment lies above its data: the load
    bias is added to the entry patches in each code segment with its own write window, given
    back its own rights (one window from the lowest patch to the highest made the data
    between read-only: SIGSEGV at the program's first write)."""
    outcomes = judge_build("far_code", build("far_code", "O2-far-code-pie"), False, ["inscount", "bbcount"],
                           ["inhost", "rehost"], tmp_path, server=rehost_server)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes


@pytest.mark.parametrize("strip", [False, True], ids=["symbols", "stripped"])
def test_gold_veneers_run_in_place(strip: bool, tmp_path: Path) -> None:
    """gold puts Thumb-to-A32 veneers (``bx pc; nop; b function``) after a function of a
    static program, with no symbol or mapping symbol: read as the function's Thumb tail, the
    copy's ``bx pc`` switched to A32 at the copy (SIGILL at exit, every tool and mode). They
    are a procedure of their own now, each veneer's A32 half read as A32 (with symbols: the
    marks gold left out are added; stripped: the descent follows ``bx pc``): every tool in
    both modes behaves as the original, and inscount counts all that qemu runs, the
    veneers included."""
    binary = build("addresses", "O2-gold-static")
    if strip:
        binary = stripped(binary, tmp_path / "stripped")
    ir = load_binary(str(binary))  # loaded once, instrumented by each tool in turn
    decoded = {ins.address: ins for proc in ir.procedures for ins in proc.instructions()}
    veneers = [ins.address for ins in decoded.values() if ins.thumb and ins.name == "bx" and ins.op_str == "pc"]
    assert veneers, "the build has no veneers of the kind this test is about"
    assert all(not decoded[at + 4].thumb for at in veneers if at + 4 in decoded), "an A32 half read as Thumb"
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, ["x"])
    executed = exe_pcs(trace_pcs(placed, ["x"], argv0="prog"), placed)
    assert any(lo in executed for lo in veneers)
    counted = run_prog(instrument_ir(ir, "inscount", tmp_path), ["x"])
    assert_same_behaviour(original, counted)
    assert results(counted, "inscount")["total"] == sum(executed.values())
    assert_same_behaviour(original, run_prog(instrument_ir(ir, "cachesim", tmp_path, slot="cach"), ["x"]))
    rehost, outcome = run_rehost_alone(instrument_ir(ir, "cachesim", tmp_path, mode="rehost", slot="rhst"), ["x"])
    assert_same_behaviour(original, rehost)
    assert outcome.summary.complete, outcome.error


def test_a_section_stamped_in_after_linking(rehost_server: str, tmp_path: Path) -> None:
    """``objcopy --add-section`` with the alloc flag (metadata stamped into a program) leaves a
    section at address 0 that no segment loads: the program runs as before, and was refused
    as malformed. Every tool in both modes behaves as the original and counts as qemu does."""
    (tmp_path / "note.bin").write_text("anvilnote")
    stamped = tmp_path / "stamped"
    subprocess.run(["arm-linux-gnueabihf-objcopy", "--add-section", f".note.extra={tmp_path / 'note.bin'}",
                    "--set-section-flags", ".note.extra=alloc,readonly", str(build("calls", "O2-thumb-dyn")),
                    str(stamped)], check=True, capture_output=True)
    judged = tmp_path / "judged"
    judged.mkdir()
    outcomes = judge_build("calls", stamped, False, ["inscount", "cachesim"], ["inhost", "rehost"], judged,
                           server=rehost_server)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes

"""A jump table read by ``ldr pc, [pc, rN, lsl #2]`` (samples/jumptable.c, A32, called from
Thumb or A32 C): every case starts a block in the IR, and instrumented, the program runs
as the original, inscount's total equals qemu's executed instructions and bbcount's
count of every block equals qemu's count of its first instruction.

A computed goto through a table of label addresses (samples/goto.c) in a stripped
fixed-address program: the table's words are plain numbers, so its labels are found only
by reading the table the jump goes through (jump_tables.GotoFinder). clang's A32 computed
goto enters its first label by ``bx lr``, which is then no return."""

from __future__ import annotations

import struct

import pytest

from tests.support.run import (
    assert_same_behaviour,
    instrument,
    instrument_ir,
    results,
    run_prog,
    traced_original,
)
from tests.support.samples import build, stripped, symbol_span


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-static", "O0-thumb-static"])
def test_ldr_pc_jump_table(variant: str, tmp_path) -> None:
    original, pcs, ir = traced_original(build("jumptable", variant), tmp_path)
    dispatch = next(p for p in ir.procedures if p.name == "dispatch")
    assert not dispatch.thumb
    table_load = next(i for i in dispatch.instructions() if i.mnemonic.startswith("ldr") and i.writes_pc)
    cases = struct.unpack("<6I", ir.data[ir.file_offset(table_load.address + 8):][:24])
    assert set(cases) <= {b.address for b in dispatch.blocks}

    assert original.returncode == 0 and original.stdout.startswith(b"jumptable checksum ")
    assert all(pcs[case] > 0 for case in cases)

    inst = run_prog(instrument_ir(ir, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())

    inst = run_prog(instrument_ir(ir, "bbcount", tmp_path))
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    wrong = {b["address"]: (b["count"], pcs[b["address"]]) for b in counts if b["count"] != pcs[b["address"]]}
    assert not wrong, list(wrong.items())[:5]
    assert {b["address"] for b in counts} >= set(cases)

    assert_same_behaviour(original, run_prog(instrument_ir(ir, "cachesim", tmp_path)))


def test_computed_goto_labels_in_a_stripped_program(tmp_path) -> None:
    # Thumb: an A32 main in a stripped static program is not found at all (its address in
    # _start's literal pool has no Thumb bit to tell it from a number).
    built = build("goto", "Os-thumb-static")
    start, end = symbol_span(built, "run")
    program = stripped(built, tmp_path / "stripped")
    original, pcs, ir = traced_original(program, tmp_path)
    # add 5, *6, double, add 5, negate, *6, add 5, double: -770
    assert (original.returncode, original.stdout) == (0, b"-770\n")
    executed = {pc: n for pc, n in pcs.items() if start <= pc < end}

    proc = next(p for p in ir.procedures if p.address == start)
    missed = sorted(pc for pc in executed if pc not in {i.address for i in proc.instructions()})
    assert not missed, f"run() executed but not found: {[hex(pc) for pc in missed]}"

    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["procedures"][proc.name] == sum(executed.values())


@pytest.mark.parametrize("variant, strip", [("clang-O2-arm-pie-lld", False), ("clang-O2-arm-static-lld", False),
                                            ("clang-O2-arm-pie-lld", True)])
def test_clang_a32_computed_goto_entered_through_lr(variant: str, strip: bool, tmp_path) -> None:
    """clang's A32 code for goto.c dispatches first by ``ldr r2, [pc, #n]; add lr, pc, r2;
    ... bx lr``: a jump to a label, not a return. Taken for a return, the copy jumped into
    the original run(), whose handlers then ran uncounted (11 of its 44 instructions
    counted): now every one of run()'s instructions is counted as qemu runs it."""
    built = build("goto", variant)
    start, end = symbol_span(built, "run")
    program = stripped(built, tmp_path / "stripped") if strip else built
    original, pcs, ir = traced_original(program, tmp_path, ["7"])
    assert original.returncode == 0 and original.stdout == b"-1890\n"
    executed = {pc: n for pc, n in pcs.items() if start <= pc < end}
    # (Stripped, the descent makes each label a procedure of its own.)
    parts = {p.name for p in ir.procedures if start <= p.address < end}
    inst = run_prog(instrument(program, "inscount", tmp_path), ["7"])
    assert_same_behaviour(original, inst)
    counted = results(inst, "inscount")["procedures"]
    assert sum(counted.get(name, 0) for name in parts) == sum(executed.values()) > 40


@pytest.mark.parametrize("link", ["no-pie", "no-pie-stripped", "pie-stripped"])
def test_thumb_tables_of_labels_and_offsets(link: str, tmp_path) -> None:
    """samples/label_table.c: ``adr r2, table; ldr pc, [r2, r0, lsl #2]`` in fixed-address
    Thumb-2 code, with cases before and after the jump (``pick``), and a table of offsets
    reached through ``adr.w lr`` and ``bx lr`` (``pick_lr``), and one whose bound a MOVW sets
    before a store (``pick_far``). The tables' words are data
    (not instructions of the block they would run on into), every case starts a block, and
    bbcount's count of each block equals qemu's count of its first instruction, inscount's
    total qemu's (decision 0086: the first table read as code ran on into case 2, whose
    count the flow derived from it, and came out negative in Debian's python3.11; the
    second jump, read as a return, went on in the original code, uncounted, in perl)."""
    extra = [*(["-no-pie"] if "no-pie" in link else []), *(["-s"] if "stripped" in link else [])]
    binary = build("label_table", "O2-thumb-dyn", extra)
    original, pcs, ir = traced_original(binary, tmp_path)
    assert original.stdout == b"sum=18945596\n"
    starts = {b.address for p in ir.procedures for b in p.blocks}
    decoded = {i.address for p in ir.procedures for i in p.instructions()}
    jumps = [i for p in ir.procedures for i in p.instructions() if i.address in ir.switch_cases
             and i.name in ("ldr", "bx")]
    assert sorted(i.name for i in jumps) == ["bx", "bx", "ldr"]
    for jump in jumps:
        table = next(lo for lo, hi in ir.switch_tables if 0 < lo - jump.address <= 4)
        words = struct.unpack("<4I", ir.read(table, 16))
        cases = {(w if jump.name == "ldr" else table + w) & ~1 for w in words}
        assert ir.switch_cases[jump.address] == cases and not jump.is_return
        assert cases <= starts and not decoded & set(range(table, table + 16))

    inst = run_prog(instrument_ir(ir, "bbcount", tmp_path))
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    wrong = {b["address"]: (b["count"], pcs.get(b["address"], 0)) for b in counts
             if b["count"] != pcs.get(b["address"], 0)}
    assert not wrong, list(wrong.items())[:5]
    inst = run_prog(instrument_ir(ir, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())

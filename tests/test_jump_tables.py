"""A jump table read by ``ldr pc, [pc, rN, lsl #2]`` (samples/jumptable.c, A32, called from
Thumb or A32 C): every case starts a block in the IR, and instrumented, the program runs
as the original, inscount's total equals qemu's executed instructions and bbcount's
count of every block equals qemu's count of its first instruction."""

from __future__ import annotations

import struct

import pytest

from tests.support.run import assert_same_behaviour, instrument_ir, results, run_prog, traced_original
from tests.support.samples import build


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

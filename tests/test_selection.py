"""--only / --skip: instrumenting part of a program counts exactly that part."""

from __future__ import annotations

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


def test_only_and_skip(tmp_path) -> None:
    binary = build("sort", "O2-thumb-dyn")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    pcs = exe_pcs(trace_pcs(placed, argv0="prog"), placed)
    ir = load_binary(str(binary))
    sort_procs = [p for p in ir.procedures if "sort" in p.name]
    assert sort_procs
    in_sort = sum(n for pc, n in pcs.items() for p in sort_procs if p.address <= pc < p.end)
    assert in_sort > 0

    inst = run_prog(instrument(binary, "inscount", tmp_path, "--only", "*sort*"))
    assert_same_behaviour(original, inst)
    got = results(inst, "inscount")
    assert got["total"] == in_sort
    assert all("sort" in name for name in got["procedures"])

    inst = run_prog(instrument(binary, "inscount", tmp_path, "--skip", "*sort*"))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values()) - in_sort

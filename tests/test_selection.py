"""--only / --skip: instrumenting part of a program counts exactly that part."""

from __future__ import annotations

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build


def test_only_and_skip(tmp_path) -> None:
    binary = build("sort", "O2-thumb-dyn")
    original, pcs, ir = traced_original(binary, tmp_path)
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

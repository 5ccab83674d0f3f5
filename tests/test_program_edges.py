"""Exact counts at a program's edges (decision 0058), against ``qemu-arm -singlestep -d
exec,nochain`` on the original.

samples/program_edges.c, stripped as distributions ship programs, has what Debian's gzip,
m4 and dash ran uncounted: procedures of one 2-byte Thumb instruction reached through
pointers in data (crtstuff's frame_dummy from .init_array, callbacks that only return or
only branch, called through a table), and an end through ``_exit``, called directly or by
a tail call, whose PLT entry (and, bound lazily, PLT0) runs after the program's last call.
inscount's total and bbcount's count of every block must be qemu's, the report must name
no entry that runs in place, and the program must behave as the original; ReHost's
inscount results must be InHost's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, stripped


@pytest.mark.parametrize(("variant", "binding"), [("O2-thumb-pie", "now"), ("O2-thumb-dyn", "lazy")])
@pytest.mark.parametrize("args", [[], ["tail"]], ids=["direct", "tail-call"])
def test_edges_counted_exactly(variant: str, binding: str, args: list[str], tmp_path: Path,
                               rehost_server: str) -> None:
    # Debian links with -z now; the cross toolchain's default binds lazily, and then the
    # first call of _exit runs PLT0 too, after _exit's PLT entry.
    flags = ["-Wl,-z,now"] if binding == "now" else []
    binary = stripped(build("program_edges", variant, flags), tmp_path / "program_edges")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args)
    assert original.returncode == 5 and original.stdout.strip().isdigit(), original
    pcs = exe_pcs(trace_pcs(placed, args, argv0="prog"), placed)

    inst = run_prog(instrument(binary, "inscount", tmp_path), args)
    assert_same_behaviour(original, inst)
    report = json.loads((inst.cwd / "prog.anvil.json").read_text())
    assert report["entries_run_in_place"] == [], report["entries_not_patched"]
    assert results(inst, "inscount")["total"] == sum(pcs.values())
    rehost, outcome = run_rehost(instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst"),
                                 rehost_server, args)
    assert_same_behaviour(original, rehost)
    assert outcome.summary.complete
    assert (rehost.cwd / "prog.inscount.out").read_bytes() == (inst.cwd / "prog.inscount.out").read_bytes()

    inst = run_prog(instrument(binary, "bbcount", tmp_path), args)
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    wrong = {hex(b["address"]): (b["count"], pcs[b["address"]]) for b in counts if b["count"] != pcs[b["address"]]}
    assert not wrong, f"blocks whose count differs from qemu's (ours, qemu): {wrong}"
    assert sum(b["count"] * b["instructions"] for b in counts) == sum(pcs.values())

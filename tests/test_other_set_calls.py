"""A direct call into code whose copy is in the other instruction set (decision 0099).

An A32 ``bl`` (not ``blx``) enters its target in A32. Where the rewriter decoded the target
as Thumb (the middle of a Thumb function), the copy of the call went to the Thumb copy,
in A32: a stripped static A32 program (sort, ``-O3 -marm -march=armv8-a``) was refused
("A32 branch ... cannot reach": the copy was at an address no A32 branch can name), and
where the copy's address happened to be word aligned the call ran its bytes as A32.
Such calls are mostly bytes of data read as code; samples/other_set_call.c makes one that
runs (a word of Thumb code that reads in A32 as a harmless move and a return), taken with
two arguments. The copy now calls the original address in the call's instruction set, as
the original does.

Checked: with and without the arguments, inscount's and cachesim's copies print what the
original prints with the same exit status, and inscount's total equals qemu's count of
the executable's instructions but for the two run in A32 at ``thumb_inside`` (the
original's bytes, entered as the original enters them: in place, uncounted).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, symbol_span


@pytest.mark.parametrize("args", [[], ["a", "b"]], ids=["not-taken", "taken"])
def test_a32_call_into_thumb_code(args: list[str], tmp_path: Path) -> None:
    binary = build("other_set_call", "O2-arm-static")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args)
    assert original.returncode == 0, original.stderr
    inside = symbol_span(binary, "thumb_inside")[0]
    pcs = exe_pcs(trace_pcs(placed, args, b"", argv0="prog"), placed)
    # In A32 the call runs two words there (a move at ``inside``, where Thumb code runs a
    # ``bx lr`` too, and a return at ``inside + 4``, which only A32 runs).
    qemu_total = sum(pcs.values()) - 2 * pcs.get(inside + 4, 0)
    inscount = run_prog(instrument(binary, "inscount", tmp_path), args)
    assert_same_behaviour(original, inscount)
    assert results(inscount, "inscount")["total"] == qemu_total
    assert_same_behaviour(original, run_prog(instrument(binary, "cachesim", tmp_path, slot="cach"), args))

"""Entries with room for a B.N only, whose trampoline comes from a procedure a code pointer
enters in the middle (decision 0081), against ``qemu-arm -singlestep -d exec,nochain``.

samples/narrow_entries.c calls ``nothing`` (one 2-byte Thumb instruction) through a table;
the only relocated code within a B.N's 2 KiB of it is ``mix``, whose second half a word in
data names. Code entering there runs on in place to mix's return, never into its first
half, which only the entry (patched) leads to: that half holds the trampoline. Before, a
procedure entered in the middle gave no trampoline room at all, nothing's entry got no
jump, and its calls through the table ran in place, uncounted.

It also calls ``lone``, alone between 2.5 KiB of data on either side, whose second
instruction the first of a column of offsets names (three numbers in small ascending
steps, one even: ``counted.in_offset_column``). Discovery already took such numbers for
numbers; the stops did not, and lone's room was cut to a B.N's 2 bytes, with no
trampoline room in reach.

inscount's total (and its count of ``nothing`` and ``lone``) must be qemu's, the report must name no
entry that runs in place, the program must behave as the original, and the bytes from
the place the pointer names to mix's end must be left as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


def test_narrow_entry_trampoline_beside_a_pointer(tmp_path: Path) -> None:
    # A PIE: a static program's C library has tables of numbers (code points) of its own
    # that run through the sample's addresses.
    binary = build("narrow_entries", "O2-thumb-dyn")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, [])
    assert original.returncode == 0 and original.stdout.endswith(b" 1\n"), original
    pcs = exe_pcs(trace_pcs(placed, [], argv0="prog"), placed)
    lifted = {p.name: p for p in load_binary(str(binary)).procedures}
    nothing, mix, lone = lifted["nothing"], lifted["mix"], lifted["lone"]

    out = instrument(binary, "inscount", tmp_path)
    inst = run_prog(out, [])
    assert_same_behaviour(original, inst)
    report = json.loads((inst.cwd / "prog.anvil.json").read_text())
    assert report["entries_run_in_place"] == [], report["entries_not_patched"]
    got = results(inst, "inscount")
    assert got["total"] == sum(pcs.values())
    assert got["procedures"].get("nothing", 0) == pcs[nothing.address] > 0
    assert got["procedures"].get("lone", 0) == sum(n for pc, n in pcs.items() if lone.address <= pc < lone.end) > 0
    new = load_binary(str(out))
    tail = mix.address + 30
    assert new.read(tail, mix.end - tail) == load_binary(str(binary)).read(tail, mix.end - tail)

"""Thumb-1 switches: calls of libgcc's ``__gnu_thumb1_case_*`` helpers with their tables
after them (decision 0195); and Thumb-1's computed gotos (decision 0197).

GCC compiles a ``switch`` in Thumb code for ARMv5 and ARMv6 (Debian's armel with
``-mthumb``, ARMv6 builds) into a bounds check, then ``bl __gnu_thumb1_case_uqi`` (or
``_sqi``, ``_uhi``, ``_shi``, ``_si``) and the table of case offsets, which the helper reads
at its return address. Such procedures used to run in place, uncounted: a copy's call
returns into the copy, where no table was (an SQLite shell built so lost 43 % of its
instructions, Lua 3.9 %). samples/thumb1_switches.c has every kind of table between its two
builds: bytes and halfwords, signed (cases back at a loop's head, before the table) and
unsigned, words.

Oracles: qemu's count of every instruction the original runs, procedure by procedure, and
the original's behaviour.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import Run, assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import ARMEL_SYSROOT, build, stripped, symbol_span

#: The helpers by what their tables hold: (bytes an entry, signed).
KINDS = {"uqi": (1, False), "sqi": (1, True), "uhi": (2, False), "shi": (2, True), "si": (4, True)}


def _traced(variant: str, strip: bool, tmp_path: Path) -> tuple[Path, Run, Counter[int]]:
    """samples/thumb1_switches.c built as ``variant`` (``strip``ped or not): the program, the
    original's run and qemu's count of each of its instructions."""
    program = build("thumb1_switches", variant)
    if strip:
        program = stripped(program, tmp_path / "stripped")
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, lib_root=ARMEL_SYSROOT)
    assert original.returncode == 0 and original.stdout.startswith(b"total ")
    return program, original, exe_pcs(trace_pcs(placed, argv0="prog", lib_root=ARMEL_SYSROOT, reuse=True), placed)


@pytest.mark.parametrize(("variant", "strip", "kinds"), [
    ("armel-O2-thumb", False, {"uqi", "sqi", "uhi", "shi", "si"}),
    ("armel-Os-thumb", True, {"uqi", "sqi", "shi", "uhi"}),
])
def test_thumb1_switches_copied_and_counted(variant: str, strip: bool, kinds: set[str], tmp_path: Path) -> None:
    """Every switch's table is read (stripped too: the bounds checks say how long), no
    procedure is left in place, the inscount copy counts what qemu counts in every
    procedure, and the inscount and cachesim copies behave as the original."""
    program, original, pcs = _traced(variant, strip, tmp_path)
    binary = load_binary(str(program))
    tables = binary.case_tables
    assert {kind for kind, shape in KINDS.items()
            if shape in {(t.helper.size, t.helper.signed) for t in tables.values()}} == kinds
    # Each table's cases are where qemu went after the helper: every instruction run is found.
    found = {ins.address: proc for proc in binary.procedures for ins in proc.instructions()}
    assert [hex(pc) for pc in pcs if pc not in found][:10] == []
    assert all(case in found for table in tables.values() for case in table.cases)
    assert sorted(len(table.cases) for table in tables.values())[-1] == 288  # many's, 0 to 287

    inst = instrument(program, "inscount", tmp_path)
    counted = run_prog(inst, lib_root=ARMEL_SYSROOT)
    assert_same_behaviour(original, counted)
    report = json.loads(inst.with_name(inst.name + ".anvil.json").read_text())
    assert report["not_instrumented"] == []
    counts = results(counted, "inscount")
    assert counts["total"] == sum(pcs.values())
    named = Counter(proc.name for proc in binary.procedures)  # (results tell twins apart by address)
    expected: Counter[str] = Counter()
    for pc, times in pcs.items():
        if named[found[pc].name] == 1:
            expected[found[pc].name] += times
    got = counts["procedures"]
    assert {name: (n, got.get(name, 0)) for name, n in expected.items() if got.get(name, 0) != n} == {}

    cachesim = instrument(program, "cachesim", tmp_path, slot="cach")
    assert_same_behaviour(original, run_prog(cachesim, lib_root=ARMEL_SYSROOT))


def test_thumb1_computed_goto_table_read(tmp_path: Path) -> None:
    """The computed goto of samples/thumb1_switches.c (``dispatch``), stripped: Thumb-1 code
    scales the index apart from the load (``lsls r2, r2, #2; ldr r2, [r2, r4]; mov pc, r2``),
    and discovery reads the table of labels it jumps through (decision 0197). The oracle:
    the words of ``ops``, the table as the unstripped build's symbol table places it. Before,
    no label was read from it; in Lua's interpreter, built so, the handlers that other
    handlers' copies jumped to ran in place, uncounted (5.7 % of what it runs)."""
    program = build("thumb1_switches", "armel-O2-thumb")
    start, end = symbol_span(program, "ops.0")
    with program.open("rb") as f:
        elf = ELFFile(f)
        segment = next(s for s in elf.iter_segments()
                       if s["p_type"] == "PT_LOAD" and s["p_vaddr"] <= start < s["p_vaddr"] + s["p_filesz"])
        f.seek(segment["p_offset"] + start - segment["p_vaddr"])
        words = f.read(end - start)
    labels = {int.from_bytes(words[k:k + 4], "little") & ~1 for k in range(0, len(words), 4)}
    assert len(labels) == 6
    binary = load_binary(str(stripped(program, tmp_path / "stripped")))
    assert labels <= binary.goto_labels


@pytest.mark.parametrize("strip", [False, True])
def test_clang_thumb1_switches_jump_through_add_pc(strip: bool, tmp_path: Path) -> None:
    """samples/thumb1_switches.c by clang for armel's ARMv5TE Thumb-1, linked by ld.lld: its
    switches jump with ``add pc, r1`` through tables of offsets after the jump, an
    instruction the decoder took for data, so it ran in place and went on into its cases in
    the original code, where the loader stub had been written over one (the copy exited
    with "anvil: cannot map the instrumented code", status 127; decision 0198). Stripped,
    the cases only those tables (and ``adr``; ``ldr``; ``adds``; ``mov pc`` ones) reach were
    not found and ran in place, 19 % of the count (decision 0199). The copy now behaves as
    the original and counts what qemu counts."""
    program, original, pcs = _traced("clang-armel-O2-thumb", strip, tmp_path)
    binary = load_binary(str(program))
    assert any(ins.name == "add" and ins.op_str.startswith("pc, ") for proc in binary.procedures
               for ins in proc.instructions()), "no add pc, rN: the sample no longer tests the jump"
    inst = instrument(program, "inscount", tmp_path)
    counted = run_prog(inst, lib_root=ARMEL_SYSROOT)
    assert_same_behaviour(original, counted)
    assert results(counted, "inscount")["total"] == sum(pcs.values())


"""The first 512 bytes of every procedure's copy inside one 4 KiB page (rewriter/emit/page_layout.py).

A copy that would cross a page boundary there is emitted again from the next page,
after a rollback of what its first emission did to the code and to the relocation
context. The rollback is checked against emitting the same procedure straight at the
page (the two must agree byte for byte, label for label, table for table); the rule
against the address map of a whole image; what the image does is checked, as for every
layout, by the transparency and exactness tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.arch.arm.appends import append_routine
from rewriter.arch.arm.relocate import emit_veneer, emit_xlate_table, relocate_procedure
from rewriter.arch.code import Code
from rewriter.emit import inhost
from rewriter.emit.page_layout import KEPT_TOGETHER, PAGE, emit_inside_a_page
from rewriter.ir.elf_loader import load_binary
from tests.support.run import instrument
from tests.support.samples import build


def _finished(code: Code) -> bytes:
    """``code``'s bytes, with its labels and every symbol at one address (only the
    agreement of two emissions matters)."""
    return code.finish(lambda key: code.labels.get(key, 0x10000))


def test_rollback_gives_what_was_never_emitted() -> None:
    direct, rolled = Code(0), Code(0)
    for code in (direct, rolled):
        code.emit(b"\x01\x02")
        code.label("kept")
    mark = rolled.mark()
    rolled.label("dropped")
    rolled.later(4, lambda at, r: at.to_bytes(4, "little"))
    rolled.align(64)
    rolled.emit(b"\xff" * 10)
    rolled.rollback(mark)
    for code in (direct, rolled):
        code.align(4)
        code.label("after")
        code.later(4, lambda at, r: (at + r("x")).to_bytes(4, "little"))
    assert rolled.labels == direct.labels
    assert rolled.alignment == direct.alignment
    assert _finished(rolled) == _finished(direct)


def _relocation(binary):
    return inhost._relocation(binary, None, with_header=False, original_returns=False, vfp=True)


def _labels(code: Code) -> dict:
    """``code``'s labels, with the code's identity (which local labels carry) left out."""
    mine = id(code)
    return {tuple("code" if part == mine else part for part in key) if isinstance(key, tuple) else key: at
            for key, at in code.labels.items()}


def _has_table(proc, relocation) -> bool:
    """``proc``'s copy has a translation table (a computed jump) and takes over 64 bytes."""
    ctx, code = relocation.new_context(), Code(0)
    relocate_procedure(proc, code, ctx)
    return bool(ctx.xlate_tables) and code.size > 64


def test_a_copy_emitted_again_is_the_copy_emitted_there() -> None:
    """A procedure with a translated computed jump (a table the context collects) emitted
    where its start would cross a page: what the rollback leaves equals emitting it at the
    next page directly."""
    binary = load_binary(build("hash", "Os-thumb-static"))
    relocation = _relocation(binary)
    proc = next(p for p in binary.procedures if p.thumb and _has_table(p, relocation))
    moved, moved_ctx = Code(0), relocation.new_context()
    moved.emit(bytes(PAGE - 64))  # the copy would start 64 bytes before the boundary
    emit_inside_a_page(moved, lambda: relocate_procedure(proc, moved, moved_ctx), moved_ctx.saved)
    direct, direct_ctx = Code(0), relocation.new_context()
    direct.emit(bytes(PAGE - 64))
    direct.keep_aligned(PAGE)
    direct.align(PAGE)
    relocate_procedure(proc, direct, direct_ctx)
    assert _labels(moved) == _labels(direct)
    assert moved_ctx.xlate_tables == direct_ctx.xlate_tables == [(proc, ("xlate", proc.address))]
    assert moved_ctx.veneers == direct_ctx.veneers
    for code, ctx in ((moved, moved_ctx), (direct, direct_ctx)):  # what the copy refers to, as _emit_code does
        for key, label in sorted(ctx.veneers.items()):
            emit_veneer(key, label, code)
        for table_of, key in ctx.xlate_tables:
            emit_xlate_table(table_of, key, code)
    assert _finished(moved) == _finished(direct)


def test_the_context_comes_back_as_it_was() -> None:
    """Record sites ask for their page's append routines (appends.py): a rolled-back copy's
    requests, and the requests it took from the page it left, come back as they were."""
    ctx = _relocation(load_binary(build("hash", "O2-thumb-dyn"))).new_context()
    code, routine, other = Code(0), append_routine(2, False), append_routine(3, False)
    ctx.appends.call(code, routine)  # an earlier procedure's site on page 0
    restore = ctx.saved()
    ctx.appends.call(code, other)
    ctx.appends.place(code)  # the rolled-back copy's islands took page 0's requests
    ctx.xlate_tables.append((None, ("xlate", 0)))
    restore()
    assert ctx.appends.wanted == {0: {routine}}
    assert ctx.xlate_tables == []


@pytest.mark.parametrize("variant", ["Os-thumb-static", "O2-arm-static"])
def test_the_start_of_every_copy_stays_in_one_page(variant: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    exe = build("hash", variant)
    address_map = tmp_path / "addresses"
    monkeypatch.setenv("ANVIL_ADDRESS_MAP", str(address_map))
    instrument(exe, "inscount", tmp_path)
    copy_of = {}
    for line in address_map.read_text().splitlines():
        relocated, original = (int(word, 16) for word in line.split())
        copy_of[original] = relocated
    binary = load_binary(exe)
    checked = 0
    for proc in binary.procedures:
        start = copy_of.get(proc.address)
        if start is None:
            continue
        # The rule holds from before the copy's first label (up to 3 bytes of alignment).
        head = [copy_of[i.address] for i in proc.instructions() if copy_of[i.address] < start + KEPT_TOGETHER - 4]
        assert {at // PAGE for at in head} == {start // PAGE}, proc.name
        checked += 1
    assert checked > 500

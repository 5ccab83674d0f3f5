"""The decoder's two paths agree: facts read from capstone's text (fast path) equal the
facts from capstone's operand details, on every instruction of real binaries (static
glibc in Thumb-2 and A32, Debian's Lua)."""

from __future__ import annotations

import pytest

from rewriter.arch.arm_decode import _facts, make_disassembler
from rewriter.ir.elf_loader import load_binary
from tests.support.samples import build, build_lua


@pytest.mark.parametrize("which", ["sort/O2-arm-static", "hash/O0-thumb-static", "lua"])
def test_fast_facts_match_capstone_details(which: str) -> None:
    path = build_lua() if which == "lua" else build(*which.split("/"))
    binary = load_binary(str(path))
    md = {True: make_disassembler(True), False: make_disassembler(False)}
    checked = 0
    for proc in binary.procedures:
        for ins in proc.instructions():
            if ins.detail is not None or not (ins.accesses or ins.branch_target is not None):
                continue
            ref = _facts(md[ins.thumb], next(md[ins.thumb].disasm(ins.raw, ins.address, 1)), ins.thumb)
            assert (ins.name, ins.accesses, ins.branch_target, ins.is_call) == \
                (ref.name, ref.accesses, ref.branch_target, ref.is_call), str(ins)
            checked += 1
    assert checked > 1000

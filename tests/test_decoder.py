"""The decoder's two paths agree: facts read from capstone's text (fast path) equal the
facts from capstone's operand details, on every instruction of real binaries (static
glibc in Thumb-2 and A32, Debian's Lua)."""

from __future__ import annotations

import pytest

from rewriter.arch.arm_decode import _facts, decode_range, make_disassembler
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


@pytest.mark.parametrize("code, thumb, falls", [
    ("00b1", True, True),       # cbz r0: tests a register, so it may go on
    ("00b9", True, True),       # cbnz r0
    ("00d0", True, True),       # beq
    ("fee7", True, False),      # b
    ("7047", True, False),      # bx lr
    ("00bd", True, False),      # pop {pc}
    ("10bc", True, True),       # pop {r4}
    ("fff7feff", True, True),   # bl: the callee returns to the next instruction
    ("00df", True, True),       # svc 0
    ("00de", True, False),      # udf
    ("38bf7047", True, True),   # it cc; bxcc lr: the IT block makes the return conditional
    ("1eff2f01", False, True),  # bxeq lr
    ("1eff2fe1", False, False),  # bx lr
])
def test_falls_through(code: str, thumb: bool, falls: bool) -> None:
    """One answer, for discovery, flow and relocation alike, to "may the next address run
    after this one", against the architecture's meaning of each instruction (the last one
    decoded: an IT block is decoded with the instruction it makes conditional)."""
    instructions, _ = decode_range(make_disassembler(thumb), bytes.fromhex(code), 0x1000, thumb)
    assert instructions[-1].falls_through is falls

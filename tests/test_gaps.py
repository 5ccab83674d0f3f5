"""Calls found in code the descent did not decode (rewriter/ir/gaps.py), against keystone's encodings."""

from __future__ import annotations

import keystone
import pytest

from rewriter.ir.gaps import call_targets_in_gaps
from rewriter.ir.model import Instruction

BASE = 0x10000
THUMB_NOP, ARM_NOP = bytes.fromhex("00bf"), bytes.fromhex("00f020e3")


def _assemble(thumb: bool, lines: list[tuple[int, str]], size: int) -> bytes:
    """``size`` bytes of nops at BASE with each (address, instruction) assembled in place."""
    ks = keystone.Ks(keystone.KS_ARCH_ARM, keystone.KS_MODE_THUMB if thumb else keystone.KS_MODE_ARM)
    nop = THUMB_NOP if thumb else ARM_NOP
    code = bytearray(nop * (size // len(nop)))
    for address, text in lines:
        encoding = bytes(ks.asm(text, address)[0])
        code[address - BASE:address - BASE + len(encoding)] = encoding
    return bytes(code)


def _targets(code: bytes, decoded: list[Instruction] = ()) -> set[int]:
    return call_targets_in_gaps(lambda at, n: code[at - BASE:at - BASE + n], [(BASE, BASE + len(code))],
                                  list(decoded))


@pytest.mark.parametrize("thumb", [True, False])
def test_calls_forward_and_back_are_found(thumb: bool) -> None:
    calls = [(BASE + 0x10, "bl #0x12344"), (BASE + 0x40, "bl #0x8000"), (BASE + 0x82, "blx #0x30000"),
             (BASE + 0xC4, "bl #0x10600")]
    if not thumb:
        calls[2] = (BASE + 0x80, "blx #0x30002")  # A32 BLX: word-aligned, to Thumb code at any halfword
    code = _assemble(thumb, calls, 0x200)
    assert _targets(code) == {int(text.split("#")[1], 16) for _, text in calls}


def test_thumb_calls_at_odd_halfwords_and_not_branches() -> None:
    code = _assemble(True, [(BASE + 0x12, "bl #0x11000"), (BASE + 0x20, "b.w #0x11100"),
                            (BASE + 0x30, "beq.w #0x10400")], 0x100)
    assert _targets(code) == {0x11000}


def test_conditional_a32_calls_are_left_out() -> None:
    code = _assemble(False, [(BASE + 0x10, "bl #0x11000"), (BASE + 0x20, "blne #0x11100"), (BASE + 0x30, "b #0x11200")],
                     0x100)
    assert _targets(code) == {0x11000}


def test_decoded_code_is_not_read_again() -> None:
    code = _assemble(True, [(BASE + 0x10, "bl #0x11000"), (BASE + 0x40, "bl #0x12000")], 0x80)
    decoded = Instruction(BASE + 0x10, 4, code[0x10:0x14], True, "bl", "#0x11000")
    assert _targets(code, [decoded]) == {0x12000}

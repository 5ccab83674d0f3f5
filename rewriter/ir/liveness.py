"""Registers an instrumentation sequence may use without saving them: dead ones.

A register is dead before an instruction when, on every way on from there, it is
written before it is read. This is a local, conservative form: the instructions of the
block are scanned forward from the point and the scan stops at the first one whose
reads and writes it does not know exactly (anything but the plain data-processing,
load and store forms below), at a branch, a call, a system call or a PC write, and at
the end of the block. Registers not found written by then are live. A conditional
instruction (IT block, A32 condition) writes nothing for sure, but reads.

Register read and write sets come from the mnemonic and the operand text: for the forms
known here the first operand (two for LDRD and long multiplies) is the only register
written, besides a written-back base, and every other register named is read.
"""

from __future__ import annotations

import re

from .model import Block, Instruction

SP, LR, PC = 13, 14, 15

_NAMES = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12, "sp": SP, "lr": LR, "pc": PC}
_REGISTER = re.compile(r"\b(r1[0-2]|r[0-9]|sb|sl|fp|ip|sp|lr|pc)\b")

# Forms whose first operand is written and not read (unless named again as a source).
_WRITE_FIRST = frozenset({
    "mov", "mvn", "movw", "add", "adds", "adc", "adcs", "sub", "subs", "sbc", "sbcs", "rsb", "rsbs", "rsc",
    "and", "ands", "orr", "orrs", "eor", "eors", "bic", "bics", "orn", "orns", "lsl", "lsls", "lsr", "lsrs",
    "asr", "asrs", "ror", "rors", "mul", "muls", "mla", "mls", "sdiv", "udiv", "clz", "rbit", "rev", "rev16",
    "revsh", "ubfx", "sbfx", "uxtb", "uxth", "sxtb", "sxth", "uxtab", "uxtah", "sxtab", "sxtah", "addw", "subw",
    "movs", "mvns", "adr", "ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "smulbb", "smmul", "usat", "ssat",
})
_LOADS = frozenset({"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh"})
_STORES = frozenset({"str", "strb", "strh"})
_NO_WRITE = frozenset({"cmp", "cmn", "tst", "teq", "nop"})
_BARRIERS = frozenset({"dmb", "dsb", "isb"})
_WRITE_TWO = frozenset({"ldrd", "umull", "smull"})  # two registers written (UMLAL and co. also read them)


def _registers(text: str) -> list[int]:
    return [_NAMES[m] for m in _REGISTER.findall(text)]


def reads_writes(ins: Instruction) -> tuple[set[int], set[int]] | None:
    """The registers ``ins`` reads and the ones it surely writes, or None when not known here."""
    if ins.is_branch or ins.is_call or ins.is_syscall or ins.writes_pc:
        return None
    name = ins.name
    if ins.is_it or name in _BARRIERS:
        return set(), set()
    text = ins.op_str
    named = set(_registers(text))
    if ins.reads_pc and not (name in _LOADS and "[pc" in text) and name not in ("adr", "add", "addw"):
        return None  # the PC read some other way (an operand the relocation rewrites)
    sure = not ins.is_conditional and not ins.in_it  # a condition may skip the write
    if name in _NO_WRITE or name in _STORES or name in ("strd", "push") or (name[:1] == "v" and name != "vmov"):
        return named, set()  # stores (a written-back base is read first), compares, VFP reading a base
    if name == "pop":
        return ({SP}, named if sure else set()) if PC not in named else None
    operands = [part.strip() for part in text.split(",")]
    if "{" in text or not operands:
        return None
    if name in _WRITE_FIRST or name in ("strex", "ldrex"):
        first = _registers(operands[0])
        if len(first) != 1:
            return None
        # A written-back base is among the sources, so read before it is written.
        return set(_registers(",".join(operands[1:]))), ({first[0]} if sure else set())
    if name in _WRITE_TWO:
        first = _registers(operands[0]) + _registers(",".join(operands[1:2]))
        if len(first) != 2:
            return None
        return set(_registers(",".join(operands[2:]))), (set(first) if sure else set())
    if name == "movt":
        return named, set()  # reads the half it keeps
    return None


def dead_before(block: Block, index: int) -> set[int]:
    """The registers dead before ``block.instructions[index]`` (r0-r12 and lr; never sp or pc)."""
    read: set[int] = set()
    dead: set[int] = set()
    for ins in block.instructions[index:]:
        facts = reads_writes(ins)
        if facts is None:
            break
        reads, writes = facts
        read |= reads
        dead |= writes - read
    return {r for r in dead if r not in (SP, PC)}

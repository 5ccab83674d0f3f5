"""The value a register surely holds before an instruction, when its block sets it to a constant.

A system call's number is usually moved into its register a few instructions before
the call (``movs r4, #6 ... mov r0, r4; bkpt 0xab``; ``mov r7, #4; svc 0``). Knowing it
lets the rewriter leave alone the calls that cannot matter to it (decision 0033: only
a call that may end the program needs the end-of-program hook).

The answer is "unknown" (None) unless it is sure. The walk goes backwards from the
instruction inside its block only (what reaches a block's start from elsewhere is not
looked at), asking each instruction what it does to the register (``effect_on``), and
follows plain register copies. It gives up at a call or a system call (either may
change any argument register) and at an instruction that may change the register in
any way but an unconditional move of a constant (``mov``, ``movw``, ``mvn``) or of
another register: conditional writes, loads, arithmetic, ``movt``/``bfi`` (which keep
part of it), write-back of a base register, and anything not known.

An instruction that does not name the register leaves it as it was: on A32 and T32
only calls, system calls and exception returns write a core register they do not name
(tests/test_system_call_numbers.py checks every rule against capstone's own view of
each instruction of Lua and of static samples).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Instruction

_NAMES = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12, "sp": 13, "lr": 14, "pc": 15}
_REGISTER = re.compile(r"\b(r1[0-5]|r[0-9]|sb|sl|fp|ip|sp|lr|pc)\b")
# Instructions that read every register they name and write none (stores keep their
# source, STREX's status register aside; compares and tests set only flags). A base
# register written back (``!`` or a post-indexed offset) is a write, looked for apart.
_READ_ONLY = frozenset(
    "str strb strh strd cmp cmn tst teq push stm stmia stmdb stmfd "
    "nop it pld pldw pli dmb dsb isb cbz cbnz b bx msr vmsr vstr vpush vstm vstmia vstmdb".split())
_MOVES = frozenset(("mov", "movs", "movw", "mvn", "mvns"))


@dataclass(frozen=True)
class Effect:
    """What one instruction does to one register: ``keeps`` it; or sets it to ``constant``;
    or copies register ``source`` into it; or none of these is sure (all None/False)."""

    keeps: bool = False
    constant: int | None = None
    source: int | None = None


KEEPS = Effect(keeps=True)
UNKNOWN = Effect()


def effect_on(ins: Instruction, register: int) -> Effect:
    """What ``ins`` surely does to core register ``register`` (0-12) when it runs."""
    if ins.is_call or ins.is_syscall:
        return UNKNOWN
    if not any(_NAMES[name] == register for name in _REGISTER.findall(ins.op_str)):
        return KEEPS
    base = ins.mnemonic.split(".", 1)[0]
    if base in _READ_ONLY:
        return UNKNOWN if _writes_back(ins, register) else KEEPS
    operands = ins.op_str.split(", ")
    if base not in _MOVES or _NAMES.get(operands[0]) != register or ins.cond != 14 or ins.in_it \
            or len(operands) != 2:
        return UNKNOWN
    source = operands[1]
    if source.startswith("#"):
        value = int(source[1:], 0) & 0xFFFFFFFF
        return Effect(constant=value if base.startswith("mov") else ~value & 0xFFFFFFFF)
    if base in ("mov", "movs") and _NAMES.get(source, 15) < 13:
        return Effect(source=_NAMES[source])
    return UNKNOWN


def constant_before(ins: Instruction, register: int) -> int | None:
    """The value register ``register`` (0-12) surely holds when ``ins`` starts, if its own
    block sets it to a constant before it; else None."""
    block = ins.block
    if block is None:
        return None
    instructions = block.instructions
    at = next((k for k, other in enumerate(instructions) if other is ins), None)
    if at is None:
        return None
    for before in reversed(instructions[:at]):
        effect = effect_on(before, register)
        if effect.keeps:
            continue
        if effect.source is None:
            return effect.constant
        register = effect.source  # follow the copy: what the source held then
    return None


def _writes_back(ins: Instruction, register: int) -> bool:
    """Whether a store or push changes ``register`` by writing back its base address."""
    text = ins.op_str
    if "!" in text:
        return _NAMES.get(text.split("!", 1)[0].split("[")[-1].split(", ")[0].strip()) == register
    if "], " in text:  # post-indexed: [rN], #imm / [rN], rM
        return _NAMES.get(text.split("[", 1)[1].split("]", 1)[0].split(", ")[0]) == register
    return False

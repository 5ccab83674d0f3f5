"""The value a register surely holds before an instruction, when its block sets it to a constant.

A system call's number is usually moved into its register a few instructions before
the call (``movs r4, #6 ... mov r0, r4; bkpt 0xab``; ``mov r7, #4; svc 0``). Knowing it
lets the rewriter leave alone the calls that cannot matter to it (decision 0033: only
a call that may end the program needs the end-of-program hook).

The answer is "unknown" (None) unless it is sure. The walk goes backwards from the
instruction through its block, and on into the block before while that is the only way
in (it falls through, and no branch, table, pointer or unwinder of the procedure leads
to the block; a procedure with a register or table jump is not walked across blocks).
It asks each instruction what it does to the register (``effect_on``) and follows plain
register copies. It gives up at a call (which may change any argument register), at a
system call for r0 (its result), and at an instruction that may change the register in
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

from ..arch.arm.decode import REG_NUMBERS as _NAMES
from .model import Binary, Block, Instruction

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
    if ins.is_syscall:  # the result comes back in r0; the others are as they were
        return UNKNOWN if register == 0 else KEEPS
    if ins.is_call:
        return UNKNOWN
    if not any(_NAMES[name] == register for name in _REGISTER.findall(ins.op_str)):
        return KEEPS
    base = ins.mnemonic.split(".", 1)[0]
    if base in _READ_ONLY:
        return UNKNOWN if _writes_back(ins, register) else KEEPS
    operands = ins.op_str.split(", ")
    if base not in _MOVES:
        return UNKNOWN
    if _NAMES.get(operands[0]) != register:
        return KEEPS  # a move writes its destination only
    if ins.cond != 14 or ins.in_it or len(operands) != 2:
        return UNKNOWN
    source = operands[1]
    if source.startswith("#"):
        value = int(source[1:], 0) & 0xFFFFFFFF
        return Effect(constant=value if base.startswith("mov") else ~value & 0xFFFFFFFF)
    if base in ("mov", "movs") and _NAMES.get(source, 15) < 13:
        return Effect(source=_NAMES[source])
    return UNKNOWN


#: Linux system calls that never return: exit and exit_group (EABI numbers, in r7).
PROCESS_ENDS = frozenset({1, 248})


def ends_process(ins: Instruction, run: list[Instruction]) -> bool:
    """Whether ``ins`` is a system call that ends the process (PROCESS_ENDS), its number set
    by the straight-line code ``run`` that led to it: no flow goes on after it. What follows
    is something else, often of the other instruction set (dietlibc's A32 ``_exit``,
    ``mov r7, #1; svc 0``, is followed by a literal and Thumb functions, decision 0103)."""
    if not ins.is_syscall or ins.cond != 14 or ins.in_it or ins.op_str not in ("#0", "#0x0"):
        return False  # (the old ABI's calls name their number in the SVC, and r7 is anything)
    register = 7
    for before in reversed(run):
        effect = effect_on(before, register)
        if effect.keeps:
            continue
        if effect.source is None:
            return effect.constant in PROCESS_ENDS
        register = effect.source  # follow the copy: what the source held then
    return False


def constant_before(ins: Instruction, register: int, jumped_to: set[int] | None = None) -> int | None:
    """The value register ``register`` (0-12) surely holds when ``ins`` starts, if the code
    that surely runs just before it sets it to a constant; else None. That code is ``ins``'s
    block and, given ``jumped_to`` (``jump_targets`` of the binary), the blocks before it
    that control can only fall through from."""
    block = ins.block
    if block is None:
        return None
    instructions = block.instructions
    at = next((k for k, other in enumerate(instructions) if other is ins), None)
    if at is None:
        return None
    steps = instructions[:at]
    while True:
        for before in reversed(steps):
            effect = effect_on(before, register)
            if effect.keeps:
                continue
            if effect.source is None:
                return effect.constant
            register = effect.source  # follow the copy: what the source held then
        block = _only_way_in(block, jumped_to) if jumped_to is not None else None
        if block is None:
            return None
        steps = block.instructions


def jump_targets(binary: Binary) -> set[int]:
    """Every code address control may reach other than by falling through: procedure
    entries, targets of direct branches and calls anywhere in the program (a ``.cold`` part
    jumps back into its procedure), code pointers in data, unwinders' landing pads, calls
    from undecoded bytes and switch cases."""
    targets = {proc.address for proc in binary.procedures}
    for proc in binary.procedures:
        for ins in proc.instructions():
            if ins.branch_target is not None:
                targets.add(ins.branch_target & ~1)
    for group in (binary.address_taken, binary.code_pointers, binary.unwinder_entries, binary.gap_targets,
                  *binary.switch_cases.values()):
        targets.update(address & ~1 for address in group)
    return targets


def _only_way_in(block: Block, jumped_to: set[int]) -> Block | None:
    """The block control surely comes from into ``block``: the one before it, when it falls
    through into ``block`` and nothing jumps there. None when that is not sure, and in a
    procedure with a register or table jump (whose targets ``jumped_to`` may not hold)."""
    if block.address in jumped_to:
        return None
    proc = block.procedure
    if any(ins.writes_pc and ins.branch_target is None and not (ins.is_return or ins.is_call)
           or ins.name in ("tbb", "tbh") for ins in proc.instructions()):
        return None
    k = proc.blocks.index(block)
    if k == 0:
        return None
    before = proc.blocks[k - 1]
    last = before.instructions[-1]
    return before if last.end == block.address and last.falls_through else None


def _writes_back(ins: Instruction, register: int) -> bool:
    """Whether a store or push changes ``register`` by writing back its base address."""
    text = ins.op_str
    if "!" in text:
        return _NAMES.get(text.split("!", 1)[0].split("[")[-1].split(", ")[0].strip()) == register
    if "], " in text:  # post-indexed: [rN], #imm / [rN], rM
        return _NAMES.get(text.split("[", 1)[1].split("]", 1)[0].split(", ")[0]) == register
    return False

"""Code addresses that straight-line code puts in registers: what a program's entry passes
to the calls it makes (``main``), and where a call through a register goes (long calls).

glibc's ``_start`` passes ``main`` to ``__libc_start_main`` in r0, loaded from the GOT
at an offset in its literal pool (``ldr sl, =GOT - pc; adr r3; add sl, r3; ldr r0, =off;
ldr r0, [sl, r0]``), or from the pool itself. An A32 ``main``'s address is even, so
it does not read as a Thumb code address the way an odd word in data does, and nothing
else names it: in a stripped static program it was never found. The entry's first
instructions are straight-line code; following the constants they compute finds it.

With ``-mlong-calls`` every call is ``movw rN; movt rN; blx rN`` (A32: a literal and
``blx rN``): the same constants, followed back from the call (decision 0054).
"""

from __future__ import annotations

from collections.abc import Callable

from ..arch.arm.jump_tables import REGISTERS, operand_registers
from .model import Instruction

ARGUMENTS = (0, 1, 2, 3)  # r0-r3
_PC = 15


def start_arguments(insns: list[Instruction], read: Callable[[int, int], bytes],
                    is_code: Callable[[int], bool]) -> list[tuple[int, bool]]:
    """(address, Thumb) of the code addresses in r0-r3 at each direct call of ``insns``
    (the entry's straight-line code, in order, up to its first branch): odd ones are Thumb,
    word-aligned even ones A32, as an interworking branch (``blx rN``) takes them."""
    values: dict[int, int] = {}
    out = []
    for ins in insns:
        if ins.is_call and ins.branch_target is not None:
            for reg in ARGUMENTS:
                value = values.get(reg)
                if value is not None and (value & 1 or not value & 3) and is_code(value & ~1):
                    out.append((value & ~1, bool(value & 1)))
            values = {}  # the callee leaves r0-r3 (and r12, lr) as it likes
        elif ins.is_branch or ins.writes_pc:
            break
        else:
            _step(ins, values, read)
    return out


#: How far back from an indirect call ``register_call_target`` looks for the constant.
WINDOW = 24
_CLOBBERED = (0, 1, 2, 3, 12, 14)  # what a callee may leave changed


def register_call_target(run: list[Instruction], read: Callable[[int, int], bytes],
                         is_code: Callable[[int], bool]) -> tuple[int, bool] | None:
    """(address, Thumb) of the code address that the last instruction of ``run`` goes to: a
    call or jump through a register (``blx rN``, ``bx rN``, A32 ``add pc, rN, rM``) whose
    value the instructions before it in the same straight-line run make a constant
    (``movw``/``movt``, a literal, a PC-relative sum: the long-call idiom of ``-mlong-calls``
    and linkers' veneers), or a jump to a literal (``ldr pc, [pc, #n]``). None where the
    value is not known."""
    last = run[-1]
    if last.name == "ldr" and last.writes_pc and last.cond == 14 and len(last.accesses) == 1 \
            and last.accesses[0].base == _PC and last.accesses[0].index is None:
        # ``ldr pc, [pc, #-4]; .word target``: GNU ld's long-branch veneer (A32 to Thumb).
        value = int.from_bytes(read(last.accesses[0].disp, 4), "little")
        return (value & ~1, bool(value & 1)) if (value & 1 or not value & 3) and is_code(value & ~1) else None
    operands, regs = operand_registers(last)
    if last.name == "add" and not last.thumb and last.cond == 14 and len(operands) == 3 and regs[0] == _PC \
            and None not in regs:
        # A32 ``add pc, rN, rM`` of constants: a linker's veneer (``ldr ip, [pc]; add pc, ip,
        # pc; .word target - here``: gold's and GNU ld's Thumb-to-A32 stubs in a PIE). An
        # index in either register makes the sum unknown (a switch).
        sources = regs[1:]
    else:
        reg = regs[0] if len(regs) == 1 else None
        if reg is None or reg == _PC:
            return None
        sources = [reg]
    values: dict[int, int] = {}
    for ins in run[-WINDOW:-1]:
        if ins.is_call:
            for clobbered in _CLOBBERED:
                values.pop(clobbered, None)
        elif ins.is_branch or ins.writes_pc:
            values = {}
        else:
            _step(ins, values, read)
    known = [last.address + 8 if reg == _PC else values.get(reg) for reg in sources]
    if None in known:
        return None
    value = sum(known) & 0xFFFFFFFF
    if not (value & 1 or not value & 3) or not is_code(value & ~1):
        return None
    return value & ~1, bool(value & 1)


def _step(ins: Instruction, values: dict[int, int], read: Callable[[int, int], bytes]) -> None:
    """Update ``values`` (register -> the constant it holds) for ``ins``."""
    operands, regs = operand_registers(ins)
    target = regs[0] if regs else None
    value = None
    pc = ins.address + (4 if ins.thumb else 8)
    if ins.name == "ldr" and len(ins.accesses) == 1 and ins.accesses[0].size == 4 and ins.cond == 14:
        access = ins.accesses[0]
        if access.base == _PC and access.index is None:
            value = int.from_bytes(read(access.disp, 4), "little")
        elif access.base in values and (access.index is None or (access.index in values and not access.shift)):
            offset = values[access.index] if access.index is not None else access.disp
            where = values[access.base] + (-offset if access.subtract else offset)
            value = int.from_bytes(read(where & 0xFFFFFFFF, 4), "little")
    elif ins.name == "adr" and len(operands) == 2 and operands[1].startswith("#"):
        value = (pc & ~3) + int(operands[1][1:], 0)
    elif ins.name in ("mov", "movw") and len(operands) == 2 and operands[1].startswith("#") and ins.cond == 14:
        value = int(operands[1][1:], 0)
    elif ins.name == "mov" and operands[1:] == ["pc"] and ins.cond == 14:
        value = pc  # mold's Thumb-to-A32 veneer: mov ip, pc; bx ip (A32 code after it)
    elif ins.name == "movt" and len(operands) == 2 and operands[1].startswith("#") and target in values:
        value = (values[target] & 0xFFFF) | (int(operands[1][1:], 0) & 0xFFFF) << 16
    elif ins.name == "add" and ins.cond == 14 and len(regs) in (2, 3) and None not in regs:
        addends = regs[1:] if len(regs) == 3 else regs  # add rd, rn, rm or add rd, rm
        known = [pc if reg == _PC else values.get(reg) for reg in addends]
        if None not in known:
            value = sum(known)
    written = {target} if target is not None else set()
    if "{" in ins.op_str or ins.name in ("push", "pop"):
        written = {r for r in regs if r is not None}
    for reg in written:
        values.pop(reg, None)
    if value is not None and target is not None and target in REGISTERS.values():
        values[target] = value & 0xFFFFFFFF

"""Calls followed by data that the callee reads at its return address, and never return there.

klibc's Thumb system calls (Debian's mksh-static and klibc-utils, decision 0103) are
stubs of ``push {r4, r5, r7, lr}; bl __syscall_common`` with the call's number as a
halfword after the BL; ``__syscall_common`` does ``mov r7, lr; subs r7, #1; ldrh r7, [r7]``,
makes the system call and returns with ``pop {r4, r5, r7, pc}``, to the stub's caller. So
the bytes after such a call are data, read where they are:

- a copy's call must leave the original return address in LR (from a copy LR would be the
  copy's return site, where no number is), which costs nothing more, since nothing returns
  there;
- no patch (an entry's jump and its literal) may be written over them, as over a literal
  pool (``Binary.literal_bytes``).

What a callee must do to be one, looked at in its first instructions (straight-line
decoding): copy LR into a register, load through it (or a register computed from it),
use LR in no other way (no push, store, ``bx lr``, call), branch only forward and end in a
``pop``/``ldm`` into PC of what its caller pushed. libgcc's Thumb-1 switch helpers, which
read a table there and return past it (``add lr, ...``), are not (relocate.reads_return_address).
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from .model import Instruction

#: How many instructions of a callee are looked at.
LOOK = 24
#: The Arm condition "always".
_ALWAYS = 14


def inline_data_size(read: Callable[[int, int], bytes], cache: dict[tuple[int, bool], int], target: int,
                     thumb: bool) -> int:
    """How many bytes after a call to ``target`` (Thumb or not) the callee reads there and
    never returns to; 0 if it is not such a callee. ``read``: the image's bytes; ``cache``:
    (target, Thumb) -> the answer, so that each callee is decoded once."""
    key = (target, thumb)
    known = cache.get(key)
    if known is not None:
        return known
    from ..arch.arm.decode import decode_range, shared_disassembler

    disassembler = shared_disassembler(thumb)
    try:
        # The first instruction alone first: almost no callee starts with ``mov rX, lr``.
        # Capstone's text of it says so where it reads one (decode_range's first is that
        # one): the decoder's facts only for those that may.
        head = read(target, 4)
        text = next(disassembler.disasm_lite(head, target), None)
        if text is not None and not text[3].endswith(", lr"):
            starts = False
        else:
            first = decode_range(disassembler, head, target, thumb)[0][:1]
            starts = bool(first) and first[0].name == "mov" and first[0].op_str.endswith(", lr")
        code = decode_range(disassembler, read(target, 4 * LOOK), target, thumb)[0] if starts else []
    except Exception:  # noqa: BLE001 - unreadable bytes (outside the image): no such function
        code = []
    cache[key] = answer = _reader_size(code[:LOOK], target + 2 * LOOK)
    return answer


def _reader_size(code: list[Instruction], reach: int) -> int:
    """inline_data_size's test on the callee's first instructions: the size of its first load
    through LR, or 0. Forward branches no further than ``reach`` (every path is then among
    the instructions looked at)."""
    from ..arch.arm.decode import REG_NUMBERS

    from_lr: set[int] = set()  # registers holding LR or a value computed from it
    size = 0
    furthest = 0  # the furthest forward branch's target
    for ins in code:
        operands = [o.strip(" []!{}^") for o in ins.op_str.split(",")]
        target_reg = REG_NUMBERS.get(operands[0])
        if not from_lr and ins.name == "mov" and operands[1:] == ["lr"] and target_reg is not None:
            from_lr = {target_reg}
            continue
        if "lr" in operands or ins.is_call:
            return 0  # LR saved, written or returned to, or a call sets it
        if from_lr and ins.accesses and not ins.accesses[0].is_store and ins.accesses[0].base in from_lr:
            size = size or ins.accesses[0].size
        elif from_lr and target_reg is not None and {REG_NUMBERS.get(o) for o in operands[1:]} & from_lr:
            from_lr.add(target_reg)  # subs r7, #1 (the Thumb bit), adds r1, #2
        if not ins.writes_pc:
            continue
        if ins.cond != _ALWAYS and ins.branch_target is not None and ins.address < ins.branch_target <= reach:
            furthest = max(furthest, ins.branch_target)
            continue  # forward, to an instruction looked at here
        ends_in_pop = ins.name in ("pop", "ldm") and "pc" in operands and furthest <= ins.address
        return size if ends_in_pop else 0
    return 0


def inline_data_bytes(procedures: list, read: Callable[[int, int], bytes],
                      cache: dict[tuple[int, bool], int]) -> set[int]:
    """The bytes after the calls in ``procedures`` that their callees read there
    (inline_data_size, with its ``cache``): data, as literal pools are."""
    found: set[int] = set()
    for proc in procedures:
        for ins in filter(_IS_CALL, proc.instructions()):  # (the calls picked out in C)
            if ins.branch_target is not None:
                size = inline_data_size(read, cache, ins.branch_target & ~1, ins.thumb != (ins.name == "blx"))
                if size:
                    found.update(range(ins.end, ins.end + size))
    return found


_IS_CALL = operator.attrgetter("is_call")

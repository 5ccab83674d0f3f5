"""Copy x86-64 procedures into the new region: what moves and how its bytes change.

An instruction is copied byte for byte unless its meaning depends on where it is:

- a direct ``call``, ``jmp`` or ``jcc`` is written again with a 32-bit displacement (a
  2-byte short jump may not reach from the copy), to the copy of its target where the
  target was copied, else to the original address;
- ``jrcxz``/``jecxz``/``loop``/``loope``/``loopne`` have only an 8-bit form: the copy is
  the instruction over a short jump, followed by a 32-bit jump to the target
  (``op taken; jmp over; taken: jmp target; over:``);
- an operand addressed from RIP gets a new displacement, so that it names the same
  original address from the copy (data is read and written where it always was);
- a legacy branch-hint or BND prefix before a direct branch is dropped (it means nothing
  to today's processors, and the branch is written anew).

Calls in the copies push the copy's return address, and ``ret`` goes back into the copy,
unless the program's stack may be unwound (C++ exceptions, ``backtrace``): the unwinder
looks every return address up in the original's ``.eh_frame``, so there a call pushes the
original return address and jumps (``emulated_call``), and the original return site gets
a jump to its copy (patches.py) where it has room for one.
Where the copy of an instruction falls through to code that is not the next copied
instruction (a gap, the end of a procedure), a ``jmp`` goes on at the right place.
Indirect jumps and calls keep their original targets: procedure entries, switch cases and
other addresses entered from data get a jump to their copy in the original code (patches.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Set
from functools import lru_cache
from typing import Protocol

from ...errors import AnvilError, RangeError
from ...ir.model import Block, Instruction, Procedure
from .code64 import Code64
from .decode import shared_disassembler
from .jump_tables import SwitchTable

# Prefixes that may come before a branch's opcode: segment overrides used as branch hints
# (0x2e, 0x3e), BND (0xf2), and the rest of the legacy ones.
_PREFIXES = frozenset({0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3})
# The 8-bit-only branches: loopne, loope, loop, jrcxz/jecxz.
_SHORT_ONLY = frozenset({0xE0, 0xE1, 0xE2, 0xE3})
_JMP_REL32, _CALL_REL32 = 0xE9, 0xE8
JMP_SIZE = 5  # jmp rel32
# The opcodes of the copies' jmp, call and jcc (by condition) with a 32-bit displacement.
_JMP, _CALL = bytes((_JMP_REL32,)), bytes((_CALL_REL32,))
_JCC = tuple(bytes((0x0F, 0x80 | condition)) for condition in range(16))


def system_call_label(address: int) -> tuple[str, int]:
    """The label of the copy of the system call at original ``address`` (its instruction,
    past the hooks before it)."""
    return ("system-call", address)


class Hooks(Protocol):
    """What the copier asks for between the copied instructions (hooks.py)."""

    def enter(self, proc: Procedure) -> None: ...

    def block_start(self, block: Block, code: Code64) -> None: ...

    def before_syscall(self, ins: Instruction, code: Code64) -> None: ...

    def after_syscall(self, ins: Instruction, code: Code64) -> None: ...

    def around(self, ins: Instruction, code: Code64, copy: Callable[[Instruction], None]) -> bool: ...


def rel32(at: int, size: int, target: int) -> bytes:
    """The 32-bit displacement of an instruction of ``size`` bytes at ``at`` reaching ``target``."""
    delta = target - (at + size)
    if not -(1 << 31) <= delta < 1 << 31:
        raise RangeError(f"{at:#x} cannot reach {target:#x} with a 32-bit displacement")
    return struct.pack("<i", delta)


def jump_bytes(at: int, target: int) -> bytes:
    """``jmp target`` (5 bytes) written at ``at``."""
    return bytes((_JMP_REL32,)) + rel32(at, JMP_SIZE, target)


def _displacement(ins: Instruction) -> int:
    """Where the 32-bit branch displacement of ``ins`` (its last immediate) is in its bytes."""
    offset = _offsets(ins.raw)[0]
    if offset is None:
        raise AnvilError(f"{ins}: a direct branch of an unknown form")
    return offset


def _disp_offset(ins: Instruction) -> int:
    """Where the 32-bit displacement of ``ins``'s RIP-relative operand is in its bytes: right
    after the ModRM byte (an operand addressed from RIP has no SIB byte and always a 32-bit
    displacement; capstone's ``disp_size`` is wrong for some forms with a 0x66 prefix)."""
    offset = _offsets(ins.raw)[1]
    if offset is None:
        raise AnvilError(f"{ins}: no 32-bit displacement to relocate")
    return offset


@lru_cache(maxsize=1 << 16)
def _offsets(raw: bytes) -> tuple[int | None, int | None]:
    """Where an encoding's 32-bit last immediate and the displacement after its ModRM byte
    are (None: it has none): facts of the encoding, not of where it is."""
    for decoded in shared_disassembler().disasm(raw, 0x1000, 1):
        immediate = decoded.imm_offset if decoded.imm_size == 4 and decoded.imm_offset + 4 == len(raw) else None
        return immediate, decoded.modrm_offset + 1 if decoded.modrm_offset else None
    return None, None


class Copier:
    """Copies procedures into ``code``, where each original instruction's copy is
    (``Code64.copy_of``); calls whose return site is one of ``original_returns`` push the original return address.

    ``hooks`` lowers what a block asks for at its start (inline counters) and what must
    happen before a system call (the program's end): without it, the copies are bare."""

    def __init__(self, code: Code64, original_returns: set[int] = frozenset(), hooks: Hooks | None = None,
                 image: tuple[int, int] | None = None, past_return: Set[int] = frozenset(),
                 tables: dict[int, SwitchTable] | None = None, elsewhere: list[tuple[int, int]] = ()) -> None:
        self.code = code
        # Switch tables, by the instruction that reads their entries (Binary.table_readers):
        # its copy reads a table of the copies' cases, emitted after the procedures
        # (emit_tables); the original table stays as it is.
        self.tables = tables or {}
        self.tables_used: dict[int, SwitchTable] = {}
        # ``ret`` instructions the code after which is entered at their address + 1
        # (Binary.past_return): copied bare, their accesses not traced (noted), so that the
        # copy of the code after them follows at once.
        self.past_return = past_return
        self.untraced: list[int] = []
        self.original_returns = original_returns
        self.hooks = hooks
        # The program's [lowest, highest) link addresses: a direct branch elsewhere is data
        # a descent read as code, or code that means to leave the program; its copy cannot
        # reach there, so it jumps to the original instruction, which can (``in_place``).
        self.image = image
        # Code outside the program that its direct branches may go to: a fixed-address
        # interpreter's (klibc's library, whose functions the program calls at their addresses).
        self.elsewhere = elsewhere
        self.in_place: list[int] = []
        # The original addresses of the system calls copied, each labelled (system_call_label:
        # the first copy, where one is copied twice).
        self.system_calls: set[int] = set()

    def copy_procedure(self, proc: Procedure) -> None:
        """Copy every instruction of ``proc`` in address order."""
        code, hooks = self.code, self.hooks
        if hooks is not None:
            hooks.enter(proc)
        previous: Instruction | None = None
        for block in proc.blocks:
            for ins in block.instructions:
                if previous is not None and previous.falls_through and previous.end != ins.address:
                    self._jump(previous.end)
                code.copy_label(ins.address)
                if ins.address in self.past_return and ins is not block.instructions[0]:
                    if hooks is not None and ins.hooks:
                        self.untraced.append(ins.address)
                    code.emit(ins.raw)
                    previous = ins
                    continue
                if hooks is not None:
                    if ins is block.instructions[0]:
                        hooks.block_start(block, code)
                    if ins.is_syscall:
                        hooks.before_syscall(ins, code)
                    if hooks.around(ins, code, self.copy):
                        previous = ins
                        continue
                self.copy(ins)
                if hooks is not None and ins.is_syscall:
                    hooks.after_syscall(ins, code)
                previous = ins
        if previous is not None and previous.falls_through:
            self._jump(previous.end)

    def copy(self, ins: Instruction) -> None:
        """The copy of one instruction at the code's end."""
        if ins.is_syscall:  # (the system call itself, after its hooks: elf64_image._system_call_map)
            self.code.label(system_call_label(ins.address))
            self.system_calls.add(ins.address)
        table = self.tables.get(ins.address)
        if table is not None:
            self._table_read(ins, table)
        elif ins.branch_target is not None and not ins.is_indirect and self.image is not None \
                and not self.image[0] <= ins.branch_target < self.image[1] \
                and not any(lo <= ins.branch_target < hi for lo, hi in self.elsewhere):
            self.in_place.append(ins.address)
            self.code.rel32(_JMP, b"", ins.address)  # the original (its copy is this)
        elif ins.is_call and ins.end in self.original_returns:
            self._emulated_call(ins)
        elif ins.branch_target is not None and not ins.is_indirect:
            self._direct(ins)
        elif ins.reads_pc:
            self._rip_relative(ins)
        else:
            self.code.emit(ins.raw)

    def _table_read(self, ins: Instruction, table: SwitchTable) -> None:
        """The instruction that reads an entry of ``table``, reading the same entry of a
        table of the copies' cases (``emit_tables``): its memory operand's displacement made
        32 bits and the distance to that table added, the rest as it was."""
        raw = ins.raw
        modrm_at = (_offsets(raw)[1] or 0) - 1
        if modrm_at < 0:
            self.code.emit(raw)
            return
        modrm = raw[modrm_at]
        mod, sib = modrm >> 6, (modrm & 7) == 4
        disp_at = modrm_at + 1 + sib
        if mod == 0 and sib and raw[modrm_at + 1] & 7 == 5:  # no base: [disp32 + index*scale]
            old, size, head = struct.unpack_from("<i", raw, disp_at)[0], 4, raw[:disp_at]
        else:
            old, size = ((0, 0) if mod == 0 else (struct.unpack_from("<b", raw, disp_at)[0], 1) if mod == 1
                         else (struct.unpack_from("<i", raw, disp_at)[0], 4))
            head = raw[:modrm_at] + bytes((0x80 | (modrm & 0x3F),)) + raw[modrm_at + 1:disp_at]
        tail = raw[disp_at + size:]
        self.tables_used[table.address] = table
        labels, key = self.code.labels, ("switch table", table.address)

        def encode(at: int, _: object) -> bytes:
            disp = old + labels[key] - table.address
            if not -(1 << 31) <= disp < 1 << 31:
                # (A fixed-address program's table of addresses, the new one above 2 GiB:)
                # the original read, then nops for the room (the switch as before).
                return raw + b"\x90" * (len(head) + 4 + len(tail) - len(raw))
            return head + struct.pack("<i", disp) + tail

        self.code.later(len(head) + 4 + len(tail), encode)

    def emit_tables(self) -> None:
        """The tables of the copies' cases the copied switches read (``_table_read``): each
        entry the copy of its case (the case itself where it has none), as an address or
        as an offset from the original table, as the original's entries are."""
        code = self.code
        for address, table in sorted(self.tables_used.items()):
            code.emit(bytes(-code.size % 8))
            code.label(("switch table", address))
            form = "<q" if table.width == 8 else "<i"
            base = 0 if table.absolute else table.address
            for target in table.targets:
                code.later(table.width, lambda at, _, target=target, base=base, form=form:
                           struct.pack(form, (code.copy_of(target) or target) - base))

    def _jump(self, address: int) -> None:
        """``jmp`` to the copy of the instruction at ``address``, else to it."""
        self.code.rel32_copy(_JMP, b"", address)

    def _direct(self, ins: Instruction) -> None:
        raw = ins.raw
        start = 0
        while raw[start] in _PREFIXES or 0x40 <= raw[start] <= 0x4F:  # legacy prefixes, REX (meaningless here)
            start += 1
        opcode = raw[start]
        target = ins.branch_target
        code = self.code
        if opcode == _CALL_REL32:
            code.rel32_copy(_CALL, b"", target)
        elif opcode in (_JMP_REL32, 0xEB):
            code.rel32_copy(_JMP, b"", target)
        elif 0x70 <= opcode <= 0x7F or (opcode == 0x0F and 0x80 <= raw[start + 1] <= 0x8F):
            code.rel32_copy(_JCC[(opcode if opcode != 0x0F else raw[start + 1]) & 0xF], b"", target)
        elif opcode in _SHORT_ONLY:
            # op +2 (taken: to the long jump); jmp +5 (not taken: over it); jmp target
            code.emit(raw[:start] + bytes((opcode, 2, 0xEB, JMP_SIZE)))
            code.rel32_copy(_JMP, b"", target)
        else:  # another branch with a 32-bit displacement (xbegin's abort address): changed in place
            offset = _displacement(ins)
            code.rel32_copy(raw[:offset], raw[offset + 4:], target)

    def _rip_relative(self, ins: Instruction) -> None:
        raw = ins.raw
        offset = _disp_offset(ins)
        absolute = ins.address + ins.size + struct.unpack_from("<i", raw, offset)[0]
        self.code.rel32(raw[:offset], raw[offset + 4:], absolute)

    def _emulated_call(self, ins: Instruction) -> None:
        """A call that pushes the original return address, then jumps to the callee's copy
        (direct) or to where the call's operand says (indirect). Neither the flags nor any
        register change; what is written below RSP is the return address's slot and, for an
        indirect call, the target's, which the call itself would have overwritten and which
        lies in the red zone the kernel's signal frames step over."""
        code, site = self.code, ins.end
        if ins.is_indirect:
            # push <operand>: the call's own encoding (FF /2) with the ModRM's reg field 6;
            # RSP-based operands are read before the push moves RSP, as the call reads them.
            push = _as_push(ins)
            self.copy(push)
            code.emit(bytes.fromhex("50"            # push rax
                                    "488b442408"    # mov rax, [rsp+8]: the target
                                    "488944 24f8")) # mov [rsp-8], rax
        else:
            code.emit(bytes.fromhex("488d6424f8"    # lea rsp, [rsp-8]: the return address's slot
                                    "50"))          # push rax
        code.rel32(b"\x48\x8d\x05", b"", site)     # lea rax, [rip+site]
        code.emit(bytes.fromhex("4889442408"        # mov [rsp+8], rax
                                "58"))              # pop rax
        if ins.is_indirect:
            code.emit(bytes.fromhex("ff6424f0"))    # jmp [rsp-16]: the target
        else:
            code.rel32_copy(_JMP, b"", ins.branch_target)


def _as_push(call: Instruction) -> Instruction:
    """``push`` of an indirect call's operand (same length, same operand bytes)."""
    raw = bytearray(call.raw)
    start = 0
    while raw[start] in _PREFIXES:
        start += 1
    raw = raw[start:]
    rex = 1 if 0x40 <= raw[0] <= 0x4F else 0
    if raw[rex] != 0xFF or (raw[rex + 1] >> 3) & 7 != 2:
        raise AnvilError(f"{call}: an indirect call of an unknown form")
    raw[rex + 1] = (raw[rex + 1] & 0xC7) | 6 << 3
    return Instruction(address=call.address + start, size=len(raw), raw=bytes(raw), thumb=False,
                       mnemonic="push", op_str=call.op_str, name="push", reads_pc=call.reads_pc)

"""QEMU oracle: the data accesses of a Linux program's own instructions, from qemu-arm's register dumps.

:func:`trace_accesses` runs the program twice under ``env -i`` with a fixed ``argv[0]``
(like :func:`tests.oracles.qemu_trace.trace_pcs`):

1. ``qemu-arm -L <lib_root> -0 <argv0> -d page`` once, only for ``start_code``, which
   gives the executable's load bias (0 for ``ET_EXEC``; see :mod:`tests.oracles.qemu_trace`);
2. ``qemu-arm ... -singlestep -d exec,cpu,op,nochain,page -dfilter <code ranges>``, whose
   log is streamed through a FIFO and parsed while QEMU runs.

Facts about qemu-arm 7.2's log this relies on:

* With ``-singlestep`` every translation block (TB) is one guest instruction, and with
  ``nochain`` every TB is entered through the main loop, which logs, before running it,
  the ``Trace`` line (``-d exec``) and then the CPU state (``-d cpu``)::

      Trace 0: 0x7f6f1c1e13c0 [00800480/40000784/00000000/00000201]
      R00=3f7e30e9 R01=3f7fed68 R02=00000000 R03=00000000
      R04=0001df50 R05=00000000 R06=40000785 R07=00000000
      R08=00000000 R09=00000000 R10=3f7fe000 R11=00000000
      R12=01010101 R13=3fffff20 R14=3f7e34f3 R15=40000784
      PSR=60080030 -ZC- T usr32

  so the registers are those *before* the instruction (``R15`` is its address, Thumb
  bit clear).  ``PSR`` is the whole CPSR: NZCV in bits 31-28, the T bit (also printed
  as ``T``/``A``) and the IT state (bits 26-25 and 15-10), which holds the condition
  of an instruction inside an IT block.  A TB that an exit request stops before its
  first instruction is followed by ``Stopped execution of TB chain before ... [<pc>]``
  and runs (and is logged) again; its first dump is dropped.
* ``-dfilter`` restricts ``exec``, ``cpu`` and ``op`` logging to the given guest
  address ranges (``-d page`` is not filtered): only the executable's own code is
  logged, which keeps the log to about 330 bytes per instruction of the executable.
* ``-d op`` prints, once per translation, the TCG ops of the instruction after a
  ``---- <pc>`` marker; each guest memory access is a ``qemu_ld_*``/``qemu_st_*`` op
  whose memop names the width (``ub``, ``leuw``, ``al+leul``, ``leq``).

Each executed instruction of the executable (link-time ``PF_X`` ``PT_LOAD`` ranges, run
time ``+ load bias``) is decoded with capstone in the state the CPSR's T bit gives, and
its accesses are computed here from the logged registers, independently of Anvil
(nothing under ``rewriter/`` is used), as ``(pc, address, size, is_store)`` with the
*link-time* ``pc`` and the *run-time* ``address``:

* LDR/STR/LDRB/STRB/LDRH/STRH/LDRSB/LDRSH (immediate, register, shifted register;
  offset, pre-indexed or post-indexed, with or without writeback) and literal
  (PC-relative: ``Align(PC, 4)`` in Thumb, ``PC + 8`` in ARM) loads: one access;
* LDRD/STRD: two 4-byte accesses, the lower address first;
* LDM/STM (IA/IB/DA/DB), PUSH/POP: one 4-byte access per register, ascending addresses;
* VLDR/VSTR: one access of the register's size (4 for S, 8 for D); VLDM/VSTM/VPUSH/VPOP:
  one such access per register, ascending;
* LDREX/STREX (word, byte, halfword): one access, a store for STREX whatever its outcome;
* TBB/TBH: one 1- or 2-byte load of the table entry;
* PLD/PLDW/PLI: none (hints).

A conditional instruction whose condition fails makes no access: the condition is
capstone's for A32 and, in Thumb, the one the logged IT state gives inside an IT block
(checked against capstone's decoding of the IT block from the last executed IT
instruction).  Any other instruction with a memory operand raises
:class:`UnhandledInstruction`, and so does any instruction for which QEMU's ``-d op``
shows guest memory ops that the computed accesses do not match (number, widths and
kinds; STREX appears there as a load and a store, QEMU's compare-and-swap), so a form
this module gets wrong or does not know is reported rather than guessed.

What the -O2 ``sort`` and ``hash`` samples (Thumb PIE and A32 non-PIE, dynamic) execute
in their own code: LDR/STR/LDRB/STRB with immediate, register and shifted-register
offsets, pre-indexed with writeback and post-indexed, literal loads, the PLT's
``ldr pc, [ip, #imm]!``, LDRD, PUSH/POP (also the one-register forms capstone shows for
``ldr rX, [sp], #4``/``str rX, [sp, #-4]!``), TBH, conditional A32 loads and stores and
IT-predicated Thumb stores; about 7 s per program for 1.0-1.7 million instructions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from capstone import CS_ARCH_ARM, CS_MODE_ARM, CS_MODE_THUMB, Cs, CsInsn
from capstone import arm as csarm
from elftools.elf.constants import P_FLAGS
from elftools.elf.elffile import ELFFile

from tests.oracles.qemu_trace import CODE_RE, QEMU, QemuTraceError, run_streamed

__all__ = [
    "AccessTrace",
    "MemoryForm",
    "QemuAccessError",
    "UnhandledInstruction",
    "condition_passes",
    "decode",
    "trace_accesses",
]

#: One executed instruction: ``-d exec`` line plus ``-d cpu`` dump (its layout is checked
#: before registers are read from it at fixed offsets: _Parser._plan and _Parser._blocks).
_BLOCK = rb"Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]{8})/[^\n]*\n(R00=[^P]*PSR=[0-9a-f]{8}) [-NZCV]{4} ([AT]) "
_BLOCK_RE = re.compile(_BLOCK)
#: A TB stopped before its instruction ran (rare).
_STOPPED_RE = re.compile(rb"^Stopped execution of TB chain before \S+ \[([0-9a-f]+)\]", re.M)
#: The dump's layout: R00 to R15, four to a line, then the PSR.
_DUMP_RE = re.compile(rb"R00=[0-9a-f]{8} R01=[0-9a-f]{8} R02=[0-9a-f]{8} R03=[0-9a-f]{8}\n"
                      rb"R04=[0-9a-f]{8} R05=[0-9a-f]{8} R06=[0-9a-f]{8} R07=[0-9a-f]{8}\n"
                      rb"R08=[0-9a-f]{8} R09=[0-9a-f]{8} R10=[0-9a-f]{8} R11=[0-9a-f]{8}\n"
                      rb"R12=[0-9a-f]{8} R13=[0-9a-f]{8} R14=[0-9a-f]{8} R15=[0-9a-f]{8}\n"
                      rb"PSR=[0-9a-f]{8}")
_DUMP_LEN = 4 * 52 + 12
#: ``-d op``: an instruction's start marker, or a guest memory op with its memop.
_OP_RE = re.compile(rb"^ (?:---- ([0-9a-f]+) |qemu_(ld|st)[0-9a-z_]* [^\n]*,([0-9a-z+]+),\d+$)", re.M)
#: Width of a memop by its last letter (``ub``/``sb``, ``leuw``, ``leul``, ``leq``).
_MEMOP_SIZE = {ord("b"): 1, ord("w"): 2, ord("l"): 4, ord("q"): 8}

_AL = 14  # the "always" condition

#: capstone's condition codes are the architectural ones plus one (0 is "invalid").
_CS_CC_OFFSET = 1

_SINGLE_SIZES: dict[int, tuple[int, bool]] = {
    csarm.ARM_INS_LDR: (4, False),
    csarm.ARM_INS_LDRB: (1, False),
    csarm.ARM_INS_LDRH: (2, False),
    csarm.ARM_INS_LDRSB: (1, False),
    csarm.ARM_INS_LDRSH: (2, False),
    csarm.ARM_INS_STR: (4, True),
    csarm.ARM_INS_STRB: (1, True),
    csarm.ARM_INS_STRH: (2, True),
    csarm.ARM_INS_LDREX: (4, False),
    csarm.ARM_INS_LDREXB: (1, False),
    csarm.ARM_INS_LDREXH: (2, False),
    csarm.ARM_INS_STREX: (4, True),
    csarm.ARM_INS_STREXB: (1, True),
    csarm.ARM_INS_STREXH: (2, True),
    csarm.ARM_INS_TBB: (1, False),
    csarm.ARM_INS_TBH: (2, False),
}
_EXCLUSIVE_STORES = {csarm.ARM_INS_STREX, csarm.ARM_INS_STREXB, csarm.ARM_INS_STREXH}
_PAIRS = {csarm.ARM_INS_LDRD: False, csarm.ARM_INS_STRD: True}
_VFP_SINGLE = {csarm.ARM_INS_VLDR: False, csarm.ARM_INS_VSTR: True}
#: Multi-register transfers: id -> (is_store, addressing mode, base is SP).
_MULTI: dict[int, tuple[bool, str, bool]] = {
    csarm.ARM_INS_LDM: (False, "IA", False),
    csarm.ARM_INS_LDMIB: (False, "IB", False),
    csarm.ARM_INS_LDMDA: (False, "DA", False),
    csarm.ARM_INS_LDMDB: (False, "DB", False),
    csarm.ARM_INS_STM: (True, "IA", False),
    csarm.ARM_INS_STMIB: (True, "IB", False),
    csarm.ARM_INS_STMDA: (True, "DA", False),
    csarm.ARM_INS_STMDB: (True, "DB", False),
    csarm.ARM_INS_PUSH: (True, "DB", True),
    csarm.ARM_INS_POP: (False, "IA", True),
    csarm.ARM_INS_VLDMIA: (False, "IA", False),
    csarm.ARM_INS_VLDMDB: (False, "DB", False),
    csarm.ARM_INS_VSTMIA: (True, "IA", False),
    csarm.ARM_INS_VSTMDB: (True, "DB", False),
    csarm.ARM_INS_VPUSH: (True, "DB", True),
    csarm.ARM_INS_VPOP: (False, "IA", True),
}
_HINTS = {csarm.ARM_INS_PLD, csarm.ARM_INS_PLDW, csarm.ARM_INS_PLI}

_REG_NUMBER: dict[int, int] = {getattr(csarm, f"ARM_REG_R{i}"): i for i in range(13)}
_REG_NUMBER.update({csarm.ARM_REG_SP: 13, csarm.ARM_REG_LR: 14, csarm.ARM_REG_PC: 15})
_D_REGS = {getattr(csarm, f"ARM_REG_D{i}") for i in range(32)}
_S_REGS = {getattr(csarm, f"ARM_REG_S{i}") for i in range(32)}

_MASK = 0xFFFFFFFF


class QemuAccessError(QemuTraceError):
    """QEMU could not be run, timed out, or its log was not what this oracle expects."""


class UnhandledInstruction(QemuAccessError):
    """An executed instruction accesses memory in a form this oracle does not compute."""


def _reg_offset(n: int) -> int:
    """Offset of ``R<n>``'s eight hex digits in a ``-d cpu`` dump (four 52-byte lines of four)."""
    return (n // 4) * 52 + (n % 4) * 13 + 4


_REG_OFFSETS = [_reg_offset(n) for n in range(16)]


def condition_passes(cond: int, psr: int) -> bool:
    """Evaluate the architectural condition ``cond`` (0 EQ ... 14 AL) on the flags of ``psr``."""
    n, z, c, v = (psr >> 31) & 1, (psr >> 30) & 1, (psr >> 29) & 1, (psr >> 28) & 1
    base = cond >> 1
    if base == 0:
        result = z == 1
    elif base == 1:
        result = c == 1
    elif base == 2:
        result = n == 1
    elif base == 3:
        result = v == 1
    elif base == 4:
        result = c == 1 and z == 0
    elif base == 5:
        result = n == v
    elif base == 6:
        result = n == v and z == 0
    else:
        return True  # AL (and the unconditional 15)
    return not result if cond & 1 else result


def _shifted(value: int, kind: int, amount: int, carry: int) -> int:
    """``value`` shifted as an address offset's index register is (32-bit result)."""
    if kind == csarm.ARM_SFT_INVALID or amount == 0 and kind != csarm.ARM_SFT_RRX:
        return value
    if kind == csarm.ARM_SFT_LSL:
        return (value << amount) & _MASK if amount < 32 else 0
    if kind == csarm.ARM_SFT_LSR:
        return value >> amount if amount < 32 else 0
    if kind == csarm.ARM_SFT_ASR:
        signed = value - (1 << 32) if value & 0x80000000 else value
        return (signed >> min(amount, 31)) & _MASK
    if kind == csarm.ARM_SFT_ROR:
        amount %= 32
        return ((value >> amount) | (value << (32 - amount))) & _MASK
    if kind == csarm.ARM_SFT_RRX:
        return (value >> 1) | (carry << 31)
    raise ValueError(f"shift kind {kind}")


@dataclass
class MemoryForm:
    """How one memory instruction at a given run-time address computes its accesses.

    ``pc`` is the instruction's run-time address and ``length`` its size in bytes.
    ``base`` is a register number, or None when the base is the PC (then ``base_value``
    is the PC value the instruction reads); the offset is ``disp`` or, with ``index``,
    ``index_sign * (R[index] shifted)``; ``post`` means the offset is applied after the
    access (post-indexed).  ``transfers`` lists ``(offset from the address, size,
    is_store)`` in access order.  ``cond`` is the A32 condition (None in Thumb, where
    the IT state decides).
    """

    pc: int
    length: int
    mnemonic: str
    op_str: str
    thumb: bool
    cond: int | None
    base: int | None
    base_value: int
    disp: int
    index: int | None
    index_sign: int
    shift_kind: int
    shift_amount: int
    post: bool
    transfers: list[tuple[int, int, bool]]
    #: What QEMU's -d op should show per execution: sorted load widths, sorted store widths.
    qemu_ops: tuple[tuple[int, ...], tuple[int, ...]]

    def address(self, regs: Sequence[int], psr: int) -> int:
        """The start address of the transfer, given the registers before the instruction."""
        base = self.base_value if self.base is None else regs[self.base]
        if self.post:
            return base
        if self.index is None:
            offset = self.disp
        else:
            offset = self.index_sign * _shifted(regs[self.index], self.shift_kind, self.shift_amount,
                                                (psr >> 29) & 1)
        return (base + offset) & _MASK

    def accesses(self, regs: Sequence[int], psr: int) -> list[tuple[int, int, bool]]:
        """``(address, size, is_store)`` of each access, in order (condition not evaluated)."""
        start = self.address(regs, psr)
        return [((start + off) & _MASK, size, store) for off, size, store in self.transfers]

    def describe(self) -> str:
        """``pc: mnemonic operands`` for messages."""
        return f"{self.pc:#x}: {self.mnemonic} {self.op_str} ({'T32' if self.thumb else 'A32'})"


def _regnum(insn: CsInsn, reg: int) -> int:
    """Architectural number of a core register, or UnhandledInstruction."""
    if reg not in _REG_NUMBER:
        raise UnhandledInstruction(f"{insn.address:#x}: {insn.mnemonic} {insn.op_str}: register {insn.reg_name(reg)}")
    return _REG_NUMBER[reg]


def _unhandled(insn: CsInsn, why: str) -> UnhandledInstruction:
    return UnhandledInstruction(f"{insn.address:#x}: {insn.mnemonic} {insn.op_str}: {why}")


def decode(code: bytes, address: int, thumb: bool) -> tuple[CsInsn, MemoryForm | None]:
    """Decode the instruction at run-time ``address`` (``code`` starts there) in Thumb or ARM
    state; return it and its :class:`MemoryForm`, None when it makes no data access.

    Raises :class:`UnhandledInstruction` for a memory instruction of a form not computed here.
    """
    md = Cs(CS_ARCH_ARM, CS_MODE_THUMB if thumb else CS_MODE_ARM)
    md.detail = True
    insn = next(md.disasm(code[:4], address, 1), None)
    if insn is None:
        raise UnhandledInstruction(f"{address:#x}: capstone cannot decode {code[:4].hex()}")
    return insn, _form(insn, thumb)


def _form(insn: CsInsn, thumb: bool) -> MemoryForm | None:
    """The :class:`MemoryForm` of a decoded instruction (see :func:`decode`)."""
    ident = insn.id
    ops = list(insn.operands)
    mems = [i for i, op in enumerate(ops) if op.type == csarm.ARM_OP_MEM]
    cond = None if thumb else insn.cc - _CS_CC_OFFSET
    if not thumb and not 0 <= cond <= _AL:
        raise _unhandled(insn, f"condition code {insn.cc}")
    pc_read = insn.address + (4 if thumb else 8)

    def form(base: int | None, base_value: int, disp: int, index: int | None, sign: int, shift: tuple[int, int],
             post: bool, transfers: list[tuple[int, int, bool]], qemu_ops: tuple[list[int], list[int]]
             ) -> MemoryForm:
        return MemoryForm(insn.address, insn.size, insn.mnemonic, insn.op_str, thumb, cond, base, base_value, disp,
                          index, sign, shift[0], shift[1], post, transfers,
                          (tuple(sorted(qemu_ops[0])), tuple(sorted(qemu_ops[1]))))

    if ident in _HINTS:
        return None
    if ident in _MULTI:
        is_store, mode, on_sp = _MULTI[ident]
        if mems:
            raise _unhandled(insn, "multi-register transfer with a memory operand")
        regs = ops if on_sp else ops[1:]
        if on_sp:
            base = 13
        else:
            if not ops or ops[0].type != csarm.ARM_OP_REG:
                raise _unhandled(insn, "no base register")
            base = _regnum(insn, ops[0].reg)
        if not regs or any(op.type != csarm.ARM_OP_REG for op in regs):
            raise _unhandled(insn, "register list")
        sizes = []
        for op in regs:
            if op.reg in _D_REGS:
                sizes.append(8)
            elif op.reg in _S_REGS:
                sizes.append(4)
            else:
                _regnum(insn, op.reg)
                sizes.append(4)
        if len(set(sizes)) != 1:
            raise _unhandled(insn, "mixed register sizes")
        size, n = sizes[0], len(sizes)
        first = {"IA": 0, "IB": size, "DA": size - n * size, "DB": -n * size}[mode]
        widths = [size] * n
        return form(base, 0, first, None, 1, (0, 0), False, [(i * size, size, is_store) for i in range(n)],
                    ([], widths) if is_store else (widths, []))
    if not mems:
        if ident in _SINGLE_SIZES or ident in _PAIRS or ident in _VFP_SINGLE:
            raise _unhandled(insn, "no memory operand")
        return None
    if len(mems) != 1:
        raise _unhandled(insn, "several memory operands")
    at = mems[0]
    mem_op = ops[at]
    if ident in _SINGLE_SIZES:
        size, is_store = _SINGLE_SIZES[ident]
        transfers = [(0, size, is_store)]
        if ident in _EXCLUSIVE_STORES:
            qemu_ops: tuple[list[int], list[int]] = ([size], [size])
        else:
            qemu_ops = ([], [size]) if is_store else ([size], [])
    elif ident in _PAIRS:
        is_store = _PAIRS[ident]
        transfers = [(0, 4, is_store), (4, 4, is_store)]
        qemu_ops = ([], [4, 4]) if is_store else ([4, 4], [])
    elif ident in _VFP_SINGLE:
        is_store = _VFP_SINGLE[ident]
        reg = ops[0].reg if ops and ops[0].type == csarm.ARM_OP_REG else None
        if reg in _D_REGS:
            size = 8
        elif reg in _S_REGS:
            size = 4
        else:
            raise _unhandled(insn, "VFP register")
        transfers = [(0, size, is_store)]
        qemu_ops = ([], [size]) if is_store else ([size], [])
    else:
        raise _unhandled(insn, "memory instruction of a form this oracle does not compute")
    mem = mem_op.mem
    table_branch = ident in (csarm.ARM_INS_TBB, csarm.ARM_INS_TBH)
    base_reg = _regnum(insn, mem.base)
    if base_reg == 15:
        # Thumb literal addressing uses Align(PC, 4); TBB/TBH add the unaligned PC.
        base: int | None = None
        base_value = pc_read if table_branch or not thumb else pc_read & ~3
    else:
        base, base_value = base_reg, 0
    rest = ops[at + 1:]
    post = bool(rest)
    index: int | None = None
    sign, disp, shift = 1, 0, (0, 0)
    if post:
        # Post-indexed: [Rn], #+/-imm or [Rn], +/-Rm{, shift}; the access is at Rn.
        if len(rest) != 1 or mem.index or mem.disp:
            raise _unhandled(insn, "post-indexed form")
        if table_branch:
            raise _unhandled(insn, "post-indexed table branch")
    else:
        if mem.index:
            index = _regnum(insn, mem.index)
            if index == 15:
                raise _unhandled(insn, "PC as index register")
            sign = -1 if mem_op.subtracted else 1
            shift = (mem_op.shift.type, mem_op.shift.value)
            if shift[0] not in (csarm.ARM_SFT_INVALID, csarm.ARM_SFT_LSL, csarm.ARM_SFT_LSR, csarm.ARM_SFT_ASR,
                                csarm.ARM_SFT_ROR, csarm.ARM_SFT_RRX):
                raise _unhandled(insn, f"index shift kind {shift[0]}")
            if mem.disp:
                raise _unhandled(insn, "index register and displacement")
        else:
            disp = mem.disp  # signed in capstone 5 (the U bit applied)
    return form(base, base_value, disp, index, sign, shift, post, transfers, qemu_ops)


def _check_ops(form: MemoryForm | None, ops: tuple[tuple[int, ...], tuple[int, ...]] | None, insn: CsInsn) -> None:
    """Compare the accesses computed for an instruction with QEMU's memory ops for it."""
    want = ((), ()) if form is None else form.qemu_ops
    got = ((), ()) if ops is None else ops
    if got != want:
        raise UnhandledInstruction(
            f"{insn.address:#x}: {insn.mnemonic} {insn.op_str}: QEMU's ops load {list(got[0])} and store "
            f"{list(got[1])} bytes per execution; this oracle computes loads {list(want[0])}, stores {list(want[1])}"
        )


@dataclass
class AccessTrace:
    """Outcome of :func:`trace_accesses`."""

    #: ``(pc, address, size, is_store)`` of every access of the executable's instructions,
    #: in execution order; ``pc`` at its link-time address, ``address`` as the program ran.
    accesses: list[tuple[int, int, int, bool]]
    #: Link-time PC -> number of executions, for every executed instruction of the executable.
    executed: Counter[int]
    #: Exit status as ``subprocess`` reports it (negative = killed by that signal).
    returncode: int
    #: The program's standard output.
    stdout: bytes
    #: The program's standard error (QEMU's own messages land here too).
    stderr: bytes
    #: Run-time address minus link-time address of the executable (0 for ET_EXEC).
    load_bias: int
    #: Executed memory instructions whose condition failed at least once: link-time PC -> times.
    skipped: Counter[int]


class _Image:
    """The executable's code: link-time ``PF_X`` ``PT_LOAD`` ranges and their bytes."""

    def __init__(self, binary: Path) -> None:
        self.segments: list[tuple[int, int, bytes]] = []
        with open(binary, "rb") as fh:
            elf = ELFFile(fh)
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & P_FLAGS.PF_X:
                    self.segments.append((seg["p_vaddr"], seg["p_vaddr"] + seg["p_memsz"], seg.data()))
        if not self.segments:
            raise QemuAccessError(f"{binary}: no executable PT_LOAD segment")

    def code(self, link: int) -> bytes:
        """Up to four bytes of code at link-time address ``link``."""
        for start, end, data in self.segments:
            if start <= link < end:
                return data[link - start:link - start + 4]
        raise QemuAccessError(f"{link:#x} is outside the executable's code")


class _Parser:
    """Incremental parser of the ``-d exec,cpu,op,nochain`` log of the executable's code."""

    def __init__(self, image: _Image, bias: int) -> None:
        self.image = image
        self.bias = bias
        self.accesses: list[tuple[int, int, int, bool]] = []
        self.counts: dict[bytes, int] = {}
        self.skipped: Counter[int] = Counter()
        self.plans: dict[bytes, MemoryForm | bool | None] = {}  # True: an IT instruction
        self.ops: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self.code: dict[bytes, int] = {}
        self._it_conditions: dict[tuple[int, int], int] = {}
        self._last_it: int | None = None
        self._prev_key: bytes | None = None
        self._mark = 0
        self._rest = b""
        self._op_pc: int | None = None
        self._op_loads: list[int] = []
        self._op_stores: list[int] = []

    def feed(self, data: bytes) -> None:
        """Consume the next piece of the stream (any split point): parse up to the last Trace line."""
        buf = self._rest + data if self._rest else data
        cut = buf.rfind(b"\nTrace ") + 1
        if cut == 0:
            self._rest = buf
            return
        self._parse(buf, cut)
        self._rest = buf[cut:]

    def close(self) -> None:
        """Parse what is left at the end of the stream."""
        data, self._rest = self._rest + b"\n", b""
        self._parse(data, len(data))

    def _parse(self, buf: bytes, end: int) -> None:
        if len(self.code) < 2 and b"_code" in buf:
            for key, value in CODE_RE.findall(buf, 0, end):
                self.code.setdefault(key, int(value, 16))
        start = buf.find(b"OP:\n", 0, end)
        while start >= 0:  # translations: mostly at start-up
            stop = buf.find(b"\nTrace ", start, end)
            stop = end if stop < 0 else stop
            self._parse_ops(buf, start, stop)
            start = buf.find(b"OP:\n", stop, end)
        pos = 0
        if buf.find(b"Stopped execution", 0, end) >= 0:  # rare
            for match in _STOPPED_RE.finditer(buf, 0, end):
                self._blocks(buf, pos, match.start())
                self._stopped(match.group(1))
                pos = match.end()
        self._blocks(buf, pos, end)

    def _blocks(self, buf: bytes, start: int, end: int) -> None:
        """Compute the accesses of the instructions logged in ``buf[start:end]``."""
        plans, counts, out = self.plans, self.counts, self.accesses
        offsets = _REG_OFFSETS
        for pc_hex, dump, mode in _BLOCK_RE.findall(buf, start, end):
            key = pc_hex + mode
            counts[key] = counts.get(key, 0) + 1
            self._prev_key = key
            plan = plans.get(key, False)
            if plan is False:
                plan = self._plan(key, dump)
            if plan is None:
                continue
            if plan is True:
                self._last_it = int(pc_hex, 16)
                continue
            if len(dump) != _DUMP_LEN:
                raise QemuAccessError(f"unexpected -d cpu dump before {plan.describe()}: {dump!r}")
            psr = int(dump[-8:], 16)
            if plan.thumb:
                itstate = ((psr >> 8) & 0xFC) | ((psr >> 25) & 3)
                cond = self._it_condition(plan, itstate) if itstate & 0xF else _AL
            else:
                cond = plan.cond
            if cond != _AL and not condition_passes(cond, psr):
                self.skipped[(plan.pc - self.bias) & _MASK] += 1
                continue
            regs = [int(dump[o:o + 8], 16) for o in offsets]
            if regs[15] != plan.pc:
                raise QemuAccessError(f"dump for {plan.describe()} has R15={regs[15]:#x}")
            link = (plan.pc - self.bias) & _MASK
            self._mark = len(out)
            for address, size, store in plan.accesses(regs, psr):
                out.append((link, address, size, store))

    def _parse_ops(self, buf: bytes, start: int, end: int) -> None:
        """Note the memory ops of each instruction translated in ``buf[start:end]`` (one ``OP:`` block)."""
        for pc, kind, memop in _OP_RE.findall(buf, start, end):
            if pc:
                self._flush_op()
                self._op_pc = int(pc, 16)
                continue
            size = _MEMOP_SIZE.get(memop[-1])
            if size is None or self._op_pc is None:
                raise QemuAccessError(f"unexpected memory op {kind!r} {memop!r} at {self._op_pc}")
            (self._op_loads if kind == b"ld" else self._op_stores).append(size)
        self._flush_op()

    def _flush_op(self) -> None:
        if self._op_pc is not None:
            self.ops[self._op_pc] = (tuple(sorted(self._op_loads)), tuple(sorted(self._op_stores)))
        self._op_pc = None
        self._op_loads, self._op_stores = [], []

    def _plan(self, key: bytes, dump: bytes) -> MemoryForm | bool | None:
        """Decode the instruction of ``key`` (run-time PC in hex + ``T``/``A``) the first time it runs."""
        if not _DUMP_RE.fullmatch(dump):
            raise QemuAccessError(f"unexpected -d cpu dump for {key!r}: {dump!r}")
        pc = int(key[:-1], 16)
        thumb = key[-1:] == b"T"
        link = (pc - self.bias) & _MASK
        insn, form = decode(self.image.code(link), pc, thumb)
        if pc not in self.ops:
            raise QemuAccessError(f"{pc:#x}: no -d op output for an executed instruction")
        _check_ops(form, self.ops[pc], insn)
        plan: MemoryForm | bool | None = form
        if thumb and insn.id == csarm.ARM_INS_IT:
            plan = True
        elif form is not None and thumb and insn.cc - _CS_CC_OFFSET != _AL:
            raise _unhandled(insn, "conditional Thumb memory instruction outside the IT state")
        self.plans[key] = plan
        return plan

    def _it_condition(self, plan: MemoryForm, itstate: int) -> int:
        """The condition of a Thumb instruction in an IT block, from the IT state; checked
        against capstone's decoding of the block from the last executed IT instruction."""
        cond = itstate >> 4
        it = self._last_it
        if it is None or not 0 < plan.pc - it <= 2 + 3 * 4:
            raise QemuAccessError(f"{plan.describe()} runs in an IT block (state {itstate:#x}) with no IT before it")
        known = self._it_conditions.get((plan.pc, it))
        if known is None:
            code = b"".join(self.image.code((a - self.bias) & _MASK)[:2] for a in range(it, plan.pc + 4, 2))
            md = Cs(CS_ARCH_ARM, CS_MODE_THUMB)
            md.detail = True
            known = next((i.cc - _CS_CC_OFFSET for i in md.disasm(code, it) if i.address == plan.pc), -1)
            self._it_conditions[(plan.pc, it)] = known
        if known != cond:
            raise QemuAccessError(f"{plan.describe()}: IT state {itstate:#x} gives condition {cond}, "
                                  f"capstone decodes {known} after the IT at {it:#x}")
        return cond

    def _stopped(self, pc_hex: bytes) -> None:
        """A TB stopped before its instruction ran: drop what its dump added."""
        key = self._prev_key
        if key is None or key[:-1] != pc_hex.rjust(8, b"0"):
            raise QemuAccessError(f"'Stopped execution' before {pc_hex!r} does not follow its dump")
        self.counts[key] -= 1
        if isinstance(self.plans.get(key), MemoryForm):
            del self.accesses[self._mark:]
        self._prev_key = None

    def executed(self) -> Counter[int]:
        """Link-time PC -> executions."""
        out: Counter[int] = Counter()
        for key, n in self.counts.items():
            if n:
                out[(int(key[:-1], 16) - self.bias) & _MASK] += n
        return out


def _start_code(cmd: list[str], stdin: bytes, tmp: Path, timeout: float | None) -> int:
    """Run ``cmd`` (``{log}`` = a log file) with ``-d page`` only; return ``start_code``."""
    log = tmp / "page.log"
    subprocess.run([str(log) if part == "{log}" else part for part in cmd], input=stdin, capture_output=True,
                   timeout=timeout, check=False)
    with open(log, "rb") as fh:
        found = dict(CODE_RE.findall(fh.read(1 << 16)))
    if b"start_code" not in found:
        raise QemuAccessError("no start_code in qemu-arm's -d page log")
    return int(found[b"start_code"], 16)


def trace_accesses(
    binary: str | os.PathLike[str],
    args: Sequence[str] = (),
    stdin: bytes = b"",
    argv0: str = "prog",
    lib_root: str = "/usr/arm-linux-gnueabihf",
    *,
    timeout: float | None = 600.0,
    env: Mapping[str, str] | None = None,
) -> AccessTrace:
    """Run ``binary`` under qemu-arm and compute every data access of its own instructions.

    The guest gets an empty environment (``env -i``, plus ``env``), ``argv[0] = argv0``
    and ``stdin``; shared libraries and ld.so come from ``lib_root``.  See the module
    docstring for what is computed and checked.  Raises :class:`UnhandledInstruction` for
    an executed memory instruction this oracle does not handle, :class:`QemuAccessError`
    when QEMU cannot be run, runs longer than ``timeout`` seconds, or logs something unexpected.
    """
    qemu = shutil.which(QEMU)
    if qemu is None:
        raise QemuAccessError(f"{QEMU} not found on PATH")
    binary = Path(binary)
    if not binary.is_file():
        raise QemuAccessError(f"{binary}: no such file")
    image = _Image(binary)
    low = min(start for start, _, _ in image.segments)
    variables = [f"{k}={v}" for k, v in (env or {}).items()]
    head = ["env", "-i", *variables, qemu, "-L", lib_root, "-0", argv0]
    tail = ["-D", "{log}", str(binary), *args]
    with tempfile.TemporaryDirectory(prefix="anvil-qemu-accesses-") as tmp_name:
        tmp = Path(tmp_name)
        bias = (_start_code([*head, "-d", "page", *tail], stdin, tmp, timeout) - low) & _MASK
        ranges = ",".join(f"{(start + bias) & _MASK:#x}..{(end + bias - 1) & _MASK:#x}"
                          for start, end, _ in image.segments)
        cmd = [*head, "-singlestep", "-d", "exec,cpu,op,nochain,page", "-dfilter", ranges, *tail]
        parser = _Parser(image, bias)
        returncode, stdout, stderr = run_streamed(cmd, stdin, parser, timeout)
    start_code = parser.code.get(b"start_code")
    if start_code is None or (start_code - low) & _MASK != bias:
        raise QemuAccessError(f"{binary}: start_code {start_code} differs from the first run's "
                              f"{(low + bias) & _MASK:#x} (stderr: {stderr[-300:]!r})")
    return AccessTrace(accesses=parser.accesses, executed=parser.executed(), returncode=returncode, stdout=stdout,
                       stderr=stderr, load_bias=bias, skipped=parser.skipped)

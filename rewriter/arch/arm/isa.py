"""One interface over the A32 and T32 encoders, so hook sequences are written once.

``ISA.for_mode(thumb)`` gives the instance; every method appends to a ``Code``.
Symbolic targets (labels) are resolved by fixups when the code is finished.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from functools import cache, partial

from ...ir.model import Binary
from ..code import Code, Resolver
from . import encode as enc

AL = enc.AL
PC, LR, SP, IP = 15, 14, 13, 12


def _a32_bl(src: int, dst: int) -> bytes:
    return enc.a32_b(src, dst, link=True)


def _addr(target: Hashable | int, resolve: Resolver) -> int:
    return target if isinstance(target, int) else resolve(target)


# The fixups of the frequent forms: module functions under functools.partial, not a
# closure each (a function and its cells, held by the code until it is encoded).
def _t32_address(rd: int, target: Hashable | int, at: int, resolve: Resolver) -> bytes:
    return enc.t32_mov32(rd, _addr(target, resolve))


def _t32_pc_address(rd: int, target: Hashable | int, at: int, resolve: Resolver) -> bytes:
    return enc.t32_pc_address(rd, at, _addr(target, resolve))


def _t32_cbz(rn: int, target: Hashable | int, nonzero: bool, at: int, resolve: Resolver) -> bytes:
    return enc.t32_cbz(rn, _addr(target, resolve) - (at + 4), nonzero)


def _a32_address(rd: int, target: Hashable | int, at: int, resolve: Resolver) -> bytes:
    return enc.a32_mov32(rd, _addr(target, resolve))


def _a32_pc_address(rd: int, target: Hashable | int, at: int, resolve: Resolver) -> bytes:
    return enc.a32_pc_address(rd, at, _addr(target, resolve))


@cache
def _t32_b_if(cond: int) -> Callable[[int, int], bytes]:
    """The encoder of a T32 B.W under ``cond``: one per condition, shared by its branches."""
    return lambda at, dest: enc.t32_b(at, dest, cond)


class ISA:
    """Emit helpers for one instruction set."""

    thumb: bool = True
    pc_offset: int = 4

    @staticmethod
    def for_mode(thumb: bool) -> ISA:
        return T32 if thumb else A32

    def skip_unless(self, code: Code, cond: int) -> object:
        """Start a region that runs only when ``cond`` holds; pass the result to ``end_skip``."""
        key = ("skip", id(code), code.size)
        self.branch(code, key, enc.invert_cond(cond))
        return key

    def end_skip(self, code: Code, key: object) -> None:
        code.label(key)


@cache
def _cached(encoder, *args: int) -> bytes:
    """Encoders are pure: the same arguments give the same bytes, so encode each once."""
    return encoder(*args)


@cache
def _cached_regs(encoder, regs: tuple[int, ...]) -> bytes:
    return encoder(list(regs))


class _T32(ISA):
    thumb = True
    pc_offset = 4

    def to_d(self, code: Code, d: int, rt: int, rt2: int) -> None:
        code.emit(_cached(enc.t32_vmov_to_d, d, rt, rt2))

    def from_d(self, code: Code, rt: int, rt2: int, d: int) -> None:
        code.emit(_cached(enc.t32_vmov_from_d, rt, rt2, d))

    def push(self, code: Code, regs: list[int]) -> None:
        code.emit(_cached_regs(enc.t32_push, tuple(regs)))

    def pop(self, code: Code, regs: list[int]) -> None:
        code.emit(_cached_regs(enc.t32_pop, tuple(regs)))

    def mrs(self, code: Code, rd: int) -> None:
        code.emit(_cached(enc.t32_mrs_apsr, rd))

    def msr(self, code: Code, rn: int) -> None:
        code.emit(_cached(enc.t32_msr_apsr, rn, code.ge))

    def mov_reg(self, code: Code, rd: int, rm: int) -> None:
        code.emit(_cached(enc.t32_mov_reg, rd, rm))

    def ldr(self, code: Code, rt: int, rn: int, off: int) -> None:
        code.emit(_cached(enc.t32_ldr_imm, rt, rn, off))

    def str(self, code: Code, rt: int, rn: int, off: int) -> None:
        code.emit(enc.t32_str_imm(rt, rn, off))

    def mov32(self, code: Code, rd: int, value: int) -> None:
        if 0 <= value <= 0xFFFF:
            code.emit(_cached(enc.t32_movw, rd, value))
        else:
            code.emit(enc.t32_mov32(rd, value))

    def add_imm(self, code: Code, rd: int, rn: int, imm: int, scratch: int = IP) -> None:
        """rd = rn + imm, flags untouched; may use ``scratch`` for large immediates."""
        if imm == 0:
            if rd != rn:
                self.mov_reg(code, rd, rn)
            return
        try:
            code.emit(enc.t32_add_imm(rd, rn, imm))
        except enc.RangeError:
            self.mov32(code, scratch, imm & 0xFFFFFFFF)
            code.emit(enc.t32_add_reg_shift(rd, rn, scratch, 0, 0))

    def add_shifted(self, code: Code, rd: int, rn: int, rm: int, shift_type: int, amount: int,
                    sub: bool = False) -> None:
        code.emit(enc.t32_add_reg_shift(rd, rn, rm, shift_type, amount, sub))

    def align_sp8(self, code: Code, tmp: int) -> None:
        """Round SP down to a multiple of 8 (``tmp`` is clobbered)."""
        code.emit(enc.t32_mov_reg(tmp, SP))
        code.emit(enc.t32_bic_imm(tmp, tmp, 7))
        code.emit(enc.t32_mov_reg(SP, tmp))

    def pc_address(self, code: Code, rd: int, target: Hashable | int) -> None:
        """rd = runtime address of link-time ``target`` (label or address)."""
        if not code.pic:
            if isinstance(target, int):  # known now: no fixup needed
                code.emit(enc.t32_mov32(rd, target))
                return
            code.later(8, partial(_t32_address, rd, target))
            return
        code.later(10, partial(_t32_pc_address, rd, target))

    def call(self, code: Code, target: Hashable | int, target_thumb: bool = True) -> None:
        code.branch(target, enc.t32_bl if target_thumb else enc.t32_blx, target_thumb)

    def branch(self, code: Code, target: Hashable | int, cond: int = AL) -> None:
        code.branch(target, enc.t32_b if cond == AL else _t32_b_if(cond), True)

    def far_jump(self, code: Code, target: int, target_thumb: bool) -> None:
        """Jump to a link-time address anywhere (clobbers IP, as veneers may)."""
        dest = target | (1 if target_thumb else 0)
        code.later(12, lambda at, r: enc.t32_mov32(IP, (dest - (at + 12)) & 0xFFFFFFFF)
                   + enc.t32_add_reg(IP, PC) + enc.t32_bx(IP))

    def clear_low_bits(self, code: Code, rd: int, rn: int, mask: int) -> None:
        """rd = rn & ~mask (mask < 256), flags untouched."""
        code.emit(_cached(enc.t32_bic_imm, rd, rn, mask))

    def cmp_zero(self, code: Code, rn: int) -> None:
        code.emit(enc._hw(0x2800 | (rn << 8)))  # CMP rn, #0 (T1)

    def logic(self, code: Code, op: int, rd: int, rn: int, rm: int, shift_type: int = 0, amount: int = 0) -> None:
        """rd = rn <op> (rm <shift> amount), op one of enc.T32_AND/BIC/ORR/EOR; flags untouched."""
        code.emit(_cached(enc.t32_logic_reg, op, rd, rn, rm, shift_type, amount))

    def ldr_index(self, code: Code, rt: int, rn: int, rm: int, shift: int) -> None:
        """ldr.w rt, [rn, rm, lsl #shift] (shift 0-3)."""
        code.emit(enc._hw(0xF850 | rn, (rt << 12) | (shift << 4) | rm))

    def cbz(self, code: Code, rn: int, target: Hashable, nonzero: bool = False) -> None:
        """Branch forward (at most 126 bytes) to ``target`` if rn (r0-r7) is zero (nonzero), flags untouched."""
        code.later(2, partial(_t32_cbz, rn, target, nonzero))


class _A32(ISA):
    thumb = False
    pc_offset = 8

    def to_d(self, code: Code, d: int, rt: int, rt2: int) -> None:
        code.emit(_cached(enc.a32_vmov_to_d, d, rt, rt2))

    def from_d(self, code: Code, rt: int, rt2: int, d: int) -> None:
        code.emit(_cached(enc.a32_vmov_from_d, rt, rt2, d))

    def push(self, code: Code, regs: list[int]) -> None:
        code.emit(_cached_regs(enc.a32_push, tuple(regs)))

    def pop(self, code: Code, regs: list[int]) -> None:
        code.emit(_cached_regs(enc.a32_pop, tuple(regs)))

    def mrs(self, code: Code, rd: int) -> None:
        code.emit(enc.a32_mrs_apsr(rd))

    def msr(self, code: Code, rn: int) -> None:
        code.emit(enc.a32_msr_apsr(rn))

    def mov_reg(self, code: Code, rd: int, rm: int) -> None:
        code.emit(enc._w(0xE1A00000 | (rd << 12) | rm))

    def ldr(self, code: Code, rt: int, rn: int, off: int) -> None:
        code.emit(enc.a32_ldr_imm(rt, rn, off))

    def str(self, code: Code, rt: int, rn: int, off: int) -> None:
        code.emit(enc.a32_str_imm(rt, rn, off))

    def mov32(self, code: Code, rd: int, value: int) -> None:
        if 0 <= value <= 0xFFFF:
            code.emit(enc.a32_movw(rd, value))
        else:
            code.emit(enc.a32_mov32(rd, value))

    def add_imm(self, code: Code, rd: int, rn: int, imm: int, scratch: int = IP) -> None:
        if imm == 0:
            if rd != rn:
                self.mov_reg(code, rd, rn)
            return
        self.mov32(code, scratch, imm & 0xFFFFFFFF)
        code.emit(enc.a32_add_reg(rd, rn, scratch))

    def add_shifted(self, code: Code, rd: int, rn: int, rm: int, shift_type: int, amount: int,
                    sub: bool = False) -> None:
        code.emit(enc.a32_add_reg_shift(rd, rn, rm, shift_type, amount, sub))

    def align_sp8(self, code: Code, tmp: int) -> None:
        code.emit(enc._w(0xE3CDD007))  # bic sp, sp, #7

    def pc_address(self, code: Code, rd: int, target: Hashable | int) -> None:
        if not code.pic:
            if isinstance(target, int):  # known now: no fixup needed
                code.emit(enc.a32_mov32(rd, target))
                return
            code.later(8, partial(_a32_address, rd, target))
            return
        code.later(12, partial(_a32_pc_address, rd, target))

    def call(self, code: Code, target: Hashable | int, target_thumb: bool = True) -> None:
        code.branch(target, enc.a32_blx_imm if target_thumb else _a32_bl, target_thumb)

    def branch(self, code: Code, target: Hashable | int, cond: int = AL) -> None:
        code.branch(target, enc.a32_b if cond == AL else lambda at, dest: enc.a32_b(at, dest, cond), False)

    def far_jump(self, code: Code, target: int, target_thumb: bool) -> None:
        dest = target | (1 if target_thumb else 0)
        code.later(16, lambda at, r: enc.a32_mov32(IP, (dest - (at + 16)) & 0xFFFFFFFF)
                   + enc.a32_add_reg(IP, IP, PC) + enc.a32_bx(IP))


    def clear_low_bits(self, code: Code, rd: int, rn: int, mask: int) -> None:
        code.emit(_cached(enc.a32_bic_imm, rd, rn, mask))

    def logic(self, code: Code, op: int, rd: int, rn: int, rm: int, shift_type: int = 0, amount: int = 0) -> None:
        code.emit(_cached(enc.a32_logic_reg, op, rd, rn, rm, shift_type, amount))

    def ldr_index(self, code: Code, rt: int, rn: int, rm: int, shift: int) -> None:
        """ldr rt, [rn, rm, lsl #shift]."""
        code.emit(enc._w(0xE7900000 | (rn << 16) | (rt << 12) | (shift << 7) | rm))


T32 = _T32()
A32 = _A32()


def vfp_scratch(binary: Binary) -> bool:
    """Whether hooks park registers in d16-d31 (else on the stack). Cortex-M cores have no
    d16-d31 (FPv4-SP: d0-d15 at most)."""
    return not binary.is_firmware and not binary.uses_high_vfp() and not os.environ.get("ANVIL_STACK_SCRATCH")


class Scratch:
    """Where emitted code keeps the registers it borrows.

    With ``vfp`` they go to d16-d31, which the program does not use (checked when the
    binary is loaded), so nothing is written below SP: a program that reads stack it
    never wrote finds what it would have found without instrumentation. Otherwise
    they are pushed on the program's stack.
    """

    def __init__(self, vfp: bool) -> None:
        self.vfp = vfp
        # Bytes the site has moved SP down by before its own code (relocate._step_down):
        # the program's SP is SP + this, before the site pushes anything.
        self.sp_bias = 0

    def save(self, isa: ISA, code: Code, pairs: list[tuple[int, int]], first: int = 16, dead: int = 0) -> None:
        """Park ``pairs`` (the k-th in d``first+k``); with d16-d31, those whose two registers
        are both in ``dead`` (bit n for rn) are left as they are."""
        code.emit(self.save_bytes(isa, pairs, first, dead))

    def save_bytes(self, isa: ISA, pairs: list[tuple[int, int]], first: int = 16, dead: int = 0) -> bytes:
        """The bytes ``save`` emits."""
        return _transfer(isa.thumb, self.vfp, True, tuple(pairs), first, dead)

    def restore(self, isa: ISA, code: Code, pairs: list[tuple[int, int]], first: int = 16, dead: int = 0) -> None:
        """Put back what ``save`` with the same arguments parked."""
        code.emit(_transfer(isa.thumb, self.vfp, False, tuple(pairs), first, dead))


@cache
def _transfer(thumb: bool, vfp: bool, save: bool, pairs: tuple[tuple[int, int], ...], first: int,
              dead: int) -> bytes:
    """The bytes of a save or restore (encoded once per distinct sequence)."""
    if vfp:
        kept = [(first + k, a, b) for k, (a, b) in enumerate(pairs) if (dead >> a & 1) == 0 or (dead >> b & 1) == 0]
        if save:
            enc_one = enc.t32_vmov_to_d if thumb else enc.a32_vmov_to_d
            return b"".join(enc_one(d, a, b) for d, a, b in kept)
        enc_one = enc.t32_vmov_from_d if thumb else enc.a32_vmov_from_d
        return b"".join(enc_one(a, b, d) for d, a, b in kept)
    regs = sorted({r for pair in pairs for r in pair})
    if thumb:
        return enc.t32_push(regs) if save else enc.t32_pop(regs)
    return enc.a32_push(regs) if save else enc.a32_pop(regs)

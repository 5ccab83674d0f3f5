"""Encoders for the handful of A32 and T32 instructions the rewriter emits itself.

Everything the rewriter writes that is not a copied original instruction comes from
here: branches, register moves of constants, pushes and pops, flag saves, IT. Each
function returns little-endian bytes. Offsets are computed from the address the
instruction will live at (``src``) and its target (``dst``); both are link-time
addresses in the same address space, so the result is position independent.

The tests check every encoder against capstone's decoder.
"""

from __future__ import annotations

import struct

from ...errors import RangeError  # raised by every encoder here; arch/code.py reroutes far branches

COND = {"eq": 0, "ne": 1, "hs": 2, "cs": 2, "lo": 3, "cc": 3, "mi": 4, "pl": 5, "vs": 6, "vc": 7,
        "hi": 8, "ls": 9, "ge": 10, "lt": 11, "gt": 12, "le": 13, "al": 14}
AL = 14
PC, LR, SP, IP = 15, 14, 13, 12


def invert_cond(cond: int) -> int:
    """The condition that holds exactly when ``cond`` does not (not defined for AL)."""
    return cond ^ 1


_PACK_H = struct.Struct("<H").pack
_PACK_HH = struct.Struct("<HH").pack
_PACK_HHHH = struct.Struct("<HHHH").pack
_PACK_HHHHH = struct.Struct("<HHHHH").pack
_PACK_I = struct.Struct("<I").pack


def _hw(*halfwords: int) -> bytes:
    # The rewriter encodes hundreds of thousands of instructions: precompiled packers for the usual sizes.
    if len(halfwords) == 2:
        return _PACK_HH(halfwords[0] & 0xFFFF, halfwords[1] & 0xFFFF)
    if len(halfwords) == 1:
        return _PACK_H(halfwords[0] & 0xFFFF)
    return struct.pack(f"<{len(halfwords)}H", *(h & 0xFFFF for h in halfwords))


def _w(word: int) -> bytes:
    return _PACK_I(word & 0xFFFFFFFF)


# ----------------------------------------------------------------------------- T32

def t32_b_narrow(src: int, dst: int) -> bytes:
    """B.N (T2, unconditional, -2048..+2046 bytes); 2 bytes."""
    off = dst - (src + 4)
    if off & 1 or not -2048 <= off < 2048:
        raise RangeError(f"B.N from {src:#x} cannot reach {dst:#x}")
    return _hw(0xE000 | ((off >> 1) & 0x7FF))


def t16_b(src: int, dst: int) -> bytes:
    """B.N (T2, unconditional, -2048..+2046 bytes); 2 bytes."""
    off = dst - (src + 4)
    if off & 1 or not -2048 <= off <= 2046:
        raise RangeError(f"B.N from {src:#x} cannot reach {dst:#x}")
    return struct.pack("<H", 0xE000 | (off >> 1) & 0x7FF)


def t32_b(src: int, dst: int, cond: int = AL) -> bytes:
    """B.W (T4, unconditional, +-16 MiB) or B<cond>.W (T3, +-1 MiB); 4 bytes."""
    off = dst - (src + 4)
    if off & 1:
        raise RangeError(f"thumb branch target {dst:#x} is not halfword aligned")
    if cond == AL:
        if not -(1 << 24) <= off < (1 << 24):
            raise RangeError(f"B.W from {src:#x} cannot reach {dst:#x}")
        return _t32_bl_common(off, 0x9000)  # same S:I1:I2:imm10:imm11 layout as BL
    if not -(1 << 20) <= off < (1 << 20):
        raise RangeError(f"B<cond>.W from {src:#x} cannot reach {dst:#x}")
    s = (off >> 20) & 1
    j2 = (off >> 19) & 1
    j1 = (off >> 18) & 1
    imm6 = (off >> 12) & 0x3F
    imm11 = (off >> 1) & 0x7FF
    return _PACK_HH(0xF000 | (s << 10) | (cond << 6) | imm6, 0x8000 | (j1 << 13) | (j2 << 11) | imm11)


def _t32_bl_common(off: int, second: int) -> bytes:
    if not -(1 << 24) <= off < (1 << 24):
        raise RangeError("BL/BLX out of range")
    s = (off >> 24) & 1
    i1 = (off >> 23) & 1
    i2 = (off >> 22) & 1
    j1 = (~(i1 ^ s)) & 1
    j2 = (~(i2 ^ s)) & 1
    imm10 = (off >> 12) & 0x3FF
    imm11 = (off >> 1) & 0x7FF
    return _PACK_HH(0xF000 | (s << 10) | imm10, second | (j1 << 13) | (j2 << 11) | imm11)


def t32_bl(src: int, dst: int) -> bytes:
    """BL to Thumb code at ``dst``."""
    return _t32_bl_common(dst - (src + 4), 0xD000)


def t32_blx(src: int, dst: int) -> bytes:
    """BLX (immediate) from Thumb to A32 code at ``dst`` (4-aligned)."""
    if dst & 3:
        raise RangeError(f"BLX target {dst:#x} not word aligned")
    off = dst - ((src + 4) & ~3)
    return _t32_bl_common(off, 0xC000)


def _t32_imm16(opcode: int, rd: int, imm16: int) -> bytes:
    """MOVW/MOVT layout: i:imm4 in the first halfword, imm3:Rd:imm8 in the second."""
    imm16 &= 0xFFFF
    i = (imm16 >> 11) & 1
    imm4 = imm16 >> 12
    imm3 = (imm16 >> 8) & 7
    imm8 = imm16 & 0xFF
    return _hw(opcode | (i << 10) | imm4, (imm3 << 12) | (rd << 8) | imm8)


def t32_movw(rd: int, imm16: int) -> bytes:
    """MOVW rd, #imm16 (T3); flags untouched."""
    return _t32_imm16(0xF240, rd, imm16)


def t32_movt(rd: int, imm16: int) -> bytes:
    """MOVT rd, #imm16 (T1); flags untouched."""
    return _t32_imm16(0xF2C0, rd, imm16)


def _t32_mov32_halfwords(rd: int, value: int) -> tuple[int, int, int, int]:
    """The MOVW and MOVT of ``value`` (the _t32_imm16 layout, written out: the rewriter loads
    a constant or an address at nearly every hook and relocated literal)."""
    lo, hi, rd = value & 0xFFFF, (value >> 16) & 0xFFFF, (rd << 8) & 0xFFFF
    return (0xF240 | ((lo >> 1) & 0x400) | (lo >> 12), ((lo << 4) & 0x7000) | rd | (lo & 0xFF),
            0xF2C0 | ((hi >> 1) & 0x400) | (hi >> 12), ((hi << 4) & 0x7000) | rd | (hi & 0xFF))


def t32_mov32(rd: int, value: int) -> bytes:
    """MOVW+MOVT: load a 32-bit constant without touching flags (8 bytes)."""
    return _PACK_HHHH(*_t32_mov32_halfwords(rd, value))


def t32_add_reg(rdn: int, rm: int) -> bytes:
    """ADD rdn, rm (16-bit T2 encoding; never sets flags). ``rm`` may be PC."""
    return _hw(0x4400 | ((rdn >> 3) << 7) | (rm << 3) | (rdn & 7))


def t32_pc_address(rd: int, src: int, target: int) -> bytes:
    """rd = runtime address of link-time ``target``, position independent (10 bytes).

    MOVW/MOVT load the distance, ``add rd, pc`` adds the current PC; the add sits at
    src+8 so it reads PC = src+12.
    """
    delta = (target - (src + 12)) & 0xFFFFFFFF
    # One pack for the three instructions: emitted at every hook and literal load.
    return _PACK_HHHHH(*_t32_mov32_halfwords(rd, delta), (0x4400 | ((rd >> 3) << 7) | (PC << 3) | (rd & 7)) & 0xFFFF)


def t32_nop() -> bytes:
    """16-bit NOP."""
    return _hw(0xBF00)


def t32_it(cond: int, count: int = 1) -> bytes:
    """IT block of ``count`` instructions, all with condition ``cond`` (then-only)."""
    if not 1 <= count <= 4:
        raise ValueError("IT covers 1-4 instructions")
    firstcond = cond
    c0 = cond & 1
    # mask: for each further 'then' instruction a bit equal to firstcond[0], then a 1.
    mask = 0
    for k in range(count - 1):
        mask |= c0 << (3 - k)
    mask |= 1 << (4 - count)
    return _hw(0xBF00 | (firstcond << 4) | mask)


def t32_push(regs: list[int]) -> bytes:
    """PUSH {regs}: 16-bit when possible, else STMDB sp!, {regs} (32-bit)."""
    mask = _mask(regs)
    if mask & ~0x40FF == 0:
        return _hw(0xB400 | ((mask >> 14) & 1) << 8 | (mask & 0xFF))
    return _hw(0xE92D, mask)


def t32_pop(regs: list[int]) -> bytes:
    """POP {regs}: 16-bit when possible, else LDMIA sp!, {regs} (32-bit)."""
    mask = _mask(regs)
    if mask & ~0x80FF == 0:
        return _hw(0xBC00 | ((mask >> 15) & 1) << 8 | (mask & 0xFF))
    return _hw(0xE8BD, mask)


def _mask(regs: list[int]) -> int:
    mask = 0
    for r in regs:
        mask |= 1 << r
    return mask


def t32_mrs_apsr(rd: int) -> bytes:
    """MRS rd, APSR."""
    return _hw(0xF3EF, 0x8000 | (rd << 8))


def t32_msr_apsr(rn: int, ge: bool = True) -> bytes:
    """MSR APSR_nzcvqg, rn: restores condition flags, Q and GE.

    ``ge=False``: MSR APSR_nzcvq, for cores without GE bits (Cortex-M3), where
    writing them is UNPREDICTABLE.
    """
    return _hw(0xF380 | rn, 0x8C00 if ge else 0x8800)


def t32_mrs_primask(rd: int) -> bytes:
    """MRS rd, PRIMASK (M profile): 1 when interrupts are masked."""
    return _hw(0xF3EF, 0x8000 | (rd << 8) | 0x10)


def t32_msr_primask(rn: int) -> bytes:
    """MSR PRIMASK, rn (M profile): bit 0 of rn."""
    return _hw(0xF380 | rn, 0x8810)


def t32_cpsid_i() -> bytes:
    """CPSID i (M profile: PRIMASK = 1)."""
    return _hw(0xB672)


def t32_ldr_imm(rt: int, rn: int, imm: int) -> bytes:
    """LDR.W rt, [rn, #imm12] (T3, imm 0..4095)."""
    if not 0 <= imm < 4096:
        raise RangeError("ldr immediate out of range")
    return _hw(0xF8D0 | rn, (rt << 12) | imm)


def t32_str_imm(rt: int, rn: int, imm: int) -> bytes:
    """STR.W rt, [rn, #imm12] (T3, imm 0..4095)."""
    if not 0 <= imm < 4096:
        raise RangeError("str immediate out of range")
    return _hw(0xF8C0 | rn, (rt << 12) | imm)




def _t32_word_transfer(load: bool, rt: int, rn: int, imm: int) -> bytes:
    """LDR/STR rt, [rn, #imm]: the 16-bit T1 form when it reaches (low registers, imm a
    multiple of 4 up to 124), else the 32-bit T3 form."""
    if rt < 8 and rn < 8 and 0 <= imm <= 124 and not imm & 3:
        return _PACK_H((0x6800 if load else 0x6000) | (imm >> 2) << 6 | rn << 3 | rt)
    return t32_ldr_imm(rt, rn, imm) if load else t32_str_imm(rt, rn, imm)


def t32_ldr_word(rt: int, rn: int, imm: int) -> bytes:
    """LDR rt, [rn, #imm] in its shortest encoding (imm 0..4095)."""
    return _t32_word_transfer(True, rt, rn, imm)


def t32_str_word(rt: int, rn: int, imm: int) -> bytes:
    """STR rt, [rn, #imm] in its shortest encoding (imm 0..4095)."""
    return _t32_word_transfer(False, rt, rn, imm)


def t32_ldrh_reg_lsl(rt: int, rn: int, rm: int, shift: int) -> bytes:
    """LDRH.W rt, [rn, rm, LSL #shift]."""
    return _hw(0xF830 | rn, (rt << 12) | (shift << 4) | rm)


def t32_tbh(rm: int) -> bytes:
    """TBH [pc, rm, LSL #1]: branch forward by twice the halfword at PC + 4 + 2 * rm."""
    return _hw(0xE8DF, 0xF010 | rm)


def t32_ldr_reg_lsl(rt: int, rn: int, rm: int, shift: int) -> bytes:
    """LDR.W rt, [rn, rm, LSL #shift] (shift 0-3)."""
    return _hw(0xF850 | rn, (rt << 12) | (shift << 4) | rm)


def t32_str_reg_lsl(rt: int, rn: int, rm: int, shift: int) -> bytes:
    """STR.W rt, [rn, rm, LSL #shift] (shift 0-3)."""
    return _hw(0xF840 | rn, (rt << 12) | (shift << 4) | rm)


def t32_ldrb_reg(rt: int, rn: int, rm: int) -> bytes:
    """LDRB.W rt, [rn, rm]."""
    return _hw(0xF810 | rn, (rt << 12) | rm)


def _t32_modimm(value: int) -> int | None:
    """Encode ``value`` as a T32 modified immediate (i:imm3:imm8), or None."""
    value &= 0xFFFFFFFF
    if value < 256:
        return value
    b = value & 0xFF
    if value == (b << 16 | b) and b:
        return 0x100 | b
    b = (value >> 8) & 0xFF
    if value == (b << 24 | b << 8) and b:
        return 0x200 | b
    b = value & 0xFF
    if value == (b << 24 | b << 16 | b << 8 | b):
        return 0x300 | b
    for rot in range(8, 32):
        unrot = ((value << rot) | (value >> (32 - rot))) & 0xFFFFFFFF
        if unrot < 256 and unrot & 0x80:
            return (rot << 7) | (unrot & 0x7F)
    return None


def t32_add_imm(rd: int, rn: int, imm: int) -> bytes:
    """rd = rn + imm without touching flags (ADDW/SUBW for |imm| < 4096, else ADD.W modimm)."""
    if 0 <= imm < 4096:
        return _hw(0xF200 | ((imm >> 11) & 1) << 10 | rn, ((imm >> 8) & 7) << 12 | (rd << 8) | (imm & 0xFF))
    if -4096 < imm < 0:
        n = -imm
        return _hw(0xF2A0 | ((n >> 11) & 1) << 10 | rn, ((n >> 8) & 7) << 12 | (rd << 8) | (n & 0xFF))
    return _t32_modimm_op(0xF100, rd, rn, imm)


def t32_add_constant(rd: int, value: int) -> bytes:
    """rd = rd + value (mod 2^32) with no scratch register and the flags untouched: ADDW or
    SUBW for the low 12 bits, ADD.W or SUB.W with modified immediates for the rest (one
    for an address below 1 MiB, at most three)."""
    value &= 0xFFFFFFFF
    sub = value > 0x80000000
    n = (-value) & 0xFFFFFFFF if sub else value
    low, high = n & 0xFFF, n & ~0xFFF
    out = b""
    while high:
        top = high.bit_length() - 1
        chunk = high & (0xFF << (top - 7))
        out += _t32_modimm_op(0xF1A0 if sub else 0xF100, rd, rd, chunk)
        high -= chunk
    if low:
        out += t32_add_imm(rd, rd, -low if sub else low)
    return out


def _t32_modimm_op(opcode: int, rd: int, rn: int, imm: int) -> bytes:
    """A T32 data-processing instruction with a modified immediate (``opcode``: its first halfword, S=0)."""
    enc = _t32_modimm(imm)
    if enc is None:
        raise RangeError(f"immediate {imm:#x} not encodable")
    i, imm3, imm8 = enc >> 11, (enc >> 8) & 7, enc & 0xFF
    return _hw(opcode | (i << 10) | rn, (imm3 << 12) | (rd << 8) | imm8)


def t32_cmp_imm(rn: int, imm: int) -> bytes:
    """CMP.W rn, #imm (a modified immediate; any rn but PC)."""
    return _t32_modimm_op(0xF1B0, 0xF, rn, imm)


def t32_add_reg_shift(rd: int, rn: int, rm: int, shift_type: int, amount: int, sub: bool = False) -> bytes:
    """ADD.W/SUB.W rd, rn, rm, <shift> #amount (S=0: flags untouched).

    shift_type: 0 LSL, 1 LSR, 2 ASR, 3 ROR.
    """
    op = 0xEBA0 if sub else 0xEB00
    imm3 = (amount >> 2) & 7
    imm2 = amount & 3
    return _hw(op | rn, (imm3 << 12) | (rd << 8) | (imm2 << 6) | (shift_type << 4) | rm)


def t32_mov_reg(rd: int, rm: int) -> bytes:
    """MOV rd, rm (16-bit T1 high-register form; never sets flags)."""
    return _hw(0x4600 | ((rd >> 3) << 7) | (rm << 3) | (rd & 7))


def t32_bx(rm: int) -> bytes:
    """BX rm."""
    return _hw(0x4700 | (rm << 3))




def t32_bic_imm(rd: int, rn: int, imm: int) -> bytes:
    """BIC rd, rn, #imm (S=0)."""
    return _t32_modimm_op(0xF020, rd, rn, imm)


def t32_ldrd(rt: int, rt2: int, rn: int, imm: int = 0) -> bytes:
    """LDRD rt, rt2, [rn, #imm] (imm multiple of 4, 0..1020)."""
    return _hw(0xE9D0 | rn, (rt << 12) | (rt2 << 8) | (imm >> 2))


def t32_stmia_wb(rn: int, regs: list[int]) -> bytes:
    """STMIA rn!, {regs} (T2; rn not in regs, no SP/PC in the list)."""
    mask = 0
    for reg in regs:
        mask |= 1 << reg
    return _hw(0xE8A0 | rn, mask)


def t32_stmdb(rn: int, regs: list[int]) -> bytes:
    """STMDB rn, {regs} without writeback: the registers go just below rn (T1; at least two
    registers, rn not in regs, no SP/PC)."""
    if len(regs) < 2:
        raise RangeError("stmdb (T1) needs at least two registers")
    return _hw(0xE900 | rn, _mask(regs))


def t32_str_neg(rt: int, rn: int, imm: int) -> bytes:
    """STR rt, [rn, #-imm] (T4, imm 0..255)."""
    return _t32_word_neg(0xF840, rt, rn, imm)


def t32_ldr_neg(rt: int, rn: int, imm: int) -> bytes:
    """LDR rt, [rn, #-imm] (T4, imm 0..255)."""
    return _t32_word_neg(0xF850, rt, rn, imm)


def _t32_word_neg(opcode: int, rt: int, rn: int, imm: int) -> bytes:
    """LDR/STR (T4) with a negative offset: P=1, U=0, W=0."""
    if not 0 <= imm < 256:
        raise RangeError("negative immediate out of range")
    return _hw(opcode | rn, (rt << 12) | 0xC00 | imm)


def _exclusive_offset(offset: int) -> int:
    if offset % 4 or not 0 <= offset <= 1020:
        raise RangeError(f"exclusive offset {offset}")
    return offset >> 2


def t32_ldrex(rt: int, rn: int, offset: int = 0) -> bytes:
    """LDREX rt, [rn, #offset] (T1, offset a multiple of 4 up to 1020)."""
    return _hw(0xE850 | rn, (rt << 12) | 0xF00 | _exclusive_offset(offset))


def t32_strex(rd: int, rt: int, rn: int, offset: int = 0) -> bytes:
    """STREX rd, rt, [rn, #offset] (T1, offset a multiple of 4 up to 1020): rd = 0 when
    stored; rd differs from rt and rn."""
    if rd in (rt, rn):
        raise RangeError(f"strex r{rd}, r{rt}, [r{rn}]: the status register must differ from the others")
    return _hw(0xE840 | rn, (rt << 12) | (rd << 8) | _exclusive_offset(offset))


def t32_ldrexd(rt: int, rt2: int, rn: int) -> bytes:
    """LDREXD rt, rt2, [rn] (T1): the doubleword at rn (8-aligned), rt its low word."""
    return _hw(0xE8D0 | rn, (rt << 12) | (rt2 << 8) | 0x7F)


def t32_strexd(rd: int, rt: int, rt2: int, rn: int) -> bytes:
    """STREXD rd, rt, rt2, [rn] (T1): rd = 0 when stored; rd differs from the others."""
    if rd in (rt, rt2, rn):
        raise RangeError(f"strexd r{rd}, r{rt}, r{rt2}, [r{rn}]: the status register must differ from the others")
    return _hw(0xE8C0 | rn, (rt << 12) | (rt2 << 8) | 0x70 | rd)


def t32_sub_reg(rd: int, rn: int, rm: int) -> bytes:
    """SUB.W rd, rn, rm without setting the flags."""
    return _hw(0xEBA0 | rn, (rd << 8) | rm)


T32_AND, T32_BIC, T32_ORR, T32_EOR = 0, 1, 2, 4  # data-processing opcodes (bits 24:21)


def t32_logic_reg(op: int, rd: int, rn: int, rm: int, shift_type: int = 0, amount: int = 0) -> bytes:
    """AND/BIC/ORR/EOR.W rd, rn, rm, <shift> #amount (S=0; shift_type 0 LSL, 1 LSR, 2 ASR, 3 ROR)."""
    return _hw(0xEA00 | (op << 5) | rn,
               ((amount >> 2) << 12) | (rd << 8) | ((amount & 3) << 6) | (shift_type << 4) | rm)


def t32_logic_imm(op: int, rd: int, rn: int, imm: int) -> bytes:
    """AND/BIC/ORR/EOR rd, rn, #imm (S=0; imm a modified immediate)."""
    return _t32_modimm_op(0xF000 | (op << 5), rd, rn, imm)


def _t32_shift_imm(shift_type: int, rd: int, rm: int, amount: int, setflags: bool) -> bytes:
    """MOV{S}.W rd, rm, <shift> #amount: the immediate shifts (0 LSL, 1 LSR, 2 ASR)."""
    return _hw(0xEA4F | (setflags << 4),
               ((amount >> 2) << 12) | (rd << 8) | ((amount & 3) << 6) | (shift_type << 4) | rm)


def t32_lsl_imm(rd: int, rm: int, amount: int) -> bytes:
    """LSL.W rd, rm, #amount (1-31) without setting the flags."""
    return _t32_shift_imm(0, rd, rm, amount, False)


def t32_bic_reg(rd: int, rn: int, rm: int) -> bytes:
    """BIC.W rd, rn, rm without setting the flags."""
    return t32_logic_reg(T32_BIC, rd, rn, rm)


def t32_lsr_imm(rd: int, rm: int, amount: int, setflags: bool = False) -> bytes:
    """LSR.W rd, rm, #amount (1-31), without setting the flags unless ``setflags`` (LSRS.W)."""
    return _t32_shift_imm(1, rd, rm, amount, setflags)


def t32_cbz(rn: int, offset: int, nonzero: bool = False) -> bytes:
    """CBZ (CBNZ) rn, PC + offset (the PC reads as the CBZ's address + 4); offset even, 0..126; rn r0-r7."""
    if offset & 1 or not 0 <= offset <= 126 or rn > 7:
        raise RangeError(f"cbz r{rn}, {offset}")
    return _PACK_H(0xB100 | (nonzero << 11) | ((offset >> 6) << 9) | (((offset >> 1) & 31) << 3) | rn)


def t32_orr_imm(rd: int, rn: int, imm: int) -> bytes:
    """ORR.W rd, rn, #imm (S=0; imm a modified immediate)."""
    return _t32_modimm_op(0xF040, rd, rn, imm)


def t32_ubfx(rd: int, rn: int, lsb: int, width: int) -> bytes:
    """UBFX rd, rn, #lsb, #width (flags untouched)."""
    return _hw(0xF3C0 | rn, ((lsb >> 2) << 12) | (rd << 8) | ((lsb & 3) << 6) | (width - 1))


def t32_strd(rt: int, rt2: int, rn: int, imm: int = 0) -> bytes:
    """STRD rt, rt2, [rn, #imm] (imm multiple of 4, 0..1020)."""
    return _hw(0xE9C0 | rn, (rt << 12) | (rt2 << 8) | (imm >> 2))






def t32_ldr_pc_literal_pair(src: int) -> tuple[bytes, int]:
    """``ldr.w pc, [pc, #k]`` followed by its literal: returns (instruction+padding, literal offset).

    The literal is the 4 bytes at src + offset; the whole patch is offset + 4 bytes long.
    """
    base = (src + 4) & ~3
    lit = base if base >= src + 4 else base + 4
    k = lit - base
    ins = _hw(0xF8DF, (PC << 12) | k)
    pad = lit - (src + 4)
    return ins + t32_nop()[:pad] if pad else ins, lit - src


# ----------------------------------------------------------------------------- A32

def a32_b(src: int, dst: int, cond: int = AL, link: bool = False) -> bytes:
    """B<cond> / BL<cond> to A32 code."""
    off = dst - (src + 8)
    if off & 3 or not -(1 << 25) <= off < (1 << 25):
        raise RangeError(f"A32 branch from {src:#x} cannot reach {dst:#x}")
    return _w((cond << 28) | ((0xB if link else 0xA) << 24) | ((off >> 2) & 0xFFFFFF))


def a32_blx_imm(src: int, dst: int) -> bytes:
    """BLX (immediate) from A32 to Thumb code at ``dst`` (halfword aligned)."""
    off = dst - (src + 8)
    if not -(1 << 25) <= off < (1 << 25):
        raise RangeError("A32 BLX out of range")
    h = (off >> 1) & 1
    return _w(0xFA000000 | (h << 24) | ((off >> 2) & 0xFFFFFF))


def a32_movw(rd: int, imm16: int, cond: int = AL) -> bytes:
    """MOVW rd, #imm16."""
    imm16 &= 0xFFFF
    return _w((cond << 28) | 0x03000000 | ((imm16 >> 12) << 16) | (rd << 12) | (imm16 & 0xFFF))


def a32_movt(rd: int, imm16: int, cond: int = AL) -> bytes:
    """MOVT rd, #imm16."""
    imm16 &= 0xFFFF
    return _w((cond << 28) | 0x03400000 | ((imm16 >> 12) << 16) | (rd << 12) | (imm16 & 0xFFF))


def a32_mov32(rd: int, value: int) -> bytes:
    """MOVW+MOVT: 32-bit constant, flags untouched."""
    return a32_movw(rd, value & 0xFFFF) + a32_movt(rd, (value >> 16) & 0xFFFF)


def a32_add_reg(rd: int, rn: int, rm: int, cond: int = AL) -> bytes:
    """ADD rd, rn, rm (S=0). ``rn``/``rm`` may be PC (reads as address + 8)."""
    return _w((cond << 28) | 0x00800000 | (rn << 16) | (rd << 12) | rm)


def a32_pc_address(rd: int, src: int, target: int) -> bytes:
    """rd = runtime address of link-time ``target`` (12 bytes, position independent)."""
    delta = (target - (src + 16)) & 0xFFFFFFFF
    return a32_mov32(rd, delta) + a32_add_reg(rd, rd, PC)


def a32_modimm(value: int) -> int | None:
    """Encode ``value`` as an A32 modified immediate (rotate:imm8), or None."""
    value &= 0xFFFFFFFF
    for rot in range(16):
        unrot = ((value << (2 * rot)) | (value >> (32 - 2 * rot))) & 0xFFFFFFFF if rot else value
        if unrot < 256:
            return (rot << 8) | unrot
    return None


def a32_orr_imm(rd: int, rn: int, imm: int) -> bytes:
    """ORR rd, rn, #imm (S=0)."""
    enc = a32_modimm(imm)
    if enc is None:
        raise RangeError(f"immediate {imm:#x} not encodable")
    return _w(0xE3800000 | (rn << 16) | (rd << 12) | enc)


def a32_add_imm(rd: int, rn: int, imm: int) -> bytes:
    """ADD rd, rn, #imm (a modified immediate)."""
    field = a32_modimm(imm)
    assert field is not None, f"{imm:#x} is not an A32 modified immediate"
    return _w(0xE2800000 | (rn << 16) | (rd << 12) | field)


def a32_cmn_imm(rn: int, imm: int) -> bytes:
    """CMN rn, #imm (a modified immediate)."""
    field = a32_modimm(imm)
    assert field is not None, f"{imm:#x} is not an A32 modified immediate"
    return _w(0xE3700000 | (rn << 16) | field)


def a32_ubfx(rd: int, rn: int, lsb: int, width: int) -> bytes:
    """UBFX rd, rn, #lsb, #width."""
    return _w(0xE7E00050 | ((width - 1) << 16) | (rd << 12) | (lsb << 7) | rn)


def a32_sub_reg(rd: int, rn: int, rm: int, flags: bool = False) -> bytes:
    """SUB rd, rn, rm; SUBS with ``flags``."""
    return _w(0xE0400000 | (flags << 20) | (rn << 16) | (rd << 12) | rm)


def a32_lsr_imm(rd: int, rm: int, amount: int) -> bytes:
    """LSR rd, rm, #amount (1-31; S=0)."""
    return _w(0xE1A00020 | (rd << 12) | (amount << 7) | rm)


def a32_add_reg_shift(rd: int, rn: int, rm: int, shift_type: int, amount: int, sub: bool = False) -> bytes:
    """ADD/SUB rd, rn, rm, <shift> #amount (S=0); shift_type 0 LSL, 1 LSR, 2 ASR, 3 ROR."""
    op = 0x00400000 if sub else 0x00800000
    return _w(0xE0000000 | op | (rn << 16) | (rd << 12) | (amount << 7) | (shift_type << 5) | rm)


_A32_LOGIC = {T32_AND: 0x0, T32_EOR: 0x1, T32_ORR: 0xC, T32_BIC: 0xE}  # T32 opcode -> A32 opcode


def a32_logic_reg(op: int, rd: int, rn: int, rm: int, shift_type: int = 0, amount: int = 0) -> bytes:
    """AND/BIC/ORR/EOR rd, rn, rm, <shift> #amount (S=0); ``op`` is a T32_* opcode."""
    return _w(0xE0000000 | (_A32_LOGIC[op] << 21) | (rn << 16) | (rd << 12) | (amount << 7) | (shift_type << 5) | rm)


def a32_bic_imm(rd: int, rn: int, imm8: int) -> bytes:
    """BIC rd, rn, #imm8 (S=0; 0-255, unrotated)."""
    assert 0 <= imm8 <= 0xFF
    return _w(0xE3C00000 | (rn << 16) | (rd << 12) | imm8)


def a32_clz(rd: int, rm: int) -> bytes:
    """CLZ rd, rm."""
    return _w(0xE16F0F10 | (rd << 12) | rm)


def a32_push(regs: list[int]) -> bytes:
    """STMDB sp!, {regs}."""
    return _w(0xE92D0000 | _mask(regs))


def a32_pop(regs: list[int]) -> bytes:
    """LDMIA sp!, {regs}."""
    return _w(0xE8BD0000 | _mask(regs))


def a32_mrs_apsr(rd: int) -> bytes:
    """MRS rd, APSR."""
    return _w(0xE10F0000 | (rd << 12))


def a32_msr_apsr(rn: int) -> bytes:
    """MSR APSR_nzcvqg, rn."""
    return _w(0xE12CF000 | rn)


def a32_msr_flags_imm(value: int) -> bytes:
    """MSR APSR_nzcvq, #value (a modified immediate)."""
    imm = a32_modimm(value)
    assert imm is not None, value
    return _w(0xE328F000 | imm)


def a32_ldr_imm(rt: int, rn: int, imm: int) -> bytes:
    """LDR rt, [rn, #+-imm12]."""
    u = 1 if imm >= 0 else 0
    return _w(0xE5100000 | (u << 23) | (rn << 16) | (rt << 12) | abs(imm))


def a32_str_imm(rt: int, rn: int, imm: int) -> bytes:
    """STR rt, [rn, #+-imm12]."""
    u = 1 if imm >= 0 else 0
    return _w(0xE5000000 | (u << 23) | (rn << 16) | (rt << 12) | abs(imm))


def a32_bx(rm: int, cond: int = AL) -> bytes:
    """BX rm."""
    return _w((cond << 28) | 0x012FFF10 | rm)




def a32_ldr_pc_literal() -> bytes:
    """``ldr pc, [pc, #-4]``: jump to the absolute address in the next word."""
    return _w(0xE51FF004)


# ----------------------------------------------------------------------------- VFP transfers

def _vmov_fields(d: int) -> tuple[int, int]:
    return (d >> 4) & 1, d & 0xF


def t32_vmov_to_d(d: int, rt: int, rt2: int) -> bytes:
    """VMOV Dd, rt, rt2 (rt = low word)."""
    m, vm = _vmov_fields(d)
    return _hw(0xEC40 | rt2, (rt << 12) | 0x0B10 | (m << 5) | vm)


def t32_vmov_from_d(rt: int, rt2: int, d: int) -> bytes:
    """VMOV rt, rt2, Dd (rt gets the low word; rt != rt2)."""
    m, vm = _vmov_fields(d)
    return _hw(0xEC50 | rt2, (rt << 12) | 0x0B10 | (m << 5) | vm)


def _t32_word(word: int) -> bytes:
    """A 32-bit T32 encoding as its two halfwords, the high one first."""
    return _hw(word >> 16, word & 0xFFFF)


def _vmov_lane(to_lane: bool, d: int, rt: int, lane: int) -> int:
    """VMOV.32 Dd[lane], rt (``to_lane``) or rt, Dd[lane]: the word both instruction sets share."""
    n, vn = _vmov_fields(d)
    return (0xEE000B10 if to_lane else 0xEE100B10) | (lane << 21) | (vn << 16) | (rt << 12) | (n << 7)


def t32_vmov_to_lane(d: int, rt: int, lane: int = 0) -> bytes:
    """VMOV.32 Dd[lane], rt (one core register into one word of any of d0-d31)."""
    return _t32_word(_vmov_lane(True, d, rt, lane))


def t32_vmov_from_lane(rt: int, d: int, lane: int = 0) -> bytes:
    """VMOV.32 rt, Dd[lane]."""
    return _t32_word(_vmov_lane(False, d, rt, lane))


def a32_vmov_to_lane(d: int, rt: int, lane: int = 0) -> bytes:
    """VMOV.32 Dd[lane], rt (A32)."""
    return _w(_vmov_lane(True, d, rt, lane))


def a32_vmov_from_lane(rt: int, d: int, lane: int = 0) -> bytes:
    """VMOV.32 rt, Dd[lane] (A32)."""
    return _w(_vmov_lane(False, d, rt, lane))


def t32_vldr_d(d: int, rn: int, offset: int = 0, store: bool = False) -> bytes:
    """VLDR Dd, [rn, #offset] (VSTR with ``store``); offset a multiple of 4, |offset| <= 1020."""
    assert offset % 4 == 0 and -1020 <= offset <= 1020, offset
    dbit, vd = _vmov_fields(d)
    up = int(offset >= 0)
    return _t32_word((0xED000B00 if store else 0xED100B00) | (up << 23) | (dbit << 22) | (rn << 16) | (vd << 12)
                     | (abs(offset) // 4))


def t32_vmov_all_ones(d: int) -> bytes:
    """VMOV.I8 Dd, #0xff (Advanced SIMD): every bit set, -1 as a 64-bit integer."""
    dbit, vd = _vmov_fields(d)
    # i:imm3:imm4 = 0xff, cmode 1110 (8-bit elements), Q = 0, op = 0.
    return _t32_word(0xEF800010 | (1 << 28) | (dbit << 22) | (7 << 16) | (vd << 12) | (0xE << 8) | 0xF)


def t32_vsub_i64(d: int, n: int, m: int) -> bytes:
    """VSUB.I64 Dd, Dn, Dm (Advanced SIMD, one 64-bit lane): no flags."""
    dbit, vd = _vmov_fields(d)
    nbit, vn = _vmov_fields(n)
    mbit, vm = _vmov_fields(m)
    return _t32_word(0xFF000800 | (dbit << 22) | (3 << 20) | (vn << 16) | (vd << 12) | (nbit << 7) | (mbit << 5) | vm)


def a32_vmov_to_d(d: int, rt: int, rt2: int) -> bytes:
    """VMOV Dd, rt, rt2."""
    m, vm = _vmov_fields(d)
    return _w(0xEC400B10 | (rt2 << 16) | (rt << 12) | (m << 5) | vm)


def a32_vmov_from_d(rt: int, rt2: int, d: int) -> bytes:
    """VMOV rt, rt2, Dd."""
    m, vm = _vmov_fields(d)
    return _w(0xEC500B10 | (rt2 << 16) | (rt << 12) | (m << 5) | vm)


# ----------------------------------------------------------------------------- Advanced SIMD on one D register

def t32_vmov_imm(d: int, imm8: int, cmode: int, op: int = 0) -> bytes:
    """VMOV Dd, #imm (Advanced SIMD modified immediate): ``cmode``/``op`` choose how
    ``imm8`` spreads over the register (cmode 0, 2, 4, 6: 32-bit lanes of imm8 << 0, 8, 16,
    24; cmode 14 with op 1: 64-bit, one byte of ones per set bit)."""
    dbit, vd = _vmov_fields(d)
    return _t32_word(0xEF800010 | ((imm8 >> 7) << 28) | (dbit << 22) | (((imm8 >> 4) & 7) << 16) | (vd << 12)
                     | (cmode << 8) | (op << 5) | (imm8 & 0xF))


def t32_vmov_i64_zero(d: int) -> bytes:
    """VMOV.I64 Dd, #0."""
    return t32_vmov_imm(d, 0, 0xE, 1)


def t32_vshift_right_u64(d: int, m: int, shift: int, accumulate: bool = False, signed: bool = False) -> bytes:
    """VSHR.U64 Dd, Dm, #shift (VSRA with ``accumulate``: Dd += Dm >> shift; .S64 with ``signed``), 1..64."""
    assert 1 <= shift <= 64, shift
    dbit, vd = _vmov_fields(d)
    mbit, vm = _vmov_fields(m)
    return _t32_word(0xEF800090 | (int(not signed) << 28) | (dbit << 22) | ((64 - shift) << 16) | (vd << 12)
                     | (int(accumulate) << 8) | (mbit << 5) | vm)


def t32_vadd_i64(d: int, n: int, m: int) -> bytes:
    """VADD.I64 Dd, Dn, Dm (Advanced SIMD, one 64-bit lane): no flags."""
    dbit, vd = _vmov_fields(d)
    nbit, vn = _vmov_fields(n)
    mbit, vm = _vmov_fields(m)
    return _t32_word(0xEF000800 | (dbit << 22) | (3 << 20) | (vn << 16) | (vd << 12) | (nbit << 7) | (mbit << 5) | vm)

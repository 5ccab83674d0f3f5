"""Decode A32/T32 code with capstone into IR Instructions with their facts.

Capstone tracks IT state only within one ``disasm`` call, so code ranges are decoded
in one go. The facts (memory accesses, branch kind, PC use) are derived from
capstone's instruction ids and operands; the emitter relies on them, so they are
conservative: anything writing PC that is not a recognised direct branch, call or
return is ``is_indirect``.
"""

from __future__ import annotations

import dataclasses
import functools

import capstone
from capstone import arm as csarm

from ...ir.model import Access, Instruction
from .operands import BRANCH, REG, base_name, literal_operands, multi_accesses, quick_facts, with_condition

REG_NUMBERS = {f"r{i}": i for i in range(13)}
REG_NUMBERS.update({"sb": 9, "sl": 10, "fp": 11, "ip": 12, "sp": 13, "lr": 14, "pc": 15})
PC, LR, SP = 15, 14, 13

_LOAD_SIZES = {
    "ldr": 4, "ldrb": 1, "ldrsb": 1, "ldrh": 2, "ldrsh": 2, "ldrt": 4, "ldrbt": 1, "ldrht": 2,
    "ldrsbt": 1, "ldrsht": 2, "ldrex": 4, "ldrexb": 1, "ldrexh": 2, "lda": 4, "ldab": 1,
    "ldah": 2, "ldaex": 4, "ldaexb": 1, "ldaexh": 2,
}
_STORE_SIZES = {
    "str": 4, "strb": 1, "strh": 2, "strt": 4, "strbt": 1, "strht": 2, "strex": 4, "strexb": 1,
    "strexh": 2, "stl": 4, "stlb": 1, "stlh": 2, "stlex": 4, "stlexb": 1, "stlexh": 2,
}
_PAIR = {"ldrd": False, "strd": True, "ldrexd": False, "strexd": True, "ldaexd": False, "stlexd": True}
# name -> (is_store, first word offset factor: 'ia', 'ib', 'da', 'db')
_MULTI = {
    "ldm": (False, "ia"), "ldmia": (False, "ia"), "ldmib": (False, "ib"), "ldmda": (False, "da"),
    "ldmdb": (False, "db"), "pop": (False, "ia"), "stm": (True, "ia"), "stmia": (True, "ia"),
    "stmib": (True, "ib"), "stmda": (True, "da"), "stmdb": (True, "db"), "push": (True, "db"),
}
_VMULTI = {
    "vldmia": (False, "ia"), "vldmdb": (False, "db"), "vpop": (False, "ia"),
    "vstmia": (True, "ia"), "vstmdb": (True, "db"), "vpush": (True, "db"),
}
_SHIFT_TYPES = {csarm.ARM_SFT_LSL: 0, csarm.ARM_SFT_LSR: 1, csarm.ARM_SFT_ASR: 2, csarm.ARM_SFT_ROR: 3}


def make_disassembler(thumb: bool, v8: bool = False) -> capstone.Cs:
    """A capstone handle with details on, in Thumb or ARM mode (``v8``: ARMv8's).

    decode_range reads ARMv7 first and ARMv8 where ARMv7 reads nothing. Without
    CS_MODE_V8 capstone knows ARMv7 alone, and an ARMv8 instruction (CRC32, the crypto
    extension's AESE/SHA256H, VSEL, VRINT, LDA/STL, ...) decodes as nothing: the descent
    stopped there (decision 0052: Debian's 7zz, whose CRC-32 loop uses CRC32W). But with
    it capstone knows ARMv8 alone, which dropped the coprocessor loads and stores of
    p0-p13: glibc's ``__sigsetjmp`` and ``__longjmp`` save iWMMXt registers with STCL/LDCL
    p1 (on a path the CPU's features choose), and their descent stopped there instead.
    """
    mode = capstone.CS_MODE_THUMB if thumb else capstone.CS_MODE_ARM
    md = capstone.Cs(capstone.CS_ARCH_ARM, mode | (capstone.CS_MODE_V8 if v8 else 0))
    md.detail = True
    return md


_ARMV8: dict[int, capstone.Cs] = {}  # an ARMv7 handle's mode -> the ARMv8 handle of that mode
_LITE: dict[int, capstone.Cs] = {}  # a mode -> its handle without details (_lite)


def _lite(md: capstone.Cs) -> capstone.Cs:
    """A handle of ``md``'s mode with details off, for the pass that reads only the text
    (``disasm_lite``): with them on, capstone works out every instruction's operands for
    nothing (about a third of its own time). The text is the same either way."""
    lite = _LITE.get(md.mode)
    if lite is None:
        lite = _LITE[md.mode] = capstone.Cs(capstone.CS_ARCH_ARM, md.mode)
        lite.detail = False
    return lite


def encoded_size(first: bytes, thumb: bool) -> int:
    """Bytes of the instruction whose first halfword (little-endian) is ``first``, known from
    the encoding alone, decodable or not: A32 4; T32 4 where the top five bits are 0b11101,
    0b11110 or 0b11111, else 2."""
    return 4 if not thumb or int.from_bytes(first[:2], "little") >> 11 >= 0b11101 else 2


def _armv8_of(md: capstone.Cs) -> capstone.Cs:
    """The ARMv8 handle beside the ARMv7 handle ``md``."""
    other = _ARMV8.get(md.mode)
    if other is None:
        other = _ARMV8[md.mode] = make_disassembler(bool(md.mode & capstone.CS_MODE_THUMB), v8=True)
    return other


_MCLASS: list[capstone.Cs] = []  # the Thumb handle of ARMv7-M's system registers, made once


def _other_readings(md: capstone.Cs, m_profile: bool) -> list[capstone.Cs]:
    """The handles that read what the ARMv7 handle ``md`` does not, in the order tried:
    ARMv8's, then (Thumb code of an M-profile image) ARMv7-M's, whose MRS and MSR name the
    M profile's own registers
    (PSP, MSP, PRIMASK, BASEPRI, FAULTMASK, CONTROL): capstone's A-profile Thumb reads
    nothing there, and firmware reads and writes them in every RTOS's context switch and
    critical section (an undecodable ``mrs r0, psp`` dropped a PendSV handler whole:
    decision 0085)."""
    if not (m_profile and md.mode & capstone.CS_MODE_THUMB):
        return [_armv8_of(md)]
    if not _MCLASS:
        handle = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB | capstone.CS_MODE_MCLASS)
        handle.detail = True
        _MCLASS.append(handle)
    return [_armv8_of(md), _MCLASS[0]]


def _reg(md: capstone.Cs, reg_id: int) -> int:
    return REG_NUMBERS.get(md.reg_name(reg_id), -1)


def _vreg_size(name: str) -> int:
    return {"s": 4, "d": 8, "q": 16}.get(name[:1], 8)


def _it_conditions(hw: int) -> list[int]:
    """Conditions of the instructions an IT instruction (halfword ``hw``) covers."""
    firstcond, mask = (hw >> 4) & 0xF, hw & 0xF
    count = 4 - ((mask & -mask).bit_length() - 1)
    conds = [firstcond]
    for k in range(1, count):
        bit = (mask >> (4 - k)) & 1
        conds.append((firstcond & 0xE) | bit)
    return conds


_BRANCHES = ("b", "bl", "blx", "bx", "cbz", "cbnz", "tbb", "tbh")
_COND_SUFFIXES = ("", "eq", "ne", "hs", "cs", "lo", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt",
                  "le", "al")
_BRANCH_MNEMONICS = {b + c + w for b in _BRANCHES for c in _COND_SUFFIXES for w in ("", ".w", ".n")}


def _needs_detail(mnemonic: str, op_str: str) -> bool:
    """Whether capstone's operand details are needed for this instruction's facts."""
    return ("[" in op_str or "{" in op_str or "pc" in op_str or mnemonic in _BRANCH_MNEMONICS
            or mnemonic.startswith("adr"))


def _quick(addr: int, size: int, raw: bytes, thumb: bool, mnemonic: str, op_str: str) -> Instruction | None:
    """Facts from the instruction's text for the common forms (see operands.py)."""
    if "pc" in op_str:
        return None
    name, _ = base_name(mnemonic)
    accesses = quick_facts(name, op_str)
    if accesses is None:
        return None
    return Instruction(address=addr, size=size, raw=raw, thumb=thumb, mnemonic=mnemonic, op_str=op_str, name=name,
                       accesses=tuple(accesses))


def _quick_pc(md: capstone.Cs, addr: int, raw: bytes, thumb: bool, mnemonic: str, op_str: str,
              cache: DecodeCache) -> Instruction | None:
    """Facts from the text of the frequent forms that involve PC, the same as ``_facts`` gives;
    None for the others.

    The forms: loads from literal pools, ``add rX, pc``, returns (``bx lr``, ``pop {..., pc}``)
    and branches to a register (``bx rN``, ``blx rN``): nine in ten instructions that name PC.
    Relocation reads capstone's details of the PC-relative ones and of ``bx rN`` (their
    registers), so those carry them (``cache.detail``).
    """
    if with_condition(mnemonic, "bx") or with_condition(mnemonic, "blx"):
        return _register_branch(md, addr, raw, thumb, mnemonic, op_str, cache)
    new = functools.partial(Instruction, address=addr, size=len(raw), raw=raw, thumb=thumb, mnemonic=mnemonic,
                            op_str=op_str)
    if with_condition(mnemonic, "pop") and op_str.endswith("pc}"):
        accesses = quick_facts("pop", op_str)
        if accesses is None:
            return None
        return new(name="pop", accesses=tuple(accesses), is_branch=True, is_return=True, writes_pc=True)
    if with_condition(mnemonic, "add") and op_str.endswith(", pc") and op_str[:-4] in REG:
        return new(name="add", reads_pc=True, detail=cache.detail(md, raw, addr, thumb))
    name, _ = base_name(mnemonic)
    if name not in _LOAD_SIZES and name != "vldr":
        return None
    literal = literal_operands(op_str)
    if literal is None or (literal[0] not in REG and name != "vldr"):
        return None
    register, offset = literal
    size = _vreg_size(register) if name == "vldr" else _LOAD_SIZES[name]
    pc_value = addr + (4 if thumb else 8)
    access = Access(False, size, PC, ((pc_value & ~3) + offset) & 0xFFFFFFFF)
    return new(name=name, accesses=(access,), reads_pc=True, detail=cache.detail(md, raw, addr, thumb))


def _register_branch(md: capstone.Cs, addr: int, raw: bytes, thumb: bool, mnemonic: str, op_str: str,
                     cache: DecodeCache) -> Instruction | None:
    """``bx rN`` (``bx lr``: a return) and ``blx rN``, with N not PC; None for other text."""
    if op_str not in REG:
        return None
    ins = Instruction(address=addr, size=len(raw), raw=raw, thumb=thumb, mnemonic=mnemonic, op_str=op_str,
                      is_branch=True, writes_pc=True)
    if with_condition(mnemonic, "blx"):
        ins.name = "blx"
        ins.is_call = ins.is_indirect = True
    elif op_str == "lr":
        ins.name = "bx"
        ins.is_return = True
    else:
        ins.name = "bx"
        ins.is_indirect = True
        ins.detail = cache.detail(md, raw, addr, thumb)
    return ins


def _detail(md: capstone.Cs, raw: bytes, addr: int) -> capstone.CsInsn:
    """Capstone's instruction with details, decoded alone (outside any IT block)."""
    return next(md.disasm(raw, addr, 1))


_DETAIL_HANDLES: dict[bool, capstone.Cs] = {}


def shared_disassembler(thumb: bool) -> capstone.Cs:
    """The process's ARMv7 handle (make_disassembler) for Thumb or A32, made once: for the
    short reads done apart from a binary's descent (a callee's first instructions, one
    instruction's details), where making a handle cost more than decoding."""
    md = _DETAIL_HANDLES.get(thumb)
    if md is None:
        md = _DETAIL_HANDLES[thumb] = make_disassembler(thumb)
    return md


def details_of(ins: Instruction) -> capstone.CsInsn:
    """``ins``'s capstone instruction with operand details, decoded now where the decoder
    kept none (the facts of most instructions come from capstone's text alone), and kept."""
    if ins.detail is None:
        ins.detail = _detail(shared_disassembler(ins.thumb), ins.raw, ins.address)
    return ins.detail


def _thumb_branch_cond(raw: bytes, name: str, default: int) -> int:
    """Condition of a T32 conditional branch outside IT (B<c> T1/T3 encodings)."""
    if name != "b":
        return default
    hw1 = int.from_bytes(raw[:2], "little")
    if len(raw) == 2 and (hw1 & 0xF000) == 0xD000 and ((hw1 >> 8) & 0xF) < 14:
        return (hw1 >> 8) & 0xF
    if len(raw) == 4 and (hw1 & 0xF800) == 0xF000:
        hw2 = int.from_bytes(raw[2:], "little")
        if (hw2 & 0xD000) == 0x8000 and ((hw1 >> 6) & 0xF) < 14:
            return (hw1 >> 6) & 0xF
    return default


@dataclasses.dataclass
class DecodeCache:
    """What decoding learns about encodings that holds at any address (see decode_range);
    one per binary."""

    # (thumb, encoding, mnemonic, operand text, IT condition or None) -> the constructor's
    # arguments after the address (see _facts_of) of an instruction whose facts do not depend
    # on its address.
    facts: dict[tuple[bool, bytes, str, str, int | None], tuple] = dataclasses.field(default_factory=dict)
    # (thumb, encoding) -> capstone's details of the encoding
    details: dict[tuple[bool, bytes], capstone.CsInsn] = dataclasses.field(default_factory=dict)

    def detail(self, md: capstone.Cs, raw: bytes, addr: int, thumb: bool) -> capstone.CsInsn:
        """Capstone's details of ``raw`` decoded alone (outside any IT block), shared by the
        instructions with that encoding: what they say is the same at every address but for
        the address itself (relocation reads registers), and decoding them is the costly
        part of capstone. ``addr``: where the first one is."""
        detail = self.details.get((thumb, raw))
        if detail is None:
            detail = self.details[(thumb, raw)] = _detail(md, raw, addr)
        return detail

_FIELDS = [f.name for f in dataclasses.fields(Instruction)]
# What decoding sets besides the address: the fields from ``size`` to ``is_syscall``, and
# ``detail``. The others are left at their defaults, which a copy gets by leaving them out.
_DECODED = _FIELDS[1:_FIELDS.index("hooks")]
_SPLIT = _DECODED.index("accesses")
assert _FIELDS[0] == "address" and _FIELDS[len(_DECODED) + 1:] == ["hooks", "_block_ref", "detail"], _FIELDS


def decode_range(md: capstone.Cs, code: bytes, address: int, thumb: bool,
                 cache: DecodeCache | None = None, m_profile: bool = False) -> tuple[list[Instruction], int]:
    """Decode ``code`` at ``address`` with the ARMv7 handle ``md``, reading an instruction
    that ARMv7 does not know as ARMv8 (make_disassembler) or ARMv7-M (_other_readings);
    returns the instructions and the address where decoding stopped (see _decode_with).
    ``m_profile``: the code is a Cortex-M image's."""
    cache = DecodeCache() if cache is None else cache
    out, end = _decode_with(md, code, address, thumb, cache)
    stop = address + len(code)
    others = _other_readings(md, m_profile) if not md.mode & (capstone.CS_MODE_V8 | capstone.CS_MODE_MCLASS) else []
    while end < stop and others:
        # Inside an IT block the other handle decodes from its IT instruction on (the block
        # and what follows it in 18 bytes): capstone reads the conditions of a block only
        # from its IT (``ite eq; mrseq r0, msp; mrsne r0, psp``, where ARMv7-A stops at the
        # MRS: decoded alone, both MRS ran unconditionally in the copy).
        block = _open_it_block(out) if thumb else None
        start, reach = (out[block].address, end + 18) if block is not None else (end, end + 4)
        for other in others:
            more, after = _decode_with(other, code[start - address:reach - address], start, thumb, cache)
            if after > end:
                break
        if after <= end:
            break
        if block is not None:
            del out[block:]
        out += more
        rest, end = _decode_with(md, code[after - address:], after, thumb, cache)
        out += rest
    return out, end


def _open_it_block(decoded: list[Instruction]) -> int | None:
    """The index in ``decoded`` of the IT instruction whose block the next instruction
    falls in, else None."""
    for back, ins in enumerate(reversed(decoded[-5:])):
        if ins.is_it:
            return len(decoded) - 1 - back if back < len(_it_conditions(int.from_bytes(ins.raw, "little"))) else None
    return None


def _decode_with(md: capstone.Cs, code: bytes, address: int, thumb: bool,
                 cache: DecodeCache) -> tuple[list[Instruction], int]:
    """Decode ``code`` at ``address``; returns the instructions and the address where decoding stopped.

    A fast pass without details finds instruction boundaries (and IT blocks); only
    instructions whose facts need operands are decoded again with details.

    Code repeats the same encodings (register saves, loads from the frame), so facts
    are kept in ``cache`` (one per binary, shared by every call: see decode_range). Only
    facts read from capstone's text are kept, and only those that do not depend on the
    address (no branch target, no literal): they are then a function of the key alone
    (the text names no address, and the IT condition, which changes the text and the
    condition, is part of it). Direct branches, whose text names their target, take a
    short way of their own.
    """
    known = cache.facts
    out: list[Instruction] = []
    end = address
    it_conds: list[int] = []
    for addr, size, mnemonic, op_str in _lite(md).disasm_lite(code, address):
        raw = code[addr - address:addr - address + size]
        it_cond = it_conds.pop(0) if it_conds else None
        name = _DIRECT_BRANCHES.get(mnemonic)
        if name is not None and (ins := _direct_branch(addr, raw, thumb, mnemonic, op_str, name, it_cond)):
            out.append(ins)  # a branch's text names its target: nothing to cache
            end = addr + size
            continue
        key = (thumb, raw, mnemonic, op_str, it_cond)
        facts = known.get(key)
        if facts is None:
            ins = _decode_one(md, addr, raw, thumb, mnemonic, op_str, it_cond, cache)
            if _same_anywhere(ins, cache):
                known[key] = _facts_of(ins)
        else:
            ins = Instruction(addr, *facts)  # positional: the fastest constructor call
        if thumb and ins.reads_pc and not t32_reads_pc_defined(ins):
            break  # data read as code (a literal pool after a call that never returns)
        if ins.is_it:
            it_conds = _it_conditions(int.from_bytes(raw, "little"))
        elif out and ins.writes_pc and is_link_move(out[-1], ins):
            ins.is_call = True  # the facts cached above are the instruction's alone
        out.append(ins)
        end = addr + size
    return out, end


def t32_reads_pc_defined(ins: Instruction) -> bool:
    """Whether ``ins``, a T32 instruction that reads PC, is one of the few forms the
    architecture defines for it: ADR, ``mov``/``add rd, pc`` and ``add pc, rm`` (16-bit:
    clang's Thumb-1 switch jumps so), loads from a literal (``ldr``/``ldrd``/``vldr``/
    ``pld``... ``[pc, #x]``) and ``tbb``/``tbh [pc, rm]``.

    Every other T32 encoding that names PC as an operand (``strd pc, pc, [r1]``,
    ``str.w pc, [sp]``, ``add.w r0, r1, pc``, ``push {pc}``) is UNPREDICTABLE or UNDEFINED,
    so no compiler writes it: such bytes are data, most often a literal pool after a call
    that never returns, which the descent read on into. Decoding stops there
    (``_decode_with``), so the descent ends instead of handing relocation an instruction
    it cannot move, which would leave the whole procedure uninstrumented."""
    if ins.name in ("tbb", "tbh", "pld", "pli") or any(
            a.base == PC and a.index is None and not a.is_store for a in ins.accesses[:1]):
        return True
    hw1 = int.from_bytes(ins.raw[:2], "little")
    if ins.size == 2:
        return (hw1 & 0xF800) == 0xA000 or (hw1 & 0xFF78) in (0x4678, 0x4478) \
            or (hw1 & 0xFF87) == 0x4487 and (hw1 >> 3) & 0xF != PC  # ADR, MOV/ADD rd, pc; ADD pc, rm
    hw2 = int.from_bytes(ins.raw[2:4], "little")
    return (hw1 & 0xFBFF) in (0xF2AF, 0xF20F) and not hw2 & 0x8000  # ADR.W


def is_link_move(move: Instruction, branch: Instruction) -> bool:
    """``mov lr, pc`` right before the A32 instruction ``branch`` that writes PC, under the
    same condition: the call of ARM code before BLX (ARMv4T's ``mov lr, pc; bx rN``; glibc's
    atomics on armel, ``mov lr, pc; sub pc, r3, #63``, calling the kernel's helper at
    0xffff0fc0). The PC it reads is ``branch``'s end, so it returns there: a call, whose
    return site starts a block. A return (``bx lr``) is not one."""
    return (not move.thumb and not branch.thumb and move.name == "mov" and move.op_str == "lr, pc"
            and move.address + 8 == branch.end and move.cond == branch.cond and not branch.is_return
            and not branch.is_call and branch.name != "b")


# Mnemonics of direct branches and calls, with their base names (as base_name gives them).
_DIRECT_BRANCHES = {m: base_name(m)[0] for m in _BRANCH_MNEMONICS if base_name(m)[0] in BRANCH}


def _direct_branch(addr: int, raw: bytes, thumb: bool, mnemonic: str, op_str: str, name: str,
                   it_cond: int | None) -> Instruction | None:
    """What ``_decode_one`` gives for a direct branch or call (``name``: its base name), on the
    short way: a fifth of all instructions, and never in the cache. None when the text is not
    ``[rN, ]#target``, for the general way."""
    if "pc" in op_str or op_str.count("#") != 1:
        return None
    target = int(op_str.rsplit("#", 1)[-1], 0) & 0xFFFFFFFF
    cond = _encoded_condition(raw, thumb, it_cond)
    if thumb and it_cond is None:
        cond = _thumb_branch_cond(raw, name, cond)
    # Positional, as in _decode_with (keywords cost more): address, size, raw, thumb, mnemonic,
    # op_str, name, cond, is_it, in_it, accesses, is_branch, is_call, is_return, is_indirect,
    # branch_target, reads_pc, writes_pc.
    return Instruction(addr, len(raw), raw, thumb, mnemonic, op_str, name, cond, False, it_cond is not None, (),
                       True, name in ("bl", "blx"), False, False, target, False, True)


def _same_anywhere(ins: Instruction, cache: DecodeCache) -> bool:
    """The facts of ``ins`` do not depend on its address: no branch target, no literal, and
    details (if any) that the encoding's instructions share."""
    if ins.branch_target is not None or any(a.base == PC for a in ins.accesses):
        return False
    return ins.detail is None or cache.details.get((ins.thumb, ins.raw)) is ins.detail


def _facts_of(ins: Instruction) -> tuple:
    """The constructor's arguments for an instruction like ``ins`` at another address, in
    order, all but the address: its decoded fields (the accesses as a tuple, which every
    instruction of the encoding shares), no hooks (the shared empty tuple, the default), its
    details. One tuple: a single unpacking per instruction made from the cache."""
    values = [getattr(ins, name) for name in _DECODED]
    values[_SPLIT] = tuple(values[_SPLIT])
    return (*values, (), ins.detail)


def _is_it(raw: bytes, thumb: bool, mnemonic: str) -> bool:
    """An IT instruction (capstone may print one with its condition mask, e.g. ``itte``)."""
    return mnemonic == "it" or (thumb and len(raw) == 2 and mnemonic.startswith("it") and raw[1] == 0xBF
                                and bool(raw[0] & 0xF))


def _encoded_condition(raw: bytes, thumb: bool, it_cond: int | None) -> int:
    """The condition an enclosing IT block or an A32 encoding's top bits give (AL otherwise;
    a T32 conditional branch carries its own, see _thumb_branch_cond)."""
    if it_cond is not None:
        return it_cond
    if not thumb:
        word = int.from_bytes(raw, "little")
        return word >> 28 if word >> 28 != 15 else 14
    return 14


def _decode_one(md: capstone.Cs, addr: int, raw: bytes, thumb: bool, mnemonic: str, op_str: str,
                it_cond: int | None, cache: DecodeCache) -> Instruction:
    """One instruction from capstone's text (and its details where the text is not enough).

    ``it_cond``: the condition an enclosing IT block gives it, None outside IT blocks.
    """
    size = len(raw)
    in_it = it_cond is not None
    cond = _encoded_condition(raw, thumb, it_cond)
    if _is_it(raw, thumb, mnemonic):
        ins = Instruction(address=addr, size=size, raw=raw, thumb=thumb, mnemonic=mnemonic, op_str=op_str,
                          is_it=True)
    elif _needs_detail(mnemonic, op_str) and (quick := (_quick(addr, size, raw, thumb, mnemonic, op_str)
                                                         or _quick_pc(md, addr, raw, thumb, mnemonic, op_str,
                                                                      cache))):
        ins = quick
        if thumb and not in_it:
            cond = _thumb_branch_cond(raw, ins.name, cond)
        ins.cond = cond
    elif _needs_detail(mnemonic, op_str):
        insn = _detail(md, raw, addr)
        ins = _facts(md, insn, thumb)
        ins.mnemonic, ins.op_str = mnemonic, op_str
        if thumb and not in_it:
            cond = ins.cond
        ins.cond = cond
    else:
        ins = Instruction(address=addr, size=size, raw=raw, thumb=thumb, mnemonic=mnemonic, op_str=op_str,
                          name=base_name(mnemonic)[0], cond=cond, is_syscall=_is_syscall(mnemonic, op_str))
    ins.in_it = in_it
    return ins


def _is_syscall(mnemonic: str, op_str: str) -> bool:
    """A call out of the program: a Linux system call (svc) or an ARM semihosting
    request to the debugger or emulator (bkpt #0xab, M profile)."""
    return mnemonic.startswith("svc") or (mnemonic == "bkpt" and op_str == "#0xab")


def _facts(md: capstone.Cs, insn: capstone.CsInsn, thumb: bool) -> Instruction:
    name = insn.insn_name()
    cond = (insn.cc - 1) if insn.cc not in (0, csarm.ARM_CC_AL) else 14
    ins = Instruction(
        address=insn.address, size=insn.size, raw=bytes(insn.bytes), thumb=thumb,
        mnemonic=insn.mnemonic, op_str=insn.op_str, name=name, cond=cond, detail=insn,
    )
    ops = list(insn.operands)
    pc_value = insn.address + (4 if thumb else 8)
    # Explicit operands only: capstone also lists PC as an implicit operand of BL/BLX/SVC.
    ins.reads_pc = any(
        (o.type == csarm.ARM_OP_REG and _reg(md, o.reg) == PC and o.access & capstone.CS_AC_READ)
        or (o.type == csarm.ARM_OP_MEM and PC in (_reg(md, o.mem.base), _reg(md, o.mem.index)))
        for o in ops)
    ins.writes_pc = any(o.type == csarm.ARM_OP_REG and _reg(md, o.reg) == PC and o.access & capstone.CS_AC_WRITE
                        for o in ops) or name in ("tbb", "tbh")
    if name == "adr":  # capstone shows only the offset, not the PC it is added to
        ins.reads_pc = True
    if name == "it":
        ins.is_it = True
        ins.reads_pc = ins.writes_pc = False
        return ins
    ins.is_syscall = _is_syscall(insn.mnemonic, insn.op_str)
    ins.accesses = tuple(_accesses(md, insn, name, ops, pc_value))
    _branch_facts(md, ins, insn, name, ops, thumb)
    if ins.writes_pc and ins.branch_target is None and name not in ("b", "bl", "cbz", "cbnz"):
        ins.is_branch = True
    return ins


def _branch_facts(md: capstone.Cs, ins: Instruction, insn: capstone.CsInsn, name: str, ops: list,
                  thumb: bool) -> None:
    imm_target = next((o.imm for o in ops if o.type == csarm.ARM_OP_IMM), None)
    if name in ("b", "cbz", "cbnz") and imm_target is not None:
        ins.is_branch = True
        ins.branch_target = imm_target & 0xFFFFFFFF
        ins.writes_pc = True
        ins.reads_pc = False
        return
    if name in ("bl", "blx") and imm_target is not None:
        ins.is_branch = ins.is_call = True
        ins.branch_target = imm_target & 0xFFFFFFFF
        ins.writes_pc = True
        ins.reads_pc = False
        return
    if name == "blx":
        ins.is_branch = ins.is_call = ins.is_indirect = True
        ins.writes_pc = True
        return
    if name == "bx":
        ins.is_branch = True
        ins.writes_pc = True
        target_reg = _reg(md, ops[0].reg)
        if target_reg == PC:  # Thumb 'bx pc': switch to the A32 code that follows
            ins.branch_target = (insn.address + (4 if thumb else 8)) & ~3
            ins.reads_pc = False
            return
        if target_reg == LR:
            ins.is_return = True
        else:
            ins.is_indirect = True
        return
    if not ins.writes_pc:
        return
    ins.is_branch = True
    if name == "pop" or (name in ("ldm", "ldmia") and _reg(md, ops[0].reg) == SP):
        ins.is_return = True
        return
    if name.startswith("ldm") and any(op.type == csarm.ARM_OP_REG and _reg(md, op.reg) == SP for op in ops[1:]):
        # The APCS frame's return (gcc -mapcs-frame, Free Pascal): ``ldmdb fp, {..., fp, sp,
        # pc}`` puts back the caller's SP and jumps to the LR saved beside it.
        ins.is_return = True
        return
    if name == "ldr" and ops[1].type == csarm.ARM_OP_MEM and _reg(md, ops[1].mem.base) == SP:
        ins.is_return = True
        return
    if name == "mov" and len(ops) == 2 and ops[1].type == csarm.ARM_OP_REG and _reg(md, ops[1].reg) == LR:
        ins.is_return = True
        return
    if (name in ("add", "sub") and len(ops) == 3 and ops[1].type == csarm.ARM_OP_REG and _reg(md, ops[1].reg) == LR
            and ops[2].type == csarm.ARM_OP_IMM and ops[2].imm == 0):
        # Go's return from a function without a frame: ``add pc, lr, #0`` (decision 0089).
        ins.is_return = True
        return
    ins.is_indirect = True


def _mem_access(md: capstone.Cs, insn: capstone.CsInsn, op, size: int, is_store: bool, pc_value: int) -> Access:
    base = _reg(md, op.mem.base)
    index = _reg(md, op.mem.index) if op.mem.index else None
    disp = op.mem.disp
    if op.subtracted and index is None and disp > 0:
        disp = -disp
    if insn.post_index:
        return Access(is_store, size, base, 0)
    if base == PC and index is None:
        return Access(is_store, size, PC, ((pc_value & ~3) + disp) & 0xFFFFFFFF)
    shift = 0
    shift_type = 0
    if index is not None:
        shift = op.shift.value if op.shift.type else 0
        shift_type = _SHIFT_TYPES.get(op.shift.type, 0)
        if op.mem.lshift and not shift:
            shift = op.mem.lshift
    return Access(is_store, size, base, disp, index, shift, shift_type, bool(op.subtracted and index is not None))


def _accesses(md: capstone.Cs, insn: capstone.CsInsn, name: str, ops: list, pc_value: int) -> list[Access]:
    mem = next((o for o in ops if o.type == csarm.ARM_OP_MEM), None)
    if name in _LOAD_SIZES and mem is not None:
        return [_mem_access(md, insn, mem, _LOAD_SIZES[name], False, pc_value)]
    if name in _STORE_SIZES and mem is not None:
        return [_mem_access(md, insn, mem, _STORE_SIZES[name], True, pc_value)]
    if name in _PAIR and mem is not None:
        first = _mem_access(md, insn, mem, 4, _PAIR[name], pc_value)
        second = Access(first.is_store, 4, first.base, first.disp + 4, first.index, first.shift,
                        first.shift_type, first.subtract)
        return [first, second]
    if name in ("vldr", "vstr") and mem is not None:
        size = _vreg_size(md.reg_name(ops[0].reg))
        return [_mem_access(md, insn, mem, size, name == "vstr", pc_value)]
    if name in ("tbb", "tbh") and mem is not None:
        base = _reg(md, mem.mem.base)
        index = _reg(md, mem.mem.index)
        # Like every register-offset form: base (PC reads as the instruction's address + 4) + index.
        return [Access(False, 1 if name == "tbb" else 2, base, 0, index, 1 if name == "tbh" else 0)]
    if name in _MULTI or name in _VMULTI:
        is_store, mode = _MULTI[name] if name in _MULTI else _VMULTI[name]
        if name in ("push", "pop", "vpush", "vpop"):
            base, regs = SP, [o for o in ops if o.type == csarm.ARM_OP_REG]
        else:
            base, regs = _reg(md, ops[0].reg), [o for o in ops[1:] if o.type == csarm.ARM_OP_REG]
        sizes = [_vreg_size(md.reg_name(o.reg)) if name[0] == "v" else 4 for o in regs]
        return multi_accesses(base, sizes, is_store, mode)
    if name in _STRUCTURES and mem is not None:
        return _structure_accesses(md, insn, name, ops, mem)
    return []


#: NEON's element and structure loads and stores (VLDn, VSTn: n-element structures).
_STRUCTURES = frozenset(f"{kind}{n}" for kind in ("vld", "vst") for n in "1234")


def _structure_accesses(md: capstone.Cs, insn: capstone.CsInsn, name: str, ops: list, mem) -> list[Access]:
    """What a VLDn or VSTn reads or writes: contiguous memory from its base register (before
    any write-back). Multiple structures (``vld2.16 {d6, d7}, [r1]!``) transfer every
    register listed, 8 bytes each, interleaved or not; one lane (``vst3.16 {d0[2], d1[2],
    d2[2]}``) or all lanes (``vld1.32 {d5[]}``) transfer n elements of the data size, one
    structure. One access per register or element."""
    is_store = name.startswith("vst")
    base = _reg(md, mem.mem.base)
    if "[" in insn.op_str.split("}", 1)[0]:  # a lane index, or [] for all lanes
        size = int(insn.mnemonic.rsplit(".", 1)[1]) // 8
        return [Access(is_store, size, base, size * i) for i in range(int(name[3]))]
    names = [md.reg_name(o.reg) for o in ops if o.type == csarm.ARM_OP_REG and o.reg != mem.mem.base]
    doubles = sum(2 if reg.startswith("q") else 1 for reg in names if reg[0] in "dq")
    return [Access(is_store, 8, base, 8 * i) for i in range(max(1, doubles))]

"""Which core registers a procedure will not read again before it writes them (dead registers).

Hooks borrow registers; one that is dead where the hook runs need not be parked and put
back (decision 0020). Dead means: on every way control may go from that point, the
register is written before it is read. The analysis is the usual backward one over the
procedure's instructions, kept safe where it cannot see:

- whatever leaves the procedure (a call, a return, a system call, an indirect or table
  jump, a branch elsewhere, running off its end) counts as reading every register: the
  code there is not looked at, and its conventions are not assumed (a call may be to code
  that takes arguments in any register). A call writes LR itself, so LR is dead before a
  BL that does not read it;
- an instruction only writes (kills) a register when it surely does: unconditionally,
  and of a kind listed in ``_KINDS`` whose operands say which; any other instruction
  counts as reading every register it names, and every register when it is not known.

What the instruction reads is taken from capstone's text: the register names in its
operands (tests/test_liveness.py compares them with capstone's own register accesses).
Entries into the procedure do not matter: what is dead at a point depends only on where
control may go from it. A signal handler runs with the registers the kernel saved, and
gives them back; it does not see a dead register's value unless it reads the interrupted
context, which no hook can keep exact anyway.
"""

from __future__ import annotations

import bisect
import re
from functools import cache

from ..arch.arm.decode import REG_NUMBERS as _NAMES
from .model import Instruction, Procedure

LR = 14
ALL = 0x5FFF  # the registers tracked: r0-r12 and LR (SP and PC are never borrowed)
# The condition flags (N, Z, C, V), tracked beside the registers in a bit no register has:
# a hook whose flags are dead need not keep them (an A32 test then branches directly).
FLAGS = 1 << 16
TRACKED = ALL | FLAGS
# Instructions that read the flags whatever their condition: the carry (ADC, SBC, RSC,
# RRX), the whole APSR (MRS), the IT instructions, VSEL.
_FLAG_READERS = frozenset(("adc", "sbc", "rsc", "rrx", "mrs"))
# Those that surely write all four flags when unconditional and S (or CMP, CMN): the
# logical ones (ANDS, MOVS, TST, ...) leave V, so the flags are not dead after them.
_FLAG_WRITERS = frozenset(("add", "sub", "rsb", "rsc", "adc", "sbc", "neg", "addw", "subw"))

_REGISTER = re.compile(r"\b(r1[0-2]|r[0-9]|sb|sl|fp|ip|sp|lr|pc)\b")
_CONDITIONS = ("eq", "ne", "hs", "cs", "lo", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al")

# How an instruction of each kind uses the registers its operands name, in order:
#   "dest": the first is written and not read (unless named again), the others read;
#   "alu": the first is written; the others read, and the first too when only two
#          operands are given (the Thumb two-operand forms: ``adds r0, #1``, ``ands r0, r1``);
#   "pair": the first two are written, the others read;
#   "list": the registers in braces are written, the others read (LDM, POP);
#   "read": all read, none written (stores, compares; a write-back base is read anyway;
#          MOVT, BFI and BFC keep part of their destination; MRC's register is written,
#          but capstone, which the tests compare with, says read);
#   "call": BL, BLX: the named register read, LR written;
#   "core_first": VMOV/VMRS: the leading core registers are written when the first
#          operand is one, else every named core register is read.
_KINDS: dict[str, str] = {}
for _names, _kind in (
    ("mov mvn movw ldr ldrb ldrh ldrsb ldrsh ldrex ldrexb ldrexh ldrt ldrbt ldrht ldrsbt ldrsht "
     "uxtb uxth sxtb sxth uxtab uxtah sxtab sxtah uxtb16 sxtb16 clz rev rev16 revsh rbit adr ubfx sbfx "
     "mla mls strex strexb strexh strexd usat ssat usat16 ssat16 mrs smulbb smulbt smultb smultt "
     "smulwb smulwt smlabb smlabt smlatb smlatt smlawb smlawt smmul smmla smmls smmulr smmlar smmlsr "
     "smuad smusd smlad smlsd usad8 usada8", "dest"),
    ("add adc sub sbc rsb rsc and orr eor bic orn lsl lsr asr ror rrx mul addw subw sdiv udiv neg "
     "qadd qsub qdadd qdsub sel uadd8 uadd16 usub8 usub16 sadd8 sadd16 ssub8 ssub16 uqadd8 uqadd16 "
     "uqsub8 uqsub16 qadd8 qadd16 qsub8 qsub16 uhadd8 uhadd16 uhsub8 uhsub16 shadd8 shadd16 shsub8 "
     "shsub16 uasx usax sasx ssax pkhbt pkhtb", "alu"),
    ("ldrd ldrexd umull smull", "pair"),
    ("ldm ldmia ldmib ldmda ldmdb ldmfd ldmea pop", "list"),
    ("str strb strh strd strt strbt strht stm stmia stmib stmda stmdb stmfd stmea push cmp cmn tst teq "
     "vstr vstm vstmia vstmdb vldr vldm vldmia vldmdb vpush vpop vld1 vst1 vld2 vst2 vld3 vst3 vld4 vst4 "
     "pld pldw pli dmb dsb isb nop it ite itt itee itet itte ittt iteee iteet itete itett ittee ittet "
     "ittte itttt cbz cbnz vmsr msr mrc bkpt yield wfe wfi sev clrex b bx movt bfi bfc", "read"),
    ("bl blx", "call"),
    ("vmov vmrs", "core_first"),
):
    for _name in _names.split():
        _KINDS[_name] = _kind


class DeadRegisters:
    """The registers dead before each instruction of a procedure: ``get(address)`` (bit n
    for rn, of ``ALL``), 0 for an address that is not one of its instructions.

    The flow is solved per block when made; what is dead inside a block is worked out
    when first asked for (counters ask only at block starts).
    """

    def __init__(self, proc: Procedure) -> None:
        blocks = proc.blocks
        self._blocks = blocks
        self._starts = starts = {block.address: k for k, block in enumerate(blocks)}
        # Per block: what it reads before writing (gen) and what it surely writes (kill), so
        # that live on entry = gen | (live on exit & ~kill); and where control goes from its
        # end (blocks end at every branch, call and gap: only the last instruction leaves).
        gen_kill = [_gen_kill(block.instructions) for block in blocks]
        successors = [_successors(block.instructions[-1], starts) for block in blocks]
        # Where control leaves the procedure everything counts as read, but for the flags
        # after a call: the procedure call standard keeps no flags across a call and passes
        # none, so compiled code sets them again after one before it reads them (a routine
        # that returns its result in the flags, __aeabi_cdcmple, sets them itself).
        exits = [ALL if _unconditional_call(block.instructions[-1]) else TRACKED for block in blocks]
        predecessors: list[list[int]] = [[] for _ in blocks]
        for k, after in enumerate(successors):
            for s in after or ():
                predecessors[s].append(k)
        self._live_in = live_in = [0] * len(blocks)
        self._live_out = live_out = [0] * len(blocks)
        work = list(range(len(blocks)))
        pending = [True] * len(blocks)
        while work:
            k = work.pop()
            pending[k] = False
            after = successors[k]
            out = exits[k]
            if after is not None:
                out = 0
                for s in after:
                    out |= live_in[s]
            live_out[k] = out
            gen, kill = gen_kill[k]
            new = gen | (out & ~kill)
            if new != live_in[k]:
                live_in[k] = new
                for p in predecessors[k]:
                    if not pending[p]:
                        pending[p] = True
                        work.append(p)
        self._inside: dict[int, int] = {}
        self._by_address: list[tuple[int, int]] | None = None  # (block start, position), sorted
        self._filled: set[int] = set()  # blocks whose instructions are in _inside

    def get(self, address: int, default: int = 0) -> int:
        """The registers dead before the instruction at ``address`` (``default`` if none is there)."""
        dead = self._dead(address)
        return default if dead is None else dead & ALL

    def flags_dead(self, address: int) -> bool:
        """Whether the condition flags are dead before the instruction at ``address``
        (False if no instruction is there)."""
        dead = self._dead(address)
        return dead is not None and bool(dead & FLAGS)

    def _dead(self, address: int) -> int | None:
        """What is dead before the instruction at ``address`` (of TRACKED), None if none is there."""
        k = self._starts.get(address)
        if k is not None:
            return TRACKED & ~self._live_in[k]
        dead = self._inside.get(address)
        if dead is None:
            # Only the block that may hold it (blocks do not overlap): most questions are
            # where a block's last instruction falls through to, often no instruction.
            if self._by_address is None:
                self._by_address = sorted((block.address, k) for k, block in enumerate(self._blocks))
            at = bisect.bisect_right(self._by_address, (address, len(self._blocks))) - 1
            if at >= 0:
                self._fill(self._by_address[at][1])
            dead = self._inside.get(address)
        return dead

    def _fill(self, k: int) -> None:
        """The dead registers of block ``k``'s instructions, one backward walk."""
        if k in self._filled:
            return
        self._filled.add(k)
        inside = self._inside
        live = self._live_out[k]
        insns = self._blocks[k].instructions
        steps = _block_effects(insns)  # (again: most blocks are asked about at their start alone)
        for i in range(len(insns) - 1, -1, -1):
            reads, kills = steps[i]
            live = reads | (live & ~kills)
            inside[insns[i].address] = TRACKED & ~live


def _unconditional_call(ins: Instruction) -> bool:
    """``ins`` is a call that always happens (a conditional one not taken keeps the flags)."""
    return ins.is_call and not ins.is_syscall and ins.cond == 14 and not ins.in_it


def _successors(last: Instruction, starts: dict[int, int]) -> tuple[int, ...] | None:
    """The blocks (by position) control may go to after ``last``, the last instruction of
    its block; None when it may also go where this analysis does not see (see the module's text)."""
    if last.is_call or last.is_syscall or last.is_return or last.is_indirect or last.name in ("udf", "tbb", "tbh"):
        return None
    out = []
    if last.is_branch or last.writes_pc:
        target = starts.get(last.branch_target) if last.branch_target is not None else None
        if target is None:
            return None
        out.append(target)
    if last.falls_through:
        after = starts.get(last.end)
        if after is None:
            return None  # running on past the procedure's last instruction, or into a gap
        out.append(after)
    return tuple(out)


# mnemonic -> operands -> effects unconditionally: the rewriter asks for every instruction
# of the program, and two string-keyed lookups cost less than a call with a tuple key.
_KNOWN: dict[str, dict[str, tuple[int, int]]] = {}


def _gen_kill(insns: list[Instruction]) -> tuple[int, int]:
    """(gen, kill) of a block of ``insns``: the registers it reads before writing them, and
    those it surely writes; ``_block_effects`` folded backwards in the same walk (every
    instruction of every relocated procedure comes here)."""
    known = _KNOWN
    gen = kill = 0
    for k in range(len(insns) - 1, -1, -1):
        ins = insns[k]
        by_operands = known.get(ins.mnemonic)
        found = by_operands.get(ins.op_str) if by_operands is not None else None
        if found is None:
            reads, kills = _effects_of(ins)
        elif ins.cond != 14 or ins.in_it:
            reads, kills = found[0] | FLAGS, 0  # a conditional write may not happen
        else:
            reads, kills = found
        gen = reads | (gen & ~kills)
        kill |= kills
    return gen, kill


def _block_effects(insns: list[Instruction]) -> list[tuple[int, int]]:
    """``_effects_of`` of each of ``insns``, the known ones looked up inline (every
    instruction of every relocated procedure comes here)."""
    known = _KNOWN
    out = []
    append = out.append
    for ins in insns:
        by_operands = known.get(ins.mnemonic)
        found = by_operands.get(ins.op_str) if by_operands is not None else None
        if found is None:
            append(_effects_of(ins))
        elif ins.cond != 14 or ins.in_it:
            append((found[0] | FLAGS, 0))  # a conditional write may not happen
        else:
            append(found)
    return out


def _effects_of(ins: Instruction) -> tuple[int, int]:
    """``_effects`` of ``ins``."""
    found = _known_effects(ins)
    if ins.cond != 14 or ins.in_it:
        return found[0] | FLAGS, 0  # a conditional write may not happen; the condition reads the flags
    return found


def _known_effects(ins: Instruction) -> tuple[int, int]:
    """``_effects`` of ``ins``'s text, kept in ``_KNOWN``."""
    by_operands = _KNOWN.get(ins.mnemonic)
    if by_operands is None:
        by_operands = _KNOWN[ins.mnemonic] = {}
    op_str = ins.op_str
    found = by_operands.get(op_str)
    if found is None:
        # Texts differ mostly by their immediates (python3.11: 164k texts), which name no
        # register, hold no comma and are no register's name: ``_effects`` of the text with
        # each immediate made ``#0`` is the same, and that text is shared by far more.
        same = _IMMEDIATE.sub("#0", op_str) if "#" in op_str else op_str
        found = by_operands.get(same)
        if found is None:
            found = by_operands[same] = _effects(ins.mnemonic, same)
        by_operands[op_str] = found
    return found


# An immediate operand as capstone writes it: #20, #0x14, #-0x14, #1.000000e+00.
_IMMEDIATE = re.compile(r"#-?[0-9a-fx.e+]+")


def registers_used(ins: Instruction) -> int:
    """The registers ``ins`` may read or write (bit n for rn, of ``ALL``; every one when
    the analysis does not know the instruction). The descent's switch finder asks of most
    instructions after a MOV: the text is parsed once (``_KNOWN``)."""
    reads, writes = _known_effects(ins)
    return (reads | writes) & ALL


def _effects(mnemonic: str, op_str: str) -> tuple[int, int]:
    """(registers read, registers written) of one instruction run unconditionally, as bit
    masks, the flags (``FLAGS``) among them (``_effects_of`` drops the writes of a
    conditional one, and adds the flags its condition reads)."""
    reads, kills = _register_effects(mnemonic, op_str)
    base = _base(mnemonic)
    if reads == ALL and not kills and _KINDS.get(base) is None and not base.startswith("v"):
        return TRACKED, 0  # not known: it may read the flags too
    if base in _FLAG_READERS or "rrx" in op_str or base.startswith("vsel") \
            or (base.startswith("it") and _KINDS.get(base) == "read"):
        reads |= FLAGS
    name = mnemonic.split(".", 1)[0]
    if base in ("cmp", "cmn") and name == base or base in _FLAG_WRITERS and name == base + "s":
        kills |= FLAGS
    return reads, kills


def _register_effects(mnemonic: str, op_str: str) -> tuple[int, int]:
    """``_effects`` without the flags."""
    base = _base(mnemonic)
    kind = _KINDS.get(base)
    named = [_NAMES[r] for r in _REGISTER.findall(op_str)]
    mask = _mask(named)
    if kind is None:
        # VFP and NEON instructions reach core registers only through the registers they
        # name (VMOV and VMRS, which write them, are known); anything else: every register.
        return (mask & ALL, 0) if base.startswith("v") else (ALL, 0)
    if kind == "read":
        return mask & ALL, 0
    if kind == "call":
        return mask & ALL, 1 << LR
    if kind == "core_first":
        if op_str.split(", ", 1)[0] not in _NAMES:
            return mask & ALL, 0
        written = []
        for op in op_str.split(", "):
            if op not in _NAMES:
                break
            written.append(_NAMES[op])
        reads, kills = mask & ~_mask(written), _mask(written)
    elif kind == "list":
        inside = op_str[op_str.index("{"):] if "{" in op_str else ""
        listed = [_NAMES[r] for r in _REGISTER.findall(inside)]
        base = named[:len(named) - len(listed)]
        reads, kills = _mask(base), _mask(listed)
    elif not named:
        return ALL, 0
    elif kind == "pair":
        if len(named) < 2:
            return ALL, 0
        reads, kills = _mask(named[2:]), _mask(named[:2])
    else:  # dest, alu
        operands = op_str.count(",") + 1 - op_str.count(", lsl") - op_str.count(", lsr") \
            - op_str.count(", asr") - op_str.count(", ror") - op_str.count(", rrx")
        reads, kills = _mask(named[1:]), _mask(named[:1])
        if kind == "alu" and operands < 3:
            reads |= kills
    if kills >> 15:
        return ALL, 0  # writes the PC: a jump, which the control flow accounts for
    return reads & ALL, kills & ALL


def _mask(registers: list[int]) -> int:
    out = 0
    for r in registers:
        out |= 1 << r
    return out


@cache
def _base(mnemonic: str) -> str:
    """The mnemonic without its width qualifier, condition and flag-setting S: ``ldrbeq.w``
    -> ``ldrb``, ``subshs`` -> ``sub``. Names that end like a condition (``teq``, ``smlal``,
    ``bls``) are taken as they are when they are known."""
    name = mnemonic.split(".", 1)[0]
    for candidate in (name, name[:-2] if name[-2:] in _CONDITIONS else None):
        if candidate is None:
            continue
        if candidate in _KINDS:
            return candidate
        if candidate.endswith("s") and candidate[:-1] in _KINDS:
            return candidate[:-1]
    return name

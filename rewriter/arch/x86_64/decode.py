"""Decode x86-64 code with capstone into IR Instructions with their facts.

The facts are those the ARM decoder gives, in the same fields: size and bytes, whether the
instruction branches, calls, returns or makes a system call, its direct target, whether it
is indirect, and its memory accesses. Registers are numbered as the encoding does
(``rax`` 0 ... ``r15`` 15) and RIP is ``RIP`` (16): an access based on RIP holds the
absolute link-time address in ``disp``, as a literal does on ARM.

Accesses are the ones the instruction makes, explicit or not: an operand in memory (read,
written or both: ``add [rbx], eax`` is a load and a store), and the stack slots of
``push``/``pop``/``call``/``ret``/``leave``. ``lea`` and the multi-byte ``nop`` name a memory
operand and touch no memory. A string instruction (``movs``, ``stos``, ``rep ...``)
gets one access per operand, for the first element: how often a ``rep`` prefix repeats it
is only known at run time. An access through FS or GS (thread-local data) is marked by its
segment: its address is the segment's base plus the operand's.
"""

from __future__ import annotations

import re
from functools import cache
from sys import intern

import capstone
from capstone import x86 as csx86

from ...ir.model import Access, Instruction

RIP = 16
RSP, RBP = 4, 5
RDI = 7

# Capstone's groups.
_JUMP, _CALL, _RET, _IRET = 1, 2, 3, 5
# Instructions that name a memory operand and touch no memory (the multi-byte NOP is "nop").
_NO_ACCESS = frozenset({"lea", "nop", "prefetch", "prefetchw", "prefetcht0", "prefetcht1", "prefetcht2",
                        "prefetchnta", "endbr64", "endbr32", "clflush", "clflushopt", "clwb"})
_CONDITIONAL_JUMPS = frozenset({"jrcxz", "jecxz", "loop", "loope", "loopne"})
# x86 has no condition field: a conditional jump's ``cond`` is this (anything but 14, ARM's
# "always", makes ``Instruction.is_conditional`` true).
CONDITIONAL = 0


def make_disassembler() -> capstone.Cs:
    """Capstone for x86-64, with operand details (accesses and targets come from them)."""
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    return md


#: One disassembler for the rewriter's later looks at single instructions (fix-ups,
#: flags, system call numbers, padding): made once, not once per look.
shared_disassembler = cache(make_disassembler)


# The names of each general register's parts, by register number.
_PARTS = (("rax", "eax", "ax", "al", "ah"), ("rcx", "ecx", "cx", "cl", "ch"), ("rdx", "edx", "dx", "dl", "dh"),
          ("rbx", "ebx", "bx", "bl", "bh"), ("rsp", "esp", "sp", "spl"), ("rbp", "ebp", "bp", "bpl"),
          ("rsi", "esi", "si", "sil"), ("rdi", "edi", "di", "dil"),
          *((f"r{n}", f"r{n}d", f"r{n}w", f"r{n}b") for n in range(8, 16)), ("rip", "eip", "ip"))


@cache
def _register_numbers() -> dict[int, int]:
    """Capstone's register id -> the number of the general register it is part of."""
    md = make_disassembler()
    by_name = {name: number for number, names in enumerate(_PARTS) for name in names}
    return {reg: by_name[md.reg_name(reg)] for reg in range(1, csx86.X86_REG_ENDING)
            if md.reg_name(reg) in by_name}


def _segment(reg: int) -> str | None:
    return {csx86.X86_REG_FS: "fs", csx86.X86_REG_GS: "gs"}.get(reg)


# The six status flags (CF, PF, AF, ZF, SF, OF): bit k of a flag set is flag k.
_FLAGS = ("CF", "PF", "AF", "ZF", "SF", "OF")
ALL_FLAGS = (1 << len(_FLAGS)) - 1
_READ = [getattr(csx86, f"X86_EFLAGS_TEST_{flag}") for flag in _FLAGS]
_WRITE = [sum(getattr(csx86, f"X86_EFLAGS_{kind}_{flag}", 0) for kind in ("MODIFY", "RESET", "SET", "UNDEFINED"))
          for flag in _FLAGS]
# Readers capstone may describe without flags: taken as reading all of them.
_READERS = ("j", "set", "cmov", "adc", "sbb", "pushf", "lahf", "rcl", "rcr", "fcmov", "loop", "salc")
#: (flags read, flags written) by each encoding decoded with details so far, by its bytes
#: (arch/x86_64/flags.py's liveness reads them here rather than decode each again), each
#: pair kept once (at most 4096 of them, for a million encodings).
FLAG_EFFECTS: dict[bytes, tuple[int, int]] = {}
_PAIRS: dict[tuple[int, int], tuple[int, int]] = {}
_BY_EFLAGS: dict[int, tuple[int, int]] = {}  # capstone's eflags -> the pair, where no name overrides it
_WRITE_ALL = frozenset({"popfq", "popf", "sahf"})  # (capstone's eflags do not say so)


#: x87 instructions that set the status flags (ZF, PF, CF; OF, SF, AF cleared).
_X87_FLAG_WRITERS = frozenset({"fcomi", "fcomip", "fucomi", "fucomip"})
#: Shifts and rotates: by ``cl``, a count of 0 leaves every flag as it was.
_SHIFTS = frozenset({"shl", "sal", "shr", "sar", "rol", "ror", "rcl", "rcr", "shld", "shrd"})


def flag_effect(ins: capstone.CsInsn) -> tuple[int, int]:
    """(flags read, flags written) by one capstone instruction (with details), from its
    ``eflags``, but where capstone's say otherwise than the architecture (_named_effect)."""
    eflags = ins.eflags
    mnemonic = ins.mnemonic
    name = mnemonic.split()[-1]
    if name[0] == "f" or name in _SHIFTS:
        return _named_effect(name, eflags, ins.op_str)
    if eflags and mnemonic not in _WRITE_ALL:  # (most: the pair depends on eflags alone)
        pair = _BY_EFLAGS.get(eflags)
        if pair is None:
            pair = _BY_EFLAGS[eflags] = _pair_of(eflags, mnemonic)
        return pair
    return _pair_of(eflags, mnemonic)


def _named_effect(name: str, eflags: int, op_str: str) -> tuple[int, int]:
    """(flags read, flags written) by an x87 instruction, a shift or a rotate, where
    capstone's ``eflags`` alone mislead: an x87 instruction's are its FPU flags (capstone
    keeps both in one field: ``fild`` would write CF, and Free Pascal's ``bt; mov; fild;
    jae`` lost its carry to a hook between), ``rcl``/``rcr`` read CF without saying so, and
    a shift by ``cl`` may change no flag at all, so it kills none."""
    if name[0] == "f":
        pair = (0, ALL_FLAGS) if name in _X87_FLAG_WRITERS else (ALL_FLAGS, 0) if name.startswith("fcmov") \
            else (0, 0)
    else:
        reads, writes = _pair_of(eflags, name)
        if name in ("rcl", "rcr"):
            reads |= 1  # CF, rotated in
        pair = (reads, 0 if op_str.endswith("cl") else writes)
    return _PAIRS.setdefault(pair, pair)


def _pair_of(eflags: int, mnemonic: str) -> tuple[int, int]:
    """(flags read, flags written) by an instruction named ``mnemonic`` whose capstone eflags
    are ``eflags``."""
    reads = sum(1 << k for k, bit in enumerate(_READ) if eflags & bit)
    writes = sum(1 << k for k, bits in enumerate(_WRITE) if eflags & bits)
    if not eflags and mnemonic.split()[-1].startswith(_READERS) and mnemonic != "jmp":
        reads = ALL_FLAGS
    if mnemonic in _WRITE_ALL:
        writes = ALL_FLAGS
    pair = (reads, writes)
    return _PAIRS.setdefault(pair, pair)


def _vector_source(ins: capstone.CsInsn) -> bool:
    """Whether an operand after the first is an MMX, SSE, AVX or mask register."""
    return any(op.type == csx86.X86_OP_REG and ins.reg_name(op.reg).startswith(_VECTOR_REGISTERS)
               for op in ins.operands[1:])


_VECTOR_REGISTERS = ("xmm", "ymm", "zmm", "mm", "k")


def vector_indexed(ins: Instruction) -> bool:
    """Whether ``ins`` addresses memory through a vector of indices (a gather or scatter:
    ``[rbx + ymm3*4]``), whose accesses the tools are not given."""
    return "mm" in ins.op_str and _VECTOR_INDEX.search(ins.op_str) is not None


_VECTOR_INDEX = re.compile(r"\[[^\]]*\b[xyz]mm\d+")  # a vector register inside the address


def instruction_of(ins: capstone.CsInsn) -> Instruction:
    """The IR instruction of one capstone instruction (with details); its flags' effect is
    noted in FLAG_EFFECTS."""
    raw = bytes(ins.bytes)
    if raw not in FLAG_EFFECTS:
        FLAG_EFFECTS[raw] = flag_effect(ins)
    numbers = _register_numbers()
    groups = set(ins.groups)
    name = ins.mnemonic.split()[-1]  # "rep movsb" -> "movsb", "notrack jmp" -> "jmp", "lock add" -> "add"
    is_call = _CALL in groups
    is_return = _RET in groups or _IRET in groups
    is_jump = _JUMP in groups
    is_syscall = name in ("syscall", "sysenter") or (name == "int" and ins.op_str == "0x80")
    target = None
    indirect = False
    accesses: list[Access] = []
    reads_rip = False
    for position, op in enumerate(ins.operands):
        if op.type == csx86.X86_OP_IMM and (is_call or is_jump):
            target = op.imm & (1 << 64) - 1
        elif op.type in (csx86.X86_OP_REG, csx86.X86_OP_MEM) and (is_call or is_jump):
            indirect = True
        if op.type != csx86.X86_OP_MEM:
            continue
        base = numbers.get(op.mem.base) if op.mem.base else None
        index = numbers.get(op.mem.index) if op.mem.index else None
        disp = op.mem.disp
        if base == RIP:
            reads_rip = True
            disp = (ins.address + ins.size + disp) & (1 << 64) - 1
        if name in _NO_ACCESS:
            continue
        if op.mem.index and index is None:
            # A gather's or scatter's vector of indices (VSIB): one access per element the
            # mask lets through, at addresses a general register does not give; not
            # described (the report names these instructions: vector_indexed).
            continue
        shift = {1: 0, 2: 1, 4: 2, 8: 3}.get(op.mem.scale, 0)
        loads = bool(op.access & capstone.CS_AC_READ or not op.access)
        stores = bool(op.access & capstone.CS_AC_WRITE)
        if not stores and position == 0 and (name == "movnti" or _vector_source(ins)):
            # Capstone marks the memory destination of most SSE and AVX stores (movups,
            # movq, movhps, pextrw, vmovdqu, vextracti128, masked moves...) read, not
            # written. A memory first operand with a vector or mask register after it is
            # a store's destination, written only: no vector instruction computes into
            # memory.
            loads, stores = False, True
        for is_store in (False,) * loads + (True,) * stores:
            accesses.append(Access(is_store, op.size, base if base is not None else -1, disp, index, shift,
                                   segment=_segment(op.mem.segment)))
    accesses.extend(_stack_accesses(name, ins, is_call, is_return))
    # An instruction reads what it reads before it writes (``movs``: [rsi] then [rdi], in
    # capstone's order the other way round; ``pop [mem]``: the stack, then the operand).
    # ``cmps`` reads [rdi] before [rsi], as QEMU and Valgrind do (capstone names [rsi] first).
    accesses.sort(key=lambda access: (access.is_store, access.base != RDI))
    cond = CONDITIONAL if is_jump and (name.startswith("j") and name != "jmp" or name in _CONDITIONAL_JUMPS) else 14
    return Instruction(
        address=ins.address, size=ins.size, raw=raw, thumb=False, mnemonic=ins.mnemonic,
        op_str=ins.op_str, name=name, cond=cond, accesses=tuple(accesses),
        is_branch=is_jump or is_call or is_return, is_call=is_call, is_return=is_return,
        is_indirect=indirect or is_return, branch_target=target, reads_pc=reads_rip,
        writes_pc=is_jump or is_call or is_return, is_syscall=is_syscall,
    )


def _stack_accesses(name: str, ins: capstone.CsInsn, is_call: bool, is_return: bool) -> list[Access]:
    """The stack slots an instruction reads or writes without naming them."""
    if is_call:
        return [Access(True, 8, RSP, -8)]
    if is_return and name.startswith("ret"):
        return [Access(False, 8, RSP, 0)]
    if name == "push" or name == "pushfq":
        size = ins.operands[0].size if ins.operands else 8
        return [Access(True, size, RSP, -size)]
    if name == "pop" or name == "popfq":
        size = ins.operands[0].size if ins.operands else 8
        return [Access(False, size, RSP, 0)]
    if name == "leave":
        return [Access(False, 8, RBP, 0)]
    return []


def rip_operand(ins: Instruction) -> int | None:
    """The address ``ins``'s ``[rip + disp]`` operand names (its text, as capstone writes it),
    or None where it names none."""
    text = ins.op_str.partition("[")[2].partition("]")[0].replace(" ", "")
    if not text.startswith("rip") or not all(c in "+-0123456789abcdefx" for c in text[3:]):
        return None
    return (ins.end + (int(text[3:], 16) if len(text) > 3 else 0)) & (1 << 64) - 1


def immediate_operand(ins: Instruction) -> int | None:
    """The immediate that is ``ins``'s last operand (its text), or None where that is none."""
    last = ins.op_str.rpartition(",")[2].strip()
    try:
        return int(last, 0) & (1 << 64) - 1
    except ValueError:
        return None


def decode_one(md: capstone.Cs, code: bytes, address: int) -> Instruction | None:
    """The instruction at the start of ``code``, or None where the bytes are no instruction."""
    for ins in md.disasm(code[:15], address, 1):
        return instruction_of(ins)
    return None


def decode_measured(md: capstone.Cs, raw: bytes, address: int, mnemonic: str, op_str: str,
                    known: dict[bytes, Instruction]) -> Instruction:
    """The instruction ``raw`` at ``address``, which capstone's plain decoding measured and
    named (``mnemonic``, ``op_str``), as the lift decodes: an encoding in ``known`` (the
    instructions decoded so far whose facts do not depend on their address) shares its
    facts, as most of a big program's instructions repeat one met before (``push rbp``,
    ``mov rdi, rbx``, ...); a direct branch's are read from its bytes; the others' from
    capstone's details, about ten times its plain decoding."""
    same = known.get(raw)
    if same is not None:
        return _moved(same, address)
    branch = direct_branch(raw, address, mnemonic, op_str)
    if branch is not None:
        return branch
    decoded = instruction_of(next(md.disasm(raw, address, 1)))
    # A direct branch names its target, an operand read from RIP an absolute address,
    # xbegin its abort address: those facts are the address's own.
    if not decoded.reads_pc and decoded.branch_target is None and decoded.name != "xbegin":
        known[raw] = decoded
    return decoded


# The direct branches whose facts their bytes give: (opcode bytes after an optional
# ``notrack``/``bnd`` prefix) -> (displacement bytes, kind). Two thirds of a big program's
# distinct encodings are these (a ``call rel32`` is distinct at every site), and capstone's
# details, which the other instructions need, cost ten times its plain decoding.
_DIRECT = {b"\xe8": (4, "call"), b"\xe9": (4, "jmp"), b"\xeb": (1, "jmp"),
           **{bytes((0x70 + cc,)): (1, "jcc") for cc in range(16)},
           **{bytes((0x0F, 0x80 + cc)): (4, "jcc") for cc in range(16)}}
_BRANCH_PREFIXES = (0x3E, 0xF2)  # notrack, bnd
# A direct call's one access, the return address's slot (shared: Access is frozen).
_CALL_ACCESSES = (Access(True, 8, RSP, -8),)


def branch_form(raw: bytes) -> tuple[str, int, int] | None:
    """("call" | "jmp" | "jcc", condition, displacement bytes) if ``raw`` is one whole direct
    branch with a 32- or 8-bit displacement (the condition: a ``jcc``'s low opcode nibble,
    else 0); else None."""
    start = 1 if raw[:1] and raw[0] in _BRANCH_PREFIXES else 0
    form = _DIRECT.get(raw[start:len(raw) - 4]) or _DIRECT.get(raw[start:len(raw) - 1])
    if form is None or len(raw) != start + (2 if raw[start] == 0x0F else 1) + form[0]:
        return None
    return form[1], raw[len(raw) - form[0] - 1] & 0xF if form[1] == "jcc" else 0, form[0]


def direct_branch(raw: bytes, address: int, mnemonic: str, op_str: str) -> Instruction | None:
    """The facts of ``raw`` (one whole instruction at ``address``, as capstone's plain decoding
    named it) if it is a direct call, jump or conditional jump with a 32- or 8-bit
    displacement (``branch_form``), as ``instruction_of`` gives them; else None."""
    form = branch_form(raw)
    if form is None:
        return None
    kind, _, width = form
    displacement = int.from_bytes(raw[len(raw) - width:], "little", signed=True)
    target = (address + len(raw) + displacement) & (1 << 64) - 1
    is_call = kind == "call"
    # The strings capstone gives are new at every site: the same ones are kept once (a
    # large program has millions of branches, to far fewer targets).
    mnemonic = intern(mnemonic)
    return Instruction(
        address=address, size=len(raw), raw=raw, thumb=False, mnemonic=mnemonic, op_str=intern(op_str),
        name=intern(mnemonic.split()[-1]), cond=CONDITIONAL if kind == "jcc" else 14,
        accesses=_CALL_ACCESSES if is_call else (), is_branch=True, is_call=is_call,
        is_return=False, is_indirect=False, branch_target=target, reads_pc=False, writes_pc=True,
        is_syscall=False,
    )


def _moved(ins: Instruction, address: int) -> Instruction:
    """``ins``, whose facts do not depend on where it is, at ``address`` (its strings, bytes
    and accesses shared)."""
    return Instruction(address=address, size=ins.size, raw=ins.raw, thumb=False, mnemonic=ins.mnemonic,
                       op_str=ins.op_str, name=ins.name, cond=ins.cond, accesses=ins.accesses,
                       is_branch=ins.is_branch, is_call=ins.is_call, is_return=ins.is_return,
                       is_indirect=ins.is_indirect, writes_pc=ins.writes_pc, is_syscall=ins.is_syscall)

"""Facts of common A32/T32 instructions read from capstone's text, without its detail mode.

Capstone's detail objects cost most of the decoding time in Python, while the text
(``ldr r3, [r1, #4]!``) of the frequent memory instructions and direct branches says
everything needed. ``quick_facts`` handles those forms and returns None for anything
else (anything naming PC, odd addressing), which then goes through capstone's details.
"""

from __future__ import annotations

import re

from ...ir.model import Access

REG = {f"r{i}": i for i in range(13)}
REG.update({"sb": 9, "sl": 10, "fp": 11, "ip": 12, "sp": 13, "lr": 14})
CONDS = {"eq", "ne", "hs", "cs", "lo", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al"}

SINGLE = {"ldr": (4, False), "ldrb": (1, False), "ldrsb": (1, False), "ldrh": (2, False), "ldrsh": (2, False),
          "str": (4, True), "strb": (1, True), "strh": (2, True), "ldrex": (4, False), "strex": (4, True)}
PAIR = {"ldrd": False, "strd": True}
MULTI = {"ldm": (False, "ia"), "ldmia": (False, "ia"), "ldmib": (False, "ib"), "ldmda": (False, "da"),
         "ldmdb": (False, "db"), "stm": (True, "ia"), "stmia": (True, "ia"), "stmib": (True, "ib"),
         "stmda": (True, "da"), "stmdb": (True, "db")}
VSINGLE = {"vldr": False, "vstr": True}
VMULTI = {"vldmia": (False, "ia"), "vldmdb": (False, "db"), "vstmia": (True, "ia"), "vstmdb": (True, "db")}
BRANCH = {"b", "bl", "blx", "cbz", "cbnz"}
KNOWN = set(SINGLE) | set(PAIR) | set(MULTI) | set(VSINGLE) | set(VMULTI) | BRANCH | {"push", "pop", "vpush", "vpop"}

_IMM = r"#-?(?:0x[0-9a-f]+|\d+)"
_MEM = re.compile(
    rf"^\[(\w+)(?:, ({_IMM}|-?\w+)(?:, (lsl|lsr|asr|ror) #(\d+))?)?\](!?)(?:, ({_IMM}|-?\w+))?$")
_SHIFTS = {"lsl": 0, "lsr": 1, "asr": 2, "ror": 3}
_LITERAL = re.compile(rf"^(\w+), \[pc(?:, ({_IMM}))?\]$")


def base_name(mnemonic: str) -> tuple[str, str]:
    """('ldr', 'eq') for 'ldreq.w'; the condition is '' when there is none."""
    m = mnemonic.split(".", 1)[0]
    if m == "trap":
        # Capstone's name for the UDF encodings LLVM's llvm.trap emits (A32 0xe7ffdefe,
        # T32 0xdefe): after a panic in every Rust program, __builtin_trap in clang's. It
        # does not fall through: what follows is often a literal pool.
        return "udf", ""
    if m in KNOWN:
        return m, ""
    if m[-2:] in CONDS and m[:-2] in KNOWN:
        return m[:-2], m[-2:]
    return m, ""


def with_condition(mnemonic: str, base: str) -> bool:
    """``mnemonic`` is ``base`` with at most a condition and a width suffix (``bxeq``, ``pop.w``)."""
    stem = mnemonic.split(".", 1)[0]
    return stem == base or (stem.startswith(base) and stem[len(base):] in CONDS)


def literal_operands(op_str: str) -> tuple[str, int] | None:
    """(register, signed offset) of ``rX, [pc, #imm]``: a load from a literal pool; None for other text."""
    m = _LITERAL.match(op_str)
    if m is None:
        return None
    return m.group(1), _imm(m.group(2)) if m.group(2) else 0


def _imm(text: str) -> int:
    return int(text[1:], 0)


def _mem(text: str, size: int, is_store: bool) -> list[Access] | None:
    m = _MEM.match(text)
    if m is None:
        return None
    base = REG.get(m.group(1))
    if base is None:
        return None
    if m.group(6) is not None:  # post-indexed: the address is the base
        return [Access(is_store, size, base, 0)]
    off = m.group(2)
    if off is None:
        return [Access(is_store, size, base, 0)]
    if off.startswith("#"):
        return [Access(is_store, size, base, _imm(off))]
    sub = off.startswith("-")
    index = REG.get(off.lstrip("-"))
    if index is None:
        return None
    shift_type = _SHIFTS[m.group(3)] if m.group(3) else 0
    shift = int(m.group(4)) if m.group(4) else 0
    return [Access(is_store, size, base, 0, index, shift, shift_type, sub)]


def _reglist(text: str) -> list[str] | None:
    if not (text.startswith("{") and text.endswith("}")):
        return None
    return [r.strip() for r in text[1:-1].split(",")]


def _expand(regs: list[str]) -> list[str] | None:
    """Register lists may hold ranges (d8-d11)."""
    out = []
    for r in regs:
        if "-" in r:
            lo, hi = r.split("-")
            if lo[0] != hi[0]:
                return None
            out.extend(f"{lo[0]}{i}" for i in range(int(lo[1:]), int(hi[1:]) + 1))
        else:
            out.append(r)
    return out


def quick_facts(name: str, op_str: str) -> list[Access] | None:
    """The accesses of a supported memory form, else None. (Direct branches, the
    other forms the text tells all of, are read by decode._direct_branch.)"""
    if name in SINGLE or name in VSINGLE:
        first, _, rest = op_str.partition(", ")
        if name in ("strex",):
            return None
        size, is_store = SINGLE[name] if name in SINGLE else ({"s": 4, "d": 8}.get(first[:1], 0), VSINGLE[name])
        if not size:
            return None
        return _mem(rest, size, is_store)
    if name in PAIR:
        parts = op_str.split(", ", 2)
        if len(parts) != 3:
            return None
        got = _mem(parts[2], 4, PAIR[name])
        if got is None:
            return None
        a = got[0]
        return [a, Access(a.is_store, 4, a.base, a.disp + 4, a.index, a.shift, a.shift_type, a.subtract)]
    if name in ("push", "pop", "vpush", "vpop"):
        regs = _reglist(op_str)
        regs = _expand(regs) if regs is not None else None
        if regs is None:
            return None
        is_store = name in ("push", "vpush")
        sizes = [{"s": 4, "d": 8}.get(r[:1], 4) if name[0] == "v" else 4 for r in regs]
        return multi_accesses(13, sizes, is_store, "db" if is_store else "ia")
    if name in MULTI or name in VMULTI:
        base_text, _, rest = op_str.partition(", ")
        base = REG.get(base_text.rstrip("!"))
        regs = _reglist(rest)
        regs = _expand(regs) if regs is not None else None
        if base is None or regs is None:
            return None
        is_store, mode = MULTI[name] if name in MULTI else VMULTI[name]
        sizes = [{"s": 4, "d": 8}.get(r[:1], 4) if name[0] == "v" else 4 for r in regs]
        return multi_accesses(base, sizes, is_store, mode)
    return None


def multi_accesses(base: int, sizes: list[int], is_store: bool, mode: str) -> list[Access]:
    """One access per register of a multi-register transfer, lowest address first."""
    total = sum(sizes)
    off = {"ia": 0, "ib": 4, "da": -total + 4, "db": -total}[mode]
    out = []
    for size in sizes:
        out.append(Access(is_store, size, base, off))
        off += size
    return out

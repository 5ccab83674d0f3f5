"""Recursive descent for binaries without symbols or mapping symbols (stripped).

Code is found by following control flow from known entry points: the ELF entry, the
init/fini functions and arrays, and code addresses the program computes PC-relatively
(``ldr rX, =offset; add rX, pc``, ``adr``) or stores in data with the Thumb bit set.
Call targets become procedure entries; a procedure spans from its entry to the next
one. Bytes never reached are left alone as data.
"""

from __future__ import annotations

import struct
from collections import deque

from elftools.elf.elffile import ELFFile

from ..arch.arm_decode import DecodeCache, decode_range, make_disassembler
from .exception_tables import handlers
from .model import Binary, Instruction, Procedure

CHUNK = 256


def _exec_ranges(elf: ELFFile) -> list[tuple[int, int]]:
    return sorted((s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections()
                  if s["sh_flags"] & 0x4 and s["sh_type"] == "SHT_PROGBITS" and s["sh_size"])


def _inside(ranges: list[tuple[int, int]], addr: int) -> bool:
    return any(lo <= addr < hi for lo, hi in ranges)


def _seeds(binary: Binary, elf: ELFFile, ranges: list[tuple[int, int]]) -> list[tuple[int, bool]]:
    """Entry points known without decoding: ELF entry, DT_INIT/DT_FINI, init/fini arrays."""
    seeds = [(binary.entry & ~1, bool(binary.entry & 1))]
    for sec in elf.iter_sections():
        if sec.name == ".plt" and sec["sh_size"]:  # PLT0 and the entries are A32 (lazy binding jumps to PLT0)
            seeds.append((sec["sh_addr"], False))
        if sec["sh_type"] in ("SHT_INIT_ARRAY", "SHT_FINI_ARRAY", "SHT_PREINIT_ARRAY"):
            data = sec.data()
            for (value,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4]):
                if _inside(ranges, value & ~1):
                    seeds.append((value & ~1, bool(value & 1)))
        if sec["sh_type"] == "SHT_DYNAMIC":
            for tag in sec.iter_tags():
                if tag.entry.d_tag in ("DT_INIT", "DT_FINI") and _inside(ranges, tag.entry.d_val & ~1):
                    seeds.append((tag.entry.d_val & ~1, bool(tag.entry.d_val & 1)))
        # Thumb code pointers in data (GOT, .data.rel.ro, vtables): odd words in code.
        if sec["sh_type"] == "SHT_PROGBITS" and sec["sh_flags"] & 0x2 and not sec["sh_flags"] & 0x4:
            data = sec.data()
            for (value,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4]):
                if value & 1 and _inside(ranges, value & ~1):
                    seeds.append((value & ~1, True))
    return seeds


def _split_it(got: list[Instruction]) -> list[Instruction]:
    """Drop a trailing IT block cut by the end of the chunk (decode it again from its IT)."""
    for k, ins in enumerate(got):
        if ins.is_it:
            mask = ins.raw[0] & 0xF
            count = 4 - ((mask & -mask).bit_length() - 1)
            if k + count >= len(got):
                return got[:k]
    return got


NORETURN = {"abort", "exit", "_exit", "__stack_chk_fail", "__assert_fail", "__libc_start_main", "longjmp",
            "siglongjmp", "__longjmp_chk", "pthread_exit", "__cxa_throw", "__cxa_rethrow", "_Unwind_Resume"}


def _noreturn_plt(elf: ELFFile) -> set[int]:
    """PLT entries of functions that do not return (names from the dynamic relocations)."""
    plt = elf.get_section_by_name(".plt")
    rel = elf.get_section_by_name(".rel.plt")
    if plt is None or rel is None:
        return set()
    dynsym = elf.get_section(rel["sh_link"])
    out = set()
    # PLT0 is 20 bytes, then one 12-byte entry per relocation, in order.
    for i, r in enumerate(rel.iter_relocations()):
        name = dynsym.get_symbol(r["r_info_sym"]).name
        if name in NORETURN:
            out.add(plt["sh_addr"] + 20 + 12 * i)
    return out


def discover(binary: Binary, elf: ELFFile) -> tuple[list[Procedure], dict[int, list[Instruction]]]:
    """Procedures and their instructions, found by recursive descent.

    Entries are collected to a fixpoint; each procedure is decoded from its entry
    without running into the next entry, so a fall-through after a call that does not
    return (into a literal pool, or the next function) cannot claim another
    procedure's bytes in the wrong instruction set.
    """
    ranges = _exec_ranges(elf)
    md = {True: make_disassembler(True), False: make_disassembler(False)}
    cache = DecodeCache()  # chunks overlap and descents repeat: most instructions are decoded again
    entries: dict[int, bool] = {}
    for addr, thumb in _seeds(binary, elf, ranges):
        if _inside(ranges, addr):
            entries.setdefault(addr, thumb)
    noreturn = _noreturn_plt(elf)
    unwound = handlers(elf, binary.read)
    memo: dict[int, tuple[int, dict[int, Instruction], dict[int, bool]]] = {}
    while True:
        found, new = _descend_all(binary, md, cache, ranges, entries, noreturn, memo)
        added = {a: t for a, t in new.items() if a not in entries}
        if not added:  # then the landing pads of the functions found, which only the unwinder enters
            added = {pad: entries[start] for start, (_, pads) in unwound.items() if start in entries
                     for pad in pads if pad not in entries and _inside(ranges, pad)}
        if not added:
            break
        entries.update(added)
    starts = sorted(entries)
    procs = []
    decoded: dict[int, list[Instruction]] = {}
    for start in starts:
        insns = sorted(found.get(start, {}).values(), key=lambda i: i.address)
        if not insns:
            continue
        last = insns[-1]
        name = "_start" if start == binary.entry & ~1 else f"sub_{start:x}"
        procs.append(Procedure(name=name, address=start, size=last.address + last.size - start,
                               thumb=entries[start]))
        decoded[start] = insns
    return procs, decoded


def _descend_all(binary: Binary, md: dict, cache: DecodeCache, ranges: list[tuple[int, int]], entries: dict[int, bool],
                 noreturn: set[int], memo: dict[int, tuple[int, dict[int, Instruction], dict[int, bool]]]
                 ) -> tuple[dict[int, dict[int, Instruction]], dict[int, bool]]:
    """Decode every procedure from its entry; returns its instructions and the call targets seen.

    A procedure's descent depends only on its entry, its instruction set and its limit (the
    next entry): ``memo`` keeps each one's result from the rounds before, so a round
    decodes only the new procedures and those a new entry now cuts short.
    """
    starts = sorted(entries)
    end = max(hi for _, hi in ranges)
    found: dict[int, dict[int, Instruction]] = {}
    calls: dict[int, bool] = {}
    for k, entry in enumerate(starts):
        limit = starts[k + 1] if k + 1 < len(starts) else end
        known = memo.get(entry)
        if known is None or known[0] != limit:
            known = memo[entry] = (limit, *_descend(binary, md, cache, ranges, entry, entries[entry], limit, noreturn))
        found[entry] = known[1]
        for target, thumb in known[2].items():
            calls.setdefault(target, thumb)
    return found, {a: t for a, t in calls.items() if _inside(ranges, a)}


def _descend(binary: Binary, md: dict, cache: DecodeCache, ranges: list[tuple[int, int]], entry: int,
             entry_thumb: bool, limit: int, noreturn: set[int]) -> tuple[dict[int, Instruction], dict[int, bool]]:
    """The instructions reachable from ``entry`` below ``limit``, and the calls and other
    procedures' addresses they name (target -> Thumb), in the order first seen."""
    mine: dict[int, Instruction] = {}
    calls: dict[int, bool] = {}
    work: deque[tuple[int, bool]] = deque([(entry, entry_thumb)])
    literal_regs: dict[int, int] = {}
    while work:
        cur, thumb = work.popleft()
        while entry <= cur < limit and cur not in mine and _inside(ranges, cur):
            got = _split_it(decode_range(md[thumb], binary.read(cur, min(CHUNK, limit - cur)), cur, thumb,
                                         cache)[0])
            if not got:
                break
            stop = False
            for ins in got:
                if ins.address in mine or ins.address + ins.size > limit:
                    stop = True
                    break
                mine[ins.address] = ins
                for target, tthumb, is_call in _targets(ins, thumb, literal_regs, binary, ranges):
                    if is_call or not entry <= target < limit:
                        calls.setdefault(target, tthumb)
                    else:
                        work.append((target, tthumb))
                if not ins.falls_through or (ins.is_call and ins.branch_target in noreturn):
                    stop = True
                    break
                cur = ins.address + ins.size
            if stop:
                break
    return mine, calls


def _targets(ins: Instruction, thumb: bool, literal_regs: dict[int, int], binary: Binary,
             ranges: list[tuple[int, int]]) -> list[tuple[int, bool, bool]]:
    """(address, thumb, is_entry) of places control can go from ``ins``, and code addresses it computes."""
    out = []
    if ins.branch_target is not None:
        target = ins.branch_target
        if ins.name == "blx":
            out.append((target & ~1, not thumb, True))
        elif ins.name == "bx":  # bx pc
            out.append((target, False, False))
        else:
            out.append((target, thumb, ins.is_call))
    # PC-relative code addresses (function pointers in PIE code): ldr rX, [pc, #n]; add rX, pc.
    if ins.accesses and ins.accesses[0].base == 15 and ins.name == "ldr" and ins.accesses[0].index is None:
        value = int.from_bytes(binary.read(ins.accesses[0].disp, 4), "little")
        literal_regs[_dest(ins)] = value
        if value & 1 and _inside(ranges, value & ~1):
            out.append((value & ~1, True, True))
    elif thumb and ins.size == 2 and (int.from_bytes(ins.raw, "little") & 0xFF78) == 0x4478:
        rd = _dest(ins)
        if rd in literal_regs:
            value = (literal_regs.pop(rd) + ins.address + 4) & 0xFFFFFFFF
            if value & 1 and _inside(ranges, value & ~1):
                out.append((value & ~1, True, True))
    return out


def _dest(ins: Instruction) -> int:
    first = ins.op_str.split(",", 1)[0].strip()
    regs = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12}
    return regs.get(first, -1)

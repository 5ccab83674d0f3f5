"""Jumps written over the original x86-64 code: where control may still arrive there.

Control reaches the original code only where something other than a copied instruction
sends it: a call or jump through a pointer (a procedure's entry, a switch's case, a code
address held in data), the unwinder's landing pads, the loader (the ELF entry). Each such
*entry* gets a ``jmp rel32`` (5 bytes) to its copy, written over the instructions that
start there. A patch must not cover another entry (control arriving there would run into
the middle of the jump), and must lie on the entry's own procedure's instructions (what
follows may be another's code or data) or on the padding after them (the ``nop`` and
``int3`` a compiler or linker aligns the next function with, mold's zeros). An entry with
room for 2 bytes only gets a ``jmp rel8`` to a trampoline (a ``jmp rel32``) in dead bytes
within its reach: of its own procedure, else of a neighbour none of whose code runs in
place. An entry with less room gets no patch and runs in place, uninstrumented, which the
report says.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

from ...ir.model import Binary, Procedure
from .decode import decode_one, shared_disassembler
from .relocate import JMP_SIZE, jump_bytes

_PADDING = frozenset({"nop", "int3"})
SHORT_JMP, SHORT_SIZE = 0xEB, 2  # jmp rel8


@dataclass(frozen=True)
class EntryPatch:
    """A jump at ``address`` to the copy of the instruction there: ``jmp rel32``, or where
    there is room for 2 bytes only, ``jmp rel8`` to a ``trampoline`` (a ``jmp rel32`` in
    dead bytes of the same procedure nearby, or of a neighbour's)."""

    address: int
    trampoline: int | None = None

    def spans(self) -> list[tuple[int, int]]:
        """The [start, end) of the original bytes it writes over."""
        if self.trampoline is None:
            return [(self.address, self.address + JMP_SIZE)]
        return [(self.address, self.address + SHORT_SIZE), (self.trampoline, self.trampoline + JMP_SIZE)]

    def writes(self, copy: int) -> list[tuple[int, bytes]]:
        """(address, bytes) of what goes over the original code."""
        if self.trampoline is None:
            return [(self.address, jump_bytes(self.address, copy))]
        return [(self.address, bytes((SHORT_JMP, (self.trampoline - self.address - 2) & 0xFF))),
                (self.trampoline, jump_bytes(self.trampoline, copy))]


def entries(binary: Binary, procs: list[Procedure], starts: set[int] | None = None) -> set[int]:
    """The addresses of copied instructions that control may still arrive at in the original
    (``starts``: those of every instruction of ``procs``, if the caller has them)."""
    if starts is None:
        starts = _starts(procs)
    # A PLT entry's address is a function pointer (a fixed-address program's canonical
    # address of an imported function), and the GOT of a lazily bound one points back
    # into it: each entry is one.
    arriving = {proc.address for proc in procs} | binary.code_pointers | binary.unwinder_entries | set(binary.plt)
    for cases in binary.switch_cases.values():
        arriving |= cases
    arriving.add(binary.entry)
    return arriving & starts


def _starts(procs: list[Procedure]) -> set[int]:
    """The address of every instruction of ``procs``."""
    return {ins.address for proc in procs for ins in proc.instructions()}


def return_sites(procs: list[Procedure]) -> set[int]:
    """The return sites of the calls in ``procs``: where a call that pushes the original
    return address comes back to."""
    return {ins.end for proc in procs for ins in proc.instructions() if ins.is_call}


def past_the_end(binary: Binary, procs: list[Procedure], sites: set[int]) -> set[int]:
    """The return sites of ``sites`` after which ``procs`` hold nothing but padding up to
    the end of the call's procedure, or nothing at all: the call never returns (a stripped
    program's descent runs on past a call of a function that raises into the ``nop`` that
    aligns the next function, which the function's symbol, where there is one, leaves out;
    with no padding, the next function starts right after the call)."""
    out: set[int] = set()
    if not sites:
        return out
    ordered = sorted(procs, key=lambda proc: proc.address)
    starts = [proc.address for proc in ordered]
    for site in sites:  # (the call's last byte is site - 1)
        k = bisect.bisect_right(starts, site - 1) - 1
        end = ordered[k].address + ordered[k].size if k >= 0 else 0
        if site <= end and padding(binary, site, end - site, end, frozenset()) >= end - site:
            out.add(site)
    return out


def padding(binary: Binary, at: int, wanted: int, limit: int | None, starts: set[int],
            functions: set[int] = frozenset()) -> int:
    """How many bytes from ``at`` on (up to ``wanted`` and more by the last one) are the
    padding between functions: ``nop`` and ``int3`` that no lifted instruction holds, and
    zero bytes that align the next function (``limit``, one of ``functions``: a procedure's
    start or a place a pointer in data names), as mold pads the sections of
    ``-ffunction-sections`` and Free Pascal its methods: a run of zeros from there to it,
    shorter than the function's alignment (so not data of its own, which would be aligned
    itself), that no lifted instruction holds."""
    md = shared_disassembler()
    covered = 0
    while covered < wanted and (limit is None or at + covered < limit) and at + covered not in starts:
        ins = decode_one(md, binary.read(at + covered, 15), at + covered)
        if ins is None or ins.name not in _PADDING:
            break
        covered += ins.size
    if covered < wanted and limit is not None and limit in functions:
        gap = limit - (at + covered)
        if 0 < gap < min(limit & -limit, _MOST_ALIGNED) and not any(binary.read(at + covered, gap)) \
                and starts.isdisjoint(range(at + covered, limit)):
            covered += gap
    return covered


_MOST_ALIGNED = 64  # a function's alignment, at most (a cache line)


def entry_patches(binary: Binary, procs: list[Procedure],
                  returns: set[int] = frozenset()) -> tuple[list[EntryPatch], list[int]]:
    """The patches of every entry of ``procs`` (and return site of ``returns``) that has
    room, and the entries and return sites that have none."""
    starts = _starts(procs)
    # Every lifted instruction's address: those of procs where every procedure is copied
    # (a set of a large program's every address is tens of MB: made once, not three times).
    lifted = starts if len(procs) == len(binary.procedures) else _starts(binary.procedures)
    # Zeros align what a pointer names as well as a procedure: a stripped program's short
    # functions reached only through pointers may lie inside one found procedure.
    functions = {proc.address for proc in binary.procedures} | binary.code_pointers
    wanted = entries(binary, procs, starts) | (returns & starts)
    ordered = sorted(wanted)
    patches, short = [], []
    narrow_left: list[int] = []  # short entries with room for a jmp rel8 but no trampoline in their procedure
    for proc in procs:
        instructions = list(proc.instructions())
        addresses = [ins.address for ins in instructions]
        narrow = []
        for index, ins in enumerate(instructions):
            if ins.address not in wanted:
                continue
            # Room: contiguous instructions of this procedure from the entry on, up to the
            # next entry, and the padding after its last one.
            following = bisect.bisect_right(ordered, ins.address)
            limit = ordered[following] if following < len(ordered) else None
            covered, k = 0, index
            while covered < JMP_SIZE and k < len(instructions) and addresses[k] == ins.address + covered \
                    and (limit is None or addresses[k] < limit):
                covered += instructions[k].size
                k += 1
            if covered < JMP_SIZE and (k == len(instructions) or addresses[k] != ins.address + covered):
                covered += padding(binary, ins.address + covered, JMP_SIZE - covered, limit, lifted, functions)
            room = min(covered, limit - ins.address) if limit is not None else covered
            if room >= JMP_SIZE:
                patches.append(EntryPatch(ins.address))
            elif room >= SHORT_SIZE:
                narrow.append(ins.address)
            else:
                short.append(ins.address)
        if narrow:
            placed = _trampolines(instructions, narrow, patches, wanted)
            if placed is None:  # the procedure keeps running in place from a short entry
                short.extend(narrow)
                narrow_left.extend(narrow)
            else:
                patches.extend(placed)
    if narrow_left:
        placed = _neighbours_trampolines(procs, narrow_left, short, patches, wanted)
        patches.extend(placed)
        done = {patch.address for patch in placed}
        short = [address for address in short if address not in done]
    return patches, short


def _neighbours_trampolines(procs: list[Procedure], narrow: list[int], short: list[int], patches: list[EntryPatch],
                            wanted: set[int]) -> list[EntryPatch]:
    """Trampolines for the 2-byte patches at ``narrow`` that their own procedure had no
    room for, in the dead bytes of the procedures around them, within a ``jmp rel8``'s
    reach: a function of a few bytes entered through a pointer (a callback, a computed
    goto's last label), packed between others with no padding (``-Os``, ``-O1``), has none
    of its own. A host is another procedure none of whose entries runs in place (``short``),
    so none of its original code runs; its dead bytes are those ``dead_runs`` gives with
    every patch made so far, and each trampoline placed, left out. Returns the patches
    placed; the sites that found no room stay short."""
    in_place = sorted(short)
    ordered = sorted(procs, key=lambda proc: proc.address)
    starts = [proc.address for proc in ordered]
    used = sorted([span for patch in patches for span in patch.spans()] + [(a, a + SHORT_SIZE) for a in narrow])
    # Host index -> its dead runs still free ([] for a procedure that cannot host): made for
    # the procedures within a site's reach only, as they are first looked at.
    runs: dict[int, list[tuple[int, int]]] = {}
    placed = []
    for site in sorted(narrow):
        first = max(bisect.bisect_right(starts, site + SHORT_SIZE - 128) - 1, 0)
        found = None
        for i in range(first, len(ordered)):
            proc = ordered[i]
            if proc.address > site + SHORT_SIZE + 127:
                break
            if proc.address <= site < proc.end:
                continue
            if i not in runs:
                # A host has no short entry: none of its instructions' addresses is in_place.
                lo = bisect.bisect_left(in_place, proc.address)
                can_host = lo == len(in_place) or in_place[lo] >= proc.end
                runs[i] = dead_runs(list(proc.instructions()), wanted, used, JMP_SIZE) if can_host else []
            found = _claim(runs[i], site)
            if found is not None:
                break
        if found is not None:
            placed.append(EntryPatch(site, found))
    return placed


def _claim(runs: list[tuple[int, int]], site: int) -> int | None:
    """Take a trampoline's room (JMP_SIZE bytes) for the 2-byte patch at ``site`` from the
    first of ``runs`` within a ``jmp rel8``'s reach, shortening that run; its address, or
    None where none is."""
    for index, (lo, hi) in enumerate(runs):
        if hi - lo >= JMP_SIZE and -128 <= lo - (site + SHORT_SIZE) <= 127:
            runs[index] = (lo + JMP_SIZE, hi)
            return lo
    return None


def dead_runs(instructions: list, stops: set[int], used: list[tuple[int, int]], least: int) -> list[tuple[int, int]]:
    """The [start, end) runs of at least ``least`` bytes of contiguous ``instructions`` (a
    procedure's, none of which runs in place) that nothing runs any more: no entry of
    ``stops`` starts one, no written span of ``used`` (sorted) covers a byte of one."""
    runs: list[tuple[int, int]] = []
    start = end = None
    if instructions:  # the written bytes near these instructions, as a set (one look a byte)
        lo_all, hi_all = instructions[0].address, instructions[-1].end
        # ``used`` is sorted and its spans are a jump's few bytes: only those starting near
        # these instructions are looked at (each of cargo's 50k procedures looked at every
        # one of its 150k spans: the rewrite took most of an hour).
        near = used[bisect.bisect_left(used, (lo_all - 16,)):bisect.bisect_left(used, (hi_all,))]
        covered = {a for lo, hi in near if lo < hi_all and hi > lo_all for a in range(lo, hi)}
    for ins in instructions:
        dead = ins.address not in stops and covered.isdisjoint(range(ins.address, ins.end))
        if dead and end == ins.address:
            end = ins.end
            continue
        if start is not None and end - start >= least:
            runs.append((start, end))
        start, end = (ins.address, ins.end) if dead else (None, None)
    if start is not None and end - start >= least:
        runs.append((start, end))
    return runs


def _trampolines(instructions: list, narrow: list[int], patches: list[EntryPatch],
                 wanted: set[int]) -> list[EntryPatch] | None:
    """Trampolines for the 2-byte patches at ``narrow``, in the procedure's dead bytes (its
    instructions, but no entry and nothing another patch covers) within a ``jmp rel8``'s
    reach; None where one finds none. Only in a procedure none of whose code runs in place:
    code that does would run into a trampoline where its instruction was."""
    # Only this procedure's patches (the last ones made) can cover its bytes.
    own = itertools.takewhile(lambda patch: patch.address >= instructions[0].address - 16, reversed(patches))
    used = sorted([span for patch in own for span in patch.spans()] + [(a, a + SHORT_SIZE) for a in narrow])
    runs = dead_runs(instructions, wanted, used, JMP_SIZE)
    placed = []
    for site in narrow:
        found = _claim(runs, site)
        if found is None:
            return None
        placed.append(EntryPatch(site, found))
    return placed

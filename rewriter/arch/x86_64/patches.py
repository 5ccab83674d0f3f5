"""Jumps written over the original x86-64 code: where control may still arrive there.

Control reaches the original code only where something other than a copied instruction
sends it: a call or jump through a pointer (a procedure's entry, a switch's case, a code
address held in data), the unwinder's landing pads, the loader (the ELF entry). Each such
*entry* gets a ``jmp rel32`` (5 bytes) to its copy, written over the instructions that
start there. A patch must not cover another entry (control arriving there would run into
the middle of the jump), and must lie on the entry's own procedure's instructions (what
follows may be another's code or data); an entry with less room gets no patch and runs in
place, uninstrumented, which the report says.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ...ir.model import Binary, Procedure
from .relocate import JMP_SIZE, jump_bytes


@dataclass(frozen=True)
class EntryPatch:
    """A jump at ``address`` to the copy of the instruction there."""

    address: int

    def bytes_to(self, copy: int) -> bytes:
        return jump_bytes(self.address, copy)


def entries(binary: Binary, procs: list[Procedure]) -> set[int]:
    """The addresses of copied instructions that control may still arrive at in the original."""
    starts = {ins.address for proc in procs for ins in proc.instructions()}
    arriving = {proc.address for proc in procs} | binary.code_pointers | binary.unwinder_entries
    for cases in binary.switch_cases.values():
        arriving |= cases
    arriving.add(binary.entry)
    return arriving & starts


def entry_patches(binary: Binary, procs: list[Procedure]) -> tuple[list[EntryPatch], list[int]]:
    """The patches of every entry of ``procs`` that has room, and the entries that have none."""
    wanted = entries(binary, procs)
    ordered = sorted(wanted)
    patches, short = [], []
    for proc in procs:
        instructions = list(proc.instructions())
        addresses = [ins.address for ins in instructions]
        for index, ins in enumerate(instructions):
            if ins.address not in wanted:
                continue
            # Room: contiguous instructions of this procedure from the entry on, up to the
            # next entry.
            following = bisect.bisect_right(ordered, ins.address)
            limit = ordered[following] if following < len(ordered) else None
            covered, k = 0, index
            while covered < JMP_SIZE and k < len(instructions) and addresses[k] == ins.address + covered \
                    and (limit is None or addresses[k] < limit):
                covered += instructions[k].size
                k += 1
            if covered >= JMP_SIZE and (limit is None or ins.address + JMP_SIZE <= limit):
                patches.append(EntryPatch(ins.address))
            else:
                short.append(ins.address)
    return patches, short

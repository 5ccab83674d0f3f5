"""Anvil's signal restorers in the program's text, and the unwind index that describes them
(decision 0202).

A fault raised by an instruction of the copy is given the original instruction's PC
before the program's handler runs (the runtime's ``to_original``), so that an
unwinder the handler runs finds the faulting function in the program's index
(``.ARM.exidx`` has rows for the original code alone). The handler then returns to one of
these restorers instead of the C library's: it calls ``anvil_fault_return``, which puts
the copy's PC back where the handler left the original's, and goes on to the restorer
the kernel gave. An unwinder passing through the handler's return address finds the
restorer's own row, which describes the kernel's signal frame as the C library's
restorer's row does (the saved registers ``pad`` bytes above SP), and goes on into the
faulting function.

The unwinder finds the rows of the main program through the dynamic linker's record of
it (``_dl_find_object``): its loaded segments and its PT_ARM_EXIDX segment. So the
restorers are placed in free bytes of the program's text (a segment it loaded), and
PT_ARM_EXIDX is pointed at a new index, in free bytes of the text too (its rows are 31-bit
offsets from the code, and the region lies 2 GiB and more away): the original rows, moved,
with rows for the restorers inserted.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable

from ...ir.exception_tables import index_rows, prel31

#: One restorer: nop (where its row starts: the unwinder looks up the return address less
#: 2), mov r0, sp; movs r1, #RT; ldr.w ip, literal; add ip, pc; blx ip (anvil_fault_return);
#: cbz r0, own; bx r0; own: movs r7, #SIGRETURN; svc 0; nop; literal.
RESTORER_BYTES = 28
#: Both restorers: for a handler with SA_SIGINFO (an rt frame) first, then without.
BYTES = 2 * RESTORER_BYTES
#: Where the saved registers (r0 first) are above SP in each frame: the siginfo (128
#: bytes), then the ucontext, whose sigcontext's r0 is 32 bytes in (glibc's restorers'
#: rows say the same).
_PAD = {True: 160, False: 32}
_SIGRETURN = {True: 173, False: 119}  # rt_sigreturn, sigreturn
_EXIDX_CANTUNWIND = 1
#: The restorers' two table entries after the rows (outside the rows PT_ARM_EXIDX names):
#: each its unwinding opcodes and an empty list of descriptors (a zero word), as model 1
#: entries are.
EXTAB_BYTES = 24


def entries(at: int) -> tuple[int, int]:
    """The restorers' addresses with the Thumb bit (rt frame, plain frame), placed at ``at``."""
    return at + 2 | 1, at + RESTORER_BYTES + 2 | 1


def code(at: int, fault_return: int) -> bytes:
    """Both restorers' bytes at ``at`` (4-aligned), calling ``fault_return`` (with its Thumb
    bit; the region moves with the image, so it is reached PC-relative)."""
    out = b""
    for k, rt in enumerate((True, False)):
        base = at + k * RESTORER_BYTES
        add_pc = base + 14  # what ``add ip, pc`` at base + 10 reads
        out += struct.pack("<7H", 0xBF00, 0x4668, 0x2100 | int(rt), 0xF8DF, 0xC000 | 16, 0x44FC, 0x47E0)
        out += struct.pack("<5H", 0xB100, 0x4700, 0x2700 | _SIGRETURN[rt], 0xDF00, 0xBF00)
        out += struct.pack("<I", (fault_return - add_pc) & 0xFFFFFFFF)
    assert len(out) == BYTES
    return out


def _to_prel31(target: int, place: int) -> int:
    return (target - place) & 0x7FFFFFFF


class Index:
    """The program's index table (``original``, at ``original_at``) as rows: (function,
    second word as it is or None, the table entry it names or None)."""

    def __init__(self, original: bytes, original_at: int) -> None:
        self.rows: list[tuple[int, int | None, int | None]] = []
        for k, (function, second) in enumerate(index_rows(original_at, original)):
            if second == _EXIDX_CANTUNWIND or second & 0x80000000:
                self.rows.append((function, second, None))
            else:
                self.rows.append((function, None, prel31(original_at + 8 * k + 4, second)))
        self.starts = [row[0] for row in self.rows]

    def fits(self, at: int) -> bool:
        """Whether the restorers may go at ``at`` (free bytes of the text): no function of the
        index starts among them, and the row they fall in describes its code without its
        function's start (cannot unwind, or unwinding opcodes in the row itself). After them
        that row goes on from their end, and a row's table entry with a personality
        routine's data reads its code's offsets from the row's start."""
        k = bisect.bisect_right(self.starts, at + BYTES - 1)
        if k and self.starts[k - 1] > at:
            return False  # a function starts among them
        return k == 0 or self.rows[k - 1][1] is not None

    def with_restorers(self, at: int) -> tuple[int, Callable[[int], bytes]]:
        """The new index for the restorers placed at ``at``: the original's rows but for any
        that start among the restorers, the restorers' rows, and after them the row that
        covered their bytes going on; then the restorers' two table entries. Its size, and
        its bytes as a function of the address it is placed at."""
        end = at + BYTES
        before = [row for row in self.rows if row[0] <= at]
        resume = before[-1][1:] if before else (_EXIDX_CANTUNWIND, None)
        kept = [row for row in self.rows if not at <= row[0] < end]
        extab = ("extab", True), ("extab", False)
        added = [(at, None, extab[0]), (at + RESTORER_BYTES, None, extab[1])]
        if end not in self.starts:
            added.append((end, *resume))
        table = sorted(kept + added, key=lambda row: row[0])

        def build(place: int) -> bytes:
            extab_at = place + 8 * len(table)
            words = []
            for n, (function, word, target) in enumerate(table):
                row = place + 8 * n
                if target == extab[0] or target == extab[1]:
                    target = extab_at + (0 if target == extab[0] else EXTAB_BYTES // 2)
                words += [_to_prel31(function, row), word if target is None else _to_prel31(target, row + 4)]
            for rt in (True, False):
                # Compact model 1: vsp += pad; pop {r0-r3}; pop {r4-r15}; finish; no descriptors.
                words += [0x81010000 | ((_PAD[rt] - 4) >> 2) << 8 | 0xB1, 0x0F8FFFB0, 0]
            return struct.pack(f"<{len(words)}I", *words)
        return 8 * len(table) + EXTAB_BYTES, build

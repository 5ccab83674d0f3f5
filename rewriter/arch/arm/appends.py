"""Record append routines: the shared code that puts a record (site id and run-time
arguments) into the ring, one copy per 4 KiB code page so that a site's BL stays in
the page (decisions 0011, 0012, 0022)."""


from __future__ import annotations

from collections.abc import Hashable
from functools import cache
from typing import NamedTuple

from ...emit.page_layout import PageCopies
from ..code import Code
from . import encode as enc
from .isa import IP, LR, T32
from .repeat_filter import t32_filter_miss

APPEND_PAIR = 21  # d21 holds the site id and the way back during a shared record append
APPEND = "append"
FILTERED_APPEND = "filtered-append"


class AppendRoutine(NamedTuple):
    """A shared record append (emit_append_routine); also its label."""

    kind: str  # APPEND
    words: int  # the record's words, site id included
    in_exclusive: bool  # called inside the program's LDREX/STREX window


class FilteredAppend(NamedTuple):
    """A filtered record site's shared miss path (emit_filtered_append); also its label."""

    kind: str  # FILTERED_APPEND
    depth: int  # the repeat filter's ways
    slot_bits: int  # log2 of its slots
    left: bool  # the record carries the key that left the slot
    words: int  # the record's words, site id included
    in_exclusive: bool  # called inside the program's LDREX/STREX window
    skip: int  # bytes of the site's hit counter, after the site id's word


#: The routines record sites call (labels in the code: the tuples sort by kind first).
Routine = AppendRoutine | FilteredAppend


# The communicator's {next free word, flush limit, writers} (runtime_stubs/common/anvil_comm.c).
RECORD_STATE = "anvil_rh_state"


RECORD_WRITERS = 8  # offset in the state of the number of appends under way (Linux)


RECORD_FLUSH = "anvil_rh_flush"


class AppendRoutines(PageCopies):
    """The shared append routines record sites call: the image's own (``routines``) and
    copies on the pages of the sites that call them (page_layout.PageCopies)."""

    def emit_copy(self, code: Code, routine: Hashable, label: Hashable) -> None:
        """A copy of the append routine ``routine`` labelled ``label``."""
        emit_append_routine(code, routine, label)  # type: ignore[arg-type]


def emit_filtered_append(code: Code, routine: FilteredAppend, label: Hashable) -> None:
    """The island of ``_filtered_append``'s routine: what a filtered record site does when
    its test found a new key (T32, Linux).

    Entered by BL with t32_filter_miss's registers, r1 = the key, ip and lr parked in
    d18 (or dead), lr = the site id's word (with the Thumb bit). The slot takes the key
    (r2 = the key that left), the record (site id, key[, left]) is appended
    (emit_append_routine's body), ip and lr come back from d18, and the code goes on
    past the word and the site's hit counter (``skip`` bytes). r0 and r1 (parked or dead
    at the site) hold the way back and the site id; flags untouched.
    """
    code.align(4)
    code.label(label)
    code.emit(t32_filter_miss(routine.slot_bits, routine.depth, routine.left))
    code.emit(enc.t32_ldr_neg(0, LR, 1) + enc.t32_add_imm(LR, LR, 4 + routine.skip))
    _append_body(code, routine.words, routine.in_exclusive)
    code.emit(enc.t32_vmov_from_d(1, 0, APPEND_PAIR) + enc.t32_vmov_from_d(IP, LR, 18) + enc.t32_bx(0))


def append_routine(words: int, in_exclusive: bool) -> AppendRoutine:
    """The shared routine appending a record of ``words`` words."""
    return AppendRoutine(APPEND, words, in_exclusive)


def emit_append_routine(code: Code, routine: Routine, label: Hashable | None = None) -> None:
    """The shared record append (T32, Linux) of ``append_routine(words, in_exclusive)``:
    r0 = site id, r1.. = the record's other words; clobbers r0, ip, lr and d21 (the site
    has parked r0-r3, ip and lr; d21 keeps the site id and the way back); flags untouched.

        d21 = (r0, lr); ip = &state {cursor, limit, writers}
        writers += 1                                           (an append is under way)
        retry: ldrex lr, [ip]; add lr, lr, #4*words            (reserve the words ...)
               strex r0, lr, [ip]; cbz r0, done; b retry       (... again if a handler came)
        r0 = site id; stmdb lr, {r0-rN}                        (write them: ours alone)
        writers -= 1
        if (limit - lr) < 0: call the flush routine             (past the limit)
        r0, lr = d21; bx lr

    The words are written only once reserved: a handler that appends between the LDREX
    and the STREX has made the STREX fail (its own STREX clears the monitor), so the
    reservation is made again after the handler's records, and no committed record is
    ever overwritten. The kernel keeps d21 across the handler (it saves the whole VFP
    bank in the signal frame). ``writers`` is non-zero while reserved words may not be
    written yet; a flush made by a handler meanwhile then leaves the ring alone
    (runtime_stubs/common/anvil_comm.c). A plain increment and decrement are enough: a
    handler gives back what it took before the code it interrupted goes on. Inside
    the program's own exclusive window (``in_exclusive``) a STREX of ours would make the
    program's fail each time round its loop: the reservation is a plain load and store
    there (not safe against a signal handler's record; docs/decisions/0010). The flush
    routine is called through the shared call stub, which saves the flags and keeps its
    own return address in d19; nothing here sets them.
    """

    if isinstance(routine, FilteredAppend):
        emit_filtered_append(code, routine, routine if label is None else label)
        return
    code.align(4)
    code.label(routine if label is None else label)
    _append_body(code, routine.words, routine.in_exclusive)
    T32.from_d(code, 0, LR, APPEND_PAIR)
    code.emit(enc.t32_bx(LR))


def _append_body(code: Code, words: int, in_exclusive: bool) -> None:
    """The record r0 (site id), r1.. into the ring (emit_append_routine); d21 = (r0, lr) as
    they came."""
    T32.to_d(code, APPEND_PAIR, 0, LR)
    T32.pc_address(code, IP, ("sym", RECORD_STATE))
    code.emit(_WRITERS_UP)
    if in_exclusive:
        code.emit(_reserve(words, exclusive=False))
    else:
        retry = ("record-retry", code.here())
        code.label(retry)
        code.emit(_reserve(words, exclusive=True))
        T32.branch(code, retry)
    code.emit(enc.t32_vmov_from_lane(0, APPEND_PAIR))
    code.emit(_write_record(words))
    T32.call(code, ("callstub", RECORD_FLUSH), True)


_WRITERS_UP = (enc.t32_ldr_imm(0, IP, RECORD_WRITERS) + enc.t32_add_imm(0, 0, 1)
               + enc.t32_str_imm(0, IP, RECORD_WRITERS))


@cache
def _reserve(words: int, exclusive: bool) -> bytes:
    """lr = state.cursor + 4 * ``words``, stored back: with LDREX/STREX, the STREX's status in
    r0 and ``cbz r0`` past the 4-byte B.W (back to the LDREX) that follows (CBZ at A goes to
    A + 4 + 2); or plainly."""
    if exclusive:
        return (enc.t32_ldrex(LR, IP) + enc.t32_add_imm(LR, LR, 4 * words) + enc.t32_strex(0, LR, IP)
                + enc.t32_cbz(0, 2))
    return enc.t32_ldr_imm(LR, IP, 0) + enc.t32_add_imm(LR, LR, 4 * words) + enc.t32_str_imm(LR, IP, 0)


@cache
def _write_record(words: int) -> bytes:
    """The record (r0 up) into the ``words`` reserved below lr; writers -= 1; the limit test:
    ldr r0, [ip, #4]; sub.w r0, r0, lr; lsr.w r0, r0, #31; cbz r0, past the 4-byte BL that follows."""
    store = enc.t32_str_neg(0, LR, 4) if words == 1 else enc.t32_stmdb(LR, list(range(words)))
    return b"".join([
        store, enc.t32_ldr_imm(0, IP, RECORD_WRITERS), enc.t32_add_imm(0, 0, -1),
        enc.t32_str_imm(0, IP, RECORD_WRITERS),
        enc.t32_ldr_imm(0, IP, 4), enc.t32_sub_reg(0, 0, LR), enc.t32_lsr_imm(0, 0, 31), enc.t32_cbz(0, 2),
    ])

"""Copy procedures into the new code region with their hooks placed inline.

Each original instruction becomes one of:

- a verbatim copy, when it does not depend on where it is (most instructions; in
  an IT block it gets an IT of its own, so hooks can sit between the instructions);
- a direct branch or call re-encoded to the relocated target, or through a veneer
  to original code that is not relocated;
- a rewrite of a PC-relative read that produces the same value as at the original
  address (literal loads become the constant they load; ``adr``/``add rX, pc``
  compute the original address);
- for computed jumps (jump tables, ``bx rN``, ``add pc, ...``, TBB/TBH): the jump
  target is computed as in the original and translated at run time by a
  per-procedure table from original to relocated addresses.

Returns keep working unchanged because calls from relocated code push relocated
return addresses; or, for programs that unwind their stack (C++ exceptions), calls push
the original return address and the original return site gets a jump to its copy
(``RelocationContext.original_returns``, decision 0013).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ...emit.page_layout import M_PAGE, PageCopies
from ...errors import AnvilError
from ...ir.flow import exclusive_windows
from ...ir.inline_data import inline_data_size
from ...ir.liveness import DeadRegisters
from ...ir.model import Accumulation, Hook, Instruction, Procedure
from ..code import Code, Resolver
from . import encode as enc
from .appends import AppendRoutines
from .case_helpers import CaseHelper, CaseTable, return_reader
from .counters import emit_increment, emit_sum_add, emit_sum_reset, emit_sum_store, emit_sum_store_free
from .decode import REG_NUMBERS, DecodeCache, details_of
from .exclusives import emit_exclusive, emulated_exclusives
from .hooks import HookContext, emit_call, emit_hits, first_and_last, shared_key
from .isa import A32, AL, IP, ISA, LR, PC, SP, T32, Scratch
from .shared_calls import SharedCalls

ASR = 2  # shift type of data-processing register operands
CONDITIONAL_REACH = (1 << 20) - 8  # bytes of a copy within which any T32 B<cond>.W reaches
MAX_BRANCH_COPY = 6  # bytes of a branch's copy at most (a far conditional: a skip over a B.W)
# Firmware loops whose copy is at most this long start on a new M-profile page where they would
# straddle one (decision 0070): the padding costs on average half such a loop times the
# chance it straddles (256: 0.7 % of sort's cachesim image; 512 and 1024: 4 % and 7 %).
LOOP_KEPT_IN_A_PAGE = 256
LEAVING_TARGET = 18  # d18: a computed jump's original target, for the stub that leaves a summing procedure

class Unsupported(AnvilError):
    """An instruction the relocator cannot move (its procedure stays uninstrumented)."""


@dataclass
class RelocationContext:
    """What the relocator needs to know about the rest of the image."""

    relocated: set[int]                      # original addresses of relocated instructions
    mode_at: Callable[[int], bool]           # is the original code at this address Thumb?
    read: Callable[[int, int], bytes]        # read original bytes
    function_label: Callable[[str], Hashable]
    string_label: Callable[[str], Hashable]
    counter_label: Callable[[str, int], Hashable]
    xlate_label: Hashable
    scratch: Scratch
    call_stubs: set[str] = field(default_factory=set)
    # A Go program's loop heads where the copy asks whether Go wants the goroutine stopped
    # (go_poll; decision 0134).
    go_polls: frozenset[int] = frozenset()
    # (original target, its instruction set, the branch's, for calls only) -> veneer label
    veneers: dict[tuple[int, bool, bool, bool], Hashable] = field(default_factory=dict)
    # Original code whose calls may clobber IP on the way: PLT entries, which clobber it
    # themselves. A call to other code left in place keeps IP: hand-written code may pass
    # a value in it (CLISP's bignum loops call a multiply helper with an operand in IP).
    ip_clobbered_at: frozenset[int] = frozenset()
    xlate_tables: list[tuple[Procedure, Hashable]] = field(default_factory=list)
    # (function, Thumb) -> what it reads at its return address (case_helpers.return_reader).
    return_readers: dict[tuple[int, bool], CaseHelper | None] = field(default_factory=dict)
    # The encodings reads_return_address has decoded (decode.DecodeCache): callees start
    # alike (push, mov, sub sp), and decoding one anew is several times a cached one.
    return_reader_decoding: DecodeCache = field(default_factory=DecodeCache)
    # (function, Thumb) -> the size of the data it reads after its call (ir.inline_data).
    inline_data_readers: dict[tuple[int, bool], int] = field(default_factory=dict)
    # Original address -> label a direct branch goes to instead (an edge counter's trampoline).
    redirect: dict[int, Hashable] = field(default_factory=dict)
    # Procedures an exception handler may run (firmware, ir.flow.interrupt_code): their
    # counters add with LDREX/STREX, so a handler running the same block mid-update counts too.
    interrupt_code: set[int] = field(default_factory=set)
    # Firmware: some procedure of interrupt_code has hooks, so exception handlers count
    # filter hits too (HookContext.handlers_count).
    handlers_count: bool = True
    # Cortex-M: a call site runs with PRIMASK set, so a handler's own call cannot come in
    # the middle of it (analysis routines, their stack and the filter's counts are not reentrant).
    mask_interrupts: bool = False
    # Threads run the same code at once (Linux programs that start threads): every procedure's
    # counters add with LDREX/STREX, as interrupt code's do.
    threads: bool = False
    # Linux: the communicator's routines (the flush, the record routines A32 sites call)
    # hold the analysis lock even where no thread start was found: a program's threads may
    # be started in a way the rewrite does not see, and two threads in them at once would
    # share the hook stack. Their calls are rare in T32 code (decision 0087 counts the cost).
    lock_communicator: bool = False
    # Linux: a signal that arrives while its thread is inside the analysis is held back
    # by the runtime, and a call stub's way out unblocks it (decision 0143).
    held_signals: bool = False
    atomic: bool = False  # for the procedure being emitted: interrupt code, no exclusive window of its own
    windows: bool = False  # for the procedure being emitted: it has an LDREX/STREX window of its own
    # Threads and d16-d31 free: a procedure's exclusive pairs run as compare-and-swap where
    # they can (arch/arm/exclusives.py), and its windows are then no longer special.
    emulate_exclusives: bool = False
    # The record append routines and their page-local copies (Linux T32 records; appends.AppendRoutines).
    appends: AppendRoutines = field(default_factory=AppendRoutines)
    # Calls leave the original return address in LR (its place, where it is relocated
    # code, is patched to jump to the copy: emit/patches.py), rather than the relocated one.
    original_returns: bool = False
    # With original_returns: return sites whose calls leave the relocated return address
    # all the same (their jump over the original code found no room: inhost._fall_back).
    relocated_returns: set[int] = field(default_factory=set)
    # Without: return sites whose calls leave the original one all the same (calls of
    # functions that look at their caller's address: ir/caller_sensitive.py).
    original_return_sites: frozenset[int] = frozenset()
    # For the procedure being emitted: its blocks that reset its running sum (decision 0014)
    # -> the label past the reset, where its own direct branches go.
    inside: dict[int, Hashable] = field(default_factory=dict)
    # For the procedure being emitted: (counter array, index) -> the register its filter
    # sites count hits in (decision 0019).
    hit_registers: dict[tuple[str, int], int] = field(default_factory=dict)
    # For the procedure being emitted, with d16-d31 free: instruction address -> the
    # registers dead before it (ir/liveness.py), which its hooks need not park (decision 0020).
    dead: DeadRegisters | dict[int, int] = field(default_factory=dict)
    # A check of the liveness analysis (ANVIL_POISON_DEAD): every register it calls dead is
    # overwritten before every instruction, so that a program relying on one misbehaves.
    poison_dead: bool = False
    loop_spans: list[tuple[int, int]] = field(default_factory=list)  # the current procedure's (_loop_spans)
    # Starts of the current procedure's loops whose copy begins on a new page (decision 0070).
    loops_on_new_page: set[int] = field(default_factory=set)
    # TBB/TBH address -> entries of its table, where a bounds check before it says
    # (Binary.table_sizes): such a switch is relocated with a table of its own.
    table_sizes: dict[int, int] = field(default_factory=dict)
    # Thumb-1 switches (Binary.case_tables): the helper's call -> its table. The copy calls
    # the helper with a table of its own after it (_case_helper_call).
    case_tables: dict[int, CaseTable] = field(default_factory=dict)
    # Words of the original code the dynamic linker rewrites at load time (Binary.text_relocations):
    # a literal there is loaded from where it is, not folded into a constant.
    text_relocations: set[int] = field(default_factory=set)
    # The start of every copy is kept inside a page (Linux programs under qemu-arm; page_layout.py).
    inside_pages: bool = False
    # Firmware: call sites keep only what differs between them and call shared code for
    # the rest (shared_calls.py, decision 0029); None: every site is written out inline.
    shared_calls: SharedCalls | None = None
    # For the procedure being emitted: its copy is too large for T32 conditional branches.
    far_conditionals: bool = False

    def saved(self) -> Callable[[], None]:
        """A function putting back what emitting a procedure changes here, for emitting it
        again elsewhere (page_layout). Stubs and veneers are named by what they reach, so
        the second emission asks for the same ones."""
        tables = len(self.xlate_tables)
        restores = [pages.saved() for pages in self.page_copies()]

        def restore() -> None:
            del self.xlate_tables[tables:]
            for put_back in restores:
                put_back()
        return restore

    def page_copies(self) -> list[PageCopies]:
        """The shared routines that sites call through copies on their own pages."""
        return [self.appends] if self.shared_calls is None else [self.appends, self.shared_calls]

    def place_page_copies(self, code: Code) -> None:
        """Nothing falls through to here: the page's copies of the shared routines its sites call."""
        for pages in self.page_copies():
            pages.place(code)


INSTRUCTION_COPY = "ins"  # the tag of ins_label's labels


def ins_label(addr: int) -> tuple[str, int]:
    """The label of an original instruction's relocated copy (its hooks included)."""
    return (INSTRUCTION_COPY, addr)


def instruction_copies(labels: dict) -> dict[int, int]:
    """Original instruction address -> its copy's address, from a code's ``labels``."""
    return {key[1]: at for key, at in labels.items() if key.__class__ is tuple and key[0] == INSTRUCTION_COPY}


def relocate_procedure(proc: Procedure, code: Code, ctx: RelocationContext) -> None:
    """Emit ``proc`` with its hooks into ``code``.

    A T32 conditional branch reaches +-1 MiB: a copy that large (a big interpreter loop
    under cachesim) is emitted again with its conditional jumps written as a skip over a
    B.W, which reaches +-16 MiB.
    """
    mark, restore, start = code.mark(), ctx.saved(), code.size
    ctx.loops_on_new_page = set()
    _relocate_keeping_loops_in_pages(proc, code, ctx, mark, restore)
    if code.size - start < CONDITIONAL_REACH or ctx.far_conditionals:
        return
    code.rollback(mark)
    restore()
    ctx.far_conditionals = True
    ctx.loops_on_new_page = set()
    try:
        _relocate_keeping_loops_in_pages(proc, code, ctx, mark, restore)
    finally:
        ctx.far_conditionals = False


def _relocate_keeping_loops_in_pages(proc: Procedure, code: Code, ctx: RelocationContext, mark: tuple,
                                     restore: Callable[[], None]) -> None:
    """``_relocate_procedure``; on firmware, again while the copy of one of its loops without
    calls (``ctx.loop_spans``), at most LOOP_KEPT_IN_A_PAGE long, straddles a boundary of QEMU's 1 KiB
    M-profile pages, that loop now starting on the next page (decision 0070): QEMU
    chains no jump to another page, so such a loop looked up a block or two each time
    round. The first such loop first: an outer loop that fits keeps its inner ones in too."""
    while True:
        _relocate_procedure(proc, code, ctx)
        if ctx.shared_calls is None:
            return
        straddling = _straddling_loop(proc, code, ctx)
        if straddling is None:
            return
        code.rollback(mark)
        restore()
        ctx.loops_on_new_page.add(straddling)


def _straddling_loop(proc: Procedure, code: Code, ctx: RelocationContext) -> int | None:
    """The lowest start of a loop in ``ctx.loop_spans`` whose copy crosses an M-profile page
    boundary though it is at most LOOP_KEPT_IN_A_PAGE long, and which is not yet moved to a new page."""
    branch_at = {ins.end: ins.address for ins in proc.instructions()}
    for start, end in sorted(ctx.loop_spans):
        first = code.labels.get(ins_label(start))
        last = code.labels.get(ins_label(branch_at[end]))
        if first is None or last is None or start in ctx.loops_on_new_page:
            continue
        after = last + MAX_BRANCH_COPY
        if after - first <= LOOP_KEPT_IN_A_PAGE and first // M_PAGE != (after - 1) // M_PAGE:
            return start
    return None


def _relocate_procedure(proc: Procedure, code: Code, ctx: RelocationContext) -> None:
    code.align(4)
    # Inside the program's own LDREX/STREX window an exclusive of ours would make its STREX
    # fail each time round its loop: such a procedure's counters add plainly, unless its
    # pairs run as compare-and-swap (threads: arch/arm/exclusives.py).
    windows = proc.analysis(exclusive_windows)
    emulated = emulated_exclusives(proc, windows, ctx.emulate_exclusives)
    ctx.windows = bool(windows) and not emulated
    ctx.loop_spans = _loop_spans(proc) if ctx.shared_calls is not None else []
    ctx.atomic = (ctx.threads or proc.address in ctx.interrupt_code) and not ctx.windows
    needs_table = False
    trampolines = []
    sums = proc.accumulation
    ctx.inside = {proc.blocks[i].address: ("inside", proc.blocks[i].address) for i in sums.resets} if sums else {}
    ctx.hit_registers = {slot: register for register, slot in sums.sums.items()} if sums else {}
    # Dead registers: where hooks park registers in d16-d31 and where compact counter sites
    # may leave LR (decision 0035), or to poison them (a test).
    # A32 procedures: where the flags are dead, filter tests branch on flags of their own.
    # (Kept on the procedure: an emission again, on a new page or by another tool, asks too.)
    ctx.dead = (proc.analysis(DeadRegisters) if ctx.scratch.vfp or ctx.poison_dead or ctx.shared_calls is not None
                or not proc.thumb else {})
    labels = code.labels  # the same dict all along (Code.rebase and rollback change it in place)
    new_page = ctx.loops_on_new_page
    below = reads_below_sp(proc)
    for bi, block in enumerate(proc.blocks):
        insns = block.instructions
        last = insns[-1]
        for k, ins in enumerate(insns):
            # This loop runs for every instruction relocated: the common steps are inline
            # (Code.label, ins_label, ISA.for_mode, and _relocate's copy of what involves no PC).
            address = ins.address
            if ins.thumb:
                isa = T32
            else:
                isa = A32
                code.align(4, b"\x00\xbf")  # A32 code is word aligned (after Thumb code: T32 nops)
            if new_page and address in new_page:
                _to_new_page(code)
            labels.setdefault((INSTRUCTION_COPY, address), code.base + code.size)  # (one lookup: Code.label)
            if ctx.poison_dead:
                _poison(isa, code, ctx.dead.get(address, 0), ctx.dead.flags_dead(address))
            if k == 0 and ctx.go_polls and address in ctx.go_polls and not ins.thumb:
                go_poll(code, address)
            if k == 0 and sums and bi in sums.resets:
                emit_sum_reset(code, sums.sums)
                code.label(ctx.inside[block.address])
            # The program reads stack below SP here or further on in the block (what it
            # left there when it released it): what the site pushes goes below that.
            stepped = _step_down(isa, code, below[address], ctx.scratch) if below and address in below else None
            if k == 0:
                # (most blocks have no hooks of their own, and only entry blocks entry calls)
                entry_calls = proc.hooks if bi == 0 else None
                if entry_calls:
                    _calls(isa, code, [h for h in entry_calls if h.setup], ins, None, block.size, ctx, AL)
                for counter, index, amount in block.counter_increments:
                    _increment(isa, code, counter, index, amount, ctx, ctx.dead.get(address, 0))
                if sums:
                    _sum_at_start(code, sums, bi, ctx, ctx.dead.get(address, 0))
                if entry_calls:
                    _calls(isa, code, [h for h in entry_calls if not h.setup], ins, None, block.size, ctx, AL)
                if block.hooks:
                    _calls(isa, code, block.hooks, ins, None, block.size, ctx, AL)
            # Sums added by this instruction's filter sites are stored after them, before it may leave.
            store_after = _last_access_hook(ins) if sums and address in sums.flush_before else None
            if store_after == -1:
                emit_sum_store(code, sums.sums, ctx.counter_label, ctx.dead.get(address, 0))
            if ins.hooks:
                for h, hook in enumerate(ins.hooks):
                    if hook.prototype.per_access:
                        _access_calls(isa, code, hook, ins, block.size, ctx)
                    else:
                        _calls(isa, code, [hook], ins, None, block.size, ctx, ins.cond)
                    if h == store_after:
                        emit_sum_store(code, sums.sums, ctx.counter_label, ctx.dead.get(address, 0))
            if stepped is not None:
                _step_up(isa, code, stepped, ctx.scratch)
            target = ins.branch_target if ins is last else None
            if target is not None and target != ins.end:  # the block's way elsewhere: counted on it?
                taken = block.edge_increments.get(target, [])
                taken_weight = sums.edge_weights.get((bi, target), 0) if sums else 0
            else:
                taken, taken_weight = [], 0
            if taken or taken_weight:
                ctx.redirect = {target: ("edge", block.address, target)}
                trampolines.append((ins, taken, taken_weight))
                needs_table |= _relocate(ins, isa, code, ctx, proc)
                ctx.redirect = {}
            elif emulated and address in emulated:
                emit_exclusive(code, ins, emulated[address])
            elif not (ins.reads_pc or ins.writes_pc or ins.is_it):  # nothing position dependent
                if ins.in_it and ins.thumb:
                    code.emit(enc.t32_it(ins.cond))
                code.emit(ins.raw)
            else:
                needs_table |= _relocate(ins, isa, code, ctx, proc)
            # falls_through is False only for these (asked inline: this is every instruction)
            if (ins.is_branch or ins.writes_pc or ins.name == "udf") and not ins.falls_through:
                ctx.place_page_copies(code)
        last_end = last.address + last.size
        after = ctx.dead.get(last_end, 0)  # what is dead where it falls through to
        for counter, index, amount in block.edge_increments.get(last_end, ()):  # the way it falls through
            _increment(ISA.for_mode(last.thumb), code, counter, index, amount, ctx, after)
        if sums:
            weight = sums.edge_weights.get((bi, last_end), 0)
            if weight:
                emit_sum_add(code, weight)
            if bi in sums.flush_at_end:  # into a block that resets the sum: store it first
                emit_sum_store(code, sums.sums, ctx.counter_label, after)
        following = proc.blocks[bi + 1].address if bi + 1 < len(proc.blocks) else None
        if following != last_end:  # (most blocks run on into the next one emitted: nothing to do)
            _fallthrough(last, following, code, ctx)
    for branch, increments, weight in trampolines:  # the way it jumps: count, then go on to the target
        isa = ISA.for_mode(branch.thumb)
        code.align(2 if branch.thumb else 4)
        code.label(("edge", branch.block.address, branch.branch_target))
        for counter, index, amount in increments:
            _increment(isa, code, counter, index, amount, ctx, ctx.dead.get(branch.branch_target, 0))
        if weight:
            emit_sum_add(code, weight)
        _jump(isa, code, branch.branch_target, branch.thumb, AL, ctx, local=True)
        ctx.place_page_copies(code)
    ctx.inside = {}
    ctx.hit_registers = {}
    ctx.dead = {}
    if needs_table:
        key = ("xlate", proc.address)
        ctx.xlate_tables.append((proc, key))


def reads_below_sp(proc: Procedure) -> dict[int, int]:
    """Instruction address -> bytes below SP that ``proc`` reads at or after it in its block.

    No ARM ABI lets code read the stack below SP, but code generators do where nothing
    interrupts them: OCaml's ARM back end releases a frame and then reloads the return
    address from under it for a tail call (``add sp, #24; ldr lr, [sp, #-4]; b f``).
    Whatever a site pushes between the two (its scratch registers, a counter's, a filter
    hit's) would be read back instead. A read counts from the block's start to itself,
    whatever SP does on the way: stepping over stack that is not read is harmless.
    """
    out: dict[int, int] = {}
    for block in proc.blocks:
        need = 0
        for ins in reversed(block.instructions):
            for acc in ins.accesses:
                if acc.base == SP and acc.index is None and acc.disp < 0 and not acc.is_store:
                    need = max(need, _stack_step(-acc.disp))
            if need:
                out[ins.address] = need
    return out


def _stack_step(below: int) -> int:
    """A step over ``below`` bytes that keeps SP 8-aligned and encodes as an immediate in
    either instruction set (a multiple of 256 past 1 KiB: a load reaches 4 KiB down)."""
    step = (below + 7) & ~7
    return step if step < 1024 else (step + 255) & ~255


def _step_down(isa: ISA, code: Code, amount: int, scratch: Scratch) -> tuple[tuple, int] | None:
    """SP -= ``amount`` (flags and every other register kept), for the hooks that follow,
    which then find the program's SP at SP + ``amount`` (``Scratch.sp_bias``). None (nothing
    emitted) for 0; else what ``_step_up`` needs to undo it."""
    if not amount:
        return None
    mark = code.mark()
    code.emit(_sp_plus(isa, -amount))
    scratch.sp_bias = amount
    return mark, code.size


def _step_up(isa: ISA, code: Code, stepped: tuple[tuple, int], scratch: Scratch) -> None:
    """Undo ``_step_down``: SP back, or the step forgotten where no site came after it."""
    mark, size = stepped
    amount, scratch.sp_bias = scratch.sp_bias, 0
    if code.size == size:
        code.rollback(mark)
    else:
        code.emit(_sp_plus(isa, amount))


def _sp_plus(isa: ISA, amount: int) -> bytes:
    """SP += ``amount`` (negative: down) without a scratch register or the flags."""
    if isa.thumb:
        return enc.t32_add_imm(SP, SP, amount)
    imm = enc.a32_modimm(abs(amount))
    assert imm is not None, amount  # _stack_step makes every step encodable
    return enc._w((0xE28DD000 if amount > 0 else 0xE24DD000) | imm)


# Go's g.stackguard0 (the third word of g, whose pointer r10 holds) when the runtime asks
# the goroutine to stop: stackPreempt, -1314 (0x520 + 2 in two immediates A32 encodes).
_G = 10
_STACK_PREEMPT_HIGH, _STACK_PREEMPT_LOW = 0x520, 2
GO_POLL = ("sym", "anvil_go_poll")
# Where go_poll keeps ip and lr (d16) and, when it calls the runtime, the flags (d17), as
# the runtime's anvil_go_poll and anvil_go_fault_pc read them. No hook has anything in
# d16-d31 between instructions; nothing goes below SP, where Go code may have left what it
# reads again (the polls' first version stored there, and fzf's copies went wrong).
_POLL_PARK, _POLL_FLAGS = 16, 17


def go_poll(code: Code, address: int) -> None:
    """At a loop head of a Go program's A32 copy: if Go asks this goroutine to stop (its
    stackguard0 is stackPreempt), call the runtime's anvil_go_poll, which raises Go's
    preemption signal on this thread (decision 0134). A loop without calls has no other
    place where Go stops it but a signal that happens to find the start of an instruction's
    copy, which is seldom where the analysis takes the time. ip and lr are parked in d16,
    the flags in ip (and d17 over the call: a veneer may use ip); 12 bytes after the call
    (its return) the loop head's registers are back."""
    after = ("go-poll", address)
    code.emit(enc.a32_vmov_to_d(_POLL_PARK, IP, LR) + enc.a32_mrs_apsr(IP) + enc.a32_ldr_imm(LR, _G, 8)
              + enc.a32_add_imm(LR, LR, _STACK_PREEMPT_HIGH) + enc.a32_cmn_imm(LR, _STACK_PREEMPT_LOW))
    A32.branch(code, after, enc.COND["ne"])
    code.emit(enc.a32_vmov_to_d(_POLL_FLAGS, IP, IP))
    A32.call(code, GO_POLL, True)
    code.emit(enc.a32_vmov_from_d(IP, LR, _POLL_FLAGS))
    code.label(after)
    code.emit(enc.a32_msr_apsr(IP) + enc.a32_vmov_from_d(IP, LR, _POLL_PARK))


def _poison(isa: ISA, code: Code, dead: int, flags_dead: bool) -> None:
    """Each register of ``dead`` (bit n for rn) = 0xdead00nn (ANVIL_POISON_DEAD); with
    ``flags_dead``, N, Z, C and V all set (no instruction sets N and Z together), through a
    dead register in T32 (which has no MSR of an immediate)."""
    if flags_dead and not isa.thumb:
        code.emit(enc.a32_msr_flags_imm(0xF0000000))
    elif flags_dead and dead & 0x1FFF:
        reg = (dead & 0x1FFF).bit_length() - 1
        isa.mov32(code, reg, 0xF0000000)
        code.emit(enc.t32_msr_apsr(reg, ge=False))
    for reg in range(15):
        if dead >> reg & 1:
            isa.mov32(code, reg, 0xDEAD0000 | reg)


def _last_access_hook(ins: Instruction) -> int:
    """The position of ``ins``'s last per-access hook (its filter sites), -1 if none."""
    return max((h for h, hook in enumerate(ins.hooks) if hook.prototype.per_access), default=-1)


def _sum_at_start(code: Code, sums: Accumulation, position: int, ctx: RelocationContext, dead: int) -> None:
    """A block's part of its procedure's running sum: its weight, then the store when
    control may leave from it (decision 0014); ``dead``: the registers dead there."""
    weight = sums.weights.get(position, 0)
    if weight:
        emit_sum_add(code, weight)
    if position in sums.flush_at_start:
        emit_sum_store(code, sums.sums, ctx.counter_label, dead)


def _increment(isa: ISA, code: Code, counter: str, index: int, amount: int, ctx: RelocationContext,
               dead: int) -> None:
    """``counter[index]`` += ``amount``: a compact site where ``ctx.shared_calls`` asks for
    them (a plain T32 +1), else inline (emit_increment)."""
    shared = ctx.shared_calls
    if (shared is not None and isa.thumb and amount == 1 and not ctx.atomic
            and shared.emit_increment(code, counter, index, dead)):
        return
    emit_increment(isa, code, ctx.counter_label(counter, index), amount, ctx.scratch, ctx.atomic, dead)


def _fallthrough(last: Instruction, following: int | None, code: Code, ctx: RelocationContext) -> None:
    """After a block's ``last`` instruction (if it can fall through), continue at its original
    successor, in the same instruction set, unless the next block emitted (at ``following``)
    is that successor: running on never changes state, whatever the bytes there were taken
    for. A procedure's blocks need not be contiguous: decoding stops short of an instruction
    that straddles another procedure's supposed entry, and of one it cannot read (decision
    0052), and the code after such a gap may still be reached by a branch."""
    if last.falls_through and following != last.end and last.address not in ctx.case_tables:
        _jump(ISA.for_mode(last.thumb), code, last.end, last.thumb, AL, ctx)


def _hook_context(ins: Instruction, access, block_insns: int, ctx: RelocationContext) -> HookContext:
    return HookContext(ins, access, block_insns, ctx.string_label, ctx.function_label, ctx.scratch,
                       ctx.call_stubs, ctx.counter_label, ctx.mask_interrupts, ctx.appends,
                       ctx.threads and ctx.atomic,  # not inside the program's own LDREX/STREX windows
                       ctx.hit_registers, ctx.dead.get(ins.address, 0), ctx.threads,
                       exclusives=not ctx.windows, handlers_count=ctx.handlers_count,
                       in_loop=_in_loop(ins.address, ctx.loop_spans),
                       flags_dead=isinstance(ctx.dead, DeadRegisters) and ctx.dead.flags_dead(ins.address))


def _to_new_page(code: Code) -> None:
    """Go on at the next M-profile page: a jump there over the padding (flash: no NOPs run
    each time the loop is entered), NOPs where the padding is shorter than the jump."""
    pad = (-code.here()) % M_PAGE
    if pad > 4:
        page = ("page", code.here() + pad)
        T32.branch(code, page)
        code.align(M_PAGE)
        code.label(page)
    else:
        code.align(M_PAGE, b"\x00\xbf")


def _loop_spans(proc: Procedure) -> list[tuple[int, int]]:
    """(start, end) of the loops of ``proc`` without calls, as the compiler laid them out:
    the code from a backward direct branch's target to the branch, where no call is made
    (the loops whose access sites run most often; decision 0070: outer loops too, not only
    the innermost, which left a quicksort's swap and an insertion sort's outer loop, half
    of sort's accesses outside them, to the shared path)."""
    calls = [ins.address for ins in proc.instructions() if ins.is_call]
    spans = []
    for ins in proc.instructions():
        target = ins.branch_target
        if (target is not None and ins.is_branch and not ins.is_call and proc.address <= target <= ins.address
                and not any(target <= c < ins.end for c in calls)):
            spans.append((target, ins.end))
    return spans


def _in_loop(address: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= address < end for start, end in spans)


def _calls(isa: ISA, code: Code, hooks: list[Hook], ins: Instruction, access, block_insns: int,
           ctx: RelocationContext, cond: int) -> None:
    for hook in hooks:
        _guarded_call(isa, code, hook, _hook_context(ins, access, block_insns, ctx), cond, ctx.shared_calls)


def _guarded_call(isa: ISA, code: Code, hook: Hook, hctx: HookContext, cond: int,
                  shared_calls: SharedCalls | None) -> None:
    """``hook``'s call at the site ``hctx``, run only when ``cond`` holds: a compact site
    when ``shared_calls`` is given and the hook allows one."""
    skip = isa.skip_unless(code, cond) if cond != AL else None
    if shared_calls is None or not isa.thumb or not shared_calls.emit_site(code, hook, hctx):
        emit_call(isa, code, hook, hctx)
    if skip is not None:
        isa.end_skip(code, skip)


def _access_calls(isa: ISA, code: Code, hook: Hook, ins: Instruction, block_insns: int,
                  ctx: RelocationContext) -> None:
    """One site per memory access of ``ins``; when the accesses may share one repeat-filter
    key, the first site tests that for all of them (hooks.SharedKey) and the others'
    sites run only when they do not."""
    contexts = [_hook_context(ins, access, block_insns, ctx) for access in ins.accesses]
    # With threads, each access's filter counts its own hit atomically (the shared test's
    # one add of several would be a plain one). Compact sites are each a BL already.
    shared = ends = None
    if not (contexts and contexts[0].atomic_hits) and ctx.shared_calls is None:
        shared = shared_key(isa, code, hook, contexts)
    elif contexts:  # compact sites and atomic hit counts: the first and the last access
        ends = first_and_last(isa, hook, contexts)  # tested, the others counted (decision 0074)
    if ends is not None:
        skip = isa.skip_unless(code, ins.cond) if ins.cond != AL else None
        for hctx in (contexts[0], contexts[-1]):
            _guarded_call(isa, code, hook, hctx, AL, ctx.shared_calls)
        emit_hits(code, *ends, contexts[0].dead)
        if skip is not None:
            isa.end_skip(code, skip)
        return
    if shared is None:
        for hctx in contexts:
            _guarded_call(isa, code, hook, hctx, ins.cond, ctx.shared_calls)
        return
    skip = isa.skip_unless(code, ins.cond) if ins.cond != AL else None
    emit_call(isa, code, hook, contexts[0], shared)
    for hctx in contexts[1:]:
        emit_call(isa, code, hook, hctx)
    code.label(shared.after)
    if skip is not None:
        isa.end_skip(code, skip)


def _jump(isa: ISA, code: Code, target: int, target_thumb: bool, cond: int, ctx: RelocationContext,
          local: bool = False) -> None:
    """Branch (conditionally) to original address ``target``: its relocated copy if any.

    ``local`` says the target is in the same procedure, so a T32 conditional branch
    (+-1 MiB) reaches it; elsewhere a condition skips over an unconditional B.W.
    """
    if target in ctx.redirect:
        isa.branch(code, ctx.redirect[target], cond)
        return
    relocated = target in ctx.relocated
    same_mode = relocated and ctx.mode_at(target) == isa.thumb
    # The procedure's own branches to a block that resets its running sum go past the reset.
    label = ctx.inside.get(target) or ins_label(target)
    if same_mode and (cond == AL or not isa.thumb or (local and not ctx.far_conditionals)):
        isa.branch(code, label, cond)
        return
    skip = isa.skip_unless(code, cond) if cond != AL else None
    if same_mode:
        isa.branch(code, label)
    elif relocated:
        _far_to_label(isa, code, ins_label(target), ctx.mode_at(target), ctx.scratch)
    else:  # code left in place: a jump, which may be within a stripped function (IP live)
        isa.branch(code, _veneer(ctx, target, target_thumb, isa.thumb, calls_only=False))
    if skip is not None:
        isa.end_skip(code, skip)


def _slot_below_sp(isa: ISA, code: Code, reg: int) -> None:
    """str reg, [sp, #-4]: the one word a register-preserving jump needs."""
    code.emit(struct.pack("<HH", 0xF84D, (reg << 12) | 0x0C04) if isa.thumb
              else struct.pack("<I", 0xE50D0004 | (reg << 12)))


def _jump_via_slot(isa: ISA, code: Code) -> None:
    """ldr pc, [sp, #-4]."""
    code.emit(struct.pack("<HH", 0xF85D, 0xFC04) if isa.thumb else struct.pack("<I", 0xE51DF004))


def _reserve_slot(isa: ISA, code: Code) -> None:
    """sub sp, sp, #4: a stack word for a register-preserving jump (stack-scratch mode)."""
    code.emit(struct.pack("<H", 0xB081) if isa.thumb else struct.pack("<I", 0xE24DD004))


def _jump_via_reserved_slot(isa: ISA, code: Code) -> None:
    """ldr pc, [sp], #4: jump to the word _reserve_slot made room for, releasing it."""
    code.emit(struct.pack("<HH", 0xF85D, 0xFB04) if isa.thumb else struct.pack("<I", 0xE49DF004))


def _far_to_label(isa: ISA, code: Code, label: Hashable, thumb: bool, scratch: Scratch) -> None:
    """Jump to relocated code of the other instruction set, preserving every register and the flags."""
    target = ("with_bit", label, 1 if thumb else 0)
    if scratch.vfp:
        scratch.save(isa, code, [(0, 1)])
        isa.pc_address(code, 0, target)
        _slot_below_sp(isa, code, 0)
        scratch.restore(isa, code, [(0, 1)])
        _jump_via_slot(isa, code)
        return
    _jump_through_stack(isa, code, target)


def _jump_through_stack(isa: ISA, code: Code, target: Hashable | int) -> None:
    """Jump to ``target`` (its Thumb bit included) at any distance, every register and the
    flags kept: the address goes through a stack word that the jump releases."""
    _reserve_slot(isa, code)
    isa.push(code, [0])
    isa.pc_address(code, 0, target)
    isa.str(code, 0, SP, 4)
    isa.pop(code, [0])
    _jump_via_reserved_slot(isa, code)


def write_range_veneer(code: Code, target: Hashable | int, thumb: bool) -> None:
    """An island's veneer (Code.island): a jump to ``target`` from a branch that does not
    reach it. Written in the target's instruction set, so the branch keeps its form (a BLX
    stays a BLX); it keeps every register, IP and LR included, as a jump inside a procedure needs."""
    bit = 1 if thumb else 0
    with_bit = target | bit if isinstance(target, int) else ("with_bit", target, bit)
    _jump_through_stack(ISA.for_mode(thumb), code, with_bit)


def _copy_entered(ctx: RelocationContext, target: int, target_thumb: bool) -> bool:
    """Whether a direct call enters ``target`` where it has a copy in the instruction set
    the call enters it in. Else the call is bytes of data read as code (a stripped A32
    program's ``bl`` into the middle of a Thumb function of the C library): the copy goes
    to the original address in that instruction set, as the original would."""
    return target in ctx.relocated and ctx.mode_at(target) == target_thumb


def _call(isa: ISA, code: Code, target: int, target_thumb: bool, cond: int, ctx: RelocationContext) -> None:
    skip = isa.skip_unless(code, cond) if cond != AL else None
    if _copy_entered(ctx, target, target_thumb):
        isa.call(code, ins_label(target), target_thumb)
    else:
        isa.call(code, _veneer(ctx, target, target_thumb, isa.thumb, target in ctx.ip_clobbered_at), isa.thumb)
    if skip is not None:
        isa.end_skip(code, skip)


def _veneer(ctx: RelocationContext, target: int, target_thumb: bool, from_thumb: bool,
            calls_only: bool = True) -> Hashable:
    """The label of the veneer (emit_veneer) from relocated code to original ``target``;
    ``calls_only``: only calls of code that clobbers IP itself go through it (a PLT
    entry), so it may clobber IP."""
    key = (target, target_thumb, from_thumb, calls_only)
    return ctx.veneers.setdefault(key, ("veneer",) + key)


def _copy(ins: Instruction, code: Code) -> None:
    if ins.thumb and ins.in_it:
        code.emit(enc.t32_it(ins.cond))
    code.emit(ins.raw)


def relocate_instruction(ins: Instruction, code: Code, ctx: RelocationContext) -> bool:
    """Emit the relocated form of ``ins`` alone (no hooks); raises Unsupported when impossible."""
    assert ins.block is not None
    return _relocate(ins, ISA.for_mode(ins.thumb), code, ctx, ins.block.procedure)


def _relocate(ins: Instruction, isa: ISA, code: Code, ctx: RelocationContext, proc: Procedure) -> bool:
    """Emit the relocated form of one instruction; True if it needs the translation table."""
    if ins.is_it:
        return False
    if not (ins.reads_pc or ins.writes_pc):  # nothing position dependent
        _copy(ins, code)
        return False
    name = ins.name
    if ins.branch_target is not None:
        _direct(ins, name, isa, code, ctx)
        return False
    if ins.writes_pc:
        # A call that the `mov lr, pc` before it links (is_link_move): LR is set already, the
        # branch itself is a jump; reading PC (a literal), it is relocated as one, below.
        linked = _linked(ins)
        if linked and not ins.reads_pc:
            _copy(ins, code)
            return False
        if (ins.is_return or ins.is_call) and not linked:
            if ins.reads_pc:
                raise Unsupported(f"{ins}: return or call reading PC")
            if ins.is_call and _returns_to_original(ins, ctx):
                _call_returning_to_original(ins, isa, code, ctx, None, False)
                return False
            _copy(ins, code)
            return False
        if _through_pointer_slot(ins, name):
            _copy(ins, code)
            return False
        literal = _literal_target(ins, name, ctx)
        if literal is not None and code.pic and not _relocated_at_load(ins, ctx):
            # Position-independent code: a literal the dynamic linker leaves alone holds an
            # absolute address, outside the image (Go's PIE jumps to the kernel's helpers,
            # __kuser_cmpxchg at 0xffff0fc0, so), not a link-time one to move with it.
            _under(isa, code, ins, lambda: _absolute_jump(isa, code, literal))
            return False
        if literal is not None:
            _jump(isa, code, literal & ~1, bool(literal & 1), ins.cond, ctx)
            return False
        cases = _table_cases(ins, name, ctx, proc)
        if cases is not None:
            _table_branch(ins, cases, code, ctx)
            return False
        _translated_jump(ins, name, isa, code, ctx)
        return True
    if ins.reads_pc:
        call = _linked_call(ins, ctx)
        if call is not None:
            _under(isa, code, ins, lambda: isa.pc_address(code, LR, ins_label(call.end)))
            return False
        _pc_relative(ins, name, isa, code, ctx)
        return False
    _copy(ins, code)
    return False


def reads_return_address(ctx: RelocationContext, target: int, thumb: bool) -> bool:
    """Whether the function at ``target`` reads data at its return address and returns past
    it (case_helpers.return_reader): libgcc's Thumb-1 switch helpers, whose tables follow
    their calls. A call of one whose table is not known (``RelocationContext.case_tables``)
    cannot be copied: from a copy LR would be the copy's return site, where no table is
    (SIGILL, decision 0094)."""
    return return_reader(ctx.read, ctx.return_readers, target, thumb, ctx.return_reader_decoding) is not None


def _linked(ins: Instruction) -> bool:
    """A call that the ``mov lr, pc`` before it links (decode.is_link_move), not a BL/BLX."""
    return ins.is_call and ins.name not in ("bl", "blx")


def _linked_call(move: Instruction, ctx: RelocationContext) -> Instruction | None:
    """The call ``move`` links when it is its ``mov lr, pc`` (decode.is_link_move) and the
    call leaves a relocated return address: LR is then the copy's return site (its hooks
    included), as a BL in the copy leaves. With original return addresses the original
    PC is right (the return site gets a jump), and _pc_relative gives it."""
    if move.thumb or move.name != "mov" or move.op_str != "lr, pc":
        return None
    block = move.block
    insns = block.instructions
    at = insns.index(move)
    if at + 1 < len(insns):
        call = insns[at + 1]
    else:  # the call starts the next block (a procedure with a computed jump has one per instruction)
        blocks = block.procedure.blocks
        after = blocks.index(block) + 1
        call = blocks[after].instructions[0] if after < len(blocks) else None
    if call is None or not call.is_call or call.address != move.end or call.end not in ctx.relocated:
        return None
    return call if not _returns_to_original(call, ctx) else None


def _returns_to_original(call: Instruction, ctx: RelocationContext) -> bool:
    """Whether ``call`` leaves its original return address in LR."""
    return call.end not in ctx.relocated_returns and (ctx.original_returns or call.end in ctx.original_return_sites)


def _direct(ins: Instruction, name: str, isa: ISA, code: Code, ctx: RelocationContext) -> None:
    target = ins.branch_target
    assert target is not None
    if name in ("cbz", "cbnz"):
        # The inverse test skips the jump, whatever its size: a B.W to a copy, but longer
        # to code that is not relocated (a stripped program's neighbouring fragment that has
        # no hook) or to a block that resets a running sum.
        rn = struct.unpack("<H", ins.raw)[0] & 7
        skip = ("cbz-skip", ins.address)
        T32.cbz(code, rn, skip, nonzero=name == "cbz")
        _jump(T32, code, target, True, AL, ctx)
        code.label(skip)
        return
    if name == "bx":  # bx pc: into the A32 code that follows
        _jump(isa, code, target, not isa.thumb, ins.cond, ctx)
        return
    if name == "b":
        proc = ins.block.procedure if ins.block else None
        local = proc is not None and proc.address <= target < proc.end
        _jump(isa, code, target, isa.thumb, ins.cond, ctx, local)
        return
    target_thumb = isa.thumb if name == "bl" else not isa.thumb
    if target_thumb:
        target &= ~1
    table = ctx.case_tables.get(ins.address)
    if table is not None:
        _case_helper_call(ins, table, code, ctx, target)
        return
    if _returns_to_original(ins, ctx) \
            or inline_data_size(ctx.read, ctx.inline_data_readers, target, target_thumb):
        _call_returning_to_original(ins, isa, code, ctx, target, target_thumb)
        return
    _call(isa, code, target, target_thumb, ins.cond, ctx)


def _call_returning_to_original(ins: Instruction, isa: ISA, code: Code, ctx: RelocationContext,
                                target: int | None, target_thumb: bool) -> None:
    """A call that leaves in LR what the original call does, the original return address
    (its place gets a jump to the copy), so unwinders and ``__builtin_return_address``
    see original code. ``target``: a direct call's original target; None for ``blx rN``.

    LR is set first, then a plain jump: B.W to a copy in the same instruction set, BX IP
    to one in the other, a veneer to code that is not relocated (keeping IP unless that
    is a PLT entry). IP is taken for a copy of the other instruction set (AAPCS lets a
    call's veneer clobber it).
    """
    skip = isa.skip_unless(code, ins.cond) if ins.cond != AL else None
    register = REG_NUMBERS[ins.op_str] if target is None else None
    if register == LR:  # blx lr: the target is read before LR changes
        isa.mov_reg(code, IP, LR)
        register = IP
    isa.pc_address(code, LR, ins.end | int(ins.thumb))
    if register is not None:
        code.emit(enc.t32_bx(register) if isa.thumb else enc.a32_bx(register))
    elif _copy_entered(ctx, target, target_thumb) and target_thumb == isa.thumb:
        isa.branch(code, ins_label(target))
    elif _copy_entered(ctx, target, target_thumb):
        isa.pc_address(code, IP, ("with_bit", ins_label(target), int(target_thumb)))
        code.emit(enc.t32_bx(IP) if isa.thumb else enc.a32_bx(IP))
    else:
        isa.branch(code, _veneer(ctx, target, target_thumb, isa.thumb, target in ctx.ip_clobbered_at))
    if skip is not None:
        isa.end_skip(code, skip)


def _case_helper_call(ins: Instruction, table: CaseTable, code: Code, ctx: RelocationContext, target: int) -> None:
    """A Thumb-1 switch (arch/arm/case_helpers): the helper's call, which leaves the copy's
    return address in LR, and after it a table of the same kind whose entries go to a row
    of B.W, one to each case's copy. The helper runs (and is counted) as in the original,
    reading the copy's table. Where a byte's reach (510 bytes forward, 254 signed) does not
    take in the row of B.W, entries go to a row of B.N, one to each of them."""
    helper = table.helper
    cases = table.cases
    row = list(dict.fromkeys(cases))  # each case once, in table order
    _call(T32, code, target, True, AL, ctx)
    if helper.size == 4:
        code.align(4)  # (the helper reads words from the return address rounded up)
    size = helper.size
    table_bytes = size * len(cases)
    row_start = table_bytes + table_bytes % 2
    short = row_start + 4 * (len(row) - 1) > helper.reach()
    if short and (size > 1 or row_start + 2 * (len(row) - 1) > helper.reach()):
        raise Unsupported(f"{ins}: a table of {len(cases)} entries to {len(row)} cases out of the copy's reach")
    slots = [("case-slot", ins.address, k) for k in range(len(row))]
    slot_of = {case: slots[k] for k, case in enumerate(row)}

    def entries(at: int, resolve: Resolver) -> bytes:
        out = b""
        for case in cases:
            entry = helper.entry(at, resolve(slot_of[case]))
            assert helper.fits(entry), (ins, case, entry)
            out += entry.to_bytes(size, "little", signed=helper.signed)
        return out

    code.later(table_bytes, entries)
    code.align(2)
    if short:
        for k in range(len(row)):
            code.label(slots[k])
            code.later(2, lambda at, resolve, k=k: enc.t16_b(at, resolve(("case-jump", ins.address, k))))
        slots = [("case-jump", ins.address, k) for k in range(len(row))]
    for k, case in enumerate(row):
        code.label(slots[k])
        if case in ctx.relocated and ctx.mode_at(case):
            # To the case's reset of a running sum, if any: the helper's call stored the sum.
            T32.branch(code, ins_label(case))
        else:  # a case in code left as it is (another procedure's, in a stripped program)
            _jump(T32, code, case, True, AL, ctx)
    ctx.place_page_copies(code)


def _absolute_jump(isa: ISA, code: Code, dest: int) -> None:
    """Jump to the absolute address ``dest`` (bit 0: Thumb), keeping every register and the
    flags: ``ldr pc`` from the word that follows it."""
    if isa.thumb:
        code.align(4, enc.t32_nop())
        code.emit(enc.t32_ldr_pc_literal_pair(0)[0] + struct.pack("<I", dest))
    else:
        code.emit(enc.a32_ldr_pc_literal() + struct.pack("<I", dest))


def _literal_value(ins: Instruction, name: str, ctx: RelocationContext) -> int:
    access = ins.accesses[0]
    size = access.size
    raw = ctx.read(access.disp, size)
    signed = name in ("ldrsb", "ldrsh")
    return int.from_bytes(raw, "little", signed=signed) & 0xFFFFFFFF


def _through_pointer_slot(ins: Instruction, name: str) -> bool:
    """``ldr pc, [rN, #imm]``: a jump through a pointer in memory (GOT, PLT, vtable).

    Its target is a function entry (or another module), reached through the entry
    patch like any function pointer; register-indexed loads (jump tables) are not.
    """
    if name != "ldr" or len(ins.accesses) != 1:
        return False
    access = ins.accesses[0]
    return access.base not in (PC,) and access.index is None


def translated_jump(ins: Instruction) -> bool:
    """``ins`` jumps to a target computed at run time, which the relocated code looks up in
    its procedure's table (``_translated_jump``): not a return, a call, a jump through a
    pointer in memory or to a literal."""
    if not ins.writes_pc or ins.branch_target is not None or ins.is_return:
        return False
    if ins.is_call and not (_linked(ins) and ins.reads_pc):  # a linked one reading PC is relocated as a jump
        return False
    return not _literal_jump(ins) and not _through_pointer_slot(ins, ins.name)


def _literal_jump(ins: Instruction) -> bool:
    """``ldr pc, [pc, #x]``: a jump to a constant."""
    return ins.name == "ldr" and len(ins.accesses) == 1 and ins.accesses[0].base == PC \
        and ins.accesses[0].index is None


def _literal_target(ins: Instruction, name: str, ctx: RelocationContext) -> int | None:
    """For ``ldr pc, [pc, #x]``: the constant it jumps to."""
    return _literal_value(ins, name, ctx) if _literal_jump(ins) else None


def _registers(ins: Instruction, written: bool = False) -> set[int]:
    """Core registers ``ins`` reads (and writes, with ``written``), from capstone's details."""
    md_insn = details_of(ins)
    regs_read, regs_written = md_insn.regs_access()
    names = {md_insn.reg_name(r) for r in list(regs_read) + (list(regs_written) if written else [])}
    return {REG_NUMBERS[n] for n in names if n in REG_NUMBERS}


def _scratch(avoid: set[int], count: int) -> list[int]:
    free = [r for r in (0, 1, 2, 3) if r not in avoid]
    if len(free) < count:
        raise Unsupported("no scratch register free")
    return free[:count]


def _pc_relative(ins: Instruction, name: str, isa: ISA, code: Code, ctx: RelocationContext) -> None:
    ops = ins.detail.operands
    literal = (len(ins.accesses) >= 1 and ins.accesses[0].base == PC and ins.accesses[0].index is None)
    if name == "pld" or name == "pli":
        return  # a prefetch hint of original data: no architectural effect, drop it
    if literal and _relocated_at_load(ins, ctx):
        _load_in_place(ins, name, isa, code)
        return
    if literal and name in ("ldr", "ldrb", "ldrh", "ldrsb", "ldrsh"):
        rt = REG_NUMBERS[ins.detail.reg_name(ops[0].reg)]
        _under(isa, code, ins, lambda: isa.mov32(code, rt, _literal_value(ins, name, ctx)))
        return
    if literal and name == "ldrd":
        rt = REG_NUMBERS[ins.detail.reg_name(ops[0].reg)]
        rt2 = REG_NUMBERS[ins.detail.reg_name(ops[1].reg)]
        lo = int.from_bytes(ctx.read(ins.accesses[0].disp, 4), "little")
        hi = int.from_bytes(ctx.read(ins.accesses[0].disp + 4, 4), "little")
        _under(isa, code, ins, lambda: (isa.mov32(code, rt, lo), isa.mov32(code, rt2, hi)))
        return
    if ins.thumb:
        _t32_pc_relative(ins, name, code, ctx, literal)
    else:
        _a32_pc_relative(ins, code, ctx)


def _relocated_at_load(ins: Instruction, ctx: RelocationContext) -> bool:
    """Whether the literal ``ins`` loads overlaps a word the dynamic linker rewrites."""
    access = ins.accesses[0]
    return any(word in ctx.text_relocations for word in range(access.disp - 3, access.disp + access.size))


def _load_in_place(ins: Instruction, name: str, isa: ISA, code: Code) -> None:
    """A literal load (``ldr``/``ldrd rt, [pc, #x]``) from the original literal, where it is:
    its address into the destination register, then the load through it. For a literal the
    dynamic linker rewrites (text relocations), whose value the file does not hold."""
    ops = ins.detail.operands
    rt = REG_NUMBERS[ins.detail.reg_name(ops[0].reg)]
    disp = ins.accesses[0].disp
    if name not in ("ldr", "ldrd") or rt in (SP, PC):
        raise Unsupported(f"{ins}: a literal the dynamic linker rewrites")
    if name == "ldr":
        _under(isa, code, ins, lambda: (isa.pc_address(code, rt, disp), isa.ldr(code, rt, rt, 0)))
        return
    rt2 = REG_NUMBERS[ins.detail.reg_name(ops[1].reg)]
    load = enc.t32_ldrd(rt, rt2, rt) if isa.thumb else None
    if load is None:
        raise Unsupported(f"{ins}: a literal the dynamic linker rewrites")
    _under(isa, code, ins, lambda: (isa.pc_address(code, rt, disp), code.emit(load)))


def _under(isa: ISA, code: Code, ins: Instruction, body: Callable[[], object]) -> None:
    """Emit ``body`` so that it runs only when the instruction's condition holds."""
    skip = isa.skip_unless(code, ins.cond) if ins.cond != AL else None
    body()
    if skip is not None:
        isa.end_skip(code, skip)


def _t32_pc_relative(ins: Instruction, name: str, code: Code, ctx: RelocationContext, literal: bool) -> None:
    raw = ins.raw
    hw1 = struct.unpack_from("<H", raw)[0]
    pc = ins.address + 4
    if ins.size == 2 and (hw1 & 0xF800) == 0xA000:  # ADR (T1)
        rd = (hw1 >> 8) & 7
        target = (pc & ~3) + (hw1 & 0xFF) * 4
        _under(T32, code, ins, lambda: T32.pc_address(code, rd, target))
        return
    if ins.size == 2 and (hw1 & 0xFF78) == 0x4678:  # MOV rd, pc
        rd = (hw1 & 7) | ((hw1 >> 4) & 8)
        _under(T32, code, ins, lambda: T32.pc_address(code, rd, pc))
        return
    if ins.size == 2 and (hw1 & 0xFF78) == 0x4478:  # ADD rd, pc
        rd = (hw1 & 7) | ((hw1 >> 4) & 8)
        if not code.pic and rd != SP:  # position-dependent: pc is a constant (PIC liblua's GOT access)
            _under(T32, code, ins, lambda: code.emit(enc.t32_add_constant(rd, pc)))
            return
        s, x = _scratch({rd}, 2)

        def body() -> None:
            ctx.scratch.save(T32, code, [(s, x)])
            T32.pc_address(code, s, pc)
            code.emit(enc.t32_add_reg(rd, s))
            ctx.scratch.restore(T32, code, [(s, x)])
        _under(T32, code, ins, body)
        return
    if ins.size == 4:
        hw2 = struct.unpack_from("<H", raw, 2)[0]
        if (hw1 & 0xFBFF) in (0xF2AF, 0xF20F) and not (hw2 & 0x8000):  # ADR.W (T2 sub / T3 add)
            imm = ((hw1 >> 10) & 1) << 11 | ((hw2 >> 12) & 7) << 8 | (hw2 & 0xFF)
            rd = (hw2 >> 8) & 0xF
            target = (pc & ~3) + (-imm if (hw1 & 0xFBFF) == 0xF2AF else imm)
            _under(T32, code, ins, lambda: T32.pc_address(code, rd, target))
            return
        if literal and name == "vldr":
            s = 0

            def body() -> None:
                ctx.scratch.save(T32, code, [(s, 1)])
                T32.pc_address(code, s, ins.accesses[0].disp)
                code.emit(struct.pack("<HH", (hw1 & ~0x8F) | 0x80 | s, hw2 & ~0xFF))
                ctx.scratch.restore(T32, code, [(s, 1)])
            _under(T32, code, ins, body)
            return
    raise Unsupported(f"{ins}: PC-relative form not supported")


def _a32_substitute(word: int, p: int) -> int:
    """Replace PC in the Rn (19:16) and, for register forms, Rm (3:0) fields by ``p``; condition AL."""
    if (word >> 16) & 0xF == PC:
        word = (word & ~(0xF << 16)) | (p << 16)
    op = (word >> 25) & 7
    extra_imm = op == 0 and (word & 0x90) == 0x90 and (word >> 22) & 1
    if word & 0xF == PC and (op == 3 or (op == 0 and not extra_imm)):
        word = (word & ~0xF) | p
    return (word & 0x0FFFFFFF) | (AL << 28)


def _a32_pc_relative(ins: Instruction, code: Code, ctx: RelocationContext) -> None:
    word = struct.unpack("<I", ins.raw)[0]
    if (word & 0x0FFF8000) == 0x092D8000 or (word & 0x0FFFFFFF) == 0x052DF004:
        _a32_push_pc(ins, word, code, ctx)
        return
    used = _registers(ins, written=True)
    if SP in used:
        raise Unsupported(f"{ins}: PC-relative with SP")
    p, x = _scratch(used, 2)

    def body() -> None:
        ctx.scratch.save(A32, code, [(p, x)])
        A32.pc_address(code, p, ins.address + 8)
        code.emit(struct.pack("<I", _a32_substitute(word, p)))
        ctx.scratch.restore(A32, code, [(p, x)])
    _under(A32, code, ins, body)


def _a32_push_pc(ins: Instruction, word: int, code: Code, ctx: RelocationContext) -> None:
    """``push {..., pc}`` (STMDB sp! with PC in the list, or STR pc, [sp, #-4]!): the APCS
    frame's "save code pointer" (gcc -mapcs-frame, Free Pascal), which a backtrace reads
    to find the function. The push as it is, then the original's PC value (its address +
    8) over the copy's in the highest slot, through two borrowed registers the push does
    not store."""
    stored = [r for r in range(16) if word >> r & 1] if word & 0x08000000 else [PC]
    free = [r for r in range(13) if r not in stored]
    if len(free) < 2:
        raise Unsupported(f"{ins}: no register free to correct the PC it stores")
    p, x = free[:2]
    slot = 4 * (len(stored) - 1) + (0 if ctx.scratch.vfp else 8)  # (a stack save pushes p and x)

    def body() -> None:
        code.emit(struct.pack("<I", (word & 0x0FFFFFFF) | (AL << 28)))
        ctx.scratch.save(A32, code, [(p, x)])
        A32.pc_address(code, p, ins.address + 8)
        code.emit(enc.a32_str_imm(p, SP, slot))
        ctx.scratch.restore(A32, code, [(p, x)])
    _under(A32, code, ins, body)


def _table_cases(ins: Instruction, name: str, ctx: RelocationContext, proc: Procedure) -> list[int] | None:
    """The case addresses of a TBB/TBH ``[pc, rm]`` in table order, when they are all known:
    the table's size from a bounds check, every case a relocated T32 instruction of
    ``proc`` after the table. None otherwise (the jump is translated at run time)."""
    if name not in ("tbb", "tbh") or (struct.unpack_from("<H", ins.raw)[0] & 0xF) != PC:
        return None
    entries = ctx.table_sizes.get(ins.address)
    if not entries:
        return None
    size = 1 if name == "tbb" else 2
    base = ins.address + 4
    table = ctx.read(base, size * entries)
    end = base + len(table)
    cases = [base + 2 * int.from_bytes(table[i:i + size], "little") for i in range(0, len(table), size)]
    if all(end <= case < proc.end and case in ctx.relocated and ctx.mode_at(case) for case in cases):
        return cases
    return None


def _table_branch(ins: Instruction, cases: list[int], code: Code, ctx: RelocationContext) -> None:
    """A switch of known cases (_table_cases): ``tbh [pc, rm, lsl #1]`` over a table of its
    own, then a row of B.W, one per distinct case. An entry goes straight to its case's
    copy when that is in TBH's reach (128 KiB forward), else to the case's B.W in the row,
    which always is. Registers and flags are left as the original TBB/TBH leaves them.
    Decision 0023."""
    rm = struct.unpack_from("<H", ins.raw, 2)[0] & 0xF
    skip = T32.skip_unless(code, ins.cond) if ins.cond != AL else None
    row = {case: i for i, case in enumerate(dict.fromkeys(cases))}  # each case once, in table order
    code.emit(enc.t32_tbh(rm))
    labels = [ctx.inside.get(case) or ins_label(case) for case in cases]

    def entries(at: int, resolve: Resolver) -> bytes:
        out = []
        for case, label in zip(cases, labels):
            reach = (resolve(label) - at) // 2
            out.append(reach if 0 <= reach <= 0xFFFF else len(cases) + 2 * row[case])  # else: the row
        return struct.pack(f"<{len(out)}H", *out)

    code.later(2 * len(cases), entries)
    for case in row:
        _jump(T32, code, case, True, AL, ctx, local=True)
    if skip is not None:
        T32.end_skip(code, skip)


def _translated_jump(ins: Instruction, name: str, isa: ISA, code: Code, ctx: RelocationContext) -> None:
    """A jump whose target is computed at run time: compute it, translate it, go."""
    sources = _registers(ins) - {PC}
    if sources & {SP}:
        raise Unsupported(f"{ins}: computed jump reading SP")
    skip = isa.skip_unless(code, ins.cond) if ins.cond != AL else None
    t, p = _scratch(sources, 2)
    rest = _load_multiple_rest(ins)  # (the other registers of ``ldm rn, {..., pc}``, loaded last)
    table = ("xlate", _proc_of(ins))
    proc = ins.block.procedure
    if ctx.scratch.vfp:
        saved = [(0, 1), (2, 3)]
        ctx.scratch.save(isa, code, saved)
        _compute_target(ins, name, isa, code, t, p, sources, rest)
        if t != 0:
            isa.mov_reg(code, 0, t)
        # A procedure keeping its sum in d31 stores it only when the target is not one of
        # its own instructions (procedure_sums: a computed goto within it keeps the sum):
        # such targets go through a stub that stores the sum first. Without PIC its
        # translation table holds the stub's address (one stub for the procedure).
        leaving = None
        if proc.accumulation is not None:
            leaving = leaving_stub(proc) if table_holds_stub(proc, code) else ("xlate-out", id(code), code.size)
        assert leaving is None or isa.thumb
        if leaving is not None:
            isa.to_d(code, LEAVING_TARGET, 0, 0)
        emit_xlate(isa, code, proc, leaving)
        _slot_below_sp(isa, code, 3)
        ctx.scratch.restore(isa, code, saved)
        if rest is not None:
            code.emit(rest[2])
        _jump_via_slot(isa, code)
        if leaving is not None and leaving not in code.labels:
            code.label(leaving)  # the program's registers, the original target in d18
            ctx.scratch.save(isa, code, [(0, 1)])
            emit_sum_store_free(code, proc.accumulation.sums, ctx.counter_label)
            isa.from_d(code, 0, 1, LEAVING_TARGET)
            _slot_below_sp(isa, code, 0)
            ctx.scratch.restore(isa, code, [(0, 1)])
            _jump_via_slot(isa, code)
    else:
        _reserve_slot(isa, code)
        isa.push(code, [0, 1, 2, 3, LR])
        _compute_target(ins, name, isa, code, t, p, sources, rest)
        if t != 0:
            isa.mov_reg(code, 0, t)
        isa.pc_address(code, 1, table)
        isa.call(code, ctx.xlate_label, True)
        isa.str(code, 0, SP, 20)
        isa.pop(code, [0, 1, 2, 3, LR])
        if rest is not None:
            code.emit(rest[2])
        _jump_via_reserved_slot(isa, code)
    if skip is not None:
        isa.end_skip(code, skip)


XLATE_SLOT_TO_ENTRIES = 16  # bytes from the leaving slot to the entries: the slot, then the 12-byte header


def table_holds_stub(proc: Procedure, code: Code) -> bool:
    """Whether ``proc``'s translation table starts with its leaving stub's address: a summing
    procedure without PIC (where the address would need a load-time fix-up)."""
    return proc.accumulation is not None and not code.pic


def leaving_stub(proc: Procedure) -> Hashable:
    """The label of the stub through which a summing procedure's computed jumps leave it,
    when its translation table holds the stub's address (no PIC: emit_xlate_table)."""
    return ("xlate-out", proc.address)


def emit_xlate(isa: ISA, code: Code, proc: Procedure, leaving: Hashable | None = None) -> None:
    """r3 = relocated address of the original target in r0: its copy when it is an
    instruction start of ``proc``, else r0 itself (or ``leaving`` when given and the
    target is outside ``proc``). Uses r0-r2; the flags stay as they were.

    No branch, so an interpreter's dispatch through it is one translation block, and no
    flags (msr is a helper call under TCG). With off = target - start, off < size
    (unsigned) exactly when off's top bit is clear and (off - size)'s is set, size being
    < 2^31: that bit, spread by ASR #31, masks the table index and the entry. Entries
    are deltas (copy - original), 0 where no instruction starts.

    Without PIC a summing procedure's table has the leaving stub's address in a slot
    before its header (emit_xlate_table): the offset, moved on past the slot and the
    header, is masked to that slot outside and the target to 0, so r3 = the stub there,
    four instructions fewer than selecting it afterwards.
    """
    thumb = proc.thumb
    isa.clear_low_bits(code, 1, 0, 1 if thumb else 3)
    isa.pc_address(code, 2, proc.address)
    isa.add_shifted(code, 1, 1, 2, 0, 0, sub=True)                  # r1 = off
    isa.mov32(code, 2, proc.size)
    isa.add_shifted(code, 2, 1, 2, 0, 0, sub=True)                  # r2 = off - size
    isa.logic(code, enc.T32_BIC, 2, 2, 1)                           # top bit: off < size
    if leaving is not None and not code.pic:
        assert thumb and leaving == leaving_stub(proc)
        isa.add_imm(code, 1, 1, XLATE_SLOT_TO_ENTRIES // 2)          # past the slot and the header
        isa.logic(code, enc.T32_AND, 1, 1, 2, ASR, 31)              # that, or 0 (the slot) outside
        isa.pc_address(code, 3, ("xlate_slot", proc.address))
        isa.ldr_index(code, 1, 3, 1, 1)                             # the delta, or the stub outside
        isa.logic(code, enc.T32_AND, 0, 0, 2, ASR, 31)              # the target, or 0 outside
        isa.add_shifted(code, 3, 0, 1, 0, 0)
        return
    isa.logic(code, enc.T32_AND, 1, 1, 2, ASR, 31)                  # off, or 0 outside
    isa.pc_address(code, 3, ("xlate_entries", proc.address))
    isa.ldr_index(code, 1, 3, 1, 1 if thumb else 0)                 # a word per halfword (T32) or word
    isa.logic(code, enc.T32_AND, 1, 1, 2, ASR, 31)                  # the delta, or 0 outside
    isa.add_shifted(code, 3, 0, 1, 0, 0)
    if leaving is not None:  # outside: r3 = leaving
        isa.pc_address(code, 1, ("with_bit", leaving, int(isa.thumb)))
        isa.add_shifted(code, 1, 1, 3, 0, 0, sub=True)
        isa.logic(code, enc.T32_BIC, 1, 1, 2, ASR, 31)
        isa.add_shifted(code, 3, 3, 1, 0, 0)


def _proc_of(ins: Instruction) -> int:
    assert ins.block is not None
    return ins.block.procedure.address


def _load_multiple_rest(ins: Instruction) -> tuple[int, int, bytes] | None:
    """For a load of several registers with PC among them, upwards from a base other than
    SP (``ldm lr, {lr, pc}``, where glibc's A32 ``setcontext`` ends; ``ldmib``): the base,
    the offset of PC's word from it, and the load of the other registers alone (with the
    base written back past PC's word too, if the original writes it back). The copy
    computes its target from that word, then loads the rest as the original does, and
    jumps: the rest is loaded after the jump's scratch registers are given back, so it
    may load them. None for any other instruction; Unsupported for a form that cannot be
    split so (downwards, exception returns, a base written back that it also loads)."""
    raw = ins.raw
    if ins.thumb:
        if ins.size != 4:
            return None
        hw1, hw2 = struct.unpack("<HH", raw)
        if (hw1 & 0xFFD0) != 0xE890 or not hw2 & 0x8000:  # LDM.W rn{!}, {..., pc} (increment after)
            return None
        rn, writeback, rest = hw1 & 0xF, bool(hw1 & 0x20), hw2 & 0x5FFF
        if rn == SP or writeback and rest >> rn & 1:
            raise Unsupported(f"{ins}: computed jump form not supported")
        count = bin(rest).count("1")
        if count == 0:
            load = enc.t32_add_imm(rn, rn, 4) if writeback else b""
        elif count > 1:
            load = struct.pack("<HH", hw1, rest) + (enc.t32_add_imm(rn, rn, 4) if writeback else b"")
        else:  # (LDM.W of one register is UNPREDICTABLE: LDR.W, post-indexed past PC's word)
            rt = rest.bit_length() - 1
            load = struct.pack("<HH", 0xF850 | rn, (rt << 12) | 0x0B08) if writeback else enc.t32_ldr_imm(rt, rn, 0)
        return rn, 4 * count, load
    word = struct.unpack("<I", raw)[0]
    if (word >> 25) & 7 != 4 or not (word >> 20) & 1 or not word >> 15 & 1:  # LDM with PC listed
        return None
    rn, before, upwards, writeback, rest = (word >> 16) & 0xF, (word >> 24) & 1, (word >> 23) & 1, \
        (word >> 21) & 1, word & 0x7FFF
    if rn == SP or not upwards or (word >> 22) & 1 or writeback and rest >> rn & 1:
        raise Unsupported(f"{ins}: computed jump form not supported")
    count = bin(rest).count("1")
    load = struct.pack("<I", (word & 0x0FFF0000) | rest | (AL << 28)) if rest else b""  # (the skip has the condition)
    if writeback:
        load += enc.a32_add_imm(rn, rn, 4)
    return rn, 4 * (count + before), load


def _compute_target(ins: Instruction, name: str, isa: ISA, code: Code, t: int, p: int, sources: set[int],
                    rest: tuple[int, int, bytes] | None) -> None:
    """t = the target of the computed jump ``ins``; ``rest``: ``_load_multiple_rest(ins)``
    (PC's word is then loaded alone, the other registers after the jump's bookkeeping)."""
    raw = ins.raw
    if rest is not None:
        rn, offset, _ = rest
        isa.ldr(code, t, rn, offset)
        return
    if ins.thumb:
        hw1 = struct.unpack_from("<H", raw)[0]
        if ins.size == 2 and (hw1 & 0xFF80) == 0x4700:  # BX rm
            isa.mov_reg(code, t, (hw1 >> 3) & 0xF)
            return
        if ins.size == 2 and (hw1 & 0xFF87) == 0x4687:  # MOV pc, rm
            isa.mov_reg(code, t, (hw1 >> 3) & 0xF)
            code.emit(struct.pack("<HH", 0xF040 | t, (t << 8) | 1))  # orr t, t, #1: stays Thumb
            return
        if ins.size == 2 and (hw1 & 0xFF87) == 0x4487:  # ADD pc, rm
            rm = (hw1 >> 3) & 0xF
            isa.pc_address(code, t, ins.address + 4)
            code.emit(enc.t32_add_reg(t, rm))
            code.emit(struct.pack("<HH", 0xF040 | t, (t << 8) | 1))
            return
        hw2 = struct.unpack_from("<H", raw, 2)[0] if ins.size == 4 else 0
        if name in ("tbb", "tbh"):
            # The table is where rn points (the original's, which the relocated ADR before
            # gives); the branch is from the TBB/TBH's own PC either way. (t and p are
            # neither rn nor rm: _scratch.)
            rn, rm = hw1 & 0xF, hw2 & 0xF
            if rn == PC:
                isa.pc_address(code, t, ins.address + 4)
                rn = t
            if name == "tbb":
                code.emit(enc.t32_ldrb_reg(p, rn, rm))
            else:
                code.emit(enc.t32_ldrh_reg_lsl(p, rn, rm, 1))
            isa.pc_address(code, t, ins.address + 4)
            code.emit(enc.t32_add_reg_shift(t, t, p, 0, 1))
            code.emit(struct.pack("<HH", 0xF040 | t, (t << 8) | 1))
            return
        if ins.size == 4 and (hw1 & 0xFF70) == 0xF850 and (hw2 >> 12) == PC and (hw1 & 0xF) != PC:  # LDR.W pc, [...]
            rn = hw1 & 0xF
            if rn in (0, 1, 2, 3, LR) and (hw2 & 0x0900) in (0x0900, 0x0100) and (hw2 & 0x0800):
                raise Unsupported(f"{ins}: writeback to a scratch register")
            code.emit(struct.pack("<HH", hw1, (hw2 & 0x0FFF) | (t << 12)))
            return
        raise Unsupported(f"{ins}: computed jump form not supported")
    word = struct.unpack("<I", raw)[0]
    if (word & 0x0FFFFFF0) == 0x012FFF10:  # BX rm
        isa.mov_reg(code, t, word & 0xF)
        return
    if (word >> 12) & 0xF != PC:
        raise Unsupported(f"{ins}: computed jump form not supported")
    if ((word >> 16) & 0xF) == PC or (word & 0xF) == PC and (word >> 25) & 7 == 0:
        isa.pc_address(code, p, ins.address + 8)
    new = _a32_substitute(word, p)
    new = (new & ~(0xF << 12)) | (t << 12)
    if (word >> 26) & 3 == 1 and (word >> 16) & 0xF in (0, 1, 2, 3, LR) and ((word >> 21) & 1 or not (word >> 24) & 1):
        raise Unsupported(f"{ins}: writeback to a scratch register")
    code.emit(struct.pack("<I", new))


def emit_xlate_table(proc: Procedure, key: Hashable, code: Code) -> None:
    """The original-to-relocated table of ``proc``: header {start, size, shift}, then one
    word per halfword (T32) or word (A32): the relocated instruction's address minus the
    original's, or 0 where no instruction starts (both move with the load bias). Before
    the header of a summing procedure without PIC: its leaving stub's address (emit_xlate)."""
    code.align(4)
    if table_holds_stub(proc, code):
        code.label(("xlate_slot", key[1]))
        stub = ("with_bit", leaving_stub(proc), 1)
        code.later(4, lambda at, resolve: struct.pack("<I", resolve(stub)))
    code.label(key)
    shift = 1 if proc.thumb else 2
    slots = (proc.size + (1 << shift) - 1) >> shift
    code.emit(struct.pack("<III", proc.address, proc.size, shift))
    code.label(("xlate_entries", key[1]))
    starts = {ins.address for ins in proc.instructions()}
    # A computed goto within a procedure that keeps its sum in d31 goes past a block's reset,
    # as its direct branches do (procedure_sums).
    sums = proc.accumulation
    inside = {proc.blocks[i].address for i in sums.resets} if sums is not None else set()

    def table(at: int, resolve) -> bytes:
        words = []
        for i in range(slots):
            addr = proc.address + (i << shift)
            if addr in starts:
                label = ("inside", addr) if addr in inside else ins_label(addr)
                words.append((resolve(label) - addr) & 0xFFFFFFFF)
            else:
                words.append(0)
        return struct.pack(f"<{slots}I", *words)
    code.later(4 * slots, table)


def emit_veneer(key: tuple[int, bool, bool, bool], label: Hashable, code: Code) -> None:
    """A jump from relocated code to original code, which no branch reaches (decision 0045).

    It keeps every register and the flags: ``ldr pc`` from a literal where the code is
    not moved at load time; else through a stack word, or, when only calls come here
    (``_veneer``), through IP, which AAPCS lets a call's veneer clobber. A jump may not:
    in a stripped program it is often one between two fragments of a function.
    """
    target, target_thumb, from_thumb, calls_only = key
    isa = ISA.for_mode(from_thumb)
    code.align(4)
    code.label(label)
    dest = target | int(target_thumb)
    if not code.pic:
        code.emit((enc.t32_ldr_pc_literal_pair(0)[0] if from_thumb else enc.a32_ldr_pc_literal())
                  + struct.pack("<I", dest))
    elif calls_only:
        isa.far_jump(code, target, target_thumb)
    else:
        _jump_through_stack(isa, code, dest)


"""Code for hooks: a site's call of an analysis routine, in A32 or T32, with its
arguments, its repeat filter and, in ReHost or for deferred routines, its record.

A call saves r0-r5, r12, lr and the flags (APSR including GE), runs the routine on a
stack of its own (or, when d16-d31 are not free, on the program's stack aligned to 8),
computes the arguments from the *original* register values (read back from where the
save sequence put them), calls the routine and restores everything.

The shared code sites call lives beside: call_stubs.py (the call itself), appends.py
(record appends); the filter's test bytes come from repeat_filter.py and inline
counters and running sums from counters.py. Firmware sites are compact instead: they
compute only what differs between them and call shared_calls.py's shared paths, which
reuse this module's argument, address and filter code (decision 0029).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Set
from dataclasses import dataclass, field

from ...api import STATIC_INDEX_KINDS, Arg, Prototype, RepeatFilter
from ...errors import AnvilError
from ...ir.model import Access, Hook, Instruction
from ..code import Code
from . import encode as enc
from .appends import FILTERED_APPEND, RECORD_FLUSH, AppendRoutines, FilteredAppend, append_routine
from .counters import register_hit, t32_atomic_add, t32_bump
from .isa import IP, ISA, LR, PC, SP, T32, Scratch
from .repeat_filter import (
    FilterEnd,
    filter_test,
    filter_test_size,
    neon_hit,
    t32_compact_test,
    t32_filter_miss,
    t32_filter_test,
)

SAVED = [0, 1, 2, 3, 4, 5, IP, LR]
VFP_PAIRS = [(0, 1), (2, 3), (IP, LR)]  # what AAPCS lets a C call clobber; r4-r11 survive it
FLAGS_SP = 19  # d19 holds the flags and the program's SP during a call
SAVE_SLOT = {reg: 4 * i for i, reg in enumerate(SAVED)}
SAVE_BYTES = 4 * len(SAVED)
FLAGS_REG, FRAME_REG = 4, 5
HOOK_STACK_SYMBOL, HOOK_STACK_SHIFT = "anvil_hook_stack", 16  # 64 KiB (runtime_stubs/arm/anvil_rt.c)
HOOK_STACK = ("sym+", HOOK_STACK_SYMBOL, 1 << HOOK_STACK_SHIFT)  # top of the analysis code's own stack


RECORD_PREFIX = "anvil_rh_record"  # anvil_rh_record<N>[IN_EXCLUSIVE]: the communicator's record routines
IN_EXCLUSIVE = "_in_exclusive"     # ... for sites inside the program's own LDREX/STREX window


@dataclass(eq=False)
class RecordPrototype(Prototype):
    """ReHost: the communicator routine a site calls, ``anvil_rh_record<N>(site, dynamic args...)``.

    ``each_access``: the tool's routine ran once per memory access, so the record does
    too (the site id then grows by the access index). ``in_exclusive``: the site may run
    between the program's LDREX and its STREX (ir.flow.exclusive_windows), where the
    record must not use exclusives itself (docs/decisions/0010-interrupt-safe-records.md).
    """

    each_access: bool = False
    original: Hook | None = None  # the tool's call this record stands for (its filter runs in the target)
    in_exclusive: bool = False

    @property
    def per_access(self) -> bool:
        return self.each_access


@dataclass
class HookContext:
    """What argument computation needs to know about the site."""

    ins: Instruction | None
    access: Access | None
    block_insns: int
    string_label: Callable[[str], Hashable]
    function_label: Callable[[str], Hashable]
    scratch: Scratch
    call_stubs: set[str]  # routines called through a shared stub (filled as calls are emitted)
    counter_label: Callable[[str, int], Hashable]  # (array, index) -> label of a 64-bit element
    mask_interrupts: bool = False  # Cortex-M: the site runs with PRIMASK set (RelocationContext)
    appends: AppendRoutines = field(default_factory=AppendRoutines)  # record append routines (RelocationContext)
    # The program starts threads, and the procedure has no LDREX/STREX window of its own
    # (which an exclusive of ours would make fail each time round): a filter's hit counts
    # with LDREX/STREX (LDREXD/STREXD in A32).
    atomic_hits: bool = False
    # (counter array, index) -> the D register the procedure counts those filter hits in
    # (decision 0019, emit/procedure_sums.py); others count in memory.
    hit_registers: dict[tuple[str, int], int] = field(default_factory=dict)
    # Registers dead at the site (bit n for rn; ir/liveness.py): a pair of them need not be
    # parked (decision 0020). The instruction's own base and index are read, so never dead.
    dead: int = 0
    # The program starts threads: a ReHost record goes through the call stub, which holds
    # the analysis lock while the communicator appends it (one ring, one writer at a time),
    # not through the inline append.
    threads: bool = False
    # The procedure has no LDREX/STREX window of its own, so code of ours may use exclusives
    # (ours would make the program's STREX fail each time round its loop).
    exclusives: bool = False
    # Firmware: an exception handler may run access sites too, so a hit counted before the
    # masking adds with LDREX/STREX; where none does, a plain add is never interrupted by
    # another count of the same counter (RelocationContext.handlers_count).
    handlers_count: bool = True
    # The site's instruction lies inside a loop without calls (between a backward branch and
    # its target): a firmware access site there tests its filter's most recent key itself
    # (decisions 0057, 0070).
    in_loop: bool = False
    # The condition flags are dead at the site (ir/liveness.py): an A32 filter test may set
    # them and branch on them.
    flags_dead: bool = False


def _original_reg(isa: ISA, code: Code, reg: int, into: int, ins: Instruction | None,
                  scratch: Scratch, spare: int = LR, parked: int = len(VFP_PAIRS)) -> int:
    """Make the original value of ``reg`` available; returns the register holding it.

    ``spare`` (LR unless told) may be clobbered: it is the second output when reading
    a pair from d16-d18; ``into`` must differ from it. ``parked``: how many of
    VFP_PAIRS are in d16.. (the others still hold their original values).
    """
    assert into != spare, "a pair read back would overwrite one half with the other"
    if scratch.vfp:
        if reg == SP:  # the site has not moved SP, unless it stepped over stack the program reads
            if not scratch.sp_bias:
                return SP
            _sp_plus_into(isa, code, into, scratch.sp_bias)
            return into
        for k, (low, high) in enumerate(VFP_PAIRS[:parked]):
            if reg == low:
                isa.from_d(code, into, spare, 16 + k)
                return into
            if reg == high:
                isa.from_d(code, spare, into, 16 + k)
                return into
        if reg != PC:
            return reg  # r4-r11: untouched by the call sequence
    if reg in SAVE_SLOT:
        isa.ldr(code, into, FRAME_REG, SAVE_SLOT[reg])
        return into
    if reg == SP:
        isa.add_imm(code, into, FRAME_REG, SAVE_BYTES + scratch.sp_bias)
        return into
    if reg == PC:
        assert ins is not None
        isa.pc_address(code, into, ins.address + isa.pc_offset)
        return into
    return reg


def _sp_plus_into(isa: ISA, code: Code, into: int, amount: int) -> None:
    """``into`` = SP + ``amount`` (an immediate either instruction set encodes), no other register."""
    if isa.thumb:
        code.emit(enc.t32_add_imm(into, SP, amount))
        return
    imm = enc.a32_modimm(amount)
    assert imm is not None, amount
    code.emit(enc._w(0xE28D0000 | (into << 12) | imm))  # add into, sp, #imm


@dataclass(frozen=True)
class Temps:
    """Registers an address computation may clobber besides its destination."""

    spare: int = LR   # second output of a pair read from d16-d18
    index: int = IP   # holds the index register's original value
    index_spare: int = LR
    immediate: int = IP  # holds a displacement too large for an ADD immediate
    parked: int = len(VFP_PAIRS)  # VFP_PAIRS saved in d16.. (with d16-d31 free)


CALL_TEMPS = Temps()
# A repeat filter runs with only r0-r3 parked: ip and lr keep their values until a call.
FILTER_TEMPS = Temps(spare=1, index=2, index_spare=3, immediate=3, parked=2)
# The filter's key comes first, when r0-r3 still hold what they held (parked, not yet
# written): read in place, not back from d16/d17 (FILTER_TEMPS after them all).
_KEY_TEMPS = Temps(spare=1, index=2, index_spare=3, immediate=3, parked=0)


def _key_temps(ctx: HookContext) -> Temps:
    """The temporaries of the filter's key argument, computed right after r0-r3 are
    parked: their own registers, unless a computation writes one before it reads it (a
    PC base: its address goes into r0 first; a base in r3, the displacement's temporary)."""
    access = ctx.access
    if access is not None and access.base in (PC, 3):
        return FILTER_TEMPS
    return _KEY_TEMPS


def _effective_address(isa: ISA, code: Code, dest: int, access: Access, ins: Instruction,
                       scratch: Scratch, temps: Temps = CALL_TEMPS) -> None:
    address_into(isa, code, dest, access,
                 lambda reg: _original_reg(isa, code, reg, dest, ins, scratch, temps.spare, temps.parked),
                 lambda reg: _original_reg(isa, code, reg, temps.index, ins, scratch, temps.index_spare,
                                           temps.parked),
                 temps.immediate)


def address_into(isa: ISA, code: Code, dest: int, access: Access, base_of: Callable[[int], int],
                 index_of: Callable[[int], int], immediate: int) -> None:
    """``dest`` = the address ``access`` reads or writes. ``base_of(reg)`` / ``index_of(reg)``
    make the original value of the base / index register available and say where (the
    base's may be ``dest``); ``immediate`` may be clobbered for a large displacement."""
    if access.base == PC and access.index is None:
        isa.pc_address(code, dest, access.disp)
        return
    base = base_of(access.base)
    if access.index is not None:
        index = index_of(access.index)
        isa.add_shifted(code, dest, base, index, access.shift_type, access.shift, access.subtract)
        base = dest
    isa.add_imm(code, dest, base, access.disp, immediate)


@dataclass(frozen=True)
class SharedKey:
    """The accesses after the first of one instruction, when they may share its filter key.

    An LDM/STM/PUSH/POP/LDRD makes one access per register, at ascending addresses
    from one base. After the first access's site, one test (``_emit_shared_key``) asks
    whether the last access has the same key as the first: then so have those between,
    and each is a repeat its filter would skip (the slot holds that key now), so the
    filter's counter takes them all at once. Otherwise (the accesses straddle keys, a
    cache line boundary) the code at ``straddles`` runs every other access's site as
    usual, then goes on at ``after``.
    """

    span: int      # displacement of the last access minus that of the first
    repeats: int   # accesses after the first
    counter: Hashable  # the filter counter they all count in
    straddles: Hashable
    after: Hashable


def shared_key(isa: ISA, code: Code, hook: Hook, contexts: list[HookContext]) -> SharedKey | None:
    """The SharedKey test for ``hook``'s per-access sites ``contexts`` (one per access of
    one instruction, in order), or None when they must stay separate sites: A32 (no
    CBNZ), no repeat filter, a register index or a literal, addresses not ascending,
    further apart than one key, or filter counters that differ between the accesses."""
    found = filter_of(hook)
    accesses = [c.access for c in contexts]
    if not isa.thumb or found is None or len(accesses) < 2 or any(a is None for a in accesses):
        return None
    flt, call = found
    if not _within_one_key(accesses, flt):
        return None
    kind, value = call.prototype.kinds[flt.count_by], call.args[flt.count_by]
    indexes = {static_value(kind, value, c) for c in contexts}
    if len(indexes) != 1:
        return None
    counter = contexts[0].counter_label(flt.counter, indexes.pop())
    where = (id(code), code.size)  # where the sites start: unique in this code
    return SharedKey(accesses[-1].disp - accesses[0].disp, len(accesses) - 1, counter, ("straddles", where),
                     ("shared-after", where))


def _within_one_key(accesses: list[Access], flt: RepeatFilter) -> bool:
    """One instruction's accesses lie at ascending displacements from one base register (not
    PC, no index), the last less than one key of ``flt`` (a cache line) after the first."""
    first, last = accesses[0], accesses[-1]
    if first.base == PC or any(a.base != first.base or a.index is not None for a in accesses):
        return False
    return all(a.disp < b.disp for a, b in zip(accesses, accesses[1:])) and last.disp - first.disp < 1 << flt.shift


def first_and_last(isa: ISA, hook: Hook, contexts: list[HookContext]) -> tuple[Hashable, int, bool] | None:
    """Where an instruction's accesses may be reduced to the sites of the first and the last
    (decision 0074): the counter label their filter counts the others in, how many others,
    and whether the count adds with LDREX/STREX (threads, or exception handlers that count
    too); None when each access needs its own site.

    An LDM/STM/PUSH/POP makes one access per register, at ascending addresses from one
    base. When the first and the last lie less than one key apart (a cache line), every
    access between has the first's key or the last's, and runs just after one with the same
    key: a repeat its filter skips and counts, whatever the slot held before. Testing the
    first and the last and counting the others gives the routine the same calls (the last
    access stands for the first of its key, which a routine reading only the key
    (``key_suffices``) cannot tell apart) and the counter the same sum. Every other
    argument must then be the same at every access. T32 only (the count's add uses CBZ),
    outside the program's own exclusive windows where the add is an LDREX/STREX loop, and
    where the counter lives in memory (not a procedure's D register)."""
    found = filter_of(hook)
    accesses = [c.access for c in contexts]
    if not isa.thumb or found is None or len(accesses) < 3 or any(a is None for a in accesses):
        return None
    flt, call = found
    exclusive = contexts[0].atomic_hits or contexts[0].handlers_count
    if not flt.key_suffices or exclusive and not all(c.exclusives for c in contexts):
        return None
    if not _within_one_key(accesses, flt):
        return None
    for position, (kind, value) in enumerate(zip(call.prototype.kinds, call.args)):
        if kind in STATIC_INDEX_KINDS:
            if len({static_value(kind, value, c) for c in contexts}) != 1:
                return None
        elif position != flt.key_arg and kind not in (Arg.FILTER_LEFT, Arg.STRING):
            return None
    index = filter_counter_index(found, contexts[0])
    if (flt.counter, index) in contexts[0].hit_registers:
        return None
    return contexts[0].counter_label(flt.counter, index), len(accesses) - 2, exclusive


def site_registers(dead: int, count: int, avoid: Set[int] = frozenset()) -> tuple[int, ...]:
    """``count`` registers for a site's own code: two low ones first (CBZ/CBNZ), then any but
    SP and PC; dead ones first (bit n of ``dead`` for rn), then the lowest low ones, which
    the site pushes, those in ``avoid`` (the address's registers) last."""
    low = [r for r in range(8) if dead >> r & 1]
    high = [r for r in (8, 9, 10, 11, 12, LR) if dead >> r & 1]
    spare = sorted((r for r in range(8) if not dead >> r & 1), key=lambda r: (r in avoid, r))
    first = (low + spare)[:2]
    return (*first, *[r for r in low + high + spare if r not in first][:count - 2])


def emit_hits(code: Code, counter: Hashable, amount: int, exclusive: bool, dead: int) -> None:
    """T32 ``counter`` += ``amount`` (first_and_last: the accesses between an instruction's
    first and last), flags untouched, interrupt- and thread-safe when ``exclusive``: four
    registers, those of ``dead`` first (bit n for rn), the others pushed."""
    old, status, new, base = site_registers(dead, 4)
    saved = sorted(r for r in (old, status, new, base) if not dead >> r & 1)
    if saved:
        T32.push(code, saved)
    T32.pc_address(code, base, counter)
    if exclusive:
        code.emit(t32_atomic_add(amount, old, new, base, status))
    else:  # nothing else counts there meanwhile: plain loads and stores
        code.emit(t32_bump(base, 0, amount, value=old, new=new))
    if saved:
        T32.pop(code, saved)


def emit_call(isa: ISA, code: Code, hook: Hook, ctx: HookContext, shared: SharedKey | None = None) -> None:
    """A complete call of ``hook``'s routine with its arguments (behind its repeat filter, if any).

    With d16-d31 free, the site saves what a C call may clobber, computes the
    arguments and calls a stub shared by all sites of the routine, which saves the
    flags and SP, switches to the analysis stack and calls the routine (emit_call_stub).
    A repeat filter runs first with r0-r3 parked; ip and lr are parked only on the way
    to the call. ``shared``: this is an instruction's first access, and the test for
    the others follows (SharedKey; the caller emits their sites and ``shared.after``).
    """
    found = filter_of(hook)
    if ctx.scratch.vfp:
        first_pairs = VFP_PAIRS[:FILTER_TEMPS.parked] if found else VFP_PAIRS
        late_pairs = VFP_PAIRS[len(first_pairs):]
        dead = ctx.dead & ~_registers_read(hook)
        ctx.scratch.save(isa, code, first_pairs, dead=dead)
        shared_path = _filtered_append(isa, hook, found, ctx)
        if shared_path is not None:
            assert found is not None
            _emit_filtered_record(code, hook, found, ctx, *shared_path, dead)
            done = None
        else:
            done = _emit_filter(isa, code, found, ctx)
            ctx.scratch.save(isa, code, late_pairs, 16 + len(first_pairs), dead)
            if isa.thumb and isinstance(hook.prototype, RecordPrototype) and not ctx.threads:
                _emit_record(isa, code, hook, ctx)
            else:
                _arguments(isa, code, list(zip(hook.prototype.kinds, hook.args)), 0, ctx)
                ctx.call_stubs.add(hook.prototype.name)
                isa.call(code, ("callstub", hook.prototype.name), True)
            ctx.scratch.restore(isa, code, late_pairs, 16 + len(first_pairs), dead)
        if done is not None:
            if done.hit is not None:  # the hit path last: the miss jumps over it
                isa.branch(code, done.label)
                code.label(done.hit)
                code.emit(done.bump)
            code.label(done.label)
        if shared is not None:
            _emit_shared_key(isa, code, shared, found, ctx,
                             lambda: ctx.scratch.restore(isa, code, first_pairs, dead=dead))
        ctx.scratch.restore(isa, code, first_pairs, dead=dead)
        return
    isa.push(code, SAVED)
    isa.mrs(code, FLAGS_REG)
    if ctx.mask_interrupts:  # FLAGS_REG's bit 0 (0 in APSR) keeps PRIMASK, for MSR PRIMASK to put back
        code.emit(MASK_INTERRUPTS)
    isa.mov_reg(code, FRAME_REG, SP)
    isa.align_sp8(code, IP)
    done = _emit_filter(isa, code, found, ctx)
    _arguments(isa, code, list(zip(hook.prototype.kinds, hook.args)), 0, ctx)
    isa.call(code, ctx.function_label(hook.prototype.name))
    if done is not None:
        code.label(done.label)

    def unsave() -> None:
        isa.mov_reg(code, SP, FRAME_REG)
        isa.msr(code, FLAGS_REG)
        if ctx.mask_interrupts:
            code.emit(enc.t32_msr_primask(FLAGS_REG))
        isa.pop(code, SAVED)

    if shared is not None:
        _emit_shared_key(isa, code, shared, found, ctx, unsave)
    unsave()


def _registers_read(hook: Hook) -> int:
    """The registers whose values ``hook``'s arguments pass (REG_VALUE), as a mask: parked
    even where the program no longer needs them, so that the routine sees them."""
    out = 0
    for kind, value in zip(hook.prototype.kinds, hook.args):
        if kind is Arg.REG_VALUE:
            out |= 1 << int(value)
    return out


# Cortex-M: ip = PRIMASK; FLAGS_REG |= ip; CPSID i.
MASK_INTERRUPTS = (enc.t32_mrs_primask(IP) + enc.t32_logic_reg(enc.T32_ORR, FLAGS_REG, FLAGS_REG, IP)
                   + enc.t32_cpsid_i())


def _emit_shared_key(isa: ISA, code: Code, shared: SharedKey, found: tuple[RepeatFilter, Hook] | None,
                     ctx: HookContext, unsave: Callable[[], None]) -> None:
    """After the first access's site, r0-r3 still free: if the first and the last access
    have one key, counter += the other accesses, restore and go to ``shared.after``;
    else fall through to ``shared.straddles`` (the caller's restore, then the others' sites).

        r0 = first address; r1 = ((r0 + span) ^ r0) >> shift; cbnz r1, straddles
    """
    assert found is not None and ctx.access is not None and ctx.ins is not None
    flt, _ = found
    _effective_address(isa, code, 0, ctx.access, ctx.ins, ctx.scratch, FILTER_TEMPS)
    code.emit(enc.t32_add_imm(1, 0, shared.span) + enc.t32_logic_reg(enc.T32_EOR, 1, 1, 0)
              + enc.t32_lsr_imm(1, 1, flt.shift))
    isa.cbz(code, 1, shared.straddles, nonzero=True)
    isa.pc_address(code, 1, shared.counter)
    code.emit(t32_bump(1, 0, shared.repeats))
    unsave()
    isa.branch(code, shared.after)
    code.label(shared.straddles)


def filter_of(hook: Hook) -> tuple[RepeatFilter, Hook] | None:
    """The repeat filter guarding ``hook`` and the tool's call it belongs to, if any."""
    call = hook
    if isinstance(hook.prototype, RecordPrototype):
        if hook.prototype.original is None:
            return None
        call = hook.prototype.original
    if call.prototype.filter is None:
        return None
    return call.prototype.filter, call


def filter_hit_slots(hook: Hook, ins: Instruction) -> set[tuple[str, int]]:
    """The (counter array, index) pairs in which the hits of ``hook``'s repeat filter at
    ``ins`` are counted (none without a filter): its ``count_by`` argument at each access."""
    found = filter_of(hook)
    if found is None:
        return set()
    flt, call = found
    kind, value = call.prototype.kinds[flt.count_by], call.args[flt.count_by]
    block_insns = len(ins.block.instructions)
    return {(flt.counter, _static_index(kind, value, block_insns, access))
            for access in (ins.accesses if kind.per_access else [None])}


def _emit_filter(isa: ISA, code: Code, found: tuple[RepeatFilter, Hook] | None,
                 ctx: HookContext) -> FilterEnd | None:
    """The inline repeat test (api.RepeatFilter) of ``found`` (``filter_of``); returns where the
    site ends, or None without a filter.

    Runs after r0-r3 are parked; flags untouched. r0 = key argument, then one fixup
    holds the rest of the test (filter_test); the call that follows runs only when
    the key was new, after the slot takes it (the key that left is then in r2 for a
    FILTER_LEFT argument: ``_filter_miss``).

    T32 with d16-d31 free puts the hit path last (decision 0017): the test's CBZ goes
    straight to the hit's counter, a NEON add with no branch that runs on into the rest
    of the site, so a hit is one translation block for QEMU, not three.
    """
    if found is None:
        return None
    flt, call = found
    kinds, args = call.prototype.kinds, call.args
    index = filter_counter_index(found, ctx)
    _argument(isa, code, 0, kinds[flt.key_arg], args[flt.key_arg], ctx, _key_temps(ctx))
    hit_bump = (lambda: _hit_bump(found, ctx)) if ctx.scratch.vfp else None
    return filter_test_after_key(isa, code, flt, Arg.FILTER_LEFT in kinds, ctx.counter_label, index,
                                 ctx.atomic_hits, hit_bump, ctx.flags_dead)


def filter_counter_index(found: tuple[RepeatFilter, Hook], ctx: HookContext) -> int:
    """Which element of the filter's counter array a hit at this site counts in (its
    ``count_by`` argument here); an AnvilError when the array has no such element."""
    flt, call = found
    kinds, args = call.prototype.kinds, call.args
    index = static_value(kinds[flt.count_by], args[flt.count_by], ctx)
    if not 0 <= index < flt.counts:
        raise AnvilError(f"{call.prototype.name}: counter index {index} is outside {flt.counter}[{flt.counts}]")
    return index


def filter_test_after_key(isa: ISA, code: Code, flt: RepeatFilter, left: bool,
                          counter_label: Callable[[str, int], Hashable], index: int, atomic: bool,
                          hit_bump: Callable[[], bytes | None] | None = None, flags_dead: bool = False) -> FilterEnd:
    """The filter's test with its key argument in r0 (_emit_filter); ``left``: the call
    takes the key that leaves the slot (in r2); ``index``: the hit counter's element;
    ``atomic``: hits count with LDREX/STREX. ``hit_bump`` (with d16-d31 free): gives the
    bytes of the hit's count when the hit path comes last. ``flags_dead``: the program's
    flags are dead here (an A32 test branches on flags of its own)."""
    memo, counter = counter_label(flt.memo, 0), counter_label(flt.counter, index)
    done = ("filter-done", id(code), code.size)
    near = None if flt.counter_offset is None else flt.counter_offset + 8 * index
    if isa.thumb and near is not None and near + 4 < 4096 and not atomic:
        hit = ("filter-hit", id(code), code.size) if hit_bump is not None else None
        shape = (code.pic, flt.shift, flt.slot_bits, flt.depth, near, hit is not None)
        code.later(filter_test_size(t32_filter_test, shape, 2),
                   functools.partial(_t32_filter_test, shape, memo, hit or done))
        code.emit(t32_filter_miss(flt.slot_bits, flt.depth, left))
        if hit_bump is None:
            return FilterEnd(done)
        bump = hit_bump()
        assert bump is not None  # the counter is within reach here
        return FilterEnd(done, hit, bump)
    shape = (isa.thumb, code.pic, flt.shift, flt.slot_bits, atomic, flt.depth, flags_dead and not isa.thumb)
    code.later(filter_test_size(filter_test, shape, 3),
               functools.partial(_filter_test, shape, memo, counter, done))
    # r3 = the slot: a new key takes it (the older key moves down at depth 2), and the call follows.
    if flt.depth == 2:
        isa.ldr(code, 2, 3, 4)
        isa.ldr(code, 0, 3, 0)
        isa.str(code, 0, 3, 4)
    elif left:
        isa.ldr(code, 2, 3, 0)
    isa.str(code, 1, 3, 0)
    return FilterEnd(done)


def static_value(kind: Arg, value: object, ctx: HookContext) -> int:
    """The value of a static argument at this site."""
    return _static_index(kind, value, ctx.block_insns, ctx.access)


def _static_index(kind: Arg, value: object, block_insns: int, access: Access | None) -> int:
    """The value of a static argument (a kind of STATIC_INDEX_KINDS) in a block of
    ``block_insns`` instructions, at ``access`` (None for the kinds that need none)."""
    if kind is Arg.CONST:
        return int(value)
    if kind is Arg.BLOCK_INSNS:
        return block_insns
    assert access is not None
    return int(access.is_store) if kind is Arg.ACCESS_IS_STORE else access.size


def _emit_record(isa: ISA, code: Code, hook: Hook, ctx: HookContext) -> None:
    """A ReHost record (T32, Linux: registers already parked in d16-d18, flags untouched):
    r0 = site id, r1-rN = dynamic arguments, then a call of the shared append routine
    for N+1 words (AppendRoutines, emit_append_routine).

    A site is two instructions more than its arguments; the append itself (about 70
    bytes) is written once instead of at every site.
    """
    assert isinstance(hook.prototype, RecordPrototype)
    dynamic = list(zip(hook.prototype.kinds, hook.args))[1:]
    _arguments(isa, code, dynamic, 1, ctx)
    _argument(isa, code, 0, Arg.SITE_ID, hook.args[0], ctx)
    ctx.call_stubs.add(RECORD_FLUSH)  # the append routine calls it
    ctx.appends.call(code, append_routine(1 + len(dynamic), hook.prototype.in_exclusive))


def _filtered_append(isa: ISA, hook: Hook, found: tuple[RepeatFilter, Hook] | None,
                     ctx: HookContext) -> tuple[FilteredAppend, bytes] | None:
    """The island routine (``emit_filtered_append``) that can run the call path of this
    record site and the bytes of the site's hit counter, or None when the site writes its
    own call path: the record must carry the filter's key argument, which the routine
    takes as a key (RepeatFilter.key_suffices), and at most the key that left, in that
    order; T32 with d16-d31 free, hits counted inline."""
    if (found is None or not isinstance(hook.prototype, RecordPrototype) or not isa.thumb or not ctx.scratch.vfp
            or ctx.threads):
        return None
    flt, call = found
    if not flt.key_suffices or flt.shift > 12 or ctx.atomic_hits:
        return None
    bump = _hit_bump(found, ctx)
    if bump is None:
        return None
    kinds = call.prototype.kinds
    dynamic = [i for i, kind in enumerate(kinds) if kind.dynamic]
    left = Arg.FILTER_LEFT in kinds
    if dynamic != [flt.key_arg] + ([kinds.index(Arg.FILTER_LEFT)] if left else []):
        return None
    island = FilteredAppend(FILTERED_APPEND, flt.depth, flt.slot_bits, left, 1 + len(dynamic),
                            hook.prototype.in_exclusive, len(bump))
    return island, bump


def _hit_bump(found: tuple[RepeatFilter, Hook], ctx: HookContext) -> bytes | None:
    """What a hit of the filter counts with at this site (a D register of the procedure's
    sums, else the counter beside the slot table), or None when neither applies."""
    flt, call = found
    kinds = call.prototype.kinds
    index = static_value(kinds[flt.count_by], call.args[flt.count_by], ctx)
    register = ctx.hit_registers.get((flt.counter, index))
    if register is not None:
        return register_hit(register)
    if flt.counter_offset is None or flt.counter_offset + 8 * index + 4 >= 4096:
        return None
    return neon_hit(flt.counter_offset + 8 * index)


def _t32_filter_test(shape: tuple, memo: Hashable, to: Hashable, at: int,
                     resolve: Callable[[Hashable], int]) -> bytes:
    """The fixup of a filter's T32 test with the counter in reach (functools.partial, not a closure a site)."""
    return t32_filter_test(*shape, at, resolve(memo), resolve(to))


def _filter_test(shape: tuple, memo: Hashable, counter: Hashable, done: Hashable, at: int,
                 resolve: Callable[[Hashable], int]) -> bytes:
    """The fixup of a filter's test (functools.partial, not a closure a site)."""
    return filter_test(*shape, at, resolve(memo), resolve(counter), resolve(done))


def _compact_test(shape: tuple, memo: Hashable, at: int, resolve: Callable[[Hashable], int]) -> bytes:
    """The fixup of a filtered record site's test (under functools.partial: not a closure a site)."""
    return t32_compact_test(*shape, at, resolve(memo))


def _emit_filtered_record(code: Code, hook: Hook, found: tuple[RepeatFilter, Hook], ctx: HookContext,
                          island: FilteredAppend, bump: bytes, dead: int) -> None:
    """A record site whose call path is shared code (``_filtered_append``), r0-r3 parked:

        the filter's test (t32_compact_test); a hit goes to ``hit``
        [vmov d18, ip, lr]     unless both are dead
        bl island              (this code page's copy)
        .word site id
        hit: the hit's counter
        (the island comes back here, past the counter)

    Some 14 bytes after the test instead of about 50 (the slot update, the record's
    arguments, the append and the ways round the hit): the island reads the site id
    from the word after its BL and the key from r1, and puts ip and lr back itself.
    """
    flt, call = found
    _argument(T32, code, 0, call.prototype.kinds[flt.key_arg], call.args[flt.key_arg], ctx, _key_temps(ctx))
    late_pairs = VFP_PAIRS[FILTER_TEMPS.parked:]
    park = ctx.scratch.save_bytes(T32, late_pairs, 16 + FILTER_TEMPS.parked, dead)
    memo = ctx.counter_label(flt.memo, 0)
    shape = (code.pic, flt.shift, flt.slot_bits, flt.depth, len(park) + 8)
    code.later(filter_test_size(t32_compact_test, shape, 1), functools.partial(_compact_test, shape, memo))
    code.emit(park)
    ctx.call_stubs.add(RECORD_FLUSH)  # the island's append calls it
    ctx.appends.call(code, island)
    code.emit(site_id_of(hook.args[0], ctx).to_bytes(4, "little"))
    code.emit(bump)


def _arguments(isa: ISA, code: Code, args: list[tuple[Arg, object]], first: int, ctx: HookContext) -> None:
    """Arguments ``args`` into r<first>, r<first+1>, ...: a FILTER_LEFT first, from r2 where
    the filter left it (the others write only their own register, ip and lr)."""
    order = sorted(range(len(args)), key=lambda i: args[i][0] is not Arg.FILTER_LEFT)
    for i in order:
        _argument(isa, code, first + i, *args[i], ctx)


def _argument(isa: ISA, code: Code, reg: int, kind: Arg, value: object, ctx: HookContext,
              temps: Temps = CALL_TEMPS) -> None:
    if kind is Arg.FILTER_LEFT:  # _emit_filter left it in r2
        if reg != 2:
            isa.mov_reg(code, reg, 2)
    elif kind is Arg.CONST:
        isa.mov32(code, reg, int(value) & 0xFFFFFFFF)
    elif kind is Arg.STRING:
        isa.pc_address(code, reg, ctx.string_label(str(value)))
    elif kind is Arg.INST_ADDR:
        assert ctx.ins is not None
        isa.pc_address(code, reg, ctx.ins.address)
    elif kind is Arg.BLOCK_INSNS:
        isa.mov32(code, reg, ctx.block_insns)
    elif kind is Arg.EFFADDR:
        assert ctx.access is not None and ctx.ins is not None
        _effective_address(isa, code, reg, ctx.access, ctx.ins, ctx.scratch, temps)
    elif kind is Arg.ACCESS_SIZE:
        assert ctx.access is not None
        isa.mov32(code, reg, ctx.access.size)
    elif kind is Arg.ACCESS_IS_STORE:
        assert ctx.access is not None
        isa.mov32(code, reg, int(ctx.access.is_store))
    elif kind is Arg.SITE_ID:
        isa.mov32(code, reg, site_id_of(value, ctx))
    elif kind is Arg.REG_VALUE:
        got = _original_reg(isa, code, int(value), reg, ctx.ins, ctx.scratch, temps.spare, temps.parked)
        if got != reg:
            isa.mov_reg(code, reg, got)
    else:
        raise AnvilError(f"argument kind {kind.name} is not supported yet")


def site_id_of(value: object, ctx: HookContext) -> int:
    """A record's site id (Arg.SITE_ID): the first access's, plus the access's index."""
    return int(value) + _access_index(ctx)


def _access_index(ctx: HookContext) -> int:
    """Position of the site's access among its instruction's accesses (0 without one)."""
    if ctx.access is None or ctx.ins is None:
        return 0
    return next(i for i, a in enumerate(ctx.ins.accesses) if a is ctx.access)



"""Code for hooks: calls of analysis routines and inline counters, in A32 or T32.

A call saves r0-r5, r12, lr and the flags (APSR including GE), runs the routine on a
stack of its own (or, when d16-d31 are not free, on the program's stack aligned to 8),
computes the arguments from the *original* register values (read back from where the
save sequence put them), calls the routine and restores everything. Inline counters
save only the registers they use.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from functools import cache

from ..api import Arg, Prototype, RepeatFilter
from ..arch import arm_encode as enc
from ..errors import AnvilError
from ..ir.model import Access, Hook, Instruction
from .code import Code
from .isa import IP, ISA, LR, PC, SP, T32, Scratch

SAVED = [0, 1, 2, 3, 4, 5, IP, LR]
VFP_PAIRS = [(0, 1), (2, 3), (IP, LR)]  # what AAPCS lets a C call clobber; r4-r11 survive it
FLAGS_SP = 19  # d19 holds the flags and the program's SP during a call
APPEND_PAIR = 21  # d21 holds the site id and the way back during a shared record append
SAVE_SLOT = {reg: 4 * i for i, reg in enumerate(SAVED)}
SAVE_BYTES = 4 * len(SAVED)
FLAGS_REG, FRAME_REG = 4, 5
HOOK_STACK_SYMBOL, HOOK_STACK_SHIFT = "anvil_hook_stack", 14  # 16 KiB (runtime_stubs/arm/anvil_rt.c)
HOOK_STACK = ("sym+", HOOK_STACK_SYMBOL, 1 << HOOK_STACK_SHIFT)  # top of the analysis code's own stack


RECORD_STATE = "anvil_rh_state"  # communicator: {next free word, flush limit, writers} (runtime_stubs/arm/anvil_comm.c)
RECORD_WRITERS = 8  # offset in the state of the number of appends under way (Linux)
RECORD_FLUSH = "anvil_rh_flush"
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


PAGE = 4096


class AppendRoutines:
    """The shared append routines record sites call: the image's own (``routines``) and
    copies on the pages of the sites that call them.

    QEMU chains a direct branch only to the page its translation block starts on
    (translator_use_goto_tb); a BL to one routine for the whole image would cost a TB
    lookup on every record. So where the code passes a point nothing falls through to
    (``place``: after an unconditional jump), the routines that sites on the current 4 KiB
    page have asked for are copied there, and a site's BL goes to its own page's copy
    when there is one, else to the image's routine. Pages are the link address's, which
    is why the code asks to stay page aligned (Code.keep_aligned).
    """

    def __init__(self) -> None:
        self.routines: set[tuple[str, int, bool]] = set()  # the image's copies, emitted after the code
        self.wanted: dict[int, set[tuple[str, int, bool]]] = {}  # page -> routines its sites call

    def call(self, code: Code, routine: tuple[str, int, bool]) -> None:
        """BL to ``routine``: this page's copy if one is placed, else the image's."""
        code.keep_aligned(PAGE)
        self.routines.add(routine)
        page = code.here() // PAGE
        self.wanted.setdefault(page, set()).add(routine)
        labels, local = code.labels, ("island", page, routine)
        code.later(4, lambda at, r: enc.t32_bl(at, labels[local] if local in labels else r(routine)))

    def place(self, code: Code) -> None:
        """Nothing falls through to here: copy the routines this page's sites want and lacks."""
        if not self.wanted:
            return
        page = code.here() // PAGE
        for stale in [p for p in self.wanted if p < page]:
            del self.wanted[stale]
        for routine in sorted(self.wanted.pop(page, ())):
            if ("island", page, routine) not in code.labels:
                emit_append_routine(code, routine, ("island", page, routine))


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


def _original_reg(isa: ISA, code: Code, reg: int, into: int, ins: Instruction | None,
                  scratch: Scratch, spare: int = LR, parked: int = len(VFP_PAIRS)) -> int:
    """Make the original value of ``reg`` available; returns the register holding it.

    ``spare`` (LR unless told) may be clobbered: it is the second output when reading
    a pair from d16-d18; ``into`` must differ from it. ``parked``: how many of
    VFP_PAIRS are in d16.. (the others still hold their original values).
    """
    if scratch.vfp:
        if reg == SP:  # the site has not moved SP
            return SP
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
        isa.add_imm(code, into, FRAME_REG, SAVE_BYTES)
        return into
    if reg == PC:
        assert ins is not None
        isa.pc_address(code, into, ins.address + isa.pc_offset)
        return into
    return reg


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
    if access.base == PC and access.index is None:
        isa.pc_address(code, dest, access.disp)
        return
    base = _original_reg(isa, code, access.base, dest, ins, scratch, temps.spare, temps.parked)
    if access.index is not None:
        index = _original_reg(isa, code, access.index, temps.index, ins, scratch, temps.index_spare, temps.parked)
        isa.add_shifted(code, dest, base, index, access.shift_type, access.shift, access.subtract)
        base = dest
    isa.add_imm(code, dest, base, access.disp, temps.immediate)


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
    found = _filter_of(hook)
    accesses = [c.access for c in contexts]
    if not isa.thumb or found is None or len(accesses) < 2 or any(a is None for a in accesses):
        return None
    flt, call = found
    first, last = accesses[0], accesses[-1]
    if first.base == PC or any(a.base != first.base or a.index is not None for a in accesses):
        return None
    if any(b.disp <= a.disp for a, b in zip(accesses, accesses[1:])) or last.disp - first.disp >= 1 << flt.shift:
        return None
    kind, value = call.prototype.kinds[flt.count_by], call.args[flt.count_by]
    indexes = {_static_value(kind, value, c) for c in contexts}
    if len(indexes) != 1:
        return None
    counter = contexts[0].counter_label(flt.counter, indexes.pop())
    where = (id(code), code.size)  # where the sites start: unique in this code
    return SharedKey(last.disp - first.disp, len(accesses) - 1, counter, ("straddles", where), ("shared-after", where))


def emit_call(isa: ISA, code: Code, hook: Hook, ctx: HookContext, shared: SharedKey | None = None) -> None:
    """A complete call of ``hook``'s routine with its arguments (behind its repeat filter, if any).

    With d16-d31 free, the site saves what a C call may clobber, computes the
    arguments and calls a stub shared by all sites of the routine, which saves the
    flags and SP, switches to the analysis stack and calls the routine (emit_call_stub).
    A repeat filter runs first with r0-r3 parked; ip and lr are parked only on the way
    to the call. ``shared``: this is an instruction's first access, and the test for
    the others follows (SharedKey; the caller emits their sites and ``shared.after``).
    """
    found = _filter_of(hook)
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
            if isa.thumb and isinstance(hook.prototype, RecordPrototype):
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
        code.emit(_MASK_INTERRUPTS)
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
_MASK_INTERRUPTS = (enc.t32_mrs_primask(IP) + enc.t32_logic_reg(enc.T32_ORR, FLAGS_REG, FLAGS_REG, IP)
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
    code.emit(_t32_bump(1, 0, shared.repeats))
    unsave()
    isa.branch(code, shared.after)
    code.label(shared.straddles)


def _filter_of(hook: Hook) -> tuple[RepeatFilter, Hook] | None:
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
    found = _filter_of(hook)
    if found is None:
        return set()
    flt, call = found
    kind, value = call.prototype.kinds[flt.count_by], call.args[flt.count_by]
    block_insns = len(ins.block.instructions)
    return {(flt.counter, _static_index(kind, value, block_insns, access))
            for access in (ins.accesses if kind.per_access else [None])}


@dataclass(frozen=True)
class FilterEnd:
    """Where a filtered site ends (``label``) and, when its hit path comes last (``hit``: a
    label, ``bump``: its bytes), what the caller emits after the call path: a jump to
    ``label``, then ``hit`` and ``bump``, then ``label``."""

    label: Hashable
    hit: Hashable | None = None
    bump: bytes = b""


def _emit_filter(isa: ISA, code: Code, found: tuple[RepeatFilter, Hook] | None,
                 ctx: HookContext) -> FilterEnd | None:
    """The inline repeat test (api.RepeatFilter) of ``found`` (``_filter_of``); returns where the
    site ends, or None without a filter.

    Runs after r0-r3 are parked; flags untouched. r0 = key argument, then one fixup
    holds the rest of the test (_filter_test); the call that follows runs only when
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
    index = _static_value(kinds[flt.count_by], args[flt.count_by], ctx)
    if not 0 <= index < flt.counts:
        raise AnvilError(f"{call.prototype.name}: counter index {index} is outside {flt.counter}[{flt.counts}]")
    _argument(isa, code, 0, kinds[flt.key_arg], args[flt.key_arg], ctx, _key_temps(ctx))
    memo, counter = ctx.counter_label(flt.memo, 0), ctx.counter_label(flt.counter, index)
    done = ("filter-done", id(code), code.size)
    near = None if flt.counter_offset is None else flt.counter_offset + 8 * index
    left = Arg.FILTER_LEFT in kinds
    if isa.thumb and near is not None and near + 4 < 4096 and not ctx.atomic_hits:
        hit = ("filter-hit", id(code), code.size) if ctx.scratch.vfp else None
        shape = (code.pic, flt.shift, flt.slot_bits, flt.depth, near, hit is not None)
        code.later(_test_size(_t32_filter_test, shape, 2),
                   lambda at, r: _t32_filter_test(*shape, at, r(memo), r(hit or done)))
        code.emit(_t32_filter_miss(flt.slot_bits, flt.depth, left))
        if hit is None:
            return FilterEnd(done)
        bump = _hit_bump(found, ctx)
        assert bump is not None  # the counter is within reach here
        return FilterEnd(done, hit, bump)
    shape = (isa.thumb, code.pic, flt.shift, flt.slot_bits, ctx.atomic_hits, flt.depth)
    code.later(_test_size(_filter_test, shape, 3),
               lambda at, r: _filter_test(*shape, at, r(memo), r(counter), r(done)))
    # r3 = the slot: a new key takes it (the older key moves down at depth 2), and the call follows.
    if flt.depth == 2:
        isa.ldr(code, 2, 3, 4)
        isa.ldr(code, 0, 3, 0)
        isa.str(code, 0, 3, 4)
    elif left:
        isa.ldr(code, 2, 3, 0)
    isa.str(code, 1, 3, 0)
    return FilterEnd(done)


@cache
def _test_size(test: Callable[..., bytes], shape: tuple, labels: int) -> int:
    """How long ``test(*shape, at, *addresses of its labels)`` is: the same wherever it lands."""
    return len(test(*shape, 0, *[0x1000] * labels))


@cache
def _t32_filter_miss(slot_bits: int, depth: int, left: bool) -> bytes:
    """After the fast T32 test (_t32_filter_test) found a new key: the slot takes it; r2 = the
    key that left when the call takes it (``left``, always at depth 2).

    Depth 1: r0 = old - key, r2 = the slot index, r3 = the table. Depth 2: r2 = the slot.
    """
    if depth == 2:  # r3 = most recent, r0 = older (leaves); the slot becomes (key, most recent)
        return enc.t32_ldrd(3, 0, 2) + enc.t32_strd(1, 3, 2) + enc.t32_mov_reg(2, 0)
    store = enc.t32_str_reg_lsl(1, 3, 2, 2) if slot_bits else enc.t32_str_imm(1, 3, 0)
    if not left:
        return store
    return enc.t32_add_reg_shift(0, 0, 1, 0, 0) + store + enc.t32_mov_reg(2, 0)


@cache
def _filter_prefix(thumb: bool, shift: int, slot_bits: int, depth: int) -> tuple[bytes, bytes]:
    """The address-independent parts of the test: key into r1; then r3 = the slot (from r3 =
    the table), r2 = its most recent key - the key."""
    slot_shift = 2 if depth == 1 else 3
    if thumb:
        key = _t32_filter_key(shift)
        index = (enc.t32_ubfx(2, 0, shift, slot_bits) + enc.t32_add_reg_shift(3, 3, 2, 0, slot_shift)
                 if slot_bits else b"")
        return key, index + enc.t32_ldr_imm(2, 3, 0) + enc.t32_sub_reg(2, 2, 1)
    if shift <= 12:
        key = b"".join(enc.a32_orr_imm(1, 0 if i == 0 else 1, part) for i, part in enumerate(_key_bits(shift)))
    else:
        key = enc.a32_lsr_imm(1, 0, shift) + enc.a32_orr_imm(1, 1, 0x80000000)
    index = (enc.a32_ubfx(2, 0, shift, slot_bits) + enc.a32_add_reg_shift(3, 3, 2, 0, slot_shift)
             if slot_bits else b"")
    return key, index + enc.a32_ldr_imm(2, 3, 0) + enc.a32_sub_reg(2, 2, 1)


def _key_bits(shift: int) -> list[int]:
    """The ORR immediates that set an address's low ``shift`` bits (shift <= 12): one or two
    modified immediates."""
    mask = (1 << shift) - 1
    return [mask & 0xFF] + ([mask & 0xF00] if shift > 8 else [])


@cache
def _t32_filter_key(shift: int) -> bytes:
    """T32 r1 = the key of the address in r0: never 0, equal exactly when the addresses >> shift
    are; up to 4 KiB keys, the last address of the key's range (what Arg.FILTER_LEFT gives)."""
    if shift <= 12:  # r1 = r0 | low bits
        return b"".join(enc.t32_orr_imm(1, 0 if i == 0 else 1, part) for i, part in enumerate(_key_bits(shift)))
    return enc.t32_lsr_imm(1, 0, shift) + enc.t32_orr_imm(1, 1, 0x80000000)


def _t32_filter_test(pic: bool, shift: int, slot_bits: int, depth: int, near: int, hit_last: bool, at: int,
                     memo: int, done: int) -> bytes:
    """T32 test at ``at`` when the counter lies ``near`` bytes past the slot table (api.RepeatFilter
    .counter_offset): r1 = key; r3 = the table; r2 = slot index; r0 = slot - key; if r0 != 0
    go on (depth 1: to the end of these bytes, the call path, which stores r1 at [r3, r2,
    lsl #2]); else the counter at [r3, #near] += 1 and go to ``done``. One base register for
    both: no second address to build and no slot address to add on the hot path.

    Depth 2 (slots of two words, the most recent key first): on to r2 = the slot; if its
    older key is r1, the two swap, the counter counts and the code goes to ``done``; else
    to the end of these bytes, the call path (_t32_filter_miss).

    ``hit_last``: ``done`` is the hit path's counter (_neon_hit), which the caller puts after
    the call path; a hit goes there (CBZ when it reaches, else CBNZ over a B.W) with r3 =
    the table, the counter untouched.
    """
    head = _t32_filter_key(shift)
    head += enc.t32_pc_address(3, at + len(head), memo) if pic else enc.t32_mov32(3, memo)
    if hit_last:
        return head + _t32_filter_body_hit_last(shift, slot_bits, depth, done - (at + len(head)))
    return head + _t32_filter_body(shift, slot_bits, depth, near, done - (at + len(head)))


def _t32_slot_compare(shift: int, slot_bits: int, depth: int) -> bytes:
    """r0 = the slot's most recent key - r1 (r3 = the table; r2 = the slot index when there is one)."""
    if slot_bits:
        out = enc.t32_ubfx(2, 0, shift, slot_bits) + enc.t32_ldr_reg_lsl(0, 3, 2, 2 if depth == 1 else 3)
    else:
        out = enc.t32_ldr_imm(0, 3, 0)
    return out + enc.t32_sub_reg(0, 0, 1)


@cache
def _t32_filter_body_hit_last(shift: int, slot_bits: int, depth: int, to_hit: int) -> bytes:
    """_t32_filter_body for a hit path that comes after the call path, ``to_hit`` bytes from the
    start of these bytes: a hit jumps there, a new key runs on past their end."""
    out = bytearray(_t32_slot_compare(shift, slot_bits, depth))
    reach = to_hit - (len(out) + 4)
    if 0 <= reach <= 126:
        out += enc.t32_cbz(0, reach) + enc.t32_nop() + enc.t32_nop()
    else:
        out += enc.t32_cbz(0, 2, nonzero=True) + enc.t32_b(len(out) + 2, to_hit)  # a new key: past the B.W
    if depth == 2:  # the older key: a hit swaps the two and counts with the others
        out += enc.t32_add_reg_shift(2, 3, 2, 0, 3) if slot_bits else enc.t32_mov_reg(2, 3)
        out += enc.t32_ldr_word(0, 2, 4) + enc.t32_sub_reg(0, 0, 1)
        swap = enc.t32_ldr_word(0, 2, 0) + enc.t32_strd(1, 0, 2)
        out += enc.t32_cbz(0, len(swap) + 2, nonzero=True) + swap  # a new key: past the swap and its B.W
        out += enc.t32_b(len(out), to_hit)
    return bytes(out)


def _neon_add_one(value: int, ones: int, base: int, offset: int = 0) -> bytes:
    """T32 64-bit counter at [base, #offset] += 1 in d``value`` (d``ones`` = -1): no flags, no branch."""
    return (enc.t32_vldr_d(value, base, offset) + enc.t32_vmov_all_ones(ones) + enc.t32_vsub_i64(value, value, ones)
            + enc.t32_vldr_d(value, base, offset, store=True))


@cache
def _neon_hit(near: int) -> bytes:
    """The 64-bit counter at [r3, #near] += 1 in d23 and d24 (r0 when VLDR cannot reach it): a
    filter's hit, with r0-r3 and d16-d18 still the site's."""
    if near <= 1020 and near % 4 == 0:
        return _neon_add_one(23, 24, 3, near)
    return enc.t32_add_imm(0, 3, near) + _neon_add_one(23, 24, 0)


@cache
def _t32_filter_body(shift: int, slot_bits: int, depth: int, near: int, to_done: int) -> bytes:
    """What follows the key and the table's address in _t32_filter_test, with ``done``
    ``to_done`` bytes from its start: the same for the many sites whose call paths have one
    length (cached: the rewrite emits it at tens of thousands of sites)."""
    out = bytearray(_t32_slot_compare(shift, slot_bits, depth))
    branch_at = len(out)
    out += bytes(2)  # CBNZ r0 past the hit, encoded below
    hit_at = len(out)
    out += _t32_hit(near, len(out), to_done)
    if depth == 2:
        out[branch_at:branch_at + 2] = enc.t32_cbz(0, len(out) - (branch_at + 4), nonzero=True)
        out += enc.t32_add_reg_shift(2, 3, 2, 0, 3) if slot_bits else enc.t32_mov_reg(2, 3)
        out += enc.t32_ldr_word(0, 2, 4) + enc.t32_sub_reg(0, 0, 1)
        branch_at = len(out)
        out += bytes(2)
        out += enc.t32_ldr_word(0, 2, 0) + enc.t32_strd(1, 0, 2)  # the older key was r1: swap
        out += enc.t32_b_narrow(len(out), hit_at)  # and count it with the other hits
    out[branch_at:branch_at + 2] = enc.t32_cbz(0, len(out) - (branch_at + 4), nonzero=True)
    return bytes(out)


def _t32_hit(near: int, at: int, done: int) -> bytes:
    """At ``at``: the counter at [r3, #near] += 1, then to ``done``. A hit without a carry goes
    straight to ``done`` when the bump's CBNZ reaches it (the B is then taken only after a
    carry); same bytes otherwise."""
    to_done = done - at
    reach = len(_t32_bump_low(3, near, 1)) + 4  # the bump's CBNZ's PC, from its start
    within = to_done % 2 == 0 and reach <= to_done <= reach + 126
    bump = _t32_bump(3, near, 1, to_done if within else None)
    return bump + enc.t32_b(at + len(bump), done)


def _filter_test(thumb: bool, pic: bool, shift: int, slot_bits: int, atomic: bool, depth: int, at: int,
                 memo: int, counter: int, done: int) -> bytes:
    """Bytes of the test at ``at``: r1 = key; r3 = the slot; r2 = its most recent key - key; if
    r2 != 0 go on (depth 1: to the end of these bytes, the call path); else counter += 1
    and go to ``done``. Depth 2: then if the slot's older key (at [r3, #4]) is r1, the two
    swap, counter += 1 and go to ``done``; else to the end. ``atomic``: the add with
    LDREX/STREX (LDREXD/STREXD in A32), for threads.

    T32 branches with CBNZ; A32 has none, so r2 = clz(r2) >> 5 (1 when equal) and
    ``add pc, pc, r2, lsl #2`` lands on a B past the hit or just past that B.
    """
    key, compare = _filter_prefix(thumb, shift, slot_bits, depth)
    out = bytearray(key)

    def address(rd: int, target: int) -> bytes:
        if thumb:
            return enc.t32_pc_address(rd, at + len(out), target) if pic else enc.t32_mov32(rd, target)
        return enc.a32_pc_address(rd, at + len(out), target) if pic else enc.a32_mov32(rd, target)

    def hit() -> None:  # the key in r1 and the address in r0 are not needed past a hit
        if thumb:
            out.extend(address(1, counter) + (_T32_ATOMIC_BUMP if atomic else _T32_BUMP))
            out.extend(enc.t32_b(at + len(out), done))
        else:
            out.extend(address(2, counter) + (_A32_ATOMIC_BUMP if atomic else _increment_tail(thumb, 1, 3)))
            out.extend(enc.a32_b(at + len(out), done))

    def branch_if_differs(branch_at: int) -> None:  # at ``branch_at``: if r2 != 0 go to the end so far
        if thumb:
            out[branch_at:branch_at + 2] = enc.t32_cbz(2, len(out) - (branch_at + 4), nonzero=True)
        else:
            out[branch_at:branch_at + 20] = (enc.a32_clz(2, 2) + enc.a32_lsr_imm(2, 2, 5)
                                             + enc.a32_add_reg_shift(PC, PC, 2, 0, 2) + enc._w(0xE320F000)  # nop
                                             + enc.a32_b(at + branch_at + 16, at + len(out)))

    out += address(3, memo)
    out += compare
    branch_at = len(out)
    out += bytes(2 if thumb else 20)  # the branch past the hit, encoded below
    hit_at = len(out)
    hit()
    if depth == 2:
        branch_if_differs(branch_at)
        older = (enc.t32_ldr_imm(2, 3, 4) + enc.t32_sub_reg(2, 2, 1) if thumb
                 else enc.a32_ldr_imm(2, 3, 4) + enc.a32_sub_reg(2, 2, 1))
        out += older
        branch_at = len(out)
        out += bytes(2 if thumb else 20)
        # Swap: the slot becomes (key, most recent); then count it with the other hits.
        if thumb:
            out += enc.t32_ldr_word(0, 3, 0) + enc.t32_str_word(1, 3, 0) + enc.t32_str_word(0, 3, 4)
            out += enc.t32_b_narrow(at + len(out), at + hit_at)
        else:
            out += enc.a32_ldr_imm(0, 3, 0) + enc.a32_str_imm(1, 3, 0) + enc.a32_str_imm(0, 3, 4)
            out += enc.a32_b(at + len(out), at + hit_at)
    branch_if_differs(branch_at)
    return bytes(out)


def _static_value(kind: Arg, value: object, ctx: HookContext) -> int:
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


FILTERED_APPEND = "filtered-append"


def _filtered_append(isa: ISA, hook: Hook, found: tuple[RepeatFilter, Hook] | None,
                     ctx: HookContext) -> tuple[tuple, bytes] | None:
    """The island routine (``emit_filtered_append``) that can run the call path of this
    record site and the bytes of the site's hit counter, or None when the site writes its
    own call path: the record must carry the filter's key argument, which the routine
    takes as a key (RepeatFilter.key_suffices), and at most the key that left, in that
    order; T32 with d16-d31 free, hits counted inline."""
    if found is None or not isinstance(hook.prototype, RecordPrototype) or not isa.thumb or not ctx.scratch.vfp:
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
    island = (FILTERED_APPEND, flt.depth, flt.slot_bits, left, 1 + len(dynamic), hook.prototype.in_exclusive,
              len(bump))
    return island, bump


def _hit_bump(found: tuple[RepeatFilter, Hook], ctx: HookContext) -> bytes | None:
    """What a hit of the filter counts with at this site (a D register of the procedure's
    sums, else the counter beside the slot table), or None when neither applies."""
    flt, call = found
    kinds = call.prototype.kinds
    index = _static_value(kinds[flt.count_by], call.args[flt.count_by], ctx)
    register = ctx.hit_registers.get((flt.counter, index))
    if register is not None:
        return _register_hit(register)
    if flt.counter_offset is None or flt.counter_offset + 8 * index + 4 >= 4096:
        return None
    return _neon_hit(flt.counter_offset + 8 * index)


def _emit_filtered_record(code: Code, hook: Hook, found: tuple[RepeatFilter, Hook], ctx: HookContext,
                          island: tuple, bump: bytes, dead: int) -> None:
    """A record site whose call path is shared code (``_filtered_append``), r0-r3 parked:

        the filter's test (_t32_compact_test); a hit goes to ``hit``
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
    code.later(_test_size(_t32_compact_test, shape, 1), lambda at, r: _t32_compact_test(*shape, at, r(memo)))
    code.emit(park)
    ctx.call_stubs.add(RECORD_FLUSH)  # the island's append calls it
    ctx.appends.call(code, island)
    code.emit(_site_id(hook.args[0], ctx).to_bytes(4, "little"))
    code.emit(bump)


def _t32_compact_test(pic: bool, shift: int, slot_bits: int, depth: int, to_hit: int, at: int, memo: int) -> bytes:
    """The filter's test at a site with a shared call path, at ``at``, its hit ``to_hit``
    bytes past these bytes. r1 = the key; r3 = the table; r0 = the slot's most recent key
    - r1: 0 is a hit. Depth 2: then r2 = the slot; the older key a hit too, swapped to
    the front. A new key runs on past these bytes, with _t32_filter_miss's registers."""
    key = _t32_filter_key(shift)
    table = enc.t32_pc_address(3, at + len(key), memo) if pic else enc.t32_mov32(3, memo)
    return key + table + _t32_compact_body(shift, slot_bits, depth, to_hit)


@cache
def _t32_compact_body(shift: int, slot_bits: int, depth: int, to_hit: int) -> bytes:
    """_t32_compact_test after the key and the table's address."""
    head = _t32_slot_compare(shift, slot_bits, depth)
    rest = b""
    if depth == 2:
        rest = enc.t32_add_reg_shift(2, 3, 2, 0, 3) if slot_bits else enc.t32_mov_reg(2, 3)
        rest += enc.t32_ldr_word(0, 2, 4) + enc.t32_sub_reg(0, 0, 1)
        swap = enc.t32_ldr_word(0, 2, 0) + enc.t32_strd(1, 0, 2)
        rest += enc.t32_cbz(0, len(swap), nonzero=True) + swap  # a new key: past the swap and its B.N
        rest += enc.t32_b_narrow(len(rest), len(rest) + 2 + to_hit)
    return head + enc.t32_cbz(0, len(rest) + to_hit - 2) + rest


def emit_filtered_append(code: Code, routine: tuple, label: Hashable) -> None:
    """The island of ``_filtered_append``'s routine: what a filtered record site does when
    its test found a new key (T32, Linux).

    Entered by BL with _t32_filter_miss's registers, r1 = the key, ip and lr parked in
    d18 (or dead), lr = the site id's word (with the Thumb bit). The slot takes the key
    (r2 = the key that left), the record (site id, key[, left]) is appended
    (emit_append_routine's body), ip and lr come back from d18, and the code goes on
    past the word and the site's hit counter (``skip`` bytes). r0 and r1 (parked or dead
    at the site) hold the way back and the site id; flags untouched.
    """
    _, depth, slot_bits, left, words, in_exclusive, skip = routine
    code.align(4)
    code.label(label)
    code.emit(_t32_filter_miss(slot_bits, depth, left))
    code.emit(enc.t32_ldr_neg(0, LR, 1) + enc.t32_add_imm(LR, LR, 4 + skip))
    _append_body(code, words, in_exclusive)
    code.emit(enc.t32_vmov_from_d(1, 0, APPEND_PAIR) + enc.t32_vmov_from_d(IP, LR, 18) + enc.t32_bx(0))


def append_routine(words: int, in_exclusive: bool) -> tuple[str, int, bool]:
    """The label of the shared routine appending a record of ``words`` words."""
    return ("append", words, in_exclusive)


def emit_append_routine(code: Code, routine: tuple[str, int, bool], label: Hashable | None = None) -> None:
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
    (runtime_stubs/arm/anvil_comm.c). A plain increment and decrement are enough: a
    handler gives back what it took before the code it interrupted goes on. Inside
    the program's own exclusive window (``in_exclusive``) a STREX of ours would make the
    program's fail each time round its loop: the reservation is a plain load and store
    there (not safe against a signal handler's record; docs/decisions/0010). The flush
    routine is called through the shared call stub, which saves the flags and keeps its
    own return address in d19; nothing here sets them.
    """

    if routine[0] == FILTERED_APPEND:
        emit_filtered_append(code, routine, routine if label is None else label)
        return
    _, words, in_exclusive = routine
    code.align(4)
    code.label(routine if label is None else label)
    _append_body(code, words, in_exclusive)
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


def emit_call_stub(code: Code, name: str, function: Hashable, threads: bool = False) -> None:
    """Shared tail of the calls of one routine (T32): flags and SP into d19/d20, own stack, call, back.

    ``threads``: the program starts threads, which share the analysis stack and state, so
    the call holds a lock (``_lock``) from before the stack is taken until the routine
    has returned.
    """

    code.align(4)
    code.label(("callstub", name))
    T32.mrs(code, IP)
    T32.to_d(code, FLAGS_SP, IP, LR)  # flags, return address
    T32.mov_reg(code, IP, SP)
    T32.to_d(code, FLAGS_SP + 1, IP, IP)  # the program's SP
    if threads:
        _lock(code, name)
    if name == RECORD_FLUSH or name.startswith(RECORD_PREFIX):
        _reentrant_stack(code)
    else:
        T32.pc_address(code, IP, HOOK_STACK)
    T32.mov_reg(code, SP, IP)
    T32.call(code, function)
    if threads:
        _unlock(code, name)
    T32.from_d(code, IP, LR, FLAGS_SP + 1)
    T32.mov_reg(code, SP, IP)
    T32.from_d(code, IP, LR, FLAGS_SP)
    slow = ("callstub-msr", name)
    code.emit(_FLAGS_CHANGED_BEYOND_NZCV)
    T32.cbz(code, 0, slow, nonzero=True)
    code.emit(_SET_NZCV_FROM_IP + enc.t32_bx(LR))
    code.label(slow)
    T32.msr(code, IP)
    code.emit(enc.t32_bx(LR))


CALL_LOCK = ("sym", "anvil_call_lock")  # {owner's thread pointer or 0, depth} (runtime_stubs/arm/anvil_rt.c)
LOCK_PARK = 22  # d22 keeps r0 while the stub takes the lock
_MRC_THREAD_POINTER_IP = enc._hw(0xEE1D, (IP << 12) | 0x0F70)  # mrc p15, 0, ip, c13, c0, 3 (TPIDRURO)
_CMP_R0_IP = enc._hw(0x4500 | (IP << 3))  # cmp r0, ip (T2)
_DMB_ISH = enc._hw(0xF3BF, 0x8F5B)
_YIELD = enc._hw(0xBF10)


def _lock(code: Code, name: str) -> None:
    """Take the analysis lock, owned by a thread and counted, so that a signal handler the
    same thread runs in the middle of a call goes in again (as without threads) while
    other threads wait. The owner is the thread pointer (TPIDRURO; 0 before the C library
    set it, when there is one thread only). Only ip and lr are free, and the flags (the
    stub has them in d19); r0 is parked in d22.

        retry: ldrex r0, [lr]; cmp r0, ip; beq mine; cmp r0, #0; bne retry (yield)
               strex r0, ip, [lr]; cmp r0, #0; bne retry; dmb
        mine:  depth += 1
    """

    retry, wait, mine = (("callstub-lock", name, k) for k in range(3))
    code.emit(enc.t32_vmov_to_lane(LOCK_PARK, 0) + _MRC_THREAD_POINTER_IP)
    T32.pc_address(code, LR, CALL_LOCK)
    code.label(retry)
    code.emit(enc.t32_ldrex(0, LR) + _CMP_R0_IP)
    T32.branch(code, mine, enc.COND["eq"])
    T32.cmp_zero(code, 0)
    T32.branch(code, wait, enc.COND["ne"])
    code.emit(enc.t32_strex(0, IP, LR))
    T32.cmp_zero(code, 0)
    T32.branch(code, retry, enc.COND["ne"])
    code.emit(_DMB_ISH)
    T32.branch(code, mine)
    code.label(wait)  # held by another thread: let it run
    code.emit(_YIELD)
    T32.branch(code, retry)
    code.label(mine)
    code.emit(enc.t32_ldr_word(0, LR, 4) + enc.t32_add_imm(0, 0, 1) + enc.t32_str_word(0, LR, 4)
              + enc.t32_vmov_from_lane(0, LOCK_PARK))


def _unlock(code: Code, name: str) -> None:
    """Give the analysis lock back (see _lock) once the routine has returned: r0 and r1 are
    free. depth -= 1, and at 0 (after a barrier, so the routine's writes come first) the
    owner word too."""

    held = ("callstub-unlock", name)
    T32.pc_address(code, 1, CALL_LOCK)
    code.emit(enc.t32_ldr_word(0, 1, 4) + enc._hw(0x3801) + enc.t32_str_word(0, 1, 4))  # subs r0, #1
    T32.cbz(code, 0, held, nonzero=True)
    code.emit(_DMB_ISH + enc.t32_str_word(0, 1, 0))
    code.label(held)


def _reentrant_stack(code: Code) -> None:
    """ip = where a ReHost routine's stub puts SP: the hook stack's top or, when SP is already
    inside the hook stack, SP rounded down to 8.

    A signal handler may interrupt the communicator while it runs on the hook stack (the
    kernel then puts the signal frame there too) and make a record that flushes, or
    (A32) calls a record routine: starting again at the top would overwrite the frames
    of the routine it interrupted. Only ip and lr are free (r0-r3 may hold the routine's
    arguments); the flags are, since the stub has saved them in d19.
    """

    outside = ("callstub-outside", id(code), code.size)
    T32.pc_address(code, LR, ("sym", HOOK_STACK_SYMBOL))
    code.emit(enc.t32_sub_reg(LR, SP, LR) + enc.t32_lsr_imm(LR, LR, HOOK_STACK_SHIFT, setflags=True))
    T32.pc_address(code, IP, HOOK_STACK)  # no flags: Z says base <= SP < top
    T32.branch(code, outside, enc.COND["ne"])
    code.emit(enc.t32_mov_reg(IP, SP) + enc.t32_bic_imm(IP, IP, 7))
    code.label(outside)


# The stub's way back sets the program's flags again from ip (its saved APSR) with
# ordinary flag-setting instructions, not MSR: under QEMU an MSR ends the translation
# block and leaves the CPU loop, which cost more than the analysis call itself. r0 and
# r1 are free (the routine clobbered them; the site restores them). MSR remains for
# what arithmetic cannot set: Q or GE changed by the routine, or N and Z both set.
_FLAGS_CHANGED_BEYOND_NZCV = b"".join([   # r0 != 0 when the fast way would be wrong
    enc.t32_mrs_apsr(0),
    enc.t32_logic_reg(enc.T32_EOR, 0, 0, IP),                 # bits the routine changed
    enc.t32_logic_imm(enc.T32_BIC, 0, 0, 0xF0000000),         # ... other than NZCV
    enc.t32_logic_reg(enc.T32_AND, 1, IP, IP, 0, 1),          # bit 31: N and Z both set
    enc.t32_logic_imm(enc.T32_AND, 1, 1, 0x80000000),
    enc.t32_logic_reg(enc.T32_ORR, 0, 0, 1),
])
_SET_NZCV_FROM_IP = b"".join([
    enc.t32_lsl_imm(0, IP, 2),                                # bit 31 = C, bit 30 = V
    enc.t32_logic_reg(enc.T32_EOR, 0, 0, 0, 1, 1),            # bit 30 = C ^ V
    enc.t32_logic_imm(enc.T32_AND, 1, IP, 0xC0000000),
    enc.t32_logic_imm(enc.T32_EOR, 1, 1, 0x40000000),         # bit 31 = N, bit 30 = not Z
    enc._hw(0x1800),                                          # adds r0, r0, r0: C = bit 31, V = bit 31 ^ bit 30
    enc._hw(0x0009),                                          # movs r1, r1: N and Z; C and V stay
])


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
        isa.mov32(code, reg, _site_id(value, ctx))
    elif kind is Arg.REG_VALUE:
        got = _original_reg(isa, code, int(value), reg, ctx.ins, ctx.scratch, temps.spare, temps.parked)
        if got != reg:
            isa.mov_reg(code, reg, got)
    else:
        raise AnvilError(f"argument kind {kind.name} is not supported yet")


def _site_id(value: object, ctx: HookContext) -> int:
    """A record's site id (Arg.SITE_ID): the first access's, plus the access's index."""
    return int(value) + _access_index(ctx)


def _access_index(ctx: HookContext) -> int:
    """Position of the site's access among its instruction's accesses (0 without one)."""
    if ctx.access is None or ctx.ins is None:
        return 0
    return next(i for i, a in enumerate(ctx.ins.accesses) if a is ctx.access)


def emit_increment(isa: ISA, code: Code, counter_label: Hashable, amount: int, scratch: Scratch,
                   atomic: bool = False, dead: int = 0) -> None:
    """counter (64-bit, at a label) += amount, inline, registers and flags preserved.

    ``atomic`` (+1: firmware interrupt code, programs that start threads): each word is
    added with LDREX/STREX (``_T32_ATOMIC_BUMP``; A32: the pair with LDREXD/STREXD,
    ``_A32_ATOMIC_BUMP``), so a handler or thread that counts at the same time is not lost.

    T32 with d16-d31 free adds 1 in a NEON register (``_neon_increment``; the address goes
    in a register of ``dead``, bit n for rn, else in r1, parked): no branch, so the block
    stays one translation block for QEMU, which ends one at every branch (decision 0003).
    Without them T32 adds 1 with ADDW and carries with CBNZ (``_T32_BUMP``). Otherwise
    UMLAL adds a 64-bit product without touching the flags: lo:hi += amount * 1 (r3 =
    amount; the 1 is r3 itself when amount is 1, else ip).
    """
    if isa.thumb and amount == 1 and atomic:
        pairs = [(0, 1), (2, 3)]
        scratch.save(isa, code, pairs)
        isa.pc_address(code, 1, counter_label)
        code.emit(_T32_ATOMIC_BUMP)
        scratch.restore(isa, code, pairs)
        return
    if isa.thumb and amount == 1 and scratch.vfp:
        _with_address_at(isa, code, counter_label, _neon_increment, dead)
        return
    if isa.thumb and amount == 1:
        scratch.save(isa, code, [(0, 1)])
        isa.pc_address(code, 1, counter_label)
        code.emit(_T32_BUMP)
        scratch.restore(isa, code, [(0, 1)])
        return
    if not isa.thumb and amount == 1 and atomic:
        scratch.save(isa, code, [(0, 1), (2, 3)])
        isa.pc_address(code, 2, counter_label)
        code.emit(_A32_ATOMIC_BUMP)
        scratch.restore(isa, code, [(0, 1), (2, 3)])
        return
    one = 3 if amount == 1 else IP
    pairs = [(0, 1), (2, 3)] + ([(IP, LR)] if one == IP else [])
    scratch.save(isa, code, pairs)
    isa.pc_address(code, 2, counter_label)
    code.emit(_increment_tail(isa.thumb, amount, one))
    scratch.restore(isa, code, pairs)


SUM_REGISTER = 31  # d31: a procedure's running sum (decision 0014, emit/procedure_sums.py)
SUM_TEMP = 30  # d30: the amount being added to it
# A repeat filter's hit counts, by counter index, where a procedure keeps them (decision 0019).
HIT_REGISTERS = (28, 29)
# d24 = -1 wherever a procedure counts hits in registers: set with them where they start
# (nothing else writes d24 but with -1: the program does not use d16-d31, the analysis
# library no VFP register at all, and code the registers do not survive, a library or a
# signal handler's, is left through a store and come back from through a reset).
ONES = 24


def emit_sum_reset(code: Code, registers: Iterable[int]) -> None:
    """Each of ``registers`` = 0: a procedure's running sums start (T32); with hit counts
    among them, d24 = -1 for their adds (``_register_hit``)."""
    code.emit(_zeroes(tuple(sorted(registers))))


@cache
def _zeroes(registers: tuple[int, ...]) -> bytes:
    ones = enc.t32_vmov_all_ones(ONES) if set(registers) & set(HIT_REGISTERS) else b""
    return b"".join(enc.t32_vmov_i64_zero(d) for d in registers) + ones


@cache
def _sum_add(weight: int) -> bytes:
    """d31 += ``weight`` (any 32-bit signed value), a byte at a time: VMOV.I32 puts the byte,
    shifted into place, in both halves of d30; VSRA adds d30's high half to d31 (an
    amount to subtract is shifted down first, then subtracted)."""
    out = b""
    magnitude = abs(weight)
    for k in range(4):
        byte = (magnitude >> (8 * k)) & 0xFF
        if not byte:
            continue
        out += enc.t32_vmov_imm(SUM_TEMP, byte, 2 * k)
        if weight > 0:
            out += enc.t32_vshift_right_u64(SUM_REGISTER, SUM_TEMP, 32, accumulate=True)
        else:
            out += (enc.t32_vshift_right_u64(SUM_TEMP, SUM_TEMP, 32)
                    + enc.t32_vsub_i64(SUM_REGISTER, SUM_REGISTER, SUM_TEMP))
    return out


def emit_sum_add(code: Code, weight: int) -> None:
    """d31 += ``weight`` (T32): what a counted block or branch adds to its procedure's sum."""
    assert weight and abs(weight) < 1 << 32, weight
    code.emit(_sum_add(weight))


@cache
def _register_hit(register: int) -> bytes:
    """d``register`` += 1: a filter's hit counted in its procedure's sum, one instruction
    (d24 = -1 since the sums' reset)."""
    return enc.t32_vsub_i64(register, register, ONES)


Sums = dict[int, tuple[str, int]]  # D register -> (counter array, index): model.Accumulation.sums


@cache
def _store_bodies(sums: tuple[tuple[int, tuple[str, int]], ...], base: int) -> tuple[tuple[str, int, bytes], ...]:
    """How to store ``sums`` (sorted items of a Sums; T32): per counter array, its first
    slot's index, whose address goes in r``base``, and the bytes that then do ``[slot] +=
    register; register = 0`` for each of its sums (d30 holds a slot's value). A filter's
    counts share one base, the others at offsets from it."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for register, (array, index) in sums:
        groups.setdefault(array, []).append((register, index))
    out = []
    for array, members in groups.items():
        first = min(index for _, index in members)
        body = b""
        for register, index in members:
            offset = 8 * (index - first)
            body += (enc.t32_vldr_d(SUM_TEMP, base, offset) + enc.t32_vadd_i64(SUM_TEMP, SUM_TEMP, register)
                     + enc.t32_vldr_d(SUM_TEMP, base, offset, store=True) + enc.t32_vmov_i64_zero(register))
        out.append((array, first, body))
    return tuple(out)


def emit_sum_store(code: Code, sums: Sums, counter_label: Callable[[str, int], Hashable], dead: int = 0) -> None:
    """Each running sum into its slot, then zero (T32): a procedure's sums leave their registers.
    The slots' address goes in a register of ``dead`` (bit n for rn; _with_base)."""
    _with_base(code, dead, lambda base: emit_sum_store_free(code, sums, counter_label, base))


def emit_sum_store_free(code: Code, sums: Sums, counter_label: Callable[[str, int], Hashable],
                        base: int = 1) -> None:
    """The same where r``base`` is free: no parking."""
    for array, first, body in _store_bodies(tuple(sorted(sums.items())), base):
        T32.pc_address(code, base, counter_label(array, first))
        code.emit(body)


def free_register(dead: int) -> int | None:
    """A register of ``dead`` (bit n for rn) that NEON counters and sum stores may take for
    an address (any but SP and PC), the lowest; None when there is none."""
    dead &= ~((1 << SP) | (1 << PC))
    return (dead & -dead).bit_length() - 1 if dead else None


@cache
def _neon_increment(base: int) -> bytes:
    """The counter at [r``base``] += 1 in d17 (d18 = -1): a 64-bit add with no flags and no branch."""
    return _neon_add_one(17, 18, base)


def _with_address_at(isa: ISA, code: Code, label: Hashable, body: Callable[[int], bytes], dead: int) -> None:
    """``body(r)`` with register r = the address of ``label`` (T32, d16-d31 free; _with_base)."""
    def emit(base: int) -> None:
        isa.pc_address(code, base, label)
        code.emit(body(base))

    _with_base(code, dead, emit)


def _with_base(code: Code, dead: int, emit: Callable[[int], None]) -> None:
    """``emit(r)`` with a core register r it may overwrite (T32, d16-d31 free): one of ``dead``
    (bit n for rn), else r1, parked in d16's low lane around it (the only core register the
    NEON counters and sums borrow)."""
    base = free_register(dead)
    if base is not None:
        emit(base)
        return
    code.emit(enc.t32_vmov_to_lane(16, 1))
    emit(1)
    code.emit(enc.t32_vmov_from_lane(1, 16))


@cache
def _t32_bump(base: int, offset: int, amount: int, no_carry_to: int | None = None) -> bytes:
    """T32 64-bit counter at [base, #offset] += ``amount`` (1..4095), no flags touched.

    +1 uses r0 only: the low word is bumped and only when it wraps to zero (CBNZ falls
    through) the high word too; half the scratch traffic of the UMLAL form, with no
    multiply, on the tools' hottest path. A larger amount also uses r2: the low word's
    carry out is its old top bit without the new one ((old & ~new) >> 31).

    Without a carry the code goes past its own end, or to ``no_carry_to`` (an offset
    from the start of these bytes, forward and within CBZ's reach) when the caller's next
    step there is a branch: one translation block fewer on the path taken almost always.
    """
    low = _t32_bump_low(base, offset, amount)
    carried = amount != 1
    high = enc.t32_ldr_word(0, base, offset + 4) + enc.t32_add_imm(0, 0, 1) + enc.t32_str_word(0, base, offset + 4)
    # No carry: past the high word's update (the branch reads PC as its own address + 4).
    to = len(low) + 2 + len(high) if no_carry_to is None else no_carry_to
    skip = enc.t32_cbz(0, to - (len(low) + 4), nonzero=not carried)
    return low + skip + high


def _t32_bump_low(base: int, offset: int, amount: int) -> bytes:
    """The low word's part of :func:`_t32_bump`: r0 = 0 exactly when there is no carry
    (+1: the new low word; more: the carry bit itself)."""
    if amount == 1:
        return enc.t32_ldr_word(0, base, offset) + enc.t32_add_imm(0, 0, 1) + enc.t32_str_word(0, base, offset)
    return (enc.t32_ldr_word(0, base, offset) + enc.t32_add_imm(2, 0, amount) + enc.t32_str_word(2, base, offset)
            + enc.t32_bic_reg(0, 0, 2) + enc.t32_lsr_imm(0, 0, 31))


_T32_BUMP = _t32_bump(1, 0, 1)  # counter at [r1] += 1


def _t32_exclusive_add_one(at: int) -> bytes:
    """[r1] += 1 with LDREX/STREX (r0 = the new word, r2 = the status), again from the LDREX
    when the STREX failed (an interrupt came in between); ``at``: where it starts, from
    the start of the enclosing sequence."""
    out = enc.t32_ldrex(0, 1) + enc.t32_add_imm(0, 0, 1) + enc.t32_strex(2, 0, 1)
    return out + enc.t32_cbz(2, 2) + enc.t32_b(at + len(out) + 2, at)  # stored: past the B back


def _t32_atomic_bump() -> bytes:
    """T32 64-bit counter at [r1] += 1 that an interrupt handler counting too cannot spoil:
    the low word with LDREX/STREX, and the high one the same way when the low one wrapped
    (a handler's own carry between the two is just another add). Uses r0-r2."""
    low = _t32_exclusive_add_one(0)
    high_at = len(low) + 2 + 4  # past the CBNZ and the ADDW that moves r1 to the high word
    high = _t32_exclusive_add_one(high_at)
    skip = enc.t32_cbz(0, high_at + len(high) - (len(low) + 4), nonzero=True)  # no carry: done
    return low + skip + enc.t32_add_imm(1, 1, 4) + high


_T32_ATOMIC_BUMP = _t32_atomic_bump()  # counter at [r1] += 1, interrupt-safe


def _a32_atomic_bump() -> bytes:
    """A32 64-bit counter at [r2] += 1 with LDREXD/STREXD (threads), flags untouched: UMLAL
    adds 1*1; A32 has no CBZ, so the STREXD status becomes 1 when stored (``clz; lsr #5``)
    and ``add pc, pc, r3, lsl #2`` skips the B back. Uses r0-r3 (the counter 8-aligned)."""
    out = [enc._w(0xE1B20F9F),                                  # retry: ldrexd r0, r1, [r2]
           enc.a32_movw(3, 1), enc._w(0xE0A10393),              # umlal r0, r1, r3, r3 (r3 = 1)
           enc._w(0xE1A23F90),                                  # strexd r3, r0, r1, [r2]
           enc.a32_clz(3, 3), enc.a32_lsr_imm(3, 3, 5),
           enc.a32_add_reg_shift(PC, PC, 3, 0, 2), enc._w(0xE320F000)]  # stored: past the B
    return b"".join(out) + enc.a32_b(4 * len(out), 0)


_A32_ATOMIC_BUMP = _a32_atomic_bump()  # counter at [r2] += 1, thread-safe


@cache
def _increment_tail(thumb: bool, amount: int, one: int) -> bytes:
    """r3 = amount (and ip = 1), then the 64-bit add at [r2]: the same bytes at every site."""
    parts = []
    movw = enc.t32_movw if thumb else enc.a32_movw
    parts.append(movw(3, amount & 0xFFFF))
    if amount > 0xFFFF:
        parts.append((enc.t32_movt if thumb else enc.a32_movt)(3, amount >> 16))
    if one == IP:
        parts.append(movw(IP, 1))
    if thumb:
        parts += [enc.t32_ldrd(0, 1, 2), enc._hw(0xFBE0 | 3, (1 << 8) | one), enc.t32_strd(0, 1, 2)]
    else:
        parts += [enc._w(0xE1C200D0), enc._w(0xE0A10093 | (one << 8)), enc._w(0xE1C200F0)]  # ldrd, umlal, strd
    return b"".join(parts)

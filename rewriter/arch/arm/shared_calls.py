"""Compact call sites (decision 0029): on firmware, where flash is what runs out, a
site keeps only what differs from site to site and calls shared code for the rest.

A site (T32, 16-18 bytes instead of 100-150):

    push {r0-r3, ip, lr}       what a C call may clobber
    r0.. = the site's values   the filter's key first, then the other arguments only a
                               site knows (an effective address, a register's value, the
                               instruction's address, its block's size, a record's site id)
    bl <shared call path>
    [.hword site id]            a record's id below 65536, read by the shared path
    pop {r0-r3, ip, lr}

The shared call path, one per distinct SharedCall (routine, constant arguments, filter
and hit counter), does what every site of it did inline: keeps the flags and the
program's SP, masks interrupts, aligns SP, runs the repeat filter on r0, puts the
arguments in place, calls the routine and puts everything back. Before all that, a
filtered path on firmware tests the slot's most recent key with the flags and PRIMASK
untouched: a hit there counts (LDREX/STREX) and returns at once (decision 0047: QEMU
leaves its translated code after every CPSID and MSR, three times an access before);
not in procedures with an LDREX/STREX window of their own. Each path has a copy on every
4 KiB page whose sites call it (decision 0050), so that QEMU chains the site's BL; a
path with the unmasked test is copied as that test only, a miss going on in the image's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence, Set
from dataclasses import dataclass

from ...api import Arg, RepeatFilter
from ...emit import loop_sums
from ...emit.loop_sums import LoopSum
from ...emit.page_layout import PageCopies
from ...ir.model import Hook
from ..code import Code
from . import encode as enc
from .counters import T32_BUMP, free_register, t32_bump
from .hooks import (
    FLAGS_REG,
    FRAME_REG,
    MASK_INTERRUPTS,
    HookContext,
    address_into,
    filter_counter_index,
    filter_of,
    filter_test_after_key,
    site_id_of,
    site_registers,
    static_value,
)
from .isa import IP, LR, PC, SP, T32
from .repeat_filter import filter_test_size, t32_most_recent_hit, t32_site_hit_test

SITE_SAVED = [0, 1, 2, 3, IP, LR]  # what a site pushes: what AAPCS lets the routine clobber
SITE_SLOT = {reg: 4 * i for i, reg in enumerate(SITE_SAVED)}
STASH = [6, 7, 8, 9]  # where a shared path keeps the site's values across the filter

# What goes into one argument register in a shared path: ("site", k), the site's k-th
# value (r<k> at the BL); ("const", value); ("string", text), its address; ("left",), the
# key that left the filter's slot.
Source = tuple[str, int] | tuple[str, str] | tuple[str]
Label = Callable[[str], Hashable]

# Kinds whose value a site computes (they differ from site to site); the others are few
# and make part of the shared path's identity.
_SITE_KINDS = (Arg.EFFADDR, Arg.REG_VALUE, Arg.INST_ADDR, Arg.BLOCK_INSNS, Arg.SITE_ID)


@dataclass(frozen=True)
class FilterPlan:
    """The repeat filter a shared path runs on its r0 (hooks.filter_test_after_key)."""

    flt: RepeatFilter
    left: bool
    index: int   # the hit counter's element


@dataclass(frozen=True)
class SharedCall:
    """One shared call path; also its label."""

    routine: str
    sources: tuple[Source, ...]  # per argument register
    site_values: int  # computed by the site, in r0.., and the halfword (the last of them) if any
    filter: FilterPlan | None
    mask_interrupts: bool
    atomic: bool
    halfword: bool = False  # the site's last value is the halfword after its BL (a record's id)
    # Firmware (decision 0047): a hit in the slot's most recent key counts and returns
    # before the flags are kept and interrupts masked; with LDREX/STREX where exception
    # handlers count hits too (``exclusive_hits``; then not for procedures with an
    # LDREX/STREX window of their own, which our exclusives would break).
    unmasked_hits: bool = False
    exclusive_hits: bool = True


def plan(hook: Hook, ctx: HookContext) -> tuple[SharedCall, list[tuple[Arg, object]]] | None:
    """The shared path ``hook``'s site at ``ctx`` calls and the values the site computes
    (kind, value), or None when the site must stay inline (more than four arguments, or
    more than four site values)."""
    kinds, args = hook.prototype.kinds, hook.args
    if len(kinds) > 4:
        return None
    site: list[tuple[Arg, object]] = []
    found = filter_of(hook)
    plan_of_filter = None
    if found is not None:
        flt, call = found
        site.append((call.prototype.kinds[flt.key_arg], call.args[flt.key_arg]))
        plan_of_filter = FilterPlan(flt, Arg.FILTER_LEFT in call.prototype.kinds, filter_counter_index(found, ctx))
    sources: list[Source] = []
    site_id: tuple[int, object] | None = None  # (argument position, value): the last site value
    for kind, value in zip(kinds, args):
        if kind is Arg.FILTER_LEFT:
            sources.append(("left",))
        elif kind is Arg.CONST:
            sources.append(("const", int(value) & 0xFFFFFFFF))
        elif kind is Arg.STRING:
            sources.append(("string", str(value)))
        elif kind in (Arg.ACCESS_SIZE, Arg.ACCESS_IS_STORE):
            sources.append(("const", static_value(kind, value, ctx)))
        elif kind is Arg.SITE_ID:
            site_id = (len(sources), value)
            sources.append(("site", -1))  # numbered below
        elif kind in _SITE_KINDS:
            if (kind, value) not in site:
                site.append((kind, value))
            sources.append(("site", site.index((kind, value))))
        else:
            return None
    # A record's id comes last; it goes after the BL as a halfword, read by the shared path,
    # when it fits (2 bytes, not a 4-byte MOVW).
    halfword = False
    if site_id is not None:
        position, value = site_id
        sources[position] = ("site", len(site))
        site.append((Arg.SITE_ID, value))
        halfword = site_id_of(value, ctx) <= 0xFFFF
    if len(site) > len(STASH):
        return None
    # The test before the masking takes r1-r3 and keeps r0 only (the key): not where the
    # site passes more in registers (a site id past a halfword, another site value).
    exclusive = ctx.handlers_count
    unmasked = (plan_of_filter is not None and ctx.mask_interrupts and (ctx.exclusives or not exclusive)
                and len(site) - halfword == 1)
    shared = SharedCall(hook.prototype.name, tuple(sources), len(site), plan_of_filter, ctx.mask_interrupts,
                        ctx.atomic_hits, halfword, unmasked, exclusive)
    return shared, site


BUMP_SAVED = [0, 1, LR]  # what a counter site pushes (a 16-bit PUSH)


class SharedCalls(PageCopies):
    """The shared paths the compact sites of one code ask for: call paths, and the +1 of a
    64-bit counter of each counter array. Each is emitted after the code's procedures
    (``emit_paths``) and copied onto the pages whose sites call it (page_layout.PageCopies,
    decision 0050): a site's BL then stays in its page, and QEMU chains it."""

    def __init__(self, function_label: Label, string_label: Label,
                 counter_label: Callable[[str, int], Hashable], in_loops: Set[tuple[str, int]] = frozenset(),
                 loop_sums: Sequence[LoopSum] = ()) -> None:
        super().__init__()
        self.function_label, self.string_label, self.counter_label = function_label, string_label, counter_label
        self.in_loops = in_loops  # (array, index) of the counters inside loops: added in place
        self.loop_sums = loop_sums  # loops counting in a register (loop_sums.py), by number
        self.summed = {(s.array, s.index): s.register for s in loop_sums}

    def emit_increment(self, code: Code, array: str, index: int, dead: int = 0) -> bool:
        """``array[index]`` += 1 at a compact site (12 bytes instead of 30):

            push {r0, r1, lr}; bl <array's bump>; .hword index; pop {r0, r1, lr}

        or, where LR is dead (bit 14 of ``dead``, as ir/liveness.py gives it: mostly
        between a procedure's prologue and its epilogue), 6 bytes: ``bl <bump>; .hword
        index``, the bump keeping r0 and r1 itself unless they are dead too (decision 0035).
        False (nothing emitted) when the index does not fit a halfword.

        A counter inside a loop (``in_loops``) adds in place instead (decision 0053): no
        BL and no return, which QEMU would look up each time round the loop; a loop's
        count kept in a register (``loop_sums``) adds there, and its pseudo counters
        (loop_sums.RESET, STORE) clear the register and add it to the counter."""
        register = self.summed.get((array, index))
        if register is not None:
            code.emit(enc.t32_add_imm(register, register, 1))
            return True
        if array == loop_sums.RESET:
            code.emit(enc.t32_movw(self.loop_sums[index].register, 0))
            return True
        if array == loop_sums.STORE:
            summed = self.loop_sums[index]
            _emit_add_register(code, self.counter_label(summed.array, summed.index), summed.register, dead)
            return True
        if (array, index) in self.in_loops:
            _emit_bump_in_place(code, self.counter_label(array, index), dead)
            return True
        if not 0 <= index <= 0xFFFF:
            return False
        lr_dead = bool(dead >> LR & 1)
        routine = "shared-bump-keeping" if lr_dead and dead & 0b11 != 0b11 else "shared-bump"
        if not lr_dead:
            T32.push(code, BUMP_SAVED)
        self.call(code, (routine, array))
        code.emit(index.to_bytes(2, "little"))
        if not lr_dead:
            T32.pop(code, BUMP_SAVED)
        return True

    def emit_site(self, code: Code, hook: Hook, ctx: HookContext) -> bool:
        """A compact site for ``hook`` at ``ctx``; False (nothing emitted) when it cannot be one."""
        found = plan(hook, ctx)
        if found is None:
            return False
        shared, values = found
        done = self._emit_hit_test(code, shared, ctx) if shared.unmasked_hits and ctx.in_loop else None
        T32.push(code, SITE_SAVED)
        originals = _SiteOriginals(code, ctx)
        computed = values[:-1] if shared.halfword else values
        for k, (kind, value) in enumerate(computed):
            originals.compute(k, kind, value)
        if done is None:
            self.call(code, ("shared-call", shared))
        else:  # the test ran at the site: on to the image's path past its own test
            self.routines.add(("shared-call", shared))
            T32.call(code, ("shared-call-rest", shared))
        if shared.halfword:
            code.emit(site_id_of(values[-1][1], ctx).to_bytes(2, "little"))
        T32.pop(code, SITE_SAVED)
        if done is not None:
            code.label(done)
        return True

    def _emit_hit_test(self, code: Code, shared: SharedCall, ctx: HookContext) -> Hashable | None:
        """The most recent key's test at the site (decision 0057): a hit counts and goes
        to the label returned, past the site's call, which the code after this runs on a
        miss. Three registers, dead ones where there are, the others pushed (16-bit PUSH
        and POP: low ones). None (nothing emitted) where the address needs what the
        registers would hide (an index beside SP; base and index where the test's registers
        leave no scratch for a large displacement)."""
        access, f = ctx.access, shared.filter
        if access is None or f is None or (access.base == SP and access.index is not None):
            return None
        a, b, c = site_registers(ctx.dead, 3, {access.base, access.index})
        scratch = next((r for r in (c, b) if r not in (access.base, access.index)), None)
        if scratch is None:  # both hold the address's registers: a large displacement has no room
            return None
        saved = sorted(r for r in (a, b, c) if not ctx.dead >> r & 1)
        if saved:
            T32.push(code, saved)

        def base_of(reg: int) -> int:
            if reg == SP:
                T32.add_imm(code, a, SP, 4 * len(saved) + ctx.scratch.sp_bias)
                return a
            return reg

        address_into(T32, code, a, access, base_of, lambda reg: reg, scratch)
        memo, counter = self.counter_label(f.flt.memo, 0), self.counter_label(f.flt.counter, f.index)
        near = None if f.flt.counter_offset is None else f.flt.counter_offset + 8 * f.index
        pop = enc.t32_pop(saved) if saved else b""
        past = len(pop) + 2  # the POP and the B.N to ``done``: the miss path follows
        shape = (code.pic, f.flt.shift, f.flt.slot_bits, f.flt.depth, near if near is not None and near + 4 <= 1020
                 else None, (a, b, c), past, shared.exclusive_hits)
        done = ("site-hit", id(code), code.size)
        code.later(filter_test_size(t32_site_hit_test, shape, 3),
                   lambda at, r: t32_site_hit_test(*shape, at, r(memo), r(counter), r(done)))
        code.emit(pop)
        code.later(2, lambda at, r: enc.t32_b_narrow(at, r(done)))
        code.emit(pop)
        return done

    def emit_copy(self, code: Code, routine: Hashable, label: Hashable) -> None:
        """A copy of the shared path ``routine`` (a call path or a bump) labelled ``label``."""
        assert isinstance(routine, tuple)
        if routine[0] == "shared-call":
            # A page's copy of a path testing the most recent key first is that test only:
            # a hit (nearly every access) returns from the page, anything else goes on in
            # the image's copy (the masked part, rarely run, is not worth copying).
            rest = ("shared-call-rest", routine[1]) if label != routine and routine[1].unmasked_hits else None
            emit_shared_call(code, routine[1], label, self.function_label, self.string_label, self.counter_label,
                             rest)
        else:
            _emit_bump(code, routine[0] == "shared-bump-keeping", self.counter_label(routine[1], 0), label)

    def emit_paths(self, code: Code) -> None:
        """The image's copy of every shared path asked for, at the end of ``code``."""
        for routine in sorted(self.routines, key=repr):
            self.emit_copy(code, routine, routine)


def _emit_bump(code: Code, keeping: bool, array: Hashable, label: Hashable) -> None:
    """The +1 of a 64-bit counter of ``array`` (SharedCalls.emit_increment): the index is
    the halfword after the BL; ``keeping``: r0 and r1 are kept (they are live at the site)."""
    code.align(4)
    code.label(label)
    if keeping:
        T32.push(code, [0, 1])
    code.emit(_halfword_after_call(0))  # r0 = the index; then r1 = &array[r0]; += 1; back
    T32.pc_address(code, 1, array)
    code.emit(enc.t32_add_reg_shift(1, 1, 0, 0, 3) + T32_BUMP)
    if keeping:
        T32.pop(code, [0, 1])
    code.emit(enc.t32_bx(LR))


def _emit_bump_in_place(code: Code, counter: Hashable, dead: int) -> None:
    """``counter`` += 1 where the site is (t32_bump's +1 with carry, no flags touched): the
    value in a dead low register (bit n of ``dead`` for rn; CBNZ takes only those), the
    address in another dead one, r0 and r1 where none is, pushed around it. 26-30 bytes
    (with the address in a high register, 34) against the 6-12 of a site that BLs to its
    bump, for no branch out of the block but the carry's CBNZ, which QEMU chains."""
    value = free_register(dead & 0xFF)
    value = 0 if value is None else value
    base = free_register(dead & 0x1FFF & ~(1 << value))
    base = (1 if value == 0 else 0) if base is None else base
    saved = sorted(r for r in {value, base} if not dead >> r & 1)
    if saved:
        T32.push(code, saved)
    T32.pc_address(code, base, counter)
    code.emit(t32_bump(base, 0, 1, value=value))
    if saved:
        T32.pop(code, saved)


def _emit_add_register(code: Code, counter: Hashable, register: int, dead: int) -> None:
    """``counter`` (64 bits) += r``register`` without touching the flags: LDRD, UMLAL by a
    register holding 1, STRD; the four registers it takes are dead ones (bit n of ``dead``
    for rn) where there are, else r0-r5, pushed around it."""
    free = dead & 0x1FFF & ~(1 << register)
    taken = [r for r in range(13) if free >> r & 1][:4]
    taken += [r for r in range(6) if r != register and r not in taken][:4 - len(taken)]
    base, low, high, one = taken
    saved = sorted(r for r in taken if not dead >> r & 1)
    if saved:
        T32.push(code, saved)
    T32.pc_address(code, base, counter)
    umlal = enc._hw(0xFBE0 | register, low << 12 | high << 8 | one)  # high:low += register * one
    code.emit(enc.t32_ldrd(low, high, base) + enc.t32_movw(one, 1) + umlal + enc.t32_strd(low, high, base))
    if saved:
        T32.pop(code, saved)


def _halfword_after_call(reg: int) -> bytes:
    """r``reg`` = the halfword after the BL that called (at LR - 1: LR has the Thumb bit),
    and LR moved past it: SUBW rN, lr, #1; LDRH rN, [rN]; ADDW lr, lr, #2 (rN low; flags
    untouched)."""
    assert reg < 8
    return enc.t32_add_imm(reg, LR, -1) + enc._hw(0x8800 | reg << 3 | reg) + enc.t32_add_imm(LR, LR, 2)


class _SiteOriginals:
    """A site's view of the program's registers after its push: r4-r11 where they are,
    r0-r3, ip and lr where they are until the site writes them and in their push slot
    after, SP above the push."""

    def __init__(self, code: Code, ctx: HookContext) -> None:
        self.code, self.ctx = code, ctx
        self.written: set[int] = set()

    def original(self, reg: int, into: int) -> int:
        """The register holding ``reg``'s original value (``into`` if it had to be loaded)."""
        if reg == SP:
            T32.add_imm(self.code, into, SP, 4 * len(SITE_SAVED) + self.ctx.scratch.sp_bias)
        elif reg == PC:
            assert self.ctx.ins is not None
            T32.pc_address(self.code, into, self.ctx.ins.address + T32.pc_offset)
        elif reg in self.written:
            T32.ldr(self.code, into, SP, SITE_SLOT[reg])
        else:
            return reg
        self.written.add(into)
        return into

    def compute(self, k: int, kind: Arg, value: object) -> None:
        """r<k> = the site's value of kind ``kind``; ip and lr are the temporaries."""
        code, ctx = self.code, self.ctx
        if kind is Arg.EFFADDR:
            assert ctx.access is not None
            address_into(T32, code, k, ctx.access, lambda reg: self.original(reg, k),
                         lambda reg: self.original(reg, IP), LR)
            self.written.update((IP, LR))
        elif kind is Arg.REG_VALUE:
            got = self.original(int(value), k)
            if got != k:
                T32.mov_reg(code, k, got)
        elif kind is Arg.INST_ADDR:
            assert ctx.ins is not None
            T32.pc_address(code, k, ctx.ins.address)
        elif kind is Arg.BLOCK_INSNS:
            T32.mov32(code, k, ctx.block_insns)
        else:
            assert kind is Arg.SITE_ID
            T32.mov32(code, k, site_id_of(value, ctx))
        self.written.add(k)


def emit_shared_call(code: Code, shared: SharedCall, label: Hashable, function_label: Label, string_label: Label,
                     counter_label: Callable[[str, int], Hashable], rest: Hashable | None = None) -> None:
    """The shared path of ``shared`` (see the module's docstring), labelled ``label``:
    entered by BL with the site's values in r0.., r0-r3, ip and lr free; returns with
    every other register, the flags, PRIMASK and SP as they were. ``rest``: only the test
    of the most recent key, then on at ``rest``, the image's copy past that test (which
    that copy labels ``("shared-call-rest", shared)``)."""
    stash = STASH[:shared.site_values]
    kept = [FLAGS_REG, FRAME_REG, *stash]
    code.align(4)
    code.label(label)
    if shared.filter is not None and shared.unmasked_hits:
        # A hit in the slot's most recent key returns before the flags are kept and
        # interrupts masked (decision 0047: QEMU leaves its translated code after every
        # CPSID and MSR); anything else runs the whole path, the filter again with it.
        f = shared.filter
        memo, counter = counter_label(f.flt.memo, 0), counter_label(f.flt.counter, f.index)
        shape = (code.pic, f.flt.shift, f.flt.slot_bits, f.flt.depth, shared.halfword, shared.exclusive_hits)
        T32.mov_reg(code, IP, 0)
        code.later(filter_test_size(t32_most_recent_hit, shape, 2),
                   lambda at, r: t32_most_recent_hit(*shape, at, r(memo), r(counter)))
        T32.mov_reg(code, 0, IP)
        if rest is not None:
            T32.branch(code, rest)
            return
        code.label(("shared-call-rest", shared))
    if shared.halfword:  # the last site value: r<n> is free, the site computed r0..r<n-1>
        code.emit(_halfword_after_call(shared.site_values - 1))
    T32.push(code, [*kept, LR])
    T32.mrs(code, FLAGS_REG)
    if shared.mask_interrupts:  # FLAGS_REG's bit 0 (0 in APSR) keeps PRIMASK, for MSR PRIMASK to put back
        code.emit(MASK_INTERRUPTS)
    T32.mov_reg(code, FRAME_REG, SP)
    T32.align_sp8(code, IP)
    for k, reg in enumerate(stash):
        T32.mov_reg(code, reg, k)
    done = None
    if shared.filter is not None:
        f = shared.filter
        done = filter_test_after_key(T32, code, f.flt, f.left, counter_label, f.index, shared.atomic).label
    # The key that left the slot is in r2: it goes first, before r2 is given another argument.
    order = sorted(range(len(shared.sources)), key=lambda i: shared.sources[i][0] != "left")
    for i in order:
        source = shared.sources[i]
        if source[0] == "left":
            if i != 2:
                T32.mov_reg(code, i, 2)
        elif source[0] == "site":
            T32.mov_reg(code, i, stash[source[1]])
        elif source[0] == "const":
            T32.mov32(code, i, source[1])
        else:
            T32.pc_address(code, i, string_label(source[1]))
    T32.call(code, function_label(shared.routine))
    if done is not None:
        code.label(done)
    T32.mov_reg(code, SP, FRAME_REG)
    T32.msr(code, FLAGS_REG)
    if shared.mask_interrupts:
        code.emit(enc.t32_msr_primask(FLAGS_REG))
    T32.pop(code, [*kept, PC])

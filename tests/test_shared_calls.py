"""Compact call sites (decision 0029, rewriter/arch/arm/shared_calls.py) run under unicorn's
Cortex-M3: the routine gets the arguments the program's registers say (computed here
independently from the register values set before the site), and the site gives back
every register, SP, the flags and PRIMASK as it found them.

(End to end, every firmware test of the suite runs its cachesim and ReHost sites this way
against the cache model and qemu's instruction log: test_firmware, test_boards.)
"""

from __future__ import annotations

import pytest

from rewriter.api import Arg, Point, RepeatFilter, Tool
from rewriter.arch.arm import encode as enc
from rewriter.arch.arm.hooks import HookContext, RecordPrototype, filter_of
from rewriter.arch.arm.isa import IP, LR, PC, SP, Scratch
from rewriter.arch.arm.shared_calls import SharedCalls
from rewriter.arch.code import Code
from rewriter.ir.model import Access, Hook, Instruction

CODE, DATA, STACK_TOP = 0x10000, 0x20000000, 0x20008000
RESULTS = DATA + 0x100   # the routine writes r0-r3, SP & 7 and a call count here
MEMO = DATA + 0x400      # the repeat filter's slot table (its hit counter follows it)
INS_ADDR = 0x8000        # where the site's instruction stands in the original program
# The program's registers before the site: distinct, so a wrong register shows.
REGS = {r: 0x1000_0000 + 0x0101_0100 * r for r in range(13)} | {LR: 0x0000_5A5B}
PROGRAM_SP = STACK_TOP - 0x100


def _tool() -> Tool:
    tool = Tool()
    tool.array("repeats", 2)
    return tool


def _routine() -> bytes:
    """Stores r0-r3 and SP & 7 at RESULTS, counts its calls, changes the flags and every
    register a C routine may change, and returns."""
    return b"".join([
        enc.t32_mov32(IP, RESULTS),
        enc.t32_str_word(0, IP, 0), enc.t32_str_word(1, IP, 4), enc.t32_str_word(2, IP, 8),
        enc.t32_str_word(3, IP, 12),
        enc.t32_mov_reg(0, SP), enc.t32_logic_imm(enc.T32_AND, 0, 0, 7), enc.t32_str_word(0, IP, 16),
        enc.t32_ldr_word(0, IP, 20), enc.t32_add_imm(0, 0, 1), enc.t32_str_word(0, IP, 20),
        enc.t32_mov32(0, 0x9000_0000), enc.t32_msr_apsr(0, False),
        enc.t32_mov32(1, 0xDEAD), enc.t32_mov32(2, 0xBEEF), enc.t32_mov32(3, 0xF00D),
        enc.t32_bx(LR),
    ])


def _context(access: Access | None, block_insns: int = 7, exclusives: bool = False, in_loop: bool = False,
             dead: int = 0, handlers_count: bool = True) -> HookContext:
    ins = Instruction(INS_ADDR, 4, b"\0" * 4, True, "ldr", "", accesses=[access] if access else [])
    return HookContext(ins, access, block_insns, lambda text: ("str", text), lambda name: ("fn", name),
                       Scratch(False), set(), lambda name, index: ("array", name, index), mask_interrupts=True,
                       dead=dead, exclusives=exclusives, in_loop=in_loop, handlers_count=handlers_count)


def _run(hook: Hook, ctx: HookContext, runs: int = 1, primask: int = 0,
         flags: int = 0x6000_0000, in_image: list[int] | None = None,
         away: list[int] | None = None) -> tuple[list[int], list[int]]:
    """Run ``hook``'s compact site ``runs`` times; return RESULTS' six words and the filter's
    two hit counters (load, store).
    Checks after every run that the site changed no register, SP, flags or PRIMASK.
    ``in_image``: the site's page gets its copy of the shared path (PageCopies.place), and
    each run appends how many instructions it ran in the image's copy. ``away``: each run
    appends how many it ran outside the site (in any copy of the shared path)."""
    from unicorn import UC_HOOK_CODE
    from unicorn.arm_const import UC_ARM_REG_PRIMASK, UC_ARM_REG_SP, UC_ARM_REG_XPSR

    code = Code(CODE, pic=False, ge=False)
    code.label(("fn", hook.prototype.name))
    code.emit(_routine())
    site = code.here()
    calls = SharedCalls(lambda name: ("fn", name), lambda text: ("str", text),
                        lambda name, index: ("array", name, index))
    assert calls.emit_site(code, hook, ctx)
    end = code.here()
    code.emit(enc.t32_nop() * 2)  # where the run stops: the shared paths start after it
    if in_image is not None:
        calls.place(code)
    image = code.here()
    calls.emit_paths(code)
    found = filter_of(hook)
    flt = found[0] if found else None

    def resolve(key: object) -> int:
        if key in code.labels:
            return code.labels[key]
        if key == ("str", "hello"):
            return DATA + 0x800
        assert flt is not None and isinstance(key, tuple) and key[0] == "array"
        _, name, index = key
        return MEMO if name == flt.memo else MEMO + flt.counter_offset + 8 * index

    data = code.finish(resolve)
    uc = _cortex_m3(data)
    ran: list[int] = []  # the addresses run in the image's copy
    if in_image is not None:
        uc.hook_add(UC_HOOK_CODE, lambda _uc, address, _size, _data: ran.append(address), begin=image,
                    end=CODE + 0xFFFF)
    left: list[int] = []  # the addresses run past the site
    if away is not None:
        uc.hook_add(UC_HOOK_CODE, lambda _uc, address, _size, _data: left.append(address), begin=end,
                    end=CODE + 0xFFFF)
    for _ in range(runs):
        for reg, value in REGS.items():
            uc.reg_write(_REG_IDS[reg], value)
        uc.reg_write(UC_ARM_REG_SP, PROGRAM_SP)
        uc.reg_write(UC_ARM_REG_XPSR, flags | 1 << 24)  # Thumb
        uc.reg_write(UC_ARM_REG_PRIMASK, primask)
        before, before_away = len(ran), len(left)
        uc.emu_start(site | 1, end)
        if in_image is not None:
            in_image.append(len(ran) - before)
        if away is not None:
            away.append(len(left) - before_away)
        for reg, value in REGS.items():
            assert ctx.dead >> reg & 1 or uc.reg_read(_REG_IDS[reg]) == value, f"r{reg} changed"
        assert uc.reg_read(UC_ARM_REG_SP) == PROGRAM_SP
        assert uc.reg_read(UC_ARM_REG_XPSR) >> 27 == flags >> 27
        assert uc.reg_read(UC_ARM_REG_PRIMASK) == primask
    words = [int.from_bytes(uc.mem_read(RESULTS + 4 * i, 4), "little") for i in range(6)]
    hits = [0, 0]
    if flt is not None and flt.counter_offset is not None:
        hits = [int.from_bytes(uc.mem_read(MEMO + flt.counter_offset + 8 * i, 8), "little") for i in range(2)]
    return words, hits


def _cortex_m3(code: bytes):
    """A unicorn Cortex-M3 with ``code`` at CODE and DATA mapped."""
    from unicorn import UC_ARCH_ARM, UC_MODE_MCLASS, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_CPU_ARM_CORTEX_M3

    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_M3)
    uc.mem_map(CODE, 0x10000)
    uc.mem_map(DATA, 0x10000)
    uc.mem_write(CODE, code)
    return uc


def _reg_ids() -> dict[int, int]:
    from unicorn import arm_const
    return {r: getattr(arm_const, f"UC_ARM_REG_R{r}") for r in range(13)} | {LR: arm_const.UC_ARM_REG_LR}


_REG_IDS = _reg_ids()


def _expected_address(access: Access) -> int:
    """The address an access makes, from the register values before the site."""
    if access.base == PC:
        return access.disp
    base = PROGRAM_SP if access.base == SP else REGS[access.base]
    index = 0
    if access.index is not None:
        value = REGS[access.index]
        index = value << access.shift if access.shift_type == 0 else value >> access.shift
    return (base + (-index if access.subtract else index) + access.disp) & 0xFFFFFFFF


ACCESSES = [
    Access(False, 4, 3, 1),                                        # ldr rX, [r3, #1]
    Access(True, 1, SP, 8),                                        # strb rX, [sp, #8]
    Access(False, 4, 2, 0, 5, 2, 0),                               # ldr rX, [r2, r5, lsl #2]
    Access(False, 4, 0, -0x20, 1, 0, 0, True),                     # r0 - r1 - 0x20
    Access(False, 4, PC, 0x8124),                                  # a literal
    Access(True, 2, 0, 0x12345),                                   # a displacement beyond an ADDW's
    Access(False, 4, IP, 4, LR, 1, 1),                             # [ip, lr, lsr #1, #4]
]


@pytest.mark.parametrize("access", ACCESSES, ids=lambda a: f"base{a.base}-index{a.index}-disp{a.disp:#x}")
@pytest.mark.parametrize("primask", [0, 1])
def test_site_passes_the_address_and_the_constants(access: Access, primask: int) -> None:
    proto = _tool().prototype("f", Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.ACCESS_SIZE, Arg.CONST)
    words, _ = _run(Hook(Point.BEFORE, proto, (Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.ACCESS_SIZE, 0x12345678)),
                    _context(access), primask=primask)
    assert words == [_expected_address(access), int(access.is_store), access.size, 0x12345678, 0, 1]


@pytest.mark.parametrize("access", ACCESSES, ids=lambda a: f"base{a.base}-index{a.index}-disp{a.disp:#x}")
def test_site_values_after_the_first_read_the_program_registers(access: Access) -> None:
    """Four values a site computes: the second is an address whose base may be r0, which
    the first has overwritten; the fourth names ip, which the address may have used."""
    proto = _tool().prototype("g", Arg.REG_VALUE, Arg.EFFADDR, Arg.INST_ADDR, Arg.REG_VALUE)
    for first, last in ((1, IP), (0, LR), (SP, 3)):
        words, _ = _run(Hook(Point.BEFORE, proto, (first, Arg.EFFADDR, Arg.INST_ADDR, last)), _context(access))
        value = {SP: PROGRAM_SP} | REGS
        assert words[:4] == [value[first], _expected_address(access), INS_ADDR, value[last]]


def test_site_with_a_string_and_a_block_size() -> None:
    proto = _tool().prototype("h", Arg.STRING, Arg.BLOCK_INSNS)
    words, _ = _run(Hook(Point.BEFORE, proto, ("hello", Arg.BLOCK_INSNS)), _context(None, block_insns=9))
    assert words[:2] == [DATA + 0x800, 9]


def _filtered(tool: Tool) -> object:
    return tool.prototype("cache_sim", Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT,
                          filter=RepeatFilter(shift=6, slots=32, counter="repeats", count_by=1, depth=2))


def test_filter_calls_on_a_new_line_and_counts_the_repeats() -> None:
    """The same load three times: the routine sees the first (nothing left the slot), the
    filter counts the two others in repeats[0]."""
    access = Access(False, 4, 3, 1)
    proto = _filtered(_tool())
    words, hits = _run(Hook(Point.BEFORE, proto, (Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT)),
                       _context(access), runs=3)
    assert words[:3] == [_expected_address(access), 0, 0] and words[5] == 1
    assert hits == [2, 0]


@pytest.mark.parametrize("exclusives, handlers_count", [(False, True), (True, True), (False, False)])
def test_a_hit_returns_from_the_page_copy(exclusives: bool, handlers_count: bool) -> None:
    """With a copy of the shared path on the site's page (decision 0050): the same results
    as through the image's copy. Where hits are counted before masking (decision 0047:
    with LDREX/STREX outside the program's exclusive windows (``exclusives``) where
    exception handlers count too, with a plain add anywhere where none does, decision
    0079), the page's copy is that test only: the new key runs on into the image's copy,
    the two hits in the most recent key run nothing there; else the whole path is on the
    page."""
    access = Access(False, 4, 3, 1)
    proto = _filtered(_tool())
    in_image: list[int] = []
    words, hits = _run(Hook(Point.BEFORE, proto, (Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT)),
                       _context(access, exclusives=exclusives, handlers_count=handlers_count), runs=3,
                       in_image=in_image)
    assert words[:3] == [_expected_address(access), 0, 0] and words[5] == 1
    assert hits == [2, 0]
    unmasked = exclusives or not handlers_count
    assert (in_image[0] > 10 if unmasked else in_image[0] == 0) and in_image[1:] == [0, 0]


@pytest.mark.parametrize("access", ACCESSES, ids=lambda a: f"base{a.base}-index{a.index}-disp{a.disp:#x}")
@pytest.mark.parametrize("dead", [0, 1 << 5 | 1 << 7, 1 << 4 | 1 << 6 | 1 << LR, 0b111])
@pytest.mark.parametrize("handlers_count", [True, False])
def test_a_site_in_a_loop_counts_its_hits_itself(access: Access, dead: int, handlers_count: bool) -> None:
    """Inside a loop (decision 0057) the site tests the most recent key itself: the first
    access runs the image's masked path (the routine sees it), the two repeats run nothing
    of the shared path and count in the hit counter (with LDREX/STREX where exception
    handlers count too, a plain add where none does, decision 0079); the address is the
    program's whether the test's registers are dead ones or pushed ones, and nothing else
    changes."""
    proto = _filtered(_tool())
    ran: list[int] = []
    dead &= ~(1 << access.base | (1 << access.index if access.index is not None else 0))
    words, hits = _run(Hook(Point.BEFORE, proto, (Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT)),
                       _context(access, exclusives=True, in_loop=True, dead=dead, handlers_count=handlers_count),
                       runs=3, away=ran)
    assert words[:3] == [_expected_address(access), int(access.is_store), 0] and words[5] == 1
    assert hits == ([0, 2] if access.is_store else [2, 0])
    assert ran[0] > 10 and ran[1:] == [0, 0]


@pytest.mark.parametrize("exclusives", [False, True])
@pytest.mark.parametrize("site", [70000, 1234])
def test_record_site_carries_its_site_id_and_the_filtered_address(site: int, exclusives: bool) -> None:
    """A ReHost record of a filtered call (records.py): the site id (a MOVW/MOVT at the
    site, or below 65536 the halfword after its BL) and the address the filter tested,
    computed once; ``exclusives``: with decision 0047's test of the most recent key
    before the masking, which takes r1-r3 (the site id in r1 must not be lost)."""
    tool = _tool()
    original = Hook(Point.BEFORE, _filtered(tool), (Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT))
    record = RecordPrototype("anvil_rh_record2", (Arg.SITE_ID, Arg.EFFADDR, Arg.FILTER_LEFT), original=original)
    access = Access(True, 4, SP, 12)
    words, hits = _run(Hook(Point.BEFORE, record, (site, Arg.EFFADDR, Arg.FILTER_LEFT)),
                       _context(access, exclusives=exclusives), runs=2)
    assert words[:3] == [site, _expected_address(access), 0] and words[5] == 1
    assert hits == [0, 1]


def _run_on_slots(data: bytes, end: int, array: int, start: int, preset: dict[int, int] | None = None):
    """Run ``data`` (at CODE) up to ``end`` with the program's registers (REGS, then
    ``preset``), SP and flags NZCV = 1010 set, and eight counter slots at ``array``, slot 5
    holding ``start``; returns unicorn and the slots as they were."""
    from unicorn.arm_const import UC_ARM_REG_SP, UC_ARM_REG_XPSR

    uc = _cortex_m3(data)
    slots = [0x1111 * (i + 1) for i in range(8)]
    slots[5] = start
    uc.mem_write(array, b"".join(v.to_bytes(8, "little") for v in slots))
    for reg, value in (REGS | (preset or {})).items():
        uc.reg_write(_REG_IDS[reg], value)
    uc.reg_write(UC_ARM_REG_SP, PROGRAM_SP)
    uc.reg_write(UC_ARM_REG_XPSR, 0xA000_0000 | 1 << 24)
    uc.emu_start(CODE | 1, end)
    return uc, slots


# Dead registers at a counter site (bit n: rn): none; LR only (the 6-byte site whose bump
# keeps r0 and r1); LR, r0 and r1 (the 6-byte site whose bump may clobber them); for a
# counter added in place (in a loop): r3 and r9 (the value in a low register, the address
# in a high one), r5 alone (the address in r0, pushed).
DEAD_AT_COUNTER = [0, 1 << 14, 1 << 14 | 0b11]
DEAD_IN_LOOPS = [0, 1 << 3 | 1 << 9, 1 << 5]


@pytest.mark.parametrize("start", [0, 41, 0xFFFF_FFFF, 0x1_FFFF_FFFF])
@pytest.mark.parametrize(("dead", "on_page", "in_loop"),
                         [(d, p, False) for d in DEAD_AT_COUNTER for p in (False, True)]
                         + [(d, False, True) for d in DEAD_IN_LOOPS])
def test_counter_site_adds_one_to_its_own_slot(start: int, dead: int, on_page: bool, in_loop: bool) -> None:
    """A compact counter (SharedCalls.emit_increment): slot 5 of its array += 1, carrying
    into the high word; the slots beside it, every register but the ``dead`` ones, SP and
    the flags untouched; 12 bytes, 6 where LR is dead (decision 0035). ``on_page``: through
    the page's copy of the bump (decision 0050), the image's copy never run. ``in_loop``: a
    counter inside a loop adds in place, with no BL and no shared bump (decision 0053)."""
    from unicorn.arm_const import UC_ARM_REG_SP, UC_ARM_REG_XPSR

    array = DATA + 0x200
    code = Code(CODE, pic=False, ge=False)
    calls = SharedCalls(lambda name: ("fn", name), lambda text: ("str", text),
                        lambda name, index: ("array", name, index), {("blocks", 5)} if in_loop else frozenset())
    assert calls.emit_increment(code, "blocks", 5, dead)
    end = code.here()
    if in_loop:
        assert not calls.routines and end - CODE <= 34
    else:
        assert end - CODE == (6 if dead else 12)
    code.emit(enc.t32_nop() * 2)
    if on_page:
        calls.place(code)
    image = code.here()
    calls.emit_paths(code)
    data = code.finish(lambda key: code.labels[key] if key in code.labels else array + 8 * key[2])
    if on_page:
        data = data[:image - CODE] + b"\xde\xde" * ((len(data) - (image - CODE)) // 2)
    uc, slots = _run_on_slots(data, end, array, start)
    after = [int.from_bytes(uc.mem_read(array + 8 * i, 8), "little") for i in range(8)]
    assert after == slots[:5] + [start + 1] + slots[6:]
    assert all(uc.reg_read(_REG_IDS[reg]) == value for reg, value in REGS.items() if not dead >> reg & 1)
    assert uc.reg_read(UC_ARM_REG_SP) == PROGRAM_SP and uc.reg_read(UC_ARM_REG_XPSR) >> 28 == 0xA


@pytest.mark.parametrize("dead", [0, 0b1111, 1 << 7 | 1 << 11])
@pytest.mark.parametrize("start", [0, 0xFFFF_FFFF, 0x1_FFFF_FFFE])
@pytest.mark.parametrize("register", [0, 5])
def test_a_loop_counts_in_its_register(register: int, start: int, dead: int) -> None:
    """A loop's count in a register (decision 0053, emit/loop_sums.py), as the sites of its
    preheader, its counted block and its exit emit it: the register cleared, 3 added (the
    loop ran three times), then added to slot 5 with a 64-bit carry (from 0xFFFF_FFFF:
    into the high word) while every other register but the ``dead`` ones, SP and the flags
    stay; the slots beside it untouched. Then once more with the register preset to
    0xFFFF_FFFF, the store alone: the add takes any 32-bit count."""
    from unicorn.arm_const import UC_ARM_REG_SP, UC_ARM_REG_XPSR

    from rewriter.emit.loop_sums import RESET, STORE, LoopSum

    array = DATA + 0x200
    dead &= ~(1 << register)
    for preset, count in ((None, 3), (0xFFFF_FFFF, 0xFFFF_FFFF)):
        code = Code(CODE, pic=False, ge=False)
        calls = SharedCalls(lambda name: ("fn", name), lambda text: ("str", text),
                            lambda name, index: ("array", name, index), loop_sums=[LoopSum(register, "blocks", 5)])
        if preset is None:
            assert calls.emit_increment(code, RESET, 0, dead | 1 << register)
            for _ in range(count):
                assert calls.emit_increment(code, "blocks", 5, dead | 1 << register)
        assert calls.emit_increment(code, STORE, 0, dead | 1 << register)
        assert not calls.routines
        end = code.here()
        data = code.finish(lambda key: array + 8 * key[2])
        uc, slots = _run_on_slots(data, end, array, start, {} if preset is None else {register: preset})
        after = [int.from_bytes(uc.mem_read(array + 8 * i, 8), "little") for i in range(8)]
        assert after == slots[:5] + [start + count] + slots[6:]
        kept = {reg: value for reg, value in REGS.items() if not dead >> reg & 1 and reg != register}
        assert all(uc.reg_read(_REG_IDS[reg]) == value for reg, value in kept.items())
        assert uc.reg_read(UC_ARM_REG_SP) == PROGRAM_SP and uc.reg_read(UC_ARM_REG_XPSR) >> 28 == 0xA

"""ReHost records made by an interrupt handler that interrupts the making of another record.

tickmem (samples/boards/tickmem.c) mixes a table while SysTick fires every 100 cycles; its
handler accesses memory too, so with cachesim or memtrace both make records, and the
handler's may come in the middle of main's. The handler runs exactly TARGET times
wherever the ticks fall, and the only code whose work depends on their timing
(wait_for_ticks) is left uninstrumented (``--skip``).

ReHost images run with ``anvil run --board B --icount 0``: virtual time advances by
instructions, the timer fires at a fixed instruction count and QEMU ends a translation
block early to deliver it, so the handler runs between any two instructions, inside the
record code too, and the run is deterministic. (Without ``--icount`` QEMU takes
interrupts only between translation blocks and never splits a record's few
instructions: the old append passed then and lost records with it.)

The reference is InHost, run without ``--icount``: an InHost analysis routine is not
reentrant (a handler's call in the middle of another's counter update loses it), which
QEMU can only show when it splits translation blocks. What must agree whatever the
interleaving: the console output and exit status (the original's), inscount's counts
(handler and main share no block), cachesim's loads and stores (its hits and misses
depend on where the handler's accesses fall among main's), and memtrace's accesses per
instruction. The cache has one set (size = assoc * line) and the handler's accesses
alternate between two lines, so the handler never bumps the repeat filter's inline
counter (that counter, shared by every access site, is added plainly: not interrupt-safe).
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support.boards import anvil_cli, build_firmware, instrument, run_firmware

PROGRAM = "tickmem"
TICKS = 400  # tickmem.c's TARGET: the handler's runs
GEOMETRY = ["--opt", "size=2k,assoc=64,line=32"]  # one set of 64 ways
SKIP = ["--skip", "wait_for_ticks"]


def _instrument(image: Path, tool: str, out: Path, *extra: str) -> None:
    instrument(image, tool, out, *(GEOMETRY if tool == "cachesim" else []), *SKIP, *extra)


def _anvil_run(board: str, image: Path, *extra: str) -> subprocess.CompletedProcess:
    return anvil_cli("run", "-q", "--board", board, *extra, image.name, cwd=image.parent, timeout=120)


def _figures(tool: str, results: dict) -> object:
    """What must not depend on where the handler ran."""
    if tool == "cachesim":
        return {key: results[key] for key in ("accesses", "loads", "stores")}
    if tool == "memtrace":
        return Counter((pc, size, kind) for pc, _, size, kind in results["records"])
    return results


Reference = tuple[tuple[bytes, int], object]  # the original's console output and status, InHost's figures


@pytest.fixture(scope="module")
def inhost(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Reference]:
    """The original's behaviour and InHost's figures of (board, tool), once per module."""
    runs: dict[tuple[str, str], Reference] = {}

    def get(board: str, tool: str) -> Reference:
        if (board, tool) not in runs:
            image = build_firmware(PROGRAM, board, "-O2")
            expected = run_firmware(image, board)
            assert expected[0].startswith(b"atomic=4 ticks=%d acc=6c7eb44f " % TICKS), expected
            out = tmp_path_factory.mktemp("inhost") / "fw"
            _instrument(image, tool, out)
            assert run_firmware(out, board, cwd=out.parent) == expected
            runs[board, tool] = expected, _figures(tool, json.loads((out.parent / f"fw.{tool}.out").read_text()))
        return runs[board, tool]

    return get


# inscount makes no records until the end (inline counters): one transport is enough.
CASES = [("mps2-an385", "cachesim", "semihosting"), ("mps2-an385", "cachesim", "uart"),
         ("mps2-an386", "cachesim", "semihosting"), ("mps2-an386", "cachesim", "uart"),
         ("mps2-an385", "inscount", "semihosting"), ("mps2-an386", "inscount", "uart")]


@pytest.mark.parametrize("board, tool, transport", CASES)
def test_records_made_under_interrupts(board: str, tool: str, transport: str, tmp_path: Path,
                                       inhost: Callable[[str, str], Reference]) -> None:
    """ReHost with SysTick landing anywhere in the record code: the original's console
    output and status, the session complete (the server rejects a corrupted stream), and
    InHost's figures."""
    expected, figures = inhost(board, tool)
    image = build_firmware(PROGRAM, board, "-O2")
    _instrument(image, tool, tmp_path / "fw", "--mode", "rehost", "--transport", transport)
    run = _anvil_run(board, tmp_path / "fw", "--icount", "0")
    assert (run.stdout, run.returncode) == expected, run.stderr
    results = tmp_path / f"fw.{tool}.out"
    assert results.exists(), run.stderr
    assert _figures(tool, json.loads(results.read_text())) == figures


def test_record_sites_under_interrupts(tmp_path: Path) -> None:
    """memtrace: every instruction's accesses arrive under its own site (a record rewritten by
    the code a handler interrupted moves them to another), with the handler landing anywhere
    (``--icount 0``) as without (between translation blocks only); the handler's are all there."""
    board = "mps2-an385"
    image = build_firmware(PROGRAM, board, "-O2")
    expected = run_firmware(image, board)
    _instrument(image, "memtrace", tmp_path / "fw", "--mode", "rehost")
    counts = []
    for extra in ([], ["--icount", "0"]):
        run = _anvil_run(board, tmp_path / "fw", *extra)
        assert (run.stdout, run.returncode) == expected, run.stderr
        counts.append(_figures("memtrace", json.loads((tmp_path / "fw.memtrace.out").read_text())))
    assert counts[0] == counts[1]
    handler = next(p for p in load_binary(str(image)).procedures if p.name == "SysTick_Handler")
    accesses = sum(n for (pc, _, _), n in counts[1].items() if handler.address <= pc < handler.end)
    assert accesses == 4 * TICKS + 2  # two loads and two stores a tick; the last one stops the timer too


def _inline_record(at: int, site: int, state: int, flush: int) -> tuple[bytes, int]:
    """The T32 record site (Linux) of ``site`` with one argument, r4's value, at ``at``
    followed by a NOP and the shared append routine it calls; returns the bytes and the
    NOP's address (where a run ends)."""
    from rewriter.api import Arg
    from rewriter.arch.arm import encode as enc
    from rewriter.arch.arm.appends import RECORD_FLUSH, RECORD_STATE, emit_append_routine
    from rewriter.arch.arm.hooks import HookContext, RecordPrototype, _emit_record
    from rewriter.arch.arm.isa import T32, Scratch
    from rewriter.arch.code import Code
    from rewriter.ir.model import Hook, Point

    code = Code(at)
    proto = RecordPrototype("anvil_rh_record1", (Arg.SITE_ID, Arg.REG_VALUE))
    ctx = HookContext(None, None, 0, str, str, Scratch(True), set(), lambda a, i: (a, i))
    _emit_record(T32, code, Hook(Point.BEFORE, proto, (site, 4)), ctx)
    end = code.here()
    code.emit(enc.t32_nop())
    (routine,) = ctx.appends.routines
    emit_append_routine(code, routine)
    labels = {("sym", RECORD_STATE): state, ("callstub", RECORD_FLUSH): flush}
    return code.finish(lambda key: code.labels[key] if key in code.labels else labels[key]), end


def test_inline_record_interrupted_at_every_instruction() -> None:
    """The inline T32 record (Linux) under unicorn, with a signal handler's record run
    between any two of its instructions: both records arrive whole, one after the other,
    and while the interrupted one has reserved words it has not written, its state says
    an append is under way (what keeps a handler's flush from sending them)."""
    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn import arm_const as regs

    main_at, handler_at, state, ring = 0x10000, 0x11000, 0x20000, 0x20100
    main, main_end = _inline_record(main_at, 7, state, 0x12000)
    handler, handler_end = _inline_record(handler_at, 9, state, 0x12000)
    main_record, handler_record = (7, 0xAAAA), (9, 0xBBBB)

    def words(uc: Uc, at: int, n: int) -> list[int]:
        return [int.from_bytes(uc.mem_read(at + 4 * i, 4), "little") for i in range(n)]

    landings = 0
    for stop in range(64):
        uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
        uc.reg_write(regs.UC_ARM_REG_C1_C0_2, uc.reg_read(regs.UC_ARM_REG_C1_C0_2) | (0xF << 20))
        uc.reg_write(regs.UC_ARM_REG_FPEXC, 0x40000000)  # the append routine keeps d21
        uc.mem_map(0x10000, 0x3000)
        uc.mem_map(state, 0x1000)
        uc.mem_write(main_at, main)
        uc.mem_write(handler_at, handler)
        uc.mem_write(state, (ring).to_bytes(4, "little") + (ring + 0x800).to_bytes(4, "little") + bytes(4))
        uc.reg_write(regs.UC_ARM_REG_R4, 0xAAAA)
        uc.reg_write(regs.UC_ARM_REG_SP, state + 0xF00)
        pc = main_at | 1
        for _ in range(stop):  # the main record's first ``stop`` instructions
            if pc & ~1 == main_end:
                break
            uc.emu_start(pc, main_end, count=1)
            pc = uc.reg_read(regs.UC_ARM_REG_PC) | 1
        if pc & ~1 == main_end:
            break
        landings += 1
        cursor, _, writers = words(uc, state, 3)
        if cursor > ring and words(uc, ring, 2) != list(main_record):
            assert writers == 1, f"after {stop} instructions: words reserved, not written, writers {writers}"
        saved = {r: uc.reg_read(r) for r in range(regs.UC_ARM_REG_R0, regs.UC_ARM_REG_R12 + 1)}
        saved.update({r: uc.reg_read(r) for r in (regs.UC_ARM_REG_LR, regs.UC_ARM_REG_CPSR)})
        saved.update({r: uc.reg_read(r) for r in range(regs.UC_ARM_REG_D16, regs.UC_ARM_REG_D31 + 1)})
        uc.reg_write(regs.UC_ARM_REG_R4, 0xBBBB)  # the handler: its own record, to its end
        uc.emu_start(handler_at | 1, handler_end)
        for r, value in saved.items():  # the kernel's sigreturn: the interrupted registers
            uc.reg_write(r, value)
        uc.emu_start(pc, main_end)
        cursor, _, writers = words(uc, state, 3)
        got = [tuple(words(uc, ring, 2)), tuple(words(uc, ring + 8, 2))]
        assert sorted(got) == [main_record, handler_record] and (cursor, writers) == (ring + 16, 0), \
            f"handler after {stop} instructions: ring {got}, cursor {cursor - ring:#x}, writers {writers}"
    assert landings >= 15


def test_exclusive_window_of_an_atomic_add() -> None:
    """tickmem's atomic add (ldrex; adds; strex; cmp; bne back): its record sites after the
    LDREX up to the STREX are inside the program's window (their records must not use
    exclusives), the LDREX's and those after the STREX are not."""
    from rewriter.ir.flow import exclusive_windows

    main = next(p for p in load_binary(str(build_firmware(PROGRAM, "mps2-an385", "-O2"))).procedures
                if p.name == "main")
    ldrex = next(i.address for i in main.instructions() if i.name == "ldrex")
    strex = next(i.address for i in main.instructions() if i.name == "strex")
    assert exclusive_windows(main) == {i.address for i in main.instructions() if ldrex < i.address <= strex}


@pytest.mark.parametrize("sp_in_hook_stack", [False, True])
def test_record_stub_stays_on_the_hook_stack(sp_in_hook_stack: bool) -> None:
    """The stub of a ReHost routine (the flush, or an A32 site's record routine) runs it at
    the top of the hook stack, or, when SP is already inside the hook stack (a signal
    handler interrupted the communicator there), below SP: the interrupted routine's frames
    stay whole. SP and the flags come back either way."""
    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn import arm_const as regs

    from rewriter.arch.arm import encode as enc
    from rewriter.arch.arm.appends import RECORD_FLUSH
    from rewriter.arch.arm.call_stubs import emit_call_stub
    from rewriter.arch.arm.hooks import HOOK_STACK_SHIFT, HOOK_STACK_SYMBOL
    from rewriter.arch.code import Code

    at, hook_stack, program_stack, done = 0x10000, 0x40000, 0x60000, 0x10F00
    top = hook_stack + (1 << HOOK_STACK_SHIFT)
    code = Code(at)
    code.label("routine")  # r2 = the SP it runs on; sets other flags
    code.emit(enc.t32_mov_reg(2, 13) + enc.t32_mov32(0, 0x40000000) + enc.t32_msr_apsr(0) + enc.t32_bx(14))
    emit_call_stub(code, RECORD_FLUSH, "routine")

    def resolve(key: object) -> int:
        if key in code.labels:
            return code.labels[key]
        assert isinstance(key, tuple) and key[1] == HOOK_STACK_SYMBOL, key
        return hook_stack + (key[2] if key[0] == "sym+" else 0)

    data = code.finish(resolve)
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
    uc.reg_write(regs.UC_ARM_REG_C1_C0_2, uc.reg_read(regs.UC_ARM_REG_C1_C0_2) | (0xF << 20))
    uc.reg_write(regs.UC_ARM_REG_FPEXC, 0x40000000)
    uc.mem_map(at, 0x1000)
    uc.mem_map(hook_stack, 0x8000)
    uc.mem_map(program_stack, 0x1000)
    uc.mem_write(at, data)
    uc.mem_write(done, enc.t32_nop())
    sp = top - 0x104 if sp_in_hook_stack else program_stack + 0x800
    uc.reg_write(regs.UC_ARM_REG_SP, sp)
    uc.reg_write(regs.UC_ARM_REG_LR, done | 1)
    uc.reg_write(regs.UC_ARM_REG_CPSR, (uc.reg_read(regs.UC_ARM_REG_CPSR) & 0x0FFFFFFF) | 0x90000000)
    before = uc.reg_read(regs.UC_ARM_REG_CPSR)
    uc.emu_start(code.labels[("callstub", RECORD_FLUSH)] | 1, done)
    assert uc.reg_read(regs.UC_ARM_REG_R2) == ((sp & ~7) if sp_in_hook_stack else top)
    assert uc.reg_read(regs.UC_ARM_REG_SP) == sp
    assert uc.reg_read(regs.UC_ARM_REG_CPSR) >> 28 == before >> 28

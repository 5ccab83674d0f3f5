"""InHost emitter: write a new ELF whose instrumented code and analysis run in-process.

Layout of the result (see docs/decisions/0001-region-and-loader-stub.md):

- the original file bytes stay where they are; only each relocated procedure's first
  8-10 bytes change (a jump to its copy) and the unused tail of the text segment's
  last page receives the loader stub, which becomes the entry point;
- a region is appended to the file and mapped by the stub at an offset from the image
  (load bias + offset; region_place.py chooses it), so the heap (brk) and every original address
  stay as they were: [analysis .text | header, relocated code, veneers, tables]
  [analysis .data] [.bss and counters, zero-filled].
"""

from __future__ import annotations

import bisect
import functools
import io
import itertools
import math
import operator
import os
import struct
import time
from collections.abc import Callable, Hashable, Sequence, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from elftools.elf.elffile import ELFFile

from .. import progress
from ..api import Arg, Options, Prototype, Tool
from ..arch.arm import fault_restorers
from ..arch.arm.appends import RECORD_FLUSH, emit_append_routine
from ..arch.arm.call_stubs import emit_call_stub
from ..arch.arm.exclusives import emulates_exclusives
from ..arch.arm.hooks import RECORD_PREFIX
from ..arch.arm.isa import SP, Scratch, vfp_scratch
from ..arch.arm.relocate import (
    INSTRUCTION_COPY,
    RelocationContext,
    Unsupported,
    emit_veneer,
    emit_xlate_table,
    ins_label,
    instruction_copies,
    reads_return_address,
    relocate_instruction,
    relocate_procedure,
    write_range_veneer,
)
from ..arch.arm.shared_calls import SharedCalls
from ..arch.code import Code, Resolver
from ..errors import AnvilError
from ..files import atomic_write
from ..ir import go_runtime
from ..ir.caller_sensitive import caller_sensitive_returns
from ..ir.constants import constant_before, jump_targets
from ..ir.flow import interrupt_code, reset_handler
from ..ir.fork_split import halfway
from ..ir.gc_pause import gc_paused
from ..ir.inline_data import inline_data_size
from ..ir.model import Binary, Hook, Instruction, Point, Procedure
from ..ir.plt import thumb_stubs
from ..tool_files import run_instrument
from . import file_gap, firmware, preinit, region_place
from . import target_build as tb
from .counter_placement import place_counters
from .deferred import defer, dispatch_unit, ring_unit
from .later_part import MIN_INSTRUCTIONS, LaterPart, LocalPart
from .loop_sums import LoopSum
from .page_layout import emit_inside_a_page
from .patches import (
    PAGE,
    Patch,
    Tail,
    branch_reaches,
    entry_patches,
    firmware_trampolines,
    place_trampolines,
    return_patches,
    return_sites,
    return_sites_in_data,
    slack_address,
    tail_location,
    text_segment,
    zero_filled,
)
from .procedure_sums import count_hits_in_registers, program_stops
from .records import SiteTable
from .sites import SiteUnit

HEADER_MAGIC = 0x4C564E41  # "ANVL"
_IS_SYSCALL = operator.attrgetter("is_syscall")  # (system calls picked out of every instruction in C)
# Firmware: the library is linked once for its size at the free flash's start (aligned
# alike) and goes after the code, at an address with the same alignment, so that its
# sections lay out the same.
LIBRARY_ALIGN = 16


@dataclass
class Report:
    """What was (not) instrumented, for the user and the machine-readable report."""

    output: str
    procedures: int = 0
    relocated: int = 0
    # x86-64, where every procedure is copied: the procedures --only/--skip gave the tool's
    # calls (None: every procedure copied got them, or none were chosen).
    selected: int | None = None
    instructions: int = 0
    not_relocated: list[dict] = field(default_factory=list)
    entries_not_patched: list[str] = field(default_factory=list)
    # Bytes no decoder reads that instrumented code runs into: they run in place, uncounted.
    undecodable: list[dict] = field(default_factory=list)
    # x86-64 gathers and scatters, whose element accesses a tool of accesses is not given.
    vector_indexed: list[str] = field(default_factory=list)
    # Those of entries_not_patched whose address is stored in data (a code pointer, an
    # .init_array entry): entered that way they run in place, uninstrumented and uncounted.
    entries_run_in_place: list[str] = field(default_factory=list)
    rewrite_seconds: float = 0.0
    original_size: int = 0
    output_size: int = 0
    # Counting tools' block counters: kept inline, derived at the end, placed on branches.
    block_counters: dict[str, int] = field(default_factory=dict)
    # Sites of deferred routines whose calls are records run in batches (emit/deferred.py).
    deferred_sites: int = 0
    # Procedures that count their repeat filters' hits in registers (decision 0019).
    filter_hits_in_registers: int = 0
    # What calls leave in LR ("original" or "relocated" return addresses, decision 0013)
    # and, with original ones, how many return sites and landing pads got a jump.
    return_addresses: str = "relocated"
    return_sites: dict[str, int] = field(default_factory=dict)
    # Processes that relocated the code: 2 when a child did the later procedures (later_part.py).
    relocation_processes: int = 1
    # Where the loader stub's pieces went (one after another, or spread over free runs).
    loader_stub: list[str] = field(default_factory=list)
    # Where the stub first runs: "preinit array" (the dynamic linker calls it before any
    # library's initialiser, preinit.py) or "entry".
    started_from: str = "entry"
    # A firmware image's board, whose memory map placed the instrumentation (None: not firmware,
    # or on no known board).
    board: str | None = None

    def summary(self) -> str:
        if self.selected is None:
            parts = [f"{self.relocated}/{self.procedures} procedures instrumented ({self.instructions} instructions)"]
        else:
            parts = [f"{self.selected}/{self.procedures} procedures instrumented (--only/--skip; all {self.relocated} "
                     f"copied, {self.instructions} instructions)"]
        if self.not_relocated:
            parts.append(f"{len(self.not_relocated)} left as they were")
        if self.entries_not_patched:
            parts.append(f"{len(self.entries_not_patched)} entries not patched (instrumented when called directly)")
        if self.entries_run_in_place:
            parts.append(f"{len(self.entries_run_in_place)} of them also reached through pointers in data, where they "
                         f"run uninstrumented: {', '.join(self.entries_run_in_place[:5])}"
                         + (" ..." if len(self.entries_run_in_place) > 5 else ""))
        if self.undecodable:
            parts.append(f"{len(self.undecodable)} undecodable instructions run uncounted")
        if self.vector_indexed:
            parts.append(f"{len(self.vector_indexed)} gathers or scatters whose accesses are not traced: "
                         f"{', '.join(self.vector_indexed[:5])}" + (" ..." if len(self.vector_indexed) > 5 else ""))
        return ", ".join(parts)


def _register_sums(binary: Binary, sums: dict[str, str] | None, vfp: bool) -> dict[str, str]:
    """The per-procedure sums counter placement may keep in d31 (decision 0014): where d16-d31
    are free (Linux; the program does not use them) and no other thread runs the code (a
    thread's d31 is its own, and the end of the program would not see the others').
    ``vfp``: vfp_scratch(binary). ANVIL_NO_REGISTER_SUMS: memory counters as before (a
    reference for the tests)."""
    return sums if sums and _registers_free(binary, vfp) else {}


def _registers_free(binary: Binary, vfp: bool) -> bool:
    """Whether procedures may keep running sums in D registers (decisions 0014, 0019): d16-d31
    are free (``vfp``) and no other thread runs the code (a thread's registers are its own,
    and the end of the program would not see the others'). ANVIL_NO_REGISTER_SUMS: counts
    in memory as before (a reference for the tests)."""
    return vfp and not binary.threaded and not os.environ.get("ANVIL_NO_REGISTER_SUMS")


def _has_hooks(proc: Procedure) -> bool:
    if proc.hooks or proc.accumulation:
        return True
    return any(b.hooks or b.counter_increments or b.edge_increments or any(i.hooks for i in b.instructions)
               for b in proc.blocks)


def _add_runtime_hooks(binary: Binary) -> None:
    """Make program start and end observable.

    Linux: exit system calls (static, or a dynamic program with its C library inside) or,
    C library shared, _fini (which exit runs; where the runtime makes the C library's
    ``_Exit`` lead to the end, that is the end instead: the libraries' finalisers run after
    the executable's and may call into it, decision 0113) and calls of ``_exit``/``_Exit``
    (which end the process without it: a shell's children, programs that must not flush
    stdio twice) end the program; the loader stub starts it.
    Firmware: the reset handler's first instruction sets up the runtime, and the
    semihosting exit calls end the program.
    """
    _go_signal_hooks(binary)
    if binary.is_firmware:
        start = reset_handler(binary)
        reset = next((p for p in binary.procedures if p.address == start), None)
        if reset is None:
            raise AnvilError(f"no procedure at the entry point {start:#x} (the reset handler)")
        reset.hooks.insert(0, Hook(Point.BEFORE, Prototype("anvil_firmware_init", ()), (), setup=True))
    if not any(h.point is Point.AFTER for h in binary.hooks):
        return
    if exits_through_a_library(binary):
        end = Prototype("anvil_program_end", ())
        immediate_exits = {entry for entry, name in binary.plt.items() if name in ("_exit", "_Exit")}
        jumps_out = plt_jumps_out(binary, immediate_exits)
        ends = {jump.address for jump in jumps_out.values()}
        execs = {jump.address for jump in plt_jumps_out(
            binary, {entry for entry, name in binary.plt.items() if name in EXEC_FUNCTIONS}).values()}
        binder = next((p for p in binary.procedures if p.address == binary.binder), None) if ends | execs else None
        binder_jump = _jump_out(binder)
        _end_after_the_fini_array(binary)
        for proc in binary.procedures:
            if proc.address == binary.fini or (binary.fini is None and proc.name == "_fini"):
                proc.hooks.append(Hook(Point.BEFORE, FINI_END, ()))
            for ins in proc.instructions() if immediate_exits or execs else ():
                if ins.address in execs:
                    ins.add_hook(Hook(Point.BEFORE, EXEC_JUMP, (Arg.EFFADDR, binary.binder if binder_jump else 0)))
                elif ins.address in ends:
                    ins.add_hook(Hook(Point.BEFORE, EXIT_JUMP, (Arg.EFFADDR, binary.binder))
                                     if binder_jump is not None else Hook(Point.BEFORE, end, ()))
                elif ins.branch_target in immediate_exits and ins.branch_target not in jumps_out:
                    ins.add_hook(Hook(Point.BEFORE, end, ()))
        if binder_jump is not None:
            binder_jump.add_hook(Hook(Point.BEFORE, Prototype("anvil_binder_jump", ()), ()))
        signal_entries = {entry for entry, name in binary.plt.items() if name in SIGNAL_ACTION_FUNCTIONS}
        for jump in plt_jumps_out(binary, signal_entries).values():
            jump.add_hook(Hook(Point.BEFORE, SIGNAL_ACTION_CALL, (Arg.EFFADDR, 0, 1)))
        signal_calls = signal_action_calls(binary, signal_entries)
        following = _following(binary, signal_calls)
        for call in signal_calls:
            if (after := following.get(call.address)) is not None:
                after.add_hook(Hook(Point.BEFORE, SIGNAL_ACTION_SET, ()))
    # The program's own system calls, wherever its C library is: a runtime that makes them
    # itself (Go's, with cgo too, ends by its own exit_group and sets its signals' actions
    # by rt_sigaction, never through the C library it links; decision 0089).
    # The system call's number: r7 (Linux svc) or r0 (semihosting bkpt); and whether
    # Linux's exit (not exit_group) ends the program: not where it ends one thread of many.
    on_syscall = Prototype("anvil_on_syscall", (Arg.REG_VALUE, Arg.CONST))
    number = 0 if binary.is_firmware else 7
    args = (number, int(not binary.threaded))
    calls = [ins for proc in binary.procedures for ins in filter(_IS_SYSCALL, proc.instructions())]
    jumped_to = jump_targets(binary) if calls else set()
    following = _following(binary, calls)
    for ins in calls:
        if may_end_program(binary, ins, number, jumped_to):
            ins.add_hook(Hook(Point.BEFORE, on_syscall, args))
        if (not binary.is_firmware and ins.op_str in ("#0", "#0x0")
                and may_be_call(ins, number, jumped_to, {SYS_RT_SIGACTION})):
            ins.add_hook(Hook(Point.BEFORE, SIGNAL_ACTION_SYSCALL, (number, 0, 1, 13)))
            after = following.get(ins.address)
            if after is not None and after.address not in jumped_to:  # reached from the call alone
                after.add_hook(Hook(Point.BEFORE, SIGNAL_ACTION_DONE, (number, 1, 2, 0)))
        if (not binary.is_firmware and not binary.go_functions and ins.op_str in ("#0", "#0x0")
                and may_be_call(ins, number, jumped_to, SIGNAL_RETURNS)):
            ins.add_hook(Hook(Point.BEFORE, SIGNAL_RETURN, (number, SP)))
        if (binary.threaded and not binary.is_firmware and not binary.go_functions
                and ins.op_str in ("#0", "#0x0") and may_be_call(ins, number, jumped_to, FORKS)):
            after = following.get(ins.address)
            if after is not None and after.address not in jumped_to:
                ins.add_hook(Hook(Point.BEFORE, FORK_BEFORE, (number, 0)))
                after.add_hook(Hook(Point.BEFORE, FORK_AFTER, ()))


def signal_action_calls(binary: Binary, entries: set[int]) -> list[Instruction]:
    """The program's calls of ``entries``, the PLT entries of the C library's signal-action
    functions: after each, a handler the call set through the lazy binder gets its wrapper
    (SIGNAL_ACTION_SET here, x86-64's ``anvil_signal_set_entry``; decision 0203)."""
    if not entries:
        return []
    return [ins for proc in binary.procedures for ins in proc.instructions()
            if ins.is_call and ins.branch_target in entries]


def _restorer(proc: Procedure) -> bool:
    """Whether ``proc`` is a signal restorer: it sets r7 to rt_sigreturn's or sigreturn's
    number for a system call that is hooked (SIGNAL_RETURN), as the C library's do."""
    return any(h.prototype is SIGNAL_RETURN for ins in proc.instructions() for h in ins.hooks) and any(
        ins.name == "mov" and ins.op_str in _SETS_SIGNAL_RETURN for ins in proc.instructions())


def _following(binary: Binary, instructions: list[Instruction]) -> dict[int, Instruction]:
    """Address of each of ``instructions`` -> the instruction after it in its procedure."""
    wanted = {ins.address for ins in instructions}
    out: dict[int, Instruction] = {}
    for proc in binary.procedures:
        previous = None
        for ins in proc.instructions():
            if previous is not None and previous.address in wanted:
                out[previous.address] = ins
            previous = ins
    return out


GO_FAULT_PC = Prototype("anvil_go_fault_pc", (Arg.REG_VALUE, Arg.REG_VALUE, Arg.REG_VALUE))
# Before the handler returns: SP, where the kernel's signal frame is.
GO_SIGNAL_RETURN = Prototype("anvil_go_signal_return", (Arg.REG_VALUE,))
# Before asyncPreempt jumps back: SP and where from it the PC it loads is.
GO_RESUME = Prototype("anvil_go_resume", (Arg.REG_VALUE, Arg.CONST))


def _go_signal_hooks(binary: Binary) -> None:
    """A Go program's signals in the copy (decision 0089, preemption 0134). At the entry of
    its signal handler: the PC of a fault in the copy becomes the original instruction's,
    which Go's PC table knows; so does the PC of a preemption signal that stopped the copy
    where its registers are the original's (the start of an instruction's copy), so that
    the handler may preempt there. Before the handler returns, a PC it left alone goes back
    to the copy; before asyncPreempt (which the handler made the goroutine call) jumps back
    to the original PC it was given, that PC becomes its copy's. The map these look PCs up
    in is written by _pc_map."""
    if not binary.go_functions:
        return
    for proc in binary.procedures:
        name = binary.go_functions.get(proc.address)  # (a symbol may name it otherwise: runtime.sigtramp.abi0)
        if name == go_runtime.SIGNAL_HANDLER:
            proc.hooks.insert(0, Hook(Point.BEFORE, GO_FAULT_PC, (0, 1, 2)))
            for ins in proc.instructions():
                if ins.is_return:
                    ins.add_hook(Hook(Point.BEFORE, GO_SIGNAL_RETURN, (SP,)))
        elif name == go_runtime.ASYNC_PREEMPT:
            for ins in proc.instructions():
                slot = next((a for a in reversed(ins.accesses) if a.base == SP and not a.is_store
                             and a.index is None), None) if ins.is_return else None
                if slot is not None:
                    ins.add_hook(Hook(Point.BEFORE, GO_RESUME, (SP, slot.disp)))


# A bit of a map's original address: the start of this instruction's copy is not a place
# where the program's registers are all the original's (a procedure that keeps sums in
# registers across its instructions, decision 0014: not in threaded programs, which Go's are).
NOT_A_SAFE_POINT = 1


def _may_fault(ins: Instruction) -> bool:
    """Whether ``ins`` may raise a fault the kernel reports at it: a memory access (SIGSEGV,
    SIGBUS), an undefined instruction or a breakpoint, a coprocessor's, VFP's or NEON's
    (SIGILL where the core has none: a program's probe for a feature)."""
    name = ins.name
    return bool(ins.accesses) or name in ("udf", "bkpt", "mrc", "mcr", "mrrc", "mcrr", "cdp") \
        or name.startswith(("v", "aes", "sha", "crc32"))


# A bit of a fault map's original address: the instruction is a system call. A signal of
# any kind that interrupts one (a blocking call) is given the original's PC, as a fault is:
# musl's and glibc's (2.41) thread cancellation compare it with their own labels around
# the call (decision 0203).
SYSTEM_CALL = 1


def _fault_map(code: Code, chosen: list[Procedure]) -> int:
    """For the runtime's ``to_original`` (decisions 0202, 0203): the pairs (copy, original)
    of the relocated instructions that may fault and of the system calls (their original
    or-ed with SYSTEM_CALL), in the copies' order, under the label "faultmap"; returns
    their count."""
    originals = [ins.address | (SYSTEM_CALL if ins.is_syscall else 0) for proc in chosen
                 for ins in proc.instructions() if ins.is_syscall or _may_fault(ins)]
    code.align(4)
    code.label("faultmap")

    def pairs(_at: int, resolve: Resolver) -> bytes:
        ordered = sorted((resolve(ins_label(address & ~SYSTEM_CALL)) & ~1, address) for address in originals)
        return struct.pack(f"<{2 * len(ordered)}I", *itertools.chain.from_iterable(ordered))
    code.later(8 * len(originals), pairs)
    return len(originals)


def _pc_map(code: Code, chosen: list[Procedure]) -> int:
    """For a Go program (whose signal handler got anvil_go_fault_pc): the pairs (copy,
    original) of every relocated instruction in the copies' order, then the same pairs in the
    originals' order, laid out when the code is (``code.later``), under the label "pcmap";
    their count. An original is or-ed with NOT_A_SAFE_POINT where its copy's start is not a
    place to preempt at."""
    originals = [ins.address | (NOT_A_SAFE_POINT if proc.accumulation else 0)
                 for proc in chosen for ins in proc.instructions()]
    code.align(4)
    code.label("pcmap")

    def table(order: Callable[[tuple[int, int]], int]) -> Callable[[int, Resolver], bytes]:
        def pairs(_at: int, resolve: Resolver) -> bytes:
            ordered = sorted(((resolve(ins_label(address & ~NOT_A_SAFE_POINT)) & ~1, address)
                              for address in originals), key=order)
            return struct.pack(f"<{2 * len(ordered)}I", *itertools.chain.from_iterable(ordered))
        return pairs

    code.later(8 * len(originals), table(operator.itemgetter(0)))
    code.later(8 * len(originals), table(operator.itemgetter(1)))
    return len(originals)


# At DT_INIT's entry: the dynamic linker runs DT_INIT and DT_FINI (glibc; not musl on ARM,
# which defines NO_LEGACY_INITFINI and runs only the arrays).
SAW_INIT = Prototype("anvil_saw_init", ())
# Before the first DT_FINI_ARRAY function returns: the end, unless DT_FINI runs after it.
FINI_ARRAY_END = Prototype("anvil_fini_array_end", (Arg.CONST,))
# At DT_FINI's entry: the end, unless the runtime made the C library's _Exit the end (the
# libraries' finalisers, which run after the executable's, may call back into it: decision 0113).
FINI_END = Prototype("anvil_fini_end", ())


def _end_after_the_fini_array(binary: Binary) -> None:
    """Observe the end of a program whose dynamic linker may skip DT_FINI where the
    executable's own code last runs then: the return of the first DT_FINI_ARRAY function
    (the array runs backwards, DT_FINI after it). Whether DT_FINI will run is known from
    DT_INIT: the runtime notes its call (decision 0084)."""
    procs = {p.address: p for p in binary.procedures}
    last = procs.get(binary.fini_array_first) if binary.fini_array_first is not None else None
    if last is None:
        return
    fini = binary.fini is not None and binary.fini in procs
    init = procs.get(binary.init) if binary.init is not None else None
    if fini and init is None:
        return  # DT_FINI ends it, wherever the dynamic linker calls it (no way to tell)
    if fini and init is not None:
        init.hooks.insert(0, Hook(Point.BEFORE, SAW_INIT, ()))
    returns = [ins for ins in last.instructions() if ins.is_return]
    for ins in returns:
        ins.add_hook(Hook(Point.BEFORE, FINI_ARRAY_END, (int(fini),)))
    if not returns:  # it leaves by a tail call: end at its entry, a few instructions early
        last.hooks.append(Hook(Point.BEFORE, FINI_ARRAY_END, (int(fini),)))


# Imports that say the C library, and with it the way out of the process, is a shared
# library: glibc's and musl's start-up goes through __libc_start_main, whose exit runs the
# executable's _fini; the others end the process themselves.
LIBRARY_EXITS = frozenset(("__libc_start_main", "exit", "_exit", "_Exit", "quick_exit"))


def exits_through_a_library(binary: Binary) -> bool:
    """Whether the program leaves through a shared C library (its end is then observed at
    _fini and _exit's PLT entry), not through system calls of its own: a dynamic program
    may carry its C library in itself (Debian's musl-gcc links libc.a into a PIE with an
    interpreter), and then exit, its stdio flush and its exit_group run in the executable,
    after _fini, as in a static program (decision 0084)."""
    return binary.is_dynamic and not LIBRARY_EXITS.isdisjoint(binary.plt.values())


# Anvil's runtime handles each fatal signal left at its default to write the results
# (runtime_stubs/arm/anvil_rt.c): before the program reads or sets a signal's action, the
# runtime puts the default back where its handler is, so the program sees what it would
# have (Rust's start-up installs its own SIGSEGV handler only over SIG_DFL). Dynamic
# programs: at the jump out of these functions' PLT entries (r0: the signal); static
# ones: at rt_sigaction system calls (r7: the number, r0: the signal).
SIGNAL_ACTION_FUNCTIONS = frozenset(("sigaction", "signal", "sysv_signal", "__sysv_signal", "bsd_signal",
                                     "sigset"))
SYS_RT_SIGACTION = 174
# Also, a system call that sets an action (r1: the kernel's struct; SP: where the stack is)
# gets the runtime's wrapper in its handler's place, and so does a handler set through a
# PLT entry (its GOT slot, r0, r1) whose slot the runtime could not lead to its own
# function at start (decision 0143).
SIGNAL_ACTION_CALL = Prototype("anvil_signal_plt", (Arg.EFFADDR, Arg.REG_VALUE, Arg.REG_VALUE))
# After a call of such a PLT entry: the handler the call set through the lazy binder (the
# slot not bound yet) gets its wrapper now, not at the end of some later analysis call (a
# tool without calls makes none; decision 0203).
SIGNAL_ACTION_SET = Prototype("anvil_signal_action_set", ())
SIGNAL_ACTION_SYSCALL = Prototype("anvil_signal_action", (Arg.REG_VALUE, Arg.REG_VALUE, Arg.REG_VALUE, Arg.REG_VALUE))
# After such a system call (r7, r1, r2 as they were, r0 its result): the program's own
# handler back in the structs, where the kernel or the hook before put a wrapper's entry.
SIGNAL_ACTION_DONE = Prototype("anvil_signal_action_done", (Arg.REG_VALUE, Arg.REG_VALUE, Arg.REG_VALUE,
                                                            Arg.REG_VALUE))


# The return from a signal handler through the program's own restorer (a static program's C
# library's: rt_sigreturn, sigreturn; r7 the number, SP the kernel's frame): a fault's PC
# that the runtime gave the handler as the original's is the copy's again (decision 0202).
SIGNAL_RETURNS = frozenset((173, 119))
SIGNAL_RETURN = Prototype("anvil_fault_sigreturn", (Arg.REG_VALUE, Arg.REG_VALUE))
_SETS_SIGNAL_RETURN = frozenset(f"r7, #{number:#x}" for number in SIGNAL_RETURNS)  # (as capstone writes it)


# A fork system call of a program that starts threads, in its own copied code (a static
# program's C library; decision 0127 does the dynamic ones through the C library's fork
# handlers): the analysis lock is held over it (r7 the number, r0 clone's flags or
# clone3's arguments), and given back at the instruction after it, in each process.
FORKS = frozenset((2, 120, 435))  # fork, clone, clone3
FORK_BEFORE = Prototype("anvil_before_fork", (Arg.REG_VALUE, Arg.REG_VALUE))
FORK_AFTER = Prototype("anvil_after_fork", ())


# Before the jump out of _exit's PLT entry: the end, or where the lazy binder takes over.
EXIT_JUMP = Prototype("anvil_exit_jump", (Arg.EFFADDR, Arg.CONST))
# The same before the jump out of an exec function's entry: the process becomes another
# program, and no exit runs (decision 0101).
EXEC_FUNCTIONS = frozenset(("execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve",
                            "execveat"))
EXEC_JUMP = Prototype("anvil_exec_jump", (Arg.EFFADDR, Arg.CONST))


def plt_jumps_out(binary: Binary, entries: set[int]) -> dict[int, Instruction]:
    """PLT entry (or its Thumb stub) among ``entries`` -> the instruction of its A32 entry
    proper that jumps out of the executable (``ldr pc, [ip, ...]``), where that
    entry is a procedure of its own.

    For ``_exit``, the program's end is observed there rather than at its calls: by then
    every instruction of the executable that runs on the way has run (the entry's, a Thumb
    stub's, those of a tail call or a call through a pointer), so counts are exact. Unless
    the entry's GOT slot is not bound yet: then the lazy binder (PLT0) runs next, and the
    end waits for its jump (anvil_exit_jump; decision 0058)."""
    procs = {p.address: p for p in binary.procedures}
    out = {}
    stubs = thumb_stubs(binary.plt, binary.read)
    for entry in entries:
        # A Thumb stub (bx pc, a pad) runs into its entry proper, 4 bytes on.
        jump = _jump_out(procs.get(entry + 4 if entry in stubs else entry))
        if jump is not None:
            out[entry] = jump
    return out


def _jump_out(proc: Procedure | None) -> Instruction | None:
    """The A32 instruction of ``proc`` (a PLT entry, PLT0) that loads the PC."""
    return next((i for i in proc.instructions() if i.writes_pc and not i.thumb), None) if proc else None


# The calls that may end a program (what anvil_on_syscall looks for): semihosting's
# SYS_EXIT and SYS_EXIT_EXTENDED; Linux's exit and exit_group, and execve and execveat,
# which make the process another program.
ENDING_SEMIHOSTING_CALLS = frozenset((0x18, 0x20))
ENDING_LINUX_CALLS = frozenset((1, 248, 11, 387))


def may_end_program(binary: Binary, call: Instruction, number: int, jumped_to: set[int]) -> bool:
    """Whether system call ``call`` may end the program: unless the code that surely runs
    before it puts another call's number in register ``number`` (decision 0033; ``jumped_to``:
    ``jump_targets(binary)``). A hook on every call would make firmware relocate each
    semihosting wrapper, however little is instrumented. Linux's old ABI (``svc #0x9000NN``)
    carries the number in the instruction: always kept."""
    ending = ENDING_SEMIHOSTING_CALLS if binary.is_firmware else ENDING_LINUX_CALLS
    if not binary.is_firmware and call.op_str not in ("#0", "#0x0"):
        return True
    return may_be_call(call, number, jumped_to, ending)


def may_be_call(call: Instruction, number: int, jumped_to: set[int], calls: Set[int]) -> bool:
    """Whether system call instruction ``call`` may make one of ``calls``: unless the code
    that surely runs before it puts another number in register ``number``."""
    value = constant_before(call, number, jumped_to)
    return value is None or value in calls


def _relocatable(proc: Procedure, ctx: RelocationContext) -> str | None:
    """None if ``proc`` can be relocated, else the reason.

    Only instructions that involve the PC can be refused; they are tried on scratch code.
    Direct branches and calls (a fifth of all instructions) always relocate: not tried.
    """
    scratch = Code(0)
    try:
        for ins in proc.instructions():
            if ins.thumb and ins.name == "bx" and ins.branch_target is not None \
                    and any(other.address == ins.branch_target and other.thumb for other in proc.instructions()):
                # A linker's Thumb-to-A32 veneer (``bx pc; nop; b function``: gold's, which no
                # mapping symbol marks) inside the procedure: its A32 half reads as Thumb
                # here, and a copy's ``bx pc`` would switch to A32 at the copy, not there.
                return f"{ins}: a Thumb-to-A32 veneer, whose A32 code follows it in the procedure"
            if (ins.reads_pc or ins.writes_pc) and ins.branch_target is None:
                relocate_instruction(ins, scratch, ctx)
            elif ins.is_call and ins.branch_target is not None and ins.address not in ctx.case_tables \
                    and reads_return_address(ctx, ins.branch_target & ~1, ins.thumb != (ins.name == "blx")):
                # Its table follows the call in the original: the procedure runs there.
                return f"{ins}: calls {ins.branch_target & ~1:#x}, which reads a table at its return address"
    except Unsupported as e:
        return str(e)
    finally:
        ctx.xlate_tables.clear()
        ctx.veneers.clear()
    return None


def _library_sources(tool: Tool, toolchain: tb.Toolchain, deferred: SiteTable | None) -> list[Path | tb.Generated]:
    """The runtime and the tool's C; with ``deferred`` sites, the tool's C comes inside the unit
    that runs their records, and the ring that keeps them is added (emit/deferred.py)."""
    sources = tb.analysis_sources(tool)
    if deferred is not None:
        return [*tb.runtime_sources(toolchain), ring_unit(), dispatch_unit(deferred, sources)]
    return [*tb.runtime_sources(toolchain), *sources]


@gc_paused
def require_rewritable(binary: Binary, mode: str = "rehost") -> None:
    """Refuse a program of an ISA whose hooks cannot be lowered yet in ``mode`` (ARM and
    x86-64 can, in both)."""
    if binary.machine not in ("arm", "x86-64"):
        raise AnvilError(f"{binary.path}: {binary.machine} programs can be read (anvil inspect) but not yet "
                         f"instrumented in {mode} mode")


@gc_paused  # the tool's own pass too: its increments and hooks are as many objects as blocks
def instrument(binary: Binary, tool: Tool, opts: Options, output: str) -> Report:
    """Run ``tool`` over ``binary`` and write the InHost-instrumented executable to ``output``."""
    require_rewritable(binary, "inhost")
    if binary.machine == "x86-64":
        from .elf64_inhost import instrument as instrument_x86_64
        return instrument_x86_64(binary, tool, opts, output)
    started = time.monotonic()
    binary.clear_hooks()
    run_instrument(tool, binary, opts)
    # Records are appended inline only in T32 code with registers parked in d16-d31: elsewhere
    # a record is a call too, and deferring would add the ring's work to it. All of a
    # routine's calls are deferred or none (their order), so mostly-A32 programs call. Mostly
    # by code size: a small program's many PLT entries (A32 procedures) are not its code.
    # ANVIL_NO_DEFER: every call made as it comes (a reference for the tests).
    deferred = None
    # Not in a program that starts threads: the ring's writers count tells a signal handler's
    # records from those it interrupted, and another thread's would look the same.
    if any(p.deferred for p in tool.prototypes.values()) and not os.environ.get("ANVIL_NO_DEFER") \
            and not binary.threaded:
        thumb = sum(p.size for p in binary.procedures if p.thumb)
        if 2 * thumb > sum(p.size for p in binary.procedures) and vfp_scratch(binary):
            deferred = defer(binary, tool)
    units = SiteUnit()
    arrays = {**tool.arrays, **tool.filter_arrays()}
    report = emit(binary, tool.name, units,
                  lambda toolchain: (_library_sources(tool, toolchain, deferred),
                                     units.source(binary, arrays, placed=tool.filter_placement())), output,
                  started, opts, tool.procedure_sums)
    report.deferred_sites = len(deferred.sites) if deferred else 0
    return report


@gc_paused
def emit(binary: Binary, tool_name: str, units: SiteUnit,
         library: Callable[[tb.Toolchain], tuple[list[Path], str]], output: str, started: float,
         opts: Options, sums: dict[str, str] | None = None) -> Report:
    """Write ``binary`` with its hooks to ``output``, linked with the library ``library(toolchain)`` describes.

    ``library`` gives the C/assembly sources for the image's toolchain and the generated
    site unit; it is called once the strings all hooks pass are known to ``units``. InHost links the tool's
    analysis routines; ReHost links the communicator (emit/rehost.py). ``opts`` gives
    the user's flash and RAM regions for firmware. ``sums``: the tool's block counter arrays
    read only as per-procedure sums, and where those go (``Tool.sum_per_procedure``): the
    image folds what those counters hold into the sums at its end, in both modes
    (decisions 0025, 0030).
    """
    children: list[LaterPart | LocalPart] = []  # the later part (a forked child is stopped whatever happens)
    try:
        return _emit(binary, tool_name, units, library, output, started, opts, sums, children)
    finally:
        for child in children:
            child.close()


def _emit(binary: Binary, tool_name: str, units: SiteUnit,
          library: Callable[[tb.Toolchain], tuple[list[Path], str]], output: str, started: float,
          opts: Options, sums: dict[str, str] | None,
          children: list[LaterPart | LocalPart]) -> Report:
    """emit(); a child it forks goes into ``children``."""
    placement = firmware.place(binary, opts.flash_region, opts.ram_region, opts.board) if binary.is_firmware else None
    _add_runtime_hooks(binary)
    vfp = vfp_scratch(binary)
    stops = program_stops(binary)
    # Before the library's thread starts: counter placement may fork.
    derivations = place_counters(binary, stops, _register_sums(binary, sums, vfp), sums)
    hits_in_registers = count_hits_in_registers(binary, stops) if _registers_free(binary, vfp) else 0
    report = Report(output=output, procedures=len(binary.procedures), original_size=len(binary.data),
                    filter_hits_in_registers=hits_in_registers,
                    board=placement.board if placement is not None else None,
                    block_counters={"inline": derivations.counters_kept, "derived": derivations.counters_removed,
                                    "on_branches": sum(derivations.edges.values()),
                                    "in_register_sums": derivations.counters_summed,
                                    "in_loops": len(derivations.in_loops),
                                    "loops_in_registers": len(derivations.loop_sums),
                                    "atomic": binary.threaded and not binary.is_firmware})
    for hook in _all_hooks(binary):  # every string a hook passes gets its symbol in the site unit
        for kind, value in zip(hook.prototype.kinds, hook.args):
            if kind is Arg.STRING:
                units.string_symbol(str(value))
    toolchain = tb.toolchain_for(binary.is_firmware, binary.dsp, keep_r10=bool(binary.go_functions))
    units.lengths.update(derivations.sizes)
    sources, site_source = library(toolchain)
    if not derivations.runs_programs:
        sources = [source for source in sources if source != tb.DERIVE_SOURCE]
    # Linux: the region at an offset clear of the addresses the program maps itself (decision 0077).
    claimed = region_place.claimed_ranges(binary) if placement is None else []
    offset = region_place.region_offset(binary, claimed) if placement is None else 0
    base = placement.flash.start + (-placement.flash.start) % LIBRARY_ALIGN if placement else offset
    # The analysis library (runtime, tool, generated site tables) is compiled meanwhile.
    # Linux: the code is relocated at address 0 and moved once the library, which comes
    # first, has its size. Firmware: the code is relocated at the free flash's start, its
    # link address from the first byte (so its 4 KiB pages are those it runs on, with no
    # padding to a page, decision 0053), and the library goes after it.
    original_returns = _original_returns(binary, opts)
    report.return_addresses = "original" if original_returns else "relocated"
    relocation = _relocation(binary, units, placement is None, original_returns, vfp,
                             base if placement else 0, derivations.in_loops, derivations.loop_sums)
    # The jumps over the original code depend only on what is relocated: worked out first,
    # for the candidates (all of them, unless one fails). Where some find no room for their
    # trampolines, the code is emitted once, after the fall back (_relocate_falling_back),
    # not once in vain and again (cc1: a second relocation of 4.3M instructions, with the
    # first one's code still held).
    in_data = frozenset(relocation.relocated_returns)  # return sites in literal pools
    patching = _Meanwhile(functools.partial(_linux_patching, binary, relocation.candidates, report, in_data,
                                            relocation.sensitive_returns)) \
        if placement is None else None
    if patching is not None:
        patching.run()  # (an error is raised where the result is asked for, as before)
    falls_back = patching is not None and patching.ran_to(lambda linux: bool(linux.unplaced))
    # Before the library's thread starts: a fork copies no other thread.
    later = _later_part(relocation, tool_name) if placement is None and not falls_back else None
    if later is not None:
        children.append(later)
    with _LibraryBuild(sources, site_source + derivations.source(), toolchain, base) as build:
        if falls_back:
            assert patching is not None
            code, chosen, linux = build.alongside(
                lambda: _relocate_falling_back(binary, relocation, report, patching.result(), in_data))
        else:
            code, chosen = build.alongside(lambda: _relocate_code(relocation, report, later))
            linux = None
        if patching is not None and not falls_back:
            linux = patching.result() if len(chosen) == len(relocation.candidates) \
                else _linux_patching(binary, chosen, report, in_data, relocation.sensitive_returns)
            if linux.unplaced:
                if later is not None:
                    later.close()
                    later = None
                code = None  # (garbage now: not held while the code is emitted again)
                code, chosen, linux = _fall_back(binary, relocation, report, chosen, linux)
        objects, probe = build.result()
    relocated_addrs = relocation.relocated_addrs
    if isinstance(later, LaterPart) and later.placed:
        report.relocation_processes = 2
    if placement is None:
        align = math.lcm(16, code.alignment)  # page-local append routines keep the code page aligned
        code.rebase((base + len(probe.text) + align - 1) // align * align)
        lib_base = base
    else:
        # Firmware: the library after the code, aligned as where it was linked for its size.
        lib_base = code.here() + (-code.here()) % LIBRARY_ALIGN

    if placement is not None:
        # Firmware: 4-byte branches at the entries (long jumps from code too far from the
        # copies: run from RAM), the runtime's initial data after the library in flash,
        # its RAM at the top of the free RAM.
        patches, not_patched = _firmware_patches(binary, chosen, report, (base, code.here()),
                                                 frozenset(relocation.relocated_returns))
        data_image = lib_base + len(probe.text)
        data_image += (-data_image) % 8
        ram_at = placement.ram_for(probe.bss_end - probe.data_addr)
        lib = tb.link(objects, lib_base, ram_at, toolchain, data_image)
        placement.check_flash(data_image + len(lib.data))
    else:
        assert linux is not None
        patches, not_patched, tail = linux.patches, linux.not_patched, linux.tail
        patch_words = [p.word for p in patches] if binary.is_pie else []
        map_count = _pc_map(code, chosen) if any(h.prototype is GO_FAULT_PC for p in chosen for h in p.hooks) else 0
        # The program's own restorers whose return to the kernel is hooked, where their entry
        # leads to the copy (a static program's), with their Thumb bit: up to two.
        patched = {p.address for p in linux.patches}
        own_restorers = sorted({proc.address | int(proc.thumb) for proc in chosen
                                if proc.address in patched and _restorer(proc)})[:2]
        fault_count = _fault_map(code, chosen) if linux.restorers or own_restorers else 0
        code.align(4)
        code.label("patches")
        code.emit(struct.pack(f"<{len(patch_words)}I", *patch_words) if patch_words else b"")
        code_end = (code.here() + PAGE - 1) & ~(PAGE - 1)
        lib = tb.link(objects, offset, code_end, toolchain)
        file_end = (lib.data_addr + len(lib.data) + PAGE - 1) & ~(PAGE - 1)
        file_end = max(file_end, code_end)
        region_place.check_clear(binary, offset, max(file_end, lib.bss_end) - offset, claimed)
    report.entries_not_patched = not_patched
    by_name = {p.name: p for p in chosen}
    report.entries_run_in_place = [name for name in not_patched if by_name[name].address in binary.address_taken]
    if len(lib.text) != len(probe.text):
        raise AnvilError("analysis library changed size between links")

    symbols = lib.symbols
    resolve = functools.partial(_resolve, code.labels, symbols, tool_name, None)
    if os.environ.get("ANVIL_ADDRESS_MAP"):  # debugging aid: relocated -> original addresses
        with open(os.environ["ANVIL_ADDRESS_MAP"], "w") as f:
            for original, at in instruction_copies(code.labels).items():
                f.write(f"{at:x} {original:x}\n")

    if placement is not None:
        flash = bytearray(code.finish(resolve))
        flash += bytes(lib_base - base - len(flash)) + lib.text
        flash += bytes(data_image - base - len(flash)) + lib.data
        entry_bytes = {p.address: p.bytes_at_entry(resolve(ins_label(p.address)) | int(p.thumb)) for p in patches}
        entry_bytes.update({p.trampoline: p.trampoline_bytes(resolve(ins_label(p.address)) | int(p.thumb))
                            for p in patches if p.trampoline is not None})
        data = firmware.write_elf(binary, entry_bytes, base, bytes(flash), ram_at, lib.bss_end - ram_at)
        return _finish(report, output, data, chosen, started)

    entry = binary.entry & ~1
    entry_thumb = bool(binary.entry & 1)
    if entry in relocated_addrs:
        entry_target = code.labels[ins_label(entry)] | int(entry_thumb)
    else:
        entry_target = binary.entry
    early = tail.early
    header = struct.pack(f"<{HEADER_WORDS}I", HEADER_MAGIC, offset, code_end, file_end, lib.bss_end,
                         entry_target, len(patch_words), code.labels["patches"],
                         *(early.header_words() if early else (0, 0, 0)), *_library_words(binary),
                         binary.entry)
    code._chunks[HEADER_CHUNK] = header
    if later is not None and later.placed:
        later.finish(code, symbols)  # the child encodes its part meanwhile
    code_bytes = code.finish(resolve)

    targets = {p.address: resolve(ins_label(p.address)) | int(p.thumb) for p in patches}
    region = bytearray(file_end - offset)
    region[0:len(lib.text)] = lib.text
    start = code.base - offset
    region[start:start + len(code_bytes)] = code_bytes
    dstart = lib.data_addr - offset
    region[dstart:dstart + len(lib.data)] = lib.data
    if map_count:
        at = symbols["anvil_pc_map"] - offset
        region[at:at + 8] = struct.pack("<II", resolve("pcmap"), map_count)
    pieces, exidx = [], None
    if fault_count:
        at = symbols["anvil_fault_map"] - offset
        region[at:at + 8] = struct.pack("<II", resolve("faultmap"), fault_count)
        ours = fault_restorers.entries(linux.restorers.at) if linux.restorers else (0, 0)
        at = symbols["anvil_fault_restorers"] - offset
        region[at:at + 16] = struct.pack("<4I", *ours, *own_restorers, *[0] * (2 - len(own_restorers)))
    if fault_count and linux.restorers:
        plan = linux.restorers
        pieces.append((plan.at, fault_restorers.code(plan.at, symbols["anvil_fault_return"] | 1)))
        if plan.index is not None:
            pieces.append((plan.index_at, plan.index))
            exidx = plan.header, plan.index_at, len(plan.index) - fault_restorers.EXTAB_BYTES  # (the rows alone)

    data = _write_elf(binary, bytes(region), offset, patches, targets, tail, code.labels["header"],
                      symbols["anvil_init"], early, pieces, exidx)
    return _finish(report, output, data, chosen, started)


def _resolve(labels: dict, symbols: dict[str, int], tool_name: str, copies: dict | None, key: Hashable) -> int:
    """The address of ``key``: a label of the code, a symbol of the library (``("sym", name)``,
    ``("sym+", name, offset)``) or a label with the Thumb bit (``("with_bit", key, bit)``).
    ``copies``: more labels, of which only the instruction copies count, looked up where
    ``labels`` lacks one (the rest of the code's, for a later part encoded in this process).

    A module function, not a closure calling itself: that would be a reference cycle
    holding every label until the cycle collector ran.
    """
    at = labels.get(key)
    if at is not None:
        return at
    if copies is not None and key.__class__ is tuple and key[0] == INSTRUCTION_COPY:
        at = copies.get(key)
        if at is not None:
            return at
    if isinstance(key, tuple) and key[0] == "sym":
        if key[1] not in symbols:
            raise AnvilError(f"analysis routine or symbol '{key[1]}' is not defined by tool {tool_name}")
        return symbols[key[1]]
    if isinstance(key, tuple) and key[0] == "with_bit":
        return _resolve(labels, symbols, tool_name, copies, key[1]) | key[2]
    if isinstance(key, tuple) and key[0] == "sym+":
        return symbols[key[1]] + key[2]
    raise AnvilError(f"internal error: unresolved label {key!r}")


def _original_returns(binary: Binary, opts: Options) -> bool:
    """Whether calls push original return addresses (decision 0013): as the user says, or
    by default when the program's stack may be unwound (``Binary.unwinds``). Firmware too (decision 0122)."""
    choice = opts.return_addresses
    if binary.go_functions and choice == "relocated":
        raise AnvilError("--return-addresses relocated: a Go program's runtime looks up every return address "
                         "on its stacks in its PC table, which names only the original code")
    return choice == "original" or (choice == "auto" and binary.unwinds)


T = TypeVar("T")


class _Meanwhile(Generic[T]):
    """``work()``, run ahead (``run``), its result or error kept for when it is needed
    (``result``; run then if it was not): an error that would not arise for the procedures
    finally chosen is never raised."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._ran = False
        self._value: T | None = None
        self._error: AnvilError | None = None

    def run(self) -> None:
        if not self._ran:
            self._ran = True
            try:
                self._value = self._work()
            except AnvilError as error:  # raised where the result is asked for, as it would be there
                self._error = error

    def ran_to(self, test: Callable[[T], bool]) -> bool:
        """Whether ``work()`` ran, without error, to a result that passes ``test``."""
        return self._ran and self._error is None and self._value is not None and test(self._value)

    def result(self) -> T:
        self.run()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


@dataclass
class _Patching:
    """The jumps written over the original code when some procedures are relocated."""

    patches: list[Patch]
    not_patched: list[str]  # entries left without a jump: reachable only by direct calls
    tail: Tail  # where the loader stub and the trampolines go
    # Return sites and landing pads whose jump found no room for its trampoline (see _fall_back).
    unplaced: list[int] = field(default_factory=list)
    # The restorers of handlers of faults in the copy and their unwind index, where the text
    # has room for them (fault_restorers).
    restorers: _Restorers | None = None


@dataclass
class _Restorers:
    """Where fault_restorers' restorers go in the text, and the new unwind index (None in
    a program without one: nothing unwinds through the signal frame there)."""

    at: int
    index_at: int | None = None
    index: bytes | None = None
    header: int | None = None  # the PT_ARM_EXIDX program header's index: it names the new index


def _linux_patching(binary: Binary, chosen: list[Procedure], report: Report,
                    relocated_returns: frozenset[int] = frozenset(),
                    sensitive_returns: frozenset[int] = frozenset()) -> _Patching:
    """The jumps written over the original code when ``chosen`` are relocated (none at the
    return sites of ``relocated_returns``: their calls leave relocated return addresses)."""
    patches, not_patched = _linux_patches(binary, chosen, report, relocated_returns, sensitive_returns)
    tail = tail_location(binary, chosen, patches, preinit.plan(binary))
    report.loader_stub = [f"{address:#x}" for address in tail.pieces]
    report.started_from = "preinit array" if tail.early is not None else "entry"
    entries = {p.address: p.name for p in chosen}
    unplaced = []
    for patch in place_trampolines(patches, tail):
        if patch.address in entries:
            not_patched.append(entries[patch.address])
        else:
            unplaced.append(patch.address)
    return _Patching(patches, not_patched, tail, unplaced, _place_restorers(binary, tail))


def _place_restorers(binary: Binary, tail: Tail) -> _Restorers | None:
    """Room in the text for the restorers of handlers of faults in the copy and for the
    unwind index that describes them (fault_restorers): near the code, as the index's
    31-bit offsets must be; the restorers alone in a program without an index. None in Go's
    (whose handler gets the original's PC otherwise) or where no run is left that holds them."""
    if binary.go_functions:
        return None
    table = _exidx_segment(binary)
    if table is None:
        at = _take(tail, fault_restorers.BYTES)
        return None if at is None else _Restorers(at)
    header, table_at, table_size = table
    index = fault_restorers.Index(binary.read(table_at, table_size), table_at)
    at = _take(tail, fault_restorers.BYTES, index.fits)
    if at is None:
        return None
    size, build = index.with_restorers(at)
    index_at = _take(tail, size)
    return None if index_at is None else _Restorers(at, index_at, build(index_at), header)


def _take(tail: Tail, size: int, fits: Callable[[int], bool] = lambda _at: True) -> int | None:
    """``size`` bytes from the runs left in the text (a cave's first, before the slack's),
    4-aligned, at the start of a run where ``fits`` it; None where no run holds them."""
    slack = tail.pool[0] if tail.grows_segment and tail.pool else None
    for run in sorted(tail.pool, key=lambda run: run is slack):
        if run[0] + size <= run[1] and fits(run[0]):
            at = run[0]
            run[0] += size
            if run is slack:
                tail.segment_end = max(tail.segment_end, run[0])
            return at
    return None


def _exidx_segment(binary: Binary) -> tuple[int, int, int] | None:
    """The program's PT_ARM_EXIDX segment (its index in the program headers, address and
    size), where it has one with rows."""
    elf = ELFFile(io.BytesIO(binary.data))
    for k, segment in enumerate(elf.iter_segments()):
        if segment["p_type"] == "PT_ARM_EXIDX" and segment["p_memsz"] >= 8:
            return k, segment["p_vaddr"], segment["p_memsz"]
    return None


def _fall_back(binary: Binary, relocation: _Relocation, report: Report, chosen: list[Procedure],
               linux: _Patching) -> tuple[Code, list[Procedure], _Patching]:
    """The code emitted again (in this process) where jumps over the original code found no
    room for their trampolines (a text segment full up to the next one, few caves): a call
    whose return site has no jump leaves its relocated return address in LR, as with
    ``--return-addresses relocated``; a procedure whose landing pad has none stays as it
    was. Both are in the report. Returns the code, the procedures in it and their jumps."""
    while linux.unplaced:
        pads = set(linux.unplaced) & binary.unwinder_entries
        relocation.relocated_returns.update(set(linux.unplaced) - pads)
        kept = []
        for proc in chosen:
            if any(proc.address <= pad < proc.end for pad in pads):
                report.not_relocated.append({"procedure": proc.name, "address": proc.address,
                                             "reason": "no room for the jump at its landing pad"})
                relocation.relocated_addrs.difference_update(i.address for i in proc.instructions())
            else:
                kept.append(proc)
        chosen = kept
        linux = _linux_patching(binary, chosen, report, frozenset(relocation.relocated_returns),
                                relocation.sensitive_returns)
    report.return_sites["relocated"] = len(relocation.relocated_returns)
    code = relocation.new_code()
    _emit_code(code, chosen, relocation.new_context(), relocation.with_header)
    return code, chosen, linux


def _relocate_falling_back(binary: Binary, relocation: _Relocation, report: Report, linux: _Patching,
                           in_data: frozenset[int]) -> tuple[Code, list[Procedure], _Patching]:
    """What _relocate_code and then _fall_back give where the jumps for every candidate
    (``linux``) left some unplaced, with the code emitted once: the candidates that can be
    relocated (_choose), their jumps, the fall back where some of those are unplaced too,
    and the code, in one part (as _fall_back emits it)."""
    chosen = _choose(relocation.candidates, relocation.new_context(), relocation.relocated_addrs, report)
    if len(chosen) != len(relocation.candidates):
        linux = _linux_patching(binary, chosen, report, in_data, relocation.sensitive_returns)
    if linux.unplaced:
        return _fall_back(binary, relocation, report, chosen, linux)
    progress.phase("relocating", len(chosen))
    code = relocation.new_code()
    _emit_code(code, chosen, relocation.new_context(), relocation.with_header)
    return code, chosen, linux


def _linux_patches(binary: Binary, chosen: list[Procedure], report: Report, relocated_returns: frozenset[int],
                   sensitive_returns: frozenset[int]) -> tuple[list[Patch], list[str]]:
    """The jumps written over the original code: at the relocated procedures' entries and,
    with original return addresses, at their return sites and landing pads (short ones get
    their trampolines from place_trampolines); without, at the return sites of the calls
    that leave original return addresses all the same (``sensitive_returns``)."""
    original = report.return_addresses == "original"
    if original:
        sites = return_sites(chosen) - relocated_returns
    else:  # calls of dlsym all the same (ir/caller_sensitive.py), of those chosen
        sites = (sensitive_returns & return_sites(chosen)) - relocated_returns if sensitive_returns else set()
        if not sites:
            return entry_patches(binary, chosen)
    more, stops = return_patches(binary, chosen, sites, with_pads=original)
    patches, not_patched = entry_patches(binary, chosen, stops=stops, patched=frozenset(p.address for p in more))
    entries = sum(1 for p in more if p.address not in sites)
    report.return_sites = {"original": len(sites), "unwinder_entries": entries}
    if relocated_returns:
        report.return_sites["relocated"] = len(relocated_returns)
    return patches + more, not_patched


def _firmware_patches(binary: Binary, chosen: list[Procedure], report: Report, copies: tuple[int, int],
                      relocated_returns: frozenset[int]) -> tuple[list[Patch], list[str]]:
    """The jumps written over a firmware image's original code: at the relocated procedures'
    entries and, with original return addresses (a program that unwinds its stack: C++
    exceptions, decision 0122), at their return sites and landing pads, as on Linux
    (_linux_patches), but each a 4-byte branch straight to the copy where that reaches
    (``copies``: where the copies lie), short ones through trampolines in the caves; none
    at the return sites of ``relocated_returns`` (in bytes code reads as data: their calls
    leave relocated return addresses). A return site or landing pad left without a jump is
    refused: its copy would never run."""
    if report.return_addresses != "original":
        patches, not_patched = entry_patches(binary, chosen, direct=copies)
        more: list[Patch] = []
    else:
        sites = return_sites(chosen) - relocated_returns
        more, stops = return_patches(binary, chosen, sites)
        for patch in more:
            if not patch.narrow and branch_reaches(patch.address, patch.thumb, copies):
                patch.direct, patch.trampoline = True, None
        patches, not_patched = entry_patches(binary, chosen, direct=copies, stops=stops,
                                             patched=frozenset(p.address for p in more))
        report.return_sites = {"original": len(sites),
                               "unwinder_entries": sum(1 for p in more if p.address not in sites)}
        if relocated_returns:
            report.return_sites["relocated"] = len(relocated_returns)
        patches += more
    by_address = {p.address: p.name for p in chosen}
    for patch in firmware_trampolines(binary, chosen, patches):
        if patch.address not in by_address:
            raise AnvilError(f"no room for a trampoline of the jump at return site or landing pad {patch.address:#x}: "
                             "instrument with --return-addresses relocated (unwinding then stops at instrumented "
                             "frames) or fewer procedures (--only)")
        not_patched.append(by_address[patch.address])
    return patches, not_patched


@dataclass
class _Relocation:
    """What relocating the program needs, made once, before a child may be forked to share
    the work (later_part.py): the procedures with hooks, their instructions' addresses,
    and how to make a relocation context and the code to emit into (at link address 0)."""

    candidates: list[Procedure]
    relocated_addrs: set[int]
    new_context: Callable[[], RelocationContext]
    new_code: Callable[[], Code]
    with_header: bool
    # Return sites whose calls leave relocated return addresses though the program's are
    # original: their jumps found no room (_fall_back).
    relocated_returns: set[int]
    # Without original return addresses: the return sites of the calls that leave them all
    # the same (caller_sensitive_returns, of the candidates).
    sensitive_returns: frozenset[int] = frozenset()
    split: int = 0  # with a later part: the first of its candidates


def _relocation(binary: Binary, units: SiteUnit, with_header: bool, original_returns: bool,
                vfp: bool, base: int = 0, in_loops: Set[tuple[str, int]] = frozenset(),
                loop_sums: Sequence[LoopSum] = ()) -> _Relocation:
    """How to relocate every procedure with hooks (see _relocate_code), into code at ``base``;
    ``in_loops``, ``loop_sums``: the counters inside loops, those counted in registers
    (Derivations).
    ``original_returns``: calls leave original return addresses in LR (decision 0013);
    ``vfp``: hooks park registers in d16-d31 (vfp_scratch).
    Strings the hooks pass are named by ``units`` (which already knows them all)."""
    proc_starts = [p.address for p in binary.procedures]
    # (Asked for a branch's target: in lists, not the procedures' attributes and properties.)
    proc_ends = [p.end for p in binary.procedures]
    proc_thumb = [bool(p.thumb) for p in binary.procedures]

    def mode_of_place(addr: int) -> bool:
        i = bisect.bisect_right(proc_starts, addr) - 1
        return i >= 0 and addr < proc_ends[i] and proc_thumb[i]

    mode = _instructions_in_other_mode(binary.procedures, proc_starts, mode_of_place)

    def mode_at(addr: int) -> bool:
        """The instruction set of the instruction at ``addr``, else of the procedure around it."""
        got = mode.get(addr)
        return mode_of_place(addr) if got is None else got

    candidates = [p for p in binary.procedures if _has_hooks(p)]
    relocated_addrs = {i.address for p in candidates for i in p.instructions()}
    scratch = Scratch(vfp)
    handlers_run = interrupt_code(binary) if binary.is_firmware else set()
    # Return sites in literal pools (past calls that never return) get no jump; nor do the
    # data after calls to functions that read it there (ir.inline_data: no return comes).
    relocated_returns = (return_sites_in_data(binary, candidates) | _inline_data_sites(binary, candidates)
                         if original_returns else set())
    # Calls of dlsym leave the original return address all the same (a Linux program's).
    sensitive_returns = frozenset() if original_returns or binary.is_firmware \
        else frozenset(caller_sensitive_returns(binary, candidates))

    def function_label(name: str) -> Hashable:
        return ("sym", name)

    def string_label(text: str) -> Hashable:
        return ("sym", units.string_symbol(text))

    counter_labels: dict[tuple[str, int], Hashable] = {}

    def counter_label(name: str, index: int) -> Hashable:
        # One label per slot, not one per site (a filter's memo: one slot, a site per access).
        label = counter_labels.get((name, index))
        if label is None:
            label = counter_labels[name, index] = ("sym+", f"anvil_array_{name}", 8 * index)
        return label

    def new_context() -> RelocationContext:
        return RelocationContext(
            relocated=relocated_addrs, mode_at=mode_at, read=binary.read,
            function_label=function_label, string_label=string_label, counter_label=counter_label,
            xlate_label=("sym", "anvil_xlate_entry"),
            scratch=scratch,
            interrupt_code=handlers_run,
            handlers_count=any(p.address in handlers_run for p in candidates),
            mask_interrupts=binary.is_firmware,
            original_returns=original_returns,
            relocated_returns=relocated_returns,
            original_return_sites=sensitive_returns,
            threads=binary.threaded and not binary.is_firmware,
            emulate_exclusives=emulates_exclusives(binary),
            lock_communicator=not binary.is_firmware,
            held_signals=not binary.is_firmware,
            poison_dead=bool(os.environ.get("ANVIL_POISON_DEAD")),
            go_polls=go_runtime.loop_heads(binary, candidates),
            table_sizes=binary.table_sizes,
            case_tables=binary.case_tables,
            return_readers=binary.return_readers,
            inline_data_readers=binary.inline_data_sizes,
            text_relocations=binary.text_relocations,
            ip_clobbered_at=frozenset(binary.plt),
            inside_pages=not binary.is_firmware,
            shared_calls=SharedCalls(function_label, string_label, counter_label, in_loops, loop_sums)
            if binary.is_firmware else None,
        )

    new_code = functools.partial(Code, base, pic=binary.is_pie, ge=binary.dsp)
    return _Relocation(candidates, relocated_addrs, new_context, new_code, with_header, relocated_returns,
                       sensitive_returns)


def _inline_data_sites(binary: Binary, procs: list[Procedure]) -> set[int]:
    """The return sites of calls in ``procs`` to functions that read data there and never
    return to it (ir.inline_data)."""
    cache = binary.inline_data_sizes
    return {ins.end for proc in procs for ins in proc.instructions()
            if ins.is_call and ins.branch_target is not None
            and inline_data_size(binary.read, cache, ins.branch_target & ~1, ins.thumb != (ins.name == "blx"))}


def _instructions_in_other_mode(procedures: list[Procedure], starts: list[int],
                                mode_of_place: Callable[[int], bool]) -> dict[int, bool]:
    """Address -> instruction set (Thumb) of the instructions whose set is not
    ``mode_of_place``'s (that of the procedure around the address): an A32 stub after a
    Thumb ``bx pc``, say. The few exceptions, not a dict of every instruction (713k in
    python3.11, 4.3M in cc1: 40 MB and 250 MB). Where an address is an instruction of
    more than one procedure, the last one's says, as in a dict of every instruction."""
    other: dict[int, bool] = {}
    # With the starts strictly increasing, the procedure around an address below the next
    # start is this one (what mode_of_place finds by bisection), so its set is this one's.
    in_order = all(a < b for a, b in itertools.pairwise(starts))
    for k, proc in enumerate(procedures):
        thumb = bool(proc.thumb)
        lo, hi = (proc.address, min(proc.end, starts[k + 1] if k + 1 < len(starts) else proc.end)) \
            if in_order else (0, 0)
        for ins in proc.instructions():
            address = ins.address
            if ins.thumb != (thumb if lo <= address < hi else mode_of_place(address)):
                other[address] = ins.thumb
            elif address in other:  # (an earlier procedure's instruction at the same address)
                del other[address]
    return other


def _later_part(relocation: _Relocation, tool_name: str) -> LaterPart | LocalPart | None:
    """The later half (by instructions) of a large program's candidates, relocated by a
    child where forking is possible and by this process otherwise, laid out alike either
    way (later_part.py); None for a small program."""
    weights = [sum(len(b.instructions) for b in p.blocks) for p in relocation.candidates]
    if sum(weights) < MIN_INSTRUCTIONS:
        return None
    split = halfway(weights)
    later = relocation.candidates[split:]
    if not later:  # one procedure holds half the work: nothing to share
        return None

    def emit_later() -> Code:
        code = relocation.new_code()
        _emit_code(code, later, relocation.new_context(), False)
        return code

    def resolver_for(labels: dict, symbols: dict[str, int], copies: dict | None = None) -> Resolver:
        return functools.partial(_resolve, labels, symbols, tool_name, copies)

    relocation.split = split
    return LaterPart.fork(emit_later, resolver_for) or LocalPart(emit_later, resolver_for)


def _relocate_code(relocation: _Relocation, report: Report,
                   later: LaterPart | LocalPart | None) -> tuple[Code, list[Procedure]]:
    """The code of the candidates that can be relocated (see _emit_code), and those.

    First a trial relocation of every instruction that involves the PC, but direct
    branches and calls, which always relocate (_choose): it finds the procedures that
    cannot be relocated (an instruction form the relocator does not support). Where there
    are none, all are relocated at once (the later ones by ``later``'s child, if given).
    Where there are some, or that fails anyhow, the code is emitted here, in one part,
    without the procedures the trial refuses, errors included. (Before decision 0040 the
    trial came only after a failed emission: in a large stripped program, one procedure
    refused near the end threw most of an emission away.)
    """
    candidates, new_context, with_header = relocation.candidates, relocation.new_context, relocation.with_header
    chosen = _choose(candidates, new_context(), relocation.relocated_addrs, report)
    if len(chosen) == len(candidates):
        progress.phase("relocating", len(candidates))
        code = relocation.new_code()
        try:
            if later is None:
                _emit_code(code, candidates, new_context(), with_header)
            else:
                _emit_code(code, candidates[:relocation.split], new_context(), with_header)
                later.place(code)
            return code, list(candidates)
        except AnvilError:  # an error that one part avoids, if any does
            pass
    if later is not None:
        later.close()
    progress.phase("relocating", len(chosen))
    code = relocation.new_code()
    _emit_code(code, chosen, new_context(), with_header)
    return code, chosen


def _choose(candidates: list[Procedure], ctx: RelocationContext, relocated_addrs: set[int],
            report: Report) -> list[Procedure]:
    """The candidates that can be relocated; the others are reported and their addresses
    taken out of ``relocated_addrs`` (so branches to them go to the original code)."""
    chosen = []
    for proc in candidates:
        reason = _relocatable(proc, ctx)
        if reason is None:
            chosen.append(proc)
        else:
            report.not_relocated.append({"procedure": proc.name, "address": proc.address, "reason": reason})
            relocated_addrs.difference_update(i.address for i in proc.instructions())
    ctx.veneers.clear()
    return chosen


HEADER_CHUNK = 0  # the region header's place in the code (emitted first), filled last
HEADER_WORDS = 14  # struct anvil_header (runtime_stubs/arm/anvil_rt.c)


def _emit_code(code: Code, chosen: list[Procedure], ctx: RelocationContext, with_header: bool) -> None:
    """The relocated procedures with their hooks, then the veneers, call stubs and
    translation tables they asked for; ``with_header``: after room for the region header."""
    if with_header:
        code.label("header")
        code.later(4 * HEADER_WORDS, lambda at, r: b"")  # placeholder, replaced at HEADER_CHUNK
    for proc in chosen:
        progress.advance()
        if ctx.inside_pages:
            emit_inside_a_page(code, functools.partial(relocate_procedure, proc, code, ctx), ctx.saved)
        else:
            relocate_procedure(proc, code, ctx)
        code.island(write_range_veneer)
    for key, label in sorted(ctx.veneers.items(), key=lambda kv: kv[0]):
        emit_veneer(key, label, code)
    for routine in sorted(ctx.appends.routines):
        emit_append_routine(code, routine)
    for name in sorted(ctx.call_stubs):
        communicator = name == RECORD_FLUSH or name.startswith(RECORD_PREFIX)
        emit_call_stub(code, name, ("sym", name), ctx.threads or (ctx.lock_communicator and communicator),
                       ctx.held_signals)
    if ctx.shared_calls is not None:
        ctx.shared_calls.emit_paths(code)
    # The last island before the translation tables, which hold no branch: they take a word
    # per halfword (T32) or word (A32) of every procedure with computed jumps, 30 MB in
    # shellcheck's copy, and after them the island was beyond the reach of the stubs' BLs
    # to the analysis library (decision 0082).
    code.island(write_range_veneer, last=True)
    for proc, key in ctx.xlate_tables:
        emit_xlate_table(proc, key, code)


class _LibraryBuild:
    """The analysis library, compiled and linked (at ``base``, for its size) on a thread of
    its own while the emitter goes on, so that the compiler runs on another core.

    Errors come as from a build made before what goes on meanwhile (``alongside``).
    """

    def __init__(self, sources: list[Path | tb.Generated], site_source: str, toolchain: tb.Toolchain,
                 base: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._built = self._pool.submit(_build_library, sources, site_source, toolchain, base)

    def __enter__(self) -> _LibraryBuild:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True)

    def alongside(self, work: Callable[[], T]) -> T:
        """``work()`` while the build goes on; if both fail, the build's error is raised."""
        try:
            return work()
        except BaseException:
            self.result()  # raises the build's error, if it had one: it came first
            raise

    def result(self) -> tuple[list[Path], tb.LinkedLibrary]:
        """The objects, and the library linked at ``base``."""
        return self._built.result()


def _build_library(sources: list[Path | tb.Generated], site_source: str, toolchain: tb.Toolchain,
                   base: int) -> tuple[list[Path], tb.LinkedLibrary]:
    """Compile ``sources`` and the generated site unit; link them at ``base`` once, for the size."""
    include = [tb.RUNTIME_DIR, tb.COMMON_DIR]
    objects = [tb.compile_unit(src, include, toolchain) for src in sources]
    objects.append(tb.compile_c("sites.c", include, text=site_source, toolchain=toolchain))
    return objects, tb.link(objects, base, base + 0x10000000, toolchain)


def _finish(report: Report, output: str, data: bytes, chosen: list[Procedure], started: float) -> Report:
    atomic_write(output, data)
    report.relocated = len(chosen)
    report.instructions = sum(len(b.instructions) for p in chosen for b in p.blocks)
    report.undecodable = [{"procedure": p.name, "address": start, "end": end}
                          for p in chosen for start, end in p.undecodable]
    report.rewrite_seconds = time.monotonic() - started
    report.output_size = len(data)
    return report


def _all_hooks(binary: Binary):
    yield from binary.hooks
    for proc in binary.procedures:
        yield from proc.hooks
        for block in proc.blocks:
            yield from block.hooks
            for ins in block.instructions:
                yield from ins.hooks


def _move_unloaded(out: bytearray, elf: ELFFile, lo: int, hi: int) -> None:
    """Move section contents that are not loaded, and the section header table, out of file range [lo, hi)."""
    shoff, shentsize = elf["e_shoff"], elf["e_shentsize"]
    for index, sec in enumerate(elf.iter_sections()):
        start, size = sec["sh_offset"], sec["sh_size"]
        if sec["sh_type"] in ("SHT_NOBITS", "SHT_NULL") or not size or sec["sh_flags"] & 0x2:
            continue
        if start < hi and lo < start + size:
            data = bytes(out[start:start + size])
            new = (len(out) + 7) & ~7
            out += b"\0" * (new - len(out)) + data
            struct.pack_into("<I", out, shoff + index * shentsize + 16, new)
    table = elf["e_shnum"] * shentsize
    if shoff < hi and lo < shoff + table:
        data = bytes(out[shoff:shoff + table])
        new = (len(out) + 7) & ~7
        out += b"\0" * (new - len(out)) + data
        struct.pack_into("<I", out, 32, new)


# The region header's ``libraries`` word (runtime_stubs/arm/anvil_rt.c).
HOOK_LIBRARY_EXITS = 1  # the libraries' calls of _exit lead to the program's end (decision 0077)
WRAP_HANDLERS = 2       # the program's signal handlers are wrapped (decision 0143)
CALLS_MAIN = 4          # the interpreter calls the entry as main: the end is where it returns (0207)


def _library_words(binary: Binary) -> tuple[int, int]:
    """The region header's ``dynamic`` word, the link address of a dynamic program's
    dynamic section, whose DT_DEBUG leads the runtime to the loaded libraries (0: not a
    dynamic program, or nothing to do there); and its ``libraries`` word, what the runtime
    does: lead the libraries' calls of ``_exit`` to the program's end where the tool
    observes the end, wrap the program's signal handlers, except in a Go program, whose
    runtime compares the actions it reads with its own handler, and end the program where
    main returns where the interpreter calls the entry as main (klibc's)."""
    flags = (HOOK_LIBRARY_EXITS if binary.is_dynamic and any(h.point is Point.AFTER for h in binary.hooks) else 0)
    flags |= WRAP_HANDLERS if not binary.go_functions else 0
    flags |= CALLS_MAIN if binary.entry_called_as_main else 0
    if not binary.is_dynamic or not flags:
        return 0, flags
    segments = ELFFile(io.BytesIO(binary.data)).iter_segments()
    return next((seg["p_vaddr"] for seg in segments if seg["p_type"] == "PT_DYNAMIC"), 0), flags


def _write_elf(binary: Binary, region: bytes, offset: int, patches: list[Patch], targets: dict[int, int],
               tail: Tail, header_addr: int, init_addr: int, early: preinit.PreinitStart | None,
               pieces: Sequence[tuple[int, bytes]] = (), exidx: tuple[int, int, int] | None = None) -> bytes:
    """Original bytes + entry patches + loader stub and trampolines in the tail + the region
    appended (mapped at the load bias + ``offset``); with ``early``, the dynamic linker calls
    the stub first (preinit.py). ``pieces``: more code written over the original text (its
    address, its bytes); ``exidx``: the PT_ARM_EXIDX header's index, and the address and size
    of the index among those pieces that it is to name instead."""
    elf = ELFFile(io.BytesIO(binary.data))
    text_index, text = text_segment(binary, elf)
    # Bytes after all the headers describe: a payload appended to the program (PyInstaller's
    # archive), which it finds from the end of its own file: it stays at the end.
    described = described_end(elf)
    data, overlay = binary.data[:described], binary.data[described:]
    if tail.file_gap:  # addresses before the gap keep their file offsets, the rest move
        data = file_gap.open_gap(data, text.offset + text.filesz, tail.file_gap)
        elf = ELFFile(io.BytesIO(data))
    out = bytearray(data)
    # Room for moving unloaded sections and the section header table to the end.
    movable = sum(sec["sh_size"] + 8 for sec in elf.iter_sections() if not sec["sh_flags"] & 0x2)
    movable += elf["e_shnum"] * elf["e_shentsize"] + 8
    # A segment grown over its zero-filled memory may end past the file's end (the stub's
    # pieces there end at tail.segment_end).
    grown_file_end = text.offset + (tail.segment_end - text.vaddr) if tail.grows_segment else 0
    region_offset = (max(len(out), grown_file_end) + (movable if tail.grows_segment else 0) + PAGE - 1) & ~(PAGE - 1)
    stub = tb.assemble_stub(tail.pieces, {
        "ANVIL_REGION": offset,
        "ANVIL_LENGTH": len(region),
        "ANVIL_PGOFF": region_offset // PAGE,
        "ANVIL_HEADER": header_addr,
        "ANVIL_INIT": init_addr | 1,
        "ANVIL_ENTRY_STAGE": 2 if early else 0,  # anvil_rt.c's start_stage
        "ANVIL_INIT_SLOT": early.init_slot if early else 0,
    }, preinit=early is not None)
    # The text segment grows over the slack: up to the trampolines' and the pieces' ends there.
    slack_start = slack_address(text)
    grown_end = max([tail.segment_end] + [address + len(piece) for address, piece in stub.pieces
                                           if address >= slack_start]) if tail.grows_segment else 0

    def offset(addr: int) -> int:
        if tail.grows_segment and text.vaddr + text.filesz <= addr < grown_end:
            return text.offset + (addr - text.vaddr)
        off = binary.file_offset(addr)
        assert off is not None
        return off

    if tail.grows_segment:
        zeros_at, zeros_end = zero_filled(text)
        grown_end_offset = offset(slack_start) + grown_end - slack_start
        out += bytes(max(0, grown_end_offset - len(out)))  # what moves goes past the grown segment
        _move_unloaded(out, elf, zeros_at, grown_end_offset)
        out[zeros_at:zeros_end] = bytes(zeros_end - zeros_at)  # the .bss the segment held in memory only
        ph = elf["e_phoff"] + text_index * elf["e_phentsize"]
        struct.pack_into("<II", out, ph + 16, grown_end - text.vaddr, grown_end - text.vaddr)
    for patch in patches:
        target = targets[patch.address]
        data = patch.bytes_at_entry(target)
        out[offset(patch.address):offset(patch.address) + len(data)] = data
        if patch.trampoline is not None:
            out[offset(patch.trampoline):offset(patch.trampoline) + 8] = patch.trampoline_bytes(target)
    for address, piece in [*stub.pieces, *pieces]:
        out[offset(address):offset(address) + len(piece)] = piece
    if exidx is not None:
        header, table_at, size = exidx
        ph = elf["e_phoff"] + header * elf["e_phentsize"]
        struct.pack_into("<IIIII", out, ph + 4, offset(table_at), table_at, table_at, size, size)
    struct.pack_into("<I", out, 24, stub.entry)
    if early is not None and stub.preinit_function is not None:  # the tables' offsets after the gap opened
        preinit.apply(out, early, stub.preinit_function | 1, functools.partial(offset_in, elf))
    if len(out) > region_offset:
        raise AssertionError("region offset chosen before the file grew")
    out += b"\0" * (region_offset - len(out))
    out += region
    out += overlay
    return bytes(out)


def described_end(elf: ELFFile) -> int:
    """Where the last bytes the ELF headers describe end (segments, sections, both header
    tables); a file longer than that has something appended (decision 0102)."""
    ends = [elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"], elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"]]
    ends += [seg["p_offset"] + seg["p_filesz"] for seg in elf.iter_segments()]
    ends += [sec["sh_offset"] + sec["sh_size"] for sec in elf.iter_sections() if sec["sh_type"] != "SHT_NOBITS"]
    return max(ends)


def offset_in(elf: ELFFile, vaddr: int) -> int:
    """File offset of loaded address ``vaddr`` in ``elf``."""
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= vaddr < seg["p_vaddr"] + seg["p_filesz"]:
            return seg["p_offset"] + vaddr - seg["p_vaddr"]
    raise AssertionError(f"{vaddr:#x} is not in the file")

"""What x86-64 copies do besides the program's own work: inline counters at block starts
and a call of the runtime before the system calls that may end the program.

A counter is ``add qword ptr [rip + slot], n``: one instruction, no register (``lock add``
in a program that starts threads: two threads counting one block at once lose no count). It changes the
status flags, so where they are live at the block's start (flags.py) it goes between
``pushfq`` and ``popfq``, with RSP first moved below the red zone (the 128 bytes under RSP
that leaf code keeps data in without moving RSP; ``pushfq`` would write there).

An instruction with a ``rep`` prefix runs once per element (``rep movsb`` copying N bytes is
N executions in QEMU's instruction log and in Valgrind's guest count): where a block
counter is read as per-procedure sums of count x instructions (``sums``: block array ->
sums array), the block's count covers one execution, and the copy adds the others to the
procedure's sum: RCX is kept below the red zone across the instruction, and afterwards
its decrease less one (none if RCX was 0: one execution, no element) is added. The string
instructions do not use RSP.

Before a system call whose number (eax, set in the same block) is ``exit`` or ``exit_group``
the copy calls ``anvil_exit_entry`` (runtime_stubs/x86_64/anvil_entry.S), which keeps every
register and the flags and writes the results; where the number is not known there it calls
``anvil_syscall_entry``, which asks the runtime whether the call ends the program. Both
calls step over the red zone too. Before an ``execve`` or ``execveat`` system call, and as
the PLT entry of an exec function (``execve``, ``execvp``, ...) is entered, the copy calls
the runtime to write the results (the process becomes another program: no exit runs); an
entry whose GOT slot may still be unbound leaves them to PLT0, where the binder's way goes
(``exec_jumps``; decision 0123).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Mapping, Set

import capstone

from ...ir.model import Binary, Block, Instruction, Procedure
from .calls import ABOVE_RED_ZONE, BELOW_RED_ZONE, CallSites, repeats, string_repeats
from .code64 import Code64
from .decode import RIP, shared_disassembler
from .flags import live_at_blocks

_PUSHF, _POPF = b"\x9c", b"\x9d"
# cmp qword [r14 + 16], -1314: Go's g.stackguard0 against stackPreempt (0xfffffffffffffade).
_CMP_STACKGUARD0_STACK_PREEMPT = bytes.fromhex("49817e10defaffff")
_EXIT_CALLS = frozenset({60, 231})  # exit, exit_group
_EXIT, _EXIT_GROUP = 60, 231
_ENDING = frozenset({"_exit", "_Exit", "quick_exit"})
_EXEC_CALLS = frozenset({59, 322})  # execve, execveat
# clone, fork, clone3: a copy of the process, unless CLONE_VM asks for a thread (the runtime
# tells them apart).
_FORK_CALLS = frozenset({56, 57, 435})
_RT_SIGACTION = 13


# The prefix of a counter in a program that may start threads, until it does: ``ds``, which
# does nothing in 64-bit mode; the runtime (anvil_threads_start) writes ``lock`` over it.
UNLOCKED = b"\x3e"


def syscall_number(ins: Instruction) -> int | None:
    """The number eax holds at the system call ``ins``, from the last instruction of its
    block before it that writes rax: a ``mov`` of a constant; None if another writes it or
    nothing in the block does."""
    block = ins.block
    before = block.instructions[:block.instructions.index(ins)] if block is not None else []
    rax = {capstone.x86.X86_REG_RAX, capstone.x86.X86_REG_EAX, capstone.x86.X86_REG_AX, capstone.x86.X86_REG_AL}
    for previous in reversed(before):
        decoded = next(shared_disassembler().disasm(previous.raw, previous.address, 1), None)
        if decoded is None:
            return None
        _, written = decoded.regs_access()
        if not rax.intersection(written):
            continue
        operands = decoded.operands
        if decoded.mnemonic == "mov" and len(operands) == 2 and operands[1].type == capstone.x86.X86_OP_IMM:
            return operands[1].imm & 0xFFFFFFFF
        return None
    return None


def exec_jumps(binary: Binary, functions: Set[str]) -> tuple[dict[int, tuple[int, int]], int | None]:
    """The PLT entries of the exec ``functions`` -> (the GOT slot each jumps through, what the
    file holds there: its lazy-binding stub's address, which the dynamic linker relocates;
    0 for a slot bound before the program runs), and PLT0, where the lazy ones go next (None
    if none is lazy)."""
    entries = {address for address, name in binary.plt.items() if name in functions}
    jumps: dict[int, tuple[int, int]] = {}
    for block in (b for proc in binary.procedures for b in proc.blocks if b.address in entries):
        jump = next((ins for ins in block.instructions if ins.name == "jmp"), None)
        slot = next((a.disp for a in jump.accesses if a.base == RIP and not a.is_store), None) if jump else None
        if slot is not None:
            jumps[block.address] = (slot, int.from_bytes(binary.read(slot, 8), "little"))
    plt0 = next((proc.address for proc in binary.procedures if proc.name == ".plt"), None)
    return jumps, plt0 if any(lazy for _, lazy in jumps.values()) else None


def add_to_thread_slot(offset: int, amount: int) -> bytes:
    """``add qword ptr gs:[offset], amount``: a slot of the running thread's own copy of the
    counters, which the runtime points gs at (decision 0121)."""
    if -128 <= amount < 128:
        return b"\x65\x48\x83\x04\x25" + struct.pack("<ib", offset, amount)
    return b"\x65\x48\x81\x04\x25" + struct.pack("<ii", offset, amount)


class ThreadCounters:
    """Which procedures count into each thread's own copy of the counters (no ``lock``
    needed: a thread's adds are its own; the runtime adds the copies up at the end), and
    where a thread gets its copy. In a Go program: every function of its PC table but
    ``runtime.clone``, whose new thread runs on its parent's copy until it enters
    ``runtime.mstart``, where every thread Go runs code on starts (``starts``); other code
    (cgo's C glue, which runs on new threads before mstart) keeps the shared, locked
    counters. ``arrays``: the counter arrays' sizes in bytes, by symbol."""

    def __init__(self, procedures: set[int], starts: set[int], arrays: dict[str, int]) -> None:
        self.procedures, self.starts, self.arrays = procedures, starts, arrays
        self.used: set[str] = set()  # the arrays some thread's copy holds

    def offset(self, symbol: Callable[[str], int], array: str) -> int:
        """``array``'s offset in a thread's copy, which spans the arrays used, once linked."""
        return symbol(array) - min(symbol(name) for name in self.used)


class CountingHooks:
    """Counters and the program's end, as ``Copier`` asks for them.

    ``symbol(name)`` gives the link-time address of one of the analysis library's symbols
    (the arrays ``anvil_array_<name>``, the runtime's entries) once it is linked: the
    fixups ask for it at the end.
    """

    def __init__(self, symbol: Callable[[str], int], switch_cases: dict[int, set[int]],
                 sums: dict[str, str] | None = None, threaded: bool = False,
                 plt: dict[int, str] | None = None, calls: CallSites | None = None,
                 thread_starts: set[int] | None = None, fault_handlers: set[int] | None = None,
                 thread_counters: ThreadCounters | None = None,
                 execs: tuple[dict[int, tuple[int, int]], int | None] = ({}, None),
                 signal_calls: Mapping[int, int] | None = None, go_returns: dict[int, str] | None = None,
                 go_polls: Set[int] = frozenset(), signal_returns: Set[int] = frozenset()) -> None:
        self.symbol = symbol
        # The exec functions' PLT entries and PLT0 (exec_jumps).
        self.exec_jumps, self.binder = execs
        self.thread_counters = thread_counters
        self.own = False  # whether the procedure being copied counts into its thread's copy
        # The entries of a Go program's signal handler: a fault's PC in the copy becomes the
        # original's there (anvil_go_fault_entry, decision 0121).
        self.fault_handlers = fault_handlers or set()
        self.calls = calls  # the tool's calls of its routines, if it makes any
        # The PLT entries of the C library's functions that end the process at once: the
        # results are written as they are entered (a dynamic program's end is otherwise
        # seen only where the dynamic linker's fini runs, which they skip).
        self.ending = {address for address, name in (plt or {}).items() if name in _ENDING}
        # The PLT entries of the C library's signal-action functions (sigaction, signal...):
        # as one is entered, the runtime puts the default back where the action is its own
        # results handler, so that the program sees the action it would have
        # (anvil_signal_call_entry; decision 0131), and leads the GOT slot each jumps
        # through (the value: its link address, 0 if not known) to its own function, which
        # wraps the program's handler, once the slot is bound (decision 0143).
        self.signal_calls = signal_calls or {}
        # The return sites of the program's calls of those entries: a handler the call set
        # through the lazy binder gets its wrapper there (anvil_signal_set_entry, decision 0203).
        self.signal_returns = signal_returns
        # A Go program's returns that call the runtime before they go (decision 0134): the
        # entry each calls.
        self.go_returns = go_returns or {}
        # A Go program's loop heads, where the copy asks whether Go wants the goroutine
        # stopped (decision 0134).
        self.go_polls = go_polls
        # Counters other threads may add to as well: each has a prefix the runtime makes
        # ``lock`` as the program enters one of ``thread_starts`` (addresses of the PLT
        # entries and procedures that start threads); ``lock_sites``: where those prefixes are.
        self.threaded = threaded
        self.thread_starts = thread_starts or set()
        self.fork_calls: set[int] = set()  # the fork system calls whose copies hold the lock over them
        self.action_calls: set[int] = set()  # the rt_sigaction system calls (anvil_sigaction_done_entry after)
        self._lock_offsets = array("q")  # where those prefixes are in the code (below)
        self._code: Code64 | None = None
        self.lockable = 0
        self.switch_cases = switch_cases
        self.sums = sums or {}
        self.repeated = 0
        self.live: dict[int, int] = {}
        self.flag_saves = 0
        self.exit_calls = 0
        self.unknown_syscalls = 0

    def enter(self, proc: Procedure) -> None:
        counted = any(block.counter_increments for block in proc.blocks)
        polled = self.go_polls and any(block.address in self.go_polls for block in proc.blocks)
        self.live = live_at_blocks(proc, self.switch_cases) if counted or polled else {}
        self.own = self.thread_counters is not None and proc.address in self.thread_counters.procedures
        if self.calls is not None:
            self.calls.enter(proc, self.switch_cases)

    @property
    def lock_sites(self) -> list[int]:
        """Where the counters' prefixes that become ``lock`` are, in the order emitted
        (link addresses: asked for once the code is placed)."""
        base = self._code.base if self._code is not None else 0
        return [base + offset for offset in self._lock_offsets]

    def block_start(self, block: Block, code: Code64) -> None:
        if block.address in self.go_polls:
            self._go_poll(code, bool(self.live.get(block.address, 1)))
        if block.address in self.fault_handlers:
            self._call(code, "anvil_go_fault_entry")
        if self.thread_counters is not None and block.address in self.thread_counters.starts:
            self._call(code, "anvil_thread_counters_entry")  # before the block's own counts
        increments = block.counter_increments
        live = increments and self.live.get(block.address, 1)
        if live:
            self.flag_saves += 1
            code.emit(BELOW_RED_ZONE + _PUSHF)
        for counter, index, amount in increments:
            self._add(code, f"anvil_array_{counter}", 8 * index, amount)
        if live:
            code.emit(_POPF + ABOVE_RED_ZONE)
        if block.hooks or (block.procedure is not None and block.procedure.hooks):
            self.calls.block(block, code)
        # Whether or not the block counts (a tool's --only may leave the PLT out).
        if block.address in self.ending:
            self._call(code, "anvil_exit_entry")
        if block.address in self.signal_calls:
            code.emit(BELOW_RED_ZONE + b"\x50\x48\xb8" + struct.pack("<Q", self.signal_calls[block.address]))
            code.rel32_lookup(b"\xe8", b"", self.symbol, "anvil_signal_call_entry")  # push rax; mov rax, slot; call
            code.emit(b"\x58" + ABOVE_RED_ZONE)  # pop rax
        if block.address in self.signal_returns:
            self._call(code, "anvil_signal_set_entry")
        if block.address in self.exec_jumps:
            slot, lazy = self.exec_jumps[block.address]
            code.emit(BELOW_RED_ZONE + b"\x50\x52"  # push rax; push rdx
                      + b"\x48\xb8" + struct.pack("<Q", slot) + b"\x48\xba" + struct.pack("<Q", lazy))
            code.rel32_lookup(b"\xe8", b"", self.symbol, "anvil_exec_jump_entry")
            code.emit(b"\x5a\x58" + ABOVE_RED_ZONE)  # pop rdx; pop rax
        if block.address == self.binder:
            self._call(code, "anvil_binder_entry")
        if block.address in self.thread_starts and self.threaded:
            self._call(code, "anvil_threads_entry")

    def _add(self, code: Code64, array: str, offset: int, amount: int) -> None:
        """``add qword ptr [rip + slot], amount`` (the slot: ``offset`` bytes into the library's
        ``array``, its displacement filled in once the library is linked); in a program whose
        threads count into their own copies of the arrays, ``add gs:[slot], amount``."""
        if self.own:
            counters, symbol = self.thread_counters, self.symbol
            counters.used.add(array)
            code.later(10 if -128 <= amount < 128 else 13,
                       lambda _at, _r: add_to_thread_slot(counters.offset(symbol, array) + offset, amount))
            return
        lock = self._lock(code)
        if -128 <= amount < 128:
            code.rel32_lookup(lock + b"\x48\x83\x05", struct.pack("<b", amount), self.symbol, array, offset)
        else:
            code.rel32_lookup(lock + b"\x48\x81\x05", struct.pack("<i", amount), self.symbol, array, offset)

    def _lock(self, code: Code64) -> bytes:
        """The prefix of a counter's add emitted next: in a program that may start threads,
        one the runtime makes ``lock`` (its place noted)."""
        if not self.threaded:
            return b""
        self.lockable += 1
        self._code = code
        self._lock_offsets.append(code.size)
        return UNLOCKED

    def around(self, ins: Instruction, code: Code64, copy: Callable[[Instruction], None]) -> bool:
        """Copy ``ins`` with the calls it asks for before it, and what counts its repetitions
        if it repeats; whether it copied it."""
        entry = self.go_returns.get(ins.address) if self.go_returns else None
        if entry is not None:
            self._call(code, entry)
        if ins.hooks:
            if string_repeats(ins):
                # Each element has its own accesses: a loop of elements, each after its calls.
                self.calls.element_loop(ins, code)
                return True
            self.calls.before(ins, code)
        block = ins.block
        slots = [(self.sums[counter], block.procedure.index)
                 for counter, _, _ in (block.counter_increments if block is not None else ()) if counter in self.sums]
        if not slots or not ins.raw or not repeats(ins):
            return False
        self.repeated += 1
        code.emit(BELOW_RED_ZONE + b"\x51")          # push rcx
        copy(ins)
        code.emit(bytes.fromhex("9c"                 # pushfq
                                "50"                 # push rax
                                "488b442410"         # mov rax, [rsp+16]: rcx before
                                "4885c0"             # test rax, rax
                                "74" + f"{6 + (9 if self.own else 7 + self.threaded) * len(slots):02x}" +
                                # jz over the adds
                                "4829c8"             # sub rax, rcx
                                "48ffc8"))           # dec rax
        for counter, index in slots:
            if self.own:  # add gs:[slot], rax
                counters, symbol = self.thread_counters, self.symbol
                array, offset = f"anvil_array_{counter}", 8 * index
                counters.used.add(array)
                code.later(9, lambda _at, _r, array=array, offset=offset, counters=counters, symbol=symbol:
                           b"\x65\x48\x01\x04\x25" + struct.pack("<i", counters.offset(symbol, array) + offset))
                continue
            lock = self._lock(code)
            code.rel32_lookup(lock + b"\x48\x01\x05", b"", self.symbol, f"anvil_array_{counter}",
                              8 * index)  # add [rip+slot], rax
        code.emit(bytes.fromhex("58"                 # pop rax
                                "9d"                 # popfq
                                "488da42488000000"))  # lea rsp, [rsp+136]
        return True

    def before_syscall(self, ins: Instruction, code: Code64) -> None:
        number = syscall_number(ins)
        if number in _FORK_CALLS and self._forks_hold_lock():
            # The analysis lock held over the fork and given back after it in both processes
            # (decision 0127): a static program's fork is its own copied code, which the C
            # library's fork handlers never see registered.
            self.fork_calls.add(ins.address)
            self._call(code, "anvil_fork_entry")
            return
        if number in _EXEC_CALLS:
            self._call(code, "anvil_exec_entry")
            return
        if number == _RT_SIGACTION:  # the action as the program would see it (decisions 0131, 0143)
            self.action_calls.add(ins.address)
            self._call(code, "anvil_sigaction_entry")
            return
        if number is not None and number not in _EXIT_CALLS:
            return
        # exit_group ends the program; exit ends a thread, which is the program's end only
        # where it started no other (the runtime knows: anvil_on_syscall).
        entry = "anvil_exit_entry" if number == _EXIT_GROUP else "anvil_syscall_entry"
        if number is None:
            self.unknown_syscalls += 1
        else:
            self.exit_calls += 1
        if number == _EXIT:
            # Once threads run, a thread's exit is no end, and the call is skipped: the
            # thread may have unmapped its own stack first (musl's __unmapself, a detached
            # thread's end), where the call's push would fault. (The flags it changes are
            # never read: exit does not return.)
            call = len(BELOW_RED_ZONE) + 5 + len(ABOVE_RED_ZONE)
            code.rel32_lookup(b"\x80\x3d", b"\x00", self.symbol, "anvil_threads_started")  # cmp byte [rip+], 0
            code.emit(bytes((0x75, call)))  # jne past the call
        self._call(code, entry)

    def after_syscall(self, ins: Instruction, code: Code64) -> None:
        if ins.address in self.action_calls:  # the program's handler back in both structs
            self._call(code, "anvil_sigaction_done_entry")
        if ins.address in self.fork_calls:
            self._call(code, "anvil_forked_entry")

    def _forks_hold_lock(self) -> bool:
        """Whether the copies take the analysis lock (a program that may start threads) and
        a fork must hold it (not Go's: its threads count without it, and it forks by
        CLONE_VFORK, sharing its memory)."""
        return self.threaded and not self.own

    def _go_poll(self, code: Code64, flags_live: bool) -> None:
        """At a loop head of a Go program's copy: if Go asks this goroutine to stop (its
        g.stackguard0, at r14 + 16 in Go's register ABI, is stackPreempt), call the runtime's
        anvil_go_poll_entry, which raises Go's preemption signal on this thread (decision
        0134): a loop without calls has no other place where Go stops it but a signal that
        happens to find the start of an instruction's copy, seldom where the analysis takes
        the time. Below the red zone, the flags pushed where they are live (popfq costs a
        tight loop as much as its work); after the call (its return) they and RSP are back
        (what the runtime's anvil_go_fault_pc expects there)."""
        save, restore = (_PUSHF, _POPF) if flags_live else (b"", b"")
        code.emit(BELOW_RED_ZONE + save + _CMP_STACKGUARD0_STACK_PREEMPT + b"\x75\x05")  # jne over the call
        code.rel32_lookup(b"\xe8", b"", self.symbol,
                          "anvil_go_poll_entry" if flags_live else "anvil_go_poll_flagless_entry")
        code.emit(restore + ABOVE_RED_ZONE)

    def _call(self, code: Code64, entry: str) -> None:
        """A call of the runtime's ``entry``, which keeps every register and the flags."""
        code.emit(BELOW_RED_ZONE)
        code.rel32_lookup(b"\xe8", b"", self.symbol, entry)
        code.emit(ABOVE_RED_ZONE)

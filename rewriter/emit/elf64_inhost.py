"""InHost instrumentation of x86-64 programs: the tool's counters inline in the copies of
its procedures, its analysis library and the runtime linked into the region after them
(decision 0110).

What is lowered so far: block counters (``Block.increment``; a counter array read only as
per-procedure sums, ``Tool.sum_per_procedure``, is folded into them at the end), the
tool's program-start and program-end routines, and calls of its routines at blocks and
instructions and procedure entries (``arch/x86_64/calls.py``, decisions 0113, 0114),
repeat filters among them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..api import Options, Tool
from ..arch.x86_64.calls import RECORDS_END, RECORDS_START, CallSites
from ..arch.x86_64.decode import vector_indexed
from ..arch.x86_64.hooks import CountingHooks, ThreadCounters, exec_jumps
from ..errors import AnvilError
from ..ir import go_runtime
from ..ir.elf_loader import starts_threads
from ..ir.model import Binary
from ..tool_files import run_instrument
from . import target_build as tb
from .elf64_image import Library, write_copied
from .inhost import EXEC_FUNCTIONS, SIGNAL_ACTION_FUNCTIONS, Report, signal_action_calls
from .sites import SiteUnit, asm_array

TOOLCHAIN = tb.X86_64
_ALIGN = 64
_WORD = 1 << 64
#: Where a trial link puts the library's data, from its text: past any library's code.
_TRIAL_DATA = 0x10000000


def _signed(value: int) -> int:
    """A 64-bit link address as a Python int (a PIE's region lies below its image: negative)."""
    return value - _WORD if value >= _WORD >> 1 else value


def _unsupported(binary: Binary) -> str | None:
    if any(block.edge_increments for block in binary.blocks()):
        return "counts on branches"
    return None


def _fold_source(sums: dict[str, str], procedures: int) -> str:
    """``anvil_derive_counts``: at the program's end, each block counter read only as
    per-procedure sums adds its count x instructions to its procedure's sum (decision
    0025). Counting into the sums inline would be as exact, but every block of a loop
    would add to one slot, each add waiting for the one before (5 cycles or so a block:
    gzip ran 3.4 times slower than with a slot a block, bbcount's 1.3).

    ``anvil_fault_cut``: per procedure (``procedures`` of them, a Go program's; else none),
    the instructions its blocks' counters counted that a fault the program recovered from
    skipped (the runtime's anvil_go_fault_pc adds them); they come off each sum. First the
    threads' own copies of the counters are added up (anvil_gather_counts)."""
    lines = [f"uint64_t anvil_fault_cut[{max(procedures, 1)}];\n"
             f"const uint32_t anvil_fault_cut_count = {procedures if sums else 0};\n"
             "void anvil_gather_counts(void);\n"
             "void anvil_derive_counts(void)\n{\n  anvil_gather_counts();\n"]
    for blocks, procs in sums.items():
        lines.append(f"  for (uint32_t b = 0; b < anvil_nblocks; b++)\n    anvil_array_{procs}[anvil_block_proc[b]]"
                     f" += anvil_array_{blocks}[b] * anvil_block_insns[b];\n")
        if procedures:
            lines.append(f"  for (uint32_t p = 0; p < {procedures}; p++)\n"
                         f"    anvil_array_{procs}[p] -= anvil_fault_cut[p];\n")
    lines.append("}\n")
    return "".join(lines)


def _library(sources: list, include: list) -> Library:
    objects = [tb.compile_unit(source, include, toolchain=TOOLCHAIN) for source in sources]

    def link(text: int) -> tuple[bytes, dict[str, int]]:
        # (The trial learns the text's size; its data near the text, as every reference to
        # them is RIP-relative: at 0, a region above 2 GiB was out of their reach.)
        trial = tb.link(objects, text & _WORD - 1, (text + _TRIAL_DATA) & _WORD - 1, toolchain=TOOLCHAIN)
        data_at = (text + len(trial.text) + _ALIGN - 1) & ~(_ALIGN - 1)
        linked = tb.link(objects, text & _WORD - 1, data_at & _WORD - 1, toolchain=TOOLCHAIN)
        moved = tb.link(objects, (text + 0x100000) & _WORD - 1, (data_at + 0x100000) & _WORD - 1,
                        toolchain=TOOLCHAIN)
        if moved.data != linked.data:  # an address in initialised data: wrong wherever a PIE is loaded
            raise AnvilError("the analysis library keeps addresses in its initialised data, which x86-64 "
                             "programs cannot relocate yet: compute them in code instead")
        zeros = (linked.bss_end - linked.data_addr) - len(linked.data)
        body = linked.text + b"\0" * (data_at - text - len(linked.text)) + linked.data + b"\0" * zeros
        return body, {name: _signed(value) for name, value in linked.symbols.items()}

    trial = tb.link(objects, 0, 0x40000000, toolchain=TOOLCHAIN)
    size = ((len(trial.text) + _ALIGN - 1) & ~(_ALIGN - 1)) + (trial.bss_end - 0x40000000)
    return Library(size, link)


# Go's runtime starts every thread of its own by the clone system call (runtime.clone,
# under runtime.newosproc; a program with cgo asks the C library instead, through the PLT);
# its signal handler, which the kernel enters for every signal the runtime handles
# (cgo's handler jumps to it).
GO_THREAD_START = "runtime.clone"
# Where every thread Go runs code on starts (the first, and each one runtime.clone or cgo's
# pthread_create starts).
GO_THREAD_ENTRY = "runtime.mstart"


def _thread_counters(binary: Binary, arrays: dict[str, tuple[str, int]]) -> ThreadCounters | None:
    """For a Go program, which is threaded from its start (the runtime's monitor, its
    collector's workers): counters in each thread's own copy of the arrays, which needs no
    ``lock`` (decision 0121: the locked adds made inscount's copy of gofmt 12 times slower
    than the original, 1.9 without them). None for other programs."""
    starts = {address for address, name in binary.go_functions.items() if name == GO_THREAD_ENTRY}
    if not starts:
        return None
    own = {address for address, name in binary.go_functions.items() if name != GO_THREAD_START}
    return ThreadCounters(own, starts, {f"anvil_array_{name}": 8 * length for name, (_, length) in arrays.items()})


def _go_returns(binary: Binary) -> dict[int, str]:
    """A Go program's returns of its signal handler and of asyncPreempt -> the runtime's entry
    called before each (decision 0134): the handler's puts back the copy's PC of a
    preemption the handler let go on; asyncPreempt's makes the original PC it returns to
    (where the handler stopped the goroutine) its copy's."""
    entries = {go_runtime.SIGNAL_HANDLER: "anvil_go_signal_return_entry",
               go_runtime.ASYNC_PREEMPT: "anvil_go_resume_entry"}
    names = binary.go_functions  # (a symbol may name it otherwise: runtime.sigtramp.abi0)
    return {ins.address: entries[names[proc.address]] for proc in binary.procedures
            if names.get(proc.address) in entries for ins in proc.instructions() if ins.is_return}


def signal_calls(binary: Binary) -> dict[int, int]:
    """The PLT entries of the C library's signal-action functions (decision 0131) -> the GOT
    slot each jumps through (0: not found; decision 0143)."""
    slots = exec_jumps(binary, SIGNAL_ACTION_FUNCTIONS)[0]
    return {address: slots[address][0] if address in slots else 0
            for address, name in binary.plt.items() if name in SIGNAL_ACTION_FUNCTIONS}


def _thread_starts(binary: Binary) -> set[int]:
    """Where the program enters a function that starts a thread: the PLT entries of the
    imports that do, the functions a static program defines that do (not ``clone``:
    glibc's ``system`` and ``posix_spawn`` use it for a child that runs a command), Go's
    runtime.clone, and where a program that names none builds a thread's clone flags."""
    starts = {address for address, name in binary.plt.items() if starts_threads(name)} | binary.thread_flag_procedures
    starts |= {address for address, name in binary.go_functions.items() if name == GO_THREAD_START}
    return starts | {address for name, address in binary.symbols.items()
                     if starts_threads(name) and not name.startswith("clone")}


def check_lowered(binary: Binary, tool: Tool) -> None:
    """AnvilError if ``tool`` left hooks x86-64 cannot lower yet (counts on branches)."""
    missing = _unsupported(binary)
    if missing is not None:
        raise AnvilError(f"{binary.path}: tool {tool.name} needs {missing}, which x86-64 programs do not have yet")


def instrument(binary: Binary, tool: Tool, opts: Options, output: str) -> Report:
    """Run ``tool`` over the x86-64 ``binary`` and write the instrumented program to ``output``."""
    started = time.monotonic()
    binary.clear_hooks()
    run_instrument(tool, binary, opts)
    check_lowered(binary, tool)
    # Misses of a deferred routine's filtered sites become records run in batches (the
    # ring starts before the tool's start routines, its last records run before its end ones).
    deferring = not binary.threaded and any(p.deferred and p.filter for p in tool.prototypes.values())
    if deferring:
        binary.bracket_program_calls(RECORDS_START, RECORDS_END)
    arrays = dict(tool.arrays)  # the repeat filters' tables are the call sites' (CallSites.filter_tables)

    def sources(calls: CallSites) -> list:
        # The tool's C in one unit with its call sites' tables and anvil_site, which calls
        # its routines: the compiler inlines them there.
        tool_c = [path.read_text() + "\n" for path in tb.analysis_sources(tool)]
        return [tb.Generated("anvil_calls.c", calls.source(tool_c, asm_array))]

    report = write_instrumented(binary, tool, output, started, arrays, CallSites.factory(binary.threaded, deferring),
                                sources, [tb.COMMON_DIR / "anvil_format.c"], original_returns(binary, opts))
    note_selection(report, binary, opts)
    return report


def note_selection(report: Report, binary: Binary, opts: Options) -> None:
    """Say how many procedures ``--only``/``--skip`` gave the tool's calls: every procedure is
    copied all the same (those left out run their copies without calls), so the number
    copied does not say it."""
    if opts.only or opts.skip:
        report.selected = len(binary.select(opts.only or None, opts.skip or None))


def original_returns(binary: Binary, opts: Options) -> bool:
    """Whether calls leave the original return addresses (``--return-addresses``; auto: where
    the program's stack may be unwound, as elf_loader tells)."""
    if opts.return_addresses == "auto":
        return binary.unwinds
    return opts.return_addresses == "original"


def write_instrumented(binary: Binary, tool: Tool, output: str, started: float, arrays: dict[str, tuple[str, int]],
                       call_sites: Callable[[Callable[[str], int]], CallSites],
                       sources: Callable[[CallSites], list], runtime_parts: list, returns_original: bool) -> Report:
    """Copy ``binary``'s procedures with the hooks the tool left, link the runtime (with
    ``runtime_parts``) and what ``sources(calls)`` adds (once the copies are made: the
    tables of their call sites are part of it) into the region, write ``output`` and
    report. ``arrays``: the tool's arrays the program holds; ``call_sites(symbol)``: what
    lowers the calls of the tool's routines."""
    units = SiteUnit()
    unit = units.source(binary, arrays) + _fold_source(tool.procedure_sums,
                                                       len(binary.procedures) if binary.go_functions else 0)
    runtime = [TOOLCHAIN.isa_dir / "anvil_rt.c", tb.RUNTIME_DIR / "anvil_target.c", tb.COMMON_DIR / "anvil_string.c",
               *runtime_parts, TOOLCHAIN.isa_dir / "anvil_entry.S", tb.Generated("anvil_sites.c", unit)]
    calls: list[CallSites] = []

    def hooks(symbol: Callable[[str], int]) -> CountingHooks:
        calls.append(call_sites(symbol))
        handlers = {address for address, name in binary.go_functions.items() if name == go_runtime.SIGNAL_HANDLER}
        signal_entries = signal_calls(binary)
        return CountingHooks(symbol, binary.switch_cases, tool.procedure_sums, binary.threaded, binary.plt,
                             calls[0], _thread_starts(binary), handlers, _thread_counters(binary, arrays),
                             exec_jumps(binary, EXEC_FUNCTIONS), signal_entries, _go_returns(binary),
                             go_runtime.loop_heads(binary, binary.procedures),
                             {call.end for call in signal_action_calls(binary, set(signal_entries))})

    def library() -> Library:
        return _library([*runtime, *sources(calls[0])], [TOOLCHAIN.isa_dir, tb.COMMON_DIR])

    copied = write_copied(binary, output, returns_original, hooks=hooks, library=library)
    report = Report(output=output, procedures=len(binary.procedures), relocated=copied.copied,
                    instructions=copied.instructions, original_size=len(binary.data))
    report.not_relocated = [{"procedure": why} for why in copied.in_place]
    report.not_relocated += [{"branch": f"{address:#x}", "why": "a direct branch out of the program: runs in place"}
                             for address in copied.branches_in_place]
    report.not_relocated += [{"instruction": f"{address:#x}", "why": "a ret whose address + 1 __morestack "
                              "calls: copied without the tool's calls (its stack read not traced)"}
                             for address in copied.untraced]
    report.loader_stub = copied.loader_stub
    report.started_from = "preinit array" if copied.started_from_preinit else "entry"
    report.entries_not_patched = [f"{address:#x}" for address in copied.short_entries]
    # Entered through a pointer in data (or the unwinder: its landing pads are among the
    # code pointers), such an entry runs the original, uncounted.
    report.entries_run_in_place = [f"{address:#x}" for address in copied.short_entries
                                   if address in binary.code_pointers]
    report.return_addresses = "original" if returns_original else "relocated"
    if any(kind.per_access for prototype in tool.prototypes.values() for kind in prototype.kinds):
        report.vector_indexed = [f"{ins.address:#x}" for proc in binary.procedures for ins in proc.instructions()
                                 if vector_indexed(ins)]
    lowered = copied.hooks
    report.block_counters = {"inline": sum(bool(b.counter_increments) for b in binary.blocks()),
                             "flag_saves": lowered.flag_saves, "exit_calls": lowered.exit_calls,
                             "unknown_syscalls": lowered.unknown_syscalls, "repeated": lowered.repeated}
    report.rewrite_seconds = time.monotonic() - started
    report.output_size = os.path.getsize(output)  # (not read back: a large program's is a hundred MB)
    return report

"""ReHost emitter: the instrumented binary ships hook records; the analysis runs on the host.

The tool instruments the IR exactly as for InHost. Then every call site of an analysis
routine becomes a *site*: its static arguments (constants, strings, instruction
address, access size and kind, block size) go into the site table written beside the
binary, and the hook is replaced by a call of the communicator that appends a record
(site id + dynamic arguments only) to a ring buffer in target memory. Program start
and end routines run on the host when the session opens and closes. Inline counters
and repeat filters (api.RepeatFilter) stay inline (they cost less than any record): a
filtered call ships a record only when its key is new in its slot; the counter arrays
travel once, at program end. See docs/decisions/0005-rehost-records.md and rehost/stream.py for the formats.
Records stay whole when an interrupt or signal handler makes its own in the middle of
one (docs/decisions/0010-interrupt-safe-records.md); sites inside the program's own
LDREX/STREX windows call the communicator's ``_in_exclusive`` routines, which use no
exclusives. In a program that starts threads every record goes through the call stub,
which holds the analysis lock while the communicator appends it (call_stubs.py).

Firmware images send their records over semihosting (runtime_stubs/cortexm/anvil_channel.c)
or a UART (anvil_channel_uart.c, ``--transport uart``); the site table's ``channel`` says
which, so that `anvil run --board` connects the right end (docs/decisions/0009-uart-transport.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ..api import Options, Tool
from ..arch.arm.exclusives import emulates_exclusives
from ..boards import DEFAULT_UART_BASE, UART_SPAN
from ..errors import AnvilError
from ..files import atomic_write
from ..ir.gc_pause import gc_paused
from ..ir.model import Binary, Hook, Point
from ..passes.common import parse_size
from ..tool_files import run_instrument
from . import site_format
from . import target_build as tb
from .firmware_placement import image_board
from .inhost import Report, emit, require_rewritable, vfp_scratch
from .records import RING_END, RING_START, SiteTable, make_records
from .sites import SiteUnit, c_string

SITE_TABLE_SUFFIX = ".sites.json"
# In every ReHost image (runtime_stubs/common/anvil_comm.c anvil_rehost_mark): `anvil run`
# names a copy whose site table is missing instead of running it with nowhere to send.
REHOST_MARK = b"ANVIL-REHOST-COPY\0"
CHANNEL_SUFFIX = ".records"  # firmware over semihosting: the host file (a named pipe) records go to


def program_calls(binary: Binary, tool: Tool) -> SiteTable:
    """A site table with the tool's program start and end calls (they run on the host, the
    ring's start and end take their place in the program) and the arrays the program fills
    inline (its counters, sent in the end record); the sites are the ISA's to add."""
    table = SiteTable(tool, binary)
    for hook in binary.hooks:
        call = table.program_call(hook)
        (table.start if hook.point is Point.BEFORE else table.end).append(call)
    binary.hooks = [Hook(Point.BEFORE, RING_START, ()), Hook(Point.AFTER, RING_END, ())]
    for proc in binary.procedures:
        for block in proc.blocks:
            for counter, _, _ in block.counter_increments:
                if counter not in tool.procedure_sums:  # folded into its sums by the image: never shipped
                    table.filled_by_target(counter)
    for into in tool.procedure_sums.values():  # counter placement may add sums there (decision 0014)
        table.filled_by_target(into)
    return table


def plan(binary: Binary, tool: Tool) -> tuple[SiteTable, list[str]]:
    """Turn the tool's hooks into record calls; returns the site table and the arrays the target fills."""
    table = program_calls(binary, tool)
    make_records(binary.procedures, table, lambda hook: True, emulates_exclusives(binary))
    return table, table.target_arrays


def communicator_tables(arrays: dict[str, tuple[str, int]], table_hash: bytes) -> str:
    """Generated C: the site table's hash (``table_hash``: its digest), and a function that
    ships the arrays the program fills (``arrays``, in their order in the end record)."""
    lo, hi = int.from_bytes(table_hash[:4], "little"), int.from_bytes(table_hash[4:], "little")
    sends = "".join(f"  anvil_rh_send_array({i}, anvil_array_{name}, sizeof anvil_array_{name});\n"
                    for i, name in enumerate(arrays))
    return (f"const uint32_t anvil_rh_table_hash[2] = {{{lo:#x}u, {hi:#x}u}};\n"
            "void anvil_rh_send_array(uint32_t index, const void *data, uint32_t bytes);\n"
            f"void anvil_rh_send_arrays(void)\n{{\n{sends}}}\n"
            f"const uint32_t anvil_rh_narrays = {len(arrays)};\n")


def channel_path(output: str) -> str:
    """Where a firmware image's records go (semihosting; relative to the emulator's directory)."""
    return os.path.basename(output) + CHANNEL_SUFFIX


def firmware_channel(binary: Binary, opts: Options) -> site_format.Channel | None:
    """How the image's records leave it, as the site table records it (None: a Linux program's socket)."""
    transport = opts.transport or "semihosting"
    if transport not in site_format.TRANSPORTS:
        raise AnvilError(f"unknown ReHost transport '{transport}' (transports: {', '.join(site_format.TRANSPORTS)})")
    if not binary.is_firmware:
        if opts.transport or opts.uart_base is not None:
            raise AnvilError("--transport and --uart-base are for Cortex-M images: a Linux program sends its "
                             "records over a socket")
        return None
    if transport != "uart":
        if opts.uart_base is not None:
            raise AnvilError("--uart-base needs --transport uart")
        return site_format.Channel(transport)
    target = image_board(binary, opts.board)
    if target is not None:
        target.check_transport(transport)
    base = opts.uart_base
    if base is None:  # the board's UART0; an image on no known board: MPS2's
        base = target.uart if target is not None else DEFAULT_UART_BASE
    for segment in binary.segments:
        if segment.memsz and base < segment.vaddr + segment.memsz and segment.vaddr < base + UART_SPAN:
            raise AnvilError(f"--uart-base {base:#x} is inside the image ({segment.vaddr:#x}.."
                             f"{segment.vaddr + segment.memsz:#x}), not a UART")
    return site_format.Channel("uart", base)


# --ring-size bounds: room for the stream's header and a few records; a ring past 64 MiB
# would not fit a board's RAM nor the region of a Linux program.
MIN_RING_BYTES = 256
MAX_RING_BYTES = 64 << 20


def parse_ring_size(text: str) -> int:
    """``--ring-size BYTES`` (``4096``, ``1k``, ``16k``): a multiple of 4 between
    MIN_RING_BYTES and MAX_RING_BYTES; a one-line error otherwise."""
    try:
        size = parse_size(text)
    except ValueError:
        raise AnvilError(f"--ring-size '{text}' is not a size in bytes (e.g. 4096, 1k, 16k)") from None
    if size % 4 or not MIN_RING_BYTES <= size <= MAX_RING_BYTES:
        raise AnvilError(f"--ring-size {text} is out of range: a multiple of 4 bytes from {MIN_RING_BYTES} "
                         f"to {MAX_RING_BYTES >> 20}m")
    return size


def communicator_source(ring_size: int | None, threads: bool = False, word_bytes: int = 4) -> Path | tb.Generated:
    """The communicator (``anvil_comm.c``), its ring ``ring_size`` bytes when given (else the
    platform's default: 16 KiB on Cortex-M, 65536 words on Linux), of words ``word_bytes``
    wide. ``threads``: the program starts threads, and its records are appended under the
    call stub's lock; otherwise the communicator gives up the stream when a second thread
    flushes (decision 0087)."""
    path = tb.COMMON_DIR / "anvil_comm.c"
    defines = (f"#define ANVIL_RING_WORDS {ring_size // word_bytes}u\n" if ring_size is not None else "") \
        + ("#define ANVIL_THREADS 1\n" if threads else "")
    if not defines:
        return path
    return tb.Generated("anvil_comm.c", defines + path.read_text())


def channel_source(toolchain: tb.Toolchain, channel: site_format.Channel | None) -> Path:
    """The communicator's channel for the platform and transport."""
    name = "anvil_channel_uart.c" if channel and channel.transport == "uart" else "anvil_channel.c"
    return tb.platform_dir(toolchain) / name


@gc_paused
def instrument(binary: Binary, tool: Tool, opts: Options, output: str) -> Report:
    """Write the ReHost-instrumented ``output`` and its site table ``output + SITE_TABLE_SUFFIX``."""
    require_rewritable(binary)
    if binary.machine == "x86-64":
        from .elf64_rehost import instrument as instrument_x86_64
        return instrument_x86_64(binary, tool, opts, output)
    started = time.monotonic()
    channel = firmware_channel(binary, opts)
    binary.clear_hooks()
    run_instrument(tool, binary, opts)
    table, target_arrays = plan(binary, tool)
    # Target arrays in the order of the tool's declaration: the END record refers to them by position.
    arrays = {name: tool.arrays[name] for name in tool.arrays if name in target_arrays}
    # Arrays the image folds into per-procedure sums live only in the image (decision 0034).
    folded = {name: tool.arrays[name] for name in tool.procedure_sums}
    document = json.dumps(table.document(list(arrays), channel and channel.document()), separators=(",", ":")).encode()
    units = SiteUnit()
    def library(toolchain: tb.Toolchain) -> tuple[list[Path], str]:
        generated = units.source(binary, {**arrays, **folded, **tool.filter_arrays()}, facts=False,
                                 placed={k: v for k, v in tool.filter_placement().items() if k in arrays})
        sources = [*tb.runtime_sources(toolchain, results=False),
                   communicator_source(opts.ring_size, binary.threaded and not binary.is_firmware),
                   channel_source(toolchain, channel)]
        if channel and channel.transport == "uart":
            generated += f"const uint32_t anvil_rh_uart_base = {channel.uart_base:#x}u;\n"
        elif channel:  # semihosting: the host file the records go to, beside the results file
            generated += f"const char anvil_rh_channel_path[] = {c_string(channel_path(output))};\n"
        return sources, generated + communicator_tables(arrays, site_format.digest(document))

    if binary.threaded and not binary.is_firmware and table.sites and not vfp_scratch(binary):
        # Threads' records go through the call stub's lock, which keeps its state in
        # d16-d31; without them another thread's records look like a signal handler's
        # and get lost (reported).
        print(f"anvil: warning: {os.path.basename(binary.path)} starts threads and uses d16-d31 (or "
              "ANVIL_STACK_SCRATCH is set): its ReHost records are not thread-safe, results may be incomplete "
              "(counters alone are)", file=sys.stderr)
    report = emit(binary, tool.name, units, library, output, started, opts, tool.procedure_sums)
    atomic_write(output + SITE_TABLE_SUFFIX, document, mode=0o644)
    return report


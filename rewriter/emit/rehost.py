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
exclusives.

Firmware images send their records over semihosting (runtime_stubs/cortexm/anvil_channel.c)
or a UART (anvil_channel_uart.c, ``--transport uart``); the site table's ``channel`` says
which, so that `anvil run --board` connects the right end (docs/decisions/0009-uart-transport.md).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..api import Arg, Options, Prototype, Tool
from ..boards import DEFAULT_UART_BASE, UART_SPAN
from ..errors import AnvilError
from ..ir.flow import exclusive_windows
from ..ir.gc_pause import gc_paused
from ..ir.model import Binary, Hook, Instruction, Point
from . import site_format
from . import target_build as tb
from .hooks import IN_EXCLUSIVE, RECORD_PREFIX, RecordPrototype
from .inhost import Report, atomic_write, emit
from .sites import SiteUnit, c_string, image_facts

SITE_TABLE_SUFFIX = ".sites.json"
CHANNEL_SUFFIX = ".records"  # firmware over semihosting: the host file (a named pipe) records go to
MAX_SITES = 0xFFFFFF00  # ids above are stream markers (rehost/stream.py)


class SiteTable:
    """The static half of every record: routines, sites, program start/end calls, arrays, facts."""

    def __init__(self, tool: Tool, binary: Binary) -> None:
        self.tool = tool
        self.routines: list[Prototype] = []
        self._routine_index: dict[str, int] = {}
        self.sites: list[tuple[int, list]] = []
        self.start: list[tuple[int, list]] = []
        self.end: list[tuple[int, list]] = []
        self.binary = binary
        self.target_arrays: list[str] = []  # arrays the program fills inline (inline counters, filter counts)

    def filled_by_target(self, array: str) -> None:
        if array not in self.target_arrays:
            self.target_arrays.append(array)

    def routine(self, proto: Prototype) -> int:
        index = self._routine_index.get(proto.name)
        if index is None:
            index = self._routine_index[proto.name] = len(self.routines)
            self.routines.append(proto)
        return index

    def add_site(self, hook: Hook, ins: Instruction, access_index: int | None, block_insns: int) -> None:
        """One site: static arguments as values, dynamic ones as None (in record order)."""
        access = ins.accesses[access_index] if access_index is not None else None
        args: list = []
        for kind, value in zip(hook.prototype.kinds, hook.args):
            if kind.dynamic:
                args.append(None)
            elif kind is Arg.CONST:
                args.append(int(value) & 0xFFFFFFFF)
            elif kind is Arg.STRING:
                args.append(str(value))
            elif kind is Arg.INST_ADDR:
                args.append(ins.address)  # link-time; the host adds the load bias
            elif kind is Arg.BLOCK_INSNS:
                args.append(block_insns)
            elif kind is Arg.ACCESS_SIZE:
                assert access is not None
                args.append(access.size)
            elif kind is Arg.ACCESS_IS_STORE:
                assert access is not None
                args.append(int(access.is_store))
            else:
                raise AnvilError(f"{hook.prototype.name}: argument kind {kind.name} is not supported in ReHost mode")
        if len(self.sites) >= MAX_SITES:
            raise AnvilError("too many ReHost sites")
        self.sites.append((self.routine(hook.prototype), args))

    def program_call(self, hook: Hook) -> tuple[int, list]:
        for kind in hook.prototype.kinds:
            if kind not in (Arg.CONST, Arg.STRING):
                raise AnvilError(f"{hook.prototype.name}: program start/end calls take CONST and STRING only")
        args = [str(v) if k is Arg.STRING else int(v) & 0xFFFFFFFF for k, v in zip(hook.prototype.kinds, hook.args)]
        return self.routine(hook.prototype), args

    def document(self, target_arrays: list[str], channel: dict | None = None) -> dict:
        """The site table file's content; ``channel``: how a firmware image's records leave it."""
        arrays = [{"name": name, "ctype": ctype, "length": length, "from_target": name in target_arrays}
                  for name, (ctype, length) in self.tool.arrays.items()]
        extra = {"channel": channel} if channel else {}
        return {
            "format": site_format.FORMAT,
            "version": site_format.VERSION,
            "tool": self.tool.name,
            "routines": [{"name": p.name, "kinds": [k.value for k in p.kinds]} for p in self.routines],
            "sites": [[r, a] for r, a in self.sites],
            "start": [[r, a] for r, a in self.start],
            "end": [[r, a] for r, a in self.end],
            "arrays": arrays,
            "facts": image_facts(self.binary),
            **extra,
        }


def plan(binary: Binary, tool: Tool) -> tuple[SiteTable, list[str]]:
    """Turn the tool's hooks into record calls; returns the site table and the arrays the target fills."""
    table = SiteTable(tool, binary)
    for hook in binary.hooks:
        call = table.program_call(hook)
        (table.start if hook.point is Point.BEFORE else table.end).append(call)
    binary.hooks = [Hook(Point.BEFORE, Prototype("anvil_rh_start", ()), ()),
                    Hook(Point.AFTER, Prototype("anvil_rh_end", ()), ())]
    for proc in binary.procedures:
        inside = exclusive_windows(proc)
        if proc.hooks:
            entry = proc.blocks[0]
            proc.hooks = [_site(table, h, entry.instructions[0], None, entry.size, inside) for h in proc.hooks]
        for block in proc.blocks:
            for counter, _, _ in block.counter_increments:
                table.filled_by_target(counter)
            block.hooks = [_site(table, h, block.instructions[0], None, block.size, inside) for h in block.hooks]
            for ins in block.instructions:
                rewritten = []
                for hook in ins.hooks:
                    if hook.prototype.per_access:
                        if not ins.accesses:
                            continue
                        record = _site(table, hook, ins, 0, block.size, inside)
                        for i in range(1, len(ins.accesses)):
                            table.add_site(hook, ins, i, block.size)
                    else:
                        record = _site(table, hook, ins, None, block.size, inside)
                    rewritten.append(record)
                ins.hooks = rewritten
    return table, table.target_arrays


def _site(table: SiteTable, hook: Hook, ins: Instruction, access_index: int | None, block_insns: int,
          inside: set[int]) -> Hook:
    """The record call standing for ``hook`` at ``ins``; ``inside``: the addresses in the
    program's own exclusive windows (ir.flow.exclusive_windows), where the record takes the
    communicator's form without exclusives."""
    site = len(table.sites)
    table.add_site(hook, ins, access_index, block_insns)
    if hook.prototype.filter:  # the target counts the calls its filter skips
        table.filled_by_target(hook.prototype.filter.counter)
    dynamic = [(k, v) for k, v in zip(hook.prototype.kinds, hook.args) if k.dynamic]
    if len(dynamic) > 3:
        raise AnvilError(f"{hook.prototype.name}: ReHost records carry at most 3 run-time arguments")
    in_exclusive = ins.address in inside
    name = f"{RECORD_PREFIX}{len(dynamic)}{IN_EXCLUSIVE if in_exclusive else ''}"
    proto = RecordPrototype(name, (Arg.SITE_ID, *(k for k, _ in dynamic)), each_access=access_index is not None,
                            original=hook, in_exclusive=in_exclusive)
    return Hook(hook.point, proto, (site, *(v for _, v in dynamic)))


def _communicator_source(arrays: dict[str, tuple[str, int]], table_hash: bytes) -> str:
    """Generated C: the site table's hash, and a function that ships the target's arrays."""
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
    base = DEFAULT_UART_BASE if opts.uart_base is None else opts.uart_base
    for segment in binary.segments:
        if segment.memsz and base < segment.vaddr + segment.memsz and segment.vaddr < base + UART_SPAN:
            raise AnvilError(f"--uart-base {base:#x} is inside the image ({segment.vaddr:#x}.."
                             f"{segment.vaddr + segment.memsz:#x}), not a UART")
    return site_format.Channel("uart", base)


def channel_source(toolchain: tb.Toolchain, channel: site_format.Channel | None) -> Path:
    """The communicator's channel for the platform and transport."""
    name = "anvil_channel_uart.c" if channel and channel.transport == "uart" else "anvil_channel.c"
    return tb.platform_dir(toolchain) / name


@gc_paused
def instrument(binary: Binary, tool: Tool, opts: Options, output: str) -> Report:
    """Write the ReHost-instrumented ``output`` and its site table ``output + SITE_TABLE_SUFFIX``."""
    started = time.monotonic()
    channel = firmware_channel(binary, opts)
    binary.clear_hooks()
    tool.instrument(binary, opts)
    table, target_arrays = plan(binary, tool)
    # Target arrays in the order of the tool's declaration: the END record refers to them by position.
    arrays = {name: tool.arrays[name] for name in tool.arrays if name in target_arrays}
    document = json.dumps(table.document(list(arrays), channel and channel.document()), separators=(",", ":")).encode()
    units = SiteUnit()
    def library(toolchain: tb.Toolchain) -> tuple[list[Path], str]:
        generated = units.source(binary, {**arrays, **tool.filter_arrays()}, facts=False,
                                 placed={k: v for k, v in tool.filter_placement().items() if k in arrays})
        sources = [*tb.runtime_sources(toolchain), tb.RUNTIME_DIR / "anvil_comm.c",
                   channel_source(toolchain, channel)]
        if channel and channel.transport == "uart":
            generated += f"const uint32_t anvil_rh_uart_base = {channel.uart_base:#x}u;\n"
        elif channel:  # semihosting: the host file the records go to, beside the results file
            generated += f"const char anvil_rh_channel_path[] = {c_string(channel_path(output))};\n"
        return sources, generated + _communicator_source(arrays, site_format.digest(document))

    report = emit(binary, tool.name, units, library, output, started, opts)
    atomic_write(output + SITE_TABLE_SUFFIX, document, mode=0o644)
    return report


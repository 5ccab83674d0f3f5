"""ReHost instrumentation of x86-64 programs: the call sites of the tool's routines append
records (the site, the run-time values) to the communicator's ring, which goes to the host
over the inherited channel; the routines run there (decision 0120).

Everything else is InHost's (elf64_inhost.write_instrumented): the copies, the inline
counters (sent once, in the end record, as on ARM), the repeat filters tested inline (a
record only for a key new to its slot), the lock of a program that starts threads. The
records' words are 64-bit (rehost/stream.py): an x86-64 program's addresses need them; the
site table says so (``word_bytes``) and the host builds the tool's C for such records.
"""

from __future__ import annotations

import json
import time

from ..api import Options, Tool
from ..arch.x86_64.calls import CallSites
from ..files import atomic_write
from ..ir.gc_pause import gc_paused
from ..ir.model import Binary
from ..tool_files import run_instrument
from . import site_format
from . import target_build as tb
from .elf64_inhost import TOOLCHAIN, check_lowered, note_selection, original_returns, write_instrumented
from .inhost import Report
from .rehost import SITE_TABLE_SUFFIX, communicator_source, communicator_tables, firmware_channel, program_calls
from .sites import asm_array

WORD_BYTES = 8


@gc_paused
def instrument(binary: Binary, tool: Tool, opts: Options, output: str) -> Report:
    """Write the ReHost-instrumented x86-64 ``output`` and its site table ``output + SITE_TABLE_SUFFIX``."""
    started = time.monotonic()
    firmware_channel(binary, opts)  # (a Linux program: no transport to choose, a one-line error if one is)
    binary.clear_hooks()
    run_instrument(tool, binary, opts)
    check_lowered(binary, tool)
    table = program_calls(binary, tool)
    for proto in tool.prototypes.values():
        if proto.filter is not None:  # the program counts the calls its filters skip
            table.filled_by_target(proto.filter.counter)
    shipped = {name: tool.arrays[name] for name in tool.arrays if name in table.target_arrays}
    # Block counters the image folds into per-procedure sums live only in the image.
    held = {**shipped, **{name: tool.arrays[name] for name in tool.procedure_sums}}
    documents: list[bytes] = []

    def sources(calls: CallSites) -> list:
        for routine, args in zip(calls.site_routine, calls.table_args):
            table.add(calls.routines[routine], args)
        document = json.dumps(table.document(list(shipped)), separators=(",", ":")).encode()
        documents.append(document)
        sized = "".join(f"extern {ctype} anvil_array_{name}[{length}];\n" for name, (ctype, length) in shipped.items())
        unit = calls.source([], asm_array) + sized + communicator_tables(shipped, site_format.digest(document))
        return [communicator_source(opts.ring_size, binary.threaded, WORD_BYTES),
                TOOLCHAIN.isa_dir / "anvil_channel.c", tb.Generated("anvil_calls.c", unit)]

    report = write_instrumented(binary, tool, output, started, held,
                                CallSites.factory(binary.threaded, records=True), sources, [],
                                original_returns(binary, opts))
    note_selection(report, binary, opts)
    atomic_write(output + SITE_TABLE_SUFFIX, documents[0], mode=0o644)
    return report

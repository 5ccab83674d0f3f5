"""memtrace: a trace of every data access (instruction address, effective address, size, kind).

Text: one line per access, ``pc ea size L|S``. JSON: ``{"records": [[pc, ea, size, "L"|"S"], ...],
"accesses": N}``. Addresses are run-time addresses (the program's own, as it sees them).
"""

from __future__ import annotations

from ..api import Arg, Options, Point, Tool
from ..ir.model import Binary
from .common import FORMATS


class MemTrace(Tool):
    name = "memtrace"
    description = "trace every load and store: instruction address, effective address, size, kind"
    options = []

    def instrument(self, binary: Binary, opts: Options) -> None:
        start = self.prototype("memtrace_start", Arg.STRING, Arg.CONST)
        access = self.prototype("memtrace_access", Arg.INST_ADDR, Arg.EFFADDR, Arg.ACCESS_SIZE, Arg.ACCESS_IS_STORE,
                                deferred=True)
        binary.call(Point.BEFORE, start, opts.out, FORMATS[opts.format])
        for proc in binary.select(opts.only, opts.skip):
            for block in proc.blocks:
                for ins in block.instructions:
                    if ins.accesses:
                        ins.call(Point.BEFORE, access, Arg.INST_ADDR, Arg.EFFADDR, Arg.ACCESS_SIZE,
                                 Arg.ACCESS_IS_STORE)
        binary.call(Point.AFTER, self.prototype("memtrace_end"))

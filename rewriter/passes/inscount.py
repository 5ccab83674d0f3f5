"""inscount: executed instructions, total and per procedure.

One inline 64-bit counter per block (bumped on block entry); at program end the
analysis code multiplies by each block's instruction count and sums per procedure.
Only those sums are read, so the emitter may add them straight into ``procs`` instead
(``Tool.sum_per_procedure``, decision 0014); the report adds both.
"""

from __future__ import annotations

from ..api import Arg, Options, Point, Tool
from ..ir.model import Binary
from .common import FORMATS


class InsCount(Tool):
    name = "inscount"
    description = "count executed instructions: total and per procedure"
    options = []

    def instrument(self, binary: Binary, opts: Options) -> None:
        nblocks = sum(len(p.blocks) for p in binary.procedures)
        counters = self.array("blocks", nblocks)
        procs = self.array("procs", len(binary.procedures))
        self.sum_per_procedure(counters, procs)
        for proc in binary.select(opts.only, opts.skip):
            for block in proc.blocks:
                block.increment(counters, block.index)
        report = self.prototype("inscount_report", Arg.STRING, Arg.CONST)
        binary.call(Point.AFTER, report, opts.out, FORMATS[opts.format])

"""inscount: executed instructions, total and per procedure.

One 64-bit counter per block (bumped on block entry), read only as each procedure's
sum of count x instructions (``Tool.sum_per_procedure``): the emitter adds those sums
straight into ``procs`` where it can (decision 0014) and folds the block counters that
remain into ``procs`` at program end (decision 0025); the report reads ``procs``.
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

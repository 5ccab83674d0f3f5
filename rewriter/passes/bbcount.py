"""bbcount: how often each basic block ran, with the top-N blocks by count."""

from __future__ import annotations

from ..api import Arg, Option, Options, Point, Tool
from ..ir.model import Binary
from .common import FORMATS


class BBCount(Tool):
    name = "bbcount"
    description = "count executions of every basic block; report all and the top N"
    options = [Option("top", 10, "how many of the most executed blocks to list first",
                      check=lambda v: None if 1 <= v <= 100000 else "must be between 1 and 100000")]

    def instrument(self, binary: Binary, opts: Options) -> None:
        nblocks = sum(len(p.blocks) for p in binary.procedures)
        counters = self.array("blocks", nblocks)
        self.array("order", nblocks, "uint32_t")
        for proc in binary.select(opts.only, opts.skip):
            for block in proc.blocks:
                block.increment(counters, block.index)
        report = self.prototype("bbcount_report", Arg.STRING, Arg.CONST, Arg.CONST)
        binary.call(Point.AFTER, report, opts.out, FORMATS[opts.format], opts.top)

"""walk: an example tool file (``anvil instrument --tool tests/data/tools/walk.py``).

It counts how often each procedure is entered (a procedure-entry call with the
procedure's index as a CONST) and, at every block entry, adds the block's
instructions (BLOCK_INSNS) to a total and its address (INST_ADDR, less the load
bias) to a weighted sum: the tests check all three against qemu's execution trace.
Its routines are C in walk.c (InHost, and ReHost's default) and Python in the
``Analysis`` class below (``anvil run app.rh --lib tests/data/tools/walk.py``).
"""

from __future__ import annotations

from typing import Any

from rewriter.api import Arg, Point, Tool

U64 = (1 << 64) - 1


class Walk(Tool):
    name = "walk"
    description = "procedure entries, and instructions and addresses of the blocks run (an example tool file)"

    def instrument(self, binary: Any, opts: Any) -> None:
        self.array("entries", len(binary.procedures))
        entry = self.prototype("walk_entry", Arg.CONST)
        block = self.prototype("walk_block", Arg.INST_ADDR, Arg.BLOCK_INSNS)
        for proc in binary.select(opts.only, opts.skip):
            proc.call(Point.BEFORE, entry, proc.index)
            for b in proc.blocks:
                b.call(Point.BEFORE, block, Arg.INST_ADDR, Arg.BLOCK_INSNS)
        binary.call(Point.AFTER, self.prototype("walk_report", Arg.STRING), opts.out)


class Analysis:
    """The same routines in Python, for ReHost; the report is byte for byte walk.c's."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.total = self.weighted = self.blocks_run = 0
        self.entries = [0] * len(session.procedures)

    def walk_entry(self, index: int) -> None:
        self.entries[index] += 1

    def walk_block(self, address: int, insns: int) -> None:
        self.total += insns
        self.weighted = (self.weighted + ((address - self.session.bias) & 0xFFFFFFFF)) & U64
        self.blocks_run += 1

    def walk_report(self, path: str) -> None:
        entered = ", ".join(f"[{self.session.procedures[p][0]}, {n}]" for p, n in enumerate(self.entries) if n)
        with self.session.open_output(path) as out:
            out.write(f'{{"tool": "walk", "total": {self.total}, "blocks_run": {self.blocks_run}, '
                      f'"weighted": {self.weighted}, "entries": [{entered}]}}\n')

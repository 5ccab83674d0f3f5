"""raiser: a test tool that makes the program's signal handler run on top of its routine.

It counts the entries of every procedure (a CONST index, as walk.py does); the routine at
the entry of the procedure named ``poke`` also sends the process SIGUSR1 from inside the
routine (raiser.c), so the signal is delivered while analysis code runs on the analysis
stack, and the program's handler, instrumented, calls the routine again from there.
Used by tests/test_handler_on_analysis.py with samples/handler_on_analysis.c.
"""

from __future__ import annotations

from typing import Any

from rewriter.api import Arg, Point, Tool


class Raiser(Tool):
    name = "raiser"
    description = "procedure entries; poke's entry sends SIGUSR1 from the routine (a test tool)"

    def instrument(self, binary: Any, opts: Any) -> None:
        self.array("entries", len(binary.procedures))
        entry = self.prototype("raiser_entry", Arg.CONST, Arg.CONST)
        for proc in binary.select(opts.only, opts.skip):
            proc.call(Point.BEFORE, entry, proc.index, int(proc.name == "poke"))
        binary.call(Point.AFTER, self.prototype("raiser_report", Arg.STRING), opts.out)

"""inscount analysis in Python: the ReHost counterpart of inscount.c, with byte-identical output.

The program counts its blocks and folds those counts, times each block's instructions, into
its procedures' sums in ``session.arrays["procs"]`` at its end (decisions 0014, 0025);
inscount_report writes the total and the executed procedures,
most instructions first (ties: lower procedure index first, as the C's scan for the
first maximum). Run it with ``anvil run app.rh --lib analysis_libs/inscount/inscount.py``.
"""

from __future__ import annotations

from typing import Any

from rehost.pyformat import U64, json_string, ratio


class Analysis:
    """One session: the report at program end from the block counters."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def inscount_report(self, path: str, json: int) -> None:
        session = self.session
        procs = list(session.arrays["procs"])
        total = sum(procs) & U64
        # Most first; the sort is stable, so equal counts keep procedure order (the C's first maximum).
        ranked = sorted(((n & U64, p) for p, n in enumerate(procs) if n & U64), key=lambda item: -item[0])
        names = [name for _addr, name in session.procedures]
        if json:
            entries = ", ".join(f"{json_string(names[p])}: {n}" for n, p in ranked)
            text = f'{{"tool": "inscount", "total": {total}, "procedures": {{{entries}}}}}\n'
        else:
            text = (f"inscount: {total} instructions executed\n\n"
                    "per procedure (executed ones, most first):\n"
                    "  instructions  share%  procedure\n"
                    + "".join(f"{n:>14}  {ratio(n * 100 & U64, total, 2)}  {names[p]}\n" for n, p in ranked))
        with session.open_output(path) as out:
            out.write(text)

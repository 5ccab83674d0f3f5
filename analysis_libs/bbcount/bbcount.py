"""bbcount analysis in Python: the ReHost counterpart of bbcount.c, with byte-identical output.

The program bumps one 64-bit counter per block on block entry (``session.arrays["blocks"]``,
set before the end routine runs); bbcount_report writes the top N blocks by count, then
every executed block by address. The top N come in exactly the C's order: a partial
selection sort over the executed blocks that swaps the chosen block into place, so among
equal counts the order depends on those swaps, not only on the block index. Run it with
``anvil run app.rh --lib analysis_libs/bbcount/bbcount.py``.
"""

from __future__ import annotations

import heapq
from typing import Any

from rehost.pyformat import U64, json_string


def selection_order(counts: list[int], top: int) -> list[int]:
    """The first ``top`` positions of ``counts`` as the C's partial selection sort leaves them.

    Step i swaps position i with the first position (at or after i) holding the largest
    remaining count. Same result in O((n + top) log n): a heap of positions per count, a
    heap of the counts; the block moved out of position i is the smallest position left.
    """
    n = len(counts)
    top = min(top, n)
    vals = list(counts)
    order = list(range(n))
    groups: dict[int, list[int]] = {}
    for pos, v in enumerate(vals):
        groups.setdefault(v, []).append(pos)  # ascending: already a heap
    largest = [-v for v in groups]
    heapq.heapify(largest)
    for i in range(top):
        v = -largest[0]
        group = groups[v]
        best = heapq.heappop(group)
        if not group:
            heapq.heappop(largest)
        if best != i:  # then vals[i] != v, and i is the smallest position in its own group
            heapq.heapreplace(groups[vals[i]], best)
            vals[i], vals[best] = vals[best], vals[i]
            order[i], order[best] = order[best], order[i]
    return order[:top]


class Analysis:
    """One session: the report at program end from the block counters."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def bbcount_report(self, path: str, json: int, top: int) -> None:
        session = self.session
        blocks = session.blocks
        counts = session.arrays["blocks"]
        names = [name for _addr, name in session.procedures]
        executed = [b for b, count in enumerate(counts[:len(blocks)]) if count]
        total = sum(counts[b] for b in executed) & U64
        top = min(top, len(executed))
        best = [executed[k] for k in selection_order([counts[b] for b in executed], top)]

        def block(b: int) -> str:
            addr, insns, proc = blocks[b]
            if json:
                return (f'{{"address": {addr & 0xFFFFFFFE}, "count": {counts[b]}, "instructions": {insns}, '
                        f'"procedure": {json_string(names[proc])}}}')
            return f"  0x{addr & 0xFFFFFFFE:08x}{counts[b]:>14}{insns:>7}  {names[proc]}\n"

        if json:
            text = (f'{{"tool": "bbcount", "blocks_executed": {len(executed)}, "blocks": {len(blocks)}, '
                    f'"block_entries": {total}, "top": [' + ", ".join(block(b) for b in best)
                    + '], "counts": [' + ", ".join(block(b) for b in executed) + "]}\n")
        else:
            header = "     address         count  insns  procedure\n"
            text = (f"bbcount: {len(executed)} of {len(blocks)} blocks executed, {total} block entries\n\n"
                    f"top {top} blocks:\n" + header + "".join(block(b) for b in best)
                    + "\nall executed blocks, by address:\n" + header + "".join(block(b) for b in executed))
        with session.open_output(path) as out:
            out.write(text)

"""cachesim analysis in Python: the ReHost counterpart of cachesim.c, with byte-identical output.

A set-associative data cache with true LRU replacement and write-allocate, as in the ATOM
cache example: profile_start (geometry), cache_sim (one access), profile_end (report).
The instrumented program keeps each set's ``depth`` most recently used lines itself and
counts the hits on them (``mru_hits``); cache_sim sees the other accesses with the line
that left the program's slot (``left``: an address in it, 0 for none). Each set here is
a list of the remaining ``ways - depth`` line numbers ordered most- to least-recently
used; -1 marks an empty way (a line number is never negative). Run it with
``anvil run app.rh --lib analysis_libs/cachesim/cachesim.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rehost.pyformat import U64, ratio


class Analysis:
    """One session's cache: geometry from profile_start, counts, and the per-set LRU lists."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.cache_size = 0
        self.ways = 0
        self.line_shift = 0
        self.set_mask = 0
        self.sets: list[list[int]] = []
        self.loads = self.load_misses = self.stores = self.store_misses = 0

    def profile_start(self, size: int, assoc: int, line: int, depth: int) -> None:
        self.cache_size = size
        self.ways = assoc
        shift = 0
        while (1 << shift) < line:
            shift += 1
        self.line_shift = shift
        self.set_mask = size // (assoc * line) - 1
        self.sets = [[-1] * (assoc - depth) for _ in range(self.set_mask + 1)]

    def cache_sim(self, addr: int, is_store: int, left: int) -> None:
        self.cache_sim_batch((addr,), (is_store,), (left,))

    def cache_sim_batch(self, addrs: Sequence[int], is_stores: Sequence[int], lefts: Sequence[int]) -> None:
        shift, mask, sets = self.line_shift, self.set_mask, self.sets
        load_misses = store_misses = 0
        for addr, is_store, left in zip(addrs, is_stores, lefts):
            line = addr >> shift
            ways = sets[line & mask]
            if line in ways:
                ways.remove(line)
            else:
                if is_store:
                    store_misses += 1
                else:
                    load_misses += 1
                if not ways:  # direct-mapped: the program kept the only way
                    continue
                ways.pop()
            # The line the program let go is now the most recent of those kept here.
            ways.insert(0, left >> shift if left else -1)
        stores = len(is_stores) - is_stores.count(0)
        self.stores += stores
        self.loads += len(is_stores) - stores
        self.load_misses += load_misses
        self.store_misses += store_misses

    def profile_end(self, path: str, json: int) -> None:
        # Accesses to the lines the program keeps (its two most recent per set) were counted there.
        mru_hits = self.session.arrays["mru_hits"]
        loads, load_misses = (self.loads + mru_hits[0]) & U64, self.load_misses & U64
        stores, store_misses = (self.stores + mru_hits[1]) & U64, self.store_misses & U64
        accesses = (loads + stores) & U64
        misses = (load_misses + store_misses) & U64
        hits = (accesses - misses) & U64
        line = (1 << self.line_shift) & 0xFFFFFFFF
        if json:
            fields = [("size", str(self.cache_size)), ("assoc", str(self.ways)), ("line", str(line)),
                      ("miss_rate", ratio(misses, accesses, 6)),
                      ("load_miss_rate", ratio(load_misses, loads, 6)),
                      ("store_miss_rate", ratio(store_misses, stores, 6)),
                      ("accesses", str(accesses)), ("misses", str(misses)), ("hits", str(hits)),
                      ("loads", str(loads)), ("load_misses", str(load_misses)),
                      ("stores", str(stores)), ("store_misses", str(store_misses))]
            text = '{"tool": "cachesim", ' + ", ".join(f'"{name}": {value}' for name, value in fields) + "}\n"
        else:
            rows = [("accesses", str(accesses)), ("hits", str(hits)), ("misses", str(misses)),
                    ("miss rate", ratio(misses, accesses, 6)),
                    ("loads", str(loads)), ("load misses", str(load_misses)),
                    ("load miss rate", ratio(load_misses, loads, 6)),
                    ("stores", str(stores)), ("store misses", str(store_misses)),
                    ("store miss rate", ratio(store_misses, stores, 6))]
            text = (f"cachesim: {self.cache_size} bytes, {self.ways}-way, {line}-byte lines, LRU, write-allocate\n\n"
                    + "".join(f"  {name:<17}{value}\n" for name, value in rows))
        with self.session.open_output(path) as out:
            out.write(text)

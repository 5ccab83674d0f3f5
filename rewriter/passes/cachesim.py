"""cachesim: a data cache simulated on every load and store (the ATOM cache example).

profile_start sets the geometry, cache_sim runs once per memory access (one per
register of LDM/STM/PUSH/POP/LDRD) unless the access is to one of its set's two (option
kept) most recently used lines (tested inline, counted in mru_hits), profile_end writes hits,
misses and miss rates for loads and stores. LRU replacement, write-allocate, one line
per access.
"""

from __future__ import annotations

from ..api import Arg, Option, Options, Point, RepeatFilter, Tool
from ..ir.model import Binary
from .common import FORMATS, parse_size, power_of_two


def _check_size(v: int) -> str | None:
    if not 64 <= v <= 64 << 20:
        return "must be between 64 bytes and 64 MiB"
    return power_of_two(v)


def tags_length(size: int, assoc: int, line: int, depth: int) -> int:
    """Words of cachesim.c's ``tags`` array: per set a row of the ways the program does not
    keep (``assoc - depth``), at least 8 (the host's vector fast path); 1 when there are none."""
    held = assoc - depth
    return size // (assoc * line) * max(held, 8) if held else 1


class CacheSim(Tool):
    name = "cachesim"
    description = "simulate a data cache (LRU) on every load and store; hits, misses, miss rates"
    options = [
        Option("size", 16 << 10, "cache size in bytes (k/m suffixes)", parse_size, _check_size),
        Option("assoc", 8, "associativity (ways per set)", int,
               lambda v: power_of_two(v) or (None if v <= 64 else "must be at most 64")),
        Option("line", 64, "line size in bytes", parse_size,
               lambda v: power_of_two(v) or (None if 4 <= v <= 4096 else "must be between 4 and 4096")),
        Option("kept", 2, "most recently used lines per set the program tests inline (1 or 2): "
               "2 runs faster, 1 makes a smaller image", int, lambda v: None if v in (1, 2) else "must be 1 or 2"),
    ]

    def instrument(self, binary: Binary, opts: Options) -> None:
        size, assoc, line = opts.size, opts.assoc, opts.line
        if size < assoc * line:
            from ..errors import AnvilError
            raise AnvilError(f"cachesim: size {size} is smaller than assoc*line = {assoc * line}")
        # The instrumented code keeps each set's two most recently used lines (one when
        # direct-mapped or asked to) in the slot of a repeat filter: an access to either is
        # a hit that at most swaps the two, tested inline and only counted (loads in
        # mru_hits[0], stores in [1]). cache_sim sees the other accesses, with the line that
        # left the slot, and keeps the set's other ways ("tags", MRU first).
        depth = min(opts.kept, assoc)
        # A tag is a line number + 1: as wide as the program's addresses (anvil_addr).
        self.array("tags", tags_length(size, assoc, line, depth), f"uint{8 * binary.address_bytes}_t")
        self.array("mru_hits", 2)
        recent = RepeatFilter(shift=line.bit_length() - 1, slots=size // (assoc * line), counter="mru_hits",
                              count_by=1, depth=depth,
                              key_suffices=True)
        start = self.prototype("profile_start", Arg.CONST, Arg.CONST, Arg.CONST, Arg.CONST)
        access = self.prototype("cache_sim", Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT, filter=recent,
                                deferred=True)
        finish = self.prototype("profile_end", Arg.STRING, Arg.CONST)
        binary.call(Point.BEFORE, start, size, assoc, line, depth)
        for proc in binary.select(opts.only, opts.skip):
            for block in proc.blocks:
                for ins in block.instructions:
                    if ins.accesses:
                        ins.call(Point.BEFORE, access, Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT)
        binary.call(Point.AFTER, finish, opts.out, FORMATS[opts.format])

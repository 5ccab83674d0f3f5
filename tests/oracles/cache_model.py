"""Reference data-cache model in plain Python, for checking cache-simulation tools.

A set-associative cache with true LRU replacement in every set::

    sets  = size // (assoc * line)
    set   = (addr // line) % sets
    tag   = addr // line // sets

Every access touches exactly one line, the line of its start address (an
access that straddles a line boundary is *not* split).  Stores are
write-allocate: a store miss brings the line in, like QEMU's cache plugin;
there is no write-back traffic model (dirty state is irrelevant to hit/miss
counts).  The model is deliberately simple and slow: it is an oracle, not a
tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReferenceCache", "simulate"]


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass
class ReferenceCache:
    """A ``size``-byte, ``assoc``-way set-associative cache with ``line``-byte lines and LRU."""

    size: int
    assoc: int
    line: int
    load_hits: int = field(default=0, init=False)
    load_misses: int = field(default=0, init=False)
    store_hits: int = field(default=0, init=False)
    store_misses: int = field(default=0, init=False)
    #: Per set: resident tags, least recently used first.
    _sets: list[list[int]] = field(init=False, repr=False)
    _nsets: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("size", "assoc", "line"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not _is_power_of_two(self.line):
            raise ValueError(f"line size must be a power of two, got {self.line}")
        if self.size % (self.assoc * self.line):
            raise ValueError(
                f"size {self.size} is not a multiple of assoc * line = {self.assoc * self.line}"
            )
        nsets = self.size // (self.assoc * self.line)
        if not _is_power_of_two(nsets):
            raise ValueError(f"number of sets must be a power of two, got {nsets}")
        self._nsets = nsets
        self._sets = [[] for _ in range(nsets)]

    @property
    def sets(self) -> int:
        """Number of sets."""
        return self._nsets

    def index_tag(self, addr: int) -> tuple[int, int]:
        """Return ``(set index, tag)`` of the line holding ``addr``."""
        block = addr // self.line
        return block % self._nsets, block // self._nsets

    def access(self, addr: int, is_store: bool = False) -> bool:
        """Access the line of ``addr``; return True on a hit.  Misses allocate (also for stores)."""
        if addr < 0:
            raise ValueError(f"negative address {addr}")
        index, tag = self.index_tag(addr)
        ways = self._sets[index]
        if tag in ways:
            ways.remove(tag)
            ways.append(tag)  # most recently used at the end
            hit = True
        else:
            if len(ways) == self.assoc:
                del ways[0]  # evict the least recently used
            ways.append(tag)
            hit = False
        if is_store:
            if hit:
                self.store_hits += 1
            else:
                self.store_misses += 1
        elif hit:
            self.load_hits += 1
        else:
            self.load_misses += 1
        return hit

    def contains(self, addr: int) -> bool:
        """Return True if the line of ``addr`` is resident (does not update LRU)."""
        index, tag = self.index_tag(addr)
        return tag in self._sets[index]

    @property
    def loads(self) -> int:
        """Number of loads seen."""
        return self.load_hits + self.load_misses

    @property
    def stores(self) -> int:
        """Number of stores seen."""
        return self.store_hits + self.store_misses

    @property
    def accesses(self) -> int:
        """Number of accesses seen."""
        return self.loads + self.stores

    @property
    def misses(self) -> int:
        """Number of misses (loads and stores)."""
        return self.load_misses + self.store_misses

    @property
    def miss_rate(self) -> float:
        """Misses per access (0.0 before any access)."""
        return self.misses / self.accesses if self.accesses else 0.0

    def stats(self) -> dict[str, int]:
        """Return the counters in the form :func:`simulate` returns."""
        return {
            "loads": self.loads,
            "load_misses": self.load_misses,
            "stores": self.stores,
            "store_misses": self.store_misses,
            "accesses": self.accesses,
            "misses": self.misses,
        }


def simulate(accesses: Iterable[tuple[Any, ...]], size: int, assoc: int, line: int) -> dict[str, int]:
    """Run an access stream through a fresh :class:`ReferenceCache`; return its counters.

    Each access is ``(kind, address, ...)`` with kind ``'L'``/``'S'`` (as produced by
    :mod:`tests.oracles.unicorn_trace`; anything after the address, such as the
    size, is ignored) or ``(address, is_store)`` with a bool.  Returns a dict with
    keys ``loads``, ``load_misses``, ``stores``, ``store_misses``, ``accesses``, ``misses``.
    """
    cache = ReferenceCache(size, assoc, line)
    access = cache.access
    for item in accesses:
        first = item[0]
        if isinstance(first, str):
            if first not in ("L", "S"):
                raise ValueError(f"unknown access kind {first!r} in {item!r}")
            access(item[1], first == "S")
        else:
            access(first, bool(item[1]))
    return cache.stats()

"""The instrumented program's repeat filter (api.RepeatFilter, emitted by arch/arm/hooks.py and repeat_filter.py)
in plain Python: which accesses become cachesim records, with which ``left``, and how many
hits the program only counts. The ReHost dispatch benchmark generates its record streams
with it; the host-library test feeds its records to the C dispatcher.
"""

from __future__ import annotations

import sys
from array import array
from itertools import islice


class RepeatFilterModel:
    """The instrumented program's repeat filter for one cache geometry: accesses in, records out.

    One slot per cache set holds the set's ``depth`` (1 or 2: cachesim's kept) most recently
    used lines, most recent first, as keys: the line's last byte address, 0 for none (api.
    RepeatFilter, rewriter/arch/arm/hooks.py). An access to a line in its set's slot is a hit
    the program counts (``hits``: loads, stores; the ``mru_hits`` array) and the line
    becomes the most recent. Any other access is a record (site id, address, left): its
    line becomes the most recent, the others move down, and ``left`` is the key that fell
    out (0 when that place was empty). Records wait in ``ids``/``addrs``/``lefts`` until
    ``take`` packs them.
    """

    def __init__(self, geometry: tuple[int, int, int], stores: bytes, depth: int) -> None:
        size, assoc, line = geometry
        self.geometry = geometry
        self.shift = line.bit_length() - 1
        self.mask = size // (assoc * line) - 1
        self.depth = depth
        self.recent = [0] * (self.mask + 1)  # the slots: most recent key ...
        self.older = [0] * (self.mask + 1)   # ... and the one before (depth 2)
        self.stores = stores
        self.hits = [0, 0]
        self.accesses = self.records = 0
        self.ids, self.addrs, self.lefts = array("I"), array("I"), array("I")

    def feed(self, ids: array, addrs: array, start: int, want: int) -> int:
        """Filter the accesses from index ``start`` until ``want`` records have come out or the
        accesses end; the index after the last access used."""
        low = (1 << self.shift) - 1
        shift, mask, recent, older = self.shift, self.mask, self.recent, self.older
        out_ids, out_addrs, out_lefts = self.ids.append, self.addrs.append, self.lefts.append
        stop, n = len(addrs), 0
        if want <= 0:
            return start
        two = self.depth == 2
        for i, addr in enumerate(islice(addrs, start, None), start):
            key = addr | low
            s = (addr >> shift) & mask
            first = recent[s]
            if key == first:
                continue
            recent[s] = key
            if two:  # a hit on the older key swaps the two, a new key pushes the older one out
                left = older[s]
                older[s] = first
                if key == left:
                    continue
            else:
                left = first
            out_ids(ids[i])
            out_addrs(addr)
            out_lefts(left)
            n += 1
            if n == want:
                stop = i + 1
                break
        # Hits by kind: the accesses used minus the records, loads and stores counted apart.
        flags = self.stores.__getitem__
        stores = sum(map(flags, ids[start:stop]))
        record_stores = sum(map(flags, self.ids[len(self.ids) - n:])) if n else 0
        self.hits[0] += (stop - start - stores) - (n - record_stores)
        self.hits[1] += stores - record_stores
        self.accesses += stop - start
        self.records += n
        return stop

    def pending(self) -> int:
        return len(self.ids)

    def take(self, nrecords: int) -> bytes:
        """The first ``nrecords`` records waiting, as stream bytes; they are no longer waiting."""
        data = interleave(self.ids[:nrecords], self.addrs[:nrecords], self.lefts[:nrecords])
        del self.ids[:nrecords], self.addrs[:nrecords], self.lefts[:nrecords]
        return data


def interleave(ids: array, addrs: array, lefts: array) -> bytes:
    """Records (site id, address, left) as stream bytes (little-endian words)."""
    words = array("I", bytes(4 * 3 * len(ids)))
    words[0::3] = ids
    words[1::3] = addrs
    words[2::3] = lefts
    if sys.byteorder != "little":
        words.byteswap()
    return words.tobytes()

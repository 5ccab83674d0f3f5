"""The x86-64 copies' code being built: bytes at a link address, with displacements filled
in once every address is known.

``arch/code.py``'s ``Code`` keeps a closure for every fixup and a label (a tuple key in a
dict) for every copied instruction: about 600 bytes for each direct branch or RIP-relative
operand and 170 for each instruction, a third of the memory a large program's rewrite
took (decision 0118). Here every fixup of the x86-64 copies is the same thing, a 32-bit
displacement counted from the end of its instruction, so a fixup is a row of a few arrays
(where its field is, how far its instruction goes on, what it reaches); the bytes go into
one ``bytearray`` as they are emitted, the fields zero until ``finish``; where each original
instruction's copy starts is a pair of arrays (original address, offset), searched by
bisection.

What a displacement reaches, known only at the end:

- a link-time address (``rel32``): an original address, which never moves;
- the copy of the instruction at an original address if it was copied, else that address
  (``rel32_copy``: branches to copied code or to code run in place);
- ``lookup(key) + addend`` (``rel32_lookup``): a symbol of the analysis library linked
  after the copies, a label.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Callable, Hashable

from ...errors import RangeError
from ..code import Fixup, Resolver

_ADDRESS, _COPY, _LOOKUP = 0, 1, 2
_DISPLACEMENT = struct.Struct("<i")


class Code64:
    """Bytes being built at link address ``base`` (``rebase`` moves them)."""

    def __init__(self, base: int = 0) -> None:
        self.base = base
        self._bytes = bytearray()
        # Labels other than the copies' (a loop's top and end): link addresses.
        self.labels: dict[Hashable, int] = {}
        # The copies: original address -> offset of its copy from base, in the order copied.
        self._originals = array("q")
        self._offsets = array("q")
        self._sorted = True  # _originals ascending (procedures are copied in address order)
        # The displacements: offset of the 4-byte field, bytes from there to the
        # instruction's end, what it reaches (_ADDRESS, _COPY, _LOOKUP), the address or
        # the addend, and for _LOOKUP the index of (lookup, key) in _lookups.
        self._fields = array("q")
        self._rests = array("B")
        self._kinds = array("B")
        self._values = array("q")
        self._keys = array("i")
        self._lookups: list[tuple[Callable[[Hashable], int], Hashable]] = []
        self._lookup_index: dict[tuple[Callable[[Hashable], int], Hashable], int] = {}
        # Other fixups, rare: (offset, size, fixup) as Code.later's.
        self._later: list[tuple[int, int, Fixup]] = []

    @property
    def size(self) -> int:
        """Bytes emitted so far."""
        return len(self._bytes)

    def here(self) -> int:
        """Link address of the next byte."""
        return self.base + len(self._bytes)

    def emit(self, data: bytes) -> None:
        self._bytes += data

    def later(self, size: int, fixup: Fixup) -> None:
        """Reserve ``size`` bytes to be filled by ``fixup(address, resolve)`` at the end."""
        self._later.append((len(self._bytes), size, fixup))
        self._bytes += bytes(size)

    def label(self, key: Hashable) -> None:
        if key not in self.labels:
            self.labels[key] = self.base + len(self._bytes)

    def copy_label(self, address: int) -> None:
        """The copy of the original instruction at ``address`` starts here (``copy_of``
        gives the first, if it is copied twice)."""
        originals = self._originals
        if originals and address <= originals[-1]:
            self._sorted = False  # sorted when first looked up: stable, the first copy first
        originals.append(address)
        self._offsets.append(len(self._bytes))

    def copy_of(self, address: int) -> int | None:
        """The link address of the copy of the original instruction at ``address``, or None."""
        if not self._sorted:
            self._sort()
        originals = self._originals
        i = bisect.bisect_left(originals, address)
        if i < len(originals) and originals[i] == address:
            return self.base + self._offsets[i]
        return None

    def _sort(self) -> None:
        order = sorted(range(len(self._originals)), key=self._originals.__getitem__)
        self._originals = array("q", [self._originals[i] for i in order])
        self._offsets = array("q", [self._offsets[i] for i in order])
        self._sorted = True

    def _field(self, head: bytes, tail: bytes, kind: int, value: int, key: int = -1) -> None:
        data = self._bytes
        data += head
        self._fields.append(len(data))
        self._rests.append(4 + len(tail))
        self._kinds.append(kind)
        self._values.append(value)
        self._keys.append(key)
        data += b"\0\0\0\0"
        data += tail

    def rel32(self, head: bytes, tail: bytes, target: int) -> None:
        """The instruction ``head``, a 32-bit displacement reaching link address ``target``
        from the instruction's end, ``tail``."""
        if not -(1 << 63) <= target < 1 << 63:
            raise RangeError(f"{self.here():#x} cannot reach {target:#x} with a 32-bit displacement")
        self._field(head, tail, _ADDRESS, target)

    def rel32_copy(self, head: bytes, tail: bytes, address: int) -> None:
        """As ``rel32``, reaching the copy of the original instruction at ``address`` if it
        has one at the end, else ``address``."""
        self._field(head, tail, _COPY, address)

    def rel32_lookup(self, head: bytes, tail: bytes, lookup: Callable[[Hashable], int], key: Hashable,
                     addend: int = 0) -> None:
        """As ``rel32``, reaching ``lookup(key) + addend`` as known at the end (a symbol of
        what is linked after the code, a label)."""
        pair = (lookup, key)
        index = self._lookup_index.get(pair)
        if index is None:
            index = self._lookup_index[pair] = len(self._lookups)
            self._lookups.append(pair)
        self._field(head, tail, _LOOKUP, addend, index)

    def rebase(self, base: int) -> None:
        """Move the code to link address ``base`` (nothing in it depends on the base but
        its labels and the fixups' addresses)."""
        delta = base - self.base
        self.base = base
        labels = self.labels
        labels.update(zip(list(labels), [at + delta for at in labels.values()]))

    def finish(self, resolve: Resolver) -> bytearray:
        """Fill in the displacements and the other fixups; the finished bytes (the code's
        own buffer, not a copy: a large program's region is a hundred MB)."""
        data, base = self._bytes, self.base
        copy_of = self.copy_of
        looked_up = [lookup(key) for lookup, key in self._lookups]
        pack = _DISPLACEMENT.pack_into
        for at, rest, kind, value, key in zip(self._fields, self._rests, self._kinds, self._values, self._keys):
            if kind == _COPY:
                copy = copy_of(value)
                target = value if copy is None else copy
            elif kind == _LOOKUP:
                target = looked_up[key] + value
            else:
                target = value
            end = base + at + rest
            delta = target - end
            if not -(1 << 31) <= delta < 1 << 31:
                raise RangeError(f"{end:#x} cannot reach {target:#x} with a 32-bit displacement")
            pack(data, at, delta)
        for offset, size, fixup in self._later:
            filled = fixup(base + offset, resolve)
            if len(filled) != size:
                raise AssertionError(f"fixup at {base + offset:#x} produced {len(filled)} bytes, reserved {size}")
            data[offset:offset + size] = filled
        return data

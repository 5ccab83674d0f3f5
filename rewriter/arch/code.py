"""A run of generated code at a fixed link address, with labels and late fixups.

Every generated instruction has a size known when it is emitted, so the layout is
final as soon as all code is emitted; fixups (branches, PC-relative address loads)
are encoded afterwards, once every label has an address.

Branches have a reach (T32 B.W and BL +-16 MiB, A32 +-32 MiB) and a program's copy has
none (decision 0041): a branch emitted with ``branch`` that turns out not to reach its
target goes instead to a *veneer* (a jump of any length, as linkers make) in an *island*
near it. Islands come after a procedure once ISLAND_EVERY bytes have been emitted since
the last one, and at the end of large code; each holds a veneer for every target that a
branch of its stretch of code may not reach.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable

from ..errors import RangeError

Resolver = Callable[[Hashable], int]
Fixup = Callable[[int, Resolver], bytes]
# (address of the branch, destination) -> its bytes; raises RangeError where it cannot reach.
BranchEncoder = Callable[[int, int], bytes]
# Writes a veneer at the code's end: (code, target, whether the target is Thumb code).
VeneerWriter = Callable[["Code", "Hashable | int", bool], None]

# Every stretch of code a branch is emitted in ends with an island within this many bytes
# (plus the last procedure's size) of the branch: well inside the shortest reach, T32's 16 MiB.
ISLAND_EVERY = 8 << 20
# A branch to a label already defined this close needs no veneer.
NEAR = 15 << 20


class Code:
    """Bytes being built at link address ``base``.

    ``pic``: the image may be loaded at another address (PIE), so addresses must be
    computed from the PC; without it the link address is the run-time address.
    ``ge``: the core has the APSR.GE bits (all but ARMv7-M without the DSP extension),
    so flag saves restore them too.
    """

    def __init__(self, base: int, pic: bool = True, ge: bool = True) -> None:
        self.base = base
        self.pic = pic
        self.ge = ge
        self.size = 0
        # Bytes, or (offset from base, size, fixup) for bytes filled in at the end, or a
        # branch (its row, encoded at the end too).
        self._chunks: list[bytes | tuple[int, int, Fixup] | _Branch] = []
        self.labels: dict[Hashable, int] = {}
        self._alignment = 1  # every alignment asked for divides it (see rebase)
        # Branches since the last island.
        self._unsure: list[_Branch] = []
        self._islands = 0
        self._stretch_start = 0  # offset where the code since the last island starts

    def here(self) -> int:
        """Link address of the next byte."""
        return self.base + self.size

    # emit, later and label run for every instruction and hook the rewriter writes: they
    # compute the address inline rather than through here().
    def emit(self, data: bytes) -> None:
        self._chunks.append(data)
        self.size += len(data)

    def later(self, size: int, fixup: Fixup) -> None:
        """Reserve ``size`` bytes to be filled by ``fixup(address, resolve)`` at the end."""
        self._chunks.append((self.size, size, fixup))
        self.size += size

    def branch(self, target: Hashable | int, encode: BranchEncoder, target_thumb: bool,
               prefer: Hashable | None = None) -> None:
        """A 4-byte branch or call to ``target`` (a label, or a link-time address), encoded
        by ``encode`` at the end; through a veneer of the next island where it cannot reach.
        ``prefer``: a label to go to instead when it is defined by then (a nearer copy)."""
        row = _Branch(self.size, target, encode, target_thumb, prefer)
        self._unsure.append(row)
        self._chunks.append(row)
        self.size += 4

    def island(self, write_veneer: VeneerWriter, last: bool = False) -> None:
        """Veneers for the branches since the last island that may not reach their targets,
        if ISLAND_EVERY bytes have been emitted since (``last``: at the end of the code, if
        it is large). Only where nothing falls through to here."""
        if not self._unsure:
            return
        since = self.size - self._stretch_start
        if since < ISLAND_EVERY and not (last and (self._islands or self.size >= ISLAND_EVERY // 2)):
            return
        labels, base = self.labels, self.base
        wanted: dict[tuple[Hashable | int, bool], list[_Branch]] = {}
        for row in self._unsure:
            target = row.target
            at = labels.get(target) if target.__class__ is not int else None
            if at is not None and abs(at - (base + row.offset)) < NEAR:
                continue
            wanted.setdefault((target, row.target_thumb), []).append(row)
        self._unsure = []
        self._stretch_start = self.size
        self._islands += 1
        for (target, thumb), rows in wanted.items():
            label = ("reach", self._islands, target, thumb)
            self.align(4)
            self.label(label)
            write_veneer(self, target, thumb)
            for row in rows:
                row.veneer = label

    def label(self, key: Hashable) -> None:
        if key not in self.labels:
            self.labels[key] = self.base + self.size

    def rebase(self, base: int) -> None:
        """Move the code to link address ``base``: its labels and the addresses its fixups
        will be given follow.

        What was emitted depends on the base only through those and through alignment,
        which a move by a multiple of every ``align`` keeps; so code can be emitted
        before its address is known.
        """
        delta = base - self.base
        if delta % self._alignment:
            raise AssertionError(f"rebase from {self.base:#x} to {base:#x} would change the alignment")
        self.base = base
        labels = self.labels  # in place (others may hold it), in C loops: a label per instruction
        labels.update(zip(list(labels), [at + delta for at in labels.values()]))

    @property
    def alignment(self) -> int:
        """What every base the code is moved to must be a multiple of."""
        return self._alignment

    def keep_aligned(self, n: int) -> None:
        """The code's layout depends on its base modulo ``n``: every later base must leave
        that unchanged (``rebase`` moves by multiples of ``n``)."""
        self._alignment = math.lcm(self._alignment, n)

    def align(self, n: int, filler: bytes = b"\0") -> None:
        self._alignment = math.lcm(self._alignment, n)
        pad = (-self.here()) % n
        if pad:
            self.emit((filler * pad)[:pad])

    def mark(self) -> tuple[int, int, int, int, int]:
        """The state to come back to with ``rollback`` (within the code since the last island)."""
        return len(self._chunks), self.size, len(self.labels), self._alignment, len(self._unsure)

    def rollback(self, mark: tuple[int, int, int, int, int]) -> None:
        """Forget what was emitted, labelled and asked of the alignment since ``mark``.

        Labels are only ever added (``label`` keeps the first address), and a dict keeps
        insertion order: those since the mark are the last ones.
        """
        chunks, self.size, labels, self._alignment, unsure = mark
        del self._chunks[chunks:]
        del self._unsure[unsure:]
        for key in list(itertools.islice(reversed(self.labels), len(self.labels) - labels)):
            del self.labels[key]

    def finish(self, resolve: Resolver) -> bytes:
        """Encode the fixups and return the finished bytes."""
        parts: list[bytes] = []
        append = parts.append
        base, labels = self.base, self.labels
        for chunk in self._chunks:
            if chunk.__class__ is _Branch:
                data = chunk.encoded(base + chunk.offset, labels, resolve)
                if len(data) != 4:
                    raise AssertionError(f"branch at {base + chunk.offset:#x} encoded as {len(data)} bytes")
                append(data)
                continue
            if chunk.__class__ is not tuple:
                append(chunk)
                continue
            offset, size, fixup = chunk
            addr = base + offset
            data = fixup(addr, resolve)
            if len(data) != size:
                raise AssertionError(f"fixup at {addr:#x} produced {len(data)} bytes, reserved {size}")
            append(data)
        return b"".join(parts)


class _Branch:
    """A branch or call emitted by ``Code.branch``, encoded at the end: a row of fields, not
    a closure (a closure and its cells took about five times the memory, and a large
    program's code holds one per branch until it is encoded)."""

    __slots__ = ("offset", "target", "encode", "target_thumb", "prefer", "veneer")

    def __init__(self, offset: int, target: Hashable | int, encode: BranchEncoder, target_thumb: bool,
                 prefer: Hashable | None) -> None:
        self.offset = offset  # from the code's base
        self.target = target
        self.encode = encode
        self.target_thumb = target_thumb
        self.prefer = prefer
        self.veneer: Hashable | None = None  # the label of its veneer in an island, if it was given one

    def encoded(self, at: int, labels: dict[Hashable, int], resolve: Resolver) -> bytes:
        """Its bytes at ``at``: to ``prefer`` if ``labels`` has it, else to the target, else
        (out of reach) to its veneer."""
        prefer, encode, target = self.prefer, self.encode, self.target
        if prefer is not None and prefer in labels:
            return encode(at, labels[prefer])
        try:
            return encode(at, target if target.__class__ is int else resolve(target))
        except RangeError:
            if self.veneer is None:
                raise
            return encode(at, resolve(self.veneer))

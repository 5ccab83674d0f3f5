"""A run of generated code at a fixed link address, with labels and late fixups.

Every generated instruction has a size known when it is emitted, so the layout is
final as soon as all code is emitted; fixups (branches, PC-relative address loads)
are encoded afterwards, once every label has an address.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable

Resolver = Callable[[Hashable], int]
Fixup = Callable[[int, Resolver], bytes]


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
        # Bytes, or (offset from base, size, fixup) for bytes filled in at the end.
        self._chunks: list[bytes | tuple[int, int, Fixup]] = []
        self.labels: dict[Hashable, int] = {}
        self._alignment = 1  # every alignment asked for divides it (see rebase)

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
        """The code's layout depends on its base modulo ``n`` (now a multiple of ``n``):
        every later base must be one too."""
        if self.base % n:
            raise AssertionError(f"code at {self.base:#x} is not aligned to {n}")
        self._alignment = math.lcm(self._alignment, n)

    def align(self, n: int, filler: bytes = b"\0") -> None:
        self._alignment = math.lcm(self._alignment, n)
        pad = (-self.here()) % n
        if pad:
            self.emit((filler * pad)[:pad])

    def mark(self) -> tuple[int, int, int, int]:
        """The state to come back to with ``rollback``."""
        return len(self._chunks), self.size, len(self.labels), self._alignment

    def rollback(self, mark: tuple[int, int, int, int]) -> None:
        """Forget what was emitted, labelled and asked of the alignment since ``mark``.

        Labels are only ever added (``label`` keeps the first address), and a dict keeps
        insertion order: those since the mark are the last ones.
        """
        chunks, self.size, labels, self._alignment = mark
        del self._chunks[chunks:]
        for key in list(itertools.islice(reversed(self.labels), len(self.labels) - labels)):
            del self.labels[key]

    def finish(self, resolve: Resolver) -> bytes:
        """Encode the fixups and return the finished bytes."""
        parts: list[bytes] = []
        append = parts.append
        base = self.base
        for chunk in self._chunks:
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

"""A run of generated code at a fixed link address, with labels and late fixups.

Every generated instruction has a size known when it is emitted, so the layout is
final as soon as all code is emitted; fixups (branches, PC-relative address loads)
are encoded afterwards, once every label has an address.
"""

from __future__ import annotations

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
        self._chunks: list[bytes | tuple[int, int, Fixup]] = []
        self.labels: dict[Hashable, int] = {}

    def here(self) -> int:
        """Link address of the next byte."""
        return self.base + self.size

    def emit(self, data: bytes) -> None:
        self._chunks.append(data)
        self.size += len(data)

    def later(self, size: int, fixup: Fixup) -> None:
        """Reserve ``size`` bytes to be filled by ``fixup(address, resolve)`` at the end."""
        self._chunks.append((self.here(), size, fixup))
        self.size += size

    def label(self, key: Hashable) -> None:
        self.labels.setdefault(key, self.here())

    def align(self, n: int, filler: bytes = b"\0") -> None:
        pad = (-self.here()) % n
        if pad:
            self.emit((filler * pad)[:pad])

    def finish(self, resolve: Resolver) -> bytes:
        """Encode the fixups and return the finished bytes."""
        out = bytearray()
        for chunk in self._chunks:
            if isinstance(chunk, bytes):
                out += chunk
            else:
                addr, size, fixup = chunk
                data = fixup(addr, resolve)
                if len(data) != size:
                    raise AssertionError(f"fixup at {addr:#x} produced {len(data)} bytes, reserved {size}")
                out += data
        return bytes(out)

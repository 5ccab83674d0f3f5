"""The later part of a large program's code, relocated by a forked child on the second core.

Relocation is the emitter's longest phase, and each procedure's copy depends on the
others only through labels (where a branch or call to another procedure goes). So a
child made with ``fork`` (it sees the IR and the relocation context as they are)
emits the later procedures, with their veneers, stubs and tables, at address 0, while
this process emits the first ones. The exchange is three messages over two pipes:

1. child -> parent: its part's size, alignment and the offsets of its instructions'
   copies (``("ins", address)`` labels), which the parent's code and entry patches need;
2. parent -> child: where its part ends up and the addresses of every other
   instruction copy and library symbol, once the library is linked;
3. child -> parent: its part's bytes, encoded with those (or the error encoding raised).

The parent places the part after its own code, aligned as the child's code requires
(page-local routines), and fills it in with the bytes of message 3. A child that
fails to emit its part (an instruction it cannot relocate) makes the parent emit the
whole program itself, as it would without a child; errors are those of doing so.
A fork is made only where ir/fork_split.py allows it, before any other thread starts.

Where it does not (one core, ``--jobs 1``), ``LocalPart`` emits the same later part in
this process and lays it out and encodes it the same way, from the same labels: the
image does not depend on how many processes made it (decision 0026).
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
from collections.abc import Callable
from typing import BinaryIO

from ..arch.arm.relocate import ins_label, instruction_copies
from ..arch.code import Code, Resolver
from ..errors import AnvilError
from ..ir.fork_split import can_fork

# Instructions below which one process relocates everything: forking and the label
# exchange cost about a tenth of a second.
MIN_INSTRUCTIONS = 40000

# (labels, symbols[, more labels whose instruction copies count where the first lack one]) -> resolve
ResolverFor = Callable[..., Resolver]


class PartFailed(AnvilError):
    """The child could not emit its part: the parent emits everything itself."""


class _Part:
    """The later procedures' code at the end of this process's code: where it goes, the
    labels of its instruction copies there, and its bytes, encoded once the layout is final."""

    placed: bool = False  # its part is in the parent's code (place)
    _offset: int = 0

    def place(self, code: Code) -> None:
        """Reserve the part at the end of ``code`` (aligned as it needs) and label its
        instructions there; raises an AnvilError (PartFailed) if there is no part to give."""
        size, alignment, offsets = self._layout()
        code.align(alignment)
        self._offset = code.size
        at = code.base + code.size
        labels = code.labels
        for address, offset in offsets.items():
            labels[ins_label(address)] = at + offset
        code.later(size, self._bytes)
        self.placed = True

    def _layout(self) -> tuple[int, int, dict[int, int]]:
        """The part's size, alignment and the offsets of its instructions' copies."""
        raise NotImplementedError

    def _bytes(self, at: int, resolve: Resolver) -> bytes:
        """The fixup standing for the part: its bytes."""
        raise NotImplementedError


class LocalPart(_Part):
    """The later procedures emitted and encoded by this process, as LaterPart's child does."""

    def __init__(self, emit: Callable[[], Code], resolver_for: ResolverFor) -> None:
        self._emit = emit
        self._resolver_for = resolver_for
        self._code: Code | None = None
        self._encoding: tuple[int, dict[int, int], dict[str, int]] | None = None

    def _layout(self) -> tuple[int, int, dict[int, int]]:
        self._code = self._emit()
        return self._code.size, self._code.alignment, instruction_copies(self._code.labels)

    def finish(self, code: Code, symbols: dict[str, int]) -> None:
        """Keep what encoding the part needs (``code`` is final: rebased). The other
        instruction copies are those of ``code``'s labels, taken as they are when the part
        is encoded (no addresses sent anywhere: no dictionary of them by address)."""
        self._encoding = (code.base + self._offset, code.labels, symbols)

    def _bytes(self, at: int, resolve: Resolver) -> bytes:
        assert self._code is not None and self._encoding is not None, "place and finish come first"
        base, labels, symbols = self._encoding
        code = self._code
        code.rebase(base)
        # Its own labels first, then the instruction copies among the others, where they are
        # (_encode's dict of both would copy a label per instruction of the program).
        return code.finish(self._resolver_for(code.labels, symbols, labels))

    def close(self) -> None:
        """Nothing runs elsewhere (LaterPart's interface)."""


class LaterPart(_Part):
    """A forked child emitting the later procedures' code (module docstring); the parent's handle."""

    def __init__(self, pid: int, to_child: BinaryIO, from_child: BinaryIO) -> None:
        self._pid: int | None = pid
        self._to_child = to_child
        self._from_child = from_child

    @classmethod
    def fork(cls, emit: Callable[[], Code], resolver_for: ResolverFor) -> LaterPart | None:
        """A child running ``emit()`` for its part, then encoding it with ``resolver_for``;
        None where forking is not safe or useful (then nothing was started)."""
        if not can_fork():
            return None
        up_read, up_write = os.pipe()      # child -> parent
        down_read, down_write = os.pipe()  # parent -> child
        pid = os.fork()
        if pid == 0:  # the child: never returns, whatever happens
            status = 1
            try:
                os.close(up_read)
                os.close(down_write)
                with open(up_write, "wb") as out, open(down_read, "rb") as inp:
                    _child(emit, resolver_for, out, inp)
                status = 0
            finally:
                os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
        os.close(up_write)
        os.close(down_read)
        return cls(pid, open(down_write, "wb"), open(up_read, "rb"))

    def _request(self, code: Code, symbols: dict[str, int]) -> tuple[int, dict[int, int], dict[str, int]]:
        """What encoding the part needs from this process's final ``code``: the part's address,
        the addresses of every instruction copy and the library's symbols."""
        return code.base + self._offset, instruction_copies(code.labels), symbols

    def _layout(self) -> tuple[int, int, dict[int, int]]:
        got = _receive(self._from_child)
        if got is None:
            self.close()
            raise PartFailed("the relocating child process emitted no code")
        return got

    def finish(self, code: Code, symbols: dict[str, int]) -> None:
        """Send the child its part's address and the labels and symbols it refers to, so that it
        encodes its part while this process encodes the rest (``code`` is final: rebased)."""
        _send(self._to_child, self._request(code, symbols))

    def _bytes(self, at: int, resolve: Resolver) -> bytes:
        got = _receive(self._from_child)
        self.close()
        if got is None:
            raise AnvilError("internal error: the relocating child process failed")
        kind, value = got
        if kind == "error":
            raise AnvilError(value)
        return value

    def close(self) -> None:
        """Stop the child if it still runs and reap it (idempotent)."""
        if self._pid is None:
            return
        for stream in (self._to_child, self._from_child):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self._pid, 0)
        self._pid = None


def _child(emit: Callable[[], Code], resolver_for: ResolverFor, out: BinaryIO, inp: BinaryIO) -> None:
    try:
        code = emit()
    except AnvilError:  # the parent finds out by itself, doing everything
        _send(out, None)
        return
    _send(out, (code.size, code.alignment, instruction_copies(code.labels)))
    request = _receive(inp)
    if request is None:  # the parent gave up (its own error): nothing to encode
        return
    try:
        _send(out, ("bytes", encode_part(code, *request, resolver_for)))
    except AnvilError as error:
        _send(out, ("error", str(error)))


def encode_part(code: Code, base: int, copies: dict[int, int], symbols: dict[str, int],
                resolver_for: ResolverFor) -> bytes:
    """The later part's bytes at ``base``: its own labels, then the other instruction copies'
    addresses (``copies``) and the library's ``symbols``, are all it refers to."""
    return _encode(code, base, {ins_label(address): at for address, at in copies.items()}, symbols, resolver_for)


def _encode(code: Code, base: int, copies: dict, symbols: dict[str, int], resolver_for: ResolverFor) -> bytes:
    """The part's bytes at ``base``, given the other instruction copies' labels (``copies``,
    added to)."""
    code.rebase(base)
    copies.update(code.labels)  # its own labels first
    return code.finish(resolver_for(copies, symbols))


def _send(stream: BinaryIO, message: object) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def _receive(stream: BinaryIO) -> object:
    """The next message, or None at the end of the stream (the other side is gone)."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    (length,) = struct.unpack("<Q", head)
    payload = stream.read(length)
    return pickle.loads(payload) if len(payload) == length else None

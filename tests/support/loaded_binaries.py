"""Programs loaded once per test process and instrumented by every tool that asks.

Most tests instrument one program with several tools or modes (inscount, cachesim,
memtrace; InHost and ReHost), each through the CLI in this process. Loading (reading,
decoding, the descent) is a third to a half of a rewrite, and its result depends on the
file's bytes alone: ``anvil instrument`` loads the program and hands the IR to the
emitter, which first removes the hooks of any earlier tool (``Binary.clear_hooks``),
as the API's users do when they instrument one IR again (``instrument_ir``). So inside
``shared()``, the CLI's ``load_binary`` gives the IR it gave before for the same bytes,
its path set to the file now named. Only the CLI's own load is replaced, and only there:
a test that loads a program itself gets its own IR, which it may change.

The IRs of the last few programs are kept (``KEEP_INSTRUCTIONS`` in all, the newest
always), as the tests' own programs come in turns; small programs are loaded each time.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

#: Files smaller than this are loaded each time (their load takes milliseconds).
MIN_BYTES = 100_000
#: The kept IRs' instructions in all, past the newest: a 100k-instruction IR is about
#: 150 MB of the test process's memory.
KEEP_INSTRUCTIONS = 400_000

#: sha256 of the file -> (its IR, the IR's instructions), the newest last.
_kept: collections.OrderedDict[bytes, tuple[Any, int]] = collections.OrderedDict()


@contextlib.contextmanager
def shared() -> Iterator[None]:
    """While inside, the CLI's ``load_binary`` reuses the IR of a file with the same bytes."""
    from rewriter.ir import elf_loader

    load = elf_loader.load_binary
    elf_loader.load_binary = _loader(load)
    try:
        yield
    finally:
        elf_loader.load_binary = load


def _loader(load: Any) -> Any:
    def load_shared(path: str) -> Any:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return load(path)  # the loader's own message
        if len(data) < MIN_BYTES:
            return load(path)
        key = hashlib.sha256(data).digest()
        if key in _kept:
            _kept.move_to_end(key)
            binary = _kept[key][0]
        else:
            binary = load(path)  # an error is raised, not kept
            _kept[key] = (binary, binary.instruction_count())
            _trim()
        binary.path = path
        return binary

    return load_shared


def _trim() -> None:
    """Forget the oldest IRs past KEEP_INSTRUCTIONS (the newest stays whatever its size)."""
    newest, *older = reversed(_kept)
    total = _kept[newest][1]
    for key in older:
        total += _kept[key][1]
        if total > KEEP_INSTRUCTIONS:
            del _kept[key]

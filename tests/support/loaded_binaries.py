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

_kept: collections.OrderedDict[bytes, Any] = collections.OrderedDict()


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
        binary = _kept.get(key)
        if binary is None:
            binary = load(path)  # an error is raised, not kept
            _kept[key] = binary
            _trim()
        _kept.move_to_end(key)
        binary.path = path
        return binary

    return load_shared


def _trim() -> None:
    """Forget the oldest IRs past KEEP_INSTRUCTIONS (the newest stays whatever its size)."""
    total = 0
    for key in reversed(list(_kept)):
        total += _kept[key].instruction_count()
        if total > KEEP_INSTRUCTIONS and key != next(reversed(_kept)):
            del _kept[key]

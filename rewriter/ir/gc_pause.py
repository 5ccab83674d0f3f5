"""Run the rewriter's bulk phases with Python's cycle collector paused.

Loading a large binary builds hundreds of thousands of long-lived objects (the IR),
and emitting it allocates as many again; each allocation burst triggers collections
that walk the whole young IR while finding almost nothing to free (what the phases
drop is freed by reference counting). Measured on the Lua interpreter, this was a
third of the rewrite time. When the outermost phase ends, the objects it left are
handed to the oldest generation directly, where the long-lived IR would end up after
two more collections that walk all of it, and the collector is switched on again:
cycles made meanwhile are collected by the next full collection, as usual.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cycle collector inside the block; leave it as it was found afterwards
    (nested pauses, or a caller that disabled it, keep it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _to_oldest_generation()
            gc.enable()


def _to_oldest_generation() -> None:
    """Move every tracked object to the oldest generation without walking them.

    ``gc.unfreeze`` puts what ``gc.freeze`` set aside into the oldest generation: a
    constant-time move. Skipped when the process keeps frozen objects of its own (a
    server that froze its state before forking), which ``unfreeze`` would release.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def gc_paused(function: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run ``function`` inside ``paused_gc()``."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused_gc():
            return function(*args, **kwargs)

    return wrapper

"""A progress bar on the terminal while a long rewrite runs, and nothing anywhere else.

The rewriter's phases call ``phase`` when they start a loop of known length and
``advance`` as it goes; both cost next to nothing when no bar is shown. The command
line turns bars on (``shown``) only when stderr is a terminal, so captured output (a
test, a pipe, a CI log) never gets one. A bar appears only once the rewrite has run
``SHOW_AFTER`` seconds, so short rewrites print nothing more than before. Only the
process that turned bars on draws them: a forked child (fork_split, later_part)
inherits the bar but leaves it alone.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

SHOW_AFTER = 1.5  # seconds of rewriting before a bar is drawn

_state: dict = {"owner": None, "started": 0.0, "bar": None}


@contextlib.contextmanager
def shown(enabled: bool) -> Iterator[None]:
    """Within the block, phases draw a bar on stderr (when ``enabled``)."""
    if not enabled:
        yield
        return
    _state.update(owner=os.getpid(), started=time.monotonic(), bar=None)
    try:
        yield
    finally:
        end_phase()
        _state["owner"] = None


def phase(description: str, total: int, unit: str = "procedures") -> None:
    """A new phase of ``total`` steps (it replaces the bar of the one before)."""
    if _state["owner"] != os.getpid():
        return
    end_phase()
    from tqdm import tqdm  # only where a bar is drawn

    delay = max(0.0, SHOW_AFTER - (time.monotonic() - _state["started"]))
    _state["bar"] = tqdm(total=total, desc=f"anvil: {description}", unit=f" {unit}", unit_scale=unit == "bytes",
                         delay=delay, leave=False, file=sys.stderr, dynamic_ncols=True)


def advance(steps: int = 1) -> None:
    """``steps`` more of the current phase are done."""
    bar = _state["bar"]
    if bar is not None and _state["owner"] == os.getpid():
        bar.update(steps)


def end_phase() -> None:
    """Take the current phase's bar off the terminal (text may follow)."""
    bar = _state["bar"]
    if bar is not None:
        _state["bar"] = None
        bar.close()

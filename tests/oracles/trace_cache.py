"""QEMU traces kept for the rest of one test run: several tests trace the same build with
the same inputs (the x86-64 lift and count tests, the ARM tools' and unwinding tests), and a
single-stepped run under QEMU is among the suite's slowest steps.

A trace is kept under ``<sample cache>/traces/<run>/``, ``<run>`` being ``ANVIL_TEST_RUN``
(tests/conftest.py sets it once for a run and its xdist workers), so a later run never
reads one made with other libraries or another QEMU. Writes are atomic (a temporary file,
then a rename): two workers may make the same trace at once.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from tests.support import build_cache

T = TypeVar("T")

#: Runs' folders older than this are removed as a run starts (prune).
KEPT_SECONDS = 24 * 3600


def folder() -> Path:
    """Where traces are kept."""
    return build_cache.cache_dir("ANVIL_SAMPLE_CACHE", "samples") / "traces"


def reused(inputs: Sequence[bytes | str], make: Callable[[], T]) -> T:
    """What ``make`` returned earlier in this run for the same ``inputs``, else ``make()``,
    kept."""
    here = folder() / os.environ["ANVIL_TEST_RUN"]
    here.mkdir(parents=True, exist_ok=True)
    path = here / f"{build_cache.cache_key(*inputs)}.pickle"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    result = make()
    fd, temporary = tempfile.mkstemp(dir=here, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(temporary, path)
    return result


def prune() -> None:
    """Remove the folders of runs that started more than KEPT_SECONDS ago."""
    old = time.time() - KEPT_SECONDS
    if folder().is_dir():
        for run in folder().iterdir():
            if run.is_dir() and run.stat().st_mtime < old:
                shutil.rmtree(run, ignore_errors=True)

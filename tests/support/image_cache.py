"""Instrumented images shared by the tests of one run.

Several tests instrument the same large program with the same tool, mode and options:
the InHost image of a static sample is checked against qemu in test_inhost and against
the ReHost results in test_rehost, Lua's in test_lua and test_rehost. Rewriting a static
sample takes seconds, so such images are kept under ``<sample cache>/images``, keyed by
the input's bytes, the request (tool, mode, options, output name), the ``ANVIL_*``
variables that change what the rewriter emits, and a fingerprint of the rewriter's
sources: an edit of the rewriter never reuses an image made before it. Small inputs
are rewritten each time; copying would save little.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support.build_cache import REPO_ROOT, cache_dir, cache_key

#: Inputs smaller than this (the dynamic samples) are rewritten by every test.
MIN_INPUT = 100_000
#: What the images are made from: a change to any file there makes a new fingerprint.
SOURCES = ("rewriter", "runtime_stubs", "analysis_libs", "rehost")
#: ``ANVIL_*`` variables that do not change an image (caches; decision 0026 for the jobs).
NEUTRAL = frozenset({"ANVIL_CACHE", "ANVIL_SAMPLE_CACHE", "ANVIL_JOBS"})
#: Images of other fingerprints older than this are removed (an edited tree's leftovers).
STALE_SECONDS = 3600


@functools.cache
def sources_fingerprint() -> str:
    """A hash of every source file the rewriter and its libraries are made of."""
    digest = hashlib.sha256()
    for top in SOURCES:
        for path in sorted((REPO_ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def image(data: bytes, request: Sequence[str], dest: Path, make: Callable[[], None]) -> None:
    """Have ``dest`` and the files ``make()`` writes beside it (``dest.*``: the report, a
    ReHost site table) as ``make()`` writes them from the input ``data``: copied from the
    cache when a test of this run made the same image before."""
    if len(data) < MIN_INPUT:
        make()
        return
    knobs = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("ANVIL_") and k not in NEUTRAL)
    images = cache_dir("ANVIL_SAMPLE_CACHE", "samples") / "images"
    where = images / sources_fingerprint() / cache_key(data, dest.name, *request, *knobs)
    if (where / "complete").exists():
        for kept in (where / "files").iterdir():
            shutil.copy2(kept, dest.parent / kept.name)
        return
    before = _written(dest)
    make()
    after = _written(dest)
    _store(where, [f for f, stamp in after.items() if before.get(f) != stamp])
    _prune(images)


def _written(dest: Path) -> dict[Path, int]:
    """``dest`` and the files beside it named ``dest.*``, with their modification times."""
    return {f: f.stat().st_mtime_ns for f in dest.parent.glob(f"{dest.name}*") if f.is_file()}


def _store(where: Path, files: list[Path]) -> None:
    """Keep ``files`` under ``where``, all or none (another worker may store the same key
    meanwhile: the first rename wins)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=where.name + ".", dir=where.parent))
    try:
        (staging / "files").mkdir()
        for f in files:
            shutil.copy2(f, staging / "files" / f.name)
        (staging / "complete").touch()
        os.rename(staging, where)
    except OSError:
        pass  # stored by another worker first
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _prune(images: Path) -> None:
    """Remove the images of other fingerprints that nothing has added to for a while."""
    now = time.time()
    for other in images.iterdir():
        try:
            stale = other.name != sources_fingerprint() and now - other.stat().st_mtime > STALE_SECONDS
        except FileNotFoundError:  # the other worker pruned it between the listing and here
            continue
        if stale:
            shutil.rmtree(other, ignore_errors=True)

"""Share independent pieces of work with a forked process, so that a second core helps.

The rewriter is single-threaded Python; some of its phases are loops over procedures
whose results do not depend on each other (counter placement plans each procedure on
its own). ``split_map`` gives the later part of such a loop to a child made with
``fork`` (it sees the IR as it is, without copying it first) and takes its results back
through a pipe, pickled; results are small next to the work that makes them.

Results and errors are those of the plain loop: whenever the child fails or cannot be
used, its part is computed here. A child is made only where forking is safe and may pay:
Linux, two usable cores, a single thread in this process (a fork copies no other thread,
so a lock one of them held would stay locked in the child), and enough work.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from ..errors import AnvilError

X = TypeVar("X")
Y = TypeVar("Y")


def split_map(work: Callable[[X], Y], items: Sequence[X], weight: Callable[[X], int], min_weight: int) -> list[Y]:
    """``[work(x) for x in items]``, the later part (about half of the total ``weight``)
    computed by a forked child when the total is at least ``min_weight``."""
    weights = [weight(x) for x in items]
    if sum(weights) < min_weight or not can_fork():
        return [work(x) for x in items]
    split = halfway(weights)
    own, theirs = items[:split], items[split:]
    if not theirs:
        return [work(x) for x in items]
    child, pipe = _fork(work, theirs)
    try:
        mine = [work(x) for x in own]
    except BaseException:
        _collect(child, pipe, expected=0)  # reaps the child; its results are not needed
        raise
    got = _collect(child, pipe, expected=len(theirs))
    return mine + (got if got is not None else [work(x) for x in theirs])


#: Environment variable capping the processes a rewrite uses (``anvil instrument --jobs``).
JOBS_VARIABLE = "ANVIL_JOBS"


_jobs_given: list[int] = []  # innermost jobs_limit() last


def jobs_allowed() -> int:
    """The processes a rewrite may use: what the innermost ``jobs_limit`` says, else
    ``ANVIL_JOBS`` if set (a positive integer), else no limit. Where the cores are busy
    already (a parallel build, a test run with a worker per core) a second process only
    adds the cost of its messages; the output is the same whatever it is."""
    if _jobs_given:
        return _jobs_given[-1]
    text = os.environ.get(JOBS_VARIABLE, "")
    return parse_jobs(text, f"{JOBS_VARIABLE}={text!r}") if text else sys.maxsize


def parse_jobs(text: str, what: str) -> int:
    """A number of processes from the user; ``what`` names where it came from in the error."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise AnvilError(f"{what}: not a positive number of processes")
    return int(text)


@contextlib.contextmanager
def jobs_limit(jobs: int) -> Iterator[None]:
    """Within the block, rewrite with at most ``jobs`` processes."""
    _jobs_given.append(jobs)
    try:
        yield
    finally:
        _jobs_given.pop()


def can_fork() -> bool:
    """Linux (where fork without exec is the usual way; other systems' libraries may not
    survive it), two cores usable and two jobs allowed, and no other thread in this process."""
    if not sys.platform.startswith("linux") or jobs_allowed() < 2:
        return False
    return len(os.sched_getaffinity(0)) >= 2 and threading.active_count() == 1


def halfway(weights: list[int]) -> int:
    """The index where the weights before it first reach half of the total."""
    half = sum(weights) / 2
    total = 0
    for i, w in enumerate(weights):
        total += w
        if total >= half:
            return i + 1
    return len(weights)


def _fork(work: Callable[[X], Y], items: Sequence[X]) -> tuple[int, int]:
    """A child computing ``work`` over ``items`` and writing the pickled results to a pipe;
    returns its pid and the pipe's reading end."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, whatever happens
        status = 1
        try:
            os.close(read_end)
            payload = pickle.dumps([work(x) for x in items], protocol=pickle.HIGHEST_PROTOCOL)
            with open(write_end, "wb") as pipe:
                pipe.write(payload)
            status = 0
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, read_end: int, expected: int) -> list | None:
    """The child's results (None if it failed or gave other than ``expected`` of them),
    once it has exited."""
    payload = b""
    try:
        if expected:
            with open(read_end, "rb") as pipe:
                payload = pipe.read()
        else:  # the results are not wanted: stop the child rather than wait for its share
            os.close(read_end)
            os.kill(pid, signal.SIGKILL)
    finally:
        _, status = os.waitpid(pid, 0)
    if status != 0 or not payload:
        return None
    results = pickle.loads(payload)
    return results if len(results) == expected else None

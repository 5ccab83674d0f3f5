"""The instrumentation holds no descriptor while the program runs (decision 0119).

findutils' xargs walks its descriptors at its start (gnulib's fdleak: the entries of
/proc/self/fd, fcntl on each) and runs code for each one it finds. memtrace's InHost trace
was held open from the program's start (on descriptor 1001, decision 0100): one descriptor
more for the program to find, so its copy ran another path than the original (xargs ran one
more round of its descriptor bookkeeping; a program that prints what it finds prints
something else). The runtime's sink now opens the file for each write and closes it after.

samples/descriptors_walked.c lists /proc/self/fd and the descriptors fcntl finds below the
limit, runs a procedure for each, works on a table, forks a child that walks them too, and
walks them again. Checked: every counting tool's InHost copy and memtrace's print what the
original prints; memtrace's traces (the parent's, and the child's own file) hold as many
stores into the table as the program makes in each process (rounds x entries, from the
source), before and after the fork. Before the change memtrace's copy listed descriptor 1001
at each walk.

ReHost copies run by `anvil run` print what the original prints too, and their results (the
parent's, the child's) are the InHost copy's: the channel to the bridge is not one of the
program's descriptors (the runtime connects for each send, decision 0126). Before, it was
descriptor 1000 for the whole run, and each walk listed it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.rehost import assert_rehost_as_inhost
from tests.support.run import assert_same_behaviour, instrument, place, run_prog, trace_stores
from tests.support.samples import build

#: The table's entries (samples/descriptors_walked.c) and the work rounds of each process:
#: the parent's before the fork and after, the child's after it.
ENTRIES = 2048
ROUNDS_BEFORE_FORK, ROUNDS_IN_CHILD, ROUNDS_AFTER_CHILD = 3, 2, 1


@pytest.fixture(scope="module")
def sample() -> Path:
    return build("descriptors_walked", "O2-thumb-dyn", ["-no-pie"])  # link-time addresses in the trace


@pytest.mark.parametrize("tool", ["memtrace", "inscount", "cachesim"])
def test_walked_descriptors_are_the_originals(sample: Path, tool: str, tmp_path: Path) -> None:
    original = run_prog(place(sample, tmp_path, "orig"))
    assert original.returncode == 0, original.stderr
    assert re.search(rb"start: /proc/self/fd: 0 1 2\b", original.stdout), original.stdout
    copy = run_prog(instrument(sample, tool, tmp_path, fmt="text"))
    assert_same_behaviour(original, copy)
    if tool != "memtrace":
        return
    parent_trace = copy.cwd / "prog.memtrace.out"
    children = list(copy.cwd.glob("prog.memtrace.out.*"))
    assert len(children) == 1, children
    assert trace_stores(sample, parent_trace, "table") == ENTRIES * (ROUNDS_BEFORE_FORK + ROUNDS_AFTER_CHILD)
    assert trace_stores(sample, children[0], "table") == ENTRIES * (ROUNDS_BEFORE_FORK + ROUNDS_IN_CHILD)


@pytest.mark.parametrize("tool", ["memtrace", "cachesim"])
def test_rehost_channel_is_not_among_them(sample: Path, tool: str, tmp_path: Path) -> None:
    inhost, rehost = assert_rehost_as_inhost(sample, tool, tmp_path, fmt="text")
    name = f"prog.{tool}.out"
    children = list(rehost.parent.glob(f"{name}.*"))
    inhost_children = list(inhost.cwd.glob(f"{name}.*"))
    assert len(children) == len(inhost_children) == 1, (children, inhost_children)
    assert children[0].read_bytes() == inhost_children[0].read_bytes()

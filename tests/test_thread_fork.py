"""A fork made while another thread is inside the analysis (decision 0127).

samples/thread_fork.c forks 24 children while a worker thread loads and stores through
the program's own code, so that most forks come while the worker holds the analysis lock.
Before the fork handlers the child, which has only the forking thread, waited for ever for
a lock held by a thread it does not have. Now every copy (ARM and x86-64, dynamic through the C
library's fork handlers, static through the copies of its fork system call; InHost and
ReHost) behaves as the original (the same line, status 0: every child's work checked by its
parent), within the time limit, and every child writes whole results of its own.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.rehost import CLI_RUN
from tests.support.run import LIB_ROOT, instrument, place, run_in_own_group
from tests.support.samples import build, build_x86_64

CHILDREN = 24  # the sample's default


def _original(sample: Path, isa: str, tmp: Path) -> subprocess.CompletedProcess:
    program = place(sample, tmp, "orig")
    cmd = ["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(program)] if isa == "arm" else [str(program)]
    return subprocess.run(cmd, capture_output=True, cwd=program.parent, env={}, timeout=120)


def _run_or_kill(cmd: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``cmd``'s run; a hang (a child waiting for a lock it will never get) fails, and its
    whole process group is killed: hung children would spin on for the rest of the suite."""
    try:
        return run_in_own_group(cmd, cwd, {}, timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the copy did not end within {timeout} s")


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
@pytest.mark.parametrize("isa,variant", [("arm", "O2-thumb-dyn"), ("arm", "O2-arm-static"), ("x86_64", "x64-gcc-O2"),
                                         ("x86_64", "x64-gcc-O2-static")])
def test_a_fork_while_another_thread_is_in_the_analysis(isa: str, variant: str, mode: str, tmp_path: Path) -> None:
    sample = build("thread_fork", variant) if isa == "arm" else build_x86_64("thread_fork", variant)
    original = _original(sample, isa, tmp_path)
    assert original.returncode == 0 and original.stdout == f"{CHILDREN} of {CHILDREN} children right\n".encode()
    copy = instrument(sample, "cachesim", tmp_path, "--mode", mode, slot=mode[:2] + "st")
    run = _run_or_kill(CLI_RUN + [str(copy)], copy.parent)
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
    children = [p for p in copy.parent.glob("prog.cachesim.out.*") if p.suffix[1:].isdigit()]
    assert len(children) == CHILDREN
    parent = json.loads((copy.parent / "prog.cachesim.out").read_text())
    for child in children:
        results = json.loads(child.read_text())
        # A child's results are its parent's up to the fork and its own work: two walks of
        # the table, two accesses each.
        assert results["accesses"] >= 2 * 2 * 1024, child
        assert results["hits"] + results["misses"] == results["accesses"]
    assert parent["accesses"] > 0

"""A number in data that reads as a label inside an instruction (decision 0062).

samples/labels: in a fixed-address program, ``numbers`` holds the address (Thumb bit set)
of the second halfword of ``step``'s ``add.w``, which ``step`` (exported, with a size)
reaches by a forward branch. Such words are taken for computed-goto labels (decision
0043); decoded before the branch's target, the label's reading (``lsls``) made the descent
stop short of the ``add.w``, whose copy was never made: the relocated code jumped to the
original there, which ran in place, uncounted, into a return site's jump (Debian's cc1
crashed so in ``ggc_internal_alloc``, named by a word of its parser tables).

The oracles: the original program's output and qemu's trace of it (every instruction of
the executable it runs is one the descent found; inscount counts exactly those).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_counts_as_qemu, assert_runs_found
from tests.support.samples import build_stripped

# Fixed addresses (numbers in data are looked at only there) and step in the dynamic
# symbol table with its size.
FLAGS = ["-O2", "-mthumb", "-no-pie", "-rdynamic"]
OUTPUT = b"a=23 b=210 c=8 d=18 n=33\n"


@pytest.fixture(scope="module")
def program() -> Path:
    return build_stripped("labels", FLAGS)


def test_descent_keeps_the_instruction_the_number_names(program: Path, tmp_path: Path) -> None:
    assert_runs_found(program, tmp_path, OUTPUT)


@pytest.mark.parametrize("extra", [(), ("--return-addresses", "original")])
def test_instrumented_copy_runs_and_counts_every_instruction(program: Path, extra: tuple[str, ...],
                                                             tmp_path: Path) -> None:
    assert_counts_as_qemu(program, tmp_path, OUTPUT, *extra)

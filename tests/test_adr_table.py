"""A switch through a table of absolute addresses that ``add rT, pc, #n`` finds (decision 0068).

samples/adr_table: ``pick`` jumps with ``adr.w r3, table; ldr.w pc, [r3, r0, lsl #2]``
through a table of its cases' addresses (Thumb bit set), as GCC's Thumb-2 switch does in a
fixed-address program when a case lies before the table (Debian's cc1, in
try_shrink_wrapping). Capstone reads that adr as ``add r3, pc, #8``, which the computed
goto finder did not take for the table's address: a case that only the table reaches was
not decoded, and the copy's jump went to the original there, which ran in place (cc1 ran
on into a return site's jump and crashed).

The oracles: the original program's output and qemu's trace of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_counts_as_qemu, assert_runs_found
from tests.support.samples import build_stripped

FLAGS = ["-O2", "-mthumb", "-no-pie"]
OUTPUT = b"s=10203007\n"


@pytest.fixture(scope="module")
def program() -> Path:
    return build_stripped("adr_table", FLAGS)


def test_every_case_is_decoded(program: Path, tmp_path: Path) -> None:
    assert_runs_found(program, tmp_path, OUTPUT)


@pytest.mark.parametrize("extra", [(), ("--return-addresses", "original")])
def test_instrumented_copy_runs_and_counts_every_instruction(program: Path, extra: tuple[str, ...],
                                                             tmp_path: Path) -> None:
    assert_counts_as_qemu(program, tmp_path, OUTPUT, *extra)

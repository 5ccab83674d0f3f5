"""Programs built with ``-fpatchable-function-entry`` (nops before and at each function,
their places listed in ``__patchable_function_entries`` for a tracer), stripped: that list
names places no code jumps to and is not read for code pointers (decision 0170). Before, in
Thumb, its even addresses were taken for A32 functions, the Thumb code after them was read
as A32, and the helpers reached only through functions named in a table ran uncounted
(34,300 of 72,509 instructions).

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build, stripped


@pytest.mark.parametrize("variant", ["O2-thumb-nopie-patchable", "O2-arm-patchable"])
def test_patchable_entries_are_no_functions(variant: str, tmp_path: Path) -> None:
    program = stripped(build("patchable_entries", variant), tmp_path / "prog")
    assert_found_and_counted(program, "inscount", tmp_path, b"12100\n", ["a"])

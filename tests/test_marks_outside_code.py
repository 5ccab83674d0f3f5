"""Mapping symbols ($a, $t, $d) of sections that are not loaded say nothing about the code
(decision 0174): gcc ``-g -fno-dwarf2-cfi-asm`` gives each object's part of ``.debug_frame``
a ``$d`` whose value is an offset in that section, and where it equalled an address in
``.text`` the code from there to the next mark was taken for data and ran uncounted (a
sweep's program: 432,002 of 572,103 instructions; Lua: 31.9 of 88.6 million).

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build


@pytest.mark.parametrize("variant", ["O2-thumb-nopie", "O2-arm-nopie"])
def test_marks_of_sections_not_loaded_are_ignored(variant: str, tmp_path: Path) -> None:
    assert_found_and_counted(build("marks_outside_code", variant), "inscount", tmp_path, b"3496932\n")

"""A32 functions of one instruction (``b real``, a tail call; ``bx lr``, an empty function)
right before code the descent found, reached only through pointers in data, in a stripped
fixed-address program (python3.11's ``main: b Py_BytesMain``, Debian's armel build, and
four others there). An even word in data that names such a place was not taken for an A32
function, since the word after it is code found: they ran uncounted in the original.

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_one_word_functions_called_through_pointers(tool: str, tmp_path: Path) -> None:
    program = build_stripped("one_word_functions", ["-O2", "-marm", "-no-pie", "-rdynamic"])
    assert_found_and_counted(program, tool, tmp_path, b"41\n")

"""A32 functions whose only reference is their address built by ``movw``/``movt`` in a
fixed-address program: a static signal handler given to sigaction, a static function stored
in a table (clang's A32 code; Debian's sbcl runtime, whose SIGSEGV handler and garbage
collector routines are named so). Stripped, they were never found: the even value was not
weighed as an A32 entry as a literal pool's word is, and they ran uncounted.

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build, stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_handler_named_by_movw_movt_found_stripped(tool: str, tmp_path: Path) -> None:
    program = stripped(build("movw_pointers", "clang-O2-arm-static-lld", ["-fno-pic"]), tmp_path / "stripped")
    assert_found_and_counted(program, tool, tmp_path, b"324 84\n", ["x"])

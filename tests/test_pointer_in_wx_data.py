"""A function named only by a pointer in a data section flagged writable and executable
(Debian's gcl, a Lisp image dumped by unexec: its heap, a ``.data`` flagged WAX, holds the
C primitives' function objects; 1.25 % of the run was uncounted). Discovery read code
addresses only from data sections that are not executable.

Oracles: the original's output, and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_stripped


def test_function_named_from_writable_executable_data(tmp_path: Path) -> None:
    program = build_stripped("pointer_in_wx_data", ["-O2", "-mthumb", "-no-pie"])
    assert_found_and_counted(program, "inscount", tmp_path, b"242\n", ["40"])

"""x86-64 flags read across instructions whose flag effects capstone misreports: an x87
instruction (capstone's eflags field holds its FPU flags: ``fild`` read as writing CF) and
``rcl``/``rcr`` (no "reads CF"). Hooks that keep the flags only where they are live then
clobbered a carry still to be read: Debian's Free Pascal compiler (ppcx64) wrote a
different object file under cachesim. samples/x64_flag_readers.c has ppcx64's two shapes.

Oracle: the results the program checks itself (the C compiler's own conversions and
128-bit sums), and the original's output.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import samples
from tests.support.run import instrument


@pytest.mark.parametrize("tool", ["inscount", "cachesim", "bbcount"])
def test_carry_kept_across_x87_and_rcr(tool: str, tmp_path: Path) -> None:
    program = samples.build_x86_64("x64_flag_readers", "x64-gcc-O2")
    original = subprocess.run([str(program)], capture_output=True, timeout=60)
    assert (original.returncode, original.stdout) == (0, b"0 0 0\n")
    copy = instrument(program, tool, tmp_path)
    run = subprocess.run([str(copy)], cwd=copy.parent, capture_output=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)

"""Free Pascal's case statements on an integer selector (Debian's h2pas and pyacc, A32,
fixed-address, stripped): a signed bounds check (``cmp rI, #1; blt; cmp rI, #N; bgt``),
perhaps a sign extension (``sxth rI, rI``), then ``sub rI, rI, #k; ldr pc, [pc, rI, lsl
#2]`` and a table of label addresses.

The switch finder knew only unsigned checks with nothing but the ``sub`` between: the
cases, and a function only they call, ran uncounted in the original (pyacc: 96 % of its
run). samples/case_tables has both shapes, stripped.

Oracles: the sum the original prints (computed by hand: 20 rounds of 183 + 69) and qemu's
count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_signed_case_tables_found_stripped(tool: str, tmp_path: Path) -> None:
    program = build_stripped("case_tables", ["-O2", "-marm", "-no-pie"])
    assert_found_and_counted(program, tool, tmp_path, b"sum 5040\n")

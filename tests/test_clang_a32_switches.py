"""clang's A32 switches whose default is a return, in stripped programs (decision 0179).

clang -marm bounds a dense switch with a check whose default case returns
(``cmp rI, #N; bxhi lr``), then jumps through a table after the jump: of the cases'
addresses (fixed-address code: ``add rT, pc, #0; ldr pc, [rT, rI, lsl #2]``) or of their
offsets (a PIE: ``ldr rX, [rT, rI, lsl #2]; add pc, rT, rX``), other instructions
perhaps scheduled between (``mov r0, #288``). The switch finder took only a branch with a
target for the check, and only Thumb moves between, so a stripped program's descent ended
at the jump: its cases ran in the original, uncounted, and in a static program a case's
branch back into the procedure's reused bytes crashed the copy (SIGILL: clang -marm Lua
linked statically and stripped died at once under every tool).

Oracles: the original's behaviour, qemu's trace (every instruction it runs found) and its
count (inscount's total).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build, stripped

#: Fixed-address code (a table of addresses), static and dynamic; a PIE (offsets).
BUILDS = {"static": ("clang-O2-arm-static-bfd", ["-fno-pie"]),
          "fixed": ("clang-O2-arm-pie-lld", ["-fno-pie", "-no-pie"]),
          "pie": ("clang-O2-arm-pie-lld", [])}


@pytest.mark.parametrize("kind", sorted(BUILDS))
@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_switch_bounded_by_a_return_found_and_counted(kind: str, tool: str, tmp_path: Path) -> None:
    variant, extra = BUILDS[kind]
    program = stripped(build("clang_a32_switch", variant, extra), tmp_path / "stripped")
    assert_found_and_counted(program, tool, tmp_path, b"1357761\n")

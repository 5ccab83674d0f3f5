"""Offsets that a PC-relative add takes are no A32 entries (decision 0113).

GHC's A32 code (LLVM's back end, a fixed-address program) names its strings and its
continuations as ``ldr rX, =offset; add rX, pc, rX``. The descent took every word-aligned
literal that falls in the text for an A32 function's address (Free Pascal stores its
handlers' addresses so), offsets too: in Debian's csvSelect (Haskell) the offset of an
error message equalled the address of an instruction in the middle of a function, which
became an entry there and cut the function in two between its ``ldr`` and its ``add``; the
continuation that pair named (reached only by a computed jump) was never found and ran in
place, uncounted (11,544 instructions short of QEMU's count).

samples/pc_offsets: f names its continuation so, after an info table; offset_user adds to
the PC an offset whose value is the address of f's ``add``; g, named only by a literal,
names f PC-relatively (so f is found a round after the offset was taken). Before the
change both builds counted fewer instructions than QEMU. The oracles: the sum the
program's definition gives, the original's output and exit status under qemu-arm, and
qemu's count of the executable's instructions.
"""

from __future__ import annotations

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import assert_inscount_in_both_modes
from tests.support.run import place, run_prog
from tests.support.samples import build_stripped

#: f(i) = 2 (i + 1) + (100 + 99 + ... + 1), summed for i < 50.
SUM = sum(2 * (i + 1) + 5050 for i in range(50))


@pytest.mark.parametrize("flags", [["-O2", "-marm", "-no-pie"], ["-O2", "-marm", "-static"]],
                         ids=["dynamic", "static"])
def test_offset_equal_to_a_place_in_a_function(flags: list[str], tmp_path) -> None:
    binary = build_stripped("pc_offsets", flags)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, [])
    assert original.returncode == 0 and int(original.stdout.split()[0]) == SUM
    executed = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
    assert_inscount_in_both_modes(binary, original, tmp_path, executed)

"""A computed goto whose table's address reaches the jump through the stack and a branch
(decision 0205).

Debian 13's glibc 2.41, built by GCC 14: ``__printf_buffer`` computes its table of Thumb
labels once, keeps the address in a stack slot, and reaches the dispatch block through a
conditional branch; the block loads the address back from the slot. The descent looked
for the table in the run of instructions that ends in the jump, which starts at the
branch's target: the spill was not in it, the labels were never decoded, and in a
stripped static program most of printf (its conversions, ``__printf_fp``) ran in place,
uncounted (samples/printf_formats.c: 39,500 of QEMU's 68,700 instructions; Debian 13's
sash, busybox, bash-static and gpgv-static alike).

Oracles: the output computed here; QEMU's trace of the original (every instruction it runs
is one the descent found, and inscount counts as QEMU does).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_static_with_glibc_of, stripped


def _expected() -> bytes:
    lines, x = [], 2.5
    for i in range(20):
        lines.append(f"{i} {x:5.2f} abc {i * 7:x}\n")
        x *= 1.5
    return "".join(lines).encode()


def test_printf_of_glibc_2_41_found_and_counted(tmp_path: Path) -> None:
    program = stripped(build_static_with_glibc_of("printf_formats", "trixie"), tmp_path / "stripped")
    assert_found_and_counted(program, "inscount", tmp_path, _expected())

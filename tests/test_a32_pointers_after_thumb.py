"""A32 functions named only by relocated pointers, right after Thumb code, are found
(decision 0104).

In an A32 PIE the program's code follows the C runtime's Thumb start-up code; functions
reached only through a table of pointers (even words the dynamic loader relocates) were
taken for computed-goto labels of the Thumb procedure before them and decoded as Thumb:
the A32 functions ran in place, uncounted and unreported (Debian's protoc-gen-rust, a
Rust program: 35 % of its instructions). samples/a32_pointers_after_thumb.c calls six
such functions through a table.

The oracle: the original's output and exit status under qemu-arm, and qemu's count of
the executable's instructions.
"""

from __future__ import annotations

import pytest

from tests.support.rehost import assert_counted_exactly
from tests.support.run import traced_original
from tests.support.samples import build, stripped


@pytest.mark.parametrize("extra", [[], ["-O2"]])
def test_pointed_a32_functions_after_thumb_code_are_counted(extra: list[str], tmp_path, rehost_server: str) -> None:
    binary = stripped(build("a32_pointers_after_thumb", "O0-arm-dyn", extra), tmp_path / "shapes")
    original, pcs, _ = traced_original(binary, tmp_path)
    assert original.returncode == 0 and original.stdout.endswith(b" triangle 200\n"), original

    assert_counted_exactly(binary, original, pcs, tmp_path, rehost_server)

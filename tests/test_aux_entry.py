"""The auxiliary vector's AT_ENTRY names the program's own entry (decision 0092).

The loader stub of an instrumented program is its ELF entry, so the kernel's AT_ENTRY
named the stub. Debian's dynamic linker run as a program (``ld.so PROGRAM``) compares
AT_ENTRY with its own ``_start`` to know it is the program; its instrumented copy took
itself for an interpreter and stopped on an assertion (rtld.c: rtld_setup_main_map).
samples/aux_entry.c makes the same comparison and prints which path it took.

The oracle: the original's output and exit status under qemu-arm, and qemu's count of
the executable's instructions.
"""

from __future__ import annotations

import pytest

from tests.support.rehost import assert_counted_exactly
from tests.support.run import traced_original
from tests.support.samples import build, stripped


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-static", "O2-arm-dyn-nopie"])
def test_program_sees_its_own_entry(variant: str, tmp_path, rehost_server: str) -> None:
    binary = stripped(build("aux_entry", variant), tmp_path / "aux_entry")
    original, pcs, _ = traced_original(binary, tmp_path)
    assert (original.returncode, original.stdout[:20]) == (3, b"the program itself, "), original

    assert_counted_exactly(binary, original, pcs, tmp_path, rehost_server)

"""ld.lld's fill between functions (0xd4d4d4d4) ends a reading past a call.

samples/fill_after_noreturn, built by clang and ld.lld, static, stripped: ``check`` ends
in a call of ``fail``, which never returns (a longjmp, whose end reads as a return), and
the next object's first function, ``twice``, aligned to 64 bytes, comes after lld's fill;
only a table of pointers reaches it. The descent read on past the call, through the
fill, into ``twice``, which became part of ``check``'s procedure: its entry got no jump,
and every call through the table ran its first block in place, uncounted (a stripped
clang Lua was 7 instructions short so, its ``luaopen_package`` after ``luaM_malloc_``).

Oracles: the total the program prints (the same in every build) and qemu's count of the
instructions it runs, A32 and Thumb.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_stripped


@pytest.mark.parametrize("isa", ["arm", "thumb"])
def test_a_function_after_lld_fill_is_its_own(isa: str, tmp_path: Path) -> None:
    program = build_stripped("fill_after_noreturn", ["-Oz", f"-m{isa}", "-static", "-fuse-ld=lld"], clang=True)
    assert b"\xd4\xd4\xd4\xd4" in program.read_bytes()  # the shape: lld filled the gap before twice
    assert_found_and_counted(program, "inscount", tmp_path, b"total 2158\n")

"""Programs whose executable segment also holds their zero-filled data (decision 0130):
lld's ``-N`` (one segment for code, data and ``.bss``) and a GNU ld script that puts
``.data`` before ``.text``. The segment's memory goes on past its file bytes; the loader
stub used to be placed right after the file bytes, on the program's ``.bss``, which the
copy then started with non-zero (and the segment's memory size could shrink). Every tool
in both modes must behave as the original (samples/bss_zero.c prints where its ``.bss``
is not zero, and its address) and count as qemu does (tests/support/sweep.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.support.samples import build
from tests.support.sweep import judge_build


def _code_segment_holds_bss(binary: Path) -> bool:
    with binary.open("rb") as f:
        return any(seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1 and seg["p_memsz"] > seg["p_filesz"]
                   for seg in ELFFile(f).iter_segments())


@pytest.mark.parametrize("variant", ["O2-data-first", "clang-O2-omagic-static-lld"])
def test_bss_in_the_code_segment_stays_zero(variant: str, rehost_server: str, tmp_path: Path) -> None:
    binary = build("bss_zero", variant)
    assert _code_segment_holds_bss(binary), "the build no longer has the layout this test is about"
    outcomes = judge_build("bss_zero", binary, False, ["inscount", "cachesim", "memtrace"], ["inhost", "rehost"],
                           tmp_path, server=rehost_server)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes

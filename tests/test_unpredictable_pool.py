"""Data after a call that does not return, read as an instruction the architecture does not
define: clang -O3 -flto put a literal pool right after Lua's call of luaX_syntaxerror
(which returns for no level, though discovery cannot tell), and its first word reads as
``strd pc, pc, [r1, #0x3f0]``. The descent went on into it, relocation could not move a
store of PC, and the whole procedure (Lua's expression parser) ran in place, uncounted.
T32 defines PC as an operand only in a few forms (ADR, literal loads, ``add``/``mov rd,
pc``, table branches); any other is data, and the descent now ends there.

samples/unpredictable_pool is the pattern alone, stripped. Oracles: the original's
behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build_stripped


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_pool_word_that_reads_as_an_undefined_form(tool: str, tmp_path: Path) -> None:
    program = build_stripped("unpredictable_pool", ["-O2", "-mthumb"])
    assert_found_and_counted(program, tool, tmp_path, b"sum 499500\n")

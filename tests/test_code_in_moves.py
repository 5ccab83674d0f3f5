"""A function whose address only a movw/movt pair builds (decision 0068).

samples/moves: ``run`` passes ``cb`` to ``apply`` as a function pointer built by
``movw``/``movt`` (GCC's Thumb-2 code for a fixed-address program builds addresses so;
Debian's cc1 passes its static callbacks to walk_tree and walk_gimple_seq this way). ``cb``
follows ``check``, whose last instruction calls ``fail``, a function that returns on some
path: the descent of ``check`` ran on past the call, over a padding ``nop``, into ``cb``.
With original return addresses, the jump written at that call's return site (the ``nop``)
covered ``cb``'s entry, and the call through the pointer ran the jump's bytes as code (cc1
went on to ``copy_tree_body_r``'s call of ``walk_tree_1`` with garbage and crashed); with
relocated return addresses ``cb`` ran in place, uncounted.

The oracles: the original program's output and qemu's trace of it (inscount counts
exactly the instructions qemu runs in the executable).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_counts_as_qemu, assert_runs_found
from tests.support.samples import build_stripped

FLAGS = ["-O2", "-mthumb", "-no-pie"]  # fixed addresses: movw/movt build code addresses
OUTPUT = b"r=21\n"


@pytest.fixture(scope="module")
def program() -> Path:
    return build_stripped("moves", FLAGS)


def test_function_named_by_moves_is_an_entry(program: Path, tmp_path: Path) -> None:
    binary, executed = assert_runs_found(program, tmp_path, OUTPUT)
    # What the program runs of the Thumb addresses its movw/movt pairs build (cb): each
    # an entry of its own.
    built = {ins.address for p in binary.procedures for ins in p.instructions() if ins.name == "movw"}
    assert built, "the sample has no movw"
    entries = {p.address for p in binary.procedures}
    targets = {t & ~1 for t in _moved_values(binary)}
    called = targets & set(executed)
    assert called, "no movw/movt value is a place qemu ran"
    assert called <= entries, f"not procedure entries: {[hex(a) for a in sorted(called - entries)]}"


def _moved_values(binary) -> set[int]:
    """The odd values that a movw and the movt after it (same register) build."""
    out = set()
    for proc in binary.procedures:
        low: dict[str, int] = {}
        for ins in proc.instructions():
            reg, _, imm = ins.op_str.partition(", #")
            if ins.name == "movw" and imm:
                low[reg] = int(imm, 0)
            elif ins.name == "movt" and imm and reg in low:
                value = int(imm, 0) << 16 | low.pop(reg)
                if value & 1:
                    out.add(value)
    return out


@pytest.mark.parametrize("extra", [(), ("--return-addresses", "original")])
def test_instrumented_copy_runs_and_counts_every_instruction(program: Path, extra: tuple[str, ...],
                                                             tmp_path: Path) -> None:
    assert_counts_as_qemu(program, tmp_path, OUTPUT, *extra)

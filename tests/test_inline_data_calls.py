"""Calls followed by data their callee reads at its return address and never returns to
(klibc's Thumb system calls: Debian's mksh-static, klibc-utils; decision 0103).

``samples/inline_syscall_numbers.c`` makes its system calls as klibc does: ``push {r4, r5,
r7, lr}; bl common; .short NR``, the common part reading NR at LR - 1 and returning with
``pop {..., pc}`` to the stub's caller. Before the fix the copy's call left the copy's return
address in LR (no number there), and the entry patch of the next stub's neighbour wrote its
literal over the number: the copy made unknown system calls and died.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build


@pytest.mark.parametrize(("variant", "returns"), [("O2-thumb-dyn", "auto"), ("O2-thumb-dyn", "original"),
                                                  ("O2-arm-static", "auto")])
def test_inline_system_call_numbers_are_read_where_they_are(variant: str, returns: str, tmp_path: Path) -> None:
    program = build("inline_syscall_numbers", variant)
    original, pcs, _ = traced_original(program, tmp_path)
    assert original.returncode == 3, original.stderr  # every stub made the call it names
    inst = run_prog(instrument(program, "inscount", tmp_path, "--return-addresses", returns))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())


def test_inline_system_call_numbers_rehost(tmp_path: Path, rehost_server: str) -> None:
    """The same through ReHost's communicator: cachesim's results equal InHost's."""
    from tests.support.rehost import assert_rehost_results_equal

    program = build("inline_syscall_numbers", "O2-thumb-dyn")
    original, _, _ = traced_original(program, tmp_path)
    assert_rehost_results_equal(program, original, tmp_path, rehost_server)

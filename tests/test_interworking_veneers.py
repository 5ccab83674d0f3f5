"""Thumb and A32 functions that tail-call each other (a B.W or B cannot change the
instruction set), through the veneers the linker puts between: GNU ld's ``__x_from_thumb``
(``bx pc; b.n .-2; b target``) and ``__x_from_arm`` (``ldr pc, [pc, #-4]``), and in a PIE
``ldr ip, [pc]; add pc, ip, pc``; gold's the same forms, unnamed and unmarked at the end of
``.text`` (decision 0168). Before: gold's unmarked PIE veneers read as Thumb up to ``_fini``,
whose first word then got a Thumb jump the loader's A32 call of it ran into (SIGBUS at exit,
or at the first call); in stripped programs the functions reached only through veneers ran
uncounted in the original (19,745 of 71,535 instructions).

Oracles: the original's behaviour and qemu's count of the instructions it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import assert_found_and_counted
from tests.support.samples import build, stripped

VARIANTS = ("O2-thumb-dyn", "O2-thumb-nopie", "O2-thumb-gold", "O2-thumb-gold-nopie")


@pytest.mark.parametrize("strip", [False, True], ids=["symbols", "stripped"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_functions_reached_through_veneers_are_found_and_counted(variant: str, strip: bool, tmp_path: Path) -> None:
    program = build("interworking_veneers", variant)
    if strip:
        program = stripped(program, tmp_path / "prog")
    assert_found_and_counted(program, "inscount", tmp_path, b"9989353\n")

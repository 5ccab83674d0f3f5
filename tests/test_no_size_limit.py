"""Programs of any size rewrite (decision 0041): a copy larger than any branch reaches.

The generated program (tests/support/big_program.py) has under 1 MB of code; cachesim
makes a copy of more than 32 MB of it, beyond T32's +-16 MiB and A32's +-32 MiB
branches, so calls between procedures, into the analysis library and to the shared
routines at the end go through the islands' veneers. Both instruction sets, both modes:
the program behaves as the original, and cachesim counts exactly the loads and stores
that the generator says the procedures make.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import big_program
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build

BEYOND_EVERY_BRANCH = 32 << 20


@pytest.mark.parametrize(("isa", "mode"), [("thumb", "inhost"), ("arm", "rehost")])
def test_copy_beyond_branch_reach_runs_identically(isa: str, mode: str, tmp_path: Path, rehost_server: str) -> None:
    program = big_program.build(isa)
    original = run_prog(place(program, tmp_path, "orig"))
    assert original.stdout.count(b"0x") == 3, original  # the global's, the heap's and the stack's addresses
    # Only the generated procedures: the counts are then known from the generator alone.
    extra = ("--only", "f[0-9]*") + (("--mode", "rehost") if mode == "rehost" else ())
    image = instrument(program, "cachesim", tmp_path, *extra, slot="inst")
    assert image.stat().st_size - program.stat().st_size > BEYOND_EVERY_BRANCH  # the new region, in the file
    if mode == "rehost":
        run, outcome = run_rehost(image, rehost_server)
        assert outcome.summary.complete
    else:
        run = run_prog(image)
    assert_same_behaviour(original, run)
    counts = results(run, "cachesim")
    loads, stores = big_program.accesses(isa)
    assert (counts["loads"], counts["stores"]) == (loads, stores)


def test_call_of_code_left_in_place_keeps_ip(tmp_path: Path) -> None:
    """A call from a PIE's copy to original code other than a PLT entry goes through a
    veneer that keeps IP: hand-written code may pass a value in it (samples/ip_jump.c's
    load_then_call, as CLISP's bignum loops; decision 0077). cachesim copies the procedure
    that loads, not the helper it calls, which adds IP."""
    program = build("ip_jump", "O2-thumb-dyn")
    original = run_prog(place(program, tmp_path, "orig"))
    assert (original.returncode, original.stdout) == (0, b"1234 1234\n")
    assert_same_behaviour(original, run_prog(instrument(program, "cachesim", tmp_path)))


def test_jump_to_code_left_in_place_keeps_ip(tmp_path: Path) -> None:
    """A jump (not a call) from a copy to original code goes through a veneer that keeps IP:
    AAPCS frees IP only at calls (samples/ip_jump.c: cachesim copies the procedure that
    loads, not the one it jumps to, which adds IP)."""
    program = build("ip_jump", "Os-thumb-static")
    original = run_prog(place(program, tmp_path, "orig"))
    assert (original.returncode, original.stdout) == (0, b"1234 1234\n")
    assert_same_behaviour(original, run_prog(instrument(program, "cachesim", tmp_path)))

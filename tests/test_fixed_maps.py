"""The instrumentation's region keeps clear of memory the program maps at fixed addresses
(decision 0077).

CLISP reserves 0xc0000000-0xe0000000 with mmap(MAP_FIXED) before it builds its heap, and
under qemu-arm that is where a PIE's region went (the load bias 0x40000000 plus
0x80000000): the reservation replaced the instrumented code and the copy died of SIGSEGV
at its next instruction. samples/fixed_maps.c reserves both default places (0x80000000
for a fixed-address program, 0xc0000000 for a PIE) and works in pages mapped inside them.

The oracles: the original under qemu-arm (output, exit status) and qemu's count of the
executable's instructions it ran; the reserved ranges as the sample's source writes them.
"""

from __future__ import annotations

import pytest

from rewriter.emit import region_place
from tests.support.rehost import ServerProcess, run_rehost
from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build

RESERVED = [(0x80000000, 0xA0000000), (0xC0000000, 0xE0000000)]  # fixed_maps.c's reserve() calls


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_region_keeps_clear_of_fixed_mappings(variant: str, tmp_path) -> None:
    built = build("fixed_maps", variant)
    original, pcs, ir = traced_original(built, tmp_path)
    assert original.returncode == 0
    assert original.stdout.startswith(b"0x80000000 0xc0000000 0x80010000 0xc0010000 ")
    claimed = region_place.claimed_ranges(ir)
    assert all(reserved in claimed for reserved in RESERVED), claimed

    inst = run_prog(instrument(built, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())
    if variant == "O2-thumb-dyn":  # ReHost's copy is laid out by the same emitter
        rehost = instrument(built, "inscount", tmp_path, "--mode", "rehost", slot="rhst")
        with ServerProcess() as server:
            run, _ = run_rehost(rehost, server.address)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
        assert results(run, "inscount") == results(inst, "inscount")


def test_programs_claiming_nothing_keep_the_usual_offset(tmp_path) -> None:
    """A program that maps nothing at a fixed address claims its own image only (where qemu-arm
    loads it) and gets the region where it always went."""
    ir = traced_original(build("addresses", "O2-thumb-dyn"), tmp_path)[2]
    claimed = region_place.claimed_ranges(ir)
    assert len(claimed) == 1 and claimed[0][0] <= region_place.QEMU_PIE_BIAS + ir.entry < claimed[0][1], claimed
    assert region_place.region_offset(ir, claimed) == region_place.CANDIDATES[0]


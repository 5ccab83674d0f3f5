"""A shared library that ends the program with ``_exit`` (decision 0077).

CHICKEN's runtime (libchicken) ends every CHICKEN program with ``_exit``: the process
ends without passing the executable's end points (its ``_fini``, which ``exit`` runs,
and its own calls of ``_exit``), and the copies of CHICKEN's compiler wrote no results,
InHost or ReHost. samples/library_exit: the executable works, then a function of its
library calls ``_exit(3)``. The runtime now leads the libraries' GOT slots of ``_exit``
and ``_Exit`` to the program's end.

The oracles: the original under qemu-arm (output, exit status) and qemu's count of the
executable's instructions it ran.
"""

from __future__ import annotations

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import ServerProcess, run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build_with_libraries


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_a_library_ending_the_program_ends_it_with_results(variant: str, tmp_path) -> None:
    binary, libraries = build_with_libraries("library_exit", variant)
    env = {"LD_LIBRARY_PATH": str(libraries)}
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, env=env)
    assert (original.returncode, original.stdout.splitlines()[-1]) == (3, b"the library ends the program with 3")
    executed = sum(exe_pcs(trace_pcs(placed, env=env), placed).values())

    inst = run_prog(instrument(binary, "inscount", tmp_path), env=env)
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == executed
    if variant == "O2-thumb-dyn":
        rehost = instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst")
        with ServerProcess() as server:
            run, outcome = run_rehost(rehost, server.address, env=env)
        assert outcome.summary is not None and outcome.summary.complete, outcome.error
        assert (run.returncode, run.stdout) == (original.returncode, original.stdout)
        assert results(run, "inscount") == results(inst, "inscount")

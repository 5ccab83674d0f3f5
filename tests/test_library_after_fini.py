"""Code of the executable that runs after its own finalisers (decision 0113).

glibc's exit runs the executable's DT_FINI_ARRAY functions and DT_FINI first, then its
libraries' finalisers; those may call back into the executable: a function the executable
also defines (a C++ program's inline functions and template instances interpose a
library's own copies) or a callback it registered. The copies' end was the executable's
own finalisers, so what ran after them was not counted (ceph's cephfs-mirror: 80 calls of
its copy of a C++ destructor, from libceph-common's static objects' destructors).
samples/library_after_fini: liblate.so's finaliser calls the executable's ``tally``
(interposed) and ``stir`` (a callback) after the executable's finaliser has run.

The oracles: the original under qemu-arm (output, exit status) and qemu's count of the
executable's instructions it ran; ReHost's results against InHost's.
"""

from __future__ import annotations

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import assert_inscount_in_both_modes
from tests.support.run import place, run_prog
from tests.support.samples import build_with_libraries


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_code_run_after_the_executables_finalisers_is_counted(variant: str, tmp_path) -> None:
    binary, libraries = build_with_libraries("library_after_fini", variant)
    env = {"LD_LIBRARY_PATH": str(libraries)}
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, env=env)
    lines = original.stdout.splitlines()
    assert original.returncode == 0 and [line.split()[0] for line in lines] == [b"main", b"own", b"late"]
    executed = sum(exe_pcs(trace_pcs(placed, env=env), placed).values())
    assert_inscount_in_both_modes(binary, original, tmp_path, executed, env)

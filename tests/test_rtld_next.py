"""Library functions found with dlsym(RTLD_NEXT, ...) from instrumented code (decision 0176).

glibc's dlsym and dlvsym find the calling object by the return address their call leaves,
and RTLD_NEXT looks in the objects loaded after it. A copy's return address is in no
loaded object: glibc refused the lookup ("RTLD_NEXT used in code not dynamically loaded")
and returned NULL, on ARM and x86-64, with every tool. Programs that interpose a library
function find the real one so, and clang's sanitizer run times (linked into the program)
find the C library's functions so as they start: such programs failed or crashed. Now the
calls that reach dlsym (at its PLT entry or GOT slot, or through a function that goes on
to it by a tail jump, copied or not) leave the original return address.

samples/rtld_next.c looks up three functions (directly, through a tail call, a versioned
one) and uses them; the oracle is the original's run: every copy prints and exits as it
does (all three found).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import samples
from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_native_copies_behave, assert_same_behaviour, instrument, place, run_prog

FOUND = b"puts found, strlen found, memcpy found\n"


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie", "O0-arm-dyn"])
def test_arm_copies_find_the_next_objects_functions(variant: str, tmp_path: Path) -> None:
    program = samples.build("rtld_next", variant)
    original = run_prog(place(program, tmp_path, "orig"))
    assert original.returncode == 0 and original.stdout.startswith(FOUND)
    # (cachesim leaves the tail-calling lookup in place: it makes no access.)
    for tool, slot in (("inscount", "insc"), ("cachesim", "cach"), ("bbcount", "bbco")):
        assert_same_behaviour(original, run_prog(instrument(program, tool, tmp_path, slot=slot)))
    copy = instrument(program, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    run, outcome = run_rehost_alone(copy)
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error


@pytest.mark.parametrize("variant", ["x64-gcc-O2", "x64-gcc-O2-noplt", "x64-gcc-O3-nopie", "x64-clang-O2"])
def test_x86_64_copies_find_the_next_objects_functions(variant: str, tmp_path: Path) -> None:
    original = assert_native_copies_behave(samples.build_x86_64("rtld_next", variant),
                                           ("inscount", "cachesim", "memtrace"), tmp_path)
    assert original.returncode == 0 and original.stdout.startswith(FOUND)

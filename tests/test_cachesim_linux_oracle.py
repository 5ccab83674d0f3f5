"""cachesim against an independent oracle on real Linux builds (dynamically linked, glibc).

tests/test_cachesim_oracle.py checks cachesim's exactness on freestanding programs under
unicorn; here the oracle is tests/oracles/qemu_accesses.py: qemu-arm's register state
before every executed instruction of the executable, each memory instruction decoded
with capstone and its accesses computed from those registers (one per register for
multi-register transfers, none when the condition fails), without any of Anvil's code.
That stream, fed to the plain-Python reference cache (tests/oracles/cache_model.py), must
give exactly the loads, stores, hits and misses the instrumented program reports, for
cachesim's default geometry and a small two-way one with one line kept inline.

A dynamic program's results are written as the C library's ``_Exit`` is entered, after
everything of the executable has run, ``_fini`` (DT_FINI) included (decision 0111): the
whole stream counts.

Cost: about 7 s of qemu-arm and log parsing per case (1.0 to 1.7 million instructions
of the executable; the log is ~330 bytes an instruction, streamed, never on disk).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.cache_model import simulate
from tests.oracles.qemu_accesses import trace_accesses
from tests.support.run import assert_same_behaviour, instrument_ir, place, results, run_prog
from tests.support.samples import build

#: (size, assoc, line, kept): cachesim's defaults, and a small cache that misses often.
GEOMETRIES = [(16384, 8, 64, 2), (1024, 2, 32, 1)]


# Each sample and each instruction set by default, the other two pairs in the extended tier
# (decision 0185).
@pytest.mark.parametrize(("sample", "variant"), [
    ("hash", "O2-thumb-dyn"), ("sort", "O2-arm-dyn-nopie"),
    pytest.param("hash", "O2-arm-dyn-nopie", marks=pytest.mark.extended),
    pytest.param("sort", "O2-thumb-dyn", marks=pytest.mark.extended)])
def test_cachesim_matches_qemu_register_oracle(sample: str, variant: str, tmp_path: Path) -> None:
    binary = build(sample, variant)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    # The same absolute path (so the same stack) as run_prog gives the instrumented copy.
    trace = trace_accesses(placed.resolve(), argv0="prog")
    assert (trace.returncode, trace.stdout, trace.stderr) == (original.returncode, original.stdout, original.stderr)
    ir = load_binary(str(binary))
    assert ir.is_dynamic
    stream = [(address, is_store) for _pc, address, _size, is_store in trace.accesses]
    assert sum(store for _, store in stream) > 1000 and len(stream) > 100_000
    for size, assoc, line, kept in GEOMETRIES:
        expected = simulate(stream, size, assoc, line)
        want = {key: expected[key] for key in ("loads", "stores", "misses", "load_misses", "store_misses")}
        want["hits"] = expected["accesses"] - expected["misses"]
        inst = run_prog(instrument_ir(ir, "cachesim", tmp_path, size=str(size), assoc=str(assoc), line=str(line),
                                      kept=str(kept)))
        assert_same_behaviour(original, inst)
        got = results(inst, "cachesim")
        assert {key: got[key] for key in want} == want, (size, assoc, line, kept)

"""cachesim against an independent oracle on real Linux builds (dynamically linked, glibc).

tests/test_cachesim_oracle.py checks cachesim's exactness on freestanding programs under
unicorn; here the oracle is tests/oracles/qemu_accesses.py: qemu-arm's register state
before every executed instruction of the executable, each memory instruction decoded
with capstone and its accesses computed from those registers (one per register for
multi-register transfers, none when the condition fails), without any of Anvil's code.
That stream, fed to the plain-Python reference cache (tests/oracles/cache_model.py), must
give exactly the loads, stores, hits and misses the instrumented program reports, for
cachesim's default geometry and a small two-way one with one line kept inline.

A dynamic program's results are written as ``_fini`` (DT_FINI) starts, so the accesses
of ``_fini``'s own instructions come after them and are left out (as
tests/test_inhost.py's _assert_trace_covers does); nothing else of the executable runs
after ``_fini`` starts, which is checked.

Cost: about 7 s of qemu-arm and log parsing per case (1.0 to 1.7 million instructions
of the executable; the log is ~330 bytes an instruction, streamed, never on disk).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from rewriter.ir.model import Binary
from tests.oracles.cache_model import simulate
from tests.oracles.qemu_accesses import AccessTrace, trace_accesses
from tests.support.run import assert_same_behaviour, instrument_ir, place, results, run_prog
from tests.support.samples import build

#: (size, assoc, line, kept): cachesim's defaults, and a small cache that misses often.
GEOMETRIES = [(16384, 8, 64, 2), (1024, 2, 32, 1)]


def fini_pcs(ir: Binary) -> set[int]:
    """Addresses of the instructions of a dynamic program's ``_fini`` (DT_FINI) procedure."""
    return {ins.address for proc in ir.procedures if proc.address == ir.fini or proc.name == "_fini"
            for ins in proc.instructions()}


def before_fini(trace: AccessTrace, fini: set[int]) -> list[tuple[int, bool]]:
    """``(address, is_store)`` of the executable's accesses up to ``_fini``'s first one."""
    stream: list[tuple[int, bool]] = []
    for i, (pc, address, _size, is_store) in enumerate(trace.accesses):
        if pc in fini:
            later = [hex(p) for p, *_ in trace.accesses[i:] if p not in fini]
            assert not later, f"accesses outside _fini after it started, at {later[:5]}"
            break
        stream.append((address, is_store))
    return stream


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
@pytest.mark.parametrize("sample", ["sort", "hash"])
def test_cachesim_matches_qemu_register_oracle(sample: str, variant: str, tmp_path: Path) -> None:
    binary = build(sample, variant)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    # The same absolute path (so the same stack) as run_prog gives the instrumented copy.
    trace = trace_accesses(placed.resolve(), argv0="prog")
    assert (trace.returncode, trace.stdout, trace.stderr) == (original.returncode, original.stdout, original.stderr)
    ir = load_binary(str(binary))
    assert ir.is_dynamic
    fini = fini_pcs(ir)
    assert fini, "no _fini procedure"
    stream = before_fini(trace, fini)
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

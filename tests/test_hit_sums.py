"""A repeat filter's hits counted in NEON registers (decision 0019, emit/procedure_sums.py).

cachesim's inline filter counts the accesses it settles (hits on a set's two most recent
lines) in d28/d29 rather than in memory; each procedure stores them into their slots
wherever control may leave it and resets them wherever it may be entered, as decision
0014's instruction sums are. Checked end to end against an independent answer: the
program's every access as memtrace records it, run through the plain-Python reference
cache, must give cachesim's loads, stores and misses exactly, for a program whose flow
leaves and re-enters procedures every way the scheme has to survive (tests/
test_procedure_sums.py's: a signal handler, longjmp, a library calling back, computed
gotos, the end two calls down), and for one calling a library that writes d24, d28, d29
and d31 (what the resets at return sites are for).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.oracles.cache_model import simulate
from tests.support.run import Run, assert_same_behaviour, instrument, place, results, run_prog
from tests.test_procedure_sums import FLOWS_C, build_with_clobber_library

CLOBBER_LIB_C = r"""
/* A shared library (never instrumented) that writes every register the instrumented
 * program keeps running sums in: d28 and d29 (filter hits), d31 (instruction sums), and
 * d24, which holds the -1 the hits add. */
void clobber(unsigned x) {
    if (x & 2)
        __asm__ volatile("vmov.i64 d28, #0xff00ff00ff00ff00\n\tvmov.i64 d29, #0xff\n\tvmov.i64 d31, #0xff00\n\t"
                         "vmov.i64 d24, #0xff" ::: "d24", "d28", "d29", "d31");
    else
        __asm__ volatile("vmov.i64 d28, #0xff\n\tvmov.i64 d29, #0xff0000\n\tvmov.i64 d31, #0xff\n\t"
                         "vmov.i64 d24, #0" ::: "d24", "d28", "d29", "d31");
}
"""

GEOMETRY = (16384, 8, 64)  # cachesim's defaults


def _expected_from_memtrace(binary: Path, tmp_path: Path, original: Run) -> dict[str, int]:
    """The reference cache's figures for every access memtrace sees the program make."""
    traced = run_prog(instrument(binary, "memtrace", tmp_path, slot="trce"))
    assert_same_behaviour(original, traced)
    records = results(traced, "memtrace")["records"]
    return simulate([(kind, ea) for _, ea, _, kind in records], *GEOMETRY)


def _check_cachesim(binary: Path, tmp_path: Path) -> None:
    original = run_prog(place(binary, tmp_path, "orig"))
    expected = _expected_from_memtrace(binary, tmp_path, original)
    inst = instrument(binary, "cachesim", tmp_path)
    report = json.loads(Path(str(inst) + ".anvil.json").read_text())
    assert report["filter_hits_in_registers"] > 0  # the register scheme is what ran
    run = run_prog(inst)
    assert_same_behaviour(original, run)
    got = results(run, "cachesim")
    for key in ("loads", "stores", "load_misses", "store_misses"):
        assert got[key] == expected[key], (key, got, expected)


@pytest.mark.parametrize("flags", [[], ["-static"], ["-fpie", "-pie"], ["-O1", "-fno-omit-frame-pointer"]],
                         ids=["dyn", "static", "pie", "O1-fp"])
def test_hits_in_registers_equal_the_reference_cache(flags: list[str], tmp_path: Path) -> None:
    (tmp_path / "flows.c").write_text(FLOWS_C)
    binary = tmp_path / "flows"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-mthumb", *flags, str(tmp_path / "flows.c"),
                    "-o", str(binary)], check=True)
    _check_cachesim(binary, tmp_path)


def test_hits_survive_a_library_that_writes_their_registers(tmp_path: Path) -> None:
    _check_cachesim(build_with_clobber_library(tmp_path, CLOBBER_LIB_C), tmp_path)

"""Threads a library's pool starts run the program's code (decision 0113).

oneTBB starts its worker threads itself, on the first parallel algorithm, and they run the
program's task bodies; the executable imports none of the thread starts the rewrite knew
(decision 0087), only TBB's entries. OpenVDB's vdb_tool (Debian 12) was rewritten as a
program of one thread: its inscount copy counted 251,044 instructions fewer than QEMU
(the workers' running sums in registers were never stored), and its cachesim copy said
"records were made on more than one thread" and lost them.

samples/tbb_workers.cpp, built against Debian's libtbb-dev: a parallel_for sums a function
over a range in chunks. The oracles: the sum the program's definition gives, the original's
output under qemu-arm, qemu's count of the executable's instructions (all threads), and
ReHost's results against InHost's (equal up to the run-to-run spread of TBB's own code).

This sample did not make the copies fail before the change (its counts, InHost's and
QEMU's, agreed within that spread; no records were lost): what it shows is that the rewrite
now knows the program has threads, and that the copies made so behave and count as the
original. vdb_tool's rerun in decision 0111 is the evidence of the failure and the fix.
"""

from __future__ import annotations

from pathlib import Path

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import assert_inscount_in_both_modes
from tests.support.run import assert_same_behaviour, instrument, place, run_prog
from tests.support.samples import CXX, SAMPLES_DIR, _cache_key, _compile, cache_dir, debian_packages

TBB = ["libtbb-dev:armhf", "libtbb12:armhf"]
TOTAL = sum((i % 1024) ** 2 % 1009 + ((i * 2654435761 & 0xFFFFFFFF) >> 20) for i in range(1 << 18))


def _build() -> tuple[Path, dict[str, str]]:
    """samples/tbb_workers.cpp built (Thumb-2 PIE, cached) against Debian's oneTBB; the
    environment that finds libtbb."""
    root = debian_packages("tbb-dev", TBB, "usr/include/tbb/parallel_for.h")
    source = SAMPLES_DIR / "tbb_workers.cpp"
    flags = ["-O2", f"-I{root}/usr/include"]
    out = cache_dir() / f"tbb_workers-{_cache_key(source.read_bytes(), *flags, *TBB)}"
    libs = root / "usr" / "lib" / "arm-linux-gnueabihf"
    if not out.is_file():
        _compile([CXX, *flags], [str(source), f"-L{libs}", "-ltbb"], out)
    return out, {"LD_LIBRARY_PATH": str(libs)}


def test_workers_of_a_library_pool(tmp_path: Path) -> None:
    binary, env = _build()
    assert load_binary(str(binary)).threaded
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, env=env)
    assert original.returncode == 0 and int(original.stdout) == TOTAL
    executed = sum(exe_pcs(trace_pcs(placed, env=env), placed).values())
    # TBB's own code in the executable (its task tree's reference counts, which thread
    # finishes a node last) runs a few dozen instructions more or fewer from run to run:
    # QEMU's counts of the original varied by up to 65 of 2,144,500.
    assert_inscount_in_both_modes(binary, original, tmp_path, executed, env, slack=executed // 10000)
    cachesim = run_prog(instrument(binary, "cachesim", tmp_path, slot="csim"), env=env)
    assert_same_behaviour(original, cachesim)

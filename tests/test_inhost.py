"""InHost end to end: every sample in every build variant, instrumented with every tool.

For each (sample, variant):
- transparency: stdout, stderr and exit status of each instrumented binary equal the
  original's (same path length, argv[0] and empty environment);
- inscount's total equals the number of the executable's instructions that
  ``qemu-arm -singlestep -d exec,nochain`` executes in the original;
- bbcount's count of every block equals qemu's count of the block's first
  instruction (each block runs its first instruction exactly once per entry);
- cachesim runs transparently and its figures add up (its exactness against an
  independent access stream is tests/test_cachesim_oracle.py);
- memtrace runs transparently and records every access of every memory instruction
  qemu executed: per instruction, its executions times its accesses (fewer for a
  conditional one whose condition failed), each with the access's size and kind. On the
  -O2 dynamic builds (Thumb, PIE, A32): a trace is 40 bytes an access, 100 MB for the
  -O0 hash sample, and writing and reading them took five minutes of the test run.
  Static programs' traces are checked by test_hit_sums.py and test_deferred.py.

Instructions in ld.so and shared libraries are not the executable's: qemu's PCs are
filtered to the executable's own code, and Anvil does not instrument them either.
"""

from __future__ import annotations

from collections import Counter

import pytest

from rewriter.ir.elf_loader import load_binary
from rewriter.ir.model import Binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument_ir, place, results, run_prog
from tests.support.samples import SAMPLES, VARIANTS, build, sample_matrix

ARGS = {"calls": ["stdin", "two words"]}
STDIN = {"calls": b"some input for the calls sample\n"}
MEMTRACE_VARIANTS = ("O2-thumb-dyn", "O2-thumb-pie", "O2-arm-dyn-nopie")


@pytest.mark.parametrize(("sample", "variant"), sample_matrix(SAMPLES, sorted(VARIANTS)))
def test_sample_all_tools(sample: str, variant: str, tmp_path) -> None:
    binary = build(sample, variant)
    args, stdin = ARGS.get(sample, []), STDIN.get(sample, b"")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args, stdin)
    # Same path length as the instrumented copy: static glibc walks the executable's path.
    trace = trace_pcs(placed, args, stdin, argv0="prog")
    assert trace.returncode == original.returncode
    pcs = exe_pcs(trace, placed)
    ir = load_binary(str(binary))  # loaded once, instrumented by each tool in turn

    inst = run_prog(instrument_ir(ir, "inscount", tmp_path), args, stdin)
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())

    inst = run_prog(instrument_ir(ir, "bbcount", tmp_path), args, stdin)
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    assert counts, "no block executed"
    wrong = {b["address"]: (b["count"], pcs[b["address"]]) for b in counts if b["count"] != pcs[b["address"]]}
    assert not wrong, f"blocks whose count differs from qemu's (ours, qemu): {list(wrong.items())[:5]}"
    assert sum(b["count"] * b["instructions"] for b in counts) == sum(pcs.values())

    inst = run_prog(instrument_ir(ir, "cachesim", tmp_path), args, stdin)
    assert_same_behaviour(original, inst)
    cache = results(inst, "cachesim")
    assert cache["loads"] > 0 and cache["stores"] > 0
    assert cache["hits"] + cache["misses"] == cache["loads"] + cache["stores"]

    if variant in MEMTRACE_VARIANTS:
        inst = run_prog(instrument_ir(ir, "memtrace", tmp_path), args, stdin)
        assert_same_behaviour(original, inst)
        _assert_trace_covers(results(inst, "memtrace")["records"], ir, pcs, trace.load_bias)


def _assert_trace_covers(records: list, ir: Binary, pcs: Counter[int], bias: int) -> None:
    """memtrace's records (run-time ``pc``) against qemu's executions of each instruction
    (``pcs``, link-time): every access of every execution, with the access's size and kind.
    A dynamic program's end is seen as _fini (DT_FINI) starts: its own accesses come after."""
    seen: dict[int, Counter] = {}
    for pc, _, size, kind in records:
        seen.setdefault((pc - bias) & 0xFFFFFFFF, Counter())[(size, kind == "S")] += 1
    for proc in ir.procedures:
        if ir.is_dynamic and (proc.address == ir.fini or proc.name == "_fini"):
            for ins in proc.instructions():
                seen.pop(ins.address, None)
            continue
        for ins in proc.instructions():
            if not ins.accesses:
                continue
            got = seen.pop(ins.address, Counter())
            runs = pcs.get(ins.address, 0)
            expected: Counter = Counter()
            for a in ins.accesses:
                expected[(a.size, a.is_store)] += runs
            conditional = ins.cond != 14 or ins.in_it
            strange = [key for key in got if key not in expected]
            assert not strange, f"{ins}: records of (size, store) {strange} it does not make"
            for key, n in expected.items():
                assert got[key] <= n if conditional else got[key] == n, \
                    f"{ins}: {got[key]} records of {key}, qemu ran it {runs} times"
    assert not seen, f"records at instructions that do not access memory: {sorted(seen)[:5]}"

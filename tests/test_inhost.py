"""InHost end to end: every sample in every build variant, instrumented with every tool.

For each (sample, variant):
- transparency: stdout, stderr and exit status of each instrumented binary equal the
  original's (same path length, argv[0] and empty environment);
- inscount's total equals the number of the executable's instructions that
  ``qemu-arm -singlestep -d exec,nochain`` executes in the original;
- bbcount's count of every block equals qemu's count of the block's first
  instruction (each block runs its first instruction exactly once per entry);
- cachesim runs transparently and its figures add up (its exactness against an
  independent access stream is tests/test_cachesim_oracle.py).

Instructions in ld.so and shared libraries are not the executable's: qemu's PCs are
filtered to the executable's own code, and Anvil does not instrument them either.
"""

from __future__ import annotations

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument_ir, place, results, run_prog
from tests.support.samples import SAMPLES, VARIANTS, build

ARGS = {"calls": ["stdin", "two words"]}
STDIN = {"calls": b"some input for the calls sample\n"}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("sample", SAMPLES)
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

"""Stripped binaries (no symbols, no mapping symbols): code found by recursive descent.

Behaviour must stay identical with every tool. Counting is exact only for the code the
descent finds (code reached only through pointers it cannot see runs as it is), so the
count may fall short of qemu's but never exceed it.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


# calls-O2-arm-static: its A32 functions, reached only through a table of pointers, run in
# place and call libgcc's division past the entry the rewriter patches (ir/gaps.py).
@pytest.mark.parametrize("sample, variant", [("sort", "O2-thumb-dyn"), ("hash", "O2-arm-dyn-nopie"),
                                             ("calls", "O0-arm-dyn"), ("calls", "O2-arm-static")])
def test_stripped_transparent(sample: str, variant: str, tmp_path) -> None:
    stripped = tmp_path / "stripped"
    subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(stripped), str(build(sample, variant))], check=True)
    args = ["stdin", "x"] if sample == "calls" else []
    placed = place(stripped, tmp_path, "orig")
    original = run_prog(placed, args, b"input\n")
    qemu_total = sum(exe_pcs(trace_pcs(placed, args, b"input\n", argv0="prog"), placed).values())
    for tool in ("inscount", "bbcount", "cachesim"):
        inst = run_prog(instrument(stripped, tool, tmp_path), args, b"input\n")
        assert_same_behaviour(original, inst)
        got = results(inst, tool)
        if tool == "inscount":
            assert 0 < got["total"] <= qemu_total

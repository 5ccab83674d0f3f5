"""Coroutines by ucontext in static programs (decision 0201).

glibc's A32 ``setcontext``, which ``swapcontext`` ends in, jumps by ``ldm lr, {lr, pc}``: a
load of several registers with PC among them from a base other than SP. The relocation
took that for a computed jump it could not move, and the procedure ran in place, uncounted:
in a static program every switch of coroutines lost 18 instructions (a sweep's generator of
1000 round trips counted 273,221 instructions of qemu's 309,221; every static gccgo program
switches goroutines so). samples/coroutines.c switches between a generator and its caller
3000 times, resumes a context by ``setcontext`` 99 times, and leaves a deep recursion by
``longjmp``.

Oracles: qemu's count of every instruction the original runs, procedure by procedure, and
the original's behaviour.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build


def _expected_output(rounds: int = 3000) -> bytes:
    """What samples/coroutines.c prints, computed here: the Collatz steps of 1..rounds and
    the longest; 100 resumptions; the sum ``dive`` builds (32-bit words) mod 1000, plus 1;
    what the functions reached by ``ldm`` return, 50 times."""
    steps = []
    for start in range(1, rounds + 1):
        n, count = start, 0
        while n != 1:
            n, count = (3 * n + 1 if n & 1 else n // 2), count + 1
        steps.append(count)
    total = 7
    for depth in range(200, 0, -1):
        total = (total * 31 + depth) & 0xFFFFFFFF
    jumps = 50 * ((rounds * 7 + 1) + (11 * 5 + 13 * 3 + 17))  # landed(rounds), landed_back(11, _, 13)
    return (f"steps {sum(steps)}, longest {max(steps)}\nresumed 100 times\n"
            f"longjmp gave {total % 1000 + 1}\njumps by loads gave {jumps}\n").encode()


@pytest.mark.parametrize("variant", ["O2-arm-static", "Os-thumb-static"])
def test_coroutines_counted_in_a_static_program(variant: str, tmp_path: Path) -> None:
    """No procedure is left in place for a jump it cannot move; inscount's copy counts what
    qemu counts, in all and in setcontext; the inscount and cachesim copies behave as the
    original."""
    program = build("coroutines", variant)
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed)
    assert (original.returncode, original.stdout) == (0, _expected_output())
    pcs = exe_pcs(trace_pcs(placed, argv0="prog", reuse=True), placed)

    inst = instrument(program, "inscount", tmp_path)
    report = json.loads(inst.with_name(inst.name + ".anvil.json").read_text())
    assert report["not_instrumented"] == []  # (before: setcontext, "ldm lr, {lr, pc}: computed jump ...")
    counted = run_prog(inst)
    assert_same_behaviour(original, counted)
    counts = results(counted, "inscount")
    assert counts["total"] == sum(pcs.values())
    binary = load_binary(str(program))
    found = {ins.address: proc.name for proc in binary.procedures for ins in proc.instructions()}
    expected: Counter[str] = Counter()
    for pc, times in pcs.items():
        expected[found[pc]] += times
    assert expected["setcontext"] > 0 and counts["procedures"].get("setcontext") == expected["setcontext"]

    assert_same_behaviour(original, run_prog(instrument(program, "cachesim", tmp_path, slot="cach")))

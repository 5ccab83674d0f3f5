"""A signal handler that runs on top of Anvil's analysis code, on its stack.

The tool ``tests/data/tools/raiser.py`` counts procedure entries and, in its routine at
``poke``'s entry, sends the process SIGUSR1 (samples/handler_on_analysis.c): the signal
is delivered while the routine is in its system call on the hook stack, and the program's
handler, instrumented, calls the routine again and then sigaction (which Anvil's runtime
looks at first). A nested call that took the hook stack from its top again overwrote the
frames of the code it interrupted, which then returned through a clobbered link register
(seen under a timer: samples/ticks.c's last handler run landing just after a flush gave
its signal mask back, test_deferred.py). What must hold: the program ends as it would with
one SIGUSR1 per poke, and every procedure's entries equal qemu's count of its first
instruction in the original, plus one run of the handler (and of its call of sigaction)
per poke.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run import instrument, run_prog, traced_original
from tests.support.samples import build

RAISER = Path(__file__).parent / "data" / "tools" / "raiser.py"
ROUNDS = 50  # samples/handler_on_analysis.c


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_a_handler_on_the_analysis_stack_leaves_its_frames_alone(variant: str, tmp_path: Path) -> None:
    binary = build("handler_on_analysis", variant)
    original, pcs, ir = traced_original(binary, tmp_path)
    poked = sum(range(ROUNDS))
    assert original.stdout == f"handled=0 poked={poked}\n".encode() and original.returncode == 0
    run = run_prog(instrument(binary, str(RAISER), tmp_path))
    assert (run.stdout, run.stderr, run.returncode) == (f"handled={ROUNDS} poked={poked}\n".encode(), b"", 0)

    got = {}
    for line in (run.cwd / "prog.raiser.out").read_text().splitlines():
        address, count = map(int, line.split())
        got[address & ~1] = count
    by_name = {p.name: p.address for p in ir.procedures}
    expected = {p.address: pcs[p.address] for p in ir.procedures if pcs[p.address]}
    assert expected[by_name["poke"]] == ROUNDS
    expected[by_name["on_usr1"]] = ROUNDS
    expected[by_name["sigaction@plt"]] += ROUNDS  # the handler's own call
    assert got == expected

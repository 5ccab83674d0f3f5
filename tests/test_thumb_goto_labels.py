"""Computed-goto labels of Thumb code, known only as even words in data (decision 0075).

samples/thumb_goto.c, static (fixed addresses) and stripped: an interpreter that jumps
through a table of label addresses read through a pointer kept in memory, as glibc's
printf does in a static program. GCC keeps the labels even in data and sets the Thumb bit
at the jump (``orr rX, rX, #1; bx rX``), so no reading of the code before the jump finds
the table, and an even word in data looked like an A32 function: in Debian's static zsh,
one whose bytes read as A32 was decoded so, its "branch" to Thumb code could not be
emitted and the rewrite failed; labels that did not read as A32 were not found and ran in
place, uncounted.

The oracles: the interpreter's result computed here in Python, the unstripped build's
symbol for run(), and qemu's trace of the original (every instruction of run() that runs
is one the descent found in Thumb code, and inscount counts each as often as qemu runs it).
"""

from __future__ import annotations

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import build, stripped, symbol_span

PROGRAM = [0, 1, 3, 4, 5, 0, 2, 1, 0, 3, 5, 4, 8]


def _interpret(code: list[int], x: int, direct: int) -> int:
    """samples/thumb_goto.c's run(), in 32-bit arithmetic."""
    def wrap(v: int) -> int:
        return (v + 2**31) % 2**32 - 2**31

    acc = 0
    ops = ["add", "mul", "neg", "dbl", "sub", "xor", "add", "mul", "end"]
    op = {1: "add", 2: "mul", 3: "neg"}.get(direct)
    pc = 0
    while True:
        if op is None:
            op, pc = ops[code[pc]], pc + 1
        if op == "end":
            return acc
        if op == "add":
            acc = wrap(acc + x)
        elif op == "mul":
            acc = wrap(acc * (x + 1))
        elif op == "neg":
            acc = wrap(-acc)
        elif op == "dbl":
            acc = wrap(acc + (acc ^ 0x55AA))
        elif op == "sub":
            acc = wrap(acc - (3 * x - 7))
        else:
            acc = wrap(acc ^ wrap(x << 3))
        op = None


def test_thumb_labels_in_data_are_thumb_code(tmp_path) -> None:
    built = build("thumb_goto", "Os-thumb-static")
    start, end = symbol_span(built, "run")
    program = stripped(built, tmp_path / "stripped")
    original, pcs, ir = traced_original(program, tmp_path)
    expected = f"{_interpret(PROGRAM, 5, 0)} {_interpret(PROGRAM[2:], 7, 2)}\n".encode()
    assert (original.returncode, original.stdout) == (0, expected)
    executed = {pc: n for pc, n in pcs.items() if start <= pc < end}

    procs = [p for p in ir.procedures if start <= p.address < end]
    thumb = {i.address for p in procs if p.thumb for i in p.instructions()}
    missed = sorted(pc for pc in executed if pc not in thumb)
    assert not missed, f"run() executed but not found as Thumb code: {[hex(pc) for pc in missed]}"

    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    counted = results(inst, "inscount")["procedures"]
    assert sum(counted.get(p.name, 0) for p in procs) == sum(executed.values())

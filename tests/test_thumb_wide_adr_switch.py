"""GCC's Thumb-2 switches whose table address comes from the 32-bit ADR, which capstone
reads as ``addw rT, pc, #n`` / ``subw rT, pc, #n`` (samples/thumb_wide_adr_switch.c,
gcc -O2 -mthumb, PIE, stripped; decision 0082)::

    cmp rI, #N ; bhi default ; addw rT, pc, #n ; ldr.w rX, [rT, rI, lsl #2] ; add rT, rX ; bx rT

SwitchFinder took only ``adr`` for the table's address, so no case of such a switch was
read: the copy's translated ``bx`` found no copy of the case and ran the original in place
(mariadbd: through its original code into return-site jumps, SIGBUS before any output).

Oracles: qemu's trace of the original (every instruction of ``pick`` and ``back`` it runs
must be decoded, and inscount's count of each equals qemu's), the original's behaviour,
and the cases the unstripped build's table words name.
"""

from __future__ import annotations

import pytest

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_function


@pytest.mark.parametrize("function", ["pick", "back"])
def test_wide_adr_switch_cases_are_found(function: str, tmp_path) -> None:
    program, original, ir, proc, decoded, executed = traced_function("thumb_wide_adr_switch", "O2-thumb-dyn", function,
                                                                     tmp_path)
    assert original.stdout.startswith(b"pick ")
    # Every case the table names (its words: offsets from the table, Thumb bit set) and
    # nothing in the table decoded as code.
    jump = next(i for i in proc.instructions() if i.name == "bx" and i.op_str != "lr")
    table = next(i for i in proc.instructions() if i.mnemonic in ("addw", "subw"))
    start = ((table.address + 4) & ~3) + (1 if table.mnemonic == "addw" else -1) * int(table.op_str.split("#")[1], 0)
    cases = ir.switch_cases[jump.address]
    words = [int.from_bytes(ir.read(start + 4 * k, 4), "little") for k in range(len(cases))]
    assert cases == {(start + w) & ~1 for w in words} and executed.keys() >= cases
    assert not [hex(a) for a in decoded if start <= a < start + 4 * len(cases)]

    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["procedures"][proc.name] == sum(executed.values())

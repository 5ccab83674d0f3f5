"""LLVM's A32 switches as rustc emits them (samples/a32_switch.c, clang -O2 -marm, PIE,
stripped; decision 0061)::

    cmp rI, #N ; bhi default ; add rT, pc, #n ; mov r5, #0 ; ldr rX, [rT, rI, lsl #2] ;
    mov r4, #0 ; add pc, rT, rX
    .word case0 - table, ...      (signed: cases before the table as well as after it)

The constants the cases share are scheduled between the table's address and the jump, so
SwitchFinder's exact sequence does not match, and the cases before the table have negative
offsets. The descent used to read no case of such a table: the copy's translated jump
found no copy of the case and ran the original in place (in ripgrep, with original return
addresses, into return-site jumps written over it: SIGSEGV).

Oracles: qemu's trace of the original (every instruction ``run`` and ``mix`` execute must
be decoded, and inscount's count of them equals qemu's), the original's behaviour, and the
cases the unstripped build's jump tables name (read from its symbols' spans).
"""

from __future__ import annotations

import pytest

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_function


@pytest.mark.parametrize("function", ["run", "mix"])
def test_a32_offset_switch_cases_are_found(function: str, tmp_path) -> None:
    program, original, ir, proc, decoded, executed = traced_function("a32_switch", "clang-O2-arm-pie-lld", function,
                                                                     tmp_path)
    assert original.returncode == 0 and original.stdout.startswith(b"run ")
    # The table is data: no instruction of the procedure is decoded in it.
    jump = next(i for i in proc.instructions() if i.name == "add" and i.writes_pc)
    cases = ir.switch_cases[jump.address]
    table_end = min(c for c in cases if c > jump.address)
    assert not [hex(a) for a in decoded if jump.address + 4 <= a < table_end]
    assert any(c < jump.address for c in cases) and executed.keys() >= cases

    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["procedures"][proc.name] == sum(executed.values())

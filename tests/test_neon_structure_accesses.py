"""NEON's element and structure loads and stores (VLD1-4, VST1-4: several registers, one
lane, all lanes, with and without write-back) as memtrace and cachesim see them: the bytes
each reads or writes, against unicorn's stream of the same program's data accesses
(decision 0169). Before, VLD2-4 and VST2-4 made no access at all and a VLD1 of one lane
or all lanes one of 8 bytes: an -O3 program's de-interleaving loops were invisible to
the cache.

Unicorn (QEMU's code) splits a structure access into its elements, memtrace gives one
access per register or element: what must agree is each instruction's bytes, loaded or
stored, in the program's order.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.oracles.freestanding import build_asm
from tests.oracles.unicorn_trace import run_freestanding
from tests.support.run import instrument, run_prog

BODY = """
    ldr r0, =buf
    vld1.8 {d0-d3}, [r0]
    vld1.32 {d4[1]}, [r0]
    vld1.32 {d5[]}, [r0]
    vld1.16 {d6[], d7[]}, [r0]
    add r1, r0, #64
    vld2.16 {d6, d7}, [r1]!
    mov r2, #8
    vld4.8 {d0-d3}, [r1], r2
    vst3.16 {d0[2], d1[2], d2[2]}, [r1]
    vst1.64 {d0-d1}, [r1]
    vld1.8 {q0}, [r1]
    vst2.32 {d0, d2}, [r0]
    vld3.8 {d0, d2, d4}, [r0]!
    vst4.32 {d0[1], d1[1], d2[1], d3[1]}, [r1]
    vld3.8 {d0[], d1[], d2[]}, [r1]
    vld4.16 {d0[], d1[], d2[], d3[]}, [r1:64]
    vst2.8 {d0[7], d1[7]}, [r0]
    movs r0, #0
    movs r7, #1
    svc #0
    .ltorg
    .data
    .balign 64
buf: .space 256
"""


def _program(thumb: bool) -> Path:
    head = ".syntax unified\n.fpu neon\n" + (".thumb\n" if thumb else ".arm\n") + ".text\n.global _start\n"
    head += ".thumb_func\n" if thumb else ""
    return build_asm(head + "_start:" + BODY, "neon_structures_" + ("thumb" if thumb else "arm"))


def _bytes(accesses) -> Counter:
    """Every byte each access moves, with its kind."""
    return Counter((kind, address + i) for kind, address, size in accesses for i in range(size))


@pytest.mark.parametrize("thumb", [True, False], ids=["thumb", "arm"])
def test_structure_accesses_are_the_bytes_moved(thumb: bool, tmp_path: Path) -> None:
    program = _program(thumb)
    oracle = run_freestanding(program)
    assert oracle.exit_status == 0
    copy = instrument(program, "memtrace", tmp_path, fmt="text")
    run = run_prog(copy)
    assert run.returncode == 0, run.stderr
    records = []
    for line in (run.cwd / "prog.memtrace.out").read_text().splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0].startswith("0x"):
            records.append((fields[3], int(fields[1], 16), int(fields[2])))
    assert _bytes(records) == _bytes(oracle.accesses)
    # In the program's order too (an access of several elements is one of memtrace's).
    assert [b for kind, a, s in records for b in range(a, a + s)] == \
        [b for kind, a, s in oracle.accesses for b in range(a, a + s)]

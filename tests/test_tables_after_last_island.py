"""The last island of a program's copy comes before its translation tables (decision 0082).

After the procedures, ``_emit_code`` writes the call stubs, append routines and shared
paths (whose BLs go to the analysis library, at the start of the region, so out of reach
in a large copy) and then one original-to-relocated table per procedure with computed
jumps: a word per original halfword (Thumb) or word (A32). The island holding those
BLs' veneers used to come after the tables; in shellcheck (37 MB of GHC code, computed
jumps everywhere) the tables came to more than a branch reaches, and the rewrite stopped
with "BL/BLX out of range".

Here 17 MB of copied code (zeros standing for the procedures), a procedure whose table is
17 MB (each more than T32's 16 MiB reach) and one call stub, whose routine lies just below
the code, where the analysis library is. Oracle: capstone reads the stub's BL and the
veneer it lands on, which must go to the routine.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

import capstone

from rewriter.arch.code import Code
from rewriter.emit.inhost import _emit_code

BASE = 0x80000000
ROUTINE = BASE - 0x1000  # the analysis routine, in the library before the code
COPIES = 17 << 20  # the procedures' copies: the stub after them is beyond T32's reach of the routine
TABLE_SPAN = 17 << 20  # the procedure's size in bytes: its A32 table has a word per word


def test_call_stub_veneers_come_before_the_tables() -> None:
    proc = SimpleNamespace(address=0x10000, size=TABLE_SPAN, thumb=False, accumulation=None, blocks=[],
                           instructions=lambda: [])
    ctx = SimpleNamespace(inside_pages=False, veneers={}, appends=SimpleNamespace(routines=set()),
                          call_stubs={"cache_sim"}, threads=False, lock_communicator=False, held_signals=True,
                          shared_calls=None,
                          xlate_tables=[(proc, ("xlate", 0))])
    code = Code(BASE, pic=False)
    code.emit(bytes(COPIES))
    _emit_code(code, [], ctx, with_header=False)
    stub = code.labels[("callstub", "cache_sim")]
    table = code.labels[("xlate", 0)]
    assert stub < table and table + TABLE_SPAN - stub > 16 << 20  # the table's end: beyond the stub's reach

    def resolve(label: object) -> int:
        if label in code.labels:
            return code.labels[label]
        if label == ("sym", "cache_sim"):
            return ROUTINE | 1
        if isinstance(label, tuple) and label[0] in ("sym", "sym+"):  # the runtime's data (the hook stack)
            return BASE - (1 << 20) + (label[2] if label[0] == "sym+" else 0)
        if isinstance(label, tuple) and label[0] == "with_bit":
            return resolve(label[1]) | label[2]
        raise KeyError(label)

    image = code.finish(resolve)  # raised RangeError ("BL/BLX out of range") before
    md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB)
    start = stub - BASE
    bl = next(i for i in md.disasm(image[start:start + 256], stub) if i.mnemonic == "bl")
    veneer = int(bl.op_str.lstrip("#"), 0)
    assert veneer - bl.address < (16 << 20) and veneer < table
    # The veneer jumps to the routine: its address (Thumb bit set) is among its first words.
    words = struct.unpack_from("<8I", image, veneer - BASE)
    halves = struct.unpack_from("<16H", image, veneer - BASE)
    movw_movt = {(halves[k + 1] & 0xFF) | ((halves[k + 1] >> 4) & 0x700) | ((halves[k] & 0x400) << 1)
                 | ((halves[k] & 0xF) << 12) for k in range(0, 14, 2)}
    assert ROUTINE | 1 in words or {(ROUTINE | 1) & 0xFFFF, (ROUTINE | 1) >> 16} <= movw_movt

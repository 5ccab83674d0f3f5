"""Stripped A32 static programs (``-marm -static``, glibc linked in): what the descent must
find so that they run as the original (decision 0056).

- GCC's A32 switch is ``cmp rI, #N; addls pc, pc, rI, lsl #2; b default; b case0; ...``:
  the PC reads as the jump's address + 8, so the row of branches starts past the ``b``
  after the jump. The descent decoded only that ``b``; the copy's translated jump then found
  no copy of the case and ran ``main`` in place, into trampolines written over it (SIGILL).
- glibc's A32 ``memset`` at an address that a number in ``.rodata`` names with the Thumb bit
  set was read as Thumb, although A32 code (an interworking stub's ``b``) named it in A32;
  the stub's copy jumped into garbage (SIGSEGV with ``-flto``).

- glibc's IFUNC resolvers (Thumb) return A32 functions as even PC-relative addresses
  (``ldr r0, [pc, #n]; add r0, pc``: ``__memcpy_neon``), named by nothing else: they ran in
  place, uncounted (a third of a memcpy-heavy program's instructions). An even address that
  Thumb code computes is now a guess of an A32 entry, unless it lies in the computing
  procedure itself (vfprintf's computed-goto labels, jumped to by ``mov pc``).

- A fixed-address A32 program calls functions through pointers without the Thumb bit
  (calls's table of operations, a C++ vtable's destructor), which a number in data cannot
  be told from: an even word in data or in a literal pool that names code no descent
  found, reading as the start of an A32 function, is now an entry. And the C++
  personality routine, which only ``.ARM.extab`` names (with its Thumb bit), is one: it
  and what it calls ran uncounted (a quarter of the unwind sample's instructions).
- APCS frames (``-mapcs-frame``; all of Free Pascal's code): ``push {fp, ip, lr, pc}``
  stores the PC, and ``ldmdb fp, {..., sp, pc}`` returns. Procedures with them were left
  uninstrumented (the first "PC-relative with SP", the second an unknown computed jump);
  now the copy stores the original's PC value and the return is one.
- Such A32 functions must not lose to garbage read from numbers: a Thumb reading that
  only an odd word in data gives yields to A32 code branching there, and a program whose
  surest code has no Thumb procedure at all takes no odd word for a Thumb entry (Free
  Pascal's ptop, tests/test_corpus_kinds.py).


Oracles: the original's behaviour; qemu's count of the instructions it runs, all of which
the descent must decode and inscount count; the unstripped build's mapping symbols
(``$a``/``$t``), which say in which instruction set each executed instruction is.
"""

from __future__ import annotations

import bisect

import pytest
from elftools.elf.elffile import ELFFile

from tests.support.run import assert_same_behaviour, instrument, results, run_prog, traced_original
from tests.support.samples import EXPECTED_STATUS, build, stripped, symbol_span
from tests.support.sweep import ARGS, STDIN


def _instruction_sets(binary) -> tuple[list[int], list[str]]:
    """The mapping symbols of ``binary``, sorted: their addresses and kinds (a, t or d)."""
    with binary.open("rb") as fh:
        marks = sorted((s["st_value"], s.name[1]) for s in ELFFile(fh).get_section_by_name(".symtab").iter_symbols()
                       if s.name[:2] in ("$a", "$t", "$d") and s["st_shndx"] != "SHN_UNDEF")
    return [a for a, _ in marks], [k for _, k in marks]


# calls' plain A32 build in the extended tier: hash's checks the same glibc, calls' APCS build
# its own code (decision 0185).
@pytest.mark.parametrize(("sample", "variant"), [("hash", "O2-arm-static"), ("hash", "O2-lto-arm-static"),
                                                 ("matrix", "Os-thumb-static"),
                                                 pytest.param("calls", "O2-arm-static", marks=pytest.mark.extended),
                                                 ("unwind", "O3-arm-unroll-static"),
                                                 ("containers", "clang-O2-arm-static-lld"),
                                                 ("calls", "O2-arm-apcs-static")])
def test_stripped_a32_static(sample: str, variant: str, tmp_path) -> None:
    built = build(sample, variant)
    plain = stripped(built, tmp_path / "stripped")
    args, stdin = ARGS.get(sample, []), STDIN.get(sample, b"")
    original, pcs, ir = traced_original(plain, tmp_path, args, stdin)
    assert original.returncode == EXPECTED_STATUS.get(sample, 0), original
    decoded = {ins.address: ins.thumb for proc in ir.procedures for ins in proc.instructions()}
    # Each executed instruction the descent decoded is in the instruction set the mapping
    # symbols give (memset read as Thumb was not).
    starts, kinds = _instruction_sets(built)
    wrong = [hex(pc) for pc in pcs if pc in decoded
             and kinds[bisect.bisect_right(starts, pc) - 1] != ("t" if decoded[pc] else "a")]
    assert not wrong
    # Every instruction that runs was decoded (main's switch; memcpy chosen by its IFUNC).
    lo, hi = symbol_span(built, "__memcpy_neon")
    assert any(lo <= pc < hi for pc in pcs), "the workload does not run glibc's NEON memcpy"
    assert [hex(pc) for pc in pcs if pc not in decoded] == []
    inst = run_prog(instrument(plain, "inscount", tmp_path), args, stdin)
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())


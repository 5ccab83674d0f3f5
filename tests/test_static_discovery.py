"""Static programs (glibc linked in) built by clang and GNU ld, and stripped static programs:
what the descent must find so that they run as the original (decision 0051).

- glibc's ``vfprintf`` keeps the address of its computed gotos' label table on the stack;
  its labels were never decoded, so it ran in place, into a return site's jump (SIGSEGV).
- glibc's transliteration tables hold Unicode code points that count through
  ``_IO_cleanup``'s addresses; read as code pointers they left its entry no room for a
  jump, and glibc's call through ``__libc_atexit`` ran the original, uncounted.
- ``_start`` passes an A32 ``main`` (an even address, from the GOT) to
  ``__libc_start_main``: nothing else names it. Once it was found, a path past a computed
  jump ran through a literal pool into the next function.
"""

from __future__ import annotations

import subprocess

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build

ARGS = ["stdin", "two words"]
STDIN = b"some input for the calls sample\n"


def _inscount(binary, tmp_path, args: list[str] = ARGS, stdin: bytes = STDIN) -> tuple[int, int]:
    """inscount's total for ``binary`` (which must behave as the original) and qemu's count."""
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args, stdin)
    assert original.stdout
    qemu_total = sum(exe_pcs(trace_pcs(placed, args, stdin, argv0="prog"), placed).values())
    inst = run_prog(instrument(binary, "inscount", tmp_path), args, stdin)
    assert_same_behaviour(original, inst)
    return results(inst, "inscount")["total"], qemu_total


def _stripped(binary, tmp_path):
    plain = tmp_path / "stripped"
    subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(plain), str(binary)], check=True)
    return plain


def test_goto_table_on_the_stack(tmp_path) -> None:
    total, qemu_total = _inscount(_stripped(build("calls", "clang-O0-thumb-static-bfd"), tmp_path), tmp_path)
    assert 0 < total <= qemu_total


def test_numbers_counting_through_a_function(tmp_path) -> None:
    total, qemu_total = _inscount(build("calls", "clang-O2-thumb-static-bfd"), tmp_path)
    assert total == qemu_total


def test_a32_main_found(tmp_path) -> None:
    from rewriter.ir.elf_loader import load_binary

    # goto's main calls an A32 function whose literal pool follows its computed jump (mov
    # pc, r2): the descent went on past the jump, through the pool, into the Thumb function
    # after it, and dropped that function's entry (SIGILL at exit) until a pool that the
    # code reads ended such a path.
    binary = build("goto", "O2-arm-static")
    # Where the symbol table says main is, and in which instruction set ($a/$t mapping symbols).
    main = next(p for p in load_binary(str(binary)).procedures if p.name == "main")
    plain = _stripped(binary, tmp_path)
    found = {p.address: p.thumb for p in load_binary(str(plain)).procedures}
    assert main.address in found and found[main.address] == main.thumb
    total, qemu_total = _inscount(plain, tmp_path, [], b"")
    assert 0 < total <= qemu_total

"""Entries of doubtful provenance do not outrank real code (decision 0044).

Debian's gawk and m4 (stripped PIEs) each have bytes that decode as branches into the
middle of real instructions: a literal pool after a call of gawk's fatal-error routine
(not known never to return), a table of offsets before one of m4's functions. Taken as
procedure entries, they cut the real procedures short and their trampolines overwrote
real code (SIGILL in both). The oracles: the original program's behaviour, and qemu's
trace of it (every instruction of the executable it runs must be one the descent found).

A doubtful entry inside an IT block (samples/it_word.c: a number in data) is dropped, but
its IT-free reading of the instruction there must not replace the reading the IT gives
(busybox: libgcc's division, SUBHS read as SUB, wrong quotients, a crash). In a PIE the
word is a relocated address, no less wrong as an entry: branching into an IT block is not
permitted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog, traced_original
from tests.support.samples import build, debian_packages, stripped, symbol_span

AWK = rb"""
{ n = split($0, w, /[^a-z]+/); for (i = 1; i <= n; i++) if (w[i] != "") c[w[i]]++ }
END {
  PROCINFO["sorted_in"] = "@val_num_desc"; k = 0
  for (x in c) { if (++k > 5) break; printf "%-8s %3d\n", x, c[x] }
  s = gensub(/(a)(b+)/, "<\\2\\1>", "g", "xabbby ab"); print s, length(s)
  if (match("key=value", /([a-z]+)=([a-z]+)/, m)) print m[2], m[1]
}
"""
TEXT = b"the cat and the dog\nand the bird sat on the cat\nabba abbb the end\n" * 4
M4 = b"""define(`fact', `ifelse($1, 0, 1, `eval($1 * fact(decr($1)))')')dnl
fact(6) translit(`hello', `a-z', `A-Z') patsubst(`a1b22c333', `[0-9]+', `#')
format(`%5d|%-4s|', 42, `ab') divert(1)later divert(0)now
undivert(1)len(`abcdef') substr(`abcdef', 2, 3)
"""
# name: (packages, path, arguments (FILE: the input file), standard input)
PROGRAMS = {
    "gawk": (["gawk:armhf", "libsigsegv2:armhf", "libmpfr6:armhf", "libgmp10:armhf", "libreadline8:armhf",
              "libtinfo6:armhf"], "usr/bin/gawk", ["-f", "SCRIPT", "FILE"], b""),
    "m4": (["m4:armhf"], "usr/bin/m4", [], M4),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_stripped_program_with_doubtful_entries(name: str, tmp_path: Path) -> None:
    packages, path, args, stdin = PROGRAMS[name]
    root = debian_packages(f"{name}-armhf", packages, path)
    program = root / path
    env = {"LD_LIBRARY_PATH": ":".join(str(root / d / "arm-linux-gnueabihf") for d in ("lib", "usr/lib"))}
    (tmp_path / "script.awk").write_bytes(AWK)
    (tmp_path / "input.txt").write_bytes(TEXT)
    args = [a.replace("SCRIPT", str(tmp_path / "script.awk")).replace("FILE", str(tmp_path / "input.txt"))
            for a in args]
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, args, stdin, env=env)
    assert original.returncode == 0 and original.stdout, original.stderr

    trace = trace_pcs(placed, args, stdin, argv0="prog", env=env)
    assert trace.stdout == original.stdout
    found = {ins.address for proc in load_binary(str(program)).procedures for ins in proc.instructions()}
    missed = sorted(pc for pc in exe_pcs(trace, placed) if pc not in found)
    assert not missed, f"executed but not found by the descent: {[hex(pc) for pc in missed[:10]]}"

    assert_same_behaviour(original, run_prog(instrument(program, "inscount", tmp_path), args, stdin, env=env))


# Static: the word is a number in data (a doubtful entry). PIE: a relocation says the word
# is an address, a sure entry until it was seen to fall inside an IT block. Long calls
# (-mlong-calls, fixed address): sub_if_above is called only through a register, and the
# word was its only entry (decision 0054).
@pytest.mark.parametrize("variant", ["Os-thumb-static", "O2-thumb-dyn", "O2-nopic-longcalls",
                                     "O2-arm-nopic-longcalls"])
def test_word_inside_an_it_block_keeps_the_it_reading(variant: str, tmp_path: Path) -> None:
    built = build("it_word", variant)
    word, _ = symbol_span(built, "inside_it")
    start, end = symbol_span(built, "sub_if_above")
    program = stripped(built, tmp_path / "stripped")
    original, pcs, ir = traced_original(program, tmp_path)
    assert (original.returncode, original.stdout) == (0, b"3 93 1\n")

    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    # The procedure holding the IT block (the word's entry was dropped) is the function the
    # symbol table names, and counts as qemu does: two calls, four instructions each (the IT
    # and the SUBHS whose condition fails count).
    proc = next(p for p in ir.procedures if p.address <= word < p.end)
    assert proc.address == start < word
    executed = sum(n for pc, n in pcs.items() if start <= pc < end)
    assert executed == 8
    assert results(inst, "inscount")["procedures"][proc.name] == executed

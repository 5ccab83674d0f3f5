"""Code that runs before the program's entry: a library calling into the program
(rewriter/emit/preinit.py), an IFUNC resolver the dynamic linker calls.

samples/library_first: libfirst.so's constructor calls ``program_callback``, which the
program exports, while the dynamic linker runs the libraries' initialisers, before the
ELF entry where Anvil's loader used to map the region of copies: the callback's entry
patch jumped to unmapped memory (D's dustmite died so). The loader now runs from the
program's DT_PREINIT_ARRAY, which the dynamic linker calls first. What must hold: the
program behaves as the original, and the tool saw that call: ``walk`` (tests/data/tools)
counts the callback's entry once, as qemu's trace of the original runs its first
instruction once.

samples/ifunc.c: the dynamic linker calls a resolver of the executable (R_ARM_IRELATIVE)
while it relocates it, before even DT_PREINIT_ARRAY; its entry is left unpatched (it runs in
place), and inscount counts every other instruction qemu runs in the executable.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog, traced_original
from tests.support.samples import build, build_with_libraries, symbol_span

WALK = Path(__file__).parent / "data" / "tools" / "walk.py"


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
@pytest.mark.parametrize("tool", ["walk", "cachesim"])
def test_a_library_calls_the_program_before_its_entry(variant: str, tool: str, tmp_path: Path) -> None:
    binary, libraries = build_with_libraries("library_first", variant)
    env = {"LD_LIBRARY_PATH": str(libraries)}
    original = run_prog(place(binary, tmp_path, "orig"), env=env)
    assert original.returncode == 0 and b"got 41; the callback ran 1 time(s)" in original.stdout, original.stdout
    inst = instrument(binary, str(WALK) if tool == "walk" else tool, tmp_path)
    run = run_prog(inst, env=env)
    assert_same_behaviour(original, run)
    dynamic = subprocess.run(["arm-linux-gnueabihf-readelf", "-d", str(inst)], capture_output=True, text=True).stdout
    assert "(PREINIT_ARRAY)" in dynamic
    if tool == "walk":
        entries = {address & ~1: n for address, n in json.loads((run.cwd / "prog.walk.out").read_text())["entries"]}
        assert entries[symbol_span(binary, "program_callback")[0] & ~1] == 1
        assert entries[symbol_span(binary, "main")[0] & ~1] == 1


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie", "Os-thumb-static"])
def test_an_ifunc_resolver_runs_before_the_entry(variant: str, tmp_path: Path) -> None:
    binary = build("ifunc", variant)
    original, pcs, ir = traced_original(binary, tmp_path)
    assert original.stdout == b"sum 4950\n"
    run = run_prog(instrument(binary, "inscount", tmp_path), like_trace=True)
    assert_same_behaviour(original, run)
    resolver = symbol_span(binary, "resolve_add")
    assert (resolver[0] in ir.resolvers) == ("dyn" in variant)
    in_place = sum(n for pc, n in pcs.items() if resolver[0] <= pc < resolver[1]) if "dyn" in variant else 0
    assert results(run, "inscount")["total"] == sum(pcs.values()) - in_place

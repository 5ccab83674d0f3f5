"""A tool written by the user in a file of its own (rewriter/tool_files.py).

``tests/data/tools/walk.py`` calls a routine at every procedure entry (Point.BEFORE on a
procedure, a CONST) and every block entry (INST_ADDR and BLOCK_INSNS); its C is
``walk.c`` beside it. Instrumented with ``--tool path/walk.py``, a program behaves as
the original, and its counts equal qemu's execution trace: every procedure's entries
are the executions of its first instruction, the blocks' instructions add up to every
instruction the executable ran, and the blocks' addresses, summed over their runs, to
what qemu's block-first instructions give. ReHost gives the same results file with the
C (built by ``anvil run`` from the site table) and with the file's Python ``Analysis``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.rehost import CLI
from tests.support.run import assert_same_behaviour, instrument, place, run_prog, traced_original
from tests.support.samples import build

WALK = Path(__file__).parent / "data" / "tools" / "walk.py"
ARGS = ["one", "two"]


def _results(directory: Path) -> dict:
    return json.loads((directory / "prog.walk.out").read_text())


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie", "O0-thumb-static"])
def test_tool_file_counts_equal_qemu(variant: str, tmp_path: Path) -> None:
    binary = build("calls", variant)
    original, pcs, ir = traced_original(binary, tmp_path, ARGS)
    inst = run_prog(instrument(binary, str(WALK), tmp_path), ARGS)
    assert_same_behaviour(original, inst)
    got = _results(inst.cwd)

    # A dynamic program's end routines run as the C library's _Exit is entered, after
    # everything of the executable, _fini (DT_FINI) included (decision 0111).
    procedures = ir.procedures
    blocks = [b for p in procedures for b in p.blocks]
    assert got["total"] == sum(pcs[i.address] for p in procedures for i in p.instructions())
    assert got["blocks_run"] == sum(pcs[b.address] for b in blocks)
    assert got["weighted"] == sum(pcs[b.address] * b.address for b in blocks) % (1 << 64)
    entries = {p.address: pcs[p.address] for p in ir.procedures if pcs[p.address]}
    assert {address & ~1: n for address, n in got["entries"]} == entries


def test_tool_file_in_rehost_with_c_and_python(tmp_path: Path) -> None:
    binary = build("calls", "O2-thumb-dyn")
    inhost = run_prog(instrument(binary, str(WALK), tmp_path), ARGS)
    rehost_bin = instrument(binary, str(WALK), tmp_path, "--mode", "rehost", slot="rhst")
    expected = (inhost.cwd / "prog.walk.out").read_bytes()
    for lib in ([], ["--lib", str(WALK)]):
        # Anvil's options after the binary, the program's arguments after them (README's form).
        run = subprocess.run([*CLI, "run", "-q", "--argv0", "prog", str(rehost_bin), *lib, "--", *ARGS],
                             capture_output=True, cwd=rehost_bin.parent, env={}, timeout=300)
        assert (run.stdout, run.stderr, run.returncode) == (inhost.stdout, inhost.stderr, inhost.returncode), lib
        assert (rehost_bin.parent / "prog.walk.out").read_bytes() == expected, lib
        (rehost_bin.parent / "prog.walk.out").unlink()


@pytest.mark.parametrize("content, c_file, needle", [
    ("x = 1\n", True, "defines no subclasses of rewriter.api.Tool"),
    ("def broken(:\n", True, "SyntaxError"),
    ("from rewriter.api import Tool\nclass T(Tool):\n    name = 'my tool'\n", True, "C identifier"),
    ("from rewriter.api import Tool\nclass T(Tool):\n    name = 'mine'\n    def instrument(self, binary, opts):\n"
     "        pass\n", False, "mine.c is missing"),
])
def test_bad_tool_file(tmp_path: Path, content: str, c_file: bool, needle: str) -> None:
    tool = tmp_path / "mine.py"
    tool.write_text(content)
    if c_file:
        (tmp_path / "mine.c").write_text("void nothing(void) {}\n")
    out = tmp_path / "out"
    proc = subprocess.run([*CLI, "instrument", "--tool", str(tool), str(build("sort", "O2-thumb-dyn")), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("anvil: error:") and needle in proc.stderr
    assert not out.exists()


def test_tools_describes_a_tool_file() -> None:
    proc = subprocess.run([*CLI, "tools", str(WALK)], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.startswith("walk: procedure entries") and str(WALK.with_suffix(".c")) in proc.stdout


def test_cli_run_passes_words_after_the_binary_to_the_program(tmp_path: Path) -> None:
    """``anvil run BINARY a b -- -c``: the program gets a, b and -c; an option-like word before
    ``--`` that is not Anvil's is refused in one line."""
    binary = place(build("calls", "O2-thumb-dyn"), tmp_path, "orig")
    original = run_prog(binary, ["a", "b", "-c"])
    def anvil_run(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, "run", "-q", "--argv0", "prog", str(binary), *words], capture_output=True,
                              cwd=binary.parent, env={}, timeout=300, text=True)

    run = anvil_run("a", "b", "--", "-c")
    assert (run.stdout.encode(), run.returncode) == (original.stdout, original.returncode)
    refused = anvil_run("a", "-c")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "after '--'" in refused.stderr


def test_tool_file_library_builds_without_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``anvil run`` started with an empty environment (as the tests and ``env -i`` do) still
    builds a tool file's C for its local server: gcc gets a PATH to find ``ld``."""
    from rehost.server import Library

    monkeypatch.delenv("PATH", raising=False)
    monkeypatch.setenv("ANVIL_CACHE", str(tmp_path / "cache"))  # cold: the build really runs
    library = Library.of_sources([str(WALK.with_suffix(".c"))])
    built = next(iter(library._built.values()))
    assert built.is_file() and str(built).startswith(str(tmp_path / "cache"))

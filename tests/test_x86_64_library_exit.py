"""An x86-64 program that a shared library ends with _exit (decision 0123, as decision 0077
on ARM): LLVM's lld ends so (``llvm::sys::Process::Exit`` in libLLVM calls ``_Exit``), and
its copy wrote no results: the executable's end points (the dynamic linker's fini, its own
calls of _exit) are never passed. The runtime makes the C library's _exit jump to the end.

samples/library_exit (the executable works, then libends.so flushes stdio and calls
_exit(3)): the copy behaves as the original, inscount's total is QEMU's count of the
original's instructions in its own code, and the ReHost copy's results are InHost's. And a
program that ends normally, by exit, still counts QEMU's count (the end is written once).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support.rehost import CLI

ROOT = Path(__file__).resolve().parents[1]
ENVIRONMENT = {"PYTHONPATH": str(ROOT)}  # where ``anvil run`` finds this tree's code


def _build(tmp_path: Path) -> Path:
    source = samples.SAMPLES_DIR / "library_exit"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(source / "ends.c"), "-o", str(tmp_path / "libends.so")],
                   check=True)
    subprocess.run(["gcc", "-O2", str(source / "main.c"), f"-L{tmp_path}", "-lends", "-Wl,-rpath,$ORIGIN",
                    "-o", str(tmp_path / "built")], check=True)
    return tmp_path / "built"


def _copy(program: Path, where: Path, *extra: str) -> Path:
    """``program`` instrumented with inscount as ``where/prog``, its library beside it."""
    where.mkdir()
    for library in program.parent.glob("*.so"):
        shutil.copy(library, where)
    done = subprocess.run([*CLI, "instrument", "--tool", "inscount", "--format", "json", *extra, str(program),
                           "-o", str(where / "prog")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return where / "prog"


def _behaviour(run: subprocess.CompletedProcess) -> tuple:
    return run.returncode, run.stdout, run.stderr


@pytest.mark.parametrize("program", ["library_exit", "sort"])
def test_a_library_ends_the_program(program: str, tmp_path: Path) -> None:
    built = _build(tmp_path) if program == "library_exit" else samples.build_x86_64("sort", "x64-gcc-O2")
    plain = tmp_path / "a" / "prog"
    plain.parent.mkdir()
    shutil.copy(built, plain)
    for library in tmp_path.glob("*.so"):
        shutil.copy(library, plain.parent)
    copied = _copy(plain, tmp_path / "b")
    original = subprocess.run([str(plain)], capture_output=True, timeout=60, env=ENVIRONMENT)
    assert original.returncode == (3 if program == "library_exit" else 0)
    assert _behaviour(subprocess.run([str(copied)], capture_output=True, timeout=60, env=ENVIRONMENT)) == \
        _behaviour(original)
    # QEMU's count of the original's own instructions (argv[0] "prog", env -i), and the copy's.
    oracle = trace_pcs(plain, [], cwd=tmp_path)
    results = tmp_path / "prog.inscount.out"
    subprocess.run(["env", "-i", "qemu-x86_64", "-0", "prog", str(copied)], cwd=tmp_path, capture_output=True,
                   timeout=300)
    inhost = results.read_bytes()
    assert json.loads(inhost)["total"] == sum(exe_pcs(oracle, plain).values())
    if program != "library_exit":
        return
    # ReHost: the same end, InHost's results (both natively, argv[0] the path, as run here).
    subprocess.run(["env", "-i", str(copied)], cwd=tmp_path, capture_output=True, timeout=60)
    inhost = results.read_bytes()
    rehost = _copy(plain, tmp_path / "r", "--mode", "rehost")
    ran = subprocess.run([*CLI, "run", "-q", "--argv0", str(copied), str(rehost)], capture_output=True,
                         cwd=tmp_path, timeout=300, env=ENVIRONMENT)
    assert _behaviour(ran) == _behaviour(original)
    assert results.read_bytes() == inhost

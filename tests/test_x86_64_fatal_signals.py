"""x86-64 programs killed by a signal still write their results (decision 0131; ARM's are
tests/test_fatal_signals.py): the runtime's handler on each fatal signal left at its
default writes them and dies of the signal again, with the same status and output.

A C program does some work, prints, then calls ``abort()`` (SIGABRT, raised by glibc), or
reads through a null pointer (SIGSEGV, a fault), or overruns a buffer that
``-fstack-protector-all`` checks (``__stack_chk_fail``: SIGABRT). Natively the copy does
what the original does (output, status); under ``qemu-x86_64`` (the oracle's emulator, so
that a static program's C library picks the same routines) inscount's total equals what
``qemu-x86_64 -singlestep -d exec,nochain`` executes in the executable for an abort, and
exceeds it by less than a block for a fault (a block is counted as it is entered). ReHost
delivers the same results as InHost.

The handlers are not the program's to see: a program that asks for a signal's action
(sigaction with no new action, signal's return value) is told the default, as it is
without Anvil, dynamic (through libc's sigaction and signal) and static (its rt_sigaction
system calls)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import anvil_instrument
from tests.test_fatal_signals import DIES_C, QUERIES_C

SMASH_C = r"""
#include <stdio.h>
#include <string.h>
__attribute__((noinline)) static void smash(const char *s, int n) {
    char buf[8]; memcpy(buf, s, n); printf("%c\n", buf[0]);
}
int main(int argc, char **argv) { (void)argv; smash("hello world, this is long", 8 + argc * 8); return 0; }
"""
SOURCES = {"dies": DIES_C, "queries": QUERIES_C, "smash": SMASH_C}
#: program, its arguments, how it ends
CASES = [("dies", ["abort"], 6), ("dies", ["segv"], 11), ("smash", [], 6)]


def _build(name: str, flags: list[str], tmp_path: Path) -> Path:
    source = tmp_path / f"{name}.c"
    source.write_text(SOURCES[name])
    binary = tmp_path / name
    subprocess.run(["gcc", "-O1", *flags, str(source), "-o", str(binary)], check=True)
    return binary


def _copies(binary: Path, tool: str, tmp_path: Path, mode: str = "inhost") -> tuple[Path, Path]:
    """The original as ``a/prog`` and its instrumented copy as ``b/prog`` (paths of one length)."""
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    for path in (plain, copied):
        if path.parent.exists():
            shutil.rmtree(path.parent)
        path.parent.mkdir()
    shutil.copy(binary, plain)
    anvil_instrument(plain, copied, "--tool", tool, "--mode", mode, "--format", "json")
    return plain, copied


def _native(program: Path, args: list[str]) -> subprocess.CompletedProcess:
    """``anvil run``, which serves a ReHost copy's records and runs an InHost one as it is (and dies of
    the signal that kills the program); the addresses fixed (``setarch -R``), so that a cache's
    figures are the same from run to run."""
    return subprocess.run(["setarch", "-R", "anvil", "run", "-q", f"./{program.name}", *args], cwd=program.parent,
                          capture_output=True, timeout=300)


def _results(program: Path, tool: str) -> dict:
    path = program.parent / f"prog.{tool}.out"
    assert path.exists(), f"{tool} wrote no results"
    return json.loads(path.read_text())


@pytest.mark.parametrize(("name", "args", "signal"), CASES, ids=["abort", "segv", "stack-protector"])
@pytest.mark.parametrize("flags", [[], ["-static"]], ids=["dyn", "static"])
def test_results_of_a_program_killed_by_a_signal(name: str, args: list[str], signal: int, flags: list[str],
                                                 tmp_path: Path) -> None:
    flags = [*flags, "-fstack-protector-all"] if name == "smash" else flags
    plain, copied = _copies(_build(name, flags, tmp_path), "inscount", tmp_path)
    original = subprocess.run(["env", "-i", f"./{plain.name}", *args], cwd=plain.parent, capture_output=True)
    assert original.returncode == -signal
    native = _native(copied, args)
    assert (native.returncode, native.stdout) == (-signal, original.stdout)
    assert native.stderr.replace(b"anvil: results in prog.inscount.out\n", b"") == original.stderr
    assert _results(copied, "inscount")["total"] > 0

    (copied.parent / "prog.inscount.out").unlink()
    oracle = trace_pcs(plain, args, cwd=plain.parent)
    counted = subprocess.run(["env", "-i", "qemu-x86_64", "-0", "prog", str(copied), *args], cwd=copied.parent,
                             capture_output=True, timeout=300)
    assert (counted.returncode, counted.stdout) == (oracle.returncode, oracle.stdout) == (-signal, original.stdout)
    qemu_total = sum(exe_pcs(oracle, plain).values())
    total = _results(copied, "inscount")["total"]
    if signal == 6:
        assert total == qemu_total
    else:
        assert qemu_total <= total < qemu_total + 16


def test_rehost_results_of_a_program_killed_by_a_signal(tmp_path: Path) -> None:
    binary = _build("dies", [], tmp_path)
    results = []
    for mode in ("inhost", "rehost"):
        _, copied = _copies(binary, "cachesim", tmp_path, mode)
        run = _native(copied, ["abort"])
        assert run.returncode == -6 and run.stdout.startswith(b"hash "), run.stderr
        results.append((copied.parent / "prog.cachesim.out").read_bytes())
    assert results[0] == results[1]
    cache = json.loads(results[0])
    assert cache["hits"] + cache["misses"] == cache["loads"] + cache["stores"] > 0


@pytest.mark.parametrize("flags", [[], ["-static"]], ids=["dyn", "static"])
def test_signal_actions_the_program_asks_for_are_its_own(flags: list[str], tmp_path: Path) -> None:
    plain, copied = _copies(_build("queries", flags, tmp_path), "inscount", tmp_path)
    original = subprocess.run([f"./{plain.name}"], cwd=plain.parent, capture_output=True)
    assert original.returncode == -6 and original.stdout.count(b": default,") == 4, original
    native = _native(copied, [])
    assert (native.returncode, native.stdout) == (-6, original.stdout)
    # SIGABRT was not asked about: its handler still writes the results.
    assert _results(copied, "inscount")["total"] > 0

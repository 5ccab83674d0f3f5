"""x86-64 programs that become another program (decision 0123, as decision 0101 on ARM).

A program that ends by an exec (env, nice, xargs, a shell's ``exec``: dash's last command in
the x86-64 draw) runs no exit: the counting tools, which write their results at the end,
wrote none. The copy now writes them before the exec: as the PLT entry of an exec function
is entered (or, while its GOT slot still sends the call to the lazy binder, as PLT0 is:
the binder's instructions in the program are counted too), or before the program's own
execve/execveat system call (a static one), by a forked copy of the process that writes
them and exits; if the exec fails, the program goes on counting and its end writes them
again.

samples/execs.c works, then execs /bin/echo (with an argument: first a missing program,
then more work and a normal end). Checked, lazily bound (gcc's default), bound at start
(``-z now``, CET's .plt.sec) and static: the copy prints what the original prints,
inscount's total equals QEMU's count of the original's instructions in its own code,
memtrace's JSON trace is one document whose count is its records'; ReHost inscount's
results equal InHost's (its end, too, comes before the exec).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support.rehost import CLI, place_at

#: Every run's (the original's too): only where ``anvil run`` finds this tree's code.
ENVIRONMENT = {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}
VARIANTS = ("x64-gcc-O2", "x64-gcc-O2-now", "x64-gcc-Os-cet", "x64-gcc-O2-static")


def _instrument(program: Path, out: Path, tool: str, *extra: str) -> Path:
    out.parent.mkdir(exist_ok=True)
    done = subprocess.run([*CLI, "instrument", "--tool", tool, "--format", "json", *extra, str(program),
                           "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def _run(running: Path, copy: Path, args: list[str], rehost: bool = False) -> tuple:
    """``copy`` placed at ``running`` and run there under ``setarch -R`` (through ``anvil
    run``, ``rehost``): its exit status, output and error output."""
    place_at(running, copy)
    runner = [*CLI, "run", "-q", "--argv0", str(running)] if rehost else []  # argv[0] as run directly
    done = subprocess.run(["setarch", "-R", *runner, str(running), *(["--"] if rehost else []), *args],
                          capture_output=True, timeout=300, cwd=running.parent, env=ENVIRONMENT)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("args", [[], ["fail"]], ids=["exec", "failed-exec"])
def test_results_before_an_exec(variant: str, args: list[str], tmp_path: Path) -> None:
    program = tmp_path / "prog"
    shutil.copy(samples.build_x86_64("execs", variant), program)
    running = tmp_path / "run" / "prog"
    running.parent.mkdir()
    original = _run(running, program, args)
    assert original[0] == 0 and b"the other program" in original[1] + original[2] or args, original

    # inscount: QEMU's count of the original's instructions in its own code (both under
    # qemu-x86_64 from a directory of the same length, argv[0] "prog").
    copied = _instrument(program, tmp_path / "i" / "prog", "inscount")
    assert _run(running, copied, args) == original
    oracle = trace_pcs(program, args, cwd=tmp_path / "i")
    for stale in (tmp_path / "i").glob("prog.inscount.out*"):
        stale.unlink()
    subprocess.run(["env", "-i", "qemu-x86_64", "-0", "prog", str(copied), *args], cwd=tmp_path / "i",
                   capture_output=True, timeout=300, check=True)
    counted = json.loads((tmp_path / "i" / "prog.inscount.out").read_text())
    assert counted["total"] == sum(exe_pcs(oracle, program).values())

    # memtrace: one JSON document, its end written once (twice cut to one after a failed exec).
    _run(running, _instrument(program, tmp_path / "m" / "prog", "memtrace"), args)
    trace = json.loads((running.parent / "prog.memtrace.out").read_text())
    assert trace["accesses"] == len(trace["records"]) > 0

    # ReHost: the end before the exec too, InHost's results (after a failed exec the
    # stream has ended: the records after it are dropped).
    if args:
        return
    _run(running, copied, args)
    inhost = (running.parent / "prog.inscount.out").read_bytes()
    rehost = _instrument(program, tmp_path / "r" / "prog", "inscount", "--mode", "rehost")
    assert _run(running, rehost, args, rehost=True) == original
    assert (running.parent / "prog.inscount.out").read_bytes() == inhost

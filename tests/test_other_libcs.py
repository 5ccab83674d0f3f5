"""Debian's mksh built statically against C libraries other than glibc (decision 0103):
musl, dietlibc and klibc, each with its own start-up code and system call stubs.

The descent must find every instruction the program runs (the oracle: ``qemu-arm -singlestep
-d exec``). dietlibc's A32 ``_exit`` (``mov r7, #1; svc 0``) is called from the end of its
``_start`` and followed by a literal and Thumb functions: before the descent knew that the
exit system call does not return, it read those as A32, the Thumb functions' entries gave
way, and they ran in place, uncounted (27 blocks of mksh-diet's run). klibc's system calls
are ``tests/test_inline_data_calls.py``'s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.corpus import CORPUS, environment, fetch, lib_root, prepare
from tests.support.run import place

#: A short script: start-up, parsing, a loop, a function, output, exit status.
SCRIPT = 'f() { print -n "$1:"; }; i=0; while (( i < 20 )); do f $i; (( i++ )); done; print; exit 3'


@pytest.mark.parametrize("name", ["mksh-diet", "mksh-klibc", "mksh-musl", "lksh"])
def test_descent_finds_what_runs(name: str, tmp_path: Path) -> None:
    program = CORPUS[name]
    binary, root = fetch(program)
    env = environment(program, root)
    placed = place(binary, tmp_path, "orig")
    prepare(program, placed.parent, binary, env)
    trace = trace_pcs(placed, ["-c", SCRIPT], env=env, lib_root=lib_root(program), cwd=placed.parent)
    assert trace.returncode == 3 and trace.stdout.startswith(b"0:1:2:"), trace.stderr
    executed = exe_pcs(trace, placed)
    found = {ins.address for proc in load_binary(str(binary)).procedures for ins in proc.instructions()}
    missed = sorted(pc for pc in executed if pc not in found)
    assert not missed, f"run but not found by the descent: {[hex(pc) for pc in missed[:10]]} ({len(missed)})"

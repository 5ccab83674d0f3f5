"""Debian's mksh built statically against C libraries other than glibc (decision 0103):
musl, dietlibc and klibc, each with its own start-up code and system call stubs; and
klibc's programs that its shared library starts (decision 0207).

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
from tests.support.rehost import ServerProcess, run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import debian_release_packages

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


def test_programs_klibc_calls_as_main(tmp_path: Path) -> None:
    """klibc's programs (klibc-utils) name klibc's shared library as their interpreter,
    which calls their entry as main(argc, argv, envp) with its own stack: the loader stub read
    that stack as the kernel's (argc, argv, the environment) and no copy wrote results, as the
    program ends in the library, whose exit no hook sees. Now the results are written where
    main returns: inscount counts the program's instructions as qemu runs them, InHost and
    ReHost. (Debian 12's klibc-utils dies under qemu-arm, original too: Debian 13's.)"""
    root = debian_release_packages("klibc-armhf-trixie", "trixie", "armhf", ["klibc-utils", "libklibc"],
                                   "usr/lib/klibc/bin/uname")
    program, args = root / "usr/lib/klibc/bin/uname", ["-a"]
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, args, lib_root=str(root))
    assert original.returncode == 0 and original.stdout.startswith(b"Linux "), original
    executed = sum(exe_pcs(trace_pcs(placed, args, lib_root=str(root)), placed).values())
    inhost = run_prog(instrument(program, "inscount", tmp_path), args, lib_root=str(root))
    assert_same_behaviour(original, inhost)
    assert results(inhost, "inscount")["total"] == executed
    rehost = instrument(program, "inscount", tmp_path, "--mode", "rehost", slot="rhst")
    with ServerProcess() as server:
        run, outcome = run_rehost(rehost, server.address, args, lib_root=str(root))
    assert_same_behaviour(original, run)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
    assert results(run, "inscount") == results(inhost, "inscount")

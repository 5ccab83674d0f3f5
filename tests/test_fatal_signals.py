"""Programs killed by a signal still write their results (runtime_stubs/arm/anvil_rt.c).

A C program does some work, prints, then calls ``abort()`` (SIGABRT, raised by glibc)
or reads through a null pointer (SIGSEGV, a fault). Instrumented, it dies of the same
signal with the same output and qemu message, and its results are written on the way:
inscount's total equals what ``qemu-arm -singlestep -d exec,nochain`` executes for
``abort`` (the program ends at a system call, as at exit) and exceeds it by less than a
block for a fault (a block is counted when it is entered, the fault stops it part-way);
cachesim's figures add up; ReHost delivers the same results as InHost.

The handlers are not the program's to see: a program that asks for a signal's action
(sigaction with no new action, or signal's return value) is told the default, as it is
without Anvil, in a dynamic program (through libc's sigaction and signal) and a static one
(its rt_sigaction system calls).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rehost.server import Library, start_server
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost
from tests.support.run import Run, assert_same_behaviour, instrument, place, results, run_prog

DIES_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int *volatile nowhere;

int main(int argc, char **argv) {
    unsigned h = 5381;
    for (int i = 0; i < 20000; i++) h = h * 33 + (unsigned)i;
    printf("hash %u\n", h);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "segv") == 0) return *nowhere;
    abort();
}
"""

SIGNALS = {"abort": 6, "segv": 11}


def _build(tmp_path: Path, flags: list[str]) -> Path:
    source = tmp_path / "dies.c"
    source.write_text(DIES_C)
    binary = tmp_path / "dies"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O1", *flags, str(source), "-o", str(binary)], check=True)
    return binary


@pytest.mark.parametrize("how", sorted(SIGNALS))
@pytest.mark.parametrize("flags", [["-mthumb"], ["-marm", "-static"]], ids=["thumb-dyn", "arm-static"])
def test_results_of_a_program_killed_by_a_signal(how: str, flags: list[str], tmp_path: Path) -> None:
    binary = _build(tmp_path, flags)
    args = [how]
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args)
    assert original.returncode == -SIGNALS[how] and original.stdout.startswith(b"hash ")
    qemu_total = sum(exe_pcs(trace_pcs(placed, args, b"", argv0="prog"), placed).values())

    inst = run_prog(instrument(binary, "inscount", tmp_path), args)
    assert_same_behaviour(original, inst)
    total = results(inst, "inscount")["total"]
    if how == "abort":
        assert total == qemu_total
    else:
        assert qemu_total <= total < qemu_total + 16

    inst = run_prog(instrument(binary, "cachesim", tmp_path), args)
    assert_same_behaviour(original, inst)
    cache = results(inst, "cachesim")
    assert cache["hits"] + cache["misses"] == cache["loads"] + cache["stores"] > 0


def test_rehost_results_of_a_program_killed_by_a_signal(tmp_path: Path) -> None:
    binary = _build(tmp_path, ["-mthumb"])
    original = run_prog(place(binary, tmp_path, "orig"), ["abort"])
    inhost = run_prog(instrument(binary, "cachesim", tmp_path), ["abort"])
    srv, port = start_server(Library(None), log=None)
    try:
        rehost, outcome = run_rehost(instrument(binary, "cachesim", tmp_path, "--mode", "rehost", slot="rhst"),
                                     f"127.0.0.1:{port}", ["abort"])
    finally:
        srv.stop(None)
    assert_same_behaviour(original, inhost)
    assert_same_behaviour(original, rehost)
    assert outcome.summary.complete, outcome.error
    assert (rehost.cwd / "prog.cachesim.out").read_bytes() == (inhost.cwd / "prog.cachesim.out").read_bytes()


def test_anvil_run_dies_of_the_programs_signal(tmp_path: Path) -> None:
    """``anvil run`` (the console script) ends as qemu-arm alone does for a program killed by a
    signal, in both modes: a shell sees 134 for ``abort()``, not 250 (``-6 & 0xff``)."""
    binary = _build(tmp_path, ["-mthumb"])
    alone = subprocess.run(["qemu-arm", "-L", "/usr/arm-linux-gnueabihf", str(binary), "abort"],
                           capture_output=True)
    assert alone.returncode == -SIGNALS["abort"]
    runs = {"orig": place(binary, tmp_path, "orig"),
            "inst": instrument(binary, "inscount", tmp_path),
            "rhst": instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst")}
    for slot, program in runs.items():
        shell = subprocess.run(["sh", "-c", f'anvil run "{program}" -- abort; echo "status $?"'],
                               capture_output=True, cwd=program.parent)
        assert shell.stdout == alone.stdout + f"status {128 + SIGNALS['abort']}\n".encode(), slot
        if slot != "orig":
            assert results(Run(b"", b"", 0, program.parent), "inscount")["total"] > 0, slot


QUERIES_C = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static void on_term(int sig) { (void)sig; }

int main(void) {
    unsigned h = 5381;
    for (int i = 0; i < 20000; i++) h = h * 33 + (unsigned)i;
    printf("hash %u\n", h);
    int asked[] = {SIGSEGV, SIGBUS, SIGINT, SIGPIPE};
    for (int i = 0; i < 4; i++) {
        struct sigaction old;
        sigaction(asked[i], NULL, &old);
        printf("signal %d: %s, flags %#lx, SIGINT masked %d\n", asked[i],
               old.sa_handler == SIG_DFL ? "default" : "handled", (unsigned long)old.sa_flags,
               sigismember(&old.sa_mask, SIGINT));
    }
    void (*was)(int) = signal(SIGTERM, on_term);
    printf("SIGTERM was %s\n", was == SIG_DFL ? "default" : "handled");
    fflush(stdout);
    abort();
}
"""


@pytest.mark.parametrize("flags", [["-mthumb"], ["-marm", "-static"]], ids=["thumb-dyn", "arm-static"])
def test_signal_actions_the_program_asks_for_are_its_own(flags: list[str], tmp_path: Path) -> None:
    source = tmp_path / "queries.c"
    source.write_text(QUERIES_C)
    binary = tmp_path / "queries"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O1", *flags, str(source), "-o", str(binary)], check=True)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == -SIGNALS["abort"] and original.stdout.count(b": default,") == 4, original
    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    # SIGABRT was not asked about: its handler still writes the results, exact as at exit.
    qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
    assert results(inst, "inscount")["total"] == qemu_total

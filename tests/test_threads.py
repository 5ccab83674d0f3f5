"""Programs that start threads: counters add with LDREX/STREX, and a thread's exit does
not end the program (decision 0003, runtime_stubs/arm/anvil_rt.c).

Four threads run the same loop at once under qemu-arm (which runs guest threads in
parallel), in T32 and A32 code. With plain load/add/store counters a fifth of the counts went missing; a
static program also wrote its results when the first thread exited (glibc ends a thread
with the exit system call). Checked against ``qemu-arm -singlestep -d exec,nochain``:
dynamic, every block's count but the PLT's (the threads race for lazy binding, so the
original's own count varies by a few instructions from run to run); static (where
glibc's lock paths vary too), the threads' procedure and main.

cachesim: calls into the analysis hold a lock (threads shared its stack: the program
crashed), and a repeat filter's hit counts with LDREX/STREX (a plain add lost about
1 % of them): the loads and stores it saw are those qemu executes, give or take the
original's own variation and the two of each in ``_fini`` after the end hook.

Stripped static: the clone flags of its C library's thread start tell (decision 0147).

ReHost: counters travel in the end record, so inscount's results equal InHost's; records
go through the call stub's lock, so cachesim's stream is whole and its loads and stores
are InHost's (with the inline append, the threads' records overwrote each other and the
session was lost).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rehost.server import Library, start_server
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import access_counts, exe_pcs, trace_pcs
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog

THREADS_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4
static unsigned results[N];

static void *work(void *arg) {
    int id = (int)(long)arg;
    unsigned *buf = calloc(4096, sizeof *buf);
    unsigned h = id;
    for (int r = 0; r < 24; r++)
        for (int i = 0; i < 4096; i++) {
            buf[i] = buf[(i * 7) & 4095] + h;
            h = h * 31 + buf[i];
        }
    results[id] = h;
    free(buf);
    return 0;
}

int main(void) {
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < N; i++) pthread_join(t[i], 0);
    unsigned total = 0;
    for (int i = 0; i < N; i++) total ^= results[i];
    printf("total %u\n", total);
    return 0;
}
"""


def _build(tmp_path: Path, flags: list[str], extra: str = "") -> Path:
    source = tmp_path / "threads.c"
    source.write_text(THREADS_C + extra)
    binary = tmp_path / "threads"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", *flags, str(source), "-o", str(binary), "-lpthread"],
                   check=True)
    return binary


@pytest.mark.parametrize("flags", [["-mthumb"], ["-marm"], ["-mthumb", "-static"]], ids=["dyn", "arm-dyn", "static"])
def test_counts_of_threads(flags: list[str], tmp_path: Path) -> None:
    binary = _build(tmp_path, flags)
    ir = load_binary(str(binary))
    assert ir.threaded
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    pcs = exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed)

    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert json.loads((tmp_path / "inst" / "prog.anvil.json").read_text())["block_counters"]["atomic"]
    counted = results(inst, "inscount")
    for proc in ir.procedures:
        if proc.name in ("work", "main"):
            expected = sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end)
            assert counted["procedures"][proc.name] == expected, proc.name
    if "-static" in flags:
        return
    inst = run_prog(instrument(binary, "bbcount", tmp_path))
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    # Not the PLT: which threads take the lazy-binding path of a first call varies by run.
    wrong = {b["address"]: (b["count"], pcs[b["address"]]) for b in counts
             if b["count"] != pcs[b["address"]] and not b["procedure"].startswith(".plt")}
    assert not wrong, f"blocks whose count differs from qemu's (ours, qemu): {list(wrong.items())[:5]}"


def test_stripped_static_threads(tmp_path: Path) -> None:
    """A static program stripped of its symbols names no thread start: it was instrumented
    as one thread's, with plain counters and unlocked analysis calls, and every copy
    crashed as its threads ran (decision 0147). Its C library's thread start builds the
    flags of a thread's clone, which now tell: every tool's copy behaves as the original,
    and inscount counts the threads' procedure and main as qemu runs them."""
    named = _build(tmp_path, ["-mthumb", "-static"])
    binary = tmp_path / "stripped"
    subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(binary), str(named)], check=True)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    pcs = exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed)
    for tool in ("inscount", "bbcount", "cachesim", "memtrace"):
        run = run_prog(instrument(binary, tool, tmp_path, slot=tool[:4]))
        assert_same_behaviour(original, run)
        if tool == "inscount":
            counted = results(run, "inscount")["procedures"]
            for proc in load_binary(str(named)).procedures:
                if proc.name in ("work", "main"):  # (a stripped program's are named by address)
                    expected = sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end)
                    assert counted[f"sub_{proc.address:x}"] == expected, proc.name


def test_stripped_static_threads_with_flags_inside_the_data(tmp_path: Path) -> None:
    """A fixed-address program (at 0x10000) whose zero-filled data spans 4 MB: its C
    library's clone flags, 0x3d0f00, are also an address of its memory, which a pointer
    might be. Taken for a pointer, the copies crashed as the threads ran (cachesim: 13 of 15
    runs). glibc's own flags tell wherever they lie (decision 0147)."""
    named = _build(tmp_path, ["-mthumb", "-static"], "char zero_filled[4 << 20];\n")
    binary = tmp_path / "stripped"
    subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(binary), str(named)], check=True)
    ir = load_binary(str(binary))
    assert ir.in_memory(0x3D0F00) and ir.threaded
    original = run_prog(place(binary, tmp_path, "orig"))
    assert_same_behaviour(original, run_prog(instrument(binary, "cachesim", tmp_path)))


@pytest.mark.parametrize("mode", ["-mthumb", "-marm"])
def test_cachesim_with_threads(mode: str, tmp_path: Path) -> None:
    binary = _build(tmp_path, [mode, "-no-pie"])  # run-time addresses are link-time ones
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    trace = trace_pcs(placed, [], b"", argv0="prog", memory_ops=True)
    oracle = access_counts(trace, exe_pcs(trace, placed))
    for _ in range(2):
        inst = run_prog(instrument(binary, "cachesim", tmp_path))
        assert_same_behaviour(original, inst)
        cache = results(inst, "cachesim")
        assert cache["hits"] + cache["misses"] == cache["loads"] + cache["stores"]
        # Within the original's own variation (lazy binding, above) and _fini's push and pop.
        assert abs(oracle["L"] - cache["loads"]) <= 8 and abs(oracle["S"] - cache["stores"]) <= 8, (cache, oracle)


def test_rehost_with_threads(tmp_path: Path) -> None:
    binary = _build(tmp_path, ["-mthumb"])
    original = run_prog(place(binary, tmp_path, "orig"))
    inhost = run_prog(instrument(binary, "inscount", tmp_path))
    inhost_cache = run_prog(instrument(binary, "cachesim", tmp_path, slot="csim"))
    srv, port = start_server(Library(None), log=None)
    try:
        rehost, outcome = run_rehost(instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst"),
                                     f"127.0.0.1:{port}")
        assert_same_behaviour(original, rehost)
        assert outcome.summary.complete, outcome.error
        assert results(rehost, "inscount")["procedures"]["work"] == results(inhost, "inscount")["procedures"]["work"]
        for run in range(2):
            rehost, outcome = run_rehost(instrument(binary, "cachesim", tmp_path, "--mode", "rehost",
                                                    slot=f"rhc{run}"), f"127.0.0.1:{port}")
            assert_same_behaviour(original, rehost)
            assert outcome.summary.complete, outcome.error
            ours, theirs = results(rehost, "cachesim"), results(inhost_cache, "cachesim")
            # Within the program's own variation from run to run (lazy binding, above).
            assert abs(ours["loads"] - theirs["loads"]) <= 8 and abs(ours["stores"] - theirs["stores"]) <= 8, \
                (ours, theirs)
    finally:
        srv.stop(None)

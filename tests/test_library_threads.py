"""Threads a library starts (decision 0087): samples/library_threads.cpp starts four
workers with std::thread, whose constructor calls libstdc++'s
std::thread::_M_start_thread; pthread_create is called inside libstdc++, and the
executable names none. Debian's gdb starts its worker threads so.

The rewrite took such a program for single-threaded: plain counters, ReHost's inline
record append (whose count of appends under way another thread's records corrupt: the
flushes stopped, the ring ran past its end and over the communicator's state), and calls
into the analysis on one shared stack without the lock. gdb's ReHost cachesim copy died
of SIGSEGV after printing "a signal handler made more records than the ring holds".

Checked against qemu (``-singlestep -d exec,nochain`` with the memory operations): the
executable's loads and stores seen by cachesim, InHost and ReHost, and inscount's
count of the workers' procedure; the copies print what the original prints. And a copy
made as if the program had one thread (what threads started in a way the rewrite does not
know get) runs as the original, its records given up and reported.
"""

from __future__ import annotations

from pathlib import Path

from rehost.server import Library, start_server
from rewriter.api import Options
from rewriter.emit import rehost as rehost_emit
from rewriter.ir.elf_loader import load_binary
from rewriter.passes import TOOLS
from tests.oracles.qemu_trace import access_counts, exe_pcs, trace_pcs
from tests.support.rehost import run_rehost, run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, build_gccgo

# Loads and stores the original's own runs differ by (which thread binds a PLT entry
# lazily first) and the two of _fini after the end hook; test_threads.py allows as much.
SLACK = 8


def test_threads_a_library_starts(tmp_path: Path) -> None:
    binary = build("library_threads", "O2-thumb-dyn", ["-no-pie"])  # run-time addresses are link-time ones
    assert load_binary(str(binary)).threaded
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 0, original.stderr
    trace = trace_pcs(placed, [], b"", argv0="prog", memory_ops=True)
    pcs = exe_pcs(trace, placed)
    oracle = access_counts(trace, pcs)

    inscount = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inscount)
    counted = results(inscount, "inscount")["procedures"]
    churn = next(p for p in load_binary(str(binary)).procedures if p.name == "_ZL5churnj")
    assert counted[churn.name] == sum(n for pc, n in pcs.items() if churn.address <= pc < churn.end)

    inhost = run_prog(instrument(binary, "cachesim", tmp_path, slot="csim"))
    assert_same_behaviour(original, inhost)
    cache = results(inhost, "cachesim")
    assert abs(oracle["L"] - cache["loads"]) <= SLACK and abs(oracle["S"] - cache["stores"]) <= SLACK, (cache, oracle)

    srv, port = start_server(Library(None), log=None)
    try:
        rehost, outcome = run_rehost(instrument(binary, "cachesim", tmp_path, "--mode", "rehost", slot="rhst"),
                                     f"127.0.0.1:{port}")
    finally:
        srv.stop(None)
    assert_same_behaviour(original, rehost)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
    shipped = results(rehost, "cachesim")
    assert abs(oracle["L"] - shipped["loads"]) <= SLACK and abs(oracle["S"] - shipped["stores"]) <= SLACK, \
        (shipped, oracle)


MISSED = (b"anvil: records were made on more than one thread, but the rewrite found no thread start in the "
          b"program (its threads were started in a way it does not know); records lost, the results will be "
          b"incomplete\n")


def test_threads_the_rewrite_missed(tmp_path: Path) -> None:
    """A copy made for one thread (``Binary.threaded`` forced off: what a program whose
    threads start in a way the rewrite does not know gets) runs as the original, says
    that records came from several threads and gives up the stream. Before: the threads'
    appends ran the ring past its end, and two threads at once in the communicator's
    routines (the flush; the record calls of A32 code, the PLT's) shared the hook stack:
    SIGSEGV, or a hang on a clobbered lock."""
    binary = build("library_threads", "O2-thumb-dyn", ["-no-pie"])
    original = run_prog(place(binary, tmp_path, "orig"))
    ir = load_binary(str(binary))
    ir.threaded = False
    dest = tmp_path / "miss" / "prog"
    dest.parent.mkdir(parents=True)
    tool = TOOLS["cachesim"]()
    rehost_emit.instrument(ir, tool, Options(values=tool.parse_options({}), out="prog.cachesim.out", format="json"),
                           str(dest))
    srv, port = start_server(Library(None), log=None)
    try:
        for _ in range(3):  # threads interleave differently from run to run
            run, outcome = run_rehost(dest, f"127.0.0.1:{port}")
            assert (run.returncode, run.stdout) == (original.returncode, original.stdout)
            assert run.stderr == MISSED + original.stderr
            assert outcome.summary is None or not outcome.summary.complete
    finally:
        srv.stop(None)


def test_goroutines_on_the_threads_libgo_starts(tmp_path: Path) -> None:
    """A gccgo program (ARM, dynamic) runs its goroutines on threads libgo starts; it names
    only libgo's entries (``__go_go``, ``runtime_mstart``). Taken for one thread, its ReHost
    copy said that records came from several threads and gave the stream up, and its
    InHost cachesim copy ran the analysis on several threads without the lock. Both copies
    now print what the original prints, and the ReHost session is complete."""
    binary = build_gccgo("goroutines")
    assert load_binary(str(binary)).threaded
    original = run_prog(place(binary, tmp_path, "orig"))
    assert original.returncode == 0 and original.stdout.startswith(b"total "), original
    inhost = run_prog(instrument(binary, "cachesim", tmp_path, slot="csim"))
    assert_same_behaviour(original, inhost)
    rehost, outcome = run_rehost_alone(instrument(binary, "memtrace", tmp_path, "--mode", "rehost", slot="rhst"))
    assert_same_behaviour(original, rehost)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error

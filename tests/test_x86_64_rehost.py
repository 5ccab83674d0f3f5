"""ReHost on x86-64 programs: the records of 64-bit words go over the inherited channel to
a real gRPC server on loopback, where the tools' C (built for x86-64 programs' records) or
a Python analysis runs.

- Every tool (inscount, bbcount, cachesim, memtrace) on the hash sample, four builds
  (gcc PIE, static, clang, fixed-address -O3): the ReHost copy behaves as the original
  (output, exit status) and its results file is the InHost copy's, byte for byte (InHost
  is checked against QEMU, Lackey and the reference cache in the other x86-64 tests).
- Independently of InHost: memtrace's ReHost trace is Valgrind Lackey's of the original,
  access for access (instruction, size, kind), its addresses above 4 GiB; cachesim's
  counts, from the C library and from the Python analysis, are the reference cache's on
  that trace, for two geometries (64-bit line keys on the host).
- The printed addresses of a global, a heap block, a local and a thread-local variable
  are the original's under every tool (``setarch -R``, the same path).
- A program that starts threads (records under the lock) counts exactly what InHost does,
  and cachesim sees every load and store; a forked child's session goes on from its
  parent's state and gives InHost's results.
- One ``anvil rehost-server`` serves an ARM program's session and an x86-64 one's: a
  library of each record width, built by name.
- A program started alone with ANVIL_REHOST_CONNECT reaches ``anvil rehost-listen`` over TCP.
- Signal handlers that make records in the middle of the program's own leave the stream
  whole (samples/x64_signal_accesses.c).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.oracles.cache_model import simulate
from tests.support import samples
from tests.support import x86_64_traces as traces
from tests.support.rehost import CLI, CLI_RUN, ServerProcess, place_at, with_listener
from tests.support.run import anvil_instrument

TOOLS = ("inscount", "bbcount", "cachesim", "memtrace")
ROOT = Path(__file__).resolve().parents[1]
PYTHON_CACHESIM = ROOT / "analysis_libs" / "cachesim" / "cachesim.py"


def _instrument(program: Path, out: Path, tool: str, *extra: str) -> Path:
    json_results = ["--format", "json"] if tool == "cachesim" else []  # (memtrace's text is its trace)
    return anvil_instrument(program, out, "--tool", tool, *json_results, *extra)


def _run_at(running: Path, copy: Path, *extra: str) -> subprocess.CompletedProcess:
    """``copy`` (and its site table, if any) placed at ``running`` and run there through
    ``anvil run`` under ``setarch -R``: every copy at one path sees the same addresses."""
    place_at(running, copy)
    return subprocess.run(["setarch", "-R", *CLI_RUN, *extra, str(running)], capture_output=True, timeout=300,
                          cwd=running.parent, env={})


def _behaviour(run: subprocess.CompletedProcess) -> tuple:
    return run.returncode, run.stdout, run.stderr


def _original(sample: str, variant: str, tmp_path: Path) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """The sample's build as ``prog``, where its copies will run (``run/prog``), and its run there."""
    program = tmp_path / "prog"
    shutil.copy(samples.build_x86_64(sample, variant), program)
    running = tmp_path / "run" / "prog"
    running.parent.mkdir()
    return program, running, _run_at(running, program)


# clang's build in the extended tier: the records are the same whoever compiled the code
# (decision 0185).
@pytest.mark.parametrize("variant", ["x64-gcc-O2", "x64-gcc-O2-static",
                                     pytest.param("x64-clang-O2", marks=pytest.mark.extended), "x64-gcc-O3-nopie"])
def test_every_tool_rehost_equals_inhost(variant: str, tmp_path: Path) -> None:
    program, running, original = _original("hash", variant, tmp_path)
    assert original.returncode == 0, original.stderr
    for tool in TOOLS if variant == "x64-gcc-O2" else TOOLS[:3]:
        inhost = _run_at(running, _instrument(program, tmp_path / "i" / "prog", tool))
        assert _behaviour(inhost) == _behaviour(original), tool
        want = (running.parent / f"prog.{tool}.out").read_bytes()
        rehost = _run_at(running, _instrument(program, tmp_path / "r" / "prog", tool, "--mode", "rehost"))
        assert _behaviour(rehost) == _behaviour(original), tool
        assert (running.parent / f"prog.{tool}.out").read_bytes() == want, f"{tool}: ReHost's results differ"


def test_rehost_trace_is_lackeys_and_the_cache_the_references(tmp_path: Path) -> None:
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("hash", "x64-gcc-O2"), program)
    lackey = traces.lackey_accesses(program, tmp_path / "lackey.log")
    running = tmp_path / "run" / "prog"
    running.parent.mkdir()
    original = _run_at(running, program)
    traced = _run_at(running, _instrument(program, tmp_path / "m" / "prog", "memtrace", "--mode", "rehost"))
    assert _behaviour(traced) == _behaviour(original)
    accesses = traces.trace(running.parent / "prog.memtrace.out")
    base = traces.load_address(["setarch", "-R", str(program)], program)
    assert [(pc - base, size, kind) for pc, _, size, kind in accesses] == lackey
    stream = [(address, kind == "S") for _, address, _, kind in accesses]
    assert max(address for address, _ in stream) >= 1 << 32  # the stack's: 64-bit words carried them
    for size, assoc, line, kept in [(16384, 8, 64, 2), (1024, 2, 32, 1)]:
        copy = _instrument(program, tmp_path / "c" / "prog", "cachesim", "--mode", "rehost",
                           "--opt", f"size={size},assoc={assoc},line={line},kept={kept}")
        reference = simulate(stream, size, assoc, line)
        want = {"loads": reference["loads"], "stores": reference["stores"], "misses": reference["misses"],
                "hits": reference["accesses"] - reference["misses"]}
        for lib in ([], ["--lib", str(PYTHON_CACHESIM)]):
            run = _run_at(running, copy, *lib)
            assert _behaviour(run) == _behaviour(original), lib
            got = json.loads((running.parent / "prog.cachesim.out").read_text())
            assert {key: got[key] for key in want} == want, (size, lib)


@pytest.mark.parametrize("variant", ["x64-gcc-O0", "x64-gcc-O2-static", "x64-clang-O2"])
def test_addresses_are_the_originals(variant: str, tmp_path: Path) -> None:
    program, running, original = _original("addresses", variant, tmp_path)
    assert b"heap=" in original.stdout
    for tool in TOOLS:
        run = _run_at(running, _instrument(program, tmp_path / "r" / "prog", tool, "--mode", "rehost"))
        assert _behaviour(run) == _behaviour(original), tool
        assert (running.parent / f"prog.{tool}.out").exists()


def test_anvil_run_starts_the_program_as_named(tmp_path: Path) -> None:
    """``anvil run ./prog`` starts ``./prog`` by that path, which the kernel keeps at the top
    of the stack (AT_EXECFN): the original and its copies print the stack addresses that
    ``./prog`` alone prints (an absolute path there moved them all)."""
    program, running, _ = _original("addresses", "x64-gcc-O2", tmp_path)
    alone = subprocess.run(["setarch", "-R", "./prog", "x"], capture_output=True, cwd=running.parent, env={})
    assert b"local=" in alone.stdout
    for copy in (program, _instrument(program, tmp_path / "i" / "prog", "cachesim"),
                 _instrument(program, tmp_path / "r" / "prog", "inscount", "--mode", "rehost")):
        place_at(running, copy)
        run = subprocess.run(["setarch", "-R", *CLI, "run", "-q", "./prog", "x"], capture_output=True,
                             cwd=running.parent, env={}, timeout=300)
        assert _behaviour(run) == _behaviour(alone), copy


def test_threads_and_forks(tmp_path: Path) -> None:
    running = tmp_path / "run" / "prog"
    running.parent.mkdir()
    for sample in ("x64_threads", "forks"):
        program = tmp_path / sample
        shutil.copy(samples.build_x86_64(sample, "x64-gcc-O2"), program)
        original = _run_at(running, program)
        inhost = _run_at(running, _instrument(program, tmp_path / "i" / "prog", "inscount"))
        want = (running.parent / "prog.inscount.out").read_bytes()
        rehost = _run_at(running, _instrument(program, tmp_path / "r" / "prog", "inscount", "--mode", "rehost"))
        assert _behaviour(inhost) == _behaviour(rehost) == _behaviour(original), sample
        assert (running.parent / "prog.inscount.out").read_bytes() == want, sample
    # Every thread's every access reaches the host (the order of the threads' differs run to run).
    threads = tmp_path / "x64_threads"
    _run_at(running, _instrument(threads, tmp_path / "m" / "prog", "memtrace"))
    kinds = [kind for _, _, _, kind in traces.trace(running.parent / "prog.memtrace.out")]
    _run_at(running, _instrument(threads, tmp_path / "c" / "prog", "cachesim", "--mode", "rehost"))
    got = json.loads((running.parent / "prog.cachesim.out").read_text())
    assert (got["loads"], got["stores"]) == (kinds.count("L"), kinds.count("S"))
    assert got["hits"] + got["misses"] == got["accesses"] and got["misses"] > 0


def test_one_server_for_arm_and_x86_64_programs(tmp_path: Path) -> None:
    arm = tmp_path / "arm" / "prog"
    arm.parent.mkdir()
    shutil.copy(samples.build("hash", "O2-thumb-dyn"), arm)
    x86 = tmp_path / "x86" / "prog"
    x86.parent.mkdir()
    shutil.copy(samples.build_x86_64("hash", "x64-gcc-O2"), x86)
    pairs = []
    for program in (arm, x86):
        inhost = _instrument(program, program.parent / "i" / "prog", "cachesim")
        done = subprocess.run(["setarch", "-R", *CLI_RUN, str(inhost)], capture_output=True, cwd=inhost.parent,
                              env={}, timeout=300)
        assert done.returncode == 0, done.stderr
        pairs.append((_instrument(program, program.parent / "r" / "prog", "cachesim", "--mode", "rehost"),
                      (inhost.parent / "prog.cachesim.out").read_bytes()))
    with ServerProcess("--lib", "cachesim") as server:
        for rehost, want in pairs:
            done = subprocess.run(["setarch", "-R", *CLI_RUN, "--server", server.address, str(rehost)],
                                  capture_output=True, cwd=rehost.parent, env={}, timeout=300)
            assert done.returncode == 0, done.stderr
            assert (rehost.parent / "prog.cachesim.out").read_bytes() == want
        log = server.stop()
    assert log.count("complete") == 2, log


def test_a_program_started_alone_reaches_rehost_listen(tmp_path: Path) -> None:
    """Started by hand with ANVIL_REHOST_CONNECT (as on another machine), the program
    connects to ``anvil rehost-listen``, which writes InHost's results; the original and the
    InHost copy run with the same environment, so the same addresses."""
    program, running, _ = _original("hash", "x64-gcc-O2", tmp_path)
    rehost = _instrument(program, tmp_path / "r" / "prog", "cachesim", "--mode", "rehost")
    shutil.copy(rehost, running)
    shutil.copy(f"{rehost}.sites.json", f"{running}.sites.json")
    alone, env = with_listener(running, lambda env: subprocess.run(["setarch", "-R", str(running)],
                                                                   capture_output=True, cwd=running.parent,
                                                                   env=env, timeout=300))
    got = (running.parent / "prog.cachesim.out").read_bytes()
    runs = []
    for copy in (program, _instrument(program, tmp_path / "i" / "prog", "cachesim")):
        shutil.copy(copy, running)
        runs.append(subprocess.run(["setarch", "-R", str(running)], capture_output=True, cwd=running.parent, env=env,
                                   timeout=300))
    assert _behaviour(alone) == _behaviour(runs[0]) == _behaviour(runs[1])
    assert got == (running.parent / "prog.cachesim.out").read_bytes()


@pytest.mark.parametrize(("tool", "rounds"), [("cachesim", "100000"), ("memtrace", "3000")])
def test_signal_handlers_records_keep_the_stream_whole(tool: str, rounds: str, tmp_path: Path) -> None:
    """A profiling timer's handler makes accesses (records) while the main loop makes its
    own, some in the middle of one of the loop's appends (inline: cachesim's filtered
    misses; in C: memtrace's every access): the session completes, nothing is reported
    lost, and the handler's stores are among the records, 64 a run."""
    program = tmp_path / "prog"
    shutil.copy(samples.build_x86_64("x64_signal_accesses", "x64-gcc-O3-nopie"), program)  # link addresses
    original = subprocess.run([str(program), rounds], capture_output=True, timeout=60)
    copy = _instrument(program, tmp_path / "r" / "prog", tool, "--mode", "rehost")
    run = subprocess.run([*CLI_RUN, str(copy), "--", rounds], capture_output=True, cwd=copy.parent, env={},
                         timeout=300)
    assert run.returncode == original.returncode == 0, run.stderr
    assert run.stderr == b""  # no records lost, no incomplete stream
    assert run.stdout.split()[0] == original.stdout.split()[0]  # the sum
    assert run.stdout.split()[1] == b"handled=yes"
    results = copy.parent / f"prog.{tool}.out"
    if tool == "cachesim":
        got = json.loads(results.read_text())
        assert got["stores"] > 0 and got["loads"] > int(rounds) * 4096 // 8
        return
    with open(program, "rb") as f:
        symbol = ELFFile(f).get_section_by_name(".symtab").get_symbol_by_name("table")[0]
    low, high = symbol["st_value"], symbol["st_value"] + symbol["st_size"]
    stores = sum(1 for _, address, _, kind in traces.trace(results) if kind == "S" and low <= address < high)
    assert stores and stores % 64 == 0

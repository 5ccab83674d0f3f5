"""cachesim on x86-64 programs: its counts against the plain-Python reference cache
(tests/oracles/cache_model.py) fed access streams that are not Anvil's, and the simulated
programs' behaviour against the original's.

- Unicorn runs a freestanding program whose addresses are the same natively
  (samples/x64_bare_accesses.c, as in test_x86_64_memtrace): its record of every access,
  fed to the reference, gives the loads, stores, hits and misses cachesim reports, for
  the default geometry, a small two-way cache keeping one line inline, a direct-mapped one
  and a fully associative one (one set).
- A dynamic PIE's heap and stack lie above 4 GiB (64-bit line keys): its accesses are
  memtrace's under ``setarch -R``, checked here access for access against Valgrind Lackey's
  trace of the original (instruction, size and kind; Lackey's addresses are Valgrind's own
  layout), and cachesim's copy runs at the same path, so the same addresses. The misses
  of a small cache (hash: over a hundred thousand) fill the buffer of records many times.
- In a program that starts threads the calls go through a lock (and the filter's test
  with them): the loads and stores are memtrace's, hits and misses add up.
- Programs that print the addresses of a global, a heap block, a local and a thread-local
  variable print the same under cachesim, and exit the same way.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.oracles.cache_model import simulate
from tests.oracles.unicorn_x86_64 import run_bare
from tests.support import samples
from tests.support import x86_64_traces as traces
from tests.support.run import anvil_instrument

BARE = samples.SAMPLES_DIR / "x64_bare_accesses.c"
#: (size, assoc, line, kept)
GEOMETRIES = [(16384, 8, 64, 2), (1024, 2, 32, 1), (512, 1, 16, 1), (4096, 64, 64, 2)]
_ENV = {"PATH": "/usr/bin:/bin"}


def _instrument(program: Path, out: Path, tool: str, geometry: tuple[int, int, int, int] | None = None) -> Path:
    out.parent.mkdir(exist_ok=True)
    opts = ["--opt", "size={},assoc={},line={},kept={}".format(*geometry)] if geometry else []
    return anvil_instrument(program, out, "--tool", tool, *opts, "--format", "json")


def _expected(stream: list[tuple[int, bool]], geometry: tuple[int, int, int, int]) -> dict[str, int]:
    size, assoc, line, _ = geometry
    want = simulate(stream, size, assoc, line)
    return {**{key: want[key] for key in ("loads", "stores", "misses", "load_misses", "store_misses")},
            "hits": want["accesses"] - want["misses"]}


def _got(results: Path, want: dict[str, int]) -> dict[str, int]:
    got = json.loads(results.read_text())
    return {key: got[key] for key in want}


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_cachesim_is_the_reference_on_unicorns_stream(level: str, tmp_path: Path) -> None:
    program = tmp_path / "bare"
    subprocess.run(["gcc", level, "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-pie", "-no-pie",
                    "-fno-stack-protector", "-o", str(program), str(BARE)], check=True)
    oracle = run_bare(program)
    original = subprocess.run([str(program)], capture_output=True, timeout=60)
    assert oracle.exit_status == 0 and original.stdout == oracle.stdout
    stream = [(address, kind == "S") for _, address, _, kind in
              traces.joined(oracle.accesses, traces.vector_widths(program))]
    for geometry in GEOMETRIES:
        copied = _instrument(program, tmp_path / f"g{geometry[0]}-{geometry[1]}" / "bare", "cachesim", geometry)
        run = subprocess.run([str(copied)], capture_output=True, timeout=60, cwd=copied.parent)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
        want = _expected(stream, geometry)
        assert _got(copied.parent / "bare.cachesim.out", want) == want, geometry


@pytest.mark.parametrize(("sample", "variant"), [("x64_string_ops", "x64-gcc-O2"), ("x64_string_ops", "x64-clang-O2"),
                                               ("hash", "x64-gcc-O2"), ("sort", "x64-clang-O2")])
def test_cachesim_is_the_reference_above_4_gib(sample: str, variant: str, tmp_path: Path) -> None:
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64(sample, variant), program)
    lackey = traces.lackey_accesses(program, tmp_path / "lackey.log")
    # Each instrumented copy in turn at one path (run/prog): the same stack, the same addresses.
    running = tmp_path / "run" / "prog"
    running.parent.mkdir()
    original = subprocess.run(["setarch", "-R", str(program)], capture_output=True, timeout=60, env=_ENV)
    shutil.copy(traces.memtrace(program, tmp_path), running)
    subprocess.run(["setarch", "-R", str(running)], capture_output=True, timeout=60, cwd=running.parent, env=_ENV)
    accesses = traces.trace(running.parent / "prog.memtrace.out")
    native_base = traces.load_address(["setarch", "-R", str(program)], program)
    assert [(pc - native_base, size, kind) for pc, _, size, kind in accesses] == lackey
    stream = [(address, kind == "S") for _, address, _, kind in accesses]
    assert max(address for address, _ in stream) >= 1 << 32  # the stack's, in a 64-bit layout
    for geometry in [GEOMETRIES[0], GEOMETRIES[1], (2048, 4, 64, 2)]:
        shutil.copy(_instrument(program, tmp_path / "c" / "prog", "cachesim", geometry), running)
        run = subprocess.run(["setarch", "-R", str(running)], capture_output=True, timeout=60, cwd=running.parent,
                             env=_ENV)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
        want = _expected(stream, geometry)
        assert _got(running.parent / "prog.cachesim.out", want) == want, geometry


def test_threads_count_every_access(tmp_path: Path) -> None:
    program = tmp_path / "prog"
    shutil.copy(samples.build_x86_64("x64_threads", "x64-gcc-O2"), program)
    traced = traces.memtrace(program, tmp_path)
    simulated = _instrument(program, tmp_path / "c" / "prog", "cachesim")
    runs = [subprocess.run(["setarch", "-R", str(p)], cwd=p.parent, capture_output=True, timeout=60, env=_ENV)
            for p in (program, traced, simulated)]
    for run in runs[1:]:
        assert (run.returncode, run.stdout, run.stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    kinds = [kind for _, _, _, kind in traces.trace(traced.parent / "prog.memtrace.out")]
    got = json.loads((simulated.parent / "prog.cachesim.out").read_text())
    assert (got["loads"], got["stores"]) == (kinds.count("L"), kinds.count("S"))
    assert got["stores"] > 4 * 2000 * 3  # every thread's every store
    assert got["hits"] + got["misses"] == got["accesses"] and got["misses"] > 0


@pytest.mark.parametrize("variant", ["x64-gcc-O0", "x64-gcc-O2-static", "x64-gcc-O3-nopie", "x64-clang-O2"])
def test_simulated_programs_behave_as_the_original(variant: str, tmp_path: Path) -> None:
    # At a path as long as the copy's (b/prog): a static C library keeps the program's
    # directory on the heap, and a longer one may move every later block.
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("addresses", variant), program)
    copied = _instrument(program, tmp_path / "b" / "prog", "cachesim")
    runs = [subprocess.run(["setarch", "-R", str(p), "x"], cwd=tmp_path, capture_output=True, timeout=60, env=_ENV)
            for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    got = json.loads((tmp_path / "prog.cachesim.out").read_text())
    assert got["accesses"] > 10 and got["misses"] > 0


# A static build's thread runs usleep in the program's own (copied) code, at the same time as
# main's calls: the order of their accesses differs from run to run, so only its run without
# a thread is the reference's.
@pytest.mark.parametrize(("variant", "threads"), [("x64-gcc-O2", True), ("x64-gcc-O2", False),
                                                  ("x64-gcc-O2-static", False)])
def test_a_program_that_may_start_threads_is_the_reference(variant: str, threads: bool, tmp_path: Path) -> None:
    """Until a program that may start threads starts one, its sites test the filter inline
    and call without the lock; from then on every access calls through the lock and the
    filter is C's, with the slots as the inline test left them. The thread runs none of the
    program's code, so memtrace's stream is the same every run and, fed to the reference,
    gives the counts exactly: before the thread starts and after, or without one."""
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("x64_thread_later", variant), program)
    args = [] if threads else ["alone"]
    running = tmp_path / "run" / "prog"
    running.parent.mkdir()
    original = subprocess.run(["setarch", "-R", str(program), *args], capture_output=True, timeout=60, env=_ENV)
    shutil.copy(traces.memtrace(program, tmp_path), running)
    traced = subprocess.run(["setarch", "-R", str(running), *args], capture_output=True, timeout=60,
                            cwd=running.parent, env=_ENV)
    assert (traced.returncode, traced.stdout) == (original.returncode, original.stdout)
    stream = [(address, kind == "S") for _, address, _, kind in traces.trace(running.parent / "prog.memtrace.out")]
    for geometry in [GEOMETRIES[0], GEOMETRIES[1], GEOMETRIES[2]]:
        shutil.copy(_instrument(program, tmp_path / "c" / "prog", "cachesim", geometry), running)
        run = subprocess.run(["setarch", "-R", str(running), *args], capture_output=True, timeout=60,
                             cwd=running.parent, env=_ENV)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
        want = _expected(stream, geometry)
        assert _got(running.parent / "prog.cachesim.out", want) == want, geometry

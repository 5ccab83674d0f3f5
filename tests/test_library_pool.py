"""Threads started where the copies' PLT entries do not see them (decisions 0128 and 0193):
by a library's own call of pthread_create, or by the executable's call through its GOT.

samples/library_pool: the executable hands a function to a library (libpool.so), which runs
it on four threads of its own, all at once, as LLVM's parallelFor runs lld's work; the
executable names no function that starts a thread. The rewrite took it for a program of
one thread: plain counters (counts lost), records appended without the lock (ReHost
sessions given up, InHost cachesim copies died of SIGSEGV in some runs).

Now the rewrite reads the libraries the program loads (one imports pthread_create); on
x86-64 the runtime learns of the first thread from the library's GOT slot, on ARM the copy
is made ready for threads from the start (before, ARM's ReHost cachesim gave its session
up and InHost's lost loads and stores). Both ISAs; three runs of each copy: the copy
behaves as the original, and its counts are those of the same copy run with the
library's threads one at a time (POOL_ONE_AT_A_TIME: the same instructions and
accesses of the executable, no two threads at once): inscount's total, cachesim's loads
and stores; ReHost's inscount is InHost's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support import samples
from tests.support.rehost import CLI, CLI_RUN

RUNS = 3


# The compiler of each ISA (ARM's: Thumb-2, Debian armhf's default).
COMPILERS = {"x86-64": "gcc", "arm": "arm-linux-gnueabihf-gcc"}


@pytest.fixture(scope="module", params=sorted(COMPILERS))
def program(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("pool")
    source = samples.SAMPLES_DIR / "library_pool"
    compiler = COMPILERS[request.param]
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", str(source / "pool.c"), "-o", str(where / "libpool.so")],
                   check=True)
    subprocess.run([compiler, "-O2", str(source / "main.c"), f"-L{where}", "-lpool", "-Wl,-rpath,$ORIGIN",
                    "-o", str(where / "built")], check=True)
    return where / "built"


def _copy(program: Path, where: Path, tool: str, mode: str) -> Path:
    where.mkdir()
    shutil.copy(program.parent / "libpool.so", where)
    done = subprocess.run([*CLI, "instrument", "--tool", tool, "--mode", mode, "--format", "json", str(program),
                           "-o", str(where / "prog")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return where / "prog"


def _run(copy: Path, tool: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict]:
    run = subprocess.run(CLI_RUN + [str(copy)], capture_output=True, cwd=copy.parent, env=env, timeout=120)
    results = json.loads((copy.parent / f"prog.{tool}.out").read_text()) if run.returncode == 0 else {}
    return run, results


def test_the_rewrite_sees_a_library_that_starts_threads(program: Path) -> None:
    binary = load_binary(str(program))
    assert binary.threaded and any("library it loads may start threads (libpool.so)" in note for note in binary.notes)


@pytest.mark.parametrize("tool,measures", [("inscount", ("total",)), ("cachesim", ("loads", "stores"))])
def test_counts_of_code_run_on_a_librarys_threads(program: Path, tool: str, measures: tuple[str, ...],
                                                  tmp_path: Path) -> None:
    original = subprocess.run(CLI_RUN + [str(program)], capture_output=True, cwd=program.parent, env={}, timeout=60)
    assert original.returncode == 0 and original.stdout.count(b"worker") == 4, original
    counted = {}
    for mode in ("inhost", "rehost"):
        copy = _copy(program, tmp_path / mode, tool, mode)
        alone, reference = _run(copy, tool, {"POOL_ONE_AT_A_TIME": "1"})
        assert (alone.returncode, alone.stdout, alone.stderr) == (0, original.stdout, b"")
        for _ in range(RUNS):
            run, results = _run(copy, tool, {})
            assert (run.returncode, run.stdout, run.stderr) == (0, original.stdout, b"")
            assert {m: results[m] for m in measures} == {m: reference[m] for m in measures}
        counted[mode] = {m: reference[m] for m in measures}
    assert counted["rehost"] == counted["inhost"]


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_threads_started_through_the_got(mode: str, tmp_path: Path) -> None:
    """samples/x64_thread_work.c built with -fno-plt: main calls pthread_create through its
    GOT (as Rust's standard library does). The work procedure's count, in each of three
    runs with the threads at once, is the same copy's with them one at a time."""
    built = samples.build_x86_64("x64_thread_work", "x64-gcc-O2-noplt")
    original = subprocess.run([str(built)], capture_output=True, env={}, timeout=60)
    assert original.returncode == 0, original
    where = tmp_path / mode
    where.mkdir()
    done = subprocess.run([*CLI, "instrument", "--tool", "inscount", "--mode", mode, "--format", "json", str(built),
                           "-o", str(where / "prog")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    def work_count(*args: str) -> int:
        run = subprocess.run(CLI_RUN + [str(where / "prog"), *args], capture_output=True, cwd=where, env={},
                             timeout=120)
        assert (run.returncode, run.stdout, run.stderr) == (0, original.stdout, b"")
        return json.loads((where / "prog.inscount.out").read_text())["procedures"]["work"]

    alone = work_count("one")
    assert alone > 4 * 2_000_000
    assert [work_count() for _ in range(RUNS)] == [alone] * RUNS


def test_arm_leaves_named_thread_starts_to_their_names(tmp_path: Path) -> None:
    """On ARM, where a copy ready for threads pays on every counter, libstdc++ (which imports
    pthread_create for std::thread, whose entry a program that starts one imports by name)
    does not make a C++ program threaded; on x86-64, whose runtime switches on the first
    thread, it does. A C++ program that starts a std::thread is threaded on both."""
    source = tmp_path / "maps.cpp"
    source.write_text("#include <cstdio>\n#include <map>\n#include <thread>\nstd::map<int, int> m;\n"
                      "int main(int argc, char **) {\n  m[argc] = 2;\n"
                      "#ifdef THREAD\n  std::thread([] { m[7] = 1; }).join();\n#endif\n"
                      "  std::printf(\"%zu\\n\", m.size());\n}\n")
    for isa, compiler in (("x86-64", "g++"), ("arm", "arm-linux-gnueabihf-g++")):
        for threads in (False, True):
            built = tmp_path / f"{isa}-{threads}"
            subprocess.run([compiler, "-O2", *(["-DTHREAD"] if threads else []), str(source), "-o", str(built)],
                           check=True)
            assert load_binary(str(built)).threaded == (threads or isa == "x86-64"), (isa, threads)


def test_a_library_not_found_is_said_and_counts_as_one_that_starts_threads(tmp_path: Path) -> None:
    """An ARM program whose library is nowhere the rewrite looks (no rpath, not beside it in
    an unpacked root, not under QEMU_LD_PREFIX): the copy is made ready for threads, the
    report's notes name the library, and ``anvil instrument`` says so in a line of its own
    on stderr; with QEMU_LD_PREFIX naming the root that holds it, the library is read."""
    source = samples.SAMPLES_DIR / "library_pool"
    root = tmp_path / "root" / "usr" / "lib" / "arm-linux-gnueabihf"
    root.mkdir(parents=True)
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-shared", "-fPIC", "-Wl,-soname,libquiet.so",
                    "-xc", "-", "-o", str(root / "libquiet.so")],
                   input=b"void pool_run(void (*work)(int), int count) { for (int k = 0; k < count; k++) work(k); }",
                   check=True)
    built = tmp_path / "built"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", str(source / "main.c"), f"-L{root}", "-lquiet", "-o", str(built)],
                   check=True)
    done = subprocess.run([*CLI, "instrument", "--tool", "inscount", str(built), "-o", str(tmp_path / "prog")],
                          capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                               if k not in ("QEMU_LD_PREFIX", "LD_LIBRARY_PATH")})
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and "libquiet.so, not found" in lines[1] and "QEMU_LD_PREFIX" in lines[1], lines
    report = json.loads((tmp_path / "prog.anvil.json").read_text())
    assert report["threads"] and any("libquiet.so, not found" in note for note in report["notes"])

    found = subprocess.run([*CLI, "instrument", "--tool", "inscount", str(built), "-o", str(tmp_path / "prog2")],
                           capture_output=True, text=True, env={**os.environ, "QEMU_LD_PREFIX": str(tmp_path / "root")})
    assert found.returncode == 0 and len(found.stderr.splitlines()) == 1, found.stderr
    assert not json.loads((tmp_path / "prog2.anvil.json").read_text())["threads"]

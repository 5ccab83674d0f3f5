"""The CI tier of the corpus of real programs (tests/support/corpus.py, decision 0039).

Each program of ``corpus.CI_TIER`` (Debian's own armhf executables, stripped, with their
libraries unpacked once per run) is instrumented with inscount and cachesim, InHost and
ReHost, and run with its workload beside the original: stdout, stderr and exit status
must be the original's, and each tool's results must be the same whichever side ran the
analysis (where the program repeats its own counts: ``Program.repeatable``). The whole
corpus, every tool and mode, is benchmarks/corpus.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import corpus
from tests.support.rehost import run_rehost
from tests.support.run import Run, assert_same_behaviour, instrument, place, run_prog

TOOLS = ("inscount", "cachesim")


def _run(program: corpus.Program, binary: Path, env: dict[str, str]) -> Run:
    return run_prog(binary, list(program.args), program.stdin, env=env, lib_root=corpus.lib_root(program))


@pytest.mark.parametrize("name", corpus.CI_TIER)
def test_corpus_program_behaves_identically(name: str, tmp_path: Path, rehost_server: str) -> None:
    program = corpus.CORPUS[name]
    original_exe, root = corpus.fetch(program)
    env = corpus.environment(program, root)
    placed = place(original_exe, tmp_path, "orig")
    corpus.prepare(program, placed.parent, original_exe, env)
    original = _run(program, placed, env)
    assert original.stdout, original.stderr  # the workload does something
    assert _run(program, placed, env) == original  # and the same each time: a fair oracle

    for tool in TOOLS:
        inhost = instrument(original_exe, tool, tmp_path, slot="inst")
        corpus.prepare(program, inhost.parent, original_exe, env)
        inhost_run = _run(program, inhost, env)
        assert_same_behaviour(original, inhost_run)

        rehost = instrument(original_exe, tool, tmp_path, "--mode", "rehost", slot="rhst")
        corpus.prepare(program, rehost.parent, original_exe, env)
        rehost_run, outcome = run_rehost(rehost, rehost_server, list(program.args), program.stdin, env=env,
                                         argv0=program.argv0, lib_root=corpus.lib_root(program))
        assert_same_behaviour(original, rehost_run)
        assert outcome.summary.complete, outcome.error
        results = f"prog.{tool}.out"
        assert (inhost.parent / results).stat().st_size > 0
        if not program.repeatable:  # counts that follow a seed or a time stamp
            continue
        assert (rehost.parent / results).read_bytes() == (inhost.parent / results).read_bytes(), \
            f"{tool}: ReHost's results differ from InHost's"

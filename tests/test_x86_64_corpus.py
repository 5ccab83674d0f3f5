"""A small tier of scripts/x86_64_corpus.py (decision 0112): real programs built here from
Debian's static libraries and a Rust program, each instrumented with inscount and bbcount
and run natively beside the original (``setarch -R``, paths of the same length): the same
standard output, standard error, exit status and files, and a results file. About 40 s of
CPU; the whole corpus is the script's (``python3 scripts/x86_64_corpus.py``).

And cachesim and memtrace (decision 0115) on two of its programs, Debian's ``grep -E`` and
a sample built here: cachesim's hits and misses are the reference cache's
(tests/oracles/cache_model.py) fed memtrace's trace of the same run (``ls -laR`` would not
do: its accesses depend on the files' inode numbers, which differ from run to run)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from tests.support import samples

_SPEC = importlib.util.spec_from_file_location("x86_64_corpus", samples.REPO_ROOT / "scripts" / "x86_64_corpus.py")
corpus = importlib.util.module_from_spec(_SPEC)
sys.modules["x86_64_corpus"] = corpus  # its dataclass looks its module up
_SPEC.loader.exec_module(corpus)

#: SQLite's library (a database file written), Rust's panics caught and one that ends the program;
#: Debian's dash, whose script forks, signals itself and ends by an exec (decision 0123: the
#: program's own results file is written before it).
SMALL = ("sqlite-static-lib", "rust-O0-panics", "dash")


@pytest.mark.parametrize("name", SMALL)
def test_real_programs_behave_as_the_original(name: str, tmp_path: Path) -> None:
    case = next(c for c in corpus.cases() if c.name == name)
    if name.startswith("rust") and shutil.which("rustc") is None:
        pytest.fail("rustc is needed (scripts/bootstrap.sh installs the toolchain)")
    builds = tmp_path / "builds"
    builds.mkdir()
    row = corpus.run_case(case, tmp_path, builds)
    assert row["status"] == "identical", row["detail"]


@pytest.mark.parametrize("name", ["grep", "hash-O1"])
def test_cachesim_is_the_reference_on_memtraces_trace(name: str, tmp_path: Path) -> None:
    case = next(c for c in corpus.cases() if c.name == name)
    builds = tmp_path / "builds"
    builds.mkdir()
    row = corpus.run_case(case, tmp_path, builds, tools=("cachesim", "memtrace"), reference=10_000_000)
    assert row["status"] == "identical", row["detail"]
    assert row["reference"] == "exact", row["detail"]
    assert row["cachesim"]["misses"] > 0 and row["cachesim"]["hits"] > 0

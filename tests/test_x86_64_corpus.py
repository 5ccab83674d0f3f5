"""A small tier of scripts/x86_64_corpus.py (decision 0112): real programs built here from
Debian's static libraries and a Rust program, each instrumented with inscount and bbcount
and run natively beside the original (``setarch -R``, paths of the same length): the same
standard output, standard error, exit status and files, and a results file. About 40 s of
CPU; the whole corpus is the script's (``python3 scripts/x86_64_corpus.py``)."""

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

#: SQLite's library (a database file written), Rust's panics caught and one that ends the program.
SMALL = ("sqlite-static-lib", "rust-O0-panics")


@pytest.mark.parametrize("name", SMALL)
def test_real_programs_behave_as_the_original(name: str, tmp_path: Path) -> None:
    case = next(c for c in corpus.cases() if c.name == name)
    if name.startswith("rust") and shutil.which("rustc") is None:
        pytest.fail("rustc is needed (scripts/bootstrap.sh installs the toolchain)")
    builds = tmp_path / "builds"
    builds.mkdir()
    row = corpus.run_case(case, tmp_path, builds)
    assert row["status"] == "identical", row["detail"]

"""``anvil run`` gives the program the environment it was given, as it was (decision 0123).

Python, started in the C locale (no LANG, no LC_*: ``env -i``, a cron job, a container),
coerces it before any of Anvil's code runs: it adds LC_CTYPE=C.UTF-8 to its own environment
(PEP 538), and the program ``anvil run`` started inherited it, so it ran in another locale
than the original (a static program's start-up code counted more: its tunables' scan of the
environment; a program that prints its environment or works by locale differs). Debian's
``env`` (it prints its environment), instrumented in both modes and run through ``anvil
run`` in that locale, prints what the original prints run directly with the same
environment.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.rehost import CLI

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_the_program_gets_the_environment_as_given(mode: str, tmp_path: Path) -> None:
    program = tmp_path / "env"
    shutil.copy("/usr/bin/env", program)
    copy = tmp_path / "copy" / "env"
    copy.parent.mkdir()
    done = subprocess.run([*CLI, "instrument", "--tool", "inscount", "--mode", mode, str(program), "-o", str(copy)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # Only what Python needs to find this tree's code: no locale, so Python coerces it.
    given = {"PYTHONPATH": str(ROOT), "A": "1"}
    original = subprocess.run([str(program)], capture_output=True, env=given, timeout=60)
    assert b"LC_CTYPE" not in original.stdout
    ran = subprocess.run([sys.executable, "-m", "rewriter.cli", "run", "-q", str(copy)], capture_output=True,
                         env=given, cwd=tmp_path, timeout=300)
    assert (ran.returncode, ran.stdout, ran.stderr) == (original.returncode, original.stdout, original.stderr)
    assert (copy.parent / "env.inscount.out").exists() or (tmp_path / "env.inscount.out").exists()

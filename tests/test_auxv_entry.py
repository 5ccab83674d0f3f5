"""getauxval(AT_ENTRY) names the program's own entry in every copy (decision 0182).

The loader stub is the copy's ELF entry, so the kernel's auxiliary vector names the
stub's address. ARM's runtime wrote the original entry back there (show_original_entry);
x86-64's did not: a copy's AT_ENTRY was not its _start (glibc dynamic and static, musl).

Oracle: the original's run (samples/auxv_entry.c prints whether AT_ENTRY is _start).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import samples
from tests.support.run import assert_native_copies_behave, assert_same_behaviour, instrument, place, run_prog

X86_64 = {"glibc": ["gcc", "-O2"], "glibc-static": ["gcc", "-O2", "-static"],
          "musl": ["musl-gcc", "-O2"], "musl-static": ["musl-gcc", "-O2", "-static"]}


@pytest.mark.parametrize("build", sorted(X86_64))
def test_x86_64_copies_see_their_own_entry(build: str, tmp_path: Path) -> None:
    program = tmp_path / "prog"
    subprocess.run([*X86_64[build], str(samples.SAMPLES_DIR / "auxv_entry.c"), "-o", str(program)], check=True)
    original = assert_native_copies_behave(program, ("inscount", "cachesim"), tmp_path)
    assert original.returncode == 0 and original.stdout == b"AT_ENTRY is _start: 1\n"


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "Os-thumb-static"])
def test_arm_copies_see_their_own_entry(variant: str, tmp_path: Path) -> None:
    program = samples.build("auxv_entry", variant)
    original = run_prog(place(program, tmp_path, "orig"))
    assert original.returncode == 0 and original.stdout == b"AT_ENTRY is _start: 1\n"
    assert_same_behaviour(original, run_prog(instrument(program, "cachesim", tmp_path)))
